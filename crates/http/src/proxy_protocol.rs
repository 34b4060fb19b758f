//! HAProxy's PROXY protocol (versions 1 and 2), the header a proxy sends at
//! the start of a connection to say whose connection it relays. Without
//! I/O: [`parse`] is handed what has arrived so far and says whether it is
//! a whole header (what it says, and its length), needs more bytes, or is
//! not one. Every limit of the specification is checked, so what arrives
//! is never buffered beyond [`MAX_V1`] or [`MAX_V2`] bytes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The longest version 1 header, its CRLF included.
pub const MAX_V1: usize = 107;
/// The longest version 2 header: 16 bytes and a 16-bit length.
pub const MAX_V2: usize = 16 + u16::MAX as usize;

const V1_PREFIX: &[u8] = b"PROXY ";
const V2_SIGNATURE: &[u8; 12] = b"\r\n\r\n\0\r\nQUIT\n";

/// What a whole header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyHeader {
    /// The relayed connection's source: the client's address.
    Source(SocketAddr),
    /// The proxy speaks for itself (v2 LOCAL, a health check) or does not
    /// know the source (v1 UNKNOWN, v2 UNSPEC): the connection's own
    /// addresses stand.
    Local,
}

/// Why the bytes are not a PROXY header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProxyError(pub String);

impl std::fmt::Display for ProxyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn fail<T>(why: impl Into<String>) -> Result<T, ProxyError> {
    Err(ProxyError(why.into()))
}

/// Reads a PROXY header from the start of `buf`: Ok(Some((header, length)))
/// once it is whole (the bytes after it are the connection's own),
/// Ok(None) while more is needed, and an error as soon as the bytes cannot
/// begin one.
pub fn parse(buf: &[u8]) -> Result<Option<(ProxyHeader, usize)>, ProxyError> {
    let n = buf.len().min(V2_SIGNATURE.len());
    if buf[..n] == V2_SIGNATURE[..n] {
        return if n < V2_SIGNATURE.len() { Ok(None) } else { parse_v2(buf) };
    }
    let n = buf.len().min(V1_PREFIX.len());
    if buf[..n] == V1_PREFIX[..n] {
        return if n < V1_PREFIX.len() { Ok(None) } else { parse_v1(buf) };
    }
    fail("no PROXY protocol header at the start of the connection")
}

fn parse_v1(buf: &[u8]) -> Result<Option<(ProxyHeader, usize)>, ProxyError> {
    let window = &buf[..buf.len().min(MAX_V1)];
    let Some(lf) = window.iter().position(|&b| b == b'\n') else {
        return if buf.len() >= MAX_V1 { fail("PROXY v1 header longer than 107 bytes") } else { Ok(None) };
    };
    let Some(line) = window[..lf].strip_suffix(b"\r") else {
        return fail("PROXY v1 header not ended by CRLF");
    };
    let Ok(line) = std::str::from_utf8(line) else {
        return fail("PROXY v1 header is not text");
    };
    let fields: Vec<&str> = line.split(' ').collect();
    let header = match fields.as_slice() {
        ["PROXY", "UNKNOWN", ..] => ProxyHeader::Local,
        ["PROXY", family @ ("TCP4" | "TCP6"), src, dst, sport, dport] => {
            let v4 = *family == "TCP4";
            let addr = |s: &str| -> Result<IpAddr, ProxyError> {
                match (v4, s.parse::<Ipv4Addr>(), s.parse::<Ipv6Addr>()) {
                    (true, Ok(a), _) => Ok(IpAddr::V4(a)),
                    (false, _, Ok(a)) => Ok(IpAddr::V6(a)),
                    _ => fail(format!("PROXY v1: '{s}' is not a {family} address")),
                }
            };
            let port = |s: &str| -> Result<u16, ProxyError> {
                // Decimal, without a sign or leading zeros.
                let ok = !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
                match s.parse::<u16>() {
                    Ok(p) if ok => Ok(p),
                    _ => fail(format!("PROXY v1: '{s}' is not a port")),
                }
            };
            let source = SocketAddr::new(addr(src)?, port(sport)?);
            addr(dst)?;
            port(dport)?;
            ProxyHeader::Source(source)
        }
        _ => return fail("malformed PROXY v1 header"),
    };
    Ok(Some((header, lf + 1)))
}

fn parse_v2(buf: &[u8]) -> Result<Option<(ProxyHeader, usize)>, ProxyError> {
    if buf.len() < 16 {
        return Ok(None);
    }
    let (version, command) = (buf[12] >> 4, buf[12] & 0x0f);
    let (family, transport) = (buf[13] >> 4, buf[13] & 0x0f);
    let len = u16::from_be_bytes([buf[14], buf[15]]) as usize;
    if version != 2 {
        return fail(format!("PROXY v2: unknown version {version}"));
    }
    if command > 1 {
        return fail(format!("PROXY v2: unknown command {command}"));
    }
    // Before waiting for the addresses: a wrong header is told at once.
    let need = match family {
        0 => 0,
        1 => 12,
        2 => 36,
        3 if command == 0 => 0,
        3 => return fail("PROXY v2: UNIX sockets are not supported"),
        _ => return fail(format!("PROXY v2: unknown address family {family}")),
    };
    if command == 1 && family != 0 && transport != 1 {
        return fail("PROXY v2: the relayed connection is not TCP");
    }
    if len < need {
        return fail(format!("PROXY v2: {len} bytes cannot hold the addresses"));
    }
    let total = 16 + len;
    if buf.len() < total {
        return Ok(None);
    }
    let a = &buf[16..total];
    let header = match (command, family) {
        // LOCAL: the proxy's own connection; UNSPEC: the source is unknown.
        (0, _) | (_, 0) => ProxyHeader::Local,
        (_, 1) => {
            let ip = Ipv4Addr::new(a[0], a[1], a[2], a[3]);
            ProxyHeader::Source(SocketAddr::new(IpAddr::V4(ip), u16::from_be_bytes([a[8], a[9]])))
        }
        _ => {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&a[..16]);
            ProxyHeader::Source(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(octets)), u16::from_be_bytes([a[32], a[33]])))
        }
    };
    Ok(Some((header, total)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v2(command: u8, family: u8, addrs: &[u8]) -> Vec<u8> {
        let mut b = V2_SIGNATURE.to_vec();
        b.push(0x20 | command);
        b.push(family);
        b.extend_from_slice(&(addrs.len() as u16).to_be_bytes());
        b.extend_from_slice(addrs);
        b
    }

    fn source(s: &str) -> ProxyHeader {
        ProxyHeader::Source(s.parse().unwrap())
    }

    #[test]
    fn version_1() {
        let h = b"PROXY TCP4 203.0.113.7 192.0.2.1 56324 80\r\nGET / HTTP/1.1\r\n";
        assert_eq!(parse(h), Ok(Some((source("203.0.113.7:56324"), 43))));
        let h = b"PROXY TCP6 2001:db8::7 2001:db8::1 65535 443\r\n";
        assert_eq!(parse(h), Ok(Some((source("[2001:db8::7]:65535"), h.len()))));
        assert_eq!(parse(b"PROXY UNKNOWN\r\n"), Ok(Some((ProxyHeader::Local, 15))));
        assert_eq!(parse(b"PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n").map(|r| r.map(|(h, _)| h)), Ok(Some(ProxyHeader::Local)));
    }

    #[test]
    fn version_1_arriving_in_pieces() {
        let h = b"PROXY TCP4 203.0.113.7 192.0.2.1 56324 80\r\n";
        for cut in 0..h.len() {
            assert_eq!(parse(&h[..cut]), Ok(None), "{cut}");
        }
    }

    #[test]
    fn version_1_malformed() {
        let bad: &[&[u8]] = &[
            b"GET / HTTP/1.1\r\n",
            b"PROXY TCP4 203.0.113.7 192.0.2.1 56324\r\n",
            b"PROXY TCP4 2001:db8::7 192.0.2.1 1 2\r\n",
            b"PROXY TCP6 203.0.113.7 2001:db8::1 1 2\r\n",
            b"PROXY TCP4 203.0.113.7 192.0.2.1 65536 80\r\n",
            b"PROXY TCP4 203.0.113.7 192.0.2.1 080 80\r\n",
            b"PROXY TCP4 203.0.113.7 192.0.2.1 +80 80\r\n",
            b"PROXY TCP4  203.0.113.7 192.0.2.1 80 80\r\n",
            b"PROXY TCP4 203.0.113.7 192.0.2.1 80 80\n",
            b"PROXY TCP4 203.0.113.7 192.0.2.1 80 80 \r\n",
            b"PROXY UDP4 203.0.113.7 192.0.2.1 80 80\r\n",
            b"PROXY \xff\r\n",
            b"proxy TCP4 1.2.3.4 1.2.3.4 1 2\r\n",
        ];
        for b in bad {
            assert!(parse(b).is_err(), "{:?}", String::from_utf8_lossy(b));
        }
        // No end within 107 bytes: refused, not waited for.
        let mut long = b"PROXY UNKNOWN ".to_vec();
        long.resize(MAX_V1, b'1');
        assert!(parse(&long).is_err());
        assert_eq!(parse(&long[..MAX_V1 - 1]), Ok(None));
    }

    #[test]
    fn version_2() {
        let mut a = vec![203, 0, 113, 7, 192, 0, 2, 1];
        a.extend_from_slice(&56324u16.to_be_bytes());
        a.extend_from_slice(&80u16.to_be_bytes());
        let h = v2(1, 0x11, &a);
        assert_eq!(parse(&h), Ok(Some((source("203.0.113.7:56324"), 28))));
        // TLVs after the addresses are skipped, the next bytes left alone.
        let mut with_tlv = a.clone();
        with_tlv.extend_from_slice(&[0x04, 0, 1, 0]);
        let mut h = v2(1, 0x11, &with_tlv);
        h.extend_from_slice(b"GET");
        assert_eq!(parse(&h), Ok(Some((source("203.0.113.7:56324"), 32))));
        let mut a6 = "2001:db8::7".parse::<Ipv6Addr>().unwrap().octets().to_vec();
        a6.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        a6.extend_from_slice(&[0x01, 0xbb, 0x00, 0x50]);
        assert_eq!(parse(&v2(1, 0x21, &a6)), Ok(Some((source("[2001:db8::7]:443"), 52))));
        assert_eq!(parse(&v2(0, 0x00, &[])), Ok(Some((ProxyHeader::Local, 16))));
        // LOCAL ignores whatever addresses follow.
        assert_eq!(parse(&v2(0, 0x11, &a)), Ok(Some((ProxyHeader::Local, 28))));
        assert_eq!(parse(&v2(1, 0x00, &[])), Ok(Some((ProxyHeader::Local, 16))));
        for cut in 0..h.len() - 3 {
            assert_eq!(parse(&h[..cut]), Ok(None), "{cut}");
        }
    }

    #[test]
    fn version_2_malformed() {
        let a = [1u8; 12];
        let mut bad = vec![
            v2(1, 0x11, &a[..11]),
            v2(1, 0x21, &a),
            v2(1, 0x12, &a),
            v2(1, 0x31, &[0; 216]),
            v2(1, 0x41, &a),
            v2(2, 0x11, &a),
        ];
        let mut wrong_version = v2(1, 0x11, &a);
        wrong_version[12] = 0x11;
        bad.push(wrong_version);
        for b in &bad {
            assert!(parse(b).is_err(), "{b:?}");
            // Told before the addresses arrive.
            assert!(parse(&b[..16]).is_err(), "{b:?}");
        }
    }

    /// Whatever arrives, `parse` answers without panicking, and a length it
    /// gives is within the input and the limits.
    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        const ALPHABET: &[u8] = b"PROXY TCP46UNKNOWN0123456789.: \r\n\x21\x11\x00";
        let starts: [&[u8]; 4] = [b"", b"PROXY ", V2_SIGNATURE, b"PROXY TCP4 1.2.3.4 "];
        for i in 0..20_000 {
            let mut b = starts[i % starts.len()].to_vec();
            let len = (next() % 120) as usize;
            for _ in 0..len {
                let r = next();
                // Mostly bytes a header is made of, so that parsing goes deep.
                b.push(if r % 3 == 0 { (r >> 8) as u8 } else { ALPHABET[(r >> 8) as usize % ALPHABET.len()] });
            }
            if let Ok(Some((_, used))) = parse(&b) {
                assert!(used <= b.len() && used <= MAX_V2, "{b:?}");
            }
        }
    }
}
