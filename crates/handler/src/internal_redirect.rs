//! Internal redirects: the same request served again for another local URL,
//! through the whole of routing (host, sections, `Require`, handlers,
//! DirectoryIndex). Two things lead here: a FastCGI application's local
//! `Location:` (see `fastcgi`), and a local `ErrorDocument`, which Apache
//! answers as `ap_die` does and this module follows.

use warren_http::{parse_head, HeadLimits, RequestHead, Version};

use crate::{path, Response};

/// Request headers an internal redirect does not carry: the new request
/// has no body.
pub(crate) const BODY_HEADERS: [&str; 4] = ["content-length", "transfer-encoding", "content-type", "expect"];
/// Nor, for an error document, the conditions and ranges of the original
/// request: the document is the answer whole, never a 304, 412 or 206
/// (Apache's `no_local_copy`).
pub(crate) const CONDITION_HEADERS: [&str; 6] = ["if-match", "if-none-match", "if-modified-since", "if-unmodified-since", "if-range", "range"];

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

/// A document's answer as the answer to an error: the error's status, and
/// none of the validators that would let a client cache it as the page.
pub(crate) fn as_error(mut r: Response, status: u16) -> Response {
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
