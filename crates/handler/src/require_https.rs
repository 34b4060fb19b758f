//! MDRequireHttps: a plain-HTTP request for a managed domain that has its
//! certificate is redirected to https (302 for `temporary`, 301 for
//! `permanent`), before the host's own rules, as mod_md does. http-01
//! answers come first (acme_challenge.rs): the CA asks over plain HTTP.

use warren_config::md::RequireHttps;

use crate::conn::ConnInfo;
use crate::logs::strip_port;
use crate::request::Request;
use crate::{Outcome, Site};

impl Site {
    pub(crate) fn require_https(&self, req: Request, conn: &ConnInfo, raw: &[u8]) -> Option<Outcome> {
        if conn.tls.is_some() || self.settings.md.domains.is_empty() {
            return None;
        }
        let host = std::str::from_utf8(strip_port(req.head.host()?)).ok()?.to_ascii_lowercase();
        let d = self.settings.md.domains.iter().find(|d| d.require_https != RequireHttps::Off && d.has_certificate && d.covers(&host))?;
        let status = if d.require_https == RequireHttps::Permanent { 301 } else { 302 };
        let port = d.https_port.filter(|p| *p != 443).map(|p| format!(":{p}")).unwrap_or_default();
        let location = format!("https://{host}{port}{}", String::from_utf8_lossy(raw));
        Some(Outcome::Ready(self.redirect_to(req, status, location)))
    }
}
