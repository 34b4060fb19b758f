//! mod_env's and mod_setenvif's directives (`SetEnv`, `UnsetEnv`,
//! `SetEnvIf`, `SetEnvIfNoCase`, `SetEnvIfExpr`, `BrowserMatch`), read
//! into a section's [`EnvAction`](crate::env_vars::EnvAction)s and
//! [`SetEnvIf`](crate::env_vars::SetEnvIf)s; what may not be set is
//! [`env_vars::refusal`](crate::env_vars::refusal). The request half is the
//! handler's `env_vars` module.

use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::parse::Directive;

/// Whether `var` may be set or unset by the line `d`; said when not.
fn may_set_variable(b: &mut Builder, d: &Directive, var: &str) -> bool {
    match crate::env_vars::refusal(&d.name, var, b.in_htaccess()) {
        Some(why) => {
            b.warn(&d.origin, why);
            false
        }
        None => true,
    }
}

pub(crate) fn set_env(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match crate::env_vars::parse_set_env(&d.args) {
        Ok(crate::env_vars::EnvAction::Set(var, _)) if !may_set_variable(b, d, &var) => {}
        Ok(a) => dir.env.push(a),
        Err(e) => b.error(&d.origin, e),
    }
}

pub(crate) fn unset_env(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if d.args.is_empty() {
        b.error(&d.origin, "UnsetEnv takes one or more variable names");
    }
    for var in &d.args {
        if may_set_variable(b, d, var) {
            dir.env.push(crate::env_vars::EnvAction::Unset(var.clone()));
        }
    }
}

pub(crate) fn set_env_if(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    use crate::env_vars::EnvSet;
    let name = d.name.to_ascii_lowercase();
    let nocase = name.ends_with("nocase");
    let browser = name.starts_with("browsermatch");
    let parsed = if name == "setenvifexpr" { crate::env_vars::SetEnvIf::parse_expr(&d.args, b.in_htaccess) } else { crate::env_vars::SetEnvIf::parse(&d.args, nocase, browser) };
    match parsed {
        Ok(mut s) => {
            s.sets.retain(|set| match set {
                EnvSet::Set(var, _) | EnvSet::Unset(var) => may_set_variable(b, d, var),
            });
            if !s.sets.is_empty() {
                dir.set_env_if.push(std::sync::Arc::new(crate::env_vars::SetEnvIf { pattern: s.pattern.at(&d.origin), ..s }));
            }
        }
        Err(e) => b.error(&d.origin, format!("{}: {e}", d.name)),
    }
}
