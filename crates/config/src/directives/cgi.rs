//! mod_cgi's and mod_cgid's own directives: `ScriptLog`,
//! `ScriptLogLength` and `ScriptLogBuffer` (server-wide, into
//! [`CgiSettings`](crate::cgi::CgiSettings)), `CGIPassAuth` and `CGIVar`
//! (per directory). The request half is the handler's `cgi` module.

use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::parse::Directive;
use crate::settings::Settings;

pub(crate) fn script_log(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(p) = b.one(d) {
        s.cgi.script_log = Some(b.resolve(&p));
    }
}

pub(crate) fn script_log_length(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(n) = b.whole_number(d) {
        s.cgi.script_log_length = n;
    }
}

pub(crate) fn script_log_buffer(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(n) = b.whole_number(d) {
        s.cgi.script_log_buffer = usize::try_from(n).unwrap_or(usize::MAX);
    }
}

/// `CGIPassAuth On`: the program gets the `Authorization` header as
/// HTTP_AUTHORIZATION (left out by default, so that a password checked by
/// the server is not shown to every script).
pub(crate) fn cgi_pass_auth(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if let Some(on) = b.on_off(d) {
        dir.cgi_pass_auth = Some(on);
    }
}

/// `CGIVar REQUEST_URI original-uri|current-uri`, the only variable
/// Apache lets it set.
pub(crate) fn cgi_var(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match d.args.as_slice() {
        [v, how] if v == "REQUEST_URI" && how.eq_ignore_ascii_case("original-uri") => dir.cgi_current_uri = Some(false),
        [v, how] if v == "REQUEST_URI" && how.eq_ignore_ascii_case("current-uri") => dir.cgi_current_uri = Some(true),
        _ => b.error(&d.origin, "CGIVar takes REQUEST_URI and original-uri or current-uri"),
    }
}
