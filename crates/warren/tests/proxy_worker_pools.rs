//! Each ProxyPass worker keeps its own backend connections, under each
//! MPM, as Apache keeps a connection pool per worker: two routes to one
//! backend address do not take each other's kept connections, and one
//! route's `max=` and `ttl=` close only its own (a route's `max=1`, or its
//! `ttl=` running out, used to close every kept connection to the address).
//! The backend numbers the connection each request came on.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;
#[path = "proxy_http/echo_backend.rs"]
mod echo_backend;

use std::net::TcpStream;
use std::time::Duration;

use backend::ask;
use common::*;

fn start(mpm: &str) -> Server {
    let port = echo_backend::start();
    Server::start(mpm, &format!("ProxyPass /one/ http://127.0.0.1:{port}/ max=1 ttl=1\nProxyPass /other/ http://127.0.0.1:{port}/\n"))
}

/// The backend connection that `path`'s request came on, asked on `client`.
fn backend_connection(client: &mut TcpStream, path: &str) -> String {
    let r = ask(client, &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n"), false);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.header("X-Connection").unwrap_or_else(|| panic!("{path}: no X-Connection in {:?}", r.headers)).to_string()
}

fn two_routes_to_one_address_keep_their_own(mpm: &str) {
    let s = start(mpm);
    // One client connection: one child (and under prefork one process) serves it all.
    let mut client = s.connect();
    let other = backend_connection(&mut client, "/other/x");
    let one = backend_connection(&mut client, "/one/x");
    assert_ne!(one, other, "/one/ took /other/'s kept connection");
    for _ in 0..3 {
        assert_eq!(backend_connection(&mut client, "/other/x"), other, "/other/'s kept connection was closed by /one/'s max=1");
        assert_eq!(backend_connection(&mut client, "/one/x"), one);
    }
}

fn a_routes_ttl_expires_only_its_own(mpm: &str) {
    let s = start(mpm);
    let mut client = s.connect();
    let other = backend_connection(&mut client, "/other/x");
    let one = backend_connection(&mut client, "/one/x");
    // Past /one/'s ttl=1 (however much longer: /other/ has no ttl).
    std::thread::sleep(Duration::from_millis(1500));
    assert_ne!(backend_connection(&mut client, "/one/x"), one, "/one/'s connection outlived its ttl");
    assert_eq!(backend_connection(&mut client, "/other/x"), other, "/one/'s ttl closed /other/'s kept connection");
}

each_mpm!(two_routes_to_one_address_keep_their_own, a_routes_ttl_expires_only_its_own);
