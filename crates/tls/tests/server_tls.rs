//! ServerTls from configuration files: every error names its line, SNI
//! picks the host's certificate, and sessions resume across processes.
//! Keys are made with the `openssl` command (PKCS#8, PKCS#1, SEC1),
//! certificates with rcgen (any validity period).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, HandshakeKind, ServerConfig, ServerConnection, SignatureScheme, SupportedCipherSuite};
use warren_tls::ServerTls;

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("warren-tls-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(p.join("htdocs")).unwrap();
        Dir(p)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn openssl(args: &[&str]) {
    let ok = Command::new("openssl").args(args).stderr(std::process::Stdio::null()).status().expect("the openssl command");
    assert!(ok.success(), "openssl {args:?}");
}

#[derive(Clone, Copy)]
enum Key {
    Rsa8,
    Rsa1,
    EcSec1,
    Ec8,
    Ed448,
}

/// A key in `name`, in the format asked; its PKCS#8 form in `name.p8`.
fn make_key(d: &Dir, name: &str, kind: Key) -> PathBuf {
    let out = d.path(name);
    let p8 = d.path(&format!("{name}.p8"));
    let (o, p) = (out.to_str().unwrap(), p8.to_str().unwrap());
    match kind {
        Key::Rsa8 | Key::Rsa1 => openssl(&["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", p]),
        Key::EcSec1 | Key::Ec8 => openssl(&["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", p]),
        Key::Ed448 => openssl(&["genpkey", "-algorithm", "ED448", "-out", p]),
    }
    match kind {
        Key::Rsa1 | Key::EcSec1 => openssl(&["pkey", "-in", p, "-traditional", "-out", o]),
        _ => {
            std::fs::copy(&p8, &out).unwrap();
        }
    }
    let text = std::fs::read_to_string(&out).unwrap();
    match kind {
        Key::Rsa1 => assert!(text.contains("BEGIN RSA PRIVATE KEY"), "{text}"),
        Key::EcSec1 => assert!(text.contains("BEGIN EC PRIVATE KEY"), "{text}"),
        _ => assert!(text.contains("BEGIN PRIVATE KEY"), "{text}"),
    }
    out
}

/// A self-signed certificate for `names` with the key `key` (its PKCS#8
/// form), valid from `days_from` to `days_to` days from now.
fn make_cert(d: &Dir, name: &str, key: &Path, rsa: bool, names: &[&str], days_from: i64, days_to: i64) -> PathBuf {
    let pem = std::fs::read_to_string(format!("{}.p8", key.display())).unwrap();
    let kp = if rsa { rcgen::KeyPair::from_pem_and_sign_algo(&pem, &rcgen::PKCS_RSA_SHA256).unwrap() } else { rcgen::KeyPair::from_pem(&pem).unwrap() };
    let mut params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now + time::Duration::days(days_from);
    params.not_after = now + time::Duration::days(days_to);
    let cert = params.self_signed(&kp).unwrap();
    let out = d.path(name);
    std::fs::write(&out, cert.pem()).unwrap();
    out
}

fn settings(d: &Dir, text: &str) -> warren_config::Settings {
    let conf = d.path("warren.conf");
    std::fs::write(&conf, format!("DocumentRoot htdocs\n{text}")).unwrap();
    let loaded = warren_config::load_file(&conf, &warren_config::LoadOptions::default());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors.iter().map(ToString::to_string).collect::<Vec<_>>());
    loaded.settings.unwrap()
}

/// A client that accepts any certificate, offering `schemes`.
/// The OCSP response the server stapled, if any.
#[derive(Debug)]
struct AnyCert(Vec<SignatureScheme>, std::sync::Mutex<Vec<u8>>);

impl ServerCertVerifier for AnyCert {
    fn verify_server_cert(&self, _: &CertificateDer<'_>, _: &[CertificateDer<'_>], _: &ServerName<'_>, ocsp: &[u8], _: UnixTime) -> Result<ServerCertVerified, rustls::Error> {
        *self.1.lock().unwrap() = ocsp.to_vec();
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(&self, _: &[u8], _: &CertificateDer<'_>, _: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(&self, _: &[u8], _: &CertificateDer<'_>, _: &DigitallySignedStruct) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.clone()
    }
}

const ALL_SCHEMES: &[SignatureScheme] = &[
    SignatureScheme::ECDSA_NISTP256_SHA256,
    SignatureScheme::ECDSA_NISTP384_SHA384,
    SignatureScheme::ED25519,
    SignatureScheme::RSA_PSS_SHA256,
    SignatureScheme::RSA_PSS_SHA384,
    SignatureScheme::RSA_PKCS1_SHA256,
    SignatureScheme::RSA_PKCS1_SHA384,
];

fn client(schemes: &[SignatureScheme], versions: &[&'static rustls::SupportedProtocolVersion]) -> Arc<ClientConfig> {
    client_with(Arc::new(AnyCert(schemes.to_vec(), Default::default())), versions)
}

fn client_with(verifier: Arc<AnyCert>, versions: &[&'static rustls::SupportedProtocolVersion]) -> Arc<ClientConfig> {
    client_offering(verifier, rustls::crypto::aws_lc_rs::default_provider().cipher_suites, versions)
}

/// A client offering `suites`, in that order.
fn client_offering(verifier: Arc<AnyCert>, suites: Vec<SupportedCipherSuite>, versions: &[&'static rustls::SupportedProtocolVersion]) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::CryptoProvider { cipher_suites: suites, ..rustls::crypto::aws_lc_rs::default_provider() });
    let mut c = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(c)
}

/// One handshake in memory; the certificate the server gave, or None if
/// the handshake failed.
fn handshake(server: Arc<ServerConfig>, client: Arc<ClientConfig>, sni: &str) -> Option<CertificateDer<'static>> {
    handshake_suite(server, client, sni).map(|(cert, _)| cert)
}

/// [`handshake`], and the suite the server chose.
fn handshake_suite(server: Arc<ServerConfig>, client: Arc<ClientConfig>, sni: &str) -> Option<(CertificateDer<'static>, rustls::CipherSuite)> {
    let mut s = ServerConnection::new(server).unwrap();
    let mut c = ClientConnection::new(client, ServerName::try_from(sni.to_string()).unwrap()).unwrap();
    for _ in 0..20 {
        let mut buf = Vec::new();
        c.write_tls(&mut buf).unwrap();
        s.read_tls(&mut &buf[..]).unwrap();
        s.process_new_packets().ok()?;
        let mut buf = Vec::new();
        s.write_tls(&mut buf).unwrap();
        c.read_tls(&mut &buf[..]).unwrap();
        c.process_new_packets().ok()?;
        if !c.is_handshaking() && !s.is_handshaking() {
            assert_eq!(s.alpn_protocol(), Some(&b"http/1.1"[..]));
            let suite = s.negotiated_cipher_suite()?.suite();
            return c.peer_certificates().map(|certs| (certs[0].clone().into_owned(), suite));
        }
    }
    None
}

fn first_cert(path: &Path) -> CertificateDer<'static> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_file_iter(path).unwrap().next().unwrap().unwrap()
}

#[test]
fn errors_name_their_lines() {
    let d = Dir::new("errors");
    let good_key = make_key(&d, "good.key", Key::Ec8);
    let good = make_cert(&d, "good.pem", &good_key, false, &["good.test"], -1, 365);
    let other_key = make_key(&d, "other.key", Key::EcSec1);
    let expired = make_cert(&d, "expired.pem", &good_key, false, &["x"], -400, -35);
    let future = make_cert(&d, "future.pem", &good_key, false, &["x"], 10, 400);
    let soon = make_cert(&d, "soon.pem", &good_key, false, &["x"], -300, 10);
    std::fs::write(d.path("garbage.pem"), "not a certificate\n").unwrap();
    let ed448 = make_key(&d, "ed448.key", Key::Ed448);
    let enc = d.path("enc.key");
    openssl(&["pkey", "-in", good_key.to_str().unwrap(), "-aes256", "-passout", "pass:x", "-out", enc.to_str().unwrap()]);
    let conf = format!(
        "Listen 8443\nListen 8444\nListen 8445 https\n\
         <VirtualHost *:8443>\nServerName a\nSSLEngine on\nSSLCertificateFile {good}\nSSLCertificateKeyFile {other}\n</VirtualHost>\n\
         <VirtualHost *:8443>\nServerName b\nSSLEngine on\nSSLCertificateFile {expired}\nSSLCertificateKeyFile {good_key}\n</VirtualHost>\n\
         <VirtualHost *:8443>\nServerName c\nSSLEngine on\nSSLCertificateFile {future}\nSSLCertificateKeyFile {good_key}\n</VirtualHost>\n\
         <VirtualHost *:8443>\nServerName d\nSSLEngine on\nSSLCertificateFile garbage.pem\nSSLCertificateKeyFile {good_key}\n</VirtualHost>\n\
         <VirtualHost *:8444>\nServerName e\nSSLEngine on\nSSLCertificateFile {good}\nSSLCertificateKeyFile {ed448}\nSSLProtocol TLSv1.2\nSSLCipherSuite aNULL:DHE-RSA-AES128-SHA\n</VirtualHost>\n\
         <VirtualHost *:8445>\nServerName f\nSSLEngine on\nSSLCertificateFile {good}\nSSLCertificateKeyFile {enc}\n</VirtualHost>\n\
         <VirtualHost *:8445>\nServerName g\nSSLEngine on\nSSLCertificateFile {soon}\nSSLCertificateKeyFile {good_key}\nSSLCipherSuite HIGH:FROB\nSSLUseStapling on\n</VirtualHost>\n",
        good = good.display(),
        other = other_key.display(),
        expired = expired.display(),
        future = future.display(),
        good_key = good_key.display(),
        ed448 = ed448.display(),
        enc = enc.display(),
        soon = soon.display(),
    );
    let s = settings(&d, &conf);
    let errors = ServerTls::new(&s).unwrap_err();
    let conf = d.path("warren.conf").display().to_string();
    let expect = [
        (9, "the private key does not match the certificate"),
        (14, "SSLCertificateFile: the certificate in"),
        (14, "has expired"),
        (20, "is not valid yet"),
        (26, "SSLCertificateFile: no certificate in"),
        (33, "unsupported private key"),
        (35, "SSLCipherSuite and SSLProtocol leave no cipher suite"),
        (41, "is encrypted"),
    ];
    for (line, text) in expect {
        assert!(errors.iter().any(|e| e.starts_with(&format!("{conf}:{line}: ")) && e.contains(text)), "no {line}: {text:?} in {errors:#?}");
    }
    assert_eq!(errors.len(), expect.len() - 1, "{errors:#?}");
    // Without the bad hosts, the warnings: expiring soon, unknown cipher, no OCSP response.
    let s = settings(&d, &format!("Listen 8445 https\n<VirtualHost *:8445>\nServerName g\nSSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\nSSLCipherSuite HIGH:FROB\nSSLUseStapling on\n</VirtualHost>\n", soon.display(), good_key.display()));
    let tls = ServerTls::new(&s).unwrap().unwrap();
    let w = tls.warnings().join("\n");
    assert!(w.contains(":6: SSLCertificateFile: the certificate in") && (w.contains("expires in 9 days") || w.contains("expires in 10 days")), "{w}");
    assert!(w.contains(":8: SSLCipherSuite: unknown ciphers FROB"), "{w}");
    assert!(w.contains(":5: OCSP stapling: no current response for"), "{w}");
    assert!(tls.for_listener("0.0.0.0:8445".parse().unwrap()).is_some());
    assert!(tls.for_listener("0.0.0.0:80".parse().unwrap()).is_none());
}

#[test]
fn no_tls_listener_no_server_tls() {
    let d = Dir::new("plain");
    let s = settings(&d, "Listen 8080\n");
    assert!(ServerTls::new(&s).unwrap().is_none());
}

/// SNI picks the host; no SNI or an unknown name the first; an RSA and an
/// ECDSA certificate in one host go by what the client verifies; key
/// formats PKCS#1, SEC1 and PKCS#8, the key in the certificate's file.
#[test]
fn sni_and_key_types() {
    let d = Dir::new("sni");
    let a_key = make_key(&d, "a.key", Key::Rsa1);
    let a = make_cert(&d, "a.pem", &a_key, true, &["a.test"], -1, 365);
    let b_key = make_key(&d, "b.key", Key::EcSec1);
    let b = make_cert(&d, "b.pem", &b_key, false, &["b.test"], -1, 365);
    let c_rsa_key = make_key(&d, "c-rsa.key", Key::Rsa8);
    let c_rsa = make_cert(&d, "c-rsa.pem", &c_rsa_key, true, &["c.test"], -1, 365);
    let c_ec_key = make_key(&d, "c-ec.key", Key::Ec8);
    let c_ec = make_cert(&d, "c-ec.pem", &c_ec_key, false, &["c.test"], -1, 365);
    // The key after the certificate in one file.
    let c_ec_both = d.path("c-ec-both.pem");
    std::fs::write(&c_ec_both, std::fs::read_to_string(&c_ec).unwrap() + &std::fs::read_to_string(&c_ec_key).unwrap()).unwrap();
    let conf = |strict: &str| {
        format!(
            "Listen 443\n<VirtualHost *:443>\nServerName a.test\nSSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\n{strict}</VirtualHost>\n\
             <VirtualHost *:443>\nServerName b.test\nServerAlias *.b.test\nSSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\n</VirtualHost>\n\
             <VirtualHost *:443>\nServerName c.test\nSSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\nSSLCertificateFile {}\n</VirtualHost>\n",
            a.display(),
            a_key.display(),
            b.display(),
            b_key.display(),
            c_rsa.display(),
            c_rsa_key.display(),
            c_ec_both.display()
        )
    };
    let s = settings(&d, &conf(""));
    let tls = ServerTls::new(&s).unwrap().unwrap();
    assert!(tls.warnings().is_empty(), "{:?}", tls.warnings());
    let server = tls.for_listener("0.0.0.0:443".parse().unwrap()).unwrap();
    for versions in [&[&rustls::version::TLS13][..], &[&rustls::version::TLS12][..]] {
        let all = client(ALL_SCHEMES, versions);
        assert_eq!(handshake(server.clone(), all.clone(), "b.test"), Some(first_cert(&b)));
        assert_eq!(handshake(server.clone(), all.clone(), "www.B.test"), Some(first_cert(&b)));
        assert_eq!(handshake(server.clone(), all.clone(), "a.test"), Some(first_cert(&a)));
        assert_eq!(handshake(server.clone(), all.clone(), "nowhere.test"), Some(first_cert(&a)));
        // An IP address: rustls sends no SNI.
        assert_eq!(handshake(server.clone(), all.clone(), "127.0.0.1"), Some(first_cert(&a)));
        assert_eq!(handshake(server.clone(), all.clone(), "c.test"), Some(first_cert(&c_ec)));
        let rsa_only = client(&[SignatureScheme::RSA_PSS_SHA256, SignatureScheme::RSA_PKCS1_SHA256], versions);
        assert_eq!(handshake(server.clone(), rsa_only, "c.test"), Some(first_cert(&c_rsa)));
    }
    // SSLStrictSNIVHostCheck on in the default host: no SNI, no handshake.
    let s = settings(&d, &conf("SSLStrictSNIVHostCheck on\n"));
    let server = ServerTls::new(&s).unwrap().unwrap().for_listener("0.0.0.0:443".parse().unwrap()).unwrap();
    let all = client(ALL_SCHEMES, &[&rustls::version::TLS13]);
    assert_eq!(handshake(server.clone(), all.clone(), "127.0.0.1"), None);
    assert_eq!(handshake(server, all, "b.test"), Some(first_cert(&b)));
}

/// SSLHonorCipherOrder is On without a line (unlike Apache): a client
/// listing AES-128-GCM first still gets the first of the server's suites
/// it offers, AES-256-GCM, over TLS 1.3 and 1.2; with `SSLHonorCipherOrder
/// off` it gets its own first; an SSLCipherSuite's order is the server's.
#[test]
fn server_cipher_order_by_default() {
    use rustls::crypto::aws_lc_rs::cipher_suite as cs;
    use rustls::CipherSuite as C;
    let d = Dir::new("order");
    let key = make_key(&d, "a.key", Key::Ec8);
    let cert = make_cert(&d, "a.pem", &key, false, &["a.test"], -1, 365);
    let conf = |extra: &str| {
        format!("Listen 443\n{extra}<VirtualHost *:443>\nSSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\n</VirtualHost>\n", cert.display(), key.display())
    };
    // A client that prefers ChaCha20, then AES-256, then AES-128.
    let chacha_first = vec![
        cs::TLS13_CHACHA20_POLY1305_SHA256,
        cs::TLS13_AES_256_GCM_SHA384,
        cs::TLS13_AES_128_GCM_SHA256,
        cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ];
    for (extra, honored, tls13, tls12) in [
        // warren's default order: AES-128-GCM first.
        ("", true, C::TLS13_AES_128_GCM_SHA256, C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256),
        ("SSLHonorCipherOrder off\n", false, C::TLS13_CHACHA20_POLY1305_SHA256, C::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256),
        (
            "SSLCipherSuite AES256:CHACHA20\nSSLCipherSuite TLSv1.3 TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256\n",
            true,
            C::TLS13_AES_256_GCM_SHA384,
            C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        ),
    ] {
        let tls = ServerTls::new(&settings(&d, &conf(extra))).unwrap().unwrap();
        assert!(tls.warnings().is_empty(), "{:?}", tls.warnings());
        let server = tls.for_listener("0.0.0.0:443".parse().unwrap()).unwrap();
        assert_eq!(server.ignore_client_order, honored, "{extra:?}");
        for (version, expected) in [(&rustls::version::TLS13, tls13), (&rustls::version::TLS12, tls12)] {
            let client = client_offering(Arc::new(AnyCert(ALL_SCHEMES.to_vec(), Default::default())), chacha_first.clone(), &[version]);
            let (_, suite) = handshake_suite(server.clone(), client, "a.test").unwrap();
            assert_eq!(suite, expected, "{extra:?}, {version:?}");
        }
    }
}

/// `record` (a ClientHello, in one record) with the suite codes `extra`
/// put first in its list of cipher suites, and its lengths made to match.
fn with_suites_first(record: &[u8], extra: &[u8]) -> Vec<u8> {
    assert!(record[0] == 0x16 && record[5] == 1, "a ClientHello record");
    assert_eq!(record.len(), 5 + usize::from(u16::from_be_bytes([record[3], record[4]])), "one record");
    // Record header (5), handshake header (4), version (2), random (32).
    let session_id = 5 + 4 + 2 + 32;
    let suites = session_id + 1 + usize::from(record[session_id]);
    let grow = |bytes: &mut [u8]| {
        let n = bytes.iter().fold(0usize, |n, b| n << 8 | usize::from(*b)) + extra.len();
        let len = bytes.len();
        bytes.copy_from_slice(&n.to_be_bytes()[std::mem::size_of::<usize>() - len..]);
    };
    let mut out = record.to_vec();
    grow(&mut out[3..5]);
    grow(&mut out[6..9]);
    grow(&mut out[suites..suites + 2]);
    out.splice(suites + 2..suites + 2, extra.iter().copied());
    out
}

/// A TLS 1.2 hello (no supported_versions) that lists TLS 1.3 suites and,
/// for TLS 1.2, only ECDHE-RSA ones (testssl's own hellos are like this)
/// gets the RSA certificate of a host that has both. rustls narrows the
/// client's signature schemes by the suites in common but counts the TLS
/// 1.3 ones, which fit any key: the resolver was given the ECDSA schemes,
/// chose the ECDSA certificate, and the handshake failed for want of a
/// suite.
#[test]
fn tls12_hello_listing_tls13_suites_gets_rsa() {
    use rustls::crypto::aws_lc_rs::cipher_suite as cs;
    let d = Dir::new("rsa12");
    let rsa_key = make_key(&d, "rsa.key", Key::Rsa8);
    let rsa = make_cert(&d, "rsa.pem", &rsa_key, true, &["c.test"], -1, 365);
    let ec_key = make_key(&d, "ec.key", Key::Ec8);
    let ec = make_cert(&d, "ec.pem", &ec_key, false, &["c.test"], -1, 365);
    let s = settings(
        &d,
        &format!(
            "Listen 443\n<VirtualHost *:443>\nServerName c.test\nSSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\n</VirtualHost>\n",
            ec.display(),
            ec_key.display(),
            rsa.display(),
            rsa_key.display()
        ),
    );
    let server = ServerTls::new(&s).unwrap().unwrap().for_listener("0.0.0.0:443".parse().unwrap()).unwrap();
    let verifier = Arc::new(AnyCert(ALL_SCHEMES.to_vec(), Default::default()));
    let client = client_offering(verifier, vec![cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256], &[&rustls::version::TLS12]);
    let mut c = ClientConnection::new(client, ServerName::try_from("c.test").unwrap()).unwrap();
    let mut hello = Vec::new();
    c.write_tls(&mut hello).unwrap();
    // TLS_AES_256_GCM_SHA384, TLS_AES_128_GCM_SHA256.
    let hello = with_suites_first(&hello, &[0x13, 0x02, 0x13, 0x01]);
    let mut srv = ServerConnection::new(server).unwrap();
    srv.read_tls(&mut &hello[..]).unwrap();
    srv.process_new_packets().expect("a handshake");
    assert_eq!(srv.negotiated_cipher_suite().map(|s| s.suite()), Some(rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256));
    // The server's flight up to ServerHelloDone: the client takes the
    // certificate (its Finished would then not match: the hello it sent
    // is not the one it wrote).
    let mut flight = Vec::new();
    srv.write_tls(&mut flight).unwrap();
    c.read_tls(&mut &flight[..]).unwrap();
    c.process_new_packets().unwrap();
    assert_eq!(c.peer_certificates().map(|certs| certs[0].clone()), Some(first_cert(&rsa)));
    // The same hello without the TLS 1.3 suites went right before, too.
    let client = client_offering(Arc::new(AnyCert(ALL_SCHEMES.to_vec(), Default::default())), vec![cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256], &[&rustls::version::TLS12]);
    let server = ServerTls::new(&s).unwrap().unwrap().for_listener("0.0.0.0:443".parse().unwrap()).unwrap();
    assert_eq!(handshake(server, client, "c.test"), Some(first_cert(&rsa)));
}

/// An OCSP response (unsigned: the parent staples what the ACME helper
/// checked) saying "good" until `next_update`, DER.
fn ocsp_response(now: u64, next_update: u64) -> Vec<u8> {
    use der::asn1::{BitString, GeneralizedTime, Null, OctetString};
    use der::Encode;
    use x509_ocsp::*;
    let time = |t: u64| OcspGeneralizedTime(GeneralizedTime::from_unix_duration(std::time::Duration::from_secs(t)).unwrap());
    let sha1 = x509_cert::spki::AlgorithmIdentifierOwned { oid: der::oid::ObjectIdentifier::new_unwrap("1.3.14.3.2.26"), parameters: None };
    let id = CertId { hash_algorithm: sha1.clone(), issuer_name_hash: OctetString::new([1u8; 20]).unwrap(), issuer_key_hash: OctetString::new([2u8; 20]).unwrap(), serial_number: x509_cert::serial_number::SerialNumber::new(&[7]).unwrap() };
    let single = SingleResponse { cert_id: id, cert_status: CertStatus::Good(Null), this_update: time(now - 60), next_update: Some(time(next_update)), single_extensions: None };
    let data = ResponseData { version: Version::V1, responder_id: ResponderId::ByKey(OctetString::new([3u8; 20]).unwrap()), produced_at: time(now - 60), responses: vec![single], response_extensions: None };
    let basic = BasicOcspResponse { tbs_response_data: data, signature_algorithm: sha1, signature: BitString::from_bytes(&[0; 8]).unwrap(), certs: None };
    let bytes = ResponseBytes { response_type: der::oid::ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.48.1.1"), response: OctetString::new(basic.to_der().unwrap()).unwrap() };
    OcspResponse { response_status: OcspResponseStatus::Successful, response_bytes: Some(bytes) }.to_der().unwrap()
}

/// The chain: certificates after the leaf in SSLCertificateFile, then
/// SSLCertificateChainFile's; the OCSP response the ACME helper keeps for
/// the certificate in MDStoreDir/ocsp stapled while current, never once
/// its nextUpdate has passed.
#[test]
fn chain_and_stapling() {
    let d = Dir::new("chain");
    let key = make_key(&d, "a.key", Key::Ec8);
    let leaf = make_cert(&d, "leaf.pem", &key, false, &["a.test"], -1, 365);
    let mid1 = make_cert(&d, "mid1.pem", &key, false, &["mid1"], -1, 365);
    let mid2 = make_cert(&d, "mid2.pem", &key, false, &["mid2"], -1, 365);
    let full = d.path("full.pem");
    std::fs::write(&full, std::fs::read_to_string(&leaf).unwrap() + &std::fs::read_to_string(&mid1).unwrap()).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let id: String = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, first_cert(&full).as_ref()).as_ref()[..16].iter().map(|b| format!("{b:02x}")).collect();
    let stored = d.path("md/ocsp").join(format!("{id}.der"));
    std::fs::create_dir_all(stored.parent().unwrap()).unwrap();
    let s = settings(
        &d,
        &format!(
            "Listen 443\nMDStoreDir md\n<VirtualHost *:443>\nSSLEngine on\nSSLUseStapling on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\nSSLCertificateChainFile {}\n</VirtualHost>\n",
            full.display(),
            key.display(),
            mid2.display()
        ),
    );
    // Expired: not stapled, and said.
    std::fs::write(&stored, ocsp_response(now, now - 1)).unwrap();
    let tls = ServerTls::new(&s).unwrap().unwrap();
    assert!(tls.warnings().iter().any(|w| w.contains("no current response")), "{:?}", tls.warnings());
    let response = ocsp_response(now, now + 3600);
    std::fs::write(&stored, &response).unwrap();
    let tls = ServerTls::new(&s).unwrap().unwrap();
    assert!(tls.warnings().is_empty(), "{:?}", tls.warnings());
    let server = tls.for_listener("0.0.0.0:443".parse().unwrap()).unwrap();
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let verifier = Arc::new(AnyCert(ALL_SCHEMES.to_vec(), Default::default()));
        let mut srv = ServerConnection::new(server.clone()).unwrap();
        let mut c = ClientConnection::new(client_with(verifier.clone(), &[version]), ServerName::try_from("a.test").unwrap()).unwrap();
        while c.is_handshaking() || srv.is_handshaking() {
            let mut buf = Vec::new();
            c.write_tls(&mut buf).unwrap();
            srv.read_tls(&mut &buf[..]).unwrap();
            srv.process_new_packets().unwrap();
            let mut buf = Vec::new();
            srv.write_tls(&mut buf).unwrap();
            c.read_tls(&mut &buf[..]).unwrap();
            c.process_new_packets().unwrap();
        }
        let chain = c.peer_certificates().unwrap();
        assert_eq!(chain.to_vec(), vec![first_cert(&leaf), first_cert(&mid1), first_cert(&mid2)]);
        assert_eq!(*verifier.1.lock().unwrap(), response);
    }
}

/// The server side of one connection over a socket: handshake, "hi", then
/// wait for the client to close.
fn serve(config: Arc<ServerConfig>, mut sock: UnixStream) -> Option<HandshakeKind> {
    let mut s = ServerConnection::new(config).unwrap();
    while s.is_handshaking() {
        s.complete_io(&mut sock).ok()?;
    }
    s.writer().write_all(b"hi").unwrap();
    while s.wants_write() {
        s.complete_io(&mut sock).ok()?;
    }
    let mut rest = Vec::new();
    let _ = sock.read_to_end(&mut rest);
    s.handshake_kind()
}

/// The client side: handshake, read "hi" (and the tickets before it).
fn connect(config: Arc<ClientConfig>, mut sock: UnixStream) -> HandshakeKind {
    let mut c = ClientConnection::new(config, ServerName::try_from("a.test").unwrap()).unwrap();
    let mut got = Vec::new();
    while got.len() < 2 {
        c.complete_io(&mut sock).unwrap();
        let mut buf = [0u8; 16];
        if let Ok(n) = c.reader().read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
    }
    assert_eq!(got, b"hi");
    c.send_close_notify();
    let _ = c.complete_io(&mut sock);
    c.handshake_kind().unwrap()
}

/// A session made with one child resumes on another process (the parent
/// here): through the shared cache, and through tickets.
#[test]
fn sessions_resume_across_processes() {
    use nix::sys::wait::{waitpid, WaitStatus};
    use nix::unistd::{fork, ForkResult};
    let d = Dir::new("resume");
    let key = make_key(&d, "a.key", Key::Ec8);
    let cert = make_cert(&d, "a.pem", &key, false, &["a.test"], -1, 365);
    for (cache, tickets, resumes) in [("shmcb:/x(512000)", "off", true), ("none", "on", true), ("none", "off", false), ("shmcb:/x", "on", true)] {
        let s = settings(
            &d,
            &format!(
                "Listen 443\nSSLSessionCache {cache}\n<VirtualHost *:443>\nSSLEngine on\nSSLSessionTickets {tickets}\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\n</VirtualHost>\n",
                cert.display(),
                key.display()
            ),
        );
        let server = ServerTls::new(&s).unwrap().unwrap().for_listener("0.0.0.0:443".parse().unwrap()).unwrap();
        for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
            let client = client(ALL_SCHEMES, &[version]);
            let (ours, theirs) = UnixStream::pair().unwrap();
            // SAFETY: the child serves one connection and exits.
            match unsafe { fork() }.unwrap() {
                ForkResult::Child => {
                    drop(ours);
                    let ok = serve(server.clone(), theirs) == Some(HandshakeKind::Full);
                    extern "C" {
                        fn _exit(code: i32) -> !;
                    }
                    unsafe { _exit(if ok { 0 } else { 1 }) }
                }
                ForkResult::Parent { child } => {
                    drop(theirs);
                    assert_eq!(connect(client.clone(), ours), HandshakeKind::Full);
                    assert_eq!(waitpid(child, None).unwrap(), WaitStatus::Exited(child, 0));
                }
            }
            let (ours, theirs) = UnixStream::pair().unwrap();
            let server = server.clone();
            let here = std::thread::spawn(move || serve(server, theirs));
            let kind = connect(client, ours);
            assert_eq!(here.join().unwrap(), Some(kind));
            let expected = if resumes { HandshakeKind::Resumed } else { HandshakeKind::Full };
            assert_eq!(kind, expected, "SSLSessionCache {cache}, SSLSessionTickets {tickets}, {version:?}");
        }
    }
}

#[test]
fn names_for_mod_ssl() {
    use rustls::crypto::aws_lc_rs::cipher_suite as cs;
    assert_eq!(warren_tls::protocol_name(rustls::ProtocolVersion::TLSv1_3), "TLSv1.3");
    assert_eq!(warren_tls::protocol_name(rustls::ProtocolVersion::TLSv1_2), "TLSv1.2");
    assert_eq!(warren_tls::cipher_name(cs::TLS13_AES_128_GCM_SHA256), "TLS_AES_128_GCM_SHA256");
    assert_eq!(warren_tls::cipher_name(cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256), "ECDHE-RSA-CHACHA20-POLY1305");
    assert_eq!(warren_tls::cipher_bits(cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256), 128);
    assert_eq!(warren_tls::cipher_bits(cs::TLS13_CHACHA20_POLY1305_SHA256), 256);
}

/// `openssl s_client -reconnect` resumes, over TLS 1.2 and 1.3, with the
/// shared cache and tickets off (Debian's ssl.conf), and with tickets and
/// no cache.
#[test]
fn openssl_s_client_reconnect_resumes() {
    let d = Dir::new("sclient");
    let key = make_key(&d, "a.key", Key::Ec8);
    let cert = make_cert(&d, "a.pem", &key, false, &["a.test"], -1, 365);
    for (cache, tickets) in [("shmcb:/x(512000)", "off"), ("none", "on")] {
        let s = settings(
            &d,
            &format!(
                "Listen 443\nSSLSessionCache {cache}\n<VirtualHost *:443>\nSSLEngine on\nSSLSessionTickets {tickets}\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\n</VirtualHost>\n",
                cert.display(),
                key.display()
            ),
        );
        let server = ServerTls::new(&s).unwrap().unwrap().for_listener("0.0.0.0:443".parse().unwrap()).unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for sock in listener.incoming().flatten() {
                let server = server.clone();
                std::thread::spawn(move || {
                    let mut sock = sock;
                    let _ = sock.set_read_timeout(Some(std::time::Duration::from_secs(5)));
                    let mut s = ServerConnection::new(server).unwrap();
                    while s.is_handshaking() {
                        if s.complete_io(&mut sock).is_err() {
                            return;
                        }
                    }
                    while s.wants_write() {
                        if s.complete_io(&mut sock).is_err() {
                            return;
                        }
                    }
                    let _ = s.complete_io(&mut sock);
                });
            }
        });
        let s_client = |args: &[&str], wait: bool| {
            let mut child = Command::new("openssl")
                .args(["s_client", "-connect", &format!("127.0.0.1:{port}"), "-servername", "a.test"])
                .args(args)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("openssl s_client");
            if wait {
                // Long enough to read the tickets sent after the handshake.
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
            drop(child.stdin.take());
            let out = child.wait_with_output().unwrap();
            String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.starts_with("New,") || l.starts_with("Reused,")).map(String::from).collect::<Vec<_>>()
        };
        // TLS 1.2: -reconnect (5 reconnections).
        let lines = s_client(&["-tls1_2", "-reconnect"], false);
        assert_eq!(lines.iter().filter(|l| l.starts_with("Reused, TLSv1.2")).count(), 5, "SSLSessionCache {cache}, SSLSessionTickets {tickets}: {lines:?}");
        // TLS 1.3: s_client -reconnect does not wait for the tickets, which
        // come after the handshake: a saved session, used again.
        let sess = d.path("session");
        let lines = s_client(&["-tls1_3", "-sess_out", sess.to_str().unwrap()], true);
        assert!(lines[0].starts_with("New, TLSv1.3"), "{lines:?}");
        let lines = s_client(&["-tls1_3", "-sess_in", sess.to_str().unwrap()], false);
        assert!(lines[0].starts_with("Reused, TLSv1.3"), "SSLSessionCache {cache}, SSLSessionTickets {tickets}: {lines:?}");
    }
}

/// The ALPN protocol a handshake agrees, for a client offering `offer`
/// (Err: the handshake failed).
fn agreed(server: Arc<ServerConfig>, offer: &[&[u8]]) -> Result<Option<Vec<u8>>, rustls::Error> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut c = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCert(ALL_SCHEMES.to_vec(), Default::default())))
        .with_no_client_auth();
    c.alpn_protocols = offer.iter().map(|p| p.to_vec()).collect();
    let mut s = ServerConnection::new(server).unwrap();
    let mut c = ClientConnection::new(Arc::new(c), ServerName::try_from("a.test").unwrap()).unwrap();
    while c.is_handshaking() || s.is_handshaking() {
        let mut buf = Vec::new();
        c.write_tls(&mut buf).unwrap();
        s.read_tls(&mut &buf[..]).unwrap();
        let server_result = s.process_new_packets();
        let mut buf = Vec::new();
        s.write_tls(&mut buf).unwrap();
        server_result?;
        c.read_tls(&mut &buf[..]).unwrap();
        c.process_new_packets()?;
    }
    assert_eq!(c.alpn_protocol(), s.alpn_protocol());
    Ok(s.alpn_protocol().map(<[u8]>::to_vec))
}

/// ALPN offers h2 when Protocols allows it, in Protocols' order (rustls
/// agrees the first of the server's list the client offers); http/1.1
/// only by default, as before.
#[test]
fn alpn_offers_h2_as_protocols_says() {
    let d = Dir::new("alpn");
    let key = make_key(&d, "a.key", Key::Ec8);
    let cert = make_cert(&d, "a.pem", &key, false, &["a.test"], -1, 365);
    let server = |extra: &str| {
        let s = settings(&d, &format!("LoadModule http2_module mod_http2.so\nListen 443\n<VirtualHost *:443>\nServerName a.test\nSSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\n{extra}</VirtualHost>\n", cert.display(), key.display()));
        ServerTls::new(&s).unwrap().unwrap().for_listener("0.0.0.0:443".parse().unwrap()).unwrap()
    };
    let (h2, h1): (&[u8], &[u8]) = (b"h2", b"http/1.1");
    let default = server("");
    assert_eq!(default.alpn_protocols, vec![h1.to_vec()]);
    assert_eq!(agreed(default.clone(), &[h2, h1]).unwrap(), Some(h1.to_vec()));
    assert!(agreed(default, &[h2]).is_err(), "h2 alone must not be agreed by default");
    let on = server("Protocols h2 http/1.1\n");
    assert_eq!(on.alpn_protocols, vec![h2.to_vec(), h1.to_vec()]);
    assert_eq!(agreed(on.clone(), &[h2, h1]).unwrap(), Some(h2.to_vec()));
    // The server's order wins over the client's.
    assert_eq!(agreed(on.clone(), &[h1, h2]).unwrap(), Some(h2.to_vec()));
    assert_eq!(agreed(on.clone(), &[h1]).unwrap(), Some(h1.to_vec()));
    assert_eq!(agreed(on, &[]).unwrap(), None);
    // http/1.1 preferred, and the preference honoured: h2 only for
    // clients that offer nothing else.
    let later = server("Protocols http/1.1 h2\n");
    assert_eq!(agreed(later.clone(), &[h2, h1]).unwrap(), Some(h1.to_vec()));
    assert_eq!(agreed(later, &[h2]).unwrap(), Some(h2.to_vec()));
    // Not honoured: the client's order, which rustls cannot follow, so h2
    // goes first as clients ask for it first.
    let client_order = server("Protocols http/1.1 h2\nProtocolsHonorOrder off\n");
    assert_eq!(agreed(client_order, &[h2, h1]).unwrap(), Some(h2.to_vec()));
}
