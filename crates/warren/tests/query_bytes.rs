//! A query string's bytes reach whatever answers the request as the
//! client sent them, as Apache passes `r->args`: raw bytes that are not
//! UTF-8 stay those bytes (no U+FFFD), percent-encoded ones stay encoded;
//! a path's bytes that are not UTF-8 reach a ProxyPass backend encoded
//! as they are (`%FF`), as Apache re-encodes the decoded path.
//! Checked on each way a query goes on, under each MPM: a ProxyPass to an
//! HTTP backend and a balancer member (the backend's request line), a CGI
//! program and php-fpm (QUERY_STRING) reached directly, through a server
//! rewrite rule that keeps the query or appends to it (`[QSA]`), through one
//! that writes `%{QUERY_STRING}` into the new query, and through a rule in
//! an `.htaccess` (QUERY_STRING and REDIRECT_QUERY_STRING); and the access
//! log, which escapes them as Apache does.

mod common;
#[path = "proxy_http/echo_backend.rs"]
mod echo_backend;

use std::os::unix::fs::PermissionsExt;

use common::*;

/// Not UTF-8: a lone byte, a broken sequence, a surrogate's encoding and
/// an overlong `/`; with encoded bytes beside them that must stay encoded.
const QUERY: &[u8] = b"a=%FF&b=\xff\xfe&c=\xc3&d=\xed\xa0\x80&e=\xc0\xaf&f=%2F%C3%A9&g=\xc3\xa9";

fn program(dir: &TempDir, rel: &str, text: &str) {
    let p = dir.write(rel, text);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn start(mpm: &str) -> (Fpm, Server) {
    let dir = TempDir::new(&format!("query-bytes-{mpm}"));
    standard_site(&dir);
    program(&dir, "cgi-bin/q.cgi", "#!/bin/sh\nprintf 'Content-Type: application/octet-stream\\n\\n'\nprintf '%s' \"$QUERY_STRING\"\n");
    dir.write("htdocs/q.php", "<?php echo $_SERVER['QUERY_STRING'];");
    dir.write("htdocs/app/q.php", "<?php echo $_SERVER['QUERY_STRING'];");
    dir.write("htdocs/app/.htaccess", "RewriteEngine On\nRewriteRule ^front$ q.php [L]\nRewriteRule ^redirected$ r.php [L]\n");
    dir.write("htdocs/app/r.php", "<?php echo $_SERVER['REDIRECT_QUERY_STRING'];");
    let fpm = Fpm::start(&dir, "");
    let backend = echo_backend::start();
    let d = dir.0.display().to_string();
    let conf = format!(
        "LogFormat \"%q\" query\nCustomLog query.log query\n\
         ProxyPass /p/ http://127.0.0.1:{backend}/b/\n\
         <Proxy balancer://pair>\n  BalancerMember http://127.0.0.1:{backend}/m\n</Proxy>\nProxyPass /bal/ balancer://pair/\n\
         ScriptAlias /cgi-bin/ {d}/cgi-bin/\n<Directory {d}/cgi-bin>\n    Require all granted\n</Directory>\n\
         <Directory {d}/htdocs>\n    AllowOverride FileInfo\n</Directory>\n{}\
         RewriteEngine On\nRewriteRule ^/kept$ /cgi-bin/q.cgi [PT]\nRewriteRule ^/appended$ /cgi-bin/q.cgi?x=1 [PT,QSA]\nRewriteRule ^/written$ /cgi-bin/q.cgi?was=%{{QUERY_STRING}}&y=2 [PT]\n",
        fpm.php_files()
    );
    (fpm, Server::start_in(dir, mpm, &conf))
}

/// The body of the answer to `GET path?QUERY` (the echo backend's: the
/// request head it got).
fn body_for(s: &Server, path: &str) -> Vec<u8> {
    let mut req = format!("GET {path}?").into_bytes();
    req.extend_from_slice(QUERY);
    req.extend_from_slice(b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let (r, _) = parse_response(&s.raw(&req));
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.body
}

fn with(prefix: &[u8], suffix: &[u8]) -> Vec<u8> {
    [prefix, QUERY, suffix].concat()
}

fn proxied_query_passes_as_sent(mpm: &str) {
    let (_fpm, s) = start(mpm);
    let shown = |b: &[u8]| String::from_utf8_lossy(b).escape_debug().to_string();
    for (path, expect) in [("/p/x", with(b"GET /b/x?", b" HTTP/1.1")), ("/bal/x", with(b"GET /m/x?", b" HTTP/1.1")), ("/p/%FF%c3%a9%20", with(b"GET /b/%FF%C3%A9%20?", b" HTTP/1.1"))] {
        let head = body_for(&s, path);
        let got = head.split(|&b| b == b'\r').next().unwrap_or_default();
        assert_eq!(got, expect, "{path}: the backend got {}", shown(got));
    }
}

fn scripts_get_the_query_as_sent(mpm: &str) {
    let (_fpm, s) = start(mpm);
    let shown = |b: &[u8]| String::from_utf8_lossy(b).escape_debug().to_string();
    for (path, expect) in [
        ("/cgi-bin/q.cgi", QUERY.to_vec()),
        ("/q.php", QUERY.to_vec()),
        ("/kept", QUERY.to_vec()),
        ("/appended", with(b"x=1&", b"")),
        ("/written", with(b"was=", b"&y=2")),
        ("/app/front", QUERY.to_vec()),
        ("/app/redirected", QUERY.to_vec()),
    ] {
        let got = body_for(&s, path);
        assert_eq!(got, expect, "{path}: QUERY_STRING was {}", shown(&got));
    }
}

fn the_access_log_escapes_the_query(mpm: &str) {
    let (_fpm, s) = start(mpm);
    body_for(&s, "/p/x");
    let log = s.wait_log("query.log", "?a=");
    assert!(log.contains(r"?a=%FF&b=\xff\xfe&c=\xc3&d=\xed\xa0\x80&e=\xc0\xaf&f=%2F%C3%A9&g=\xc3\xa9"), "{log}");
}

each_mpm!(proxied_query_passes_as_sent, scripts_get_the_query_as_sent, the_access_log_escapes_the_query);
