//! One request at a time on a blocking socket: how the suite checks that a
//! server it started answers, reads a page's image links, and holds idle
//! keep-alive connections (the idle-1000 scenario).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::client::parse_head;

/// Sends `GET path` on `stream` and reads the whole response: its status
/// and body. `keep_alive` false asks the server to close after it.
pub fn get(stream: &mut TcpStream, path: &str, keep_alive: bool) -> io::Result<(u16, Vec<u8>)> {
    get_with(stream, path, keep_alive, "")
}

/// [`get`] with more request header lines (each ending in CRLF).
pub fn get_with(stream: &mut TcpStream, path: &str, keep_alive: bool, headers: &str) -> io::Result<(u16, Vec<u8>)> {
    let connection = if keep_alive { "" } else { "Connection: close\r\n" };
    stream.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nUser-Agent: warren-bench\r\n{headers}{connection}\r\n").as_bytes())?;
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 16384];
    let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidData, why.to_string());
    let (status, framing, used) = loop {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(bad("closed before the response head"));
        }
        buf.extend_from_slice(&chunk[..n]);
        match parse_head(&buf, false) {
            Ok(Some((status, framing, _, used))) => break (status, framing, used),
            Ok(None) if buf.len() < 65536 => continue,
            _ => return Err(bad("malformed response head")),
        }
    };
    let mut body = Vec::new();
    let mut pending = buf.split_off(used);
    match framing {
        Some(mut decoder) => loop {
            let used = decoder.feed(&pending, &mut |b| body.extend_from_slice(b)).map_err(|e| bad(&e.to_string()))?;
            pending.drain(..used);
            if decoder.is_done() {
                break;
            }
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                return Err(bad("closed in the middle of the body"));
            }
            pending.extend_from_slice(&chunk[..n]);
        },
        None => {
            body = pending;
            stream.read_to_end(&mut body)?;
        }
    }
    Ok((status, body))
}

/// `GET path` on a new connection that closes after it.
pub fn fetch(addr: SocketAddr, path: &str, timeout: Duration) -> io::Result<(u16, Vec<u8>)> {
    fetch_with(addr, path, "", timeout)
}

/// [`fetch`] with more request header lines (each ending in CRLF).
pub fn fetch_with(addr: SocketAddr, path: &str, headers: &str, timeout: Duration) -> io::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    get_with(&mut s, path, false, headers)
}

/// The `src` of each `<img>` of an HTML page, in order.
pub fn image_links(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lower = html.to_ascii_lowercase();
    let mut at = 0;
    while let Some(i) = lower[at..].find("<img") {
        let tag_start = at + i;
        let tag_end = lower[tag_start..].find('>').map_or(lower.len(), |e| tag_start + e);
        let tag = &html[tag_start..tag_end];
        if let Some(s) = tag.to_ascii_lowercase().find("src=") {
            let rest = &tag[s + 4..];
            let (quote, rest) = match rest.chars().next() {
                Some(q @ ('"' | '\'')) => (Some(q), &rest[1..]),
                _ => (None, rest),
            };
            let end = rest.find(|c: char| Some(c) == quote || (quote.is_none() && c.is_whitespace())).unwrap_or(rest.len());
            out.push(rest[..end].to_string());
        }
        at = tag_end;
    }
    out
}

/// What the idle scenario saw.
#[derive(Clone, Debug, Default)]
pub struct Idle {
    /// Connections that got their first response and that the server
    /// still held open when the fresh requests were made.
    pub held: usize,
    /// Connections that could not be opened or got no 200.
    pub failed: usize,
    /// The fresh requests' times; None for one that failed.
    pub fresh: Vec<Option<Duration>>,
}

/// Opens `connections` keep-alive connections, makes one request on each
/// and leaves them idle, then times `samples` requests, each on a fresh
/// connection, while the idle ones are still open.
pub fn idle(addr: SocketAddr, path: &str, connections: usize, samples: usize, timeout: Duration) -> Idle {
    const OPENERS: usize = 8;
    let opened: Vec<(Vec<TcpStream>, usize)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..OPENERS)
            .map(|t| {
                let share = connections / OPENERS + usize::from(t < connections % OPENERS);
                scope.spawn(move || {
                    let mut held = Vec::with_capacity(share);
                    let mut failed = 0;
                    for _ in 0..share {
                        let open = || -> io::Result<TcpStream> {
                            let mut s = TcpStream::connect_timeout(&addr, timeout)?;
                            s.set_read_timeout(Some(timeout))?;
                            match get(&mut s, path, true)? {
                                (200, _) => Ok(s),
                                (status, _) => Err(io::Error::other(format!("status {status}"))),
                            }
                        };
                        match open() {
                            Ok(s) => held.push(s),
                            Err(_) => failed += 1,
                        }
                    }
                    (held, failed)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    let mut result = Idle { held: 0, failed: opened.iter().map(|(_, f)| f).sum(), fresh: Vec::new() };
    // Let the server settle with all of them idle.
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..samples {
        let began = Instant::now();
        result.fresh.push(match fetch(addr, path, timeout) {
            Ok((200, _)) => Some(began.elapsed()),
            _ => None,
        });
    }
    // A server that cannot keep them all (a process or thread each) has
    // closed some while the others were being opened: count what it held.
    result.held = opened.iter().flat_map(|(h, _)| h).filter(|s| still_open(s)).count();
    result
}

/// Whether the server has not closed `s` (nothing to read, no end of file).
fn still_open(s: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    s.set_nonblocking(true).is_ok() && matches!(s.peek(&mut byte), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_connections_closed_by_the_server_are_not_counted() {
        // A server that answers each connection's first request, then
        // closes every other connection.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            for (i, s) in l.incoming().flatten().enumerate() {
                let mut s = s;
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                if i % 2 == 0 {
                    kept.push(s);
                }
            }
        });
        let idle = idle(addr, "/", 20, 2, Duration::from_secs(5));
        // 20 idle, of which 10 kept; the fresh requests' connections are the 21st and 22nd.
        assert_eq!((idle.held, idle.failed, idle.fresh.len()), (10, 0, 2));
        assert!(idle.fresh.iter().all(Option::is_some));
    }

    #[test]
    fn images_of_a_page() {
        let page = r#"<html><IMG SRC="/a.png"> <img alt=x src='b.png'><img src=/c.png width=1><img alt="none"></html>"#;
        assert_eq!(image_links(page), vec!["/a.png", "b.png", "/c.png"]);
    }
}
