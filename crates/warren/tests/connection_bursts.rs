//! Clients that arrive together and keep their connections: each prefork
//! child holds one connection, kept-alive ones too, so such a burst (a
//! benchmark's, a load balancer's, the clients a graceful restart sends
//! back) needs children forked for it. Every client is answered, and so
//! is a fresh one while all of them are still open, under each MPM; a
//! prefork restart starts as many children as were running.

mod common;
use common::*;

use std::io::Write;
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::time::Duration;

const STATUS: &str = "<Location \"/server-status\">\nSetHandler server-status\n</Location>";

/// Few children to start with and room for many more: the burst is larger
/// than the spare children. KeepAliveTimeout is far longer than the test,
/// so no child gets free by closing a client's connection.
const FEW_CHILDREN: &str = "<IfModule mpm_prefork_module>\nStartServers 1\nMinSpareServers 1\nMaxSpareServers 40\n</IfModule>\nKeepAliveTimeout 60";

each_mpm!(a_burst_of_kept_alive_clients_is_answered);

/// Sends one keep-alive request on `c` and reads its answer (generous
/// deadline: a loaded machine forks slowly); the status, or why none came.
fn request_kept_alive(c: &mut TcpStream) -> Result<u16, String> {
    c.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
    c.write_all(b"GET /a.txt HTTP/1.1\r\nHost: a\r\n\r\n").map_err(|e| format!("write: {e}"))?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !response_complete(&got) {
        match read_some(c, &mut buf) {
            Ok(0) => return Err(format!("closed after {} bytes", got.len())),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("read after {} bytes: {e}", got.len())),
        }
    }
    Ok(status_of(&got))
}

/// Whether the server has closed `c` (EOF or reset), without waiting.
fn closed_by_server(c: &TcpStream) -> bool {
    c.set_nonblocking(true).unwrap();
    let closed = !matches!(read_some(&mut &*c, &mut [0u8; 16]), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    c.set_nonblocking(false).unwrap();
    closed
}

/// Sixteen clients connect and send a request at the same moment, then
/// keep their connections open and idle: each is answered, and a
/// seventeenth client is answered while the sixteen are all still open.
fn a_burst_of_kept_alive_clients_is_answered(mpm: &str) {
    const CLIENTS: usize = 16;
    let s = Server::start(mpm, FEW_CHILDREN);
    let together = Arc::new(Barrier::new(CLIENTS));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let port = s.port;
            let together = together.clone();
            std::thread::spawn(move || {
                let c = TcpStream::connect(("127.0.0.1", port));
                together.wait();
                match c {
                    Ok(mut c) => (request_kept_alive(&mut c), Some(c)),
                    Err(e) => (Err(format!("connect: {e}")), None),
                }
            })
        })
        .collect();
    let mut held = Vec::new();
    for (i, t) in clients.into_iter().enumerate() {
        let (answer, c) = t.join().unwrap();
        assert_eq!(answer, Ok(200), "{mpm}: client {i} of the burst; error log:\n{}", s.read_log("error.log"));
        held.extend(c);
    }
    let mut fresh = s.connect();
    assert_eq!(request_kept_alive(&mut fresh), Ok(200), "{mpm}: a fresh client while the burst's {CLIENTS} connections are open");
    let closed = held.iter().filter(|c| closed_by_server(c)).count();
    assert_eq!(closed, 0, "{mpm}: the server closed {closed} of the burst's idle connections to answer a fresh client");
}

/// A graceful restart sends a prefork server's kept-alive clients back as
/// fresh connections: the new generation starts with as many children as
/// the old one had, not StartServers (with MinSpareServers met, spare
/// maintenance alone would leave it at one).
#[test]
fn prefork_restart_starts_as_many_children_as_were_running() {
    let s = Server::start("prefork", &format!("{FEW_CHILDREN}\n{STATUS}"));
    let num = |st: &std::collections::HashMap<String, String>, k: &str| st[k].parse::<usize>().unwrap();
    let mut held: Vec<TcpStream> = (0..6).map(|_| s.connect()).collect();
    for c in &mut held {
        assert_eq!(request_kept_alive(c), Ok(200));
    }
    // The six held, the status request's own and a spare one.
    let grown = wait_status(&s, "growth to eight children", &|st| num(st, "Processes") - num(st, "Stopping") >= 8);
    let before = num(&grown, "Processes") - num(&grown, "Stopping");
    drop(held);
    unsafe_kill(s.pid(), 1);
    let after = wait_status(&s, "the restart, its old children gone", &|st| st["ParentServerConfigGeneration"] == "2" && num(st, "Stopping") == 0);
    assert!(num(&after, "Processes") >= before, "{before} children before the restart, {after:?} after");
}
