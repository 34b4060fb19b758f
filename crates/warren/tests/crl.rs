//! Revocation through CRLs (RFC 5280), for a certificate that names no
//! OCSP responder but a CRL Distribution Point, as Let's Encrypt's since
//! 2025: the ACME helper (never a serving child) fetches its CA's CRL from
//! a tiny HTTP server of the test's own (the list made by `openssl ca
//! -gencrl`), checks it is the issuer's and current, and looks the
//! certificate up. A CRL server that fails is retried with backoff; a
//! listed certificate is logged as REVOKED (a managed domain's is renewed:
//! `revoked_by_crl_is_renewed` in acme.rs); nothing is stapled from a CRL.
//! A forged list: attacks_stapling.rs.

mod common;

use std::time::Duration;

use common::terminate;

/// No list at first (the server answers 404): said, retried after 5 s;
/// then a list without the certificate: not revoked, nothing stapled.
fn a_missing_then_published_crl(mpm: &str) {
    let (s, ca, https, server) = common::ocsp::crl_stapling_server(mpm, "crl-later", "http", |_, _| String::new());
    let url = format!("http://127.0.0.1:{}/ca.crl", ca.port);
    let log = s.wait_log("error.log", "CRL check failed (1 in a row)");
    let line = log.lines().find(|l| l.contains("CRL check failed (1 in a row)")).unwrap();
    assert!(line.contains(&format!("{url} answered 404")) && line.contains("next try in 5 s"), "{line}");
    ca.publish_crl("ca.pem", "ca.key");
    let log = s.wait_log("error.log", "not revoked according to the CRL at");
    assert!(log.contains(&format!("a.pem: not revoked according to the CRL at {url}, checked again ")), "{log}");
    assert!(!log.contains("REVOKED"), "{log}");
    let out = common::tls::s_client(https, &["-servername", "a.test", "-status"], "");
    assert!(out.contains("OCSP response: no response sent") && out.contains("CN = a.test"), "{out}");
    terminate(server, Duration::from_secs(5));
}

/// The CA's list has the certificate: logged at level error, with the
/// date; the certificate is served still (it is not managed: warren
/// cannot replace it).
fn a_listed_certificate_is_said(mpm: &str) {
    let (s, _, https, server) = common::ocsp::crl_stapling_server(mpm, "crl-revoked", "http", |ca, _| {
        ca.set_status(true);
        ca.publish_crl("ca.pem", "ca.key");
        String::new()
    });
    let log = s.wait_log("error.log", "is REVOKED according to the CRL at");
    let line = log.lines().find(|l| l.contains("is REVOKED according to the CRL at")).unwrap();
    assert!(line.contains("[error]") && line.contains("a.pem is REVOKED according to the CRL at http://127.0.0.1:") && line.contains("(since ") && !line.contains("renewed"), "{line}");
    assert_eq!(common::tls::served_cn(https, Some("a.test")), "a.test");
    terminate(server, Duration::from_secs(5));
}

/// A CRL only at an https:// address: fetched trusting
/// MDCACertificateFile only (as mod_md's connections): a server whose
/// certificate that file does not vouch for is refused; one it does is
/// believed.
fn a_crl_over_https(mpm: &str) {
    let (s, _, _, server) = common::ocsp::crl_stapling_server(mpm, "crl-https-untrusted", "https", |ca, _| {
        ca.set_status(true);
        ca.publish_crl("ca.pem", "ca.key");
        // The OCSP CA's own certificate: not who signed the CRL server's.
        format!("MDCACertificateFile {}", ca.dir.join("ca.pem").display())
    });
    let log = s.wait_log("error.log", "CRL check failed (1 in a row)");
    let line = log.lines().find(|l| l.contains("CRL check failed (1 in a row)")).unwrap();
    assert!(line.contains("https://127.0.0.1:") && line.contains("UnknownIssuer"), "{line}");
    assert!(!log.contains("REVOKED"), "{log}");
    drop(s);
    terminate(server, Duration::from_secs(5));
    let (s, _, _, server) = common::ocsp::crl_stapling_server(mpm, "crl-https", "https", |ca, dir| {
        ca.set_status(true);
        ca.publish_crl("ca.pem", "ca.key");
        format!("MDCACertificateFile {}", common::tls::Certs::make(&dir.0).ca().display())
    });
    let log = s.wait_log("error.log", "is REVOKED according to the CRL at https://127.0.0.1:");
    assert!(!log.contains("CRL check failed"), "{log}");
    terminate(server, Duration::from_secs(5));
}

each_mpm!(a_missing_then_published_crl, a_listed_certificate_is_said, a_crl_over_https);
