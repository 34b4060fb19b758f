//! Request heads: bytes -> [`RequestHead`] or an [`HttpError`] with the status
//! RFC 9112 prescribes. The request line is checked by hand (to tell 414 and
//! 505 from 400); header fields are tokenised by httparse.

use std::ops::Range;

use crate::error::HttpError;
use crate::head_scan::{HeadLimits, HeadScan};
use crate::version::Version;

/// How the request body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFraming {
    None,
    Length(u64),
    Chunked,
}

/// A parsed request head. It owns a copy of the head's bytes; the accessors
/// hand out slices of it.
#[derive(Clone, Debug)]
pub struct RequestHead {
    raw: Vec<u8>,
    method: Range<usize>,
    target: Range<usize>,
    pub version: Version,
    headers: Vec<(Range<usize>, Range<usize>)>,
    pub framing: BodyFraming,
    /// The client allows the connection to stay open after this request.
    pub keep_alive: bool,
    pub expect_continue: bool,
    /// The Host header's value (or the authority of an absolute-form target).
    host: Option<Range<usize>>,
    /// The origin-form part (`/path?query`) of the target: the target
    /// itself, or for an absolute-form one what follows its authority
    /// (made to start with `/` when it did not).
    path: Range<usize>,
    /// The head's length on the wire: `raw` grows past it when a field is
    /// rewritten (see [`RequestHead::set_header`]).
    wire_len: usize,
}

impl RequestHead {
    pub fn method(&self) -> &str {
        // Checked to be token characters (ASCII) while parsing.
        std::str::from_utf8(&self.raw[self.method.clone()]).unwrap_or("")
    }

    /// The request-target as sent.
    pub fn target(&self) -> &[u8] {
        &self.raw[self.target.clone()]
    }

    /// `/path?query` (for an absolute-form target, the part after the authority).
    pub fn path_and_query(&self) -> &[u8] {
        &self.raw[self.path.clone()]
    }

    /// The request line without its line ending, for `%r`.
    pub fn request_line(&self) -> &[u8] {
        // Search from the method: empty lines may precede the request line.
        let from = self.method.start;
        let end = self.raw[from..].iter().position(|&b| b == b'\n').map_or(self.raw.len(), |i| from + i);
        let line = &self.raw[from..end];
        line.strip_suffix(b"\r").unwrap_or(line)
    }

    /// Host without port, lower-cased by the caller if needed; None when absent.
    pub fn host(&self) -> Option<&[u8]> {
        self.host.clone().map(|r| &self.raw[r])
    }

    /// The first value of a header, by case-insensitive name.
    /// An RFC 8441 extended CONNECT for `websocket`, which the HTTP/2 codec
    /// gives as a GET with `upgrade: websocket`: no HTTP/2 client can send
    /// an upgrade field itself (it is connection-specific, RFC 9113
    /// §8.2.2), so the field tells the one from any other request.
    pub fn is_h2_websocket(&self) -> bool {
        self.version == Version::Http2 && self.header("upgrade").is_some_and(|v| v.eq_ignore_ascii_case(b"websocket"))
    }

    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| self.raw[n.clone()].eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| &self.raw[v.clone()])
    }

    pub fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.headers.iter().map(|(n, v)| (&self.raw[n.clone()], &self.raw[v.clone()]))
    }

    /// Length of the head on the wire.
    pub fn wire_len(&self) -> usize {
        self.wire_len
    }

    /// Replaces every field called `name` (any case) with one holding
    /// `value`, or removes them all for None: what a module that rewrites
    /// a request header (mod_remoteip) does before the request is answered.
    /// Only fields nothing was derived from may be rewritten: framing,
    /// Connection, Expect and Host keep what was parsed.
    pub fn set_header(&mut self, name: &str, value: Option<&[u8]>) {
        debug_assert!(!["content-length", "transfer-encoding", "connection", "expect", "host"].contains(&name.to_ascii_lowercase().as_str()));
        let raw = &self.raw;
        self.headers.retain(|(n, _)| !raw[n.clone()].eq_ignore_ascii_case(name.as_bytes()));
        if let Some(value) = value {
            // Appended after the head: the ranges already handed out stay valid.
            let n = self.raw.len();
            self.raw.extend_from_slice(name.as_bytes());
            let v = self.raw.len();
            self.raw.extend_from_slice(value);
            self.headers.push((n..v, v..self.raw.len()));
        }
    }

    pub fn has_body(&self) -> bool {
        self.framing != BodyFraming::None
    }

    /// The head of a request that came on an HTTP/2 stream, whose fields
    /// [`crate::h2`] has already checked (RFC 9113 §8.2-8.3): the request
    /// line reads `METHOD path HTTP/2.0` (what `%r` logs), `:authority`
    /// becomes a `host` field (first, replacing one the client sent, which
    /// [`crate::h2`] has checked names the same host, as mod_http2 does, so
    /// CGI's HTTP_HOST and `host()` see it) and the host.
    /// `fields` are the regular fields, names in lower case, cookies
    /// already joined; `wire_len` the size of the header block as received.
    pub fn from_h2<'a>(
        method: &[u8],
        path: &[u8],
        authority: Option<&[u8]>,
        fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
        framing: BodyFraming,
        wire_len: usize,
    ) -> RequestHead {
        let version = Version::Http2;
        // Room for a usual request's fields too: a head is made for every
        // stream, and growing it took four or five reallocations.
        let mut raw = Vec::with_capacity(256 + method.len() + path.len());
        raw.extend_from_slice(method);
        let method = 0..raw.len();
        raw.push(b' ');
        let start = raw.len();
        raw.extend_from_slice(path);
        let target = start..raw.len();
        raw.push(b' ');
        raw.extend_from_slice(version.as_str().as_bytes());
        raw.extend_from_slice(b"\r\n");
        let mut headers = Vec::with_capacity(8);
        let mut push = |raw: &mut Vec<u8>, name: &[u8], value: &[u8]| {
            let n = raw.len();
            raw.extend_from_slice(name);
            let n = n..raw.len();
            raw.extend_from_slice(b": ");
            let v = raw.len();
            raw.extend_from_slice(value);
            let v = v..raw.len();
            raw.extend_from_slice(b"\r\n");
            headers.push((n, v.clone()));
            v
        };
        let mut host = authority.map(|a| push(&mut raw, b"host", a));
        for (name, value) in fields {
            let is_host = name.eq_ignore_ascii_case(b"host");
            if is_host && authority.is_some() {
                continue;
            }
            let v = push(&mut raw, name, value);
            if is_host && host.is_none() {
                host = Some(v);
            }
        }
        RequestHead {
            raw,
            method,
            target: target.clone(),
            version,
            headers,
            framing,
            keep_alive: true,
            expect_continue: false,
            host,
            path: target,
            wire_len,
        }
    }
}

/// Parses a request head from the start of `buf`.
///
/// `Ok(None)`: more bytes are needed. `Ok(Some((head, n)))`: the head took
/// `n` bytes. `Err(e)`: answer `e.status` and close the connection.
pub fn parse_head(buf: &[u8], limits: &HeadLimits) -> Result<Option<(RequestHead, usize)>, HttpError> {
    parse_head_from(&mut HeadScan::default(), buf, limits)
}

/// [`parse_head`] for a head read in pieces: `scan` remembers how far `buf`
/// (the same buffer each time, grown at its end) has been checked, so each
/// byte is looked at once. A fresh scan for the next head.
pub fn parse_head_from(scan: &mut HeadScan, buf: &[u8], limits: &HeadLimits) -> Result<Option<(RequestHead, usize)>, HttpError> {
    let Some(shape) = scan.advance(buf, limits)? else { return Ok(None) };
    let line = shape.request_line;
    let (method, target, version) = (line.method, line.target, line.version);
    let (headers_start, head_end, count) = (line.fields_start, shape.head_end, shape.fields);

    let mut stack = [httparse::EMPTY_HEADER; 32];
    let mut heap;
    let slots: &mut [httparse::Header] = if count <= stack.len() {
        &mut stack[..]
    } else {
        heap = vec![httparse::EMPTY_HEADER; count];
        &mut heap[..]
    };
    let parsed = match httparse::parse_headers(&buf[headers_start..head_end], slots) {
        Ok(httparse::Status::Complete((_, h))) => h,
        Ok(httparse::Status::Partial) => return Err(HttpError::new(400, "malformed header section")),
        Err(httparse::Error::HeaderName) => {
            return Err(HttpError::new(400, "malformed header field name (whitespace before the colon?)"))
        }
        Err(e) => return Err(HttpError::new(400, format!("malformed header field: {e}"))),
    };
    let base = buf.as_ptr() as usize;
    let offset = |s: &[u8]| s.as_ptr() as usize - base;
    let mut headers = Vec::with_capacity(parsed.len());
    for h in parsed.iter() {
        let n = offset(h.name.as_bytes());
        // An empty value may point anywhere; anchor it after the name.
        let v = if h.value.is_empty() { n + h.name.len() } else { offset(h.value) };
        headers.push((n..n + h.name.len(), v..v + h.value.len()));
    }

    let mut head = RequestHead {
        raw: Vec::new(),
        method,
        target: target.clone(),
        version,
        headers,
        framing: BodyFraming::None,
        keep_alive: version == Version::Http11,
        expect_continue: false,
        host: None,
        path: target,
        wire_len: head_end,
    };
    analyse(&mut head, buf)?;
    head.raw = buf[..head_end].to_vec();
    take_authority(&mut head)?;
    Ok(Some((head, head_end)))
}

/// Checks the framing and connection headers (RFC 9112 6, 9.3; RFC 9110 7.2).
fn analyse(head: &mut RequestHead, buf: &[u8]) -> Result<(), HttpError> {
    let mut content_length: Option<u64> = None;
    let mut transfer_encoding: Option<Range<usize>> = None;
    let mut host_count = 0;
    for (name, value) in &head.headers {
        let n = &buf[name.clone()];
        let v = &buf[value.clone()];
        if n.eq_ignore_ascii_case(b"content-length") {
            for item in v.split(|&b| b == b',') {
                let item = item.trim_ascii();
                if item.is_empty() || item.len() > 19 || !item.iter().all(u8::is_ascii_digit) {
                    return Err(HttpError::new(400, "invalid Content-Length"));
                }
                let len: u64 = std::str::from_utf8(item).ok().and_then(|s| s.parse().ok()).ok_or_else(|| HttpError::new(400, "invalid Content-Length"))?;
                if content_length.is_some_and(|c| c != len) {
                    return Err(HttpError::new(400, "conflicting Content-Length values"));
                }
                content_length = Some(len);
            }
        } else if n.eq_ignore_ascii_case(b"transfer-encoding") {
            if transfer_encoding.is_some() {
                return Err(HttpError::new(501, "several Transfer-Encoding fields"));
            }
            transfer_encoding = Some(value.clone());
        } else if n.eq_ignore_ascii_case(b"host") {
            host_count += 1;
            if host_count > 1 {
                return Err(HttpError::new(400, "more than one Host header field"));
            }
            if !valid_host(v) {
                return Err(HttpError::new(400, format!("invalid Host header field: {}", String::from_utf8_lossy(v))));
            }
            head.host = Some(value.clone());
        } else if n.eq_ignore_ascii_case(b"connection") {
            for token in v.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                if token.eq_ignore_ascii_case(b"close") {
                    head.keep_alive = false;
                } else if token.eq_ignore_ascii_case(b"keep-alive") && head.version == Version::Http10 {
                    head.keep_alive = true;
                }
            }
        } else if n.eq_ignore_ascii_case(b"expect") {
            if v.eq_ignore_ascii_case(b"100-continue") {
                head.expect_continue = head.version == Version::Http11;
            } else {
                return Err(HttpError::new(417, format!("unsupported expectation: {}", String::from_utf8_lossy(v))));
            }
        }
    }
    if let Some(te) = transfer_encoding {
        if head.version == Version::Http10 {
            return Err(HttpError::new(400, "Transfer-Encoding in an HTTP/1.0 request"));
        }
        if content_length.is_some() {
            return Err(HttpError::new(400, "both Content-Length and Transfer-Encoding"));
        }
        if !buf[te].trim_ascii().eq_ignore_ascii_case(b"chunked") {
            return Err(HttpError::new(501, "Transfer-Encoding other than chunked"));
        }
        head.framing = BodyFraming::Chunked;
    } else if let Some(len) = content_length {
        head.framing = if len > 0 { BodyFraming::Length(len) } else { BodyFraming::None };
    }
    if head.version == Version::Http11 && host_count == 0 {
        return Err(HttpError::new(400, "HTTP/1.1 request without a Host header field"));
    }
    Ok(())
}

/// An absolute-form target's authority is the request's host (RFC 9112
/// §3.2.2), for everything that reads one: the Host field is replaced by
/// it (added if there was none, as Apache does), so that vhost choice,
/// HTTP_HOST, `%{Host}i` and URLs built from the host all see the same
/// name; the path is what follows the authority.
fn take_authority(head: &mut RequestHead) -> Result<(), HttpError> {
    let t = head.target.clone();
    let target = &head.raw[t.clone()];
    let scheme_len = if target.len() > 7 && target[..7].eq_ignore_ascii_case(b"http://") {
        7
    } else if target.len() > 8 && target[..8].eq_ignore_ascii_case(b"https://") {
        8
    } else {
        return Ok(());
    };
    let rest = &target[scheme_len..];
    let auth_len = rest.iter().position(|&b| b == b'/' || b == b'?' || b == b'#').unwrap_or(rest.len());
    let authority = &rest[..auth_len];
    // RFC 9110 §4.2.1: an http URI with an empty host is invalid; §4.2.4:
    // userinfo in a received target is an error (valid_host admits no '@').
    let host_name = strip_port(authority);
    if host_name.is_empty() || !valid_host(authority) {
        return Err(HttpError::new(400, format!("bad authority in absolute-form request-target: {}", String::from_utf8_lossy(authority))));
    }
    let a = t.start + scheme_len;
    let authority = a..a + auth_len;
    head.host = Some(authority.clone());
    match head.headers.iter_mut().find(|(n, _)| head.raw[n.clone()].eq_ignore_ascii_case(b"host")) {
        Some((_, v)) => *v = authority.clone(),
        None => {
            // Appended after the head, as set_header does.
            let n = head.raw.len();
            head.raw.extend_from_slice(b"Host");
            head.headers.push((n..head.raw.len(), authority.clone()));
        }
    }
    head.path = authority.end..t.end;
    if head.raw.get(head.path.start) != Some(&b'/') {
        // `http://h` or `http://h?q`: an empty path is `/` (RFC 9110 §4.2.3).
        let p = head.raw.len();
        head.raw.push(b'/');
        head.raw.extend_from_within(head.path.clone());
        head.path = p..head.raw.len();
    }
    Ok(())
}

/// `host` without its `:port`, if it has one.
fn strip_port(host: &[u8]) -> &[u8] {
    if host.first() == Some(&b'[') {
        return host;
    }
    match host.iter().rposition(|&b| b == b':') {
        Some(i) => &host[..i],
        None => host,
    }
}

/// `uri-host [ ":" port ]` (RFC 3986 3.2.2), or empty.
pub fn valid_host(v: &[u8]) -> bool {
    let (host, port) = if v.first() == Some(&b'[') {
        let Some(close) = v.iter().position(|&b| b == b']') else { return false };
        let inner = &v[1..close];
        if inner.is_empty() || !inner.iter().all(|b| b.is_ascii_hexdigit() || b":.".contains(b)) {
            return false;
        }
        (&v[..=close], &v[close + 1..])
    } else {
        match v.iter().rposition(|&b| b == b':') {
            Some(i) => (&v[..i], &v[i..]),
            None => (v, &v[v.len()..]),
        }
    };
    let port_ok = port.is_empty() || (port[0] == b':' && port[1..].len() <= 5 && port[1..].iter().all(u8::is_ascii_digit));
    let host_ok = host.first() == Some(&b'[')
        || host.iter().all(|&b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=%".contains(&b));
    port_ok && host_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: HeadLimits = HeadLimits { request_line: 100, field_size: 100, fields: 10, head: 1000 };

    #[test]
    fn a_rewritten_field_replaces_every_one_of_its_name() {
        let raw = b"GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 1.1.1.1\r\nAccept: */*\r\nx-forwarded-for: 2.2.2.2\r\n\r\n";
        let (mut h, n) = parse_head(raw, &LIMITS).unwrap().unwrap();
        h.set_header("X-Forwarded-For", Some(b"1.1.1.1"));
        assert_eq!(h.headers().filter(|(n, _)| n.eq_ignore_ascii_case(b"x-forwarded-for")).count(), 1);
        assert_eq!(h.header("x-forwarded-for"), Some(&b"1.1.1.1"[..]));
        assert_eq!(h.header("accept"), Some(&b"*/*"[..]));
        assert_eq!(h.host(), Some(&b"a"[..]));
        assert_eq!(h.request_line(), b"GET / HTTP/1.1");
        assert_eq!(h.wire_len(), n);
        h.set_header("X-Forwarded-For", None);
        assert_eq!(h.header("x-forwarded-for"), None);
        assert_eq!(h.headers().count(), 2);
    }

    fn status(raw: &str) -> u16 {
        match parse_head(raw.as_bytes(), &LIMITS) {
            Ok(Some(_)) => 200,
            Ok(None) => 0,
            Err(e) => e.status,
        }
    }

    #[test]
    fn simple_get() {
        let raw = b"GET /a?b=c HTTP/1.1\r\nHost: example.com:8080\r\nX-Empty:\r\nUser-Agent: t\r\n\r\nNEXT";
        let (h, n) = parse_head(raw, &LIMITS).unwrap().unwrap();
        assert_eq!(n, raw.len() - 4);
        assert_eq!(h.method(), "GET");
        assert_eq!(h.target(), b"/a?b=c");
        assert_eq!(h.host(), Some(&b"example.com:8080"[..]));
        assert_eq!(h.header("user-agent"), Some(&b"t"[..]));
        assert_eq!(h.header("x-empty"), Some(&b""[..]));
        assert!(h.keep_alive);
        assert_eq!(h.request_line(), b"GET /a?b=c HTTP/1.1");
    }

    #[test]
    fn request_line_after_leading_empty_lines() {
        let (h, _) = parse_head(b"\r\n\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n", &LIMITS).unwrap().unwrap();
        assert_eq!(h.request_line(), b"GET /x HTTP/1.1");
    }

    #[test]
    fn incomplete_then_complete() {
        assert_eq!(status("GET / HTTP/1.1\r\nHost: a\r\n"), 0);
        assert_eq!(status("GET / HTT"), 0);
        assert_eq!(status("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"), 200);
    }

    #[test]
    fn rfc9112_table() {
        let long = format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "a".repeat(200));
        let long_field = format!("GET / HTTP/1.1\r\nHost: a\r\nX: {}\r\n\r\n", "a".repeat(200));
        let many = format!("GET / HTTP/1.1\r\nHost: a\r\n{}\r\n", "X: y\r\n".repeat(11));
        let cases: &[(&str, u16)] = &[
            (&long, 414),
            (&long_field, 431),
            (&many, 431),
            ("GET / HTTP/1.1\r\n\r\n", 400),
            ("GET / HTTP/1.0\r\n\r\n", 200),
            ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a:port\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", 200),
            ("GET / HTTP/1.1\r\nHost: a\r\nX : y\r\n\r\n", 400),
            ("GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n z\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n", 200),
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
            ("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
            ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
            ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505),
            ("GET / HTTP/3.1\r\nHost: a\r\n\r\n", 505),
            ("GET / HTTP/1.2\r\nHost: a\r\n\r\n", 200),
            ("GET / http/1.1\r\nHost: a\r\n\r\n", 400),
            ("GET /\r\n\r\n", 400),
            ("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            ("G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            ("GET x HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            ("GET http://h:81/p HTTP/1.1\r\nHost: other\r\n\r\n", 200),
            ("GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n", 200),
            ("GET / HTTP/1.1\r\nHost: a\r\nExpect: teapot\r\n\r\n", 417),
            ("GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n", 400),
        ];
        for (raw, want) in cases {
            assert_eq!(status(raw), *want, "{raw:?}");
        }
    }

    #[test]
    fn framing_and_keep_alive() {
        let (h, _) = parse_head(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n", &LIMITS).unwrap().unwrap();
        assert_eq!(h.framing, BodyFraming::Chunked);
        assert!(!h.keep_alive);
        let (h, _) = parse_head(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\nContent-Length: 3\r\n\r\n", &LIMITS).unwrap().unwrap();
        assert!(h.keep_alive);
        assert_eq!(h.framing, BodyFraming::Length(3));
        let (h, _) = parse_head(b"GET / HTTP/1.0\r\n\r\n", &LIMITS).unwrap().unwrap();
        assert!(!h.keep_alive);
    }

    #[test]
    fn an_h2_head_reads_like_an_http1_one() {
        let fields: [(&[u8], &[u8]); 3] = [(b"host", b"ignored"), (b"accept", b"*/*"), (b"cookie", b"a=1; b=2")];
        let h = RequestHead::from_h2(b"GET", b"/p?q", Some(b"example.com:8443"), fields, BodyFraming::None, 42);
        assert_eq!(h.request_line(), b"GET /p?q HTTP/2.0");
        assert_eq!(h.method(), "GET");
        assert_eq!(h.target(), b"/p?q");
        assert_eq!(h.path_and_query(), b"/p?q");
        assert_eq!(h.host(), Some(&b"example.com:8443"[..]));
        assert_eq!(h.header("Host"), Some(&b"example.com:8443"[..]));
        assert_eq!(h.headers().count(), 3);
        assert_eq!(h.header("cookie"), Some(&b"a=1; b=2"[..]));
        assert_eq!(h.version, Version::Http2);
        assert!(h.keep_alive && !h.expect_continue);
        assert_eq!(h.wire_len(), 42);

        let fields: [(&[u8], &[u8]); 1] = [(b"host", b"h")];
        let h = RequestHead::from_h2(b"POST", b"/", None, fields, BodyFraming::Length(3), 9);
        assert_eq!(h.host(), Some(&b"h"[..]));
        assert_eq!(h.framing, BodyFraming::Length(3));
        let h = RequestHead::from_h2(b"OPTIONS", b"*", None, [], BodyFraming::Chunked, 9);
        assert_eq!(h.host(), None);
        assert_eq!(h.request_line(), b"OPTIONS * HTTP/2.0");
    }

    #[test]
    fn absolute_form_sets_host_and_path() {
        let (h, n) = parse_head(b"GET http://Example.com:81/p?q HTTP/1.1\r\nHost: other\r\nAccept: x\r\n\r\n", &LIMITS).unwrap().unwrap();
        assert_eq!(h.host(), Some(&b"Example.com:81"[..]));
        assert_eq!(h.path_and_query(), b"/p?q");
        // Everyone reading the Host field sees the target's authority.
        assert_eq!(h.header("host"), Some(&b"Example.com:81"[..]));
        assert_eq!(h.headers().filter(|(n, _)| n.eq_ignore_ascii_case(b"host")).count(), 1);
        assert_eq!(h.request_line(), b"GET http://Example.com:81/p?q HTTP/1.1");
        assert_eq!(h.wire_len(), n);

        // An HTTP/1.0 request without Host gets one.
        let (h, _) = parse_head(b"GET HTTPS://b.test/ HTTP/1.0\r\n\r\n", &LIMITS).unwrap().unwrap();
        assert_eq!(h.header("Host"), Some(&b"b.test"[..]));
        assert_eq!(h.path_and_query(), b"/");

        // An empty path is "/".
        let (h, _) = parse_head(b"GET http://b.test HTTP/1.1\r\nHost: a\r\n\r\n", &LIMITS).unwrap().unwrap();
        assert_eq!((h.host(), h.path_and_query()), (Some(&b"b.test"[..]), &b"/"[..]));
        let (h, _) = parse_head(b"GET http://b.test?x=1 HTTP/1.1\r\nHost: a\r\n\r\n", &LIMITS).unwrap().unwrap();
        assert_eq!((h.host(), h.path_and_query()), (Some(&b"b.test"[..]), &b"/?x=1"[..]));
    }

    #[test]
    fn absolute_form_bad_authorities() {
        for target in ["http://a@b.test/", "http://@b.test/", "http:///x", "http://:80/x", "http://b.test:x/", "http://b test/", "https://a:b@b.test/"] {
            let raw = format!("GET {target} HTTP/1.1\r\nHost: b.test\r\n\r\n");
            assert_eq!(status(&raw), 400, "{target}");
        }
        assert_eq!(status("GET http://[::1]:8080/ HTTP/1.1\r\nHost: b\r\n\r\n"), 200);
    }
}
