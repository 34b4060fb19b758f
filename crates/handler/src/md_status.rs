//! mod_md's visibility: `SetHandler md-status` answers the JSON the ACME
//! helper (warren-acme's `status`) publishes in MDStoreDir, and
//! server-status gets one line per managed domain from the same helper.
//! The children only read what the helper wrote for them (0640, the
//! server's Group), never the store's keys.

use warren_config::md::MdGlobal;

use crate::request::Request;
use crate::{Body, Response, Site};

fn published(md: &MdGlobal, name: &str) -> Option<Vec<u8>> {
    if md.domains.is_empty() {
        return None;
    }
    std::fs::read(md.store_dir.join(name)).ok()
}

impl Site {
    /// The md-status page: 503 until the helper has written it (or with
    /// no MDomain configured).
    pub(crate) fn md_status(&self, req: Request) -> Response {
        match published(&self.settings.md, "md-status.json") {
            Some(json) => {
                let mut r = Response::new(200, req.host).header("Content-Type", "application/json");
                r.body = Body::Bytes(json);
                r
            }
            None => self.error(req, 503, "md-status: no managed domain, or the ACME helper has published no status yet"),
        }
    }

    /// server-status's lines for the managed domains (plain for `?auto`,
    /// a section of the HTML page otherwise).
    pub(crate) fn add_md_lines(&self, page: &mut Response, auto: bool) {
        let Some(lines) = published(&self.settings.md, "md-status.txt") else { return };
        let Body::Bytes(body) = &mut page.body else { return };
        let lines = String::from_utf8_lossy(&lines);
        if auto {
            body.extend_from_slice(lines.as_bytes());
            return;
        }
        let section = format!("<h2>Managed domains (MD)</h2>\n<pre>{}</pre>\n", crate::path::html_escape(&lines));
        match body.windows(7).rposition(|w| w == b"</body>") {
            Some(at) => {
                body.splice(at..at, section.into_bytes());
            }
            None => body.extend_from_slice(section.as_bytes()),
        }
    }
}
