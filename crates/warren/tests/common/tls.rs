//! TLS for the tests: a test CA and certificates made with the `openssl`
//! command, `openssl s_client` as a client, and a TLS-terminating relay
//! (a plain loopback port whose connections are carried over TLS to
//! warren's port) so that suites written for plain HTTP run over TLS.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Runs `openssl` with `args` in `dir`; panics with its stderr if it fails.
pub fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").args(args).current_dir(dir).stdin(Stdio::null()).output().expect("run openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The kind of key of a certificate.
#[derive(Clone, Copy, Debug)]
pub enum Key {
    EcdsaP256,
    Rsa2048,
}

/// The test certificates of one test directory, in `DIR/tls/`: a CA
/// (`ca.pem`), and leaf certificates signed by it, each `NAME.pem` with
/// its key `NAME.key`: `a` for a.test (ECDSA P-256), `b` for b.test (RSA
/// 2048), `localhost` for localhost and 127.0.0.1 (ECDSA P-256).
pub struct Certs {
    pub dir: PathBuf,
}

impl Certs {
    /// Makes them (once per directory: an existing set is reused).
    pub fn make(test_dir: &Path) -> Certs {
        let dir = test_dir.join("tls");
        let certs = Certs { dir: dir.clone() };
        if dir.join("localhost.pem").exists() {
            return certs;
        }
        std::fs::create_dir_all(&dir).unwrap();
        openssl(
            &dir,
            &["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "30", "-subj", "/CN=warren test CA"],
        );
        certs.leaf("a", Key::EcdsaP256, "a.test", "DNS:a.test");
        certs.leaf("b", Key::Rsa2048, "b.test", "DNS:b.test");
        certs.leaf("localhost", Key::EcdsaP256, "localhost", "DNS:localhost,IP:127.0.0.1");
        certs
    }

    /// Makes (or makes again, with a new key and serial) `NAME.pem` and
    /// `NAME.key`: CN `cn`, subjectAltName `san`, signed by the test CA.
    pub fn leaf(&self, name: &str, key: Key, cn: &str, san: &str) {
        let newkey: &[&str] = match key {
            Key::EcdsaP256 => &["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
            Key::Rsa2048 => &["-newkey", "rsa:2048"],
        };
        let (csr, ext) = (format!("{name}.csr"), format!("{name}.ext"));
        std::fs::write(self.dir.join(&ext), format!("subjectAltName={san}\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n")).unwrap();
        let (key_tmp, pem_tmp) = (format!("{name}.key.new"), format!("{name}.pem.new"));
        let mut args = vec!["req", "-nodes"];
        args.extend_from_slice(newkey);
        let subj = format!("/CN={cn}");
        args.extend_from_slice(&["-keyout", &key_tmp, "-out", &csr, "-subj", &subj]);
        openssl(&self.dir, &args);
        openssl(&self.dir, &["x509", "-req", "-in", &csr, "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", &serial(), "-days", "30", "-extfile", &ext, "-out", &pem_tmp]);
        // Both replaced by renames: a reader sees the old pair or the new one's files.
        std::fs::rename(self.dir.join(&key_tmp), self.key(name)).unwrap();
        std::fs::rename(self.dir.join(&pem_tmp), self.cert(name)).unwrap();
    }

    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }
    pub fn cert(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.pem"))
    }
    pub fn key(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.key"))
    }

    /// `SSLEngine on` and the certificate lines for `name`.
    pub fn directives(&self, name: &str) -> String {
        format!("SSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\n", self.cert(name).display(), self.key(name).display())
    }
}

/// A serial number of its own for each certificate made.
fn serial() -> String {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    format!("{}", (t >> 8) ^ N.fetch_add(1, Ordering::SeqCst) ^ (std::process::id() as u64) << 40)
}

/// Runs `openssl s_client -connect 127.0.0.1:PORT` with `args`, writing
/// `input` then closing its stdin; at most 20 s. Returns stdout and stderr.
pub fn s_client(port: u16, args: &[&str], input: &str) -> String {
    let mut child = Command::new("timeout")
        .args(["20", "openssl", "s_client", "-connect"])
        .arg(format!("127.0.0.1:{port}"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run openssl s_client");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The subject's CN of the certificate the server presents to `s_client
/// -servername sni` (None: no SNI).
pub fn served_cn(port: u16, sni: Option<&str>) -> String {
    let mut args = vec![];
    match sni {
        Some(n) => args.extend_from_slice(&["-servername", n]),
        None => args.push("-noservername"),
    }
    let out = s_client(port, &args, "");
    subject_cn(&out).unwrap_or_else(|| panic!("no certificate subject in s_client's output:\n{out}"))
}

/// The CN of the `subject=` line of s_client's output.
pub fn subject_cn(out: &str) -> Option<String> {
    let line = out.lines().find(|l| l.starts_with("subject="))?;
    let cn = line.split("CN").nth(1)?.trim_start_matches([' ', '=']).split(',').next()?.trim();
    Some(cn.to_string())
}

/// A rustls client configuration trusting the test CA `ca` (only).
pub fn client_config(ca: &Path) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(ca).unwrap();
    for cert in rustls_pemfile_certs(&pem) {
        roots.add(cert).unwrap();
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions().unwrap().with_root_certificates(roots).with_no_client_auth();
    Arc::new(config)
}

/// A TLS-terminating relay: connections to `port` (plain, 127.0.0.1) are
/// carried over TLS (no SNI, the test CA trusted) to warren's TLS port.
/// Each client connection has its own connection to warren; a client's
/// half-close becomes a close_notify, warren's close the client's EOF.
pub struct Relay {
    pub port: u16,
    stop: Arc<AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Relay {
    pub fn start(target: u16, ca: &Path) -> Relay {
        let config = client_config(ca);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let accept = std::thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let config = config.clone();
                        let stop = stop2.clone();
                        std::thread::spawn(move || relay_one(client, target, config, stop));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        poll(&[(listener.as_raw_fd(), libc::POLLIN)], 50);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Relay { port, stop, accept: Some(accept) }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
    }
}

/// The certificates of a PEM file (enough of PEM for the test CA).
fn rustls_pemfile_certs(pem: &[u8]) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem).map(|c| c.unwrap()).collect()
}

/// poll(2) on `fds` for `ms`; the revents of each.
fn poll(fds: &[(i32, i16)], ms: i32) -> Vec<i16> {
    let mut p: Vec<libc::pollfd> = fds.iter().map(|&(fd, events)| libc::pollfd { fd, events, revents: 0 }).collect();
    // SAFETY: p is a valid array of pollfd of this length.
    let n = unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) };
    if n < 0 {
        return vec![0; fds.len()];
    }
    p.iter().map(|x| x.revents).collect()
}

fn relay_one(mut client: TcpStream, target: u16, config: Arc<rustls::ClientConfig>, stop: Arc<AtomicBool>) {
    let Ok(mut server) = TcpStream::connect(("127.0.0.1", target)) else {
        return;
    };
    let name = rustls::pki_types::ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into());
    let mut tls = rustls::ClientConnection::new(config, name).unwrap();
    let mut client_eof = false;
    let mut buf = vec![0u8; 65536];
    // Bounded: a relayed connection lives at most 120 s.
    let until = std::time::Instant::now() + Duration::from_secs(120);
    let result = (|| -> std::io::Result<()> {
        loop {
            while tls.wants_write() {
                tls.write_tls(&mut server)?;
            }
            if stop.load(Ordering::SeqCst) || std::time::Instant::now() > until {
                return Ok(());
            }
            let client_events = if client_eof || tls.is_handshaking() { 0 } else { libc::POLLIN };
            let r = poll(&[(server.as_raw_fd(), libc::POLLIN), (client.as_raw_fd(), client_events)], 100);
            if r[0] & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                let n = tls.read_tls(&mut server)?;
                let state = tls.process_new_packets();
                // Alerts the error produced go out before the end.
                while tls.wants_write() {
                    let _ = tls.write_tls(&mut server);
                }
                let state = state.map_err(std::io::Error::other)?;
                if state.plaintext_bytes_to_read() > 0 {
                    let mut plain = vec![0u8; state.plaintext_bytes_to_read()];
                    tls.reader().read_exact(&mut plain)?;
                    client.write_all(&plain)?;
                }
                if n == 0 || state.peer_has_closed() {
                    // warren is done: the client reads the end.
                    return Ok(());
                }
            }
            if r[1] & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                match client.read(&mut buf) {
                    Ok(0) | Err(_) => {
                        client_eof = true;
                        tls.send_close_notify();
                    }
                    Ok(n) => tls.writer().write_all(&buf[..n])?,
                }
            }
        }
    })();
    let _ = result;
    let _ = client.shutdown(Shutdown::Write);
    // What the client still sends is read and dropped until it closes
    // (closing with unread data would reset the connection, losing what
    // it had not read yet), for at most 10 s.
    let _ = client.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = server.shutdown(Shutdown::Both);
    while matches!(client.read(&mut buf), Ok(n) if n > 0) {}
}
