//! A CA of a test's own for OCSP stapling: made with `openssl`, its
//! certificate for a.test naming `openssl ocsp` (run by the test on a
//! loopback port, answering from an index file) in its Authority
//! Information Access.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::tls::openssl;
use super::{free_port, free_port_to_bind_later, Server, TempDir};

/// A server (test directory `TAG-MPM`) with MDStapling on and no managed
/// domain (the certificate is one of "the others", as mod_md's
/// MDStapleOthers) serving a.test with a certificate of a new OcspCa:
/// (server, CA, HTTPS port).
pub fn stapling_server(mpm: &str, tag: &str) -> (Server, OcspCa, u16) {
    let dir = TempDir::new(&format!("{tag}-{mpm}"));
    super::standard_site(&dir);
    let ca = OcspCa::make(&dir.0, free_port_to_bind_later(), "DNS:a.test");
    let https = free_port();
    let conf = format!("Listen 127.0.0.1:{https}\nMDStapling on\nMDStoreDir md\n<VirtualHost *:{https}>\nServerName a.test\n{}</VirtualHost>\n", ca.directives());
    (Server::start_in(dir, mpm, &conf), ca, https)
}

/// As [`stapling_server`], the certificate naming no OCSP responder but
/// a CRL (`scheme`: http, or https with the test's localhost certificate
/// of [`super::tls::Certs`]), whose server is started before warren
/// (after `before_start` got the CA and gave configuration lines):
/// (server, CA, HTTPS port, CRL server).
pub fn crl_stapling_server(mpm: &str, tag: &str, scheme: &str, before_start: impl FnOnce(&OcspCa, &TempDir) -> String) -> (Server, OcspCa, u16, Child) {
    let dir = TempDir::new(&format!("{tag}-{mpm}"));
    super::standard_site(&dir);
    let ca = OcspCa::make_naming(&dir.0, free_port_to_bind_later(), "DNS:a.test", &format!("crlDistributionPoints=URI:{scheme}://127.0.0.1:{{port}}/ca.crl"));
    let extra = before_start(&ca, &dir);
    let server = if scheme == "https" {
        let certs = super::tls::Certs::make(&dir.0);
        ca.crl_server_over(Some((&certs.cert("localhost"), &certs.key("localhost"))))
    } else {
        ca.crl_server()
    };
    let https = free_port();
    let conf = format!("Listen 127.0.0.1:{https}\nMDStapling on\nMDStoreDir md\n{extra}\n<VirtualHost *:{https}>\nServerName a.test\n{}</VirtualHost>\n", ca.directives());
    (Server::start_in(dir, mpm, &conf), ca, https, server)
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
        Self::make_naming(test_dir, port, san, "authorityInfoAccess=OCSP;URI:http://127.0.0.1:{port}/")
    }

    /// A CA whose certificate names no OCSP responder but a CRL at
    /// `http://127.0.0.1:PORT/ca.crl` (as Let's Encrypt's since 2025),
    /// served by [`OcspCa::crl_server`] once [`OcspCa::publish_crl`] made it.
    pub fn make_with_crl(test_dir: &Path, port: u16, san: &str) -> OcspCa {
        Self::make_naming(test_dir, port, san, "crlDistributionPoints=URI:http://127.0.0.1:{port}/ca.crl")
    }

    /// `revocation`: the leaf's extension line naming where its status is
    /// ("{port}" stands for `port`).
    fn make_naming(test_dir: &Path, port: u16, san: &str, revocation: &str) -> OcspCa {
        let revocation = revocation.replace("{port}", &port.to_string());
        let dir = test_dir.join("ocspca");
        std::fs::create_dir_all(&dir).unwrap();
        openssl(&dir, &["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "30", "-subj", "/CN=warren OCSP test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"]);
        std::fs::write(dir.join("leaf.ext"), format!("subjectAltName={san}\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n{revocation}\n")).unwrap();
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
            assert!(Instant::now() < deadline, "openssl ocsp did not listen within 10 s: {}", std::fs::read_to_string(self.dir.join("responder.log")).unwrap_or_default());
            std::thread::sleep(Duration::from_millis(20));
        }
        child
    }

    /// `openssl ca -gencrl` from the index ([`OcspCa::set_status`]),
    /// signed with `cert` and `key` (the CA's, or a forger's certificate
    /// with the CA's name), good for a day, written (DER) where
    /// [`OcspCa::crl_server`] serves it.
    pub fn publish_crl(&self, cert: &str, key: &str) {
        std::fs::write(self.dir.join("ca.cnf"), "[ca]\ndefault_ca = test\n[test]\ndatabase = index.txt\ncrlnumber = crlnumber\ndefault_md = sha256\ndefault_crl_days = 1\n").unwrap();
        std::fs::write(self.dir.join("crlnumber"), "01\n").unwrap();
        openssl(&self.dir, &["ca", "-config", "ca.cnf", "-cert", cert, "-keyfile", key, "-gencrl", "-out", "ca.crl.pem"]);
        std::fs::create_dir_all(self.dir.join("www")).unwrap();
        openssl(&self.dir, &["crl", "-in", "ca.crl.pem", "-outform", "DER", "-out", "www/ca.crl.new"]);
        std::fs::rename(self.dir.join("www/ca.crl.new"), self.dir.join("www/ca.crl")).unwrap();
    }

    /// A tiny HTTP server (Python's) serving `www/` on the CA's port,
    /// once it answers.
    pub fn crl_server(&self) -> Child {
        self.crl_server_over(None)
    }

    /// [`OcspCa::crl_server`], over TLS with `tls` (certificate, key) if given.
    pub fn crl_server_over(&self, tls: Option<(&Path, &Path)>) -> Child {
        const SERVE: &str = "import functools, http.server, ssl, sys\n\
            d, port = sys.argv[1], int(sys.argv[2])\n\
            s = http.server.ThreadingHTTPServer(('127.0.0.1', port), functools.partial(http.server.SimpleHTTPRequestHandler, directory=d))\n\
            if len(sys.argv) > 3:\n    c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n    c.load_cert_chain(sys.argv[3], sys.argv[4])\n    s.socket = c.wrap_socket(s.socket, server_side=True)\n\
            s.serve_forever()\n";
        std::fs::create_dir_all(self.dir.join("www")).unwrap();
        let mut cmd = Command::new("python3");
        cmd.args(["-c", SERVE]).arg(self.dir.join("www")).arg(self.port.to_string());
        if let Some((cert, key)) = tls {
            cmd.arg(cert).arg(key);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run python3 -m http.server");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "the CRL server did not listen within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        child
    }

    pub fn directives(&self) -> String {
        format!("SSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\n", self.dir.join("a.pem").display(), self.dir.join("a.key").display())
    }
}

