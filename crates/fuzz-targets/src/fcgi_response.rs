//! An application's answer as the FastCGI proxy reads it: the handler's
//! `ResponseReader` turning STDOUT, STDERR and END_REQUEST records into a
//! response head (the CGI header block), body pieces and an end.
//!
//! The input is what the application sends. It is pushed whole, one byte at
//! a time and in pieces, taking every piece that has arrived after each
//! push; each way must give the same head, body and end, or the same
//! failure. A head must be one warren can send: a final status, field names
//! that are tokens, values without line breaks, no hop-by-hop fields, and a
//! local redirect only as CGI defines one.

use std::sync::{Arc, OnceLock};

use warren_config::LogLevel;
use warren_handler::fastcgi::{Piece, ResponseReader};
use warren_handler::logs::ErrorLog;

pub fn run(data: &[u8]) {
    let whole = answer(&[data]);
    let bytes: Vec<&[u8]> = data.chunks(1).collect();
    assert_eq!(whole, answer(&bytes), "pushed one byte at a time");
    for cuts in crate::cuts(data.len()) {
        assert_eq!(whole, answer(&crate::pieces(data, &cuts)), "cut at {cuts:?}");
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Head { status: u16, explicit_status: bool, headers: Vec<(String, String)>, content_length: Option<u64>, redirect: Option<String>, first_body: Vec<u8> },
    Data(Vec<u8>),
    End,
    Failed(u16, String),
}

/// The error log the reader writes the application's STDERR to: one that
/// takes errors only when asked for emergencies, so that the fuzzer's
/// output is not flooded (the lines are still split and formatted up to
/// the level check).
fn quiet_log() -> Arc<ErrorLog> {
    static LOG: OnceLock<Arc<ErrorLog>> = OnceLock::new();
    LOG.get_or_init(|| Arc::new(ErrorLog::open(None, None, LogLevel::Emerg).expect("standard error"))).clone()
}

fn answer(pieces: &[&[u8]]) -> Vec<Seen> {
    let peer = std::net::SocketAddr::from(([127, 0, 0, 1], 1));
    let mut r = ResponseReader::new("fuzz".into(), quiet_log(), peer, "/fuzz.php".into());
    let mut seen = Vec::new();
    for piece in pieces {
        r.push(piece);
        loop {
            match r.next_piece() {
                Ok(None) => break,
                Ok(Some(Piece::Head(h))) => {
                    assert!(seen.is_empty(), "a second head after {seen:?}");
                    assert!(r.head_done());
                    assert!((200..=599).contains(&h.status), "status {}", h.status);
                    let mut headers = Vec::new();
                    for (name, value) in &h.headers {
                        let name = name.as_ref();
                        assert!(!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)), "field name {name:?}");
                        assert!(!value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)), "field value {value:?}");
                        let lower = name.to_ascii_lowercase();
                        assert!(!matches!(lower.as_str(), "connection" | "keep-alive" | "transfer-encoding" | "te" | "trailer" | "upgrade" | "proxy-connection" | "status"), "{name} passed on");
                        headers.push((name.to_string(), value.clone()));
                    }
                    if let Some(to) = &h.redirect {
                        assert!(to.starts_with('/') && !to.starts_with("//") && h.status == 200, "redirect to {to:?} with {}", h.status);
                    }
                    seen.push(Seen::Head { status: h.status, explicit_status: h.explicit_status, headers, content_length: h.content_length, redirect: h.redirect, first_body: h.first_body });
                }
                Ok(Some(Piece::Data(d))) => {
                    assert!(matches!(seen.first(), Some(Seen::Head { .. })), "body before the head");
                    assert!(!d.is_empty(), "an empty body piece");
                    seen.push(Seen::Data(d));
                }
                Ok(Some(Piece::End)) => {
                    assert!(matches!(seen.first(), Some(Seen::Head { .. })), "an end before the head");
                    seen.push(Seen::End);
                    return seen;
                }
                Err(e) => {
                    assert!(matches!(e.status, 502 | 503), "status {} for a broken answer", e.status);
                    seen.push(Seen::Failed(e.status, e.why));
                    return seen;
                }
            }
        }
    }
    seen
}
