//! mod_md against a real ACME CA: Debian's pebble, with
//! pebble-challtestsrv as its DNS (every name is 127.0.0.1), on loopback
//! ports of the test's own. Pebble validates http-01 on warren's plain
//! port; warren trusts pebble's listener through MDCACertificateFile.
//! Under each MPM: the first certificate served within 10 s of start and
//! verified by curl up to pebble's root; renewals (MDRenewWindow 100%:
//! every certificate is due as soon as it is issued) under HTTPS load
//! with no failed request; a CA that goes down (the certificate in use is
//! kept, the retries are logged with their reason and backoff).

mod common;

use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::tls::{s_client, Certs};
use common::{free_port, terminate, Server, TempDir};

/// pebble and its DNS, stopped when dropped.
struct Pebble {
    dns: Option<Child>,
    ca: Option<Child>,
    port: u16,
    management: u16,
    /// pebble-challtestsrv's management API (TXT records for dns-01).
    dns_management: u16,
    /// The test CA that signed pebble's own listener certificate.
    listener_ca: PathBuf,
}

impl Pebble {
    /// Starts pebble validating http-01 on `http_port` and tls-alpn-01 on
    /// `tls_port`, and waits until its directory answers.
    fn start(dir: &Path, http_port: u16, tls_port: u16) -> Pebble {
        let certs = Certs::make(dir);
        let (port, management, dns_port, dns_management) = (free_port(), free_port(), free_port(), free_port());
        let dns = Command::new("pebble-challtestsrv")
            .args(["-defaultIPv4", "127.0.0.1", "-defaultIPv6", "", "-http01", "", "-https01", "", "-tlsalpn01", "", "-dns01"])
            .arg(format!("127.0.0.1:{dns_port}"))
            .arg("-management")
            .arg(format!("127.0.0.1:{dns_management}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run pebble-challtestsrv (Debian's pebble package)");
        let config = dir.join("pebble.json");
        std::fs::write(
            &config,
            format!(
                r#"{{"pebble": {{"listenAddress": "127.0.0.1:{port}", "managementListenAddress": "127.0.0.1:{management}", "certificate": "{}", "privateKey": "{}", "httpPort": {http_port}, "tlsPort": {tls_port}, "ocspResponderURL": "", "externalAccountBindingRequired": false}}}}"#,
                certs.cert("localhost").display(),
                certs.key("localhost").display(),
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join("pebble.log")).unwrap();
        let ca = Command::new("pebble")
            .arg("-config")
            .arg(&config)
            .arg("-dnsserver")
            .arg(format!("127.0.0.1:{dns_port}"))
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_VA_ALWAYS_VALID", "0")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .env("PEBBLE_AUTHZREUSE", "0")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("run pebble");
        let pebble = Pebble { dns: Some(dns), ca: Some(ca), port, management, dns_management, listener_ca: certs.ca() };
        let deadline = Instant::now() + Duration::from_secs(20);
        while [port, management, dns_management].iter().any(|p| TcpStream::connect(("127.0.0.1", *p)).is_err()) {
            assert!(Instant::now() < deadline, "pebble did not listen within 20 s: {}", std::fs::read_to_string(dir.join("pebble.log")).unwrap_or_default());
            std::thread::sleep(Duration::from_millis(20));
        }
        pebble
    }

    fn directory(&self) -> String {
        format!("https://127.0.0.1:{}/dir", self.port)
    }

    /// Pebble's issuing root (made anew at each start), written to `to`.
    fn root(&self, to: &Path) {
        let out = Command::new("curl").args(["-sf", "--cacert"]).arg(&self.listener_ca).arg(format!("https://127.0.0.1:{}/roots/0", self.management)).output().unwrap();
        assert!(out.status.success() && out.stdout.starts_with(b"-----BEGIN CERTIFICATE"), "pebble's root: {}", String::from_utf8_lossy(&out.stderr));
        std::fs::write(to, out.stdout).unwrap();
    }

    fn stop(&mut self) {
        for c in [self.ca.take(), self.dns.take()].into_iter().flatten() {
            terminate(c, Duration::from_secs(5));
        }
    }
}

impl Drop for Pebble {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The configuration for a.test and `alias` managed by MD with
/// `pebble`, on `http` (for http-01) and `https`.
fn md_config(pebble: &Pebble, http: u16, https: u16, alias: &str, extra: &str) -> String {
    format!(
        "Listen 127.0.0.1:{http}\nListen 127.0.0.1:{https}\nMDomain a.test {alias}\nMDCertificateAuthority {}\nMDCACertificateFile {}\nMDContactEmail admin@a.test\nMDCertificateAgreement accepted\nMDStoreDir md\nMDRetryDelay 1s\n{extra}\n<VirtualHost *:{http}>\nServerName a.test\nServerAlias {alias}\n</VirtualHost>\n<VirtualHost *:{https}>\nServerName a.test\nServerAlias {alias}\nSSLEngine on\n</VirtualHost>\n",
        pebble.directory(),
        pebble.listener_ca.display()
    )
}

/// Where pebble validates: warren's ports, only its TLS port, or nowhere.
#[derive(Clone, Copy, PartialEq)]
enum Validation {
    Warren,
    TlsOnly,
    Nowhere,
}

/// A test's pebble and warren managing a.test and `alias` (`extra` gets
/// the test's directory, for files it writes, and pebble): (pebble,
/// warren, http port, https port).
fn start_managed(mpm: &str, tag: &str, validation: Validation, alias: &str, extra: impl FnOnce(&TempDir, &Pebble) -> String) -> (Pebble, Server, u16, u16) {
    let dir = TempDir::new(&format!("acme-{tag}-{mpm}"));
    common::standard_site(&dir);
    let (http, https, nothing) = (free_port(), free_port(), free_port());
    let (pebble_http, pebble_tls) = match validation {
        Validation::Warren => (http, https),
        Validation::TlsOnly => (nothing, https),
        Validation::Nowhere => (nothing, nothing),
    };
    let pebble = Pebble::start(&dir.0, pebble_http, pebble_tls);
    let conf = md_config(&pebble, http, https, alias, &extra(&dir, &pebble));
    let s = Server::start_in(dir, mpm, &conf);
    (pebble, s, http, https)
}

/// The first Pebble certificate, which must come within 10 s.
fn first_certificate(s: &Server, https: u16) -> String {
    wait_pebble_certificate(https, Duration::from_secs(10)).unwrap_or_else(|| panic!("no Pebble certificate within 10 s: {}", s.read_log("error.log")))
}

/// `openssl x509 -noout ARGS` of the certificate served to `s_client
/// CLIENT_ARGS`.
fn served_x509(https: u16, client_args: &[&str], args: &[&str]) -> String {
    use std::io::Write;
    let out = s_client(https, client_args, "");
    let pem_start = out.find("-----BEGIN CERTIFICATE-----").map(|i| &out[i..]).unwrap_or("");
    let mut x509 = Command::new("openssl").args(["x509", "-noout"]).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let _ = x509.stdin.take().unwrap().write_all(pem_start.as_bytes());
    String::from_utf8_lossy(&x509.wait_with_output().unwrap().stdout).into_owned()
}

/// The issuer and serial of the certificate served for a.test.
fn served(https: u16) -> String {
    served_x509(https, &["-servername", "a.test"], &["-issuer", "-serial"])
}

/// Waits (up to `within`) for a Pebble-issued certificate on `https`.
fn wait_pebble_certificate(https: u16, within: Duration) -> Option<String> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let s = served(https);
        if s.contains("Pebble") {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

fn curl_verified(root: &Path, https: u16, path: &str) -> Result<String, String> {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "10", "--cacert"])
        .arg(root)
        .args(["--resolve", &format!("a.test:{https}:127.0.0.1"), "-w", "\n%{http_code}"])
        .arg(format!("https://a.test:{https}{path}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() && text.ends_with("\n200") {
        Ok(text)
    } else {
        Err(format!("curl exit {:?}: {} {}", out.status.code(), text, String::from_utf8_lossy(&out.stderr)))
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).map(|m| m.permissions().mode() & 0o777).unwrap_or(0)
}

fn first_issuance(mpm: &str) {
    let started = Instant::now();
    let extra = |_: &TempDir, _: &Pebble| "MDRequireHttps temporary\n<Location /md-status>\nSetHandler md-status\n</Location>\n<Location /server-status>\nSetHandler server-status\n</Location>".to_string();
    let (pebble, s, http, https) = start_managed(mpm, "first", Validation::Warren, "www.a.test", extra);
    let issued = wait_pebble_certificate(https, Duration::from_secs(10));
    let log = s.read_log("error.log");
    let issued = issued.unwrap_or_else(|| panic!("no Pebble certificate on HTTPS within 10 s of start ({:?}); error.log:\n{log}", started.elapsed()));
    eprintln!("{mpm}: pebble certificate served {:?} after start: {issued}", started.elapsed());
    assert!(log.contains("serving a temporary self-signed one"), "{log}");
    let root = s.dir.0.join("pebble-root.pem");
    pebble.root(&root);
    let page = curl_verified(&root, https, "/index.html").unwrap();
    assert!(page.starts_with("<html>hello</html>"), "{page}");
    let log = s.wait_log("error.log", "graceful restart");
    assert!(log.contains("MDomain a.test: order https://127.0.0.1:") && log.contains("http-01 challenge for a.test ready") && log.contains("http-01 challenge for www.a.test ready"), "{log}");
    // The store: keys, account and certificate the helper's only.
    let md = s.dir.0.join("md");
    for f in ["domains/a.test/privkey.pem", "domains/a.test/pubcert.pem"] {
        assert_eq!(mode(&md.join(f)), 0o600, "{f}");
    }
    assert_eq!(mode(&md.join("domains")), 0o700);
    let accounts: Vec<_> = std::fs::read_dir(md.join("accounts")).unwrap().flatten().collect();
    assert_eq!(accounts.len(), 1);
    assert_eq!(mode(&accounts[0].path()), 0o600);
    // The challenge files are gone once the order is done.
    assert_eq!(std::fs::read_dir(md.join("challenges")).unwrap().flatten().filter(|e| e.path().is_file()).count(), 0);
    // md-status (JSON, as mod_md's) and server-status say so, once the
    // helper has published the new state.
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        let r = s.get("/md-status");
        let complete = r.status == 200 && r.text().contains("\"complete\"");
        if complete || Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.status, 200, "{}", status.text());
    assert_eq!(status.header("content-type"), Some("application/json"));
    let doc: serde_json::Value = serde_json::from_str(&status.text()).unwrap();
    let d = &doc["managed-domains"][0];
    assert_eq!(d["name"], "a.test");
    assert_eq!(d["domains"], serde_json::json!(["a.test", "www.a.test"]));
    assert_eq!(d["state-descr"], "complete");
    assert_eq!(d["renewal"]["errors"], 0);
    assert!(d["cert"]["valid"]["until"].as_str().is_some_and(|u| u.ends_with("GMT")), "{d}");
    let auto = s.get("/server-status?auto").text();
    assert!(auto.contains("MDomain a.test (complete): a.test www.a.test; valid until "), "{auto}");
    let html = s.get("/server-status").text();
    assert!(html.contains("<h2>Managed domains (MD)</h2>") && html.trim_end().ends_with("</html>"), "{html}");
    // MDRequireHttps temporary: plain HTTP for the domain goes to HTTPS
    // once it has its certificate (the graceful restart that took the
    // certificate in re-read the store), except the CA's http-01 path.
    let plain = |path: &str| {
        let out = Command::new("curl").args(["-s", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}", "-H", "Host: www.a.test"]).arg(format!("http://127.0.0.1:{http}{path}")).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    common::settle(|| plain("/a.txt?x=1").starts_with("302 "));
    assert_eq!(plain("/a.txt?x=1"), format!("302 https://www.a.test:{https}/a.txt?x=1"));
    assert_eq!(plain("/.well-known/acme-challenge/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), "404 ");
}

/// Every certificate due as soon as issued: the helper renews again and
/// again, each time a graceful restart, while clients fetch over HTTPS
/// verifying the chain; none may fail.
fn renewal_under_load(mpm: &str) {
    let (pebble, s, _, https) = start_managed(mpm, "renew", Validation::Warren, "www.a.test", |_, _| "MDRenewWindow 100%".into());
    let first = first_certificate(&s, https);
    let root = Arc::new(s.dir.0.join("pebble-root.pem"));
    pebble.root(&root);
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let (stop, root) = (stop.clone(), root.clone());
            std::thread::spawn(move || {
                let (mut ok, mut failed) = (0u32, Vec::new());
                let until = Instant::now() + Duration::from_secs(60);
                while !stop.load(Ordering::SeqCst) && Instant::now() < until {
                    match curl_verified(&root, https, "/a.txt") {
                        Ok(_) => ok += 1,
                        Err(e) => failed.push(e),
                    }
                }
                (ok, failed)
            })
        })
        .collect();
    // Three more certificates, taken in by graceful restarts: the root
    // relay asks the server for at most one each 10 s, merging the changes
    // in between, so wait until it has passed every stored one on.
    let deadline = Instant::now() + Duration::from_secs(60);
    let issued = || s.read_log("error.log").matches("certificate obtained from").count();
    let stored = |log: &str| log.matches("new certificate in the store: graceful restart").count();
    let passed_on = |log: &str| log.lines().filter_map(|l| l.split("the ACME client (pid ").nth(1)?.split("asked for ").nth(1)?.split(' ').next()?.parse::<usize>().ok()).sum::<usize>();
    let all_passed_on = || {
        let log = s.read_log("error.log");
        passed_on(&log) >= stored(&log)
    };
    while !(issued() >= 4 && all_passed_on()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    // The newest certificate is served once the restart's new children are up.
    common::settle(|| served(https) != first);
    let last = served(https);
    stop.store(true, Ordering::SeqCst);
    let (mut ok, mut failed) = (0, Vec::new());
    for c in clients {
        let (o, f) = c.join().unwrap();
        ok += o;
        failed.extend(f);
    }
    let log = s.read_log("error.log");
    assert!(issued() >= 4 && all_passed_on(), "fewer than 4 certificates in 60 s, or not all taken in by a restart ({}):\n{log}", helper_states(&log));
    assert!(log.matches("SIGHUP received: graceful restart").count() >= 2, "{log}");
    // Each certificate is issued inside its window: renewal backs off
    // (MDRetryDelay 1s, doubled) rather than ordering again at once.
    for (n, wait) in [(1, 1), (2, 2), (3, 4)] {
        assert!(log.contains(&format!("issued already inside its renewal window (MDRenewWindow asks more than the CA's lifetime leaves; {n} in a row): next renewal in {wait} s")), "{n}: {log}");
    }
    assert_ne!(first, last, "the certificate served did not change");
    assert!(last.contains("Pebble"), "{last}");
    eprintln!("{mpm}: {} certificates, {ok} HTTPS requests verified, {} failed", issued(), failed.len());
    assert!(ok > 0 && failed.is_empty(), "{} of {} requests failed: {:?}", failed.len(), ok as usize + failed.len(), &failed[..failed.len().min(5)]);
}

/// Renewals, each taken in by a graceful restart, while wrk keeps 20
/// keep-alive HTTPS connections busy: wrk's own counts must show no
/// socket error and no failed answer.
fn renewal_under_wrk(mpm: &str) {
    let (_pebble, s, _, https) = start_managed(mpm, "wrk", Validation::Warren, "www.a.test", |_, _| "MDRenewWindow 100%".into());
    first_certificate(&s, https);
    let issued = || s.read_log("error.log").matches("certificate obtained from").count();
    let before = issued();
    let wrk = Command::new("wrk").args(["-t2", "-c20", "-d60s", "-H", "Host: a.test"]).arg(format!("https://127.0.0.1:{https}/a.txt")).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run wrk (Debian's wrk)");
    // Two more certificates under load, then wrk is stopped (SIGINT: it reports).
    let deadline = Instant::now() + Duration::from_secs(50);
    while issued() < before + 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    common::unsafe_kill(wrk.id(), 2);
    let out = wrk.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let renewed = issued() - before;
    assert!(renewed >= 2, "{renewed} renewals under load:\n{}", s.read_log("error.log"));
    let requests: u64 = report.lines().find(|l| l.contains(" requests in ")).and_then(|l| l.split_whitespace().next()).and_then(|n| n.parse().ok()).unwrap_or(0);
    eprintln!("{mpm}: {renewed} renewals under wrk -c20: {requests} requests\n{report}");
    assert!(requests > 0, "{report}");
    assert!(!report.contains("Socket errors") && !report.contains("Non-2xx"), "failures under renewal:\n{report}");
}

/// A "CA" whose directory is garbage (a small python HTTPS server): the
/// order fails with the reason, is retried with backoff, and the
/// temporary certificate is served meanwhile.
fn a_malformed_ca_answer_is_retried(mpm: &str) {
    let dir = TempDir::new(&format!("acme-garbage-{mpm}"));
    common::standard_site(&dir);
    let certs = Certs::make(&dir.0);
    let (http, https, ca_port) = (free_port(), free_port(), free_port());
    let server = "import http.server, ssl, sys\nclass H(http.server.BaseHTTPRequestHandler):\n    def answer(self):\n        body = b'{\"newNonce\": [1, 2' + b'\\x00\\xff garbage'\n        self.send_response(200)\n        self.send_header('Content-Type', 'application/json')\n        self.send_header('Content-Length', str(len(body)))\n        self.end_headers()\n        self.wfile.write(body)\n    do_GET = do_POST = do_HEAD = answer\n    def log_message(self, *a): pass\nsrv = http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H)\nctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\nctx.load_cert_chain(sys.argv[2], sys.argv[3])\nsrv.socket = ctx.wrap_socket(srv.socket, server_side=True)\nsrv.serve_forever()\n";
    let ca = Command::new("python3").arg("-c").arg(server).arg(ca_port.to_string()).arg(certs.cert("localhost")).arg(certs.key("localhost")).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("python3");
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", ca_port)).is_err() {
        assert!(Instant::now() < deadline, "the python CA did not listen within 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let conf = format!(
        "Listen 127.0.0.1:{http}\nListen 127.0.0.1:{https}\nMDomain a.test\nMDCertificateAuthority https://127.0.0.1:{ca_port}/dir\nMDCACertificateFile {}\nMDContactEmail admin@a.test\nMDCertificateAgreement accepted\nMDStoreDir md\nMDRetryDelay 1s\n<VirtualHost *:{http}>\nServerName a.test\n</VirtualHost>\n<VirtualHost *:{https}>\nServerName a.test\nSSLEngine on\n</VirtualHost>\n",
        certs.ca().display()
    );
    let s = Server::start_in(dir, mpm, &conf);
    let log = s.wait_log("error.log", "renewal failed (2 in a row)");
    let line = log.lines().find(|l| l.contains("renewal failed (1 in a row)")).unwrap_or_else(|| panic!("{log}"));
    // The reason: the directory is no JSON the client can read.
    assert!(line.contains(&format!("https://127.0.0.1:{ca_port}/dir: failed to (de)serialize JSON")) && line.contains("a temporary self-signed certificate is served meanwhile; next try in 1 s"), "{line}");
    assert!(log.contains("next try in 2 s"), "{log}");
    assert!(served(https).contains("temporary certificate for a.test"), "{}", served(https));
    assert!(!s.dir.0.join("md/domains/a.test/pubcert.pem").exists());
    eprintln!("{mpm}: {line}");
    terminate(ca, Duration::from_secs(5));
}

/// The CA goes away after the first certificate: renewals fail, are
/// logged with their reason and retried with a growing delay, and the
/// certificate in use stays served.
fn ca_down_keeps_the_certificate(mpm: &str) {
    // Due again at once: renewals go on until the CA has gone.
    let (mut pebble, s, _, https) = start_managed(mpm, "down", Validation::Warren, "www.a.test", |_, _| "MDRenewWindow 100%".into());
    let first = first_certificate(&s, https);
    let root = s.dir.0.join("pebble-root.pem");
    pebble.root(&root);
    pebble.stop();
    let log = s.wait_log("error.log", "renewal failed (3 in a row)");
    assert!(log.contains("renewal failed (1 in a row)") && log.contains("the certificate in use is kept; next try in 1 s"), "{log}");
    assert!(log.contains("(2 in a row)") && log.contains("next try in 2 s") && log.contains("next try in 4 s"), "backoff: {log}");
    // What failed is said (a refused connection to the directory).
    let line = log.lines().find(|l| l.contains("renewal failed (3 in a row)")).unwrap();
    assert!(line.contains("127.0.0.1:") || line.contains("connect"), "{line}");
    let still = served(https);
    // Between the first certificate and the CA's going, a renewal may
    // have succeeded: the certificate served is still pebble's either way.
    assert!(still.contains("Pebble"), "not pebble's any more: {still} (first: {first})");
    curl_verified(&root, https, "/a.txt").unwrap();
}

/// A line of /proc/PID/status, e.g. "Uid".
fn proc_status(pid: u32, field: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix(&format!("{field}:"))).map(|v| v.split_whitespace().collect::<Vec<_>>().join(" ")).unwrap_or_default()
}

/// What the relay and the ACME client named in `log` are doing now (their
/// state and where the kernel holds them), for a failure's message.
fn helper_states(log: &str) -> String {
    let pid_after = |marker: &str| log.split(marker).nth(1).and_then(|r| r.split(')').next()).and_then(|p| p.parse::<u32>().ok());
    [("relay", pid_after("ACME helper (pid ")), ("client", pid_after("relays for the ACME client (pid "))]
        .iter()
        .map(|(who, pid)| match pid {
            Some(pid) => format!("{who} {pid}: {} in {}", proc_status(*pid, "State"), std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default()),
            None => format!("{who}: not in the log"),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The inodes of the sockets listening on this machine (TCP, v4 and v6).
fn listening_socket_inodes() -> Vec<String> {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().flat_map(|f| std::fs::read_to_string(f).unwrap_or_default().lines().skip(1).filter_map(|l| {
        let cols: Vec<&str> = l.split_whitespace().collect();
        (cols.get(3) == Some(&"0A")).then(|| cols[9].to_string())
    }).collect::<Vec<_>>()).collect()
}

fn id_of(flag: &str, name: &str) -> String {
    let out = Command::new("id").args([flag, name]).output().unwrap();
    assert!(out.status.success(), "id {flag} {name}: is the {name} account there? (test.sh makes it)");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The ACME client does not keep root: it runs as the warren-acme
/// account (its real, effective and saved ids), in a session of its own,
/// with no_new_privs, umask 077, none of the server's listening sockets,
/// and root cannot come back; the keys it writes are its own (0600 in
/// 0700 directories), which the children's User (nobody here) cannot read.
fn helper_drops_root(mpm: &str) {
    let (_pebble, s, _, https) = start_managed(mpm, "unpriv", Validation::Warren, "www.a.test", |_, _| String::new());
    first_certificate(&s, https);
    let log = s.wait_log("error.log", "graceful restart");
    let pid: u32 = log.split("the ACME client (pid ").nth(1).and_then(|r| r.split(')').next()).and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("no driver pid in the log: {log}"));
    let (uid, gid, nogroup) = (id_of("-u", "warren-acme"), id_of("-g", "warren-acme"), id_of("-g", "nobody"));
    assert_eq!(proc_status(pid, "Uid"), format!("{uid} {uid} {uid} {uid}"), "{log}");
    assert_eq!(proc_status(pid, "Gid"), format!("{gid} {gid} {gid} {gid}"));
    // The server's Group (nogroup) only, to hand it the md-status files.
    assert_eq!(proc_status(pid, "Groups"), nogroup);
    assert_eq!(proc_status(pid, "NoNewPrivs"), "1");
    assert_eq!(proc_status(pid, "Umask"), "0077");
    assert_eq!(proc_status(pid, "CapEff"), "0000000000000000");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split_whitespace().collect();
    assert_eq!(after_name[3], pid.to_string(), "its own session: {stat}");
    let listening = listening_socket_inodes();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().flatten() {
        let target = std::fs::read_link(fd.path()).map(|t| t.display().to_string()).unwrap_or_default();
        let inode = target.strip_prefix("socket:[").and_then(|t| t.strip_suffix(']')).unwrap_or("");
        assert!(inode.is_empty() || !listening.contains(&inode.to_string()), "fd {:?} is a listening socket ({target})", fd.file_name());
    }
    let md = s.dir.0.join("md");
    use std::os::unix::fs::MetadataExt;
    for (f, m) in [("domains/a.test/privkey.pem", 0o600), ("domains/a.test", 0o700), ("domains", 0o700), ("accounts", 0o700)] {
        let meta = std::fs::metadata(md.join(f)).unwrap();
        assert_eq!((meta.uid().to_string(), meta.mode() & 0o777), (uid.clone(), m), "{f}");
    }
    // The children's User cannot read the key; the helper's account can.
    let read_as = |user: &str| Command::new("setpriv").args([&format!("--reuid={user}"), "--regid=nogroup", "--clear-groups", "cat"]).arg(md.join("domains/a.test/privkey.pem")).output().unwrap();
    let by_nobody = read_as("nobody");
    assert!(!by_nobody.status.success() && String::from_utf8_lossy(&by_nobody.stderr).contains("Permission denied"), "{by_nobody:?}");
    assert!(read_as("warren-acme").stdout.starts_with(b"-----BEGIN"));
    // It dies with the server (the kernel forgets the parent-death
    // signal at the drop: it must have been set again).
    helpers_die_with(s, &log);
}

/// `MDHelperUser root` keeps the old way (a dns-01 hook that needs root):
/// one helper process, root, and said so. No CA is needed to see it (the
/// one named does not answer: the orders fail and are retried).
fn helper_user_root_keeps_root(mpm: &str) {
    let dir = TempDir::new(&format!("acme-root-{mpm}"));
    common::standard_site(&dir);
    let (https, closed) = (free_port(), free_port());
    let s = Server::start_in(dir, mpm, &format!("Listen 127.0.0.1:{https}\nMDomain a.test\nMDCertificateAuthority https://127.0.0.1:{closed}/dir\nMDContactEmail admin@a.test\nMDStoreDir md\nMDHelperUser root\n<VirtualHost *:{https}>\nServerName a.test\nSSLEngine on\n</VirtualHost>\n"));
    let log = s.wait_log("error.log", "managing a.test");
    assert!(log.contains("ACME helper: MDHelperUser root: the ACME helper keeps root") && !log.contains("the ACME client (pid"), "{log}");
    let pid: u32 = log.split("ACME helper (pid ").nth(1).and_then(|r| r.split(')').next()).and_then(|p| p.parse().ok()).unwrap();
    assert_eq!(proc_status(pid, "Uid"), "0 0 0 0");
    helpers_die_with(s, &log);
}

/// Stops `s` and waits (up to 20 s) until every helper process its log
/// names ("ACME helper (pid N)", "the ACME client (pid N)") is gone.
fn helpers_die_with(mut s: Server, log: &str) {
    let mut pids: Vec<u32> = log.split("(pid ").skip(1).filter_map(|r| r.split(')').next()?.parse().ok()).filter(|p| log.contains(&format!("ACME helper (pid {p})")) || log.contains(&format!("the ACME client (pid {p})"))).collect();
    pids.sort_unstable();
    pids.dedup();
    assert!(!pids.is_empty(), "{log}");
    s.stop();
    let alive = |pid: &u32| proc_status(*pid, "State").split_whitespace().next().is_some_and(|state| state != "Z" && state != "X");
    let deadline = Instant::now() + Duration::from_secs(20);
    while pids.iter().any(alive) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!pids.iter().any(alive), "helper processes {:?} outlived the server", pids.iter().filter(|p| alive(p)).collect::<Vec<_>>());
}

/// A wildcard, which only dns-01 can validate: the MDChallengeDns01
/// hook (a shell script) sets and clears the TXT record in
/// pebble-challtestsrv, the DNS pebble asks; a.test itself by http-01.
fn wildcard_by_dns01_hook(mpm: &str) {
    let calls = std::cell::OnceCell::new();
    let hook = |dir: &TempDir, pebble: &Pebble| {
        let log = dir.0.join("hook-calls");
        let hook = dir.write(
            "dns-hook.sh",
            format!(
                "#!/bin/sh\necho \"$(id -un) $@\" >> {calls}\ncase $1 in\nsetup) curl -sf -d \"{{\\\"host\\\":\\\"_acme-challenge.$2.\\\",\\\"value\\\":\\\"$3\\\"}}\" http://127.0.0.1:{port}/set-txt ;;\nteardown) curl -sf -d \"{{\\\"host\\\":\\\"_acme-challenge.$2.\\\"}}\" http://127.0.0.1:{port}/clear-txt ;;\n*) exit 2 ;;\nesac\n",
                calls = log.display(),
                port = pebble.dns_management
            ),
        );
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        // The hook runs as the helper's account: it may append here.
        std::fs::write(&log, "").unwrap();
        std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o666)).unwrap();
        let _ = calls.set(log);
        format!("MDChallengeDns01 {}", hook.display())
    };
    let (_pebble, s, _, https) = start_managed(mpm, "wild", Validation::Warren, "*.a.test", hook);
    first_certificate(&s, https);
    let san = served_x509(https, &["-servername", "shop.a.test"], &["-ext", "subjectAltName"]);
    assert!(san.contains("DNS:*.a.test") && san.contains("DNS:a.test"), "{san}");
    let log = s.wait_log("error.log", "graceful restart");
    assert!(log.contains("dns-01 challenge for *.a.test ready") && log.contains("http-01 challenge for a.test ready"), "{log}");
    // Set up, then torn down once the order was done.
    let calls = std::fs::read_to_string(calls.get().unwrap()).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    assert_eq!(lines.len(), 2, "{calls}");
    // Run as the helper's own account (MDHelperUser's default), not root.
    assert!(lines[0].starts_with("warren-acme setup a.test ") && lines[0].len() > "warren-acme setup a.test ".len() + 40, "{calls}");
    assert_eq!(lines[1], "warren-acme teardown a.test");
}

/// tls-alpn-01 only: pebble's http-01 port has nothing listening, so the
/// certificate can only come from the validation on warren's TLS port
/// (acme-tls/1); ordinary clients on that port are not disturbed.
fn tls_alpn01(mpm: &str) {
    let (pebble, s, _, https) = start_managed(mpm, "alpn", Validation::TlsOnly, "www.a.test", |_, _| "MDCAChallenges tls-alpn-01".into());
    first_certificate(&s, https);
    let log = s.wait_log("error.log", "graceful restart");
    assert!(log.contains("tls-alpn-01 challenge for a.test ready") && log.contains("tls-alpn-01 challenge for www.a.test ready"), "{log}");
    assert!(!log.contains("http-01 challenge"), "{log}");
    let root = s.dir.0.join("pebble-root.pem");
    pebble.root(&root);
    curl_verified(&root, https, "/a.txt").unwrap();
    // The challenge certificates are gone; a client asking acme-tls/1 now
    // gets no certificate at all.
    assert_eq!(std::fs::read_dir(s.dir.0.join("md/challenges/tls-alpn-01")).unwrap().count(), 0);
    let out = s_client(https, &["-servername", "a.test", "-alpn", "acme-tls/1"], "");
    assert!(!out.contains("BEGIN CERTIFICATE"), "{out}");
}

/// An order the CA refuses (its http-01 validation finds nothing where
/// it looks): the reason pebble gave is logged, the order retried with
/// backoff, and the temporary self-signed certificate served meanwhile.
fn refused_order(mpm: &str) {
    let (_pebble, s, _, https) = start_managed(mpm, "refused", Validation::Nowhere, "www.a.test", |_, _| String::new());
    let log = s.wait_log("error.log", "renewal failed (2 in a row)");
    let line = log.lines().find(|l| l.contains("renewal failed (1 in a row)")).unwrap_or_else(|| panic!("{log}"));
    // Where pebble's refusal surfaces depends on when it validates: while
    // warren polls the order, or already in its answer to the second
    // name's challenge (the order then invalid); either way its reason.
    let surfaced = line.contains("waiting for validation") || line.contains(" challenge for www.a.test: ") || line.contains(" challenge for a.test: ");
    assert!(surfaced && line.contains("urn:ietf:params:acme:error:connection") && line.contains("a temporary self-signed certificate is served meanwhile; next try in 1 s"), "{line}");
    assert!(log.contains("next try in 2 s"), "{log}");
    assert!(served(https).contains("issuer=CN = temporary certificate for a.test"), "{}", served(https));
    // md-status would say "error": the store has no certificate.
    assert!(!s.dir.0.join("md/domains/a.test/pubcert.pem").exists());
}

/// MDPrivateKeys secp384r1 RSA 2048 (with MDMustStaple on, and
/// MDRequireHttps permanent: 301 and HSTS once certified): pebble issues
/// a certificate of each, and warren serves the P-384 one, or the RSA one
/// to a client that takes only RSA signatures. (Debian's pebble
/// 2.4 does not copy the request's TLS Feature extension into the
/// certificate; warren's request is checked by warren-acme's csr tests.)
fn key_type_and_must_staple(mpm: &str) {
    let (pebble, s, http, https) = start_managed(mpm, "keys", Validation::Warren, "www.a.test", |_, _| "MDPrivateKeys secp384r1 RSA 2048\nMDMustStaple on\nMDRequireHttps permanent\nLogLevel debug".into());
    first_certificate(&s, https);
    let text = served_x509(https, &["-servername", "a.test"], &["-text"]);
    // MDMustStaple: the request sent to the CA carries RFC 7633's TLS
    // Feature (status_request), read back by openssl from the debug log;
    // whether the certificate does is the CA's choice (Debian's pebble
    // 2.4 drops it, 2.5 and later copy it; Let's Encrypt refuses such
    // requests since May 2025).
    for key in ["P384", "Rsa(2048)"] {
        let log = s.wait_log("error.log", &format!("certificate request for the {key} key"));
        let b64 = log.split(&format!("certificate request for the {key} key (DER, base64): ")).nth(1).and_then(|r| r.split_whitespace().next()).unwrap();
        let pem = format!("-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n", b64.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).unwrap()).collect::<Vec<_>>().join("\n"));
        let file = s.dir.0.join("request.pem");
        std::fs::write(&file, pem).unwrap();
        let req = Command::new("openssl").args(["req", "-noout", "-text", "-verify", "-in"]).arg(&file).output().unwrap();
        let req_text = String::from_utf8_lossy(&req.stdout);
        assert!(req.status.success() && req_text.contains("TLS Feature:") && req_text.contains("status_request") && req_text.contains("DNS:a.test, DNS:www.a.test"), "{req_text} {}", String::from_utf8_lossy(&req.stderr));
    }
    eprintln!("{mpm}: the CA's certificate {} the TLS Feature", if text.contains("TLS Feature") { "carries" } else { "lacks" });
    // MDRequireHttps permanent: 301 to HTTPS, and HSTS there, once the
    // certificate is in use.
    let root = s.dir.0.join("pebble-root.pem");
    pebble.root(&root);
    let head = |url: String| {
        let out = Command::new("curl").args(["-sI", "--max-time", "10", "--cacert"]).arg(&root).args(["--resolve", &format!("a.test:{https}:127.0.0.1"), "--resolve", &format!("a.test:{http}:127.0.0.1")]).arg(url).output().unwrap();
        String::from_utf8_lossy(&out.stdout).to_ascii_lowercase()
    };
    common::settle(|| head(format!("https://a.test:{https}/a.txt")).contains("strict-transport-security"));
    assert!(head(format!("https://a.test:{https}/a.txt")).contains("strict-transport-security: max-age=15768000"));
    let redirect = head(format!("http://a.test:{http}/a.txt"));
    assert!(redirect.starts_with("http/1.1 301") && redirect.contains(&format!("location: https://a.test:{https}/a.txt")), "{redirect}");
    assert!(text.contains("Public-Key: (384 bit)") && text.contains("NIST CURVE: P-384"), "{text}");
    // The second type's certificate, for a client that takes only RSA.
    let rsa = served_x509(https, &["-servername", "a.test", "-sigalgs", "rsa_pss_rsae_sha256:RSA+SHA256"], &["-text"]);
    assert!(rsa.contains("Public-Key: (2048 bit)") && rsa.contains("Issuer: CN = Pebble"), "{rsa}");
}

/// A small tmpfs mounted on a directory for a test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let st = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(at).status().unwrap();
        assert!(st.success(), "mount tmpfs on {} (the tests run as root)", at.display());
        Tmpfs(at.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// MDStoreDir on a full file system: the order fails at the first file
/// it writes, said with the reason, retried; nothing half-written stays;
/// once there is room, the next try gets the certificate.
fn full_disk_is_retried(mpm: &str) {
    let mount = std::cell::OnceCell::new();
    let fill = |dir: &TempDir, _: &Pebble| {
        let md = dir.0.join("md");
        let _ = mount.set(Tmpfs::mount(&md, "256k"));
        // A tmpfs is made 1777: the admin makes it root's alone, as warren
        // refuses a store others may write in.
        std::fs::set_permissions(&md, std::fs::Permissions::from_mode(0o755)).unwrap();
        // Every block taken (the store's directories take none on tmpfs).
        use std::io::Write;
        let mut filler = std::fs::File::create(md.join("filler")).unwrap();
        while filler.write_all(&[0; 4096]).is_ok() {}
        drop(filler);
        String::new()
    };
    let (_pebble, s, _, https) = start_managed(mpm, "full", Validation::Warren, "www.a.test", fill);
    let md = s.dir.0.join("md");
    let log = s.wait_log("error.log", "renewal failed (1 in a row)");
    let line = log.lines().find(|l| l.contains("renewal failed (1 in a row)")).unwrap_or_else(|| panic!("{log}"));
    assert!(line.contains("No space left on device") && line.contains("next try in 1 s"), "{line}");
    let partial = || {
        let mut found = Vec::new();
        let mut dirs = vec![md.clone()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let (p, name) = (e.path(), e.file_name().to_string_lossy().into_owned());
                if p.is_dir() {
                    dirs.push(p.clone());
                }
                if name.contains(".tmp") || name.contains(".new") || (p.is_file() && name != "filler" && std::fs::metadata(&p).is_ok_and(|m| m.len() == 0)) {
                    found.push(p);
                }
            }
        }
        found
    };
    common::settle(|| partial().is_empty());
    assert!(partial().is_empty(), "{:?}", partial());
    assert!(served(https).contains("temporary certificate for a.test"));
    std::fs::remove_file(md.join("filler")).unwrap();
    first_certificate(&s, https);
    // Unmounted before the test directory is removed (with the server).
    let mut s = s;
    s.stop();
    drop(mount);
}

/// A domain added by a graceful restart (HUP) is managed without a stop:
/// the parent tells the helper, which reads the configuration again.
fn graceful_restart_adds_a_domain(mpm: &str) {
    let (_pebble, s, http, https) = start_managed(mpm, "added", Validation::Warren, "www.a.test", |_, _| String::new());
    first_certificate(&s, https);
    let conf = std::fs::read_to_string(&s.conf).unwrap();
    std::fs::write(&s.conf, format!("{conf}MDomain b.test\n<VirtualHost *:{http}>\nServerName b.test\n</VirtualHost>\n<VirtualHost *:{https}>\nServerName b.test\nSSLEngine on\n</VirtualHost>\n")).unwrap();
    common::unsafe_kill(s.pid(), 1);
    let log = s.wait_log("error.log", "MDomain b.test: certificate obtained");
    assert!(log.contains("ACME helper: configuration read again, managing a.test, b.test"), "{log}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let san = loop {
        let san = served_x509(https, &["-servername", "b.test"], &["-issuer", "-ext", "subjectAltName"]);
        if san.contains("DNS:b.test") && san.contains("Pebble") || Instant::now() > deadline {
            break san;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(san.contains("DNS:b.test") && san.contains("Pebble"), "{san}\n{log}");
}

/// The first MDomain of a server that had none (so no ACME helper) comes
/// with a graceful restart: the parent forks the helper then.
fn graceful_restart_adds_the_first_domain(mpm: &str) {
    let dir = TempDir::new(&format!("acme-firstmd-{mpm}"));
    common::standard_site(&dir);
    let (http, https) = (free_port(), free_port());
    let pebble = Pebble::start(&dir.0, http, https);
    let localhost = Certs::make(&dir.0).directives("localhost");
    let conf = format!(
        "Listen 127.0.0.1:{http}\nListen 127.0.0.1:{https}\nMDCertificateAuthority {}\nMDCACertificateFile {}\nMDContactEmail admin@a.test\nMDCertificateAgreement accepted\nMDStoreDir md\nMDRetryDelay 1s\n<VirtualHost *:{http}>\nServerName a.test\n</VirtualHost>\n<VirtualHost *:{https}>\nServerName localhost\n{localhost}</VirtualHost>\n",
        pebble.directory(),
        pebble.listener_ca.display()
    );
    let s = Server::start_in(dir, mpm, &conf);
    assert!(s.get("/a.txt").status == 200);
    assert!(!s.read_log("error.log").contains("ACME helper"), "{}", s.read_log("error.log"));
    let conf = std::fs::read_to_string(&s.conf).unwrap();
    std::fs::write(&s.conf, format!("{conf}MDomain a.test\n<VirtualHost *:{https}>\nServerName a.test\nSSLEngine on\n</VirtualHost>\n")).unwrap();
    common::unsafe_kill(s.pid(), 1);
    let log = s.wait_log("error.log", "MDomain a.test: certificate obtained");
    assert!(log.contains("ACME helper (pid ") && log.contains("managing a.test"), "{log}");
    assert!(wait_pebble_certificate(https, Duration::from_secs(10)).is_some(), "{}", s.read_log("error.log"));
    // Forked by a parent that had its signal handlers, it still dies
    // with it.
    let log = s.read_log("error.log");
    helpers_die_with(s, &log);
}

/// MDStapling on a managed domain whose certificate in the store (made
/// by a CA of the test's own, naming its OCSP responder) is revoked: the
/// helper logs it and renews at once from pebble, though the certificate
/// is far from its renewal window.
/// As [`revoked_certificate_is_renewed`], the seeded certificate naming
/// no OCSP responder but a CRL (Let's Encrypt's way since 2025) that
/// lists it: renewed at once.
fn revoked_by_crl_is_renewed(mpm: &str) {
    let crl_server = std::cell::OnceCell::new();
    let seed = |dir: &TempDir, _: &Pebble| {
        let ca = common::ocsp::OcspCa::make_with_crl(&dir.0, common::free_port_to_bind_later(), "DNS:a.test,DNS:www.a.test");
        ca.set_status(true);
        ca.publish_crl("ca.pem", "ca.key");
        let _ = crl_server.set(ca.crl_server());
        let domain = dir.0.join("md/domains/a.test");
        std::fs::create_dir_all(&domain).unwrap();
        std::fs::copy(ca.dir.join("a.pem"), domain.join("pubcert.pem")).unwrap();
        std::fs::copy(ca.dir.join("a.key"), domain.join("privkey.pem")).unwrap();
        "MDStapling on".to_string()
    };
    let (_pebble, s, _, https) = start_managed(mpm, "crlrevoked", Validation::Warren, "www.a.test", seed);
    let log = s.wait_log("error.log", "MDomain a.test: certificate obtained");
    assert!(!log.contains("serving a temporary self-signed one"), "{log}");
    let revoked = log.lines().find(|l| l.contains("is REVOKED according to the CRL at")).unwrap_or_else(|| panic!("{log}"));
    assert!(revoked.contains("pubcert.pem") && revoked.contains("the managed domain's certificate is renewed now"), "{revoked}");
    assert!(wait_pebble_certificate(https, Duration::from_secs(10)).is_some(), "{}", s.read_log("error.log"));
    if let Some(c) = crl_server.into_inner() {
        terminate(c, Duration::from_secs(5));
    }
}

fn revoked_certificate_is_renewed(mpm: &str) {
    let responder = std::cell::OnceCell::new();
    let seed = |dir: &TempDir, _: &Pebble| {
        let ca = common::ocsp::OcspCa::make(&dir.0, common::free_port_to_bind_later(), "DNS:a.test,DNS:www.a.test");
        ca.set_status(true);
        let _ = responder.set(ca.responder());
        let domain = dir.0.join("md/domains/a.test");
        std::fs::create_dir_all(&domain).unwrap();
        std::fs::copy(ca.dir.join("a.pem"), domain.join("pubcert.pem")).unwrap();
        std::fs::copy(ca.dir.join("a.key"), domain.join("privkey.pem")).unwrap();
        "MDStapling on".to_string()
    };
    let (_pebble, s, _, https) = start_managed(mpm, "revoked", Validation::Warren, "www.a.test", seed);
    let log = s.wait_log("error.log", "MDomain a.test: certificate obtained");
    // The seeded certificate was served meanwhile (no temporary one).
    assert!(!log.contains("serving a temporary self-signed one"), "{log}");
    let revoked = log.lines().find(|l| l.contains("is REVOKED according to")).unwrap_or_else(|| panic!("{log}"));
    assert!(revoked.contains("pubcert.pem") && revoked.contains("the managed domain's certificate is renewed now"), "{revoked}");
    assert!(wait_pebble_certificate(https, Duration::from_secs(10)).is_some(), "{}", s.read_log("error.log"));
    if let Some(r) = responder.into_inner() {
        terminate(r, Duration::from_secs(5));
    }
}

each_mpm!(revoked_by_crl_is_renewed, helper_drops_root, helper_user_root_keeps_root, a_malformed_ca_answer_is_retried, renewal_under_wrk, revoked_certificate_is_renewed, graceful_restart_adds_the_first_domain, graceful_restart_adds_a_domain, full_disk_is_retried, key_type_and_must_staple, refused_order, first_issuance, renewal_under_load, ca_down_keeps_the_certificate, wildcard_by_dns01_hook, tls_alpn01);
