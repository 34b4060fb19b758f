//! mod_md's surface, attacked by an anonymous client and by a tenant
//! with a site's `.htaccess`: the http-01 path must give a key
//! authorization only for a token the ACME helper wrote, nothing of
//! MDStoreDir through `..`, encodings, backslashes or NUL; a tenant's
//! rewrite rules and redirects must not shadow the CA's request; the
//! store's files (accounts, keys) are 0600 and never served, even with
//! MDStoreDir placed under the DocumentRoot. It also plays whoever took
//! over the ACME client (whose account owns the store): the root parent
//! must read nothing else through it.
//!
//! The CA named here does not answer (a closed port): the helper's
//! orders fail and are retried, which is the state every server is in
//! before its first certificate; the token file is put where the helper
//! writes them.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::tls::s_client;
use common::{free_port, Server, TempDir};

const TOKEN: &str = "LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0";
const KEY_AUTHORIZATION: &str = "LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0.9jg46WB3rR_AHD-EBXdN7cBkH1WOu0tA3M9fm21mqTI";

/// A server managing a.test, its store under the DocumentRoot (as a
/// careless admin would put it), a tenant's `.htaccess` that rewrites and
/// redirects everything, and one token file as the helper writes it.
fn start(mpm: &str) -> Server {
    let dir = TempDir::new(&format!("attacks-acme-{mpm}"));
    common::standard_site(&dir);
    dir.write("htdocs/.htaccess", "RewriteEngine On\nRewriteRule ^\\.well-known/ /index.html [L]\nRewriteRule ^(.*)$ https://evil.test/$1 [R=302,L]\n");
    let closed = free_port();
    let conf = format!(
        "MDomain a.test\nMDCertificateAuthority https://127.0.0.1:{closed}/dir\nMDContactEmail admin@a.test\nMDStoreDir htdocs/md\nMDRetryDelay 1h\nRedirectMatch 301 ^/\\.well-known/(.*)$ https://elsewhere.test/$1\n<Directory {}/htdocs>\nAllowOverride All\n</Directory>\n<VirtualHost *>\nServerName a.test\n</VirtualHost>\n",
        dir.0.display()
    );
    let s = Server::start_in(dir, mpm, &conf);
    // The helper makes the store at start; the token file as it writes one.
    let md = s.dir.0.join("htdocs/md");
    common::settle(|| md.join("challenges").is_dir() && md.join("accounts").is_dir());
    std::fs::write(md.join("challenges").join(TOKEN), KEY_AUTHORIZATION).unwrap();
    std::fs::set_permissions(md.join("challenges").join(TOKEN), std::fs::Permissions::from_mode(0o644)).unwrap();
    // An account file as the helper keeps it.
    std::fs::write(md.join("accounts/ca.json"), "{\"secret\": \"account key\"}").unwrap();
    std::fs::set_permissions(md.join("accounts/ca.json"), std::fs::Permissions::from_mode(0o600)).unwrap();
    s
}

fn challenge_is_answered_before_any_rule(mpm: &str) {
    let s = start(mpm);
    let r = s.get_from("a.test", &format!("/.well-known/acme-challenge/{TOKEN}"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), KEY_AUTHORIZATION);
    // For any Host: the CA asks with the domain's name, a client with any.
    let r = s.get(&format!("/.well-known/acme-challenge/{TOKEN}"));
    assert_eq!((r.status, r.text()), (200, KEY_AUTHORIZATION.to_string()));
    // A tenant cannot make md-status its own (a server-wide handler).
    s.dir.write("htdocs/t/.htaccess", "RewriteEngine Off\nSetHandler md-status\n");
    let r = s.get_from("a.test", "/t/x");
    assert_eq!(r.status, 500, "{}", r.text());
    // Other paths still go through the tenant's rules.
    let r = s.get_from("a.test", "/a.txt");
    assert_eq!(r.status, 302, "{}", r.text());
}

fn unknown_tokens_and_traversals_are_404(mpm: &str) {
    let s = start(mpm);
    let p = "/.well-known/acme-challenge/";
    let attempts = [
        format!("{p}AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
        format!("{p}short"),
        format!("{p}{TOKEN}/"),
        format!("{p}{TOKEN}.json"),
        format!("{p}..%2f..%2faccounts%2fca.json"),
        format!("{p}%252e%252e%252faccounts%252fca.json"),
        format!("{p}..\\..\\accounts\\ca.json"),
        format!("{p}{TOKEN}%00"),
        format!("{p}%2E%2E%2Fchallenges%2F{TOKEN}"),
    ];
    for a in &attempts {
        let r = s.get_from("a.test", a);
        assert!(r.status == 404 || r.status == 400, "{a}: {} {}", r.status, r.text());
        assert!(!r.text().contains("account key"), "{a}");
    }
    // `..` that leaves the prefix is resolved first: the path is another
    // one, under the tenant's rules (a redirect), never the store.
    for a in [format!("{p}../../md/accounts/ca.json"), format!("{p}%2e%2e/%2e%2e/md/accounts/ca.json"), format!("{p}%2e%2e/%2e%2e/accounts/ca.json")] {
        let r = s.get_from("a.test", &a);
        assert!(!r.text().contains("account key"), "{a}: {}", r.text());
    }
    let log = s.wait_log("error.log", "ACME challenge: no key authorization");
    assert!(log.contains("ACME challenge: no key authorization for /.well-known/acme-challenge/AAAA"), "{log}");
}

fn the_store_is_0600_and_never_served(mpm: &str) {
    let s = start(mpm);
    let md = s.dir.0.join("htdocs/md");
    // The helper's account key and certificates are the parent's only.
    assert_eq!(std::fs::metadata(md.join("accounts")).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(md.join("domains")).unwrap().permissions().mode() & 0o777, 0o700);
    for path in ["/md/accounts/ca.json", "/md/accounts/", "/md/domains/", "/md/", "/md/challenges/"] {
        let r = s.get(path);
        assert!(!r.text().contains("account key"), "{path}: {}", r.text());
        if path.starts_with("/md/accounts") || path.starts_with("/md/domains") {
            assert!(r.status == 403 || r.status == 404 || r.status == 302, "{path}: {}", r.status);
        }
    }
    // The failed orders (no CA there) are said, with their reason, and
    // the store holds no half-written file.
    let log = s.wait_log("error.log", "renewal failed (1 in a row)");
    assert!(log.contains("MDomain a.test: renewal failed (1 in a row)") && log.contains("next try in 3600 s"), "{log}");
    // (The helper may be writing its status this instant: a temporary
    // that stays is the fault.)
    let leftovers = || walk(&md).into_iter().filter(|p| p.to_string_lossy().contains(".tmp") || p.to_string_lossy().contains(".new")).collect::<Vec<_>>();
    // Judged on one listing: the helper may start its next write between two.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut left = leftovers();
    while !left.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        left = leftovers();
    }
    assert!(left.is_empty(), "{left:?}");
}

/// A tenant who owns the DocumentRoot an MDStoreDir sits in can put any
/// link in it, at any time, where the root helper writes and chmods
/// (`challenges/` here, made a link to a directory of root's): warren
/// refuses to start, naming MDStoreDir, and root's directory is untouched.
fn a_store_a_tenant_can_change_is_refused(mpm: &str) {
    let dir = TempDir::new(&format!("attacks-acme-tenant-{mpm}"));
    common::standard_site(&dir);
    let victim = dir.0.join("roots-own");
    std::fs::create_dir(&victim).unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o700)).unwrap();
    let htdocs = dir.0.join("htdocs");
    let md = htdocs.join("md");
    std::fs::create_dir(&md).unwrap();
    std::os::unix::fs::symlink(&victim, md.join("challenges")).unwrap();
    for tenants in [&htdocs, &md] {
        std::os::unix::fs::chown(tenants, Some(common::nobody()), None).unwrap();
    }
    let closed = free_port();
    let conf = dir.write(
        "warren.conf",
        common::base_config(mpm, &format!("Listen 127.0.0.1:{}", free_port()), &format!("MDomain a.test\nMDCertificateAuthority https://127.0.0.1:{closed}/dir\nMDStoreDir htdocs/md\nMDRetryDelay 1h\n<VirtualHost *>\nServerName a.test\n</VirtualHost>\n")),
    );
    let mut child = std::process::Command::new(common::BIN).arg("-f").arg(&conf).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = common::terminate(child, common::STOP_GRACE);
            panic!("warren started with a store its tenant can change");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!status.success() && err.contains("MDStoreDir") && err.contains(&md.display().to_string()), "{status}: {err}");
    assert_eq!(std::fs::metadata(&victim).unwrap().permissions().mode() & 0o7777, 0o700);
    assert_eq!(std::fs::read_dir(&victim).unwrap().count(), 0);
}

/// tls-alpn-01 on the TLS listener: a client offering only acme-tls/1
/// with a SNI that is a path gets no certificate (the name never reaches
/// the disk), and one naming a domain with no order running gets none
/// either; a browser offering acme-tls/1 among others gets the host's
/// own certificate, never a challenge one.
fn acme_tls_alpn_cannot_read_the_store(mpm: &str) {
    let dir = TempDir::new(&format!("attacks-acme-alpn-{mpm}"));
    common::standard_site(&dir);
    let (https, closed) = (free_port(), free_port());
    let conf = format!(
        "Listen 127.0.0.1:{https}\nMDomain a.test\nMDCertificateAuthority https://127.0.0.1:{closed}/dir\nMDContactEmail admin@a.test\nMDStoreDir md\nMDRetryDelay 1h\nMDCAChallenges tls-alpn-01\n<VirtualHost *:{https}>\nServerName a.test\nSSLEngine on\n</VirtualHost>\n"
    );
    let s = Server::start_in(dir, mpm, &conf);
    let md = s.dir.0.join("md");
    common::settle(|| md.join("challenges/tls-alpn-01").is_dir());
    // A key and certificate that a path-like SNI would reach if it were
    // joined as it is (`challenges/tls-alpn-01/../../secret.pem`).
    let certs = common::tls::Certs::make(&s.dir.0);
    let secret = format!("{}{}", std::fs::read_to_string(certs.key("localhost")).unwrap(), std::fs::read_to_string(certs.cert("localhost")).unwrap());
    std::fs::write(md.join("secret.pem"), secret).unwrap();
    for sni in ["../../secret", "..%2f..%2fsecret", "a.test/../../secret", "a.test\\..\\..\\secret"] {
        let out = s_client(https, &["-servername", sni, "-alpn", "acme-tls/1"], "");
        assert!(!out.contains("BEGIN CERTIFICATE") && !out.contains("CN = localhost"), "{sni}: {out}");
    }
    let out = s_client(https, &["-servername", "a.test", "-alpn", "acme-tls/1"], "");
    assert!(!out.contains("BEGIN CERTIFICATE"), "no order running: {out}");
    // Among other protocols: the host's own (temporary) certificate, over http/1.1.
    let out = s_client(https, &["-servername", "a.test", "-alpn", "h2,http/1.1,acme-tls/1"], "");
    assert!(out.contains("temporary certificate for a.test") && out.contains("ALPN protocol: http/1.1"), "{out}");
}

/// Whoever took over the ACME client owns MDStoreDir (its account's):
/// where the root parent reads a domain's certificate and key at a
/// graceful restart, it puts a link to a root-only certificate of another
/// site, and a FIFO (open would block root for good). The parent reads
/// neither: the graceful restart is refused with the reason, never hangs,
/// and the certificate in use is served on.
fn a_helper_taken_over_cannot_make_root_read_elsewhere(mpm: &str) {
    let dir = TempDir::new(&format!("attacks-acme-taken-{mpm}"));
    common::standard_site(&dir);
    let certs = common::tls::Certs::make(&dir.0);
    let domain = dir.0.join("md/domains/a.test");
    std::fs::create_dir_all(&domain).unwrap();
    std::fs::copy(certs.cert("a"), domain.join("pubcert.pem")).unwrap();
    std::fs::copy(certs.key("a"), domain.join("privkey.pem")).unwrap();
    let https = free_port();
    let s = Server::start_in(dir, mpm, &format!("Listen 127.0.0.1:{https}\nMDomain a.test manual\nMDContactEmail admin@a.test\nMDStoreDir md\n<VirtualHost *:{https}>\nServerName a.test\nSSLEngine on\n</VirtualHost>\n"));
    let served = || common::tls::served_cn(https, Some("a.test"));
    assert_eq!(served(), "a.test");
    // b.test's certificate and key: root's, 0600, outside the store.
    std::fs::set_permissions(certs.key("b"), std::fs::Permissions::from_mode(0o600)).unwrap();
    for (name, target) in [("pubcert.pem", certs.cert("b")), ("privkey.pem", certs.key("b"))] {
        std::fs::remove_file(domain.join(name)).unwrap();
        std::os::unix::fs::symlink(target, domain.join(name)).unwrap();
    }
    common::unsafe_kill(s.pid(), 1);
    let log = s.wait_log("error.log", "Too many levels of symbolic links");
    let refused = log.lines().find(|l| l.contains("Too many levels of symbolic links")).unwrap();
    assert!(refused.contains("md/domains/a.test/pubcert.pem") || refused.contains("md/domains/a.test/privkey.pem"), "{log}");
    assert_eq!(served(), "a.test");
    // A FIFO in place of the key: refused at once, not waited on.
    std::fs::remove_file(domain.join("privkey.pem")).unwrap();
    std::fs::copy(certs.cert("a"), domain.join("pubcert.pem.new")).unwrap();
    std::fs::rename(domain.join("pubcert.pem.new"), domain.join("pubcert.pem")).unwrap();
    nix::unistd::mkfifo(&domain.join("privkey.pem"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    common::unsafe_kill(s.pid(), 1);
    let log = s.wait_log("error.log", "not a regular file");
    assert!(log.contains("md/domains/a.test/privkey.pem"), "{log}");
    assert_eq!(served(), "a.test");
    // Neither was taken in; with the files put right, the next graceful
    // restart is (the parent did not hang on the FIFO).
    const RESTARTED: &str = "SIGHUP received: graceful restart";
    assert!(!s.read_log("error.log").contains(RESTARTED), "{}", s.read_log("error.log"));
    std::fs::remove_file(domain.join("privkey.pem")).unwrap();
    std::fs::copy(certs.key("a"), domain.join("privkey.pem")).unwrap();
    common::unsafe_kill(s.pid(), 1);
    s.wait_log("error.log", RESTARTED);
    assert_eq!(served(), "a.test");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

/// Whoever took over the unprivileged ACME client writes to its pipe to
/// the root relay in a loop, each byte a request for a graceful restart:
/// the relay merges them, at most one restart each interval, instead of
/// keeping the server restarting without end.
fn a_helper_taken_over_cannot_keep_the_server_restarting(mpm: &str) {
    use std::io::Write;
    const REQUESTS: usize = 200;
    let s = start(mpm);
    let relayed = s.wait_log("error.log", "relays for the ACME client (pid ");
    let driver: u32 = relayed.split("relays for the ACME client (pid ").nth(1).and_then(|t| t.split(')').next()).and_then(|p| p.parse().ok()).unwrap();
    // The driver's write end of its pipe: a pipe opened write-only, not
    // its stdout or stderr (pipes to this test).
    let fd_dir = format!("/proc/{driver}/fd");
    let pipe = std::fs::read_dir(&fd_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok_and(|fd| fd > 2))
        .find(|e| {
            let is_pipe = std::fs::read_link(e.path()).is_ok_and(|t| t.to_string_lossy().starts_with("pipe:"));
            let flags = std::fs::read_to_string(format!("/proc/{driver}/fdinfo/{}", e.file_name().to_string_lossy())).unwrap_or_default();
            let write_only = flags.lines().find_map(|l| l.strip_prefix("flags:")).and_then(|f| u32::from_str_radix(f.trim(), 8).ok()).is_some_and(|f| f & 3 == 1);
            is_pipe && write_only
        })
        .unwrap_or_else(|| panic!("no write end of a pipe in {fd_dir}"));
    let mut changes = std::fs::OpenOptions::new().write(true).open(pipe.path()).unwrap();
    // One write (a pipe takes up to 4 KB at once): the relay has them all
    // to read at once, however slow this machine is.
    changes.write_all(&[b'!'; REQUESTS]).unwrap();
    // Every request is accounted for by the relay's lines...
    let asked = |log: &str| log.lines().filter_map(|l| l.split("asked for ").nth(1)?.split(' ').next()?.parse::<usize>().ok()).collect::<Vec<_>>();
    // (the rest waits out the relay's interval: a deadline well past it).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while asked(&s.read_log("error.log")).iter().sum::<usize>() < REQUESTS && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(asked(&s.read_log("error.log")).iter().sum::<usize>(), REQUESTS, "{}", s.read_log("error.log"));
    // ...in at most one restart per interval: the first read's restart
    // and one for the rest.
    let log = s.read_log("error.log");
    assert!(asked(&log).len() <= 2, "{log}");
    assert!(log.matches("SIGHUP received: graceful restart").count() <= 2, "{log}");
}

each_mpm!(a_helper_taken_over_cannot_keep_the_server_restarting, a_helper_taken_over_cannot_make_root_read_elsewhere, a_store_a_tenant_can_change_is_refused, acme_tls_alpn_cannot_read_the_store, challenge_is_answered_before_any_rule, unknown_tokens_and_traversals_are_404, the_store_is_0600_and_never_served);
