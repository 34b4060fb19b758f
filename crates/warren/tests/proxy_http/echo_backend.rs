//! An HTTP backend of a test's own that answers each request with its
//! head (request line and fields, without the blank line) as the body,
//! byte for byte, and keeps each connection open: what warren sent, to
//! compare with what the client sent. Its `X-Connection` field numbers
//! the connection the request came on (0, 1, ... in accepting order).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

/// Starts the backend on a thread; its port.
pub fn start() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for (number, conn) in listener.incoming().enumerate() {
            let Ok(conn) = conn else { continue };
            std::thread::spawn(move || echo(conn, number));
        }
    });
    port
}

fn echo(mut conn: TcpStream, number: usize) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        while let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head: Vec<u8> = got.drain(..end + 4).take(end).collect();
            let mut answer = format!("HTTP/1.1 200 OK\r\nX-Connection: {number}\r\nContent-Length: {}\r\n\r\n", head.len()).into_bytes();
            answer.extend_from_slice(&head);
            if conn.write_all(&answer).is_err() {
                return;
            }
        }
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}
