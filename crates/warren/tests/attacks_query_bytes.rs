//! Attacks on the bytes a query carries past warren since it passes them
//! as the client sent them (issue 36), played by an anonymous client
//! against a server whose administrator wrote ordinary rules: a rewrite
//! rule that puts a back-reference (the decoded path, so `%0d%0a` is CR
//! LF there) into the query of a `[PT]` substitution handed to a
//! ProxyPass route, the shape of Apache's CVE-2023-25690. The client
//! tries to end the backend's request line early and add a field of its
//! own or a second request (CR LF, a bare LF, a space and a fake version,
//! a tab, DEL, NUL), and the same bytes in the path instead of the query;
//! its own query with obs-text and percent-encoded CR LF must still go
//! through as data. (`#` is not tried: what a fragment in a request
//! target should become is not settled here.) The backend is the echo
//! backend: each request head it reads is answered with that head, so a
//! second request or a field the client made up shows in what it read.
//! Since prefix routes match on the path's bytes, a `<Location>` denial in
//! front of a route is also tried with the same path spelled differently.

mod common;
#[path = "proxy_http/echo_backend.rs"]
mod echo_backend;

use common::*;

/// The rules capture with `[^/]*`, which takes a CR or LF as any other
/// byte (warren's `.` does not match a line end; Apache's does, its
/// RegexDefaultOptions being DOTALL).
fn start(mpm: &str) -> Server {
    let backend = echo_backend::start();
    let conf = format!(
        "ProxyPass /p/ http://127.0.0.1:{backend}/b/\n\
         RewriteEngine On\n\
         RewriteRule ^/pt/([^/]*)$ /p/y?q=$1 [PT]\n\
         RewriteRule ^/path/([^/]*)$ /p/$1 [PT]\n"
    );
    Server::start(mpm, &conf)
}

/// `GET target` on its own connection: the status and body.
fn ask(s: &Server, target: &[u8]) -> (u16, Vec<u8>) {
    let r = s.get_target(target);
    (r.status, r.body)
}

/// Control bytes a back-reference decodes into the query of a `[PT]`
/// rule never reach the backend's request line raw: the rule's result is
/// refused (403, as Apache 2.4.58 refuses a rewritten query string with
/// control characters or spaces), and the backend reads nothing.
fn a_back_reference_cannot_split_the_backends_request(mpm: &str) {
    let s = start(mpm);
    for target in [
        &b"/pt/%0d%0aX-Injected:%20yes"[..],
        b"/pt/%0aX-Injected:%20yes",
        b"/pt/x%20HTTP%0d%0aHost:%20evil%0d%0a%0d%0aGET%20smuggled",
        b"/pt/a%20HTTP",
        b"/pt/a%09b",
        b"/pt/a%7fb",
    ] {
        let shown = String::from_utf8_lossy(target).into_owned();
        let (status, body) = ask(&s, target);
        let head = String::from_utf8_lossy(&body);
        assert!(!head.contains("X-Injected") && !head.contains("evil") && !head.contains("smuggled"), "{shown}: the backend read {head:?}");
        assert_eq!(status, 403, "{shown}: the backend read {head:?}");
    }
    // NUL is refused before any rule sees it.
    let (status, body) = ask(&s, b"/pt/a%00X-Injected:%20yes");
    assert_ne!(status, 200, "the backend read {:?}", String::from_utf8_lossy(&body));
    let log = s.wait_log("error.log", "rewritten query string contains control characters or spaces");
    assert!(log.contains("rewritten query string contains control characters or spaces"), "{log}");
    // The same rule with harmless bytes goes through, its query as made.
    let (status, body) = ask(&s, b"/pt/a-b.c");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert!(body.starts_with(b"GET /b/y?q=a-b.c HTTP/1.1\r\n"), "{}", String::from_utf8_lossy(&body));
}

/// The same bytes in the path part of a `[PT]` substitution are encoded
/// again for the backend's request line.
fn control_bytes_in_a_rewritten_path_are_encoded(mpm: &str) {
    let s = start(mpm);
    let (status, body) = ask(&s, b"/path/a%0d%0aX-Injected:%20yes%20HTTP");
    let head = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{head}");
    assert!(head.starts_with("GET /b/a%0D%0AX-Injected:%20yes%20HTTP HTTP/1.1\r\n"), "{head:?}");
    assert!(!head.contains("\r\nX-Injected"), "{head:?}");
}

/// A client's own query is data however it is spelled: percent-encoded
/// CR LF stays encoded, obs-text passes as sent, and neither makes
/// a second request on the backend connection.
fn a_clients_query_stays_data(mpm: &str) {
    let s = start(mpm);
    let query = b"a=%0d%0aX-Injected:%20yes&b=\xff\xfe&c=%2523";
    let mut target = b"/p/x?".to_vec();
    target.extend_from_slice(query);
    let (status, body) = ask(&s, &target);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let mut line = b"GET /b/x?".to_vec();
    line.extend_from_slice(query);
    line.extend_from_slice(b" HTTP/1.1\r\n");
    assert!(body.starts_with(&line), "{}", String::from_utf8_lossy(&body).escape_debug());
    assert!(!body.windows(13).any(|w| w == b"\r\nX-Injected:"), "{}", String::from_utf8_lossy(&body).escape_debug());
    // Raw control bytes and spaces in the client's own target never get
    // that far: the request is bad.
    for bad in [&b"/p/x?a=\x01"[..], b"/p/x?a=\x7f", b"/p/x?a=b\tc"] {
        let mut req = b"GET ".to_vec();
        req.extend_from_slice(bad);
        req.extend_from_slice(b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        let (r, _) = parse_response(&s.raw(&req));
        assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(bad).escape_debug());
    }
}


/// A `<Location>` denial in front of a ProxyPass route holds for every
/// spelling of its path that the route maps to it (encoded letters, dot
/// segments, doubled slashes, a trailing slash, a query); the spellings
/// it refuses (`%2F`, `%00`, a backslash) never reach the backend. Two
/// are not the location, in Apache either (its `<Location /p/secret>` is
/// that path or below it): `;x` and the overlong `%C0%AF`, which reach the
/// backend encoded as they came, never as `/secret/`.
fn a_location_denial_holds_for_every_spelling(mpm: &str) {
    let backend = echo_backend::start();
    let conf = format!("ProxyPass /p/ http://127.0.0.1:{backend}/b/\n<Location /p/secret>\n    Require all denied\n</Location>\n");
    let s = Server::start(mpm, &conf);
    let denied = [&b"/p/secret"[..], b"/p//secret", b"/p/./secret", b"/p/x/../secret", b"/p/%2e/secret", b"/p/%73ecret", b"/p/secret/", b"//p/secret", b"/p/secret?x", b"/p/S%65cret/../secret"];
    for target in denied {
        assert_eq!(ask(&s, target).0, 403, "{}", String::from_utf8_lossy(target));
    }
    for target in [&b"/p/secret%2F"[..], b"/p/secret%00", b"/p/%2fsecret", b"/p\\secret"] {
        let (status, body) = ask(&s, target);
        assert!(status == 403 || status == 404 || status == 400, "{}: {status} {}", String::from_utf8_lossy(target), String::from_utf8_lossy(&body));
    }
    for (target, line) in [(&b"/p/secret;x"[..], &b"GET /b/secret;x HTTP/1.1\r\n"[..]), (b"/p/secret%C0%AF", b"GET /b/secret%C0%AF HTTP/1.1\r\n"), (b"/p/secret%c0%af/x", b"GET /b/secret%C0%AF/x HTTP/1.1\r\n")] {
        let (status, body) = ask(&s, target);
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(target));
        assert!(body.starts_with(line), "{}: the backend read {}", String::from_utf8_lossy(target), String::from_utf8_lossy(&body).escape_debug());
    }
}


/// `$` in a `<FilesMatch>` ends the name only (Apache 2.4.30's default
/// RegexDefaultOptions DOLLAR_ENDONLY, after CVE-2017-15715): a file named
/// `x.php` and a line feed (an upload filter that wants names ending in
/// `php` lets it in) is not PHP. PCRE2's own `$` also matches before a
/// final line feed, and a php-cgi pool ran the file (php-fpm's
/// security.limit_extensions refuses it); crates/regex makes `$` `\z`.
fn a_line_feed_after_the_extension_is_not_php(mpm: &str) {
    let dir = TempDir::new(&format!("dollar-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/x.php\n", "<?php echo 'ran', 6 * 7;");
    dir.write("htdocs/y.php", "<?php echo 'ran', 6 * 7;");
    let conf = "<Pool www>\n    Command /usr/bin/php-cgi\n    User nobody\n    Group nogroup\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n";
    let s = Server::start_in(dir, mpm, conf);
    let (status, body) = ask(&s, b"/y.php");
    assert_eq!((status, String::from_utf8_lossy(&body).into_owned()), (200, "ran42".to_string()), "the pool runs PHP");
    let (_, body) = ask(&s, b"/x.php%0a");
    assert!(!body.windows(5).any(|w| w == b"ran42"), "x.php\\n ran as PHP: {}", String::from_utf8_lossy(&body));
}

/// A `(?m)` in one group of a pattern gives its own `$` the line-feed
/// meaning only, as PCRE2 scopes it under Apache: `/y` and a line feed is
/// not `^/y$` because `(?m)` appears elsewhere in the pattern (Apache
/// 2.4.71 answers 404 to it and 200 to `/z` and a line feed). warren kept
/// every `$` of a pattern holding `(?m)` anywhere, also in a class.
fn a_multi_line_group_leaves_the_other_anchors_end_only(mpm: &str) {
    let dir = TempDir::new(&format!("dollar-m-{mpm}"));
    standard_site(&dir);
    let conf = "RewriteEngine On\nRewriteRule \"^/(?:(?m)z$)|^/y$\" /a.txt [L]\nRewriteRule \"^/[(?m)]$\" /a.txt [L]\n";
    let s = Server::start_in(dir, mpm, conf);
    for (path, want) in [(&b"/y"[..], 200), (b"/y%0a", 404), (b"/z%0a", 200), (b"/m", 200), (b"/m%0a", 404)] {
        assert_eq!(ask(&s, path).0, want, "{}", String::from_utf8_lossy(path));
    }
}

each_mpm!(a_back_reference_cannot_split_the_backends_request, control_bytes_in_a_rewritten_path_are_encoded, a_clients_query_stays_data, a_location_denial_holds_for_every_spelling, a_line_feed_after_the_extension_is_not_php, a_multi_line_group_leaves_the_other_anchors_end_only);
