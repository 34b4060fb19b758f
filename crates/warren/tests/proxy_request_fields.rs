//! The fields a backend gets, under each MPM, where mod_headers and the
//! client's Connection field meet, and where a value is not UTF-8, each
//! checked against Apache 2.4.71 with the same configuration:
//! - a field that a `RequestHeader set` rule adds and that the client
//!   names in its Connection field is not sent: Apache's mod_headers sets
//!   it in the fixups, and mod_proxy_http then clears every field the
//!   client's Connection names, whoever set it (so the client can strip a
//!   field the configuration adds for the backend, as in Apache);
//! - a client's value holding obs-text (RFC 9110 5.5: `caf\xe9`) reaches an
//!   HTTP backend and php-fpm's HTTP_* as sent, with or without a
//!   `RequestHeader` rule in force (was U+FFFD).

mod common;
#[path = "proxy_http/echo_backend.rs"]
mod echo_backend;

use common::*;

fn start(mpm: &str) -> (Fpm, Server) {
    let dir = TempDir::new(&format!("proxy-fields-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/ruled/h.php", "<?php echo $_SERVER['HTTP_X_LATIN'];");
    dir.write("htdocs/h.php", "<?php echo $_SERVER['HTTP_X_LATIN'];");
    let fpm = Fpm::start(&dir, "");
    let backend = echo_backend::start();
    let conf = format!(
        "ProxyPass /ruled/p/ http://127.0.0.1:{backend}/r/\nProxyPass /p/ http://127.0.0.1:{backend}/b/\n\
         <Location /ruled/>\n    RequestHeader set X-Added yes\n</Location>\n{}",
        fpm.php_files()
    );
    (fpm, Server::start_in(dir, mpm, &conf))
}

/// The body answering `GET path` with `fields` (raw bytes, each line ended).
fn body_for(s: &Server, path: &str, fields: &[u8]) -> Vec<u8> {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n").into_bytes();
    req.extend_from_slice(fields);
    req.extend_from_slice(b"Connection: close\r\n\r\n");
    let (r, _) = parse_response(&s.raw(&req));
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.body
}

fn a_connection_listed_field_a_rule_sets_is_not_sent(mpm: &str) {
    let (_fpm, s) = start(mpm);
    let plain = String::from_utf8_lossy(&body_for(&s, "/ruled/p/x", b"")).into_owned();
    assert!(plain.contains("\r\nX-Added: yes"), "the rule adds it: {plain}");
    for fields in [&b"Connection: X-Added\r\n"[..], b"Connection: keep-alive, x-added\r\nX-Added: client\r\n", b"Connection: X-ADDED, X-Other\r\nX-Other: 1\r\n"] {
        let got = String::from_utf8_lossy(&body_for(&s, "/ruled/p/x", fields)).to_ascii_lowercase();
        assert!(!got.contains("x-added") && !got.contains("x-other"), "{}: {got}", String::from_utf8_lossy(fields));
        assert!(got.starts_with("get /r/x http/1.1\r\n"), "{got}");
    }
}

fn obs_text_values_pass_as_sent(mpm: &str) {
    let (_fpm, s) = start(mpm);
    let value = b"caf\xe9 \xff\xfe";
    let field = [&b"X-Latin: "[..], value, b"\r\n"].concat();
    for path in ["/p/x", "/ruled/p/x"] {
        let head = body_for(&s, path, &field);
        assert!(head.windows(field.len() - 2).any(|w| w == &field[..field.len() - 2]), "{path}: {}", String::from_utf8_lossy(&head).escape_debug());
    }
    for path in ["/h.php", "/ruled/h.php"] {
        assert_eq!(body_for(&s, path, &field), value, "{path}");
    }
}

each_mpm!(a_connection_listed_field_a_rule_sets_is_not_sent, obs_text_values_pass_as_sent);
