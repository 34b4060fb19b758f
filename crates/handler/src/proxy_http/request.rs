//! The request as a backend gets it: the client's header fields but the
//! hop-by-hop ones (RFC 9110 7.6.1: Connection and the fields it names,
//! Keep-Alive, TE, Transfer-Encoding, Upgrade, Trailer, Proxy-*), Host
//! as ProxyPreserveHost says, X-Forwarded-For/-Host/-Server added
//! (ProxyAddHeaders), Via (ProxyVia), and a framing of warren's own: the
//! body's length when it is known, else chunked. The client's Expect is
//! not copied: `Expect: 100-continue` is sent when the client waits for
//! 100 Continue and its body is still unread (end to end, as Apache's
//! Proxy100Continue On: the backend's 100 is what lets the client send).

use std::borrow::Cow;
use std::io::{self, Write};

use warren_config::proxy_http::Via;
use warren_http::{BodyFraming, RequestHead};

/// Whether a field is hop-by-hop whatever Connection says.
pub fn hop_by_hop(name: &str) -> bool {
    // Compared in place: this runs for every field of every proxied message.
    ["connection", "keep-alive", "te", "transfer-encoding", "upgrade", "trailer"].iter().any(|h| name.eq_ignore_ascii_case(h))
        || name.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("proxy-"))
}

/// The field names (or options) a message's Connection fields list, as
/// written: compare them with [`names`].
pub fn connection_options<'a>(values: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    values.flat_map(|v| v.split(',')).map(str::trim).filter(|t| !t.is_empty()).collect()
}

/// Whether Connection's `options` name `name` (case-insensitively).
pub fn names(options: &[&str], name: &str) -> bool {
    options.iter().any(|o| o.eq_ignore_ascii_case(name))
}

/// What the request head needs besides the client's fields.
pub struct Forwarding<'a> {
    /// The URL path and query the backend is asked for (the path encoded,
    /// the query as the client sent it).
    pub target: &'a [u8],
    /// The Host field: the backend URL's authority or the client's.
    pub host: &'a str,
    /// X-Forwarded-*: the client's address, its Host, this server's name.
    pub forwarded: Option<(String, &'a str, &'a str)>,
    pub via: Via,
    /// Via's received-by: this server's name and port (empty unless
    /// ProxyVia adds an entry).
    pub via_by: String,
    /// Content-Length to send (None with a body: chunked).
    pub framing: BodyFraming,
    /// Ask the backend to close the connection after answering.
    pub close: bool,
    /// `Expect: 100-continue`: the body follows the backend's 100.
    pub expect_continue: bool,
    /// A WebSocket upgrade passed on: `Connection: Upgrade` and
    /// `Upgrade: websocket`, the hop-by-hop fields the handshake needs.
    pub websocket: bool,
}

/// The backend request's head. Values are bytes: a client's field holding
/// obs-text (RFC 9110 5.5) reaches the backend as sent, as Apache passes it.
pub fn head<N: AsRef<str>, V: AsRef<[u8]>>(method: &str, fields: &[(N, V)], f: &Forwarding) -> Vec<u8> {
    let connection: Vec<Cow<str>> = fields.iter().filter(|(n, _)| n.as_ref().eq_ignore_ascii_case("connection")).map(|(_, v)| String::from_utf8_lossy(v.as_ref())).collect();
    let named = connection_options(connection.iter().map(|v| v.as_ref()));
    let passed = |n: &str| {
        !hop_by_hop(n)
            && !names(&named, n)
            && !["host", "content-length", "expect"].iter().any(|o| n.eq_ignore_ascii_case(o))
            && (f.via != Via::Block || !n.eq_ignore_ascii_case("via"))
    };
    // Room for the whole head at once, with some for the fields added
    // here: a buffer of 1 KB or more is a large allocation to glibc, which
    // first merges every small chunk freed since the last one, so it is
    // asked for only when the head needs it.
    let room = method.len() + f.target.len() + f.host.len() + fields.iter().map(|(n, v)| n.as_ref().len() + v.as_ref().len() + 4).sum::<usize>();
    let mut out = Vec::with_capacity(room + 320);
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    target_bytes(&mut out, f.target);
    let _ = write!(out, " HTTP/1.1\r\nHost: {}\r\n", f.host);
    let mut forwarded_for: Option<Vec<u8>> = None;
    let mut via: Option<Vec<u8>> = None;
    for (n, v) in fields.iter().map(|(n, v)| (n.as_ref(), v.as_ref())).filter(|(n, _)| passed(n)) {
        // Joined with ours below, as one field.
        if f.forwarded.is_some() && n.eq_ignore_ascii_case("x-forwarded-for") {
            join(&mut forwarded_for, v);
            continue;
        }
        if matches!(f.via, Via::On | Via::Full) && n.eq_ignore_ascii_case("via") {
            join(&mut via, v);
            continue;
        }
        field(&mut out, n, v);
    }
    if let Some((client, client_host, server)) = &f.forwarded {
        join(&mut forwarded_for, client.as_bytes());
        field(&mut out, "X-Forwarded-For", &forwarded_for.unwrap_or_default());
        if !client_host.is_empty() {
            field(&mut out, "X-Forwarded-Host", client_host.as_bytes());
        }
        field(&mut out, "X-Forwarded-Server", server.as_bytes());
    }
    if let Some(ours) = via_value(f.via, &f.via_by, "1.1") {
        join(&mut via, ours.as_bytes());
        field(&mut out, "Via", &via.unwrap_or_default());
    }
    match f.framing {
        BodyFraming::None => {}
        BodyFraming::Length(n) => warren_http::response::write_content_length(&mut out, n),
        BodyFraming::Chunked => field(&mut out, "Transfer-Encoding", b"chunked"),
    }
    if f.expect_continue && f.framing != BodyFraming::None {
        field(&mut out, "Expect", b"100-continue");
    }
    if f.websocket {
        field(&mut out, "Connection", b"Upgrade");
        field(&mut out, "Upgrade", b"websocket");
    } else if f.close {
        field(&mut out, "Connection", b"close");
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// RFC 8441: the client of an HTTP/2 tunnel sends no Sec-WebSocket-Key;
/// the backend's handshake gets a fresh one, added to `head` (a request
/// head ending in its blank line). Returns the Sec-WebSocket-Accept the
/// backend's 101 must carry (RFC 6455 4.2.2).
pub fn add_websocket_key(head: &mut Vec<u8>) -> String {
    use base64::Engine;
    use sha1::Digest;
    let key = base64::engine::general_purpose::STANDARD.encode(unpredictable_16());
    head.truncate(head.len().saturating_sub(2));
    field(head, "Sec-WebSocket-Key", key.as_bytes());
    head.extend_from_slice(b"\r\n");
    let mut sha = sha1::Sha1::new();
    sha.update(key.as_bytes());
    sha.update(b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
    base64::engine::general_purpose::STANDARD.encode(sha.finalize())
}

/// 16 bytes no remote party can guess (a nonce, a handshake key).
pub(crate) fn unpredictable_16() -> [u8; 16] {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)).is_err() {
        // No /dev/urandom: the time and pid, which a remote client cannot see.
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        bytes = (t ^ (u128::from(std::process::id()) << 64)).to_le_bytes();
    }
    bytes
}

/// This hop's Via entry, when ProxyVia adds one.
pub fn via_value(via: Via, by: &str, version: &str) -> Option<String> {
    match via {
        Via::On => Some(format!("{version} {by}")),
        Via::Full => Some(format!("{version} {by} (warren/{})", env!("CARGO_PKG_VERSION"))),
        Via::Off | Via::Block => None,
    }
}

fn field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    // A value is never allowed to end the line early (the client's were
    // checked by the parser; rewritten ones are checked here).
    out.extend(value.iter().filter(|&&b| b != b'\r' && b != b'\n' && b != 0));
    out.extend_from_slice(b"\r\n");
}

/// Writes the request line's target. A query is passed as made, and one
/// a rule made may hold what no client could send (a back-reference's
/// decoded `%0d%0a`): a control byte or a space would end the request
/// line or the target early (request splitting), so it goes encoded, as
/// Apache's ap_proxy_canonenc encodes it.
fn target_bytes(out: &mut Vec<u8>, target: &[u8]) {
    let unsafe_byte = |b: u8| b <= b' ' || b == 0x7f;
    if !target.iter().any(|&b| unsafe_byte(b)) {
        out.extend_from_slice(target);
        return;
    }
    for &b in target {
        if unsafe_byte(b) {
            let _ = write!(out, "%{b:02X}");
        } else {
            out.push(b);
        }
    }
}

/// Appends `value` to a list field's value being joined (`a, b`).
fn join(list: &mut Option<Vec<u8>>, value: &[u8]) {
    match list {
        Some(l) => {
            l.extend_from_slice(b", ");
            l.extend_from_slice(value);
        }
        None => *list = Some(value.to_vec()),
    }
}

/// The client's fields as they came, borrowed: names are tokens (checked
/// by the parser), values bytes, obs-text and all.
pub fn client_fields(head: &RequestHead) -> Vec<(Cow<'_, str>, &[u8])> {
    head.headers().map(|(n, v)| (String::from_utf8_lossy(n), v)).collect()
}

/// Writes body bytes framed as announced.
pub struct BodyWriter {
    pub chunked: bool,
}

impl BodyWriter {
    pub fn write(&self, to: &mut impl Write, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        if self.chunked {
            write!(to, "{:x}\r\n", data.len())?;
            to.write_all(data)?;
            to.write_all(b"\r\n")
        } else {
            to.write_all(data)
        }
    }

    pub fn finish(&self, to: &mut impl Write) -> io::Result<()> {
        if self.chunked {
            to.write_all(b"0\r\n\r\n")?;
        }
        Ok(())
    }
}

/// A decoded URL path (or a part of one) as it goes in a request line:
/// every byte but the unreserved ones, sub-delims, `:`, `@` and `/`
/// percent-encoded, so that what the client encoded (a space, CR LF, `%`,
/// `?`, `#`) stays data on the backend, as Apache's canonicalisation does.
pub fn encode_path(decoded: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(decoded.len() + 16);
    for &b in decoded {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b) {
            out.push(b as char);
        } else {
            out.extend(['%', HEX[usize::from(b >> 4)] as char, HEX[usize::from(b & 15)] as char]);
        }
    }
    out
}

/// Whether the client asks to switch to WebSocket (RFC 6455 4.1): a GET
/// with `Upgrade: websocket` that its Connection field names.
pub fn asks_websocket(head: &RequestHead) -> bool {
    let connection = connection_options(head.headers().filter(|(n, _)| n.eq_ignore_ascii_case(b"connection")).filter_map(|(_, v)| std::str::from_utf8(v).ok()));
    let upgrade = head.headers().filter(|(n, _)| n.eq_ignore_ascii_case(b"upgrade")).filter_map(|(_, v)| std::str::from_utf8(v).ok()).flat_map(|v| v.split(',')).any(|p| p.trim().eq_ignore_ascii_case("websocket"));
    // HTTP/2 has no Upgrade: its codec makes an RFC 8441 extended CONNECT
    // this GET (see RequestHead::is_h2_websocket).
    (head.version == warren_http::Version::Http11 || head.is_h2_websocket()) && head.method() == "GET" && upgrade && names(&connection, "upgrade")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HeaderName;

    fn fields(list: &[(&str, &str)]) -> Vec<(HeaderName, String)> {
        list.iter().map(|(n, v)| (HeaderName::Owned(n.to_string()), v.to_string())).collect()
    }

    fn forwarding(framing: BodyFraming) -> Forwarding<'static> {
        Forwarding { target: b"/app/x?y=1", host: "backend:3000", forwarded: Some(("192.0.2.1".into(), "site.example", "www")), via: Via::Off, via_by: "www:80".into(), framing, close: false, expect_continue: false, websocket: false }
    }

    #[test]
    fn a_fresh_websocket_key_and_its_accept() {
        let mut head = b"GET / HTTP/1.1\r\nHost: b\r\nUpgrade: websocket\r\n\r\n".to_vec();
        let accept = add_websocket_key(&mut head);
        let text = String::from_utf8(head).unwrap();
        let key = text.split("Sec-WebSocket-Key: ").nth(1).unwrap().split("\r\n").next().unwrap().to_string();
        assert!(text.ends_with(&format!("Upgrade: websocket\r\nSec-WebSocket-Key: {key}\r\n\r\n")), "{text}");
        assert_eq!(key.len(), 24, "16 bytes in base64: {key}");
        assert_eq!(accept.len(), 28);
        // RFC 6455 1.3's example, through the same computation.
        let mut sha = <sha1::Sha1 as sha1::Digest>::new();
        sha1::Digest::update(&mut sha, b"dGhlIHNhbXBsZSBub25jZQ==258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
        assert_eq!(base64::Engine::encode(&base64::engine::general_purpose::STANDARD, sha1::Digest::finalize(sha)), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        let mut again = b"GET / HTTP/1.1\r\n\r\n".to_vec();
        assert_ne!(add_websocket_key(&mut again), accept, "a fresh key each time");
    }

    #[test]
    fn websocket_upgrade_requests() {
        let limits = warren_http::HeadLimits { request_line: 1000, field_size: 1000, fields: 20, head: 8000 };
        let asks = |raw: &str| asks_websocket(&warren_http::parse_head(raw.as_bytes(), &limits).unwrap().unwrap().0);
        assert!(asks("GET /c HTTP/1.1\r\nHost: h\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n\r\n"));
        assert!(!asks("GET /c HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n"));
        assert!(!asks("GET /c HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n"));
        assert!(!asks("POST /c HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"));
        assert!(!asks("GET /c HTTP/1.0\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"));
        let f = fields(&[("Host", "h"), ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", "k")]);
        let text = String::from_utf8(head("GET", &f, &Forwarding { websocket: true, forwarded: None, ..forwarding(BodyFraming::None) })).unwrap();
        assert_eq!(text, "GET /app/x?y=1 HTTP/1.1\r\nHost: backend:3000\r\nSec-WebSocket-Key: k\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
    }

    #[test]
    fn a_target_cannot_end_the_request_line() {
        let fw = Forwarding { target: b"/b/y?q=\r\nX-Injected: yes\x00\t\x7f\xff%0d", forwarded: None, ..forwarding(BodyFraming::None) };
        let out = head::<&str, &[u8]>("GET", &[], &fw);
        assert!(out.starts_with(b"GET /b/y?q=%0D%0AX-Injected:%20yes%00%09%7F\xff%0d HTTP/1.1\r\nHost: backend:3000\r\n"), "{}", String::from_utf8_lossy(&out).escape_debug());
    }

    #[test]
    fn hop_by_hop_fields_go_and_ours_come() {
        let f = fields(&[("Host", "site.example"), ("Connection", "keep-alive, X-Secret, x-forwarded-for"), ("X-Secret", "1"), ("Keep-Alive", "300"), ("TE", "trailers"), ("Transfer-Encoding", "chunked"), ("Upgrade", "h2c"), ("Proxy-Authorization", "x"), ("X-Forwarded-For", "10.0.0.1"), ("Accept", "*/*"), ("Expect", "100-continue"), ("Content-Length", "5")]);
        let text = String::from_utf8(head("POST", &f, &forwarding(BodyFraming::Length(5)))).unwrap();
        assert_eq!(text, "POST /app/x?y=1 HTTP/1.1\r\nHost: backend:3000\r\nAccept: */*\r\nX-Forwarded-For: 192.0.2.1\r\nX-Forwarded-Host: site.example\r\nX-Forwarded-Server: www\r\nContent-Length: 5\r\n\r\n");
        // Ours, when the body waits for the backend's 100 Continue.
        let text = String::from_utf8(head("POST", &f, &Forwarding { expect_continue: true, ..forwarding(BodyFraming::Length(5)) })).unwrap();
        assert!(text.ends_with("Content-Length: 5\r\nExpect: 100-continue\r\n\r\n"), "{text}");
    }

    #[test]
    fn forwarded_for_is_appended_and_via_added() {
        let f = fields(&[("X-Forwarded-For", "10.0.0.1"), ("Via", "1.0 fred")]);
        let mut fw = forwarding(BodyFraming::Chunked);
        fw.via = Via::On;
        fw.close = true;
        let text = String::from_utf8(head("GET", &f, &fw)).unwrap();
        assert!(text.contains("X-Forwarded-For: 10.0.0.1, 192.0.2.1\r\n"), "{text}");
        assert!(text.contains("Via: 1.0 fred, 1.1 www:80\r\n"), "{text}");
        assert!(text.ends_with("Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"), "{text}");
        fw.via = Via::Block;
        assert!(!String::from_utf8(head("GET", &f, &fw)).unwrap().contains("Via"));
    }

    #[test]
    fn paths_are_encoded() {
        assert_eq!(encode_path(b"/a b/%2e\r\n?#"), "/a%20b/%252e%0D%0A%3F%23");
        assert_eq!(encode_path(b"/caf\xc3\xa9/x.php"), "/caf%C3%A9/x.php");
    }

    #[test]
    fn chunks() {
        let mut out = Vec::new();
        let w = BodyWriter { chunked: true };
        w.write(&mut out, b"hello").unwrap();
        w.write(&mut out, b"").unwrap();
        w.finish(&mut out).unwrap();
        assert_eq!(out, b"5\r\nhello\r\n0\r\n\r\n");
    }
}
