//! A request's decoded field list -> [`RequestHead`] (RFC 9113 §8.1-8.3).
//!
//! [`Fields`] takes the fields one at a time as HPACK decodes them,
//! checking each at once (so a bad list stops being stored at its first
//! bad field) against the rules of §8.2 and the HeadLimits; [`Fields::head`]
//! then checks the pseudo-header fields as a whole and builds the head.
//! The same [`Fields`] checks trailers, which are then dropped.

use std::ops::Range;

use crate::error::HttpError;
use crate::head_scan::{is_tchar, HeadLimits};
use crate::request::{valid_host, BodyFraming, RequestHead};

/// Why a request is not served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// Malformed (§8.1.1): a stream error PROTOCOL_ERROR, no answer.
    Malformed(&'static str),
    /// Well-formed but refused with an HTTP answer (431, 414, 405, 400).
    Refused(HttpError),
}

/// Fields that are only about one HTTP/1.1 connection (§8.2.2).
const CONNECTION_SPECIFIC: [&[u8]; 5] = [b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"];

/// The length of " HTTP/2.0" plus the space after the method: what a
/// request line adds to the method and the path, for LimitRequestLine.
const REQUEST_LINE_EXTRA: usize = 10;

/// A header or trailer section as it is decoded.
pub struct Fields<'l> {
    limits: &'l HeadLimits,
    trailers: bool,
    /// Names and values of the regular fields, one after the other.
    bytes: Vec<u8>,
    /// (name, value) ranges of `bytes`.
    regular: Vec<(Range<usize>, Range<usize>)>,
    method: Option<Range<usize>>,
    scheme: Option<Range<usize>>,
    authority: Option<Range<usize>>,
    path: Option<Range<usize>>,
    /// RFC 8441's `:protocol`, taken only where [`Fields::allow_protocol`] said.
    protocol: Option<Range<usize>>,
    allow_protocol: bool,
    count: usize,
    problem: Option<Problem>,
}

impl<'l> Fields<'l> {
    pub fn new(limits: &'l HeadLimits, trailers: bool) -> Fields<'l> {
        // Room for a usual request's fields from the start, rather than a
        // vector grown five or six times for each request.
        let (bytes, regular) = if trailers { (Vec::new(), Vec::new()) } else { (Vec::with_capacity(256), Vec::with_capacity(8)) };
        Fields { limits, trailers, bytes, regular, method: None, scheme: None, authority: None, path: None, protocol: None, allow_protocol: false, count: 0, problem: None }
    }

    /// Whether `:protocol` is a field (SETTINGS_ENABLE_CONNECT_PROTOCOL
    /// announced) or, as without the setting, a malformed request.
    pub fn allow_protocol(&mut self, allow: bool) {
        self.allow_protocol = allow;
    }

    /// The first problem met, if any.
    pub fn problem(&self) -> Option<&Problem> {
        self.problem.as_ref()
    }

    /// One decoded field. After the first problem the rest are only
    /// counted, not kept: a list meant to make us allocate stops costing
    /// memory as soon as it is known to be refused.
    pub fn add(&mut self, name: &[u8], value: &[u8]) {
        if self.problem.is_some() {
            return;
        }
        if let Err(problem) = self.check(name, value) {
            self.problem = Some(problem);
            self.bytes = Vec::new();
            self.regular = Vec::new();
        }
    }

    fn check(&mut self, name: &[u8], value: &[u8]) -> Result<(), Problem> {
        let malformed = |why| Err(Problem::Malformed(why));
        if value.iter().any(|&b| b == 0 || b == b'\r' || b == b'\n') {
            return malformed("NUL, CR or LF in a field value");
        }
        if value.first().is_some_and(|&b| b == b' ' || b == b'\t') || value.last().is_some_and(|&b| b == b' ' || b == b'\t') {
            return malformed("whitespace around a field value");
        }
        if let Some(pseudo) = name.strip_prefix(b":") {
            if self.trailers {
                return malformed("pseudo-header field in trailers");
            }
            if !self.regular.is_empty() {
                return malformed("pseudo-header field after a regular field");
            }
            let slot = match pseudo {
                b"method" => &mut self.method,
                b"scheme" => &mut self.scheme,
                b"authority" => &mut self.authority,
                b"path" => &mut self.path,
                b"protocol" if self.allow_protocol => &mut self.protocol,
                _ => return malformed("unknown or response pseudo-header field"),
            };
            if slot.is_some() {
                return malformed("duplicate pseudo-header field");
            }
            let start = self.bytes.len();
            self.bytes.extend_from_slice(value);
            *slot = Some(start..self.bytes.len());
            return Ok(());
        }
        // Pseudo-header fields stand for the request line: only the rest
        // count, as in HTTP/1.1.
        self.count += 1;
        if self.count > self.limits.fields {
            return Err(Problem::Refused(HttpError::new(431, format!("more header fields than LimitRequestFields ({})", self.limits.fields))));
        }
        if name.is_empty() || !name.iter().all(|&b| is_tchar(b) && !b.is_ascii_uppercase()) {
            return malformed("field name not a lower-case token");
        }
        if CONNECTION_SPECIFIC.contains(&name) {
            return malformed("connection-specific field");
        }
        if name == b"te" && !value.eq_ignore_ascii_case(b"trailers") {
            return malformed("te other than \"trailers\"");
        }
        // As an HTTP/1.1 field line "name: value" (LimitRequestFieldSize).
        if name.len().saturating_add(2).saturating_add(value.len()) > self.limits.field_size {
            return Err(Problem::Refused(HttpError::new(431, format!("header field longer than LimitRequestFieldSize ({})", self.limits.field_size))));
        }
        if self.trailers {
            return Ok(());
        }
        let n = self.bytes.len();
        self.bytes.extend_from_slice(name);
        let v = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.regular.push((n..v, v..self.bytes.len()));
        Ok(())
    }

    fn get(&self, r: &Option<Range<usize>>) -> Option<&[u8]> {
        r.clone().and_then(|r| self.bytes.get(r))
    }

    /// The request's head, and the body length content-length announces
    /// (which the DATA must match, §8.1.1). `end_stream`: HEADERS ended
    /// the stream, there is no body. `wire_len`: the header block's size.
    pub fn head(self, end_stream: bool, wire_len: usize) -> Result<(RequestHead, Option<u64>), Problem> {
        if let Some(problem) = self.problem {
            return Err(problem);
        }
        let malformed = |why| Err(Problem::Malformed(why));
        let Some(method) = self.get(&self.method) else { return malformed("no :method") };
        if method.is_empty() || !method.iter().all(|&b| is_tchar(b)) {
            return malformed(":method not a token");
        }
        let protocol = self.get(&self.protocol);
        match protocol {
            // §8.5: a proxy's business; we are an origin server.
            None if method == b"CONNECT" => return Err(Problem::Refused(HttpError::new(405, "CONNECT on an origin server"))),
            // RFC 8441 §4.
            Some(_) if method != b"CONNECT" => return malformed(":protocol on a request other than CONNECT"),
            Some(p) if p.is_empty() || !p.iter().all(|&b| is_tchar(b)) => return malformed(":protocol not a token"),
            _ => {}
        }
        let Some(scheme) = self.get(&self.scheme) else { return malformed("no :scheme") };
        if scheme.is_empty() || !scheme.iter().all(|&b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) {
            return malformed("bad :scheme");
        }
        let Some(path) = self.get(&self.path) else { return malformed("no :path") };
        if path.is_empty() {
            return malformed("empty :path");
        }
        if path.iter().any(|&b| b <= b' ' || b == 0x7f) {
            return malformed("space or control character in :path");
        }
        if !(path[0] == b'/' || path == b"*" && method == b"OPTIONS") {
            return malformed(":path neither absolute nor OPTIONS *");
        }
        if method.len().saturating_add(path.len()).saturating_add(REQUEST_LINE_EXTRA) > self.limits.request_line {
            return Err(Problem::Refused(HttpError::new(414, format!("request line longer than LimitRequestLine ({})", self.limits.request_line))));
        }
        let authority = self.get(&self.authority);
        if let Some(a) = authority {
            // valid_host admits no userinfo ('@'), which §8.3.1 forbids.
            if a.is_empty() || !valid_host(a) {
                return malformed("bad :authority");
            }
        }

        let mut content_length: Option<u64> = None;
        let mut cookie: Vec<u8> = Vec::new();
        let mut first_cookie = None;
        let mut host_seen = false;
        for (i, (n, v)) in self.regular.iter().enumerate() {
            let (name, value) = (&self.bytes[n.clone()], &self.bytes[v.clone()]);
            match name {
                b"content-length" => {
                    let len = (!value.is_empty() && value.len() <= 19 && value.iter().all(u8::is_ascii_digit))
                        .then(|| std::str::from_utf8(value).ok()?.parse::<u64>().ok())
                        .flatten();
                    match (len, content_length) {
                        (None, _) => return malformed("invalid content-length"),
                        (Some(len), Some(c)) if len != c => return malformed("conflicting content-length values"),
                        (len, _) => content_length = len,
                    }
                }
                b"host" => {
                    // §8.3.1 lets :authority win over host; a request where
                    // they differ, or with two hosts (which HTTP/1.1 would
                    // refuse, and which would reach CGI joined as one
                    // "a, b"), names no one host: refused, as for HTTP/1.1.
                    let refuse = |why: String| Err(Problem::Refused(HttpError::new(400, why)));
                    if host_seen {
                        return refuse("more than one host header field".into());
                    }
                    host_seen = true;
                    match authority {
                        Some(a) if !a.eq_ignore_ascii_case(value) => {
                            return refuse(format!("host header field {} differs from :authority {}", String::from_utf8_lossy(value), String::from_utf8_lossy(a)));
                        }
                        None if !valid_host(value) => return refuse(format!("invalid Host header field: {}", String::from_utf8_lossy(value))),
                        _ => {}
                    }
                }
                b"cookie" => {
                    // §8.2.3: a client may split cookies into fields of
                    // their own (for HPACK); an application wants one.
                    if first_cookie.is_none() {
                        first_cookie = Some(i);
                    } else {
                        cookie.extend_from_slice(b"; ");
                    }
                    cookie.extend_from_slice(value);
                }
                _ => {}
            }
        }
        let framing = match content_length {
            Some(n) if end_stream && n > 0 => return malformed("content-length but no body"),
            _ if end_stream => BodyFraming::None,
            Some(0) => BodyFraming::None,
            Some(n) => BodyFraming::Length(n),
            None => BodyFraming::Chunked,
        };
        let fields = self.regular.iter().enumerate().filter_map(|(i, (n, v))| {
            let name = &self.bytes[n.clone()];
            if name != b"cookie" {
                Some((name, &self.bytes[v.clone()]))
            } else if Some(i) == first_cookie {
                Some((name, &cookie[..]))
            } else {
                None
            }
        });
        if let Some(protocol) = protocol {
            return websocket_head(protocol, path, authority, content_length, fields, wire_len);
        }
        let head = RequestHead::from_h2(method, path, authority, fields, framing, wire_len);
        Ok((head, if end_stream { Some(0) } else { content_length }))
    }
}

/// An extended CONNECT (RFC 8441), its pseudo-header fields checked:
/// for `websocket`, the HTTP/1.1 upgrade request it stands for, as
/// Apache's mod_http2 makes it (h2_ws.c): GET with `upgrade: websocket`
/// and `connection: upgrade`, which no HTTP/2 client can send itself
/// (they are connection-specific fields, refused above), so that routing
/// and the proxy see a WebSocket request and nothing else is taken for
/// one. The client's `sec-websocket-key` (RFC 8441 has none) is dropped:
/// the proxy makes a fresh one for the backend. The stream's DATA is the
/// tunnel's, not a body: no framing, no length to match.
fn websocket_head<'a>(protocol: &[u8], path: &[u8], authority: Option<&[u8]>, content_length: Option<u64>, fields: impl Iterator<Item = (&'a [u8], &'a [u8])>, wire_len: usize) -> Result<(RequestHead, Option<u64>), Problem> {
    if !protocol.eq_ignore_ascii_case(b"websocket") {
        return Err(Problem::Refused(HttpError::new(501, format!("extended CONNECT for protocol {} (only websocket is carried)", String::from_utf8_lossy(protocol)))));
    }
    if content_length.is_some() {
        return Err(Problem::Malformed("content-length on an extended CONNECT"));
    }
    let kept = fields.filter(|(n, _)| *n != b"sec-websocket-key");
    let upgrade: [(&[u8], &[u8]); 2] = [(b"upgrade", b"websocket"), (b"connection", b"upgrade")];
    let head = RequestHead::from_h2(b"GET", path, authority, kept.chain(upgrade), BodyFraming::None, wire_len);
    Ok((head, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: HeadLimits = HeadLimits { request_line: 100, field_size: 100, fields: 10, head: 1000 };

    fn head(list: &[(&str, &str)], end_stream: bool) -> Result<(RequestHead, Option<u64>), Problem> {
        let mut f = Fields::new(&LIMITS, false);
        for (n, v) in list {
            f.add(n.as_bytes(), v.as_bytes());
        }
        f.head(end_stream, 10)
    }

    const GET: [(&str, &str); 4] = [(":method", "GET"), (":scheme", "https"), (":authority", "a.example"), (":path", "/x")];

    fn with(extra: &[(&str, &str)]) -> Vec<(&'static str, &'static str)> {
        let mut v = GET.to_vec();
        v.extend(extra.iter().map(|&(n, v)| (n.to_string().leak() as &str, v.to_string().leak() as &str)));
        v
    }

    fn malformed(list: &[(&str, &str)]) -> &'static str {
        match head(list, true) {
            Err(Problem::Malformed(why)) => why,
            other => panic!("{list:?} gave {other:?}"),
        }
    }

    fn refused(list: &[(&str, &str)], end_stream: bool) -> u16 {
        match head(list, end_stream) {
            Err(Problem::Refused(e)) => e.status,
            other => panic!("{list:?} gave {other:?}"),
        }
    }

    fn extended(list: &[(&str, &str)], allow: bool) -> Result<(RequestHead, Option<u64>), Problem> {
        let mut f = Fields::new(&LIMITS, false);
        f.allow_protocol(allow);
        for (n, v) in list {
            f.add(n.as_bytes(), v.as_bytes());
        }
        f.head(false, 10)
    }

    const WS: [(&str, &str); 5] = [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":authority", "a.example"), (":path", "/chat?x=1")];

    #[test]
    fn an_extended_connect_is_a_websocket_upgrade() {
        let mut list = WS.to_vec();
        list.extend([("sec-websocket-version", "13"), ("sec-websocket-key", "client's"), ("sec-websocket-protocol", "chat"), ("cookie", "a=1"), ("cookie", "b=2")]);
        let (h, expected) = extended(&list, true).unwrap();
        assert_eq!(h.request_line(), b"GET /chat?x=1 HTTP/2.0");
        assert!(h.is_h2_websocket());
        assert_eq!(h.header("connection"), Some(&b"upgrade"[..]));
        assert_eq!(h.header("sec-websocket-protocol"), Some(&b"chat"[..]));
        assert_eq!(h.header("sec-websocket-key"), None, "the proxy makes its own");
        assert_eq!(h.header("cookie"), Some(&b"a=1; b=2"[..]));
        assert_eq!((h.framing, expected), (BodyFraming::None, None), "the DATA is the tunnel's, not a body");
        // An ordinary request is never taken for one.
        assert!(!head(&GET, true).unwrap().0.is_h2_websocket());
    }

    #[test]
    fn extended_connects_refused() {
        let why = |list: &[(&str, &str)], allow| match extended(list, allow) {
            Err(Problem::Malformed(why)) => why.to_string(),
            Err(Problem::Refused(e)) => e.status.to_string(),
            Ok(_) => "served".into(),
        };
        // Without SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441 §3).
        assert_eq!(why(&WS, false), "unknown or response pseudo-header field");
        let mut get = WS.to_vec();
        get[0].1 = "GET";
        assert_eq!(why(&get, true), ":protocol on a request other than CONNECT");
        for missing in [":scheme", ":path"] {
            let list: Vec<_> = WS.iter().copied().filter(|(n, _)| *n != missing).collect();
            assert!(why(&list, true).starts_with("no :"), "{missing}: {}", why(&list, true));
        }
        let mut other = WS.to_vec();
        other[1].1 = "connect-udp";
        assert_eq!(why(&other, true), "501");
        let mut smuggled = WS.to_vec();
        smuggled[1].1 = "websocket\r\nx: y";
        assert_eq!(why(&smuggled, true), "NUL, CR or LF in a field value");
        smuggled[1].1 = "websocket x";
        assert_eq!(why(&smuggled, true), ":protocol not a token");
        let mut twice = WS.to_vec();
        twice.insert(2, (":protocol", "websocket"));
        assert_eq!(why(&twice, true), "duplicate pseudo-header field");
        let mut sized = WS.to_vec();
        sized.push(("content-length", "3"));
        assert_eq!(why(&sized, true), "content-length on an extended CONNECT");
        // A plain CONNECT stays an origin server's 405.
        let plain: Vec<_> = WS.iter().copied().filter(|(n, _)| *n != ":protocol").collect();
        assert_eq!(why(&plain, true), "405");
    }

    #[test]
    fn a_get() {
        let (h, len) = head(&with(&[("accept", "*/*")]), true).unwrap();
        assert_eq!(h.request_line(), b"GET /x HTTP/2.0");
        assert_eq!(h.host(), Some(&b"a.example"[..]));
        assert_eq!(h.header("accept"), Some(&b"*/*"[..]));
        assert_eq!(h.framing, BodyFraming::None);
        assert_eq!(len, Some(0));
    }

    #[test]
    fn framing() {
        let (h, len) = head(&with(&[("content-length", "5")]), false).unwrap();
        assert_eq!((h.framing, len), (BodyFraming::Length(5), Some(5)));
        let (h, len) = head(&with(&[]), false).unwrap();
        assert_eq!((h.framing, len), (BodyFraming::Chunked, None));
        let (h, len) = head(&with(&[("content-length", "0")]), false).unwrap();
        assert_eq!((h.framing, len), (BodyFraming::None, Some(0)));
        assert_eq!(malformed(&with(&[("content-length", "5")])), "content-length but no body");
        assert_eq!(malformed(&with(&[("content-length", "x")])), "invalid content-length");
        assert_eq!(malformed(&with(&[("content-length", "1"), ("content-length", "2")])), "conflicting content-length values");
    }

    #[test]
    fn cookies_joined() {
        let (h, _) = head(&with(&[("cookie", "a=1"), ("accept", "x"), ("cookie", "b=2"), ("cookie", "c=3")]), true).unwrap();
        assert_eq!(h.header("cookie"), Some(&b"a=1; b=2; c=3"[..]));
        assert_eq!(h.headers().filter(|(n, _)| *n == b"cookie").count(), 1);
        assert_eq!(h.headers().count(), 3); // host, cookie, accept
    }

    #[test]
    fn host_without_authority() {
        let list = [(":method", "GET"), (":scheme", "http"), (":path", "/"), ("host", "h:8080")];
        let (h, _) = head(&list, true).unwrap();
        assert_eq!(h.host(), Some(&b"h:8080"[..]));
        let list = [(":method", "GET"), (":scheme", "http"), (":path", "/"), ("host", "h/x")];
        assert_eq!(refused(&list, true), 400);
        // Both, the same name: one host.
        let (h, _) = head(&with(&[("host", "A.example")]), true).unwrap();
        assert_eq!(h.host(), Some(&b"a.example"[..]));
        assert_eq!(h.headers().filter(|(n, _)| *n == b"host").count(), 1);
    }

    #[test]
    fn hosts_that_disagree() {
        let two = [(":method", "GET"), (":scheme", "http"), (":path", "/"), ("host", "a.test"), ("host", "b.test")];
        assert_eq!(refused(&two, true), 400);
        let same_twice = [(":method", "GET"), (":scheme", "http"), (":path", "/"), ("host", "a.test"), ("host", "a.test")];
        assert_eq!(refused(&same_twice, true), 400);
        assert_eq!(refused(&with(&[("host", "other")]), true), 400);
        assert_eq!(refused(&with(&[("host", "a.example:443")]), true), 400);
        assert_eq!(refused(&with(&[("host", "a.example"), ("host", "a.example")]), true), 400);
        match head(&with(&[("accept", "x"), ("host", "b.test")]), true) {
            Err(Problem::Refused(e)) => assert!(e.reason.contains("b.test") && e.reason.contains("a.example"), "{}", e.reason),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_requests() {
        assert_eq!(malformed(&with(&[("Accept", "x")])), "field name not a lower-case token");
        assert_eq!(malformed(&with(&[("", "x")])), "field name not a lower-case token");
        assert_eq!(malformed(&with(&[("connection", "keep-alive")])), "connection-specific field");
        assert_eq!(malformed(&with(&[("transfer-encoding", "chunked")])), "connection-specific field");
        assert_eq!(malformed(&with(&[("upgrade", "h2c")])), "connection-specific field");
        assert_eq!(malformed(&with(&[("te", "gzip")])), "te other than \"trailers\"");
        assert!(head(&with(&[("te", "trailers")]), true).is_ok());
        assert_eq!(malformed(&with(&[("x", "a\nb")])), "NUL, CR or LF in a field value");
        assert_eq!(malformed(&with(&[("x", " a")])), "whitespace around a field value");
        assert_eq!(malformed(&with(&[("x", "a\t")])), "whitespace around a field value");
        assert_eq!(malformed(&with(&[("accept", "x"), (":extra", "y")])), "pseudo-header field after a regular field");
        assert_eq!(malformed(&with(&[("accept", "x"), (":path", "/y")])), "pseudo-header field after a regular field");
        assert_eq!(malformed(&with(&[(":method", "GET")])), "duplicate pseudo-header field");
        assert_eq!(malformed(&with(&[(":status", "200")])), "unknown or response pseudo-header field");
        assert_eq!(malformed(&with(&[(":protocol", "websocket")])), "unknown or response pseudo-header field");
        assert_eq!(malformed(&[(":method", "GET"), (":scheme", "https")]), "no :path");
        assert_eq!(malformed(&[(":method", "GET"), (":scheme", "https"), (":path", "")]), "empty :path");
        assert_eq!(malformed(&[(":method", "GET"), (":path", "/")]), "no :scheme");
        assert_eq!(malformed(&[(":scheme", "https"), (":path", "/")]), "no :method");
        assert_eq!(malformed(&[(":method", "G T"), (":scheme", "https"), (":path", "/")]), ":method not a token");
        assert_eq!(malformed(&[(":method", "GET"), (":scheme", "https"), (":path", "/a b")]), "space or control character in :path");
        assert_eq!(malformed(&[(":method", "GET"), (":scheme", "https"), (":path", "*")]), ":path neither absolute nor OPTIONS *");
        assert!(head(&[(":method", "OPTIONS"), (":scheme", "https"), (":path", "*")], true).is_ok());
        assert_eq!(malformed(&[(":method", "GET"), (":scheme", "https"), (":path", "/"), (":authority", "u@h")]), "bad :authority");
    }

    #[test]
    fn limits_and_connect() {
        assert_eq!(refused(&[(":method", "CONNECT"), (":authority", "h:443")], false), 405);
        let long = format!("/{}", "a".repeat(95));
        assert_eq!(refused(&[(":method", "GET"), (":scheme", "https"), (":path", &long)], true), 414);
        let big = "v".repeat(98);
        assert_eq!(refused(&with(&[("x", &big)]), true), 431);
        let many: Vec<(&str, &str)> = (0..10).map(|_| ("x", "y")).collect();
        assert!(head(&with(&many), true).is_ok(), "pseudo-header fields do not count");
        let many: Vec<(&str, &str)> = (0..11).map(|_| ("x", "y")).collect();
        assert_eq!(refused(&with(&many), true), 431);
    }

    #[test]
    fn trailers() {
        let mut f = Fields::new(&LIMITS, true);
        f.add(b"x-checksum", b"1");
        assert_eq!(f.problem(), None);
        f.add(b":path", b"/");
        assert_eq!(f.problem(), Some(&Problem::Malformed("pseudo-header field in trailers")));
    }
}
