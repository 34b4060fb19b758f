//! HTTPS under each MPM, with curl and raw sockets: a page and a large
//! file over TLS (byte-exact, and a range), a client speaking plain HTTP to
//! the TLS port (400), SSLRequireSSL (403 on a plain listener, served over
//! TLS), the mod_ssl fields of the access log, and https in self-referential
//! redirects.

mod common;
use common::*;

use std::io::{Read, Write};
use std::process::Command;

each_mpm!(https_pages_and_files, plain_http_on_the_tls_port, ssl_require_ssl, https_redirects_and_log_fields);

/// A self-signed ECDSA certificate for localhost, made with the openssl CLI.
fn certificate(dir: &TempDir) {
    let ok = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "30", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost", "-keyout"])
        .arg(dir.0.join("key.pem"))
        .arg("-out")
        .arg(dir.0.join("cert.pem"))
        .output()
        .expect("run openssl")
        .status
        .success();
    assert!(ok, "openssl made the certificate");
}

/// The server's own port speaks TLS (the main server has SSLEngine on);
/// `plain` is one more listener without it.
fn start(mpm: &str, tag: &str, extra: &str) -> (Server, u16) {
    let dir = TempDir::new(&format!("tls-{tag}-{mpm}"));
    standard_site(&dir);
    certificate(&dir);
    dir.write("htdocs/big.bin", (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect::<Vec<u8>>());
    let plain = free_port();
    let conf = format!(
        "Listen 127.0.0.1:{plain} http\nSSLEngine on\nSSLCertificateFile cert.pem\nSSLCertificateKeyFile key.pem\nSSLSessionCache shmcb:ssl_cache(512000)\n<VirtualHost *:{plain}>\nSSLEngine off\nDocumentRoot htdocs\n</VirtualHost>\n{extra}\n"
    );
    (Server::start_in(dir, mpm, &conf), plain)
}

fn https(s: &Server, path: &str, more: &[&str]) -> (i32, Vec<u8>) {
    let url = format!("https://localhost:{}{path}", s.port);
    let cacert = s.dir.0.join("cert.pem");
    let resolve = format!("localhost:{}:127.0.0.1", s.port);
    let mut args = vec!["--cacert", cacert.to_str().unwrap(), "--resolve", &resolve];
    args.extend_from_slice(more);
    args.push(&url);
    curl(&args)
}

fn https_pages_and_files(mpm: &str) {
    let (s, _) = start(mpm, "files", "");
    let (code, body) = https(&s, "/index.html", &[]);
    assert_eq!((code, body.as_slice()), (0, &b"<html>hello</html>\n"[..]));
    let want = std::fs::read(s.dir.0.join("htdocs/big.bin")).unwrap();
    let (code, body) = https(&s, "/big.bin", &[]);
    assert_eq!(code, 0);
    assert!(body == want, "300 KB over TLS, byte-exact ({} bytes came)", body.len());
    let (code, body) = https(&s, "/big.bin", &["-r", "100000-100099"]);
    assert_eq!((code, body.as_slice()), (0, &want[100_000..100_100]));
    // Keep-alive: two requests on one connection.
    let (code, out) = https(&s, "/a.txt", &["-w", "%{num_connects}\\n", "-o", "/dev/null", "--next", "--cacert", s.dir.0.join("cert.pem").to_str().unwrap(), "-w", "%{num_connects}\\n", "-o", "/dev/null", &format!("https://localhost:{}/a.txt", s.port)]);
    assert_eq!((code, String::from_utf8_lossy(&out).into_owned()), (0, "1\n0\n".to_string()), "the second request reuses the connection");
}

fn plain_http_on_the_tls_port(mpm: &str) {
    let (s, _) = start(mpm, "plain", "");
    let mut c = s.connect();
    c.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    assert_eq!(status_of(&out), 400, "{}", String::from_utf8_lossy(&out));
    s.wait_log("error.log", "speaking plain HTTP to an SSL-enabled server port");
    // The port still speaks TLS to the next client.
    assert_eq!(https(&s, "/a.txt", &[]).1, b"0123456789abcdefghij");
}

fn ssl_require_ssl(mpm: &str) {
    let (s, plain) = start(mpm, "require", "<Directory htdocs/sub>\nSSLRequireSSL\n</Directory>\n");
    let (_, body) = curl(&["-o", "/dev/null", "-w", "%{http_code}", &format!("http://127.0.0.1:{plain}/sub/page.html")]);
    assert_eq!(body, b"403", "SSLRequireSSL refuses a plain connection");
    let (_, body) = curl(&["-w", " %{http_code}", &format!("http://127.0.0.1:{plain}/a.txt")]);
    assert_eq!(body, b"0123456789abcdefghij 200", "elsewhere plain HTTP is served");
    assert_eq!(https(&s, "/sub/page.html", &[]).1, b"sub page");
}

fn https_redirects_and_log_fields(mpm: &str) {
    let (s, _) = start(mpm, "log", "LogFormat \"%{HTTPS}x %{SSL_PROTOCOL}x %{SSL_CIPHER}x %{SSL_SESSION_RESUMED}x %U\" tls\nCustomLog tls.log tls\n");
    let (code, out) = https(&s, "/sub", &["-o", "/dev/null", "-w", "%{http_code} %{redirect_url}"]);
    assert_eq!((code, String::from_utf8_lossy(&out).into_owned()), (0, format!("301 https://localhost:{}/sub/", s.port)));
    https(&s, "/a.txt", &["--tlsv1.2", "--tls-max", "1.2"]);
    let log = s.wait_log("tls.log", "/a.txt");
    assert!(log.lines().any(|l| l.starts_with("on TLSv1.3 TLS_") && l.ends_with(" Initial /sub")), "{log}");
    assert!(log.lines().any(|l| l.starts_with("on TLSv1.2 ECDHE-ECDSA-") && l.ends_with(" /a.txt")), "{log}");
}
