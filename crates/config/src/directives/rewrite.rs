//! mod_rewrite's directives read into a context's
//! [`RuleSet`](warren_rewrite::RuleSet) (compiled once: an `.htaccess`
//! file's once per version of the file). The server's and a virtual host's
//! rules run when the URL is translated; a `<Directory>`'s or an
//! `.htaccess` file's once the request is mapped to a file, with Apache's
//! per-directory semantics: the request half is the handler's `rewrite` module
//! (on the crate warren-rewrite's engine).

use warren_rewrite::RuleSet;

use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::parse::Directive;
use crate::settings::HostConfig;

fn origin(d: &Directive) -> String {
    format!("{}:{}", d.origin.file.display(), d.origin.line)
}

/// RewriteEngine, RewriteOptions, RewriteBase, RewriteCond and RewriteRule.
pub(crate) fn directive(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    let set = dir.rewrite.get_or_insert_with(RuleSet::default);
    let result = match d.name.to_ascii_lowercase().as_str() {
        "rewriteengine" => set.set_engine(&d.args),
        "rewriteoptions" => set.set_options(&d.args),
        "rewritebase" => set.set_base(&d.args),
        "rewritecond" if d.args.first().is_some_and(|a| a.eq_ignore_ascii_case("expr")) => match crate::expr::Expr::parse(d.args.get(1).map_or("", String::as_str), b.in_htaccess) {
            Ok(e) => set.add_expr_cond(&d.args, &origin(d), std::sync::Arc::new(RewriteExpr(e))),
            Err(m) => Err(format!("RewriteCond expr: {m}")),
        },
        "rewritecond" => set.add_cond(&d.args, &origin(d)),
        "rewriterule" => set.add_rule(&d.args, &origin(d)).map(|()| refuse_server_variables(b, d, set)),
        other => unreachable!("{other} is not a per-directory rewrite directive"),
    };
    if let Err(m) = result {
        b.error(&d.origin, m);
    }
}

/// `RewriteCond expr "..."`: an expression read by the rewrite engine.
#[derive(Debug)]
struct RewriteExpr(crate::expr::Expr);

impl warren_rewrite::rules::CondExpr for RewriteExpr {
    fn holds(&self, request: &dyn warren_rewrite::rules::ExprLookup) -> bool {
        self.0.holds(&RewriteFacts(request))
    }
}

/// The rewrite engine's view of a request as an expression's facts (no
/// response yet).
struct RewriteFacts<'a>(&'a dyn warren_rewrite::rules::ExprLookup);

impl crate::expr::Facts for RewriteFacts<'_> {
    fn variable(&self, name: &str) -> Option<String> {
        self.0.variable(name).or_else(|| name.strip_prefix("HTTP_").and_then(|h| self.0.header(&h.replace('_', "-"))))
    }
    fn request_header(&self, name: &str) -> Option<String> {
        self.0.header(name)
    }
    fn response_header(&self, _name: &str) -> Option<String> {
        None
    }
    fn env(&self, name: &str) -> Option<String> {
        self.0.env(name)
    }
    fn remote_ip(&self) -> std::net::IpAddr {
        self.0.variable("REMOTE_ADDR").and_then(|a| a.parse().ok()).unwrap_or(std::net::Ipv4Addr::UNSPECIFIED.into())
    }
}

/// `[E=VAR:...]` and `[E=!VAR]` of the rule just read that name a variable
/// the server sets (or, in `.htaccess`, PHP_VALUE) are said and dropped here; a name made from the request
/// (`[E=%1:...]`) is refused when it is set (see the handler's rewrite).
fn refuse_server_variables(b: &mut Builder, d: &Directive, set: &mut RuleSet) {
    use warren_rewrite::template::Piece;
    let Some(rule) = set.rules.last_mut().and_then(std::sync::Arc::get_mut) else { return };
    rule.flags.env.retain(|spec| {
        let Some(Piece::Literal(text)) = spec.pieces.first() else { return true };
        let written = text.split(':').next().unwrap_or_default();
        let is_whole_name = text.contains(':') || spec.pieces.len() == 1;
        let var = written.strip_prefix('!').unwrap_or(written);
        match crate::env_vars::refusal(&format!("RewriteRule [E={written}]"), var, b.in_htaccess()) {
            Some(why) if is_whole_name => {
                b.warn(&d.origin, why);
                false
            }
            _ => true,
        }
    });
}

/// RewriteMap: server and virtual host only, as in Apache.
pub(crate) fn map(b: &mut Builder, d: &Directive, host: &mut HostConfig) {
    let set = host.dir.rewrite.get_or_insert_with(RuleSet::default);
    if let Err(m) = set.add_map(&d.args, |p| b.resolve(p)) {
        b.error(&d.origin, m);
    }
}

/// After a context is read: conditions no rule follows do nothing, which
/// Apache does not say and warren does.
pub(crate) fn check_dangling(b: &mut Builder, dir: &DirConfig, origin: &crate::parse::Origin) {
    if let Some(at) = dir.rewrite.as_ref().and_then(|s| s.dangling_conditions()) {
        b.warn(origin, format!("RewriteCond at {at} is not followed by a RewriteRule: it does nothing"));
    }
}
