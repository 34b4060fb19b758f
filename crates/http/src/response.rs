//! Response heads: status line and header fields, written into a buffer.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::version::Version;

pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        _ => "Unknown",
    }
}

/// Whether a response with this status to this method carries a body
/// (RFC 9110 6.4.1: never for HEAD, 1xx, 204, 304).
pub fn status_allows_body(status: u16) -> bool {
    !(status < 200 || status == 204 || status == 304)
}

/// The HTTP-date of the current second, formatted once per second.
pub struct DateCache {
    second: u64,
    text: String,
}

impl Default for DateCache {
    fn default() -> Self {
        DateCache { second: u64::MAX, text: String::new() }
    }
}

impl DateCache {
    pub fn now(&mut self) -> &str {
        let now = SystemTime::now();
        let second = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if second != self.second {
            self.second = second;
            self.text = httpdate::fmt_http_date(now);
        }
        &self.text
    }
}

/// Writes `HTTP/1.1 <status> <reason>\r\n`. Responses always say HTTP/1.1
/// (RFC 9110 6.2), whatever the request's minor version.
pub fn write_status_line(out: &mut Vec<u8>, status: u16) {
    out.extend_from_slice(b"HTTP/1.1 ");
    let mut digits = [0u8; 3];
    digits[0] = b'0' + (status / 100 % 10) as u8;
    digits[1] = b'0' + (status / 10 % 10) as u8;
    digits[2] = b'0' + (status % 10) as u8;
    out.extend_from_slice(&digits);
    out.push(b' ');
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\n");
}

pub fn write_header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    // Header values come from files and configs too: never let one split the head.
    if value.bytes().any(|b| b == b'\r' || b == b'\n') {
        out.extend(value.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
    } else {
        out.extend_from_slice(value.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
}

pub fn write_content_length(out: &mut Vec<u8>, len: u64) {
    out.extend_from_slice(b"Content-Length: ");
    write_decimal(out, len);
    out.extend_from_slice(b"\r\n");
}

/// Appends `n` in decimal, without `Display`'s formatter (its padding and
/// width machinery costs more than the digits on a per-request path).
pub fn write_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// The interim answer to `Expect: 100-continue`, sent before the body is read.
pub const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// The Connection field for a response, given whether the connection stays
/// open: HTTP/1.1 keeps alive by default, HTTP/1.0 must be told.
pub fn write_connection(out: &mut Vec<u8>, version: Version, keep_alive: bool) {
    match (version, keep_alive) {
        (Version::Http10 | Version::Http11, false) => out.extend_from_slice(b"Connection: close\r\n"),
        (Version::Http10, true) => out.extend_from_slice(b"Connection: keep-alive\r\n"),
        (Version::Http11, true) => {}
        // HTTP/2 has no Connection field; its framing is not ours to write here.
        (Version::Http2, _) => {}
    }
}

/// Writes a chunk of a chunked body (`len` in hex, CRLF, data, CRLF).
pub fn write_chunk(out: &mut Vec<u8>, data: &[u8]) {
    if data.is_empty() {
        return;
    }
    out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

pub const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_encoding() {
        let mut out = Vec::new();
        write_status_line(&mut out, 404);
        write_header(&mut out, "X-Bad", "a\r\nInjected: 1");
        write_content_length(&mut out, 1234567);
        write_connection(&mut out, Version::Http10, true);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 404 Not Found\r\nX-Bad: a  Injected: 1\r\nContent-Length: 1234567\r\nConnection: keep-alive\r\n"
        );
        let mut c = Vec::new();
        write_chunk(&mut c, b"hello world, this is!");
        assert_eq!(c, b"15\r\nhello world, this is!\r\n");
    }

    #[test]
    fn date_is_imf_fixdate() {
        let mut d = DateCache::default();
        let s = d.now().to_string();
        assert_eq!(s.len(), 29);
        assert!(s.ends_with(" GMT"));
    }
}
