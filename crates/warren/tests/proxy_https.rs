//! mod_proxy_http to `https://` backends under each MPM, against real TLS
//! backends (the Python fixture proxy_http/backend.py wrapped in Python's
//! ssl, with certificates of a test CA made by openssl): verified with
//! SSLProxyCACertificateFile, SNI the URL's host whatever
//! ProxyPreserveHost says, ALPN http/1.1, kept TLS connections reused; a
//! certificate of an unknown CA or for another name refused with a 502
//! and an error-log line naming the backend and the reason;
//! SSLProxyVerify none and SSLProxyCheckPeerName Off letting through what
//! they should, and nothing more; SSLProxyEngine required (a
//! configuration error naming the line) and `none` warned about.

mod common;
#[path = "proxy_http/backend.rs"]
#[allow(dead_code)]
mod backend;

use backend::{ask, Backend};
use common::tls::Certs;
use common::*;

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: www.example.test\r\n\r\n")
}

/// Three TLS backends: `good` (a localhost certificate of the test CA),
/// `wrong_name` (the test CA's, for a.test only), `wrong_ca` (a localhost
/// certificate of another CA); and the test CA's file.
struct Backends {
    good: Backend,
    wrong_name: Backend,
    wrong_ca: Backend,
    ca: std::path::PathBuf,
    _dirs: (TempDir, TempDir),
}

impl Backends {
    fn start() -> Backends {
        let (dir, other_dir) = (TempDir::new("proxy-https-ca"), TempDir::new("proxy-https-other-ca"));
        let (certs, other) = (Certs::make(&dir.0), Certs::make(&other_dir.0));
        Backends {
            good: Backend::start_tls(&certs.cert("localhost"), &certs.key("localhost")),
            wrong_name: Backend::start_tls(&certs.cert("a"), &certs.key("a")),
            wrong_ca: Backend::start_tls(&other.cert("localhost"), &other.key("localhost")),
            ca: certs.ca(),
            _dirs: (dir, other_dir),
        }
    }

    /// ProxyPass /good/, /wrongname/ and /wrongca/ to each, by name.
    fn routes(&self) -> String {
        format!(
            "ProxyPass /good/ https://localhost:{}/\nProxyPass /wrongname/ https://localhost:{}/\nProxyPass /wrongca/ https://localhost:{}/\n",
            self.good.port, self.wrong_name.port, self.wrong_ca.port
        )
    }
}

fn verified_with_sni_alpn_and_reuse(mpm: &str) {
    let b = Backends::start();
    let conf = format!("SSLProxyEngine On\nSSLProxyVerify require\nSSLProxyCACertificateFile {}\nProxyPreserveHost On\n{}", b.ca.display(), b.routes());
    let s = Server::start(mpm, &conf);
    let mut c = s.connect();
    // SNI is the URL's host, not the Host that ProxyPreserveHost sends.
    let r = ask(&mut c, &get("/good/tls"), false);
    assert_eq!((r.status, r.text().as_str()), (200, "sni=localhost alpn=http/1.1"), "{}", r.text());
    for i in 0..8 {
        let r = ask(&mut c, &get(&format!("/good/n{i}")), false);
        assert_eq!(r.text(), format!("backend saw GET /n{i}\n"));
    }
    // One client connection is served by one child: one TLS connection for all ten requests.
    assert_eq!(ask(&mut c, &get("/good/connections"), false).text(), "1");

    for (path, port, why) in [("/wrongca/x", b.wrong_ca.port, "invalid peer certificate"), ("/wrongname/x", b.wrong_name.port, "not valid for name \"localhost\"")] {
        let r = ask(&mut c, &get(path), false);
        assert_eq!(r.status, 502, "{path}: {}", r.text());
        let log = s.wait_log("error.log", &format!("localhost:{port} failed"));
        let line = log.lines().find(|l| l.contains(&format!("proxy: HTTPS: TLS to https://localhost:{port} failed"))).unwrap_or_else(|| panic!("{log}"));
        assert!(line.contains(why), "{line}");
        // The client's connection goes on, and the good backend's kept connection with it.
        assert_eq!(ask(&mut c, &get("/good/ok"), false).text(), "backend saw GET /ok\n", "after {path}");
    }
    // Not marked down (it is up): refused again, not "in error state".
    assert_eq!(ask(&mut c, &get("/wrongca/y"), false).status, 502);
    assert!(!s.read_log("error.log").contains("in error state"));
    assert_eq!(ask(&mut c, &get("/good/connections"), false).text(), "1");
}

fn verify_none_and_peer_name_off(mpm: &str) {
    let b = Backends::start();
    // none: any CA, but the name is still checked (SSLProxyCheckPeerName On, as in Apache).
    let s = Server::start(mpm, &format!("SSLProxyEngine On\nSSLProxyVerify none\n{}", b.routes()));
    let mut c = s.connect();
    assert_eq!(ask(&mut c, &get("/wrongca/z"), false).text(), "backend saw GET /z\n");
    assert_eq!(ask(&mut c, &get("/good/z"), false).text(), "backend saw GET /z\n");
    assert_eq!(ask(&mut c, &get("/wrongname/z"), false).status, 502);
    let log = s.wait_log("error.log", "NotValidForName");
    assert!(log.contains(&format!("https://localhost:{}", b.wrong_name.port)), "{log}");
    drop((c, s));

    // CheckPeerName Off: another name passes; the chain is still checked.
    let conf = format!("SSLProxyEngine On\nSSLProxyVerify require\nSSLProxyCheckPeerName Off\nSSLProxyCACertificateFile {}\n{}", b.ca.display(), b.routes());
    let s = Server::start(mpm, &conf);
    let mut c = s.connect();
    assert_eq!(ask(&mut c, &get("/wrongname/w"), false).text(), "backend saw GET /w\n");
    assert_eq!(ask(&mut c, &get("/wrongca/w"), false).status, 502);
    let log = s.wait_log("error.log", "invalid peer certificate");
    assert!(log.contains(&format!("https://localhost:{}", b.wrong_ca.port)), "{log}");
}

/// `warren -t` on `conf`: whether it passed, and what it said.
fn config_test(conf: &str) -> (bool, String, String) {
    let dir = TempDir::new("proxy-https-conf");
    let file = dir.0.join("warren.conf");
    std::fs::write(&file, format!("Listen 127.0.0.1:{}\n{conf}", free_port())).unwrap();
    let out = std::process::Command::new(BIN).args(["-R", "-t", "-f"]).arg(&file).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    (out.status.success(), said, file.display().to_string())
}

#[test]
fn engine_required_and_verify_none_warned() {
    let (ok, said, file) = config_test("ProxyPass /a/ http://127.0.0.1:9/\nProxyPass /s/ https://backend.test/\n");
    assert!(!ok, "{said}");
    assert!(said.contains(&format!("{file}:3")) && said.contains("ProxyPass https://backend.test: an https:// backend needs SSLProxyEngine On"), "{said}");
    let (ok, said, file) = config_test("SSLProxyEngine On\nProxyPass /s/ https://backend.test/\n");
    assert!(ok && said.contains("Syntax OK"), "{said}");
    assert!(said.lines().any(|l| l.contains(&format!("{file}:3")) && l.contains("SSLProxyVerify none")), "{said}");
    let (ok, said, _) = config_test("SSLProxyEngine On\nSSLProxyVerify require\nProxyPass /s/ https://backend.test/\n");
    assert!(ok && !said.contains("SSLProxyVerify none"), "{said}");
}

each_mpm!(verified_with_sni_alpn_and_reuse, verify_none_and_peer_name_off);
