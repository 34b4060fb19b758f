//! A backend's answer: its head parsed with httparse (interim 1xx answers
//! returned one at a time, for the caller to pass on or drop as RFC 9110
//! 15.2 says), its hop-by-hop fields dropped, ProxyPassReverse applied to
//! Location, Content-Location and URI and its cookie forms to Set-Cookie,
//! and its body framed as RFC 9112 6.3 says (no body for HEAD, 1xx, 204 and
//! 304; chunked; Content-Length; else up to the end of the connection),
//! decoded as it comes.

use std::io::{self, Read};

use warren_config::proxy_http::ProxyHttp;
use warren_http::{BodyDecoder, BodyFraming};

use super::request::{connection_options, hop_by_hop, names};
use crate::HeaderName;

/// A response head larger than this is refused with 502.
pub const MAX_HEAD: usize = 64 * 1024;
const MAX_FIELDS: usize = 200;

/// How the body after the head is delimited.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Framing {
    /// No body at all (HEAD, 204, 304).
    Empty,
    Length(u64),
    Chunked,
    /// Up to the end of the connection (which is then not kept).
    UntilClose,
}

/// A final answer's head.
#[derive(Debug)]
pub struct Head {
    pub status: u16,
    pub fields: Vec<(HeaderName, String)>,
    pub framing: Framing,
    /// The backend may take another request on this connection.
    pub keep_alive: bool,
}

/// An interim (1xx) answer but 101: 100 Continue, 102 Processing, 103
/// Early Hints or one not yet named.
#[derive(Debug, Clone)]
pub struct Interim {
    pub status: u16,
    /// Its fields, the hop-by-hop ones dropped.
    pub fields: Vec<(HeaderName, String)>,
}

/// More interim answers than this before the final one make a 502, as in
/// Apache (AP_MAX_INTERIM_RESPONSES): a backend cannot keep the exchange
/// going with them forever.
pub const MAX_INTERIM: usize = 10;

impl Interim {
    /// As an HTTP/1.1 client gets it.
    pub fn to_h1(&self) -> Vec<u8> {
        let reason = match self.status {
            100 => "Continue",
            102 => "Processing",
            103 => "Early Hints",
            _ => "Informational",
        };
        let mut out = format!("HTTP/1.1 {} {reason}\r\n", self.status).into_bytes();
        for (n, v) in &self.fields {
            out.extend_from_slice(n.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out
    }
}

/// What the bytes read so far hold.
pub enum Parsed {
    Partial,
    /// An interim answer, and how many bytes it took: the final head comes
    /// after it.
    Interim(Interim, usize),
    /// The final head, and how many bytes it took.
    Final(Head, usize),
}

/// Parses the answer's next head from `buf`. A 101 is final when the
/// request asked to `upgrade`, a broken answer otherwise.
pub fn parse(buf: &[u8], head_request: bool, upgrade: bool) -> Result<Parsed, String> {
    // Left uninitialised: httparse writes each field it finds, and writing
    // 200 empty ones first cost more than parsing a short head.
    let mut fields = [const { std::mem::MaybeUninit::<httparse::Header>::uninit() }; MAX_FIELDS];
    let mut r = httparse::Response::new(&mut []);
    let n = match httparse::ParserConfig::default().parse_response_with_uninit_headers(&mut r, buf, &mut fields) {
        // A head that came whole in one read is bounded all the same.
        Ok(httparse::Status::Complete(n)) if n > MAX_HEAD => return Err(format!("response head larger than {MAX_HEAD} bytes")),
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => return Err(format!("response head larger than {MAX_HEAD} bytes")),
        Ok(httparse::Status::Partial) => return Ok(Parsed::Partial),
        Err(e) => return Err(format!("malformed response head: {e}")),
    };
    let status = r.code.unwrap_or(0);
    let version = r.version.unwrap_or(0);
    if status == 101 && upgrade {
        let values: Vec<String> = r.headers.iter().map(|h| String::from_utf8_lossy(h.value).trim().to_string()).collect();
        let list: Vec<(&str, &str)> = r.headers.iter().zip(&values).map(|(h, v)| (h.name, v.as_str())).collect();
        let upgraded = list.iter().filter(|(n, _)| n.eq_ignore_ascii_case("upgrade")).flat_map(|(_, v)| v.split(',')).any(|p| p.trim().eq_ignore_ascii_case("websocket"));
        if !upgraded {
            return Err("101 Switching Protocols without Upgrade: websocket".into());
        }
        let mut h = head_of(status, version, &list, true)?;
        h.keep_alive = false;
        return Ok(Parsed::Final(h, n));
    }
    if status == 101 {
        return Err("101 Switching Protocols to a request that asked for no upgrade".into());
    }
    if !(100..=599).contains(&status) {
        return Err(format!("bad status {status}"));
    }
    let mut list = Vec::with_capacity(r.headers.len());
    for h in r.headers.iter() {
        let value = std::str::from_utf8(h.value).map_err(|_| format!("field {} is not text", h.name))?;
        list.push((h.name, value.trim()));
    }
    if status < 200 {
        let options = connection_options(list.iter().filter(|(n, _)| n.eq_ignore_ascii_case("connection")).map(|(_, v)| *v));
        let fields = list.iter().filter(|(n, _)| !hop_by_hop(n) && !names(&options, n)).map(|&(n, v)| (owned_name(n), v.to_string())).collect();
        return Ok(Parsed::Interim(Interim { status, fields }, n));
    }
    head_of(status, version, &list, head_request).map(|h| Parsed::Final(h, n))
}

/// A field name for the client's response: the usual ones as the
/// backend spelled them need no allocation.
fn owned_name(n: &str) -> HeaderName {
    const USUAL: [&str; 10] = ["Content-Type", "Last-Modified", "ETag", "Accept-Ranges", "Cache-Control", "Expires", "Vary", "Content-Encoding", "Set-Cookie", "Location"];
    match USUAL.iter().find(|u| **u == n) {
        Some(u) => HeaderName::Borrowed(u),
        None => HeaderName::Owned(n.to_string()),
    }
}

fn head_of(status: u16, version: u8, list: &[(&str, &str)], head_request: bool) -> Result<Head, String> {
    fn all<'a>(list: &'a [(&'a str, &'a str)], name: &'static str) -> impl Iterator<Item = &'a str> + Clone {
        list.iter().filter(move |(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| *v)
    }
    let options = connection_options(all(list, "connection"));
    // `close` wins over `keep-alive`, whatever the version (RFC 9112 9.3).
    let mut keep_alive = !names(&options, "close") && (version != 0 || names(&options, "keep-alive"));
    let codings = all(list, "transfer-encoding").flat_map(|v| v.split(',')).map(str::trim).filter(|c| !c.is_empty());
    let mut lengths = all(list, "content-length").flat_map(|v| v.split(',')).map(str::trim);
    let framing = if head_request || status == 204 || status == 304 {
        Framing::Empty
    } else if let Some(last) = codings.clone().last() {
        // Both fields: Transfer-Encoding wins, and the connection is not
        // trusted with another request (RFC 9112 6.3).
        if lengths.next().is_some() {
            keep_alive = false;
        }
        if last.eq_ignore_ascii_case("chunked") && version == 1 {
            Framing::Chunked
        } else {
            keep_alive = false;
            Framing::UntilClose
        }
    } else if let Some(first) = lengths.next() {
        if lengths.clone().any(|l| l != first) {
            let all: Vec<&str> = std::iter::once(first).chain(lengths).collect();
            return Err(format!("conflicting Content-Length values: {}", all.join(", ")));
        }
        if first.is_empty() || !first.bytes().all(|b| b.is_ascii_digit()) || first.len() > 19 {
            return Err(format!("bad Content-Length: {first}"));
        }
        Framing::Length(first.parse().map_err(|_| format!("bad Content-Length: {first}"))?)
    } else {
        keep_alive = false;
        Framing::UntilClose
    };
    // A HEAD answer's Content-Length tells the client what GET would get.
    let keep_length = framing == Framing::Empty && status != 204;
    let fields = list
        .iter()
        .filter(|(n, _)| {
            !hop_by_hop(n) && !names(&options, n) && !n.eq_ignore_ascii_case("date") && !n.eq_ignore_ascii_case("server") && (keep_length || !n.eq_ignore_ascii_case("content-length"))
        })
        .map(|&(n, v)| (owned_name(n), v.to_string()))
        .collect();
    Ok(Head { status, fields, framing, keep_alive })
}

/// ProxyPassReverse: a URL field naming the backend, rewritten to name
/// this host (`public_base` is `scheme://host[:port]`). Where several
/// lines name the backend, the one for the path the request was under
/// (`request_path`) is taken, as a `<Location>`'s line is in Apache.
pub fn reverse_url(value: &str, rules: &ProxyHttp, public_base: &str, request_path: &[u8]) -> Option<String> {
    let rewrite = |(path, backend): &(String, String)| {
        let rest = value.strip_prefix(backend.as_str())?;
        let path = if path.ends_with('/') && rest.starts_with('/') { path.trim_end_matches('/') } else { path.as_str() };
        Some(format!("{public_base}{path}{rest}"))
    };
    let here = rules.reverse.iter().filter(|(path, _)| request_path.starts_with(path.as_bytes()));
    here.chain(rules.reverse.iter()).find_map(rewrite)
}

/// ProxyPassReverseCookieDomain and -Path on one Set-Cookie value.
pub fn reverse_cookie(value: &str, rules: &ProxyHttp) -> String {
    let mut parts: Vec<String> = value.split(';').map(str::to_string).collect();
    for part in parts.iter_mut().skip(1) {
        let Some((k, v)) = part.split_once('=') else { continue };
        let key = k.trim();
        let v = v.trim();
        if key.eq_ignore_ascii_case("domain") {
            if let Some((_, public)) = rules.cookie_domains.iter().find(|(from, _)| from.trim_start_matches('.').eq_ignore_ascii_case(v.trim_start_matches('.'))) {
                *part = format!(" {key}={public}");
            }
        } else if key.eq_ignore_ascii_case("path") {
            if let Some((from, public)) = rules.cookie_paths.iter().find(|(from, _)| v.starts_with(from.as_str())) {
                *part = format!(" {key}={public}{}", &v[from.len()..]);
            }
        }
    }
    parts.join(";")
}

/// Decodes the body after the head as it is read.
pub struct BodyReader {
    framing: Framing,
    decoder: Option<BodyDecoder>,
    /// Bytes read but not yet decoded.
    pending: Vec<u8>,
    done: bool,
}

impl BodyReader {
    pub fn new(framing: Framing, already: Vec<u8>) -> BodyReader {
        let decoder = match framing {
            Framing::Length(n) => Some(BodyDecoder::new(BodyFraming::Length(n))),
            Framing::Chunked => Some(BodyDecoder::new(BodyFraming::Chunked)),
            Framing::Empty | Framing::UntilClose => None,
        };
        BodyReader { framing, decoder, pending: already, done: framing == Framing::Empty }
    }

    pub fn done(&self) -> bool {
        self.done
    }

    /// Whether the body ended where the framing says, leaving nothing
    /// after it (then the connection can take another request).
    pub fn clean_end(&self) -> bool {
        self.done && self.pending.is_empty() && self.framing != Framing::UntilClose
    }

    /// Appends the next decoded bytes to `out` (reading from `from` when
    /// nothing is pending): Ok(false) at the end of the body.
    pub fn next(&mut self, from: &mut impl Read, out: &mut Vec<u8>, buf: &mut [u8]) -> Result<bool, String> {
        loop {
            if self.done {
                return Ok(false);
            }
            let start = out.len();
            self.decode(out)?;
            if self.done || out.len() > start {
                return Ok(out.len() > start);
            }
            let n = match from.read(buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_error(&e)),
            };
            if n == 0 {
                self.input_closed()?;
                return Ok(false);
            }
            self.feed(&buf[..n]);
        }
    }

    /// Takes bytes read from the backend, to be decoded by [`Self::decode`].
    pub fn feed(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
    }

    /// Appends what the bytes fed so far decode to onto `out`.
    pub fn decode(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        if self.done || self.pending.is_empty() {
            return Ok(());
        }
        match &mut self.decoder {
            None => out.append(&mut self.pending),
            Some(d) => {
                let used = d.feed(&self.pending, &mut |bytes| out.extend_from_slice(bytes)).map_err(|e| format!("bad body framing: {}", e.reason))?;
                self.pending.drain(..used);
                if d.is_done() {
                    self.done = true;
                }
            }
        }
        Ok(())
    }

    /// The backend closed the connection: the end of a body that runs
    /// until then, a body cut short otherwise.
    pub fn input_closed(&mut self) -> Result<(), String> {
        if self.framing == Framing::UntilClose || self.done {
            self.done = true;
            return Ok(());
        }
        Err("connection closed before the end of the body".into())
    }
}

/// Words for a read that failed, naming a timeout as one.
pub fn read_error(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => "timed out (ProxyTimeout)".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The final head after any interim ones, and where it ends.
    fn final_head(raw: &[u8], head_request: bool) -> Result<(Head, usize), String> {
        let mut at = 0;
        loop {
            match parse(&raw[at..], head_request, false)? {
                Parsed::Final(h, n) => return Ok((h, at + n)),
                Parsed::Interim(_, n) => at += n,
                Parsed::Partial => return Err("partial".into()),
            }
        }
    }

    #[test]
    fn interim_answers_come_one_at_a_time() {
        let raw = b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\nConnection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        let Ok(Parsed::Interim(i, n)) = parse(raw, false, false) else { panic!("a 103 first") };
        assert_eq!(i.status, 103);
        assert_eq!(i.to_h1(), b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n");
        assert!(matches!(parse(&raw[n..], false, false), Ok(Parsed::Final(h, _)) if h.status == 200));
        assert!(matches!(parse(b"HTTP/1.1 100 Continue\r\n\r\n", false, true), Ok(Parsed::Interim(Interim { status: 100, .. }, 25))));
        assert!(parse(b"HTTP/1.1 099 Odd\r\n\r\n", false, false).is_err());
        assert!(matches!(parse(b"HTTP/1.1 103 Early Hints\r\n", false, false), Ok(Parsed::Partial)));
    }

    #[test]
    fn switching_protocols_only_when_asked() {
        let raw = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n\x81\x02hi";
        let Ok(Parsed::Final(h, used)) = parse(raw, false, true) else { panic!("101 to an upgrade is final") };
        assert_eq!((h.status, h.framing, h.keep_alive, &raw[used..]), (101, Framing::Empty, false, &b"\x81\x02hi"[..]));
        assert!(h.fields.iter().any(|(n, v)| n.eq_ignore_ascii_case("sec-websocket-accept") && v == "x"));
        assert!(!h.fields.iter().any(|(n, _)| n.eq_ignore_ascii_case("connection")));
        assert!(parse(raw, false, false).is_err());
        assert!(parse(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n", false, true).is_err());
    }

    #[test]
    fn heads() {
        let (h, n) = final_head(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nServer: x\r\nX-Kept: yes\r\n\r\nhello", false).unwrap();
        assert_eq!(n, 25 + 106);
        assert_eq!((h.status, h.framing, h.keep_alive), (200, Framing::Length(5), true));
        assert_eq!(h.fields.len(), 1, "{:?}", h.fields);
        let (h, _) = final_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", false).unwrap();
        assert_eq!((h.framing, h.keep_alive), (Framing::Chunked, false));
        let (h, _) = final_head(b"HTTP/1.0 200 OK\r\n\r\n", false).unwrap();
        assert_eq!((h.framing, h.keep_alive), (Framing::UntilClose, false));
        for (raw, kept) in [
            (&b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n"[..], true),
            (b"HTTP/1.0 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 0\r\n\r\n", false),
            (b"HTTP/1.0 200 OK\r\nConnection: CLOSE\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", false),
            (b"HTTP/1.1 200 OK\r\nConnection: Close, keep-alive\r\nContent-Length: 0\r\n\r\n", false),
        ] {
            assert_eq!(final_head(raw, false).unwrap().0.keep_alive, kept, "{}", String::from_utf8_lossy(raw));
        }
        let (h, _) = final_head(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", true).unwrap();
        assert_eq!(h.framing, Framing::Empty);
        assert!(h.fields.iter().any(|(n, v)| n.eq_ignore_ascii_case("content-length") && v == "9"));
        assert!(final_head(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", false).is_err());
        assert!(final_head(b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", false).is_err());
        assert!(final_head(b"HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", false).is_err());
        assert!(final_head(b"HTTP/1.1 101 Switching\r\n\r\n", false).is_err());
        assert!(final_head(b"garbage\r\n\r\n", false).is_err());
        assert!(matches!(parse(b"HTTP/1.1 200 OK\r\n", false, false), Ok(Parsed::Partial)));
    }

    #[test]
    fn chunked_bodies_decode() {
        let mut r = BodyReader::new(Framing::Chunked, b"5\r\nhello\r\n0\r\n\r\n".to_vec());
        let (mut out, mut buf) = (Vec::new(), [0u8; 16]);
        let mut empty: &[u8] = b"";
        while r.next(&mut empty, &mut out, &mut buf).unwrap() {}
        assert_eq!(out, b"hello");
        assert!(r.clean_end());
        let mut short = BodyReader::new(Framing::Length(10), b"abc".to_vec());
        let mut out = Vec::new();
        assert!(short.next(&mut empty, &mut out, &mut buf).unwrap());
        assert!(short.next(&mut empty, &mut out, &mut buf).is_err());
    }

    #[test]
    fn reverse_rules() {
        let rules = ProxyHttp {
            reverse: vec![("/api/".into(), "http://127.0.0.1:3000/".into())],
            cookie_domains: vec![("backend.internal".into(), "site.example".into())],
            cookie_paths: vec![("/".into(), "/api/".into())],
            ..Default::default()
        };
        assert_eq!(reverse_url("http://127.0.0.1:3000/login?x", &rules, "http://site.example", b"/x").as_deref(), Some("http://site.example/api/login?x"));
        assert_eq!(reverse_url("http://elsewhere/", &rules, "http://site.example", b"/x"), None);
        let mut two = rules.clone();
        two.reverse.push(("/loc/".into(), "http://127.0.0.1:3000/".into()));
        assert_eq!(reverse_url("http://127.0.0.1:3000/a", &two, "http://h", b"/loc/x").as_deref(), Some("http://h/loc/a"));
        assert_eq!(reverse_url("http://127.0.0.1:3000/a", &two, "http://h", b"/api/x").as_deref(), Some("http://h/api/a"));
        assert_eq!(reverse_cookie("a=1; Domain=backend.internal; Path=/app", &rules), "a=1; Domain=site.example; Path=/api/app");
    }
}
