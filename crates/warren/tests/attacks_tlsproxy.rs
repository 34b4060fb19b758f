//! Attacks on the TLS to `https://` backends. The attacker is a tenant
//! whose virtual host proxies with `SSLProxyVerify none` (or whose backend
//! address an attacker answers with a certificate of its own), and an
//! anonymous client that chooses the Host of each request: neither may
//! get a TLS connection accepted under lax settings used for a host that
//! verifies, nor change the name the certificate is checked against.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;

use backend::{ask, Backend};
use common::tls::Certs;
use common::*;

fn get(host: &str, path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n")
}

/// A backend with a certificate of a CA the strict host does not trust,
/// proxied by a lax host (SSLProxyVerify none) and a strict one (require,
/// the test CA): on one client connection, so in one child whose kept
/// connections both would share, the lax host's accepted connection is
/// never used for the strict host.
fn lax_hosts_connections_are_not_the_strict_hosts(mpm: &str) {
    let (dir, other_dir) = (TempDir::new("tlsproxy-attack-ca"), TempDir::new("tlsproxy-attack-other"));
    let (certs, other) = (Certs::make(&dir.0), Certs::make(&other_dir.0));
    let impostor = Backend::start_tls(&other.cert("localhost"), &other.key("localhost"));
    let url = format!("https://localhost:{}/", impostor.port);
    let conf = format!(
        "SSLProxyEngine On\n<VirtualHost *>\n    ServerName lax.test\n    SSLProxyVerify none\n    ProxyPass /p/ {url}\n</VirtualHost>\n\
         <VirtualHost *>\n    ServerName strict.test\n    SSLProxyVerify require\n    SSLProxyCACertificateFile {}\n    ProxyPass /p/ {url}\n</VirtualHost>\n",
        certs.ca().display()
    );
    let s = Server::start(mpm, &conf);
    let mut c = s.connect();
    for round in 0..3 {
        let r = ask(&mut c, &get("lax.test", "/p/x"), false);
        assert_eq!(r.text(), "backend saw GET /x\n", "round {round}");
        let r = ask(&mut c, &get("strict.test", "/p/x"), false);
        assert_eq!(r.status, 502, "round {round}: the strict host got the impostor's answer: {}", r.text());
    }
    // Host names in the client's hands change nothing: the name checked is the URL's.
    for host in ["strict.test:443", "STRICT.test", "strict.test."] {
        assert_ne!(ask(&mut c, &get(host, "/p/x"), false).text(), "backend saw GET /x\n", "{host}");
    }
    // Only the lax host's connection was ever kept: one for its three requests.
    assert_eq!(ask(&mut c, &get("lax.test", "/p/connections"), false).text(), "1");
}

each_mpm!(lax_hosts_connections_are_not_the_strict_hosts);
