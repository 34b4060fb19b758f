//! An application's answer read without I/O: the FastCGI records, its CGI
//! header block (RFC 3875 6.3), then its output, and stderr to the error log.

use std::io::{self, Read};
use std::sync::Arc;

use warren_config::LogLevel;
use warren_fcgi::record::{self, RecordType};
use warren_fcgi::{ProtocolStatus, RecordReader};

use crate::gateway::error::GatewayError;
use crate::logs::ErrorLog;
use crate::HeaderName;

/// A response header block larger than this is refused with 502.
pub const MAX_HEADER_BLOCK: usize = 64 * 1024;

fn log_stderr(log: &ErrorLog, peer: std::net::SocketAddr, script: &str, text: &[u8]) {
    let text = String::from_utf8_lossy(text);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        log.log(LogLevel::Error, Some(peer), &format!("FastCGI: stderr from {script}: {line}"));
    }
}

/// How far a header block that arrives in records has been searched for
/// its end, so that each byte is looked at once: searched again from its
/// start for every record, a 60 KB block sent a byte a record cost 0.7 s.
#[derive(Default)]
pub(crate) struct BlockScan {
    /// Where the first line not yet ended starts.
    line: usize,
    /// How much of that line has been searched for its end.
    searched: usize,
}

/// Where the header block ends: (its length without the blank line, where
/// the body starts). Lines may end in CRLF or LF, as CGI allows. `scan`
/// resumes the search on the same block grown at its end.
pub(crate) fn header_end(b: &[u8], scan: &mut BlockScan) -> Option<(usize, usize)> {
    loop {
        let from = scan.line + scan.searched;
        let Some(nl) = b[from..].iter().position(|&c| c == b'\n').map(|i| from + i) else {
            scan.searched = b.len() - scan.line;
            return None;
        };
        let line = &b[scan.line..nl];
        if line.is_empty() || line == b"\r" {
            return Some((scan.line, nl + 1));
        }
        scan.line = nl + 1;
        scan.searched = 0;
    }
}

struct CgiHeaders {
    status: u16,
    /// Whether the application gave a Status header.
    explicit_status: bool,
    headers: Vec<(HeaderName, String)>,
    content_length: Option<u64>,
    location: Option<String>,
    /// `X-Accel-Buffering: no`, as nginx reads it: send as written.
    unbuffered: bool,
}

impl CgiHeaders {
    fn local_redirect(&self) -> Option<String> {
        match &self.location {
            Some(l) if l.starts_with('/') && !l.starts_with("//") && self.status == 200 => Some(l.clone()),
            _ => None,
        }
    }
}

/// The application's response headers (RFC 3875 section 6.3).
fn parse_cgi_headers(block: &[u8]) -> Result<CgiHeaders, String> {
    let mut h = CgiHeaders { status: 200, explicit_status: false, headers: Vec::new(), content_length: None, location: None, unbuffered: false };
    for raw in block.split(|&b| b == b'\n') {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.is_empty() {
            continue;
        }
        let colon = line.iter().position(|&b| b == b':').ok_or_else(|| format!("no colon in {:?}", String::from_utf8_lossy(&line[..line.len().min(80)])))?;
        let name = &line[..colon];
        if name.is_empty() || !name.iter().all(|&b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)) {
            return Err(format!("bad header name {:?}", String::from_utf8_lossy(&name[..name.len().min(80)])));
        }
        let value = trim(&line[colon + 1..]);
        if value.iter().any(|&b| b == 0 || b == b'\r') {
            return Err("control character in a header value".into());
        }
        let name = std::str::from_utf8(name).map_err(|_| "bad header name")?;
        let value = String::from_utf8_lossy(value).into_owned();
        match name.to_ascii_lowercase().as_str() {
            "status" => {
                // An interim (1xx) status is not an answer: sent as one, the
                // application's real answer would go to the client's next request.
                let code = value.split_whitespace().next().and_then(|c| c.parse::<u16>().ok()).filter(|c| (200..=599).contains(c));
                h.status = code.ok_or_else(|| format!("bad Status (not a final status 200-599): {value}"))?;
                h.explicit_status = true;
            }
            "content-length" => {
                h.content_length = Some(value.parse::<u64>().map_err(|_| format!("bad Content-Length: {value}"))?);
            }
            // Hop-by-hop fields are the server's to decide.
            "connection" | "keep-alive" | "transfer-encoding" | "te" | "trailer" | "upgrade" | "proxy-connection" => {}
            // Meant for the server, not the client.
            "x-accel-buffering" => h.unbuffered = value.eq_ignore_ascii_case("no"),
            "location" => {
                h.location = Some(value.clone());
                h.headers.push((HeaderName::Owned(name.to_string()), value));
            }
            _ => h.headers.push((HeaderName::Owned(name.to_string()), value)),
        }
    }
    if h.location.is_some() && !h.explicit_status && h.local_redirect().is_none() {
        h.status = 302;
    }
    Ok(h)
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(start, |e| e + 1);
    &b[start..end]
}

/// The head of a CGI program's answer, once `block` (its output so far)
/// holds the whole header block: what follows it is the head's
/// `first_body`. Ok(None) while more is needed.
pub(crate) fn cgi_head(block: &mut Vec<u8>, scan: &mut BlockScan) -> Result<Option<CgiHead>, String> {
    let Some((header_len, body_start)) = header_end(block, scan) else {
        return if block.len() > MAX_HEADER_BLOCK { Err(format!("header block larger than {MAX_HEADER_BLOCK} bytes")) } else { Ok(None) };
    };
    let first_body = block.split_off(body_start);
    let h = parse_cgi_headers(&block[..header_len])?;
    let redirect = h.local_redirect();
    Ok(Some(CgiHead { status: h.status, explicit_status: h.explicit_status, headers: h.headers, content_length: h.content_length, redirect, first_body, unbuffered: h.unbuffered }))
}

/// A piece of an application's answer.
pub enum Piece {
    Head(CgiHead),
    Data(Vec<u8>),
    End,
}

/// The application's response head.
pub struct CgiHead {
    pub status: u16,
    /// Whether the application gave a `Status:` (an error document's
    /// answer keeps the error's status otherwise).
    pub explicit_status: bool,
    pub headers: Vec<(HeaderName, String)>,
    pub content_length: Option<u64>,
    /// A local Location with status 200: serve that URL instead (CGI's
    /// internal redirect).
    pub redirect: Option<String>,
    /// Body bytes that came with the head.
    pub first_body: Vec<u8>,
    /// The application asked for its answer to go out as it writes it.
    pub unbuffered: bool,
}

/// Reads an application's answer from the bytes it sends, without I/O:
/// the blocking gateway and the event loop both feed it. FCGI_STDERR goes
/// to the error log as it comes, with the script's name.
pub struct ResponseReader {
    records: RecordReader,
    /// The header block while it is being collected; None once parsed.
    block: Option<Vec<u8>>,
    block_scan: BlockScan,
    backend: String,
    log: Arc<ErrorLog>,
    peer: std::net::SocketAddr,
    script: String,
}

impl ResponseReader {
    pub fn new(backend: String, log: Arc<ErrorLog>, peer: std::net::SocketAddr, script: String) -> ResponseReader {
        ResponseReader { records: RecordReader::default(), block: Some(Vec::new()), block_scan: BlockScan::default(), backend, log, peer, script }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.records.push(bytes);
    }

    /// Reads once from the application onto what is not yet parsed.
    pub fn fill_from<R: Read>(&mut self, stream: &mut R) -> io::Result<usize> {
        self.records.fill_from(stream)
    }

    /// The application, as log lines name it.
    pub fn backend(&self) -> &str {
        &self.backend
    }

    /// Whether the head has been read.
    pub fn head_done(&self) -> bool {
        self.block.is_none()
    }

    /// Whether none of the answer's head has come yet.
    pub fn nothing_yet(&self) -> bool {
        self.block.as_ref().is_some_and(Vec::is_empty)
    }

    /// The next piece among what has arrived; None when more is needed.
    pub fn next_piece(&mut self) -> Result<Option<Piece>, GatewayError> {
        loop {
            let rec = match self.records.next_record() {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(None),
                Err(e) => return Err(GatewayError { status: 502, why: format!("FastCGI: bad record from {}: {e:?}", self.backend) }),
            };
            match rec.kind {
                RecordType::Stdout if rec.content.is_empty() => {}
                RecordType::Stdout => {
                    let Some(block) = self.block.as_mut() else { return Ok(Some(Piece::Data(rec.content))) };
                    block.extend_from_slice(&rec.content);
                    if let Some((header_len, body_start)) = header_end(block, &mut self.block_scan) {
                        if header_len > MAX_HEADER_BLOCK {
                            return Err(self.too_large());
                        }
                        let mut block = self.block.take().expect("block");
                        let first_body = block.split_off(body_start);
                        let h = parse_cgi_headers(&block[..header_len])
                            .map_err(|why| GatewayError { status: 502, why: format!("FastCGI: malformed response header from {}: {why}", self.backend) })?;
                        let redirect = h.local_redirect();
                        return Ok(Some(Piece::Head(CgiHead { status: h.status, explicit_status: h.explicit_status, headers: h.headers, content_length: h.content_length, redirect, first_body, unbuffered: h.unbuffered })));
                    }
                    if block.len() > MAX_HEADER_BLOCK {
                        return Err(self.too_large());
                    }
                }
                RecordType::Stderr => log_stderr(&self.log, self.peer, &self.script, &rec.content),
                RecordType::EndRequest if self.block.is_some() => {
                    let status = record::parse_end_request(&rec.content).map(|(_, s)| s).unwrap_or(ProtocolStatus::RequestComplete);
                    let (code, why) = match status {
                        ProtocolStatus::RequestComplete => (502, "ended its response before the end of the headers".to_string()),
                        ProtocolStatus::Overloaded => (503, "is overloaded".to_string()),
                        s => (502, format!("refused the request ({s:?})")),
                    };
                    return Err(GatewayError { status: code, why: format!("FastCGI: backend {} {why}", self.backend) });
                }
                RecordType::EndRequest => return Ok(Some(Piece::End)),
                _ => {}
            }
        }
    }

    fn too_large(&self) -> GatewayError {
        GatewayError { status: 502, why: format!("FastCGI: response header block from {} larger than {MAX_HEADER_BLOCK} bytes", self.backend) }
    }

    /// Logs an answer that broke off after its head was sent.
    pub fn log_cut_short(&self, e: &GatewayError) {
        self.log.error(Some(self.peer), &format!("{} (script {}); response cut short", e.why, self.script));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_block_end_with_crlf_or_lf() {
        let at_once = |b: &[u8]| header_end(b, &mut BlockScan::default());
        assert_eq!(at_once(b"A: b\r\n\r\nbody"), Some((6, 8)));
        assert_eq!(at_once(b"A: b\n\nbody"), Some((5, 6)));
        assert_eq!(at_once(b"A: b\r\nC: d\r\n"), None);
        assert_eq!(at_once(b"\r\nbody"), Some((0, 2)));
    }

    #[test]
    fn header_block_searched_once_as_it_grows() {
        // Fed a byte at a time, the search finds the end found at once, and
        // resumes where it stopped instead of going back to the start.
        for block in [&b"A: b\r\nC: d\r\n\r\nbody"[..], b"A: b\nC: d\n\nbody", b"\nbody", b"A: b\r\r\n\r\n"] {
            let mut scan = BlockScan::default();
            let mut found = None;
            for end in 1..=block.len() {
                let before = scan.line + scan.searched;
                found = header_end(&block[..end], &mut scan);
                if found.is_some() {
                    break;
                }
                assert!(before <= end && scan.line + scan.searched == end);
            }
            assert_eq!(found, header_end(block, &mut BlockScan::default()), "{block:?}");
        }
    }

    #[test]
    fn cgi_headers() {
        let h = parse_cgi_headers(b"Status: 404 Not Found\r\nContent-Type: text/html\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n").unwrap();
        assert_eq!(h.status, 404);
        assert_eq!(h.headers.iter().filter(|(n, _)| n == "Set-Cookie").count(), 2);
        let h = parse_cgi_headers(b"Location: /other.php?x=1\n").unwrap();
        assert_eq!(h.local_redirect().as_deref(), Some("/other.php?x=1"));
        let h = parse_cgi_headers(b"Location: http://example.org/\n").unwrap();
        assert_eq!((h.status, h.local_redirect()), (302, None));
        let h = parse_cgi_headers(b"Status: 200\nLocation: /x\n").unwrap();
        assert_eq!(h.local_redirect().as_deref(), Some("/x"));
        let h = parse_cgi_headers(b"Status: 301\nLocation: /x\n").unwrap();
        assert_eq!((h.status, h.local_redirect()), (301, None));
        let h = parse_cgi_headers(b"Content-Length: 5\nConnection: close\nTransfer-Encoding: chunked\n").unwrap();
        assert_eq!(h.content_length, Some(5));
        assert!(h.headers.is_empty());
        assert!(parse_cgi_headers(b"no colon here\n").is_err());
        assert!(parse_cgi_headers(b"Bad Name: x\n").is_err());
        assert!(parse_cgi_headers(b"Status: abc\n").is_err());
        for interim_or_unknown in ["100", "101 Switching Protocols", "103", "199", "600", "999"] {
            assert!(parse_cgi_headers(format!("Status: {interim_or_unknown}\n").as_bytes()).is_err(), "{interim_or_unknown}");
        }
        assert_eq!(parse_cgi_headers(b"Status: 599\n").unwrap().status, 599);
    }
}

