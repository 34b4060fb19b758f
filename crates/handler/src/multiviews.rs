//! Content negotiation on requests, as mod_negotiation does it: MultiViews
//! (a request for `/foo` that no file answers, in a directory with
//! `Options MultiViews`, is negotiated among the files `foo.*` whose
//! extensions all say something of them: mod_mime's reading, see
//! [`crate::mime::MimeTypes::typing`]) and type maps (`AddHandler type-map
//! .var`, as Debian's localized error pages are). A variant is only one
//! the client could have fetched by its own URL: its sections and
//! `.htaccess` files must grant it, an `.htaccess` file in error or an
//! `.ht*` file never counts, and the chosen one is routed as a request for
//! it (a script is run by its handler, never sent as text). Reading a
//! directory or a map is never done on an event loop's thread
//! ([`Outcome::OffLoop`]).

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use warren_config::Handler;

use crate::dir_config::{Access, Effective};
use crate::negotiation::{self, Accepts, Preferences, Variant, SCRIPT_TYPE};
use crate::request::{Pass, Request, Route};
use crate::rewrite::MAX_INTERNAL_REDIRECTS;
use crate::{path, Body, Outcome, Response, Site};

/// The most a type map may hold: Debian's largest is 30 KB.
const MAX_TYPE_MAP: u64 = 1 << 20;

/// What MultiViews made of a request.
pub(crate) enum Negotiated {
    /// Routed as the chosen variant's own request (its filters on).
    Chosen(Outcome),
    /// A 404 or 406 of the negotiation itself, for the resource's filters.
    Answer(Response),
}

/// The headers a negotiated answer carries, for whatever answers it.
struct NegotiatedHeaders {
    vary: Vec<&'static str>,
    fields: Vec<(&'static str, String)>,
}

impl NegotiatedHeaders {
    fn apply(self, outcome: Outcome, req: Request) -> Outcome {
        let vary: Vec<String> = self.vary.iter().map(|v| v.to_string()).collect();
        let outcome = match outcome {
            Outcome::Ready(mut r) => {
                for (n, v) in &self.fields {
                    r.add(n, v.clone());
                }
                Outcome::Ready(r)
            }
            Outcome::Blocking(work) => {
                let fields = self.fields;
                Outcome::Blocking(Box::new(move || {
                    let mut r = work();
                    for (n, v) in fields {
                        r.add(n, v);
                    }
                    r
                }))
            }
            // An application's answer gets the Vary alone.
            other => other,
        };
        crate::rewrite::with_vary(outcome, &vary, req)
    }
}

/// The request for another URL of this host (a variant), counted as an
/// internal redirect so that maps naming each other end.
fn redirected(req: Request) -> Option<Request> {
    (req.pass.redirects < MAX_INTERNAL_REDIRECTS).then(|| Request { pass: Pass { redirects: req.pass.redirects + 1, forced_type: None, ..req.pass }, ..req })
}

fn is_get(req: Request) -> bool {
    matches!(req.head.method(), "GET" | "HEAD")
}

impl Site {
    /// MultiViews for a request mapped to `fs` under `dir`, before the
    /// directories' rewrite rules (Apache negotiates in its type checker,
    /// before fixups).
    /// None where MultiViews is not for this request.
    pub(crate) fn multiviews(&self, req: Request, url: &[u8], query: &[u8], fs: &Path, dir: &Effective) -> Option<Negotiated> {
        if !dir.options().multiviews || url.ends_with(b"/") || !dir.allows(req.head, req.conn) {
            return None;
        }
        let (Some(name), Some(parent)) = (fs.file_name(), fs.parent()) else { return None };
        // A name that is existing, or an access file's (denied as such,
        // as Apache's `<Files ".ht*">` denies it before negotiating).
        if std::fs::symlink_metadata(fs).is_ok() || self.is_access_file_name(req.host, name.as_bytes()) {
            return None;
        }
        if req.pass.on_loop {
            return Some(Negotiated::Chosen(Outcome::OffLoop));
        }
        let Ok(entries) = std::fs::read_dir(parent) else { return None };
        let name = name.as_bytes();
        let url_dir = &url[..url.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1)];
        let mut variants = Vec::new();
        let mut any_match = false;
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let candidate = file_name.as_bytes();
            if !candidate.starts_with(name) || candidate.get(name.len()) != Some(&b'.') || entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            any_match = true;
            if let Some(v) = self.multiviews_variant(req, name, candidate, &parent.join(&file_name), url_dir) {
                variants.push(v);
            }
        }
        if variants.is_empty() {
            if !any_match {
                return None;
            }
            let why = format!("Negotiation: discovered file(s) matching request: {} (None could be negotiated).", fs.display());
            return Some(Negotiated::Answer(self.error(req, 404, &why)));
        }
        variants.sort_by(|a, b| a.name.cmp(&b.name));
        // A map among the files stands for them all, as in Apache.
        if let Some(map) = variants.iter().find(|v| v.media_type == "application/x-type-map") {
            let mut to = url_dir.to_vec();
            to.extend_from_slice(map.name.as_bytes());
            let Some(req) = redirected(req) else { return Some(Negotiated::Answer(self.error(req, 500, "type maps name each other"))) };
            return Some(Negotiated::Chosen(self.map_url(req, &to, query, None, false)));
        }
        let prefs = Preferences { language_priority: dir.language_priority(), force: dir.force_language_priority(), prefer_scripts: !is_get(req) || !query.is_empty() };
        let transparent = is_get(req);
        let best = negotiation::best(&Accepts::of(req.head), &mut variants, &prefs);
        let vary = negotiation::vary(&variants, transparent);
        let Some(best) = best else {
            let r = self.not_acceptable(req, fs, &variants, &vary, transparent);
            return Some(Negotiated::Answer(r));
        };
        let chosen = &variants[best];
        let mut to = url_dir.to_vec();
        to.extend_from_slice(chosen.name.as_bytes());
        let mut fields = vec![("Content-Location", negotiation::escape_path_segment(&chosen.name))];
        if transparent {
            fields.push(("TCN", "choice".to_string()));
        }
        let Some(variant_req) = redirected(req) else { return Some(Negotiated::Answer(self.error(req, 500, "negotiation loops"))) };
        let outcome = self.map_url(variant_req, &to, query, None, false);
        Some(Negotiated::Chosen(NegotiatedHeaders { vary, fields }.apply(outcome, req)))
    }

    /// The variant the file `candidate` (in the directory of the resource
    /// `name` asked for) is, if it is one: a file the client may fetch,
    /// whose extensions each say something, and of a known type.
    fn multiviews_variant(&self, req: Request, name: &[u8], candidate: &[u8], fs: &Path, url_dir: &[u8]) -> Option<Variant> {
        let text = String::from_utf8(candidate.to_vec()).ok()?;
        if self.is_access_file_name(req.host, candidate) {
            return None;
        }
        let meta = std::fs::metadata(fs).ok().filter(|m| m.is_file())?;
        let mut url = url_dir.to_vec();
        url.extend_from_slice(candidate);
        let eff = self.effective_for(req, fs, &url);
        if eff.htaccess_error.is_some() || eff.htaccess_deferred || eff.access(req.head, req.conn, true) != Access::Granted {
            return None;
        }
        let typing = self.mime.typing(candidate, &eff);
        if !typing.found_metadata || !claims_all(&typing.unclaimed, name) {
            return None;
        }
        let runs = matches!(eff.handler(), Some(Some(Handler::FastCgi(_) | Handler::Pool(_))));
        let content_type = match typing.content_type() {
            _ if typing.type_map || matches!(eff.handler(), Some(Some(Handler::TypeMap))) => "application/x-type-map".to_string(),
            None if runs => SCRIPT_TYPE.to_string(),
            None => return None,
            Some(t) => t,
        };
        let mut v = Variant::of_type(text, &content_type);
        v.languages = typing.languages;
        v.encoding = typing.encoding;
        v.length = Some(meta.len());
        Some(v)
    }

    /// A type map the request mapped to (`fs`), negotiated: None where the
    /// file is no type map, or the client may not have it (the static
    /// handler then answers as for any file).
    pub(crate) fn type_map(&self, route: &Route) -> Option<Outcome> {
        let Route { req, url, query, fs, dir } = route;
        let req = *req;
        let name = crate::path::file_name(fs)?;
        if !self.is_type_map(name, dir) {
            return None;
        }
        if !dir.allows(req.head, req.conn) {
            return None;
        }
        if req.pass.on_loop {
            return Some(Outcome::OffLoop);
        }
        let meta = std::fs::metadata(fs).ok().filter(|m| m.is_file())?;
        if meta.len() > MAX_TYPE_MAP {
            return Some(Outcome::Ready(self.error(req, 500, &format!("type map {} is larger than {MAX_TYPE_MAP} bytes", fs.display()))));
        }
        let text = match std::fs::read(fs) {
            Ok(t) => t,
            Err(e) => return Some(Outcome::Ready(self.open_error(req, fs, &e))),
        };
        let map_name = String::from_utf8_lossy(name).into_owned();
        let mut variants = match negotiation::parse_type_map(&text, &map_name) {
            Ok(v) => v,
            Err(e) => return Some(Outcome::Ready(self.error(req, 500, &format!("Syntax error in type map {}:{}: {}", fs.display(), e.line, e.why)))),
        };
        let map_dir = fs.parent().unwrap_or(Path::new("/"));
        for v in variants.iter_mut().filter(|v| v.body.is_none() && v.length.is_none()) {
            v.length = std::fs::metadata(map_dir.join(&v.name)).ok().map(|m| m.len());
        }
        let transparent = is_get(req) && variants.iter().all(|v| v.body.is_none() && !v.name.contains('/'));
        let prefs = Preferences { language_priority: dir.language_priority(), force: dir.force_language_priority(), prefer_scripts: false };
        let best = negotiation::best(&Accepts::of(req.head), &mut variants, &prefs);
        let vary = negotiation::vary(&variants, transparent);
        let Some(best) = best else {
            return Some(Outcome::Ready(self.not_acceptable(req, fs, &variants, &vary, transparent)));
        };
        let chosen = &variants[best];
        if let Some(body) = &chosen.body {
            let mut r = match req.head.method() {
                "GET" | "HEAD" | "POST" => Response::new(200, req.host),
                _ => return Some(Outcome::Ready(self.error(req, 405, "a type map's inline variant answers GET and POST only").header("Allow", "GET, POST, OPTIONS"))),
            };
            r.add("Accept-Ranges", "bytes");
            if let Some(t) = chosen.content_type() {
                r.add("Content-Type", t);
            }
            if !chosen.languages.is_empty() {
                r.add("Content-Language", chosen.languages.join(", "));
            }
            if let Some(e) = &chosen.encoding {
                r.add("Content-Encoding", e.clone());
            }
            r.filename = Some(fs.clone());
            r.body = Body::Bytes(body.clone());
            return Some(NegotiatedHeaders { vary, fields: Vec::new() }.apply(Outcome::Ready(r), req));
        }
        let Some(to) = variant_url(url, &chosen.name) else {
            let why = format!("type map {}: URI {} is not a URL path of this host", fs.display(), chosen.name);
            return Some(Outcome::Ready(self.error(req, 404, &why)));
        };
        // A map choosing a map: Apache's 506 (a configuration error), which
        // also keeps maps from naming each other without end.
        if let Ok(target) = self.fs_path(req, &to) {
            if target.file_name().is_some_and(|n| self.is_type_map(n.as_bytes(), &self.effective_for(req, &target, &to))) {
                let why = format!("type map {}: its variant {} is a type map itself", fs.display(), target.display());
                return Some(Outcome::Ready(self.error(req, 506, &why)));
            }
        }
        let mut fields = Vec::new();
        if transparent {
            fields.push(("Content-Location", negotiation::escape_path_segment(&chosen.name)));
            fields.push(("TCN", "choice".to_string()));
        }
        let Some(variant_req) = redirected(req) else {
            return Some(Outcome::Ready(self.error(req, 500, &format!("type map {} leads to a loop of type maps", fs.display()))));
        };
        let outcome = self.map_url(variant_req, &to, query, None, false);
        Some(NegotiatedHeaders { vary, fields }.apply(outcome, req))
    }

    /// Whether the file `name`, under `dir`, is a type map: `SetHandler
    /// type-map`, or an extension `AddHandler type-map` names where no
    /// other handler is set.
    fn is_type_map(&self, name: &[u8], dir: &Effective) -> bool {
        match dir.handler() {
            Some(Some(Handler::TypeMap)) => true,
            Some(Some(_)) => false,
            _ => self.mime.names_type_map(name, dir),
        }
    }

    /// 406 with Apache's list of the variants there are.
    fn not_acceptable(&self, req: Request, fs: &Path, variants: &[Variant], vary: &[&'static str], transparent: bool) -> Response {
        let mut r = self.error(req, 406, &format!("no acceptable variant: {}", fs.display()));
        if let Body::Bytes(page) = &mut r.body {
            let list = negotiation::variant_list(variants);
            if let Some(at) = page.windows(5).position(|w| w == b"</p>\n") {
                page.splice(at + 5..at + 5, list.into_bytes());
            }
        }
        r.add("Alternates", negotiation::alternates(variants));
        for v in vary {
            r.vary_on(v);
        }
        if transparent {
            r.add("TCN", "list");
        }
        r
    }
}

/// The URL path a type map's `URI:` names: a URL (percent-encoded, as
/// Apache's internal redirect reads it) relative to the map's own; None
/// where it climbs above `/` or does not decode to a path.
fn variant_url(map_url: &[u8], uri: &str) -> Option<Vec<u8>> {
    let mut target = if uri.starts_with('/') {
        Vec::new()
    } else {
        let dir_end = map_url.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
        path::encode(&map_url[..dir_end]).into_bytes()
    };
    target.extend_from_slice(uri.as_bytes());
    path::normalize(path::split_query(&target).0).ok()
}

/// Whether the parts of a variant's name no extension claims (the base
/// first) are the requested name's parts, in order: `index.html.foo`
/// answers `index.foo` or `index.html.foo`, never `index.foo.html`
/// (Apache's check, which keeps the search linear).
fn claims_all(unclaimed: &[String], requested: &[u8]) -> bool {
    let requested = String::from_utf8_lossy(requested);
    let mut left = unclaimed.iter().peekable();
    for segment in requested.split('.') {
        if left.peek().is_some_and(|u| u.as_str() == segment) {
            left.next();
        }
    }
    left.peek().is_none()
}

#[cfg(test)]
mod tests {
    use super::{claims_all, variant_url};

    #[test]
    fn type_map_uris_are_urls_beside_the_map() {
        assert_eq!(variant_url(b"/error/x.var", "x.html.en").as_deref(), Some(&b"/error/x.html.en"[..]));
        assert_eq!(variant_url(b"/my docs/x.var", "a%20b.html").as_deref(), Some(&b"/my docs/a b.html"[..]));
        assert_eq!(variant_url(b"/a/x.var", "../b.html").as_deref(), Some(&b"/b.html"[..]));
        assert_eq!(variant_url(b"/a/x.var", "/c/d.html").as_deref(), Some(&b"/c/d.html"[..]));
        assert_eq!(variant_url(b"/a/x.var", "../../../etc/passwd"), None);
        assert_eq!(variant_url(b"/a/x.var", "%2e%2e/%2e%2e/etc/passwd"), None);
    }

    #[test]
    fn unclaimed_parts_follow_the_name_asked_for() {
        let parts = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(claims_all(&parts(&["index"]), b"index"));
        assert!(claims_all(&parts(&["index", "foo"]), b"index.foo"));
        assert!(claims_all(&parts(&["index", "foo"]), b"index.html.foo"));
        assert!(!claims_all(&parts(&["index", "foo"]), b"index"));
        assert!(!claims_all(&parts(&["index", "foo", "bar"]), b"index.bar.foo"));
    }
}
