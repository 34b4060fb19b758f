//! MDStapling attacked by whoever sits between warren and the OCSP
//! responder (OCSP goes over plain HTTP, so anyone on the path can
//! answer): a "revoked" answer signed by a key of the attacker's own
//! (under the CA's very name) must not be kept, stapled or acted on; an
//! answer that is garbage, or endless, is refused with its reason and
//! never blocks serving. The certificate is of a CA of the test's own,
//! naming the attacker's responder in its Authority Information Access
//! (or, for CRLs, the attacker's list in its CRL Distribution Point).

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::tls::{openssl, s_client};
use common::{terminate, Server};

/// Nothing kept in the store, nothing stapled, no revocation believed.
fn nothing_believed(s: &Server, https: u16) {
    let log = s.read_log("error.log");
    assert!(!log.contains("REVOKED") && !log.contains("OCSP responses changed"), "{log}");
    let kept = std::fs::read_dir(s.dir.0.join("md/ocsp")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(kept, 0);
    let out = s_client(https, &["-servername", "a.test", "-status"], "");
    assert!(out.contains("OCSP response: no response sent") && out.contains("CN = a.test"), "{out}");
}

fn a_forged_revocation_is_refused(mpm: &str) {
    let (s, ca, https) = common::ocsp::stapling_server(mpm, "attacks-stapling-forged");
    // The forger's certificate bears the CA's name, with a key of its own.
    openssl(&ca.dir, &["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "forger.key", "-out", "forger.pem", "-days", "30", "-subj", "/CN=warren OCSP test CA"]);
    ca.set_status(true);
    let responder = ca.responder_signing_with("forger.pem", "forger.key");
    let log = s.wait_log("error.log", "OCSP failed (2 in a row)");
    let line = log.lines().find(|l| l.contains("OCSP failed (2 in a row)")).unwrap();
    assert!(line.contains("signature is neither the issuer's nor that of a responder the issuer certified"), "{line}");
    nothing_believed(&s, https);
    terminate(responder, Duration::from_secs(5));
}

/// Whoever answers on the CRL's plain-HTTP path: a list naming the
/// certificate, signed by a key of the attacker's own under the CA's
/// name; then garbage; then a list larger than the helper reads (4 MB).
/// Each refused with its reason, the certificate never taken for revoked.
fn a_forged_garbage_or_huge_crl_is_refused(mpm: &str) {
    let (s, ca, https, server) = common::ocsp::crl_stapling_server(mpm, "attacks-stapling-crl", "http", |ca, _| {
        openssl(&ca.dir, &["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "forger.key", "-out", "forger.pem", "-days", "30", "-subj", "/CN=warren OCSP test CA"]);
        ca.set_status(true);
        ca.publish_crl("forger.pem", "forger.key");
        String::new()
    });
    let failed = |n: u32| {
        let log = s.wait_log("error.log", &format!("CRL check failed ({n} in a row)"));
        log.lines().find(|l| l.contains(&format!("CRL check failed ({n} in a row)"))).unwrap().to_string()
    };
    assert!(failed(1).contains("the CRL's signature is not the issuer's"), "{}", s.read_log("error.log"));
    std::fs::write(ca.dir.join("www/ca.crl"), b"<html>not a list</html>").unwrap();
    assert!(failed(2).contains("not a CRL"), "{}", s.read_log("error.log"));
    std::fs::write(ca.dir.join("www/ca.crl"), vec![0x30u8; 5 * 1024 * 1024]).unwrap();
    assert!(failed(3).contains("reading the answer"), "{}", s.read_log("error.log"));
    nothing_believed(&s, https);
    terminate(server, Duration::from_secs(5));
}

/// A responder that answers 200 with an endless body, then one with garbage.
fn garbage_and_endless_answers_are_refused(mpm: &str) {
    let (s, ca, https) = common::ocsp::stapling_server(mpm, "attacks-stapling-garbage");
    let server = "import http.server, sys\nclass H(http.server.BaseHTTPRequestHandler):\n    n = 0\n    def do_POST(self):\n        H.n += 1\n        self.send_response(200)\n        self.end_headers()\n        try:\n            if H.n == 1:\n                while True: self.wfile.write(b'A' * 65536)\n            self.wfile.write(b'\\x30\\x82\\xff\\xff garbage')\n        except OSError: pass\n    def log_message(self, *a): pass\nhttp.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n";
    let responder = Command::new("python3").arg("-c").arg(server).arg(ca.port.to_string()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("python3");
    let log = s.wait_log("error.log", "not an OCSP response");
    assert!(log.contains("reading the answer"), "the endless answer: {log}");
    nothing_believed(&s, https);
    terminate(responder, Duration::from_secs(5));
}

/// A responder whose answers expire within a minute: stored, each would
/// cost a graceful restart, and one due again within the minute another.
/// Refused with the reason, with backoff: nothing kept, no restart.
fn short_lived_answers_are_not_kept(mpm: &str) {
    let (s, ca, https) = common::ocsp::stapling_server(mpm, "attacks-stapling-short");
    ca.set_status(false);
    let responder = ca.responder_with("ca.pem", "ca.key", 1);
    let log = s.wait_log("error.log", "OCSP failed (2 in a row)");
    let line = log.lines().find(|l| l.contains("OCSP failed (2 in a row)")).unwrap();
    assert!(line.contains("less than the 120 s a stapled one must be"), "{line}");
    assert!(!log.contains("SIGHUP received"), "{log}");
    nothing_believed(&s, https);
    terminate(responder, Duration::from_secs(5));
}

each_mpm!(a_forged_garbage_or_huge_crl_is_refused, a_forged_revocation_is_refused, garbage_and_endless_answers_are_refused, short_lived_answers_are_not_kept);
