//! A CA of a test's own for OCSP stapling: made with `openssl`, its
//! certificate for a.test naming `openssl ocsp` (run by the test on a
//! loopback port, answering from an index file) in its Authority
//! Information Access.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::tls::openssl;
use super::{free_port, Server, TempDir};

/// A server (test directory `TAG-MPM`) with MDStapling on and no managed
/// domain (the certificate is one of "the others", as mod_md's
/// MDStapleOthers) serving a.test with a certificate of a new OcspCa:
/// (server, CA, HTTPS port).
pub fn stapling_server(mpm: &str, tag: &str) -> (Server, OcspCa, u16) {
    let dir = TempDir::new(&format!("{tag}-{mpm}"));
    super::standard_site(&dir);
    let ca = OcspCa::make(&dir.0, free_port(), "DNS:a.test");
    let https = free_port();
    let conf = format!("Listen 127.0.0.1:{https}\nMDStapling on\nMDStoreDir md\n<VirtualHost *:{https}>\nServerName a.test\n{}</VirtualHost>\n", ca.directives());
    (Server::start_in(dir, mpm, &conf), ca, https)
}

/// The test's CA, a certificate for a.test naming the responder on
/// `port`, and the responder's index file.
pub struct OcspCa {
    pub dir: PathBuf,
    pub port: u16,
}

impl OcspCa {
    /// `san`: the certificate's subjectAltName (openssl's syntax).
    pub fn make(test_dir: &Path, port: u16, san: &str) -> OcspCa {
        let dir = test_dir.join("ocspca");
        std::fs::create_dir_all(&dir).unwrap();
        openssl(&dir, &["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "30", "-subj", "/CN=warren OCSP test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"]);
        std::fs::write(dir.join("leaf.ext"), format!("subjectAltName={san}\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\nauthorityInfoAccess=OCSP;URI:http://127.0.0.1:{port}/\n")).unwrap();
        openssl(&dir, &["req", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-keyout", "a.key", "-out", "a.csr", "-subj", "/CN=a.test"]);
        openssl(&dir, &["x509", "-req", "-in", "a.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "0x5eed", "-days", "30", "-extfile", "leaf.ext", "-out", "leaf.pem"]);
        // The served file: the certificate, then its issuer (the chain).
        let chain = std::fs::read_to_string(dir.join("leaf.pem")).unwrap() + &std::fs::read_to_string(dir.join("ca.pem")).unwrap();
        std::fs::write(dir.join("a.pem"), chain).unwrap();
        let ca = OcspCa { dir, port };
        ca.set_status(false);
        ca
    }

    /// The index `openssl ocsp` answers from: the certificate valid or revoked.
    pub fn set_status(&self, revoked: bool) {
        let line = if revoked { "R\t361231000000Z\t261101000000Z,keyCompromise\t5EED\tunknown\t/CN=a.test\n" } else { "V\t361231000000Z\t\t5EED\tunknown\t/CN=a.test\n" };
        std::fs::write(self.dir.join("index.txt"), line).unwrap();
    }

    /// Starts the responder (answers valid 10 minutes) and waits until it listens.
    pub fn responder(&self) -> Child {
        self.responder_signing_with("ca.pem", "ca.key")
    }

    /// The responder signing its answers with `cert` and `key` (files in
    /// the CA's directory): a forger's, for the attack tests.
    pub fn responder_signing_with(&self, cert: &str, key: &str) -> Child {
        self.responder_with(cert, key, 10)
    }

    /// The responder signing with `cert` and `key`, its answers good for `minutes`.
    pub fn responder_with(&self, cert: &str, key: &str, minutes: u32) -> Child {
        let log = std::fs::File::create(self.dir.join("responder.log")).unwrap();
        let child = Command::new("openssl")
            // (It binds the port on every address: -port takes no host.)
            .args(["ocsp", "-index", "index.txt", "-port"])
            .arg(self.port.to_string())
            .args(["-rsigner", cert, "-rkey", key, "-CA", "ca.pem", "-nmin", &minutes.to_string(), "-ignore_err"])
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("run openssl ocsp");
        // Its log says when it listens: a probe connection closed unused
        // would hang OpenSSL 3.0's one-at-a-time responder for good.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(self.dir.join("responder.log")).unwrap_or_default().contains("waiting for OCSP client connections") {
            assert!(Instant::now() < deadline, "openssl ocsp did not listen within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        child
    }

    pub fn directives(&self) -> String {
        format!("SSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\n", self.dir.join("a.pem").display(), self.dir.join("a.key").display())
    }
}

