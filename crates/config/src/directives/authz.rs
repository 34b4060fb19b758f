//! mod_authz_core's `Require` lines (and `Require expr`), read into a
//! section's [`Require`](crate::Require) list by
//! [`parse_require`](super::values::parse_require); the `<RequireAll>`-style
//! blocks are read as sections by the builder. The request half is the
//! handler's `authz` module.

use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::directives::values::parse_require;
use crate::parse::Directive;

pub(crate) fn require(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if let [kind, words @ ..] = d.args.as_slice() {
        if kind.eq_ignore_ascii_case("expr") {
            match crate::expr::Expr::parse(&words.join(" "), b.in_htaccess) {
                Ok(e) => dir.require.get_or_insert_with(Vec::new).push(crate::Require::Expr(e)),
                Err(m) => b.error(&d.origin, format!("Require expr: {m}")),
            }
            return;
        }
    }
    match parse_require(&d.args) {
        Ok(r) => dir.require.get_or_insert_with(Vec::new).push(r),
        Err(m) => b.error(&d.origin, m),
    }
}
