//! `warren bench` against https:// URLs: a small rustls server in this test
//! (one thread a connection, an ECDSA P-256 and an RSA 2048 certificate made
//! with the openssl CLI, the one picked by the signature schemes the client
//! offers) answers 200 to every request. Handshakes must be counted, full and
//! resumed, and responses must be 200; nothing here depends on timing.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{ServerConfig, ServerConnection, SignatureScheme, StreamOwned};

/// A self-signed certificate for localhost and 127.0.0.1: `name`.crt and `name`.key.
fn certificate(dir: &Path, name: &str, key: &[&str]) {
    let st = Command::new("openssl")
        .args(["req", "-x509", "-nodes", "-days", "2", "-subj", "/CN=localhost"])
        .args(key)
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(dir.join(format!("{name}.key")))
        .arg("-out")
        .arg(dir.join(format!("{name}.crt")))
        .output()
        .expect("the openssl command");
    assert!(st.status.success(), "openssl req: {}", String::from_utf8_lossy(&st.stderr));
}

#[derive(Debug)]
struct ByScheme {
    ecdsa: Arc<CertifiedKey>,
    rsa: Arc<CertifiedKey>,
}

impl ResolvesServerCert for ByScheme {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(if hello.signature_schemes().contains(&SignatureScheme::ECDSA_NISTP256_SHA256) { self.ecdsa.clone() } else { self.rsa.clone() })
    }
}

fn load(dir: &Path, name: &str, provider: &rustls::crypto::CryptoProvider) -> Arc<CertifiedKey> {
    let certs = CertificateDer::pem_file_iter(dir.join(format!("{name}.crt"))).unwrap().collect::<Result<Vec<_>, _>>().unwrap();
    let key = PrivateKeyDer::from_pem_file(dir.join(format!("{name}.key"))).unwrap();
    Arc::new(CertifiedKey::from_der(certs, key, provider).unwrap())
}

/// The server; its port.
fn tls_server(dir: &Path) -> u16 {
    certificate(dir, "ecdsa", &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]);
    certificate(dir, "rsa", &["-newkey", "rsa:2048"]);
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    let resolver = ByScheme { ecdsa: load(dir, "ecdsa", &provider), rsa: load(dir, "rsa", &provider) };
    let mut config = ServerConfig::builder_with_provider(Arc::new(provider)).with_safe_default_protocol_versions().unwrap().with_no_client_auth().with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let config = Arc::new(config);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let config = config.clone();
            std::thread::spawn(move || serve(config, s));
        }
    });
    port
}

fn serve(config: Arc<ServerConfig>, s: TcpStream) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
    let Ok(conn) = ServerConnection::new(config) else { return };
    let mut tls = StreamOwned::new(conn, s);
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match tls.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        }
        let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let close = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase().contains("connection: close");
        buf.drain(..end);
        let answer = format!("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: {}\r\n\r\nok", if close { "close" } else { "keep-alive" });
        if tls.write_all(answer.as_bytes()).is_err() {
            return;
        }
        if close {
            tls.conn.send_close_notify();
            let _ = tls.flush();
            return;
        }
    }
}

fn bench(args: &[&str]) -> serde_json::Value {
    let out = Command::new(BIN).arg("bench").arg("--json").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap()
}

/// The run's responses, failures, handshakes full and resumed.
fn counts(j: &serde_json::Value) -> (u64, u64, u64, u64) {
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(u64::MAX);
    (n(&j["successful_transactions"]), n(&j["failed_transactions"]), n(&j["tls"]["full"]), n(&j["tls"]["resumed"]))
}

#[test]
fn https_handshakes_counted_and_resumed() {
    let dir = TempDir::new("bench-tls");
    let port = tls_server(&dir.0);
    let url = format!("https://127.0.0.1:{port}/");

    // Keep-alive: one handshake per connection, every response 200.
    let j = bench(&["-k", "--insecure", "-n", "20", "-c", "2", &url]);
    assert_eq!(counts(&j), (20, 0, 2, 0), "{j}");
    assert_eq!(j["errors"]["non_2xx"], serde_json::json!({}), "{j}");
    assert_eq!(j["tls"]["handshakes"], 2);
    assert!(j["tls"]["handshake_ms"]["50"].as_f64().unwrap() > 0.0, "{j}");

    // A new connection per request, one at a time: the first handshake is
    // full, the others resume its session (the server's tickets come
    // before its response)...
    let j = bench(&["--insecure", "-n", "6", "-c", "1", &url]);
    assert_eq!(counts(&j), (6, 0, 1, 5), "{j}");
    // Four at a time: only connections started before any ticket came
    // make full handshakes (each connection's tickets come before its
    // response, so every later one finds one).
    let j = bench(&["--insecure", "-n", "40", "-c", "4", &url]);
    let (ok, failed, full, resumed) = counts(&j);
    assert!((ok, failed, full + resumed) == (40, 0, 40) && (1..=4).contains(&full), "{j}");
    // ...unless --no-resume.
    let j = bench(&["--insecure", "--no-resume", "-n", "6", "-c", "1", &url]);
    assert_eq!(counts(&j), (6, 0, 6, 0), "{j}");

    // Verified: the ECDSA certificate is trusted and, for localhost, valid.
    let ecdsa = dir.0.join("ecdsa.crt");
    let ecdsa = ecdsa.to_str().unwrap();
    let local = format!("https://localhost:{port}/");
    let j = bench(&["-k", "--cacert", ecdsa, "-n", "4", "-c", "1", &local]);
    assert_eq!(counts(&j), (4, 0, 1, 0), "{j}");
    // Offering only RSA schemes gets the RSA certificate, which is not
    // trusted: every request fails, as a TLS error with its reason.
    let j = bench(&["-k", "--cacert", ecdsa, "--tls-auth", "rsa", "-n", "3", "-c", "1", &local]);
    assert_eq!((j["successful_transactions"].as_u64(), j["errors"]["tls"].as_u64()), (Some(0), Some(3)), "{j}");
    assert!(j["tls_error"].as_str().is_some_and(|e| e.contains("certificate")), "{j}");
    // Trusting the RSA one, it verifies (its handshake signature included).
    let rsa = dir.0.join("rsa.crt");
    let j = bench(&["-k", "--cacert", rsa.to_str().unwrap(), "--tls-auth", "rsa", "-n", "3", "-c", "1", &local]);
    assert_eq!(counts(&j), (3, 0, 1, 0), "{j}");

    // A plain-HTTP server behind an https:// URL: TLS errors, not responses.
    let plain = TcpListener::bind("127.0.0.1:0").unwrap();
    let plain_port = plain.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in plain.incoming().flatten() {
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    let j = bench(&["--insecure", "-n", "2", "-c", "1", &format!("https://127.0.0.1:{plain_port}/")]);
    assert_eq!((j["successful_transactions"].as_u64(), j["errors"]["tls"].as_u64()), (Some(0), Some(2)), "{j}");
}
