//! mod_headers' directives (`Header`, `RequestHeader`), read into a
//! section's [`HeaderRule`](crate::headers::HeaderRule)s by
//! [`headers::parse_rule`](crate::headers::parse_rule). The request half is
//! the handler's `filters::headers`.

use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::parse::Directive;

pub(crate) fn header(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match crate::headers::parse_rule(&d.args, false, b.in_htaccess, &d.origin) {
        Ok(r) if crate::headers::names_server_written(&r) => {
            let hint = if r.name.eq_ignore_ascii_case("Server") { " (ServerTokens sets what it says)" } else { "" };
            b.warn(&d.origin, format!("Header {}: warren writes {} itself, after the filters; this line has no effect, as in Apache{hint}", r.name, r.name));
        }
        Ok(r) => dir.headers.push(std::sync::Arc::new(r)),
        Err(e) => b.error(&d.origin, e),
    }
}

pub(crate) fn request_header(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    match crate::headers::parse_rule(&d.args, true, b.in_htaccess, &d.origin) {
        // The application is told these as CONTENT_TYPE and CONTENT_LENGTH
        // (no HTTP_ before them): what the client sent, not the server's to change.
        Ok(r) if ["Content-Type", "Content-Length"].iter().any(|n| n.eq_ignore_ascii_case(&r.name)) => {
            let var = r.name.to_ascii_uppercase().replace('-', "_");
            let why = crate::env_vars::refusal(&format!("RequestHeader {}", r.name), &var, b.in_htaccess());
            b.warn(&d.origin, why.unwrap_or_default());
        }
        Ok(r) => dir.request_headers.push(std::sync::Arc::new(r)),
        Err(e) => b.error(&d.origin, e),
    }
}
