//! HTTPS (issue 21): SNI with a certificate per virtual host, resumption,
//! ALPN, plain HTTP on a TLS port, stalled handshakes, certificate renewal
//! by graceful restart, FastCGI's SSL variables, https self-references,
//! mod_ssl's log fields, large files and ranges, and configuration errors.
//! Clients: curl and `openssl s_client`; certificates from a test CA made
//! with the `openssl` command (common::tls).

mod common;
use common::tls::*;
use common::*;

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

each_mpm!(
    sni_gives_each_name_its_certificate,
    unknown_or_missing_sni_gets_the_first_vhost,
    host_other_than_sni_gets_421,
    sessions_are_resumed_tls12,
    sessions_are_resumed_tls13,
    alpn_http11_by_default_h2_when_configured,
    plain_http_on_tls_port_gets_400,
    stalled_handshakes_are_cut_and_do_not_block_others,
    certificate_renewal_by_graceful_restart,
    fastcgi_pool_gets_ssl_variables,
    self_referential_redirects_are_https,
    rewrite_from_plain_listener_to_https,
    ssl_fields_in_access_log,
    large_file_and_range_byte_exact,
    close_notify_ends_a_kept_alive_connection,
    config_test_names_missing_key_file,
    config_test_names_broken_certificate,
);

/// A site on TLS: virtual hosts a.test (ECDSA certificate, DocumentRoot
/// a/) and b.test (RSA certificate, b/), both with SSLEngine on, on the
/// base `Listen` port, which they make a TLS port; `extra` after them.
fn start(mpm: &str, extra: &str) -> (Server, Certs) {
    let dir = TempDir::new(&format!("tls-{mpm}"));
    standard_site(&dir);
    dir.write("a/index.html", "site a\n");
    dir.write("a/sub/page.html", "a sub page");
    dir.write("b/index.html", "site b\n");
    let certs = Certs::make(&dir.0);
    let root = dir.0.display().to_string();
    let conf = format!(
        "<VirtualHost *>\nServerName a.test\nDocumentRoot {root}/a\n{}</VirtualHost>\n<VirtualHost *>\nServerName b.test\nDocumentRoot {root}/b\n{}</VirtualHost>\n{extra}",
        certs.directives("a"),
        certs.directives("b")
    );
    let s = Server::start_in(dir, mpm, &conf);
    (s, certs)
}

/// curl to `https://HOST:PORT{path}` (a.test and b.test resolved to
/// 127.0.0.1, the test CA trusted) with `args` before the URL.
fn https(s: &Server, certs: &Certs, host: &str, path: &str, args: &[&str]) -> (i32, Vec<u8>) {
    let port = s.port;
    let ca = certs.ca().display().to_string();
    let resolve: Vec<String> = ["a.test", "b.test", host].iter().map(|h| format!("{h}:{port}:127.0.0.1")).collect();
    let url = format!("https://{host}:{port}{path}");
    let mut all: Vec<&str> = vec!["--cacert", &ca];
    for r in &resolve {
        all.extend_from_slice(&["--resolve", r]);
    }
    all.extend_from_slice(args);
    all.push(&url);
    curl(&all)
}

/// The body of a GET that must succeed.
fn body(s: &Server, certs: &Certs, host: &str, path: &str) -> String {
    let (code, out) = https(s, certs, host, path, &["--fail-with-body"]);
    assert_eq!(code, 0, "curl https://{host}{path}: exit {code}, {:?}; error log:\n{}", String::from_utf8_lossy(&out), s.read_log("error.log"));
    String::from_utf8_lossy(&out).into_owned()
}

/// The status of a request, with `args`.
fn status(s: &Server, certs: &Certs, host: &str, path: &str, args: &[&str]) -> String {
    let mut a = vec!["-o", "/dev/null", "-w", "%{http_code}"];
    a.extend_from_slice(args);
    let (code, out) = https(s, certs, host, path, &a);
    assert_eq!(code, 0, "curl https://{host}{path}: exit {code}; error log:\n{}", s.read_log("error.log"));
    String::from_utf8_lossy(&out).into_owned()
}

/// Two names, two certificates: each name's handshake presents its own
/// (s_client shows the subject) and serves its own DocumentRoot, with
/// curl verifying the certificate against the name.
fn sni_gives_each_name_its_certificate(mpm: &str) {
    let (s, certs) = start(mpm, "");
    assert_eq!(served_cn(s.port, Some("a.test")), "a.test");
    assert_eq!(served_cn(s.port, Some("b.test")), "b.test", "b.test's handshake must present b.test's (RSA) certificate");
    assert_eq!(body(&s, &certs, "a.test", "/"), "site a\n");
    assert_eq!(body(&s, &certs, "b.test", "/"), "site b\n");
    // Each name's key type is the one its certificate has.
    let out = s_client(s.port, &["-servername", "b.test"], "");
    assert!(out.contains("Server public key is 2048 bit"), "{out}");
    let out = s_client(s.port, &["-servername", "a.test"], "");
    assert!(out.contains("Server public key is 256 bit"), "{out}");
}

/// A name no virtual host has, or no SNI at all: the first virtual host's
/// certificate and content (Apache's default for the address).
fn unknown_or_missing_sni_gets_the_first_vhost(mpm: &str) {
    let (s, certs) = start(mpm, "");
    assert_eq!(served_cn(s.port, Some("zzz.test")), "a.test");
    assert_eq!(served_cn(s.port, None), "a.test");
    let (code, out) = https(&s, &certs, "zzz.test", "/", &["-k"]);
    assert_eq!((code, String::from_utf8_lossy(&out).into_owned()), (0, "site a\n".to_string()));
}

/// A request whose Host names another virtual host than the handshake's
/// SNI: 421 Misdirected Request (as mod_ssl); the SNI's own name is served.
fn host_other_than_sni_gets_421(mpm: &str) {
    let (s, certs) = start(mpm, "");
    assert_eq!(status(&s, &certs, "a.test", "/", &["-H", "Host: b.test"]), "421");
    assert_eq!(status(&s, &certs, "a.test", "/", &["-H", "Host: a.test"]), "200");
    // A Host that names no virtual host goes to the default, the SNI's own.
    assert_eq!(status(&s, &certs, "a.test", "/", &["-H", "Host: nowhere.test"]), "200");
}

/// Five sessions, each saved by an `s_client` that made a request and
/// read the answer to the end (so that TLS 1.3's tickets, which come after
/// the handshake, arrive; `-reconnect` gives up before any does); then
/// five `s_client`s at once, each offering one of them, all connected
/// together (each holds its connection open until all have shaken hands,
/// so that under prefork they are five different children, most of them
/// not the one that made the session). How many of the five resumed, and
/// their output.
fn resumed_across_children(s: &Server, version: &str) -> (usize, String) {
    let sess = |i: usize| s.dir.0.join(format!("sess{version}{i}")).display().to_string();
    let request = "GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n";
    for i in 0..5 {
        let out = s_client(s.port, &["-servername", "a.test", version, "-ign_eof", "-sess_out", &sess(i)], request);
        assert!(out.contains("site a") && Path::new(&sess(i)).exists(), "no answer over TLS, or no session saved:\n{out}");
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let mut held = Vec::new();
    for i in 0..5 {
        let mut child = Command::new("timeout")
            .args(["30", "openssl", "s_client", "-connect", &format!("127.0.0.1:{}", s.port), "-servername", "a.test", version, "-ign_eof", "-sess_in", &sess(i)])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let tx = tx.clone();
        let reader = std::thread::spawn(move || {
            use std::io::BufRead;
            let mut all = String::new();
            let mut told = false;
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                if !told && (line.starts_with("New,") || line.starts_with("Reused,")) {
                    let _ = tx.send(());
                    told = true;
                }
                all.push_str(&line);
                all.push('\n');
            }
            if !told {
                let _ = tx.send(());
            }
            all
        });
        held.push((child, reader));
    }
    // All five have shaken hands (or given up), their connections open.
    for _ in 0..5 {
        rx.recv_timeout(Duration::from_secs(30)).expect("s_client did not connect within 30 s");
    }
    let mut out = String::new();
    let mut resumed = 0;
    for (mut child, reader) in held {
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(request.as_bytes());
        drop(stdin);
        let _ = child.wait();
        let text = reader.join().unwrap();
        assert!(text.contains("site a"), "no answer over TLS:\n{text}");
        if text.lines().any(|l| l.starts_with("Reused,")) {
            resumed += 1;
        }
        out.push_str(&text);
    }
    (resumed, out)
}

/// Most reconnections resume the session, whichever child (prefork) or
/// process takes them: the session cache (TLS 1.2) is shared between the
/// children.
fn sessions_are_resumed_tls12(mpm: &str) {
    let (s, _certs) = start(mpm, "");
    let (reused, out) = resumed_across_children(&s, "-tls1_2");
    assert!(reused >= 4, "{reused} of 5 connections resumed (TLS 1.2):\n{out}");
}

/// The same with TLS 1.3 (tickets, whose keys the children share, or
/// the shared cache).
fn sessions_are_resumed_tls13(mpm: &str) {
    let (s, _certs) = start(mpm, "");
    let (reused, out) = resumed_across_children(&s, "-tls1_3");
    assert!(reused >= 4, "{reused} of 5 connections resumed (TLS 1.3):\n{out}");
}

/// By default (Apache's `Protocols http/1.1`) ALPN agrees http/1.1 and
/// never h2; with `Protocols h2 http/1.1` (and mod_http2 loaded, as
/// Debian's `a2enmod http2` does) a client offering h2 gets h2, one
/// offering only http/1.1 still gets it. Only the agreement is checked:
/// what follows it is the server side's HTTP/2.
fn alpn_http11_by_default_h2_when_configured(mpm: &str) {
    let (s, certs) = start(mpm, "");
    let out = s_client(s.port, &["-servername", "a.test", "-alpn", "http/1.1"], "");
    assert!(out.contains("ALPN protocol: http/1.1"), "{out}");
    // h2 is not offered: no ALPN protocol is agreed.
    let out = s_client(s.port, &["-servername", "a.test", "-alpn", "h2"], "");
    assert!(!out.contains("ALPN protocol: h2"), "{out}");
    let out = s_client(s.port, &["-servername", "a.test", "-alpn", "h2,http/1.1"], "");
    assert!(out.contains("ALPN protocol: http/1.1"), "{out}");
    // curl (which offers h2 and http/1.1 when built with HTTP/2) speaks 1.1.
    let (code, v) = https(&s, &certs, "a.test", "/", &["-o", "/dev/null", "-w", "%{http_version}"]);
    assert_eq!((code, String::from_utf8_lossy(&v).into_owned()), (0, "1.1".to_string()));
    drop(s);

    let (s, _certs) = start(mpm, "LoadModule http2_module modules/mod_http2.so\nProtocols h2 http/1.1\n");
    for name in ["a.test", "b.test"] {
        let out = s_client(s.port, &["-servername", name, "-alpn", "h2,http/1.1"], "");
        assert!(out.contains("ALPN protocol: h2"), "{name}: {out}");
        // The server's order wins: h2 even where the client prefers 1.1.
        let out = s_client(s.port, &["-servername", name, "-alpn", "http/1.1,h2"], "");
        assert!(out.contains("ALPN protocol: h2"), "{name}: {out}");
        let out = s_client(s.port, &["-servername", name, "-alpn", "http/1.1"], "");
        assert!(out.contains("ALPN protocol: http/1.1"), "{name}: {out}");
    }
}

/// Plain HTTP to the TLS port: a plain-HTTP 400 with an HTML body, and
/// mod_ssl's reason in the error log.
fn plain_http_on_tls_port_gets_400(mpm: &str) {
    let (s, _certs) = start(mpm, "");
    let out = s.raw(b"GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    let (r, _) = parse_response(&out);
    assert_eq!(r.status, 400, "{:?}", String::from_utf8_lossy(&out));
    assert!(r.header("Content-Type").is_some_and(|t| t.starts_with("text/html")), "{:?}", r.headers);
    assert!(r.text().to_ascii_lowercase().contains("<html"), "{}", r.text());
    let why = "You're speaking plain HTTP to an SSL-enabled server port";
    let log = s.wait_log("error.log", why);
    assert!(log.contains(why), "{log}");
    // The port still speaks TLS afterwards.
    assert_eq!(served_cn(s.port, Some("a.test")), "a.test");
}

/// Clients that stop in the middle of their ClientHello are closed once
/// RequestReadTimeout's header stage (2 s) runs out, long before Timeout
/// (60 s); meanwhile eight of them do not keep a normal HTTPS request from
/// being answered.
fn stalled_handshakes_are_cut_and_do_not_block_others(mpm: &str) {
    let (s, certs) = start(mpm, "RequestReadTimeout header=2");
    // A handshake record of 200 bytes, of which only the first 20 come.
    let partial: &[u8] = &[0x16, 0x03, 0x01, 0x00, 0xc8, 0x01, 0x00, 0x00, 0xc4, 0x03, 0x03, 1, 2, 3, 4, 5, 6, 7, 8, 9];
    let stalled: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut c = s.connect();
            c.write_all(partial).unwrap();
            c
        })
        .collect();
    // Every one of them taken in by the server (prefork starts children for them).
    for c in &stalled {
        wait_server_read(c);
    }
    assert_eq!(body(&s, &certs, "a.test", "/"), "site a\n", "an HTTPS request while 8 handshakes are stalled");
    for mut c in stalled {
        // Far longer than header=2; far shorter than Timeout (60 s).
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let (out, how) = read_to_end_of(&mut c);
        assert!(how.starts_with("closed") || how.contains("reset"), "a stalled handshake was not closed: {how}");
        assert!(!out.starts_with(b"HTTP/"), "{:?}", String::from_utf8_lossy(&out));
    }
    assert_eq!(body(&s, &certs, "a.test", "/"), "site a\n");
}

/// The error log after its first `from` bytes, once that part is `done`
/// (up to 20 s).
fn wait_log_after(s: &Server, from: usize, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = s.read_log("error.log");
        let new = log.get(from..).unwrap_or("").to_string();
        if done(&new) || Instant::now() > deadline {
            return new;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Renewal: new certificate and key files in place, a graceful restart,
/// and the new certificate is served; a broken certificate and a graceful
/// restart: the last good one is still served, and the error log says
/// which file was wrong.
fn certificate_renewal_by_graceful_restart(mpm: &str) {
    let (s, certs) = start(mpm, "");
    assert_eq!(served_cn(s.port, Some("a.test")), "a.test");
    certs.leaf("a", Key::EcdsaP256, "a-renewed.test", "DNS:a.test");
    let out = Command::new(BIN).args(["-k", "graceful", "-f"]).arg(&s.conf).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let deadline = Instant::now() + Duration::from_secs(30);
    while served_cn(s.port, Some("a.test")) != "a-renewed.test" {
        assert!(Instant::now() < deadline, "the renewed certificate is not served 30 s after the graceful restart; error log:\n{}", s.read_log("error.log"));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(body(&s, &certs, "a.test", "/"), "site a\n");

    // A broken certificate file.
    let from = s.read_log("error.log").len();
    std::fs::write(certs.cert("a"), "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n").unwrap();
    unsafe_kill(s.pid(), 1);
    let file = certs.cert("a").display().to_string();
    // The restart is refused (or the host keeps its old certificate), the
    // error log saying why.
    let new = wait_log_after(&s, from, |l| l.contains(&file) || l.contains("refused"));
    assert_eq!(served_cn(s.port, Some("a.test")), "a-renewed.test", "the last good certificate is kept");
    let new = if new.contains(&file) { new } else { wait_log_after(&s, from, |l| l.contains(&file)) };
    assert!(new.contains(&file), "the error log does not name {file} after a graceful restart with it broken:\n{new}");
    assert_eq!(body(&s, &certs, "a.test", "/"), "site a\n");
    assert_eq!(served_cn(s.port, Some("b.test")), "b.test");
}

/// PHP (php-cgi in a warren pool) over HTTPS sees mod_ssl's variables.
fn fastcgi_pool_gets_ssl_variables(mpm: &str) {
    let (s, certs) = start(
        mpm,
        "<Pool app>\n    Command /usr/bin/php-cgi\n    User nobody\n    Group nogroup\n    pm static\n    pm.max_children 1\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:app\n</FilesMatch>",
    );
    s.dir.write(
        "a/env.php",
        "<?php foreach (['HTTPS','REQUEST_SCHEME','SERVER_PORT','SSL_PROTOCOL','SSL_CIPHER','SSL_CIPHER_USEKEYSIZE','SSL_SESSION_RESUMED','SSL_TLS_SNI'] as $k) echo $k, '=', $_SERVER[$k] ?? '(unset)', \"\\n\";",
    );
    let text = body(&s, &certs, "a.test", "/env.php");
    let kv = key_values(&text);
    assert_eq!(kv.get("HTTPS").map(String::as_str), Some("on"), "{text}");
    assert_eq!(kv.get("REQUEST_SCHEME").map(String::as_str), Some("https"), "{text}");
    assert_eq!(kv.get("SERVER_PORT"), Some(&s.port.to_string()), "{text}");
    assert!(kv.get("SSL_PROTOCOL").is_some_and(|p| p == "TLSv1.3" || p == "TLSv1.2"), "{text}");
    assert!(kv.get("SSL_CIPHER").is_some_and(|c| !c.is_empty() && c != "(unset)"), "{text}");
    assert!(kv.get("SSL_CIPHER_USEKEYSIZE").is_some_and(|n| n == "128" || n == "256"), "{text}");
    assert_eq!(kv.get("SSL_SESSION_RESUMED").map(String::as_str), Some("Initial"), "{text}");
    assert_eq!(kv.get("SSL_TLS_SNI").map(String::as_str), Some("a.test"), "{text}");
    // TLS 1.2 is named as such.
    let (code, out) = https(&s, &certs, "a.test", "/env.php", &["--tlsv1.2", "--tls-max", "1.2"]);
    let text = String::from_utf8_lossy(&out).into_owned();
    assert_eq!((code, key_values(&text).get("SSL_PROTOCOL").map(String::as_str)), (0, Some("TLSv1.2")), "{text}");
}

/// DirectorySlash and Redirect name this server with https://.
fn self_referential_redirects_are_https(mpm: &str) {
    let dir = TempDir::new(&format!("tls-redir-{mpm}"));
    dir.write("a/sub/page.html", "a sub page");
    let certs = Certs::make(&dir.0);
    let root = dir.0.display().to_string();
    let conf = format!("<VirtualHost *>\nServerName a.test\nDocumentRoot {root}/a\nRedirect /old /sub/page.html\n{}</VirtualHost>\n", certs.directives("a"));
    let s = Server::start_in(dir, mpm, &conf);
    let port = s.port;
    let (code, head) = https(&s, &certs, "a.test", "/sub", &["-D", "-", "-o", "/dev/null"]);
    let head = String::from_utf8_lossy(&head).into_owned();
    assert_eq!(code, 0);
    assert!(head.starts_with("HTTP/1.1 301"), "{head}");
    assert!(head.to_ascii_lowercase().contains(&format!("location: https://a.test:{port}/sub/\r\n")), "{head}");
    let (code, head) = https(&s, &certs, "a.test", "/old", &["-D", "-", "-o", "/dev/null"]);
    let head = String::from_utf8_lossy(&head).into_owned();
    assert_eq!(code, 0);
    assert!(head.starts_with("HTTP/1.1 302"), "{head}");
    assert!(head.to_ascii_lowercase().contains(&format!("location: https://a.test:{port}/sub/page.html\r\n")), "{head}");
    // Followed, over TLS.
    let (code, out) = https(&s, &certs, "a.test", "/old", &["-L"]);
    assert_eq!((code, String::from_utf8_lossy(&out).into_owned()), (0, "a sub page".to_string()));
}

/// A plain listener's RewriteRule [R=301] sends clients to the TLS
/// listener, and curl -L follows it there.
fn rewrite_from_plain_listener_to_https(mpm: &str) {
    let tls_port = free_port();
    let dir = TempDir::new(&format!("tls-rw-{mpm}"));
    standard_site(&dir);
    dir.write("a/index.html", "site a\n");
    let certs = Certs::make(&dir.0);
    let root = dir.0.display().to_string();
    // The main server (on the base port) is plain and redirects
    // everything; the TLS listener is a.test's virtual host.
    let conf = format!(
        "Listen 127.0.0.1:{tls_port} https\nRewriteEngine on\nRewriteCond %{{HTTP_HOST}} ^([^:]+)\nRewriteRule ^ https://%1:{tls_port}%{{REQUEST_URI}} [R=301,L]\n<VirtualHost 127.0.0.1:{tls_port}>\nServerName a.test\nDocumentRoot {root}/a\n{}</VirtualHost>\n",
        certs.directives("a")
    );
    let s = Server::start_in(dir, mpm, &conf);
    let plain = s.port;
    let ca = certs.ca().display().to_string();
    let (r1, r2) = (format!("a.test:{plain}:127.0.0.1"), format!("a.test:{tls_port}:127.0.0.1"));
    let url = format!("http://a.test:{plain}/index.html");
    let (code, head) = curl(&["--resolve", &r1, "-D", "-", "-o", "/dev/null", &url]);
    let head = String::from_utf8_lossy(&head).into_owned();
    assert_eq!(code, 0);
    assert!(head.starts_with("HTTP/1.1 301"), "{head}");
    assert!(head.contains(&format!("Location: https://a.test:{tls_port}/index.html\r\n")), "{head}");
    let (code, out) = curl(&["--cacert", &ca, "--resolve", &r1, "--resolve", &r2, "-L", "-w", "\n%{url_effective}", &url]);
    assert_eq!(code, 0, "{}", s.read_log("error.log"));
    assert_eq!(String::from_utf8_lossy(&out), format!("site a\n\nhttps://a.test:{tls_port}/index.html"));
}

/// mod_ssl's %{VAR}x fields in the access log.
fn ssl_fields_in_access_log(mpm: &str) {
    let (s, certs) = start(mpm, "LogFormat \"%{SSL_PROTOCOL}x %{SSL_CIPHER}x %{SSL_SESSION_RESUMED}x %{SSL_TLS_SNI}x %{HTTPS}x %U\" tlsfields\nCustomLog tls.log tlsfields");
    body(&s, &certs, "a.test", "/index.html?v13");
    let (code, _) = https(&s, &certs, "a.test", "/index.html", &["--tlsv1.2", "--tls-max", "1.2", "-o", "/dev/null"]);
    assert_eq!(code, 0);
    s.wait_log("tls.log", "TLSv1.2");
    let log = s.wait_log("tls.log", "TLSv1.3");
    let lines: Vec<Vec<&str>> = log.lines().map(|l| l.split(' ').collect()).collect();
    let v13 = lines.iter().find(|f| f[0] == "TLSv1.3").unwrap_or_else(|| panic!("{log}"));
    assert!(v13[1].starts_with("TLS_AES_") || v13[1].starts_with("TLS_CHACHA20_"), "{log}");
    assert_eq!(&v13[2..], ["Initial", "a.test", "on", "/index.html"], "{log}");
    let v12 = lines.iter().find(|f| f[0] == "TLSv1.2").unwrap_or_else(|| panic!("{log}"));
    // OpenSSL's names, as mod_ssl logs them; a.test's certificate is ECDSA.
    assert!(v12[1].starts_with("ECDHE-ECDSA-"), "{log}");
    assert_eq!(&v12[2..], ["Initial", "a.test", "on", "/index.html"], "{log}");
}

/// A client that sends its request and then close_notify (its
/// half-close: it will send nothing more, as a plain client's FIN says
/// over TCP, where warren closes at once) is answered and then closed, not
/// kept until KeepAliveTimeout (30 s here; the reads below give up after
/// 15 s). The request and the close_notify go out in one write, so that
/// they arrive together; then again through the harness's relay, which
/// sends a client's shutdown as close_notify after what came before it.
fn close_notify_ends_a_kept_alive_connection(mpm: &str) {
    let dir = TempDir::new(&format!("tls-cn-{mpm}"));
    standard_site(&dir);
    let certs = Certs::make(&dir.0);
    let s = Server::start_in(dir, mpm, &format!("{}KeepAliveTimeout 30", certs.directives("localhost")));
    // HTTP/1.1 without Connection: close: kept alive, were it not for the end.
    let request = b"GET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n";

    let mut sock = s.connect();
    sock.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let name = rustls::pki_types::ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into());
    let mut tls = rustls::ClientConnection::new(client_config(&certs.ca()), name).unwrap();
    while tls.is_handshaking() {
        tls.complete_io(&mut sock).unwrap();
    }
    tls.writer().write_all(request).unwrap();
    tls.send_close_notify();
    let mut records = Vec::new();
    while tls.wants_write() {
        tls.write_tls(&mut records).unwrap();
    }
    sock.write_all(&records).unwrap();
    let mut plain = Vec::new();
    let ended = loop {
        match tls.read_tls(&mut sock) {
            Ok(0) => break "closed by the server".to_string(),
            Ok(_) => {
                let state = tls.process_new_packets().unwrap();
                let mut buf = vec![0u8; state.plaintext_bytes_to_read()];
                std::io::Read::read_exact(&mut tls.reader(), &mut buf).unwrap();
                plain.extend_from_slice(&buf);
                if state.peer_has_closed() {
                    break "close_notify from the server".to_string();
                }
            }
            Err(e) => break format!("read: {e}"),
        }
    };
    assert_eq!(parse_response(&plain).0.text(), "0123456789abcdefghij", "{ended}");
    assert!(!ended.starts_with("read:"), "a connection whose client sent its request and close_notify together was left open: {ended}");

    let relay = Relay::start(s.port, &certs.ca());
    let mut c = TcpStream::connect(("127.0.0.1", relay.port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    c.write_all(request).unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    let (out, how) = read_to_end_of(&mut c);
    assert_eq!(parse_response(&out).0.text(), "0123456789abcdefghij", "{how}");
    assert!(how.starts_with("closed by the server"), "a connection whose client sent close_notify was left open: {how}");
}

/// A 300 KB file and a Range of it over TLS, byte for byte.
fn large_file_and_range_byte_exact(mpm: &str) {
    let (s, certs) = start(mpm, "");
    let data: Vec<u8> = (0..300 * 1024u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    s.dir.write("a/big.bin", &data);
    let (code, out) = https(&s, &certs, "a.test", "/big.bin", &["--fail"]);
    assert_eq!(code, 0);
    assert!(out == data, "300 KB over TLS: {} bytes, not the file's", out.len());
    let (code, out) = https(&s, &certs, "a.test", "/big.bin", &["--fail", "-r", "1000-200999"]);
    assert_eq!(code, 0);
    assert!(out == data[1000..201000], "range over TLS: {} bytes, not the file's", out.len());
    let (code, out) = https(&s, &certs, "a.test", "/big.bin", &["--fail", "-r", "-5000", "-D", "-"]);
    assert_eq!(code, 0);
    let (r, _) = parse_response(&out);
    assert_eq!(r.status, 206);
    let want = format!("bytes {}-{}/{}", data.len() - 5000, data.len() - 1, data.len());
    assert_eq!(r.header("Content-Range"), Some(want.as_str()));
    assert!(r.body == data[data.len() - 5000..]);
}

/// `warren -t` on `conf` (written to a fresh directory with certificates):
/// (exit code, stderr).
fn config_test(mpm: &str, tag: &str, vhost_tls: impl Fn(&Certs) -> String) -> (Option<i32>, String, String, usize) {
    let dir = TempDir::new(&format!("tls-t-{tag}-{mpm}"));
    let certs = Certs::make(&dir.0);
    let port = free_port();
    let lines = vhost_tls(&certs);
    let head = format!("LoadModule mpm_{mpm}_module modules/mod_mpm_{mpm}.so\nListen 127.0.0.1:{port} https\nServerName localhost\nDocumentRoot htdocs\nErrorLog error.log\nUser nobody\nGroup nogroup\n<VirtualHost *>\nServerName a.test\n");
    // The line of the vhost's third TLS line (SSLCertificateKeyFile, or
    // the certificate's if `lines` has two).
    let first = head.lines().count() + 1;
    let conf = dir.write("warren.conf", format!("{head}{lines}</VirtualHost>\n"));
    let out = Command::new(BIN).arg("-t").arg("-f").arg(&conf).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
    (out.status.code(), text, conf.display().to_string(), first)
}

/// A missing key file: `warren -t` fails naming the file and line.
fn config_test_names_missing_key_file(mpm: &str) {
    let (code, text, conf, first) = config_test(mpm, "nokey", |c| format!("SSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}/missing.key\n", c.cert("a").display(), c.dir.display()));
    assert_ne!(code, Some(0), "{text}");
    assert!(text.contains(&format!("{conf}:{}", first + 2)), "no {conf}:{} in:\n{text}", first + 2);
    assert!(text.contains("missing.key"), "{text}");
}

/// A certificate file that is not one, and a key that does not go with
/// its certificate: `warren -t` fails naming the directive's file and line.
fn config_test_names_broken_certificate(mpm: &str) {
    let (code, text, conf, first) = config_test(mpm, "badcert", |c| {
        let bad = c.dir.join("bad.pem");
        std::fs::write(&bad, "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n").unwrap();
        format!("SSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\n", bad.display(), c.key("a").display())
    });
    assert_ne!(code, Some(0), "a broken certificate passes warren -t:\n{text}");
    assert!(text.contains(&format!("{conf}:{}", first + 1)), "no {conf}:{} in:\n{text}", first + 1);
    // b.test's key with a.test's certificate.
    let (code, text, conf, first) =
        config_test(mpm, "mismatch", |c| format!("SSLEngine on\nSSLCertificateFile {}\nSSLCertificateKeyFile {}\n", c.cert("a").display(), c.key("b").display()));
    assert_ne!(code, Some(0), "a key that does not match its certificate passes warren -t:\n{text}");
    assert!(text.contains(&format!("{conf}:{}", first + 1)) || text.contains(&format!("{conf}:{}", first + 2)), "no {conf}:LINE in:\n{text}");
}
