//! Internal redirects: the same request served again for another local URL,
//! through the whole of routing (host, sections, `Require`, handlers,
//! DirectoryIndex). Two things lead here: a FastCGI application's local
//! `Location:` (see `fastcgi`), and a local `ErrorDocument`, which Apache
//! answers as `ap_die` does and this module follows.

use warren_http::{parse_head, HeadLimits, RequestHead, Version};

use crate::route::Request;
use crate::site::{ConnInfo, Site};
use crate::{path, Outcome, Response};

/// Request headers an internal redirect does not carry: the new request
/// has no body.
const BODY_HEADERS: [&str; 4] = ["content-length", "transfer-encoding", "content-type", "expect"];
/// Nor, for an error document, the conditions and ranges of the original
/// request: the document is the answer whole, never a 304, 412 or 206
/// (Apache's `no_local_copy`).
const CONDITION_HEADERS: [&str; 6] = ["if-match", "if-none-match", "if-modified-since", "if-unmodified-since", "if-range", "range"];

/// The head of a `method` request for `location` with the headers of
/// `original` but those in `drop`; None if `location` does not make a
/// request line.
pub fn request_head(method: &str, location: &str, original: &RequestHead, drop: &[&str]) -> Option<RequestHead> {
    // An HTTP/2 request is re-read as HTTP/1.1 (the parser takes no other
    // text) and keeps its version.
    let wire = if original.version == Version::Http2 { Version::Http11 } else { original.version };
    let mut text = format!("{method} {location} {}\r\n", wire.as_str()).into_bytes();
    for (n, v) in original.headers() {
        if drop.iter().any(|d| n.eq_ignore_ascii_case(d.as_bytes())) {
            continue;
        }
        text.extend_from_slice(n);
        text.extend_from_slice(b": ");
        text.extend_from_slice(v);
        text.extend_from_slice(b"\r\n");
    }
    text.extend_from_slice(b"\r\n");
    // The original head passed the configured limits; only the URL is new.
    let limits = HeadLimits { request_line: 64 * 1024, field_size: 64 * 1024, fields: 1000, head: usize::MAX };
    match parse_head(&text, &limits) {
        Ok(Some((mut h, _))) => {
            h.version = original.version;
            Some(h)
        }
        _ => None,
    }
}

/// The head for a FastCGI application's local `Location:`: a GET, as CGI
/// says.
pub fn location_head(location: &str, original: &RequestHead) -> Option<RequestHead> {
    request_head("GET", location, original, &BODY_HEADERS)
}

impl Site {
    /// Answers one request whose body (if any) has not been read yet: the
    /// route, then the local ErrorDocument of an error it ended in.
    pub fn handle(&self, head: &RequestHead, conn: &ConnInfo) -> Outcome {
        let outcome = self.route(head, conn, false);
        self.follow_error_document_from(outcome, head, conn, false)
    }

    /// [`Site::handle`] for an event loop, which serves every connection
    /// of its process: [`Outcome::OffLoop`] when the request (or its
    /// ErrorDocument) would run an `.htaccess` file's regular expressions
    /// or read one anew, for the loop to call [`Site::handle`] on a thread
    /// instead.
    pub fn handle_on_loop(&self, head: &RequestHead, conn: &ConnInfo) -> Outcome {
        crate::htaccess::take_deferred();
        let outcome = self.route(head, conn, true);
        let outcome = self.follow_error_document_from(outcome, head, conn, true);
        // Some decision on the way was made without an `.htaccess` file the
        // loop may not read: none of it stands.
        if crate::htaccess::take_deferred() {
            return Outcome::OffLoop;
        }
        outcome
    }

    /// An error page whose status has a local ErrorDocument becomes an
    /// internal redirect to it: a GET (HEAD stays HEAD) routed like any
    /// request, whose answer keeps the error's status (a script's own
    /// `Status:` aside). If the document cannot answer (missing, denied,
    /// failing) the built-in page of the first error stays, as Apache's
    /// "Additionally, ... while trying to use an ErrorDocument". Anything
    /// else passes through.
    pub fn follow_error_document(&self, outcome: Outcome, head: &RequestHead, conn: &ConnInfo) -> Outcome {
        self.follow_error_document_from(outcome, head, conn, false)
    }

    fn follow_error_document_from(&self, outcome: Outcome, head: &RequestHead, conn: &ConnInfo, on_loop: bool) -> Outcome {
        let Outcome::Ready(mut page) = outcome else { return outcome };
        let Some(local) = page.error_document.take() else { return Outcome::Ready(page) };
        let status = page.status;
        let method = if head.method() == "HEAD" { "HEAD" } else { "GET" };
        let drop: Vec<&str> = BODY_HEADERS.iter().chain(CONDITION_HEADERS.iter()).copied().collect();
        let Some(doc_head) = request_head(method, &local, head, &drop) else {
            self.document_failed(&page, conn, &local, "is not a valid URL");
            return Outcome::Ready(page);
        };
        match self.route(&doc_head, conn, on_loop) {
            Outcome::Ready(r) if (200..300).contains(&r.status) => Outcome::Ready(as_error(r, status)),
            Outcome::Ready(r) => {
                self.document_failed(&page, conn, &local, &format!("answered {}", r.status));
                Outcome::Ready(page)
            }
            Outcome::Blocking(work) => Outcome::Blocking(Box::new(move || {
                let r = work();
                if (200..300).contains(&r.status) {
                    as_error(r, status)
                } else {
                    page
                }
            })),
            Outcome::Gateway(mut gw) => {
                gw.answer_error(status, head);
                Outcome::Gateway(gw)
            }
            // The whole request goes off the loop, its first answer to be made again there.
            Outcome::OffLoop => Outcome::OffLoop,
        }
    }

    fn document_failed(&self, page: &Response, conn: &ConnInfo, local: &str, why: &str) {
        let msg = format!("ErrorDocument {} {local} {why}; answering with the built-in page", page.status);
        self.hosts[page.host].error_log.error(Some(conn.useragent), &msg);
    }

    /// For an answer given where nothing may block or run a script (a
    /// request body that could not be read, a handler that panicked): the
    /// ErrorDocument when it is a static answer, else the built-in page.
    pub fn error_page_now(&self, page: Response, head: &RequestHead, conn: &ConnInfo) -> Response {
        let Some(local) = page.error_document.clone() else { return page };
        let (host, status) = (page.host, page.status);
        match self.follow_error_document(Outcome::Ready(page), head, conn) {
            Outcome::Ready(r) => r,
            _ => {
                let why = format!("ErrorDocument {status} {local} needs a handler, which cannot answer this error; answering with the built-in page");
                self.hosts[host].error_log.error(Some(conn.useragent), &why);
                let mut r = self.error_page(Request::new(head, conn, host), status);
                r.error_document = None;
                r
            }
        }
    }
}

/// A document's answer as the answer to an error: the error's status, and
/// none of the validators that would let a client cache it as the page.
fn as_error(mut r: Response, status: u16) -> Response {
    r.status = status;
    r.headers.retain(|(n, _)| !["ETag", "Last-Modified", "Accept-Ranges"].iter().any(|v| n.eq_ignore_ascii_case(v)));
    r
}

/// The URL path an error page stands for, as REDIRECT_URL gives it: the
/// decoded, normalised path (the raw one if it does not normalise).
pub fn redirect_url(original: &RequestHead) -> Vec<u8> {
    let raw = path::split_query(original.path_and_query()).0;
    path::normalize(raw).unwrap_or_else(|_| raw.to_vec())
}
