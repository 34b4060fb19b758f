//! URL paths that decode to bytes that are not UTF-8 (`/caf%E9`, a name
//! in Latin-1 as legacy sites have them; `%FF`) through mod_rewrite,
//! RedirectMatch, ProxyPassMatch and AliasMatch, as Apache 2.4 carries
//! them: r->uri is the decoded path as bytes, the pattern matches those
//! bytes, `$1` is those bytes. So a query made from `$1` reaches the
//! script with the byte E9 (`%e9` under `[B]`), a redirect escapes it as
//! `%e9`, a backend's request line has `%E9`, and AliasMatch finds the
//! file whose name has the byte E9. Each expected value is what Apache
//! 2.4.71 (Debian) answered to the same request and the same lines. warren
//! read such a path as text (U+FFFD, EF BF BD, for each byte that is not
//! UTF-8) before it matched it.

mod common;
#[path = "proxy_http/echo_backend.rs"]
mod echo_backend;

use std::os::unix::ffi::OsStrExt;

use common::*;

/// The requests, each with the value Apache gives `$1` for it.
const PATHS: &[(&[u8], &[u8])] = &[(b"caf%E9", b"caf\xe9"), (b"caf%C3%A9", b"caf\xc3\xa9"), (b"a%FFb/c", b"a\xffb/c")];

/// `$1` as `[B]` escapes it (Apache's lower-case hex, `/` escaped too).
fn escaped_b(v: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for &b in v {
        if b.is_ascii_alphanumeric() || b == b'_' {
            out.push(b);
        } else {
            out.extend_from_slice(format!("%{b:02x}").as_bytes());
        }
    }
    out
}

/// `$1` as a redirect escapes it (ap_escape_uri: `/` stays).
fn escaped_uri(v: &[u8]) -> String {
    v.iter().map(|&b| if b.is_ascii_alphanumeric() || b"/-_.".contains(&b) { (b as char).to_string() } else { format!("%{b:02x}") }).collect()
}

/// A site whose script answers with its QUERY_STRING, byte for byte, and
/// the rules of the comparison in the server and in `.htaccess` files.
fn start(mpm: &str) -> (Server, u16) {
    let backend = echo_backend::start();
    let dir = TempDir::new(&format!("rewrite-bytes-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/show.php", "<?php echo $_SERVER['QUERY_STRING'], '|', $_SERVER['REDIRECT_URL'] ?? '';");
    dir.write("htdocs/hq/.htaccess", "RewriteEngine On\nRewriteRule ^(.*)$ /show.php?p=$1\n");
    dir.write("htdocs/hb/.htaccess", "RewriteEngine On\nRewriteRule ^(.*)$ /show.php?p=$1 [B]\n");
    dir.write("htdocs/hr/.htaccess", "RewriteEngine On\nRewriteRule ^(.*)$ /new/$1 [R=301]\n");
    // WordPress's rules, as its .htaccess has them.
    dir.write("htdocs/wp/.htaccess", "RewriteEngine On\nRewriteBase /wp/\nRewriteRule ^index\\.php$ - [L]\nRewriteCond %{REQUEST_FILENAME} !-f\nRewriteCond %{REQUEST_FILENAME} !-d\nRewriteRule . /wp/index.php [L]\n");
    dir.write("htdocs/wp/index.php", "<?php echo $_SERVER['SCRIPT_NAME'], '|', $_SERVER['PATH_INFO'] ?? '-', '|', $_SERVER['QUERY_STRING'];");
    // Directories named in Latin-1 with their own .htaccess files.
    let htdocs = dir.0.join("htdocs");
    let latin1 = htdocs.join(std::ffi::OsStr::from_bytes(b"d\xe9"));
    std::fs::create_dir_all(&latin1).unwrap();
    std::fs::write(latin1.join(".htaccess"), "RewriteEngine On\nRewriteRule ^x(.*)$ /show.php?p=ok$1\n").unwrap();
    std::fs::write(latin1.join("i.php"), "<?php echo $_SERVER['SCRIPT_FILENAME'], '|', $_SERVER['SCRIPT_NAME'], '|', $_SERVER['PATH_INFO'];").unwrap();
    let denied = htdocs.join(std::ffi::OsStr::from_bytes(b"den\xe9"));
    std::fs::create_dir_all(&denied).unwrap();
    std::fs::write(denied.join(".htaccess"), "Require all denied\n").unwrap();
    std::fs::write(denied.join("secret.txt"), "secret").unwrap();
    // Files named with the bytes themselves, for AliasMatch.
    let names = dir.0.join("names");
    std::fs::create_dir_all(names.join(std::ffi::OsStr::from_bytes(b"a\xffb"))).unwrap();
    std::fs::create_dir_all(names.join("fm").join(std::ffi::OsStr::from_bytes(b"a\xffb"))).unwrap();
    for (_, name) in PATHS {
        std::fs::write(names.join(std::ffi::OsStr::from_bytes(name)), [b"file:", *name].concat()).unwrap();
        std::fs::write(names.join("fm").join(std::ffi::OsStr::from_bytes(name)), b"fm").unwrap();
    }
    let conf = format!(
        "<Pool www>\n    Command /usr/bin/php-cgi\n    User nobody\n    Group nogroup\n</Pool>\n\
         <FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n\
         <Directory {root}/htdocs>\n    Options FollowSymLinks\n    AllowOverride All\n</Directory>\n\
         RewriteEngine On\n\
         RewriteRule ^/q/(.*)$ /show.php?p=$1\n\
         RewriteRule ^/b/(.*)$ /show.php?p=$1 [B]\n\
         RewriteRule ^/old/(.*)$ /new/$1 [R=301]\n\
         RewriteRule ^/qsa/(.*)$ /show.php?p=$1 [QSA]\n\
         RewriteRule ^/pt/(.*)$ /m/$1 [PT]\n\
         RewriteCond %{{REQUEST_URI}} ^/c/(.*)$\n\
         RewriteRule ^ /show.php?p=%1\n\
         <LocationMatch \"^/lm/caf.$\">\n    Require all denied\n</LocationMatch>\n\
         <Directory {root}/names/fm>\n    <FilesMatch \"^caf.$\">\n        Require all denied\n    </FilesMatch>\n</Directory>\n\
         ProxyPassMatch ^/m/(.*)$ http://127.0.0.1:{backend}/$1\n\
         <Proxy balancer://bx>\n    BalancerMember http://127.0.0.1:{backend}\n</Proxy>\n\
         ProxyPass /bal/ balancer://bx/\n\
         ProxyPassMatch ^/bm/(.*)$ balancer://bx/$1\n\
         RedirectMatch ^/r/(.*)$ /s/$1\n\
         Redirect /rp /t\n\
         AliasMatch ^/al/(.*)$ {root}/names/$1\n",
        root = dir.0.display()
    );
    (Server::start_in(dir, mpm, &conf), backend)
}

/// `GET target` on its own connection: the status, Location and body.
fn ask(s: &Server, target: &[u8]) -> (u16, Option<String>, Vec<u8>) {
    let r = s.get_target(target);
    let location = r.header("location").map(str::to_string);
    (r.status, location, r.body)
}

/// Bytes as they are, `\xe9` for one that is not printable ASCII (never
/// a lossy reading: U+FFFD would make E9 and EF BF BD look alike).
fn shown(b: &[u8]) -> String {
    b.escape_ascii().to_string()
}

/// `RewriteRule ... /show.php?p=$1` in the server and in `.htaccess`:
/// the script's QUERY_STRING holds the path's bytes (the client's own
/// query is replaced, as there is no `[QSA]`); with `[B]` each of them
/// escaped; with `[QSA]` the client's query after them; from a condition
/// on `%{REQUEST_URI}` (`%1`) the same bytes. The `.htaccess` rule's
/// internal redirect gives REDIRECT_URL, the path it left, as its bytes too.
fn a_query_made_from_a_back_reference_carries_the_bytes(mpm: &str) {
    let (s, _) = start(mpm);
    for (path, value) in PATHS {
        for query in [&b""[..], b"?q=%E9"] {
            for (prefix, b_flag) in [("/q/", false), ("/hq/", false), ("/b/", true), ("/hb/", true), ("/qsa/", false), ("/c/", false)] {
                let target = [prefix.as_bytes(), path, query].concat();
                let (status, _, body) = ask(&s, &target);
                let redirect_url = if prefix.starts_with("/h") { [prefix.as_bytes(), value].concat() } else { Vec::new() };
                let appended = if prefix == "/qsa/" && !query.is_empty() { [b"&", &query[1..]].concat() } else { Vec::new() };
                let want = [&b"p="[..], &if b_flag { escaped_b(value) } else { value.to_vec() }, &appended, b"|", &redirect_url].concat();
                assert_eq!((status, shown(&body)), (200, shown(&want)), "{}", shown(&target));
            }
        }
    }
}

/// `[R=301]` in the server and in `.htaccess`, RedirectMatch and Redirect: the
/// Location has the path's bytes escaped (`%e9`), the client's query as
/// it came.
fn a_redirect_escapes_the_bytes(mpm: &str) {
    let (s, _) = start(mpm);
    for (path, value) in PATHS {
        for query in ["", "?q=%E9"] {
            for (prefix, to, status) in [("/old/", "/new/", 301), ("/hr/", "/new/", 301), ("/r/", "/s/", 302), ("/rp/", "/t/", 302)] {
                let target = [prefix.as_bytes(), path, query.as_bytes()].concat();
                let (got, location, _) = ask(&s, &target);
                let location = location.unwrap_or_default();
                let want = format!("{to}{}{query}", escaped_uri(value));
                assert_eq!(got, status, "{}", shown(&target));
                assert!(location.starts_with("http://localhost") && location.ends_with(&want), "{}: Location {location}, want ...{want}", shown(&target));
            }
        }
    }
    // RedirectMatch escapes what its pattern took, CR LF too (warren wrote
    // them raw into the field, which its writer turned into spaces).
    let (_, location, _) = ask(&s, b"/r/a%0d%0aX-Injected:%20y");
    assert_eq!(location.as_deref(), Some("http://localhost/s/a%0d%0aX-Injected:%20y"));
}

/// ProxyPassMatch, a `[PT]` rule that hands its result to it, and a
/// balancer's ProxyPass and ProxyPassMatch: the backend's request line
/// has the path's bytes encoded as they came;
/// AliasMatch: the file named with those bytes is served; LocationMatch
/// and FilesMatch: `.` is one byte.
fn proxy_pass_match_and_alias_match_take_the_bytes(mpm: &str) {
    let (s, _) = start(mpm);
    for (path, value) in PATHS {
        for query in [&b""[..], b"?q=%E9"] {
            for prefix in [&b"/m/"[..], b"/pt/", b"/bal/", b"/bm/"] {
                let target = [prefix, *path, query].concat();
                let (status, _, body) = ask(&s, &target);
                let line = [b"GET /", *path, query, b" HTTP/1.1\r\n"].concat();
                assert_eq!(status, 200, "{}", shown(&target));
                assert!(body.starts_with(&line), "{}: the backend read {}", shown(&target), shown(&body));
            }
            let target = [b"/al/", *path, query].concat();
            let (status, _, body) = ask(&s, &target);
            assert_eq!((status, shown(&body)), (200, shown(&[b"file:", *value].concat())), "{}", shown(&target));
            // Denied where the pattern's `.` takes the one byte E9 only.
            let target = [b"/lm/", *path, query].concat();
            let want = if *value == b"caf\xe9" { 403 } else { 404 };
            assert_eq!(ask(&s, &target).0, want, "{}", shown(&target));
            let target = [b"/al/fm/", *path, query].concat();
            let want = if *value == b"caf\xe9" { 403 } else { 200 };
            assert_eq!(ask(&s, &target).0, want, "{}", shown(&target));
        }
    }
}

/// A front controller's path info under WordPress's rules: the file is
/// split off the path by its bytes (as text, `/index.php/caf%E9` was split
/// at the wrong place, the rules then sent it to index.php without its path
/// info); Apache gives PATH_INFO=/caf\xe9.
fn a_front_controllers_path_info_keeps_the_bytes(mpm: &str) {
    let (s, _) = start(mpm);
    for (path, value) in PATHS {
        let target = [b"/wp/index.php/", *path, b"?q=%E9"].concat();
        let (status, _, body) = ask(&s, &target);
        let want = [&b"/wp/index.php|/"[..], value, b"|q=%E9"].concat();
        assert_eq!((status, shown(&body)), (200, shown(&want)), "{}", shown(&target));
    }
}

/// The `.htaccess` file of a directory whose name is not UTF-8 (`d` E9)
/// applies to what is in it: Apache 2.4.71 runs its rules (the query gets
/// `ok` and the byte E9) and its `Require all denied` (403). warren looked
/// for the file under the name read as text (U+FFFD), found none, and so
/// served the directory's files as if it had no `.htaccess`.
fn the_htaccess_of_a_directory_named_in_latin1_applies(mpm: &str) {
    let (s, _) = start(mpm);
    let (status, _, body) = ask(&s, b"/d%E9/x%E9");
    assert_eq!(status, 200, "{}", shown(&body));
    assert!(body.starts_with(b"p=ok\xe9|"), "{}", shown(&body));
    let (status, _, body) = ask(&s, b"/den%E9/secret.txt");
    assert_eq!((status, body.windows(6).any(|w| w == b"secret")), (403, false), "{}", shown(&body));
}

/// A PHP script in such a directory runs, its SCRIPT_FILENAME, SCRIPT_NAME
/// and PATH_INFO the bytes (Apache 2.4.71: `.../d\xe9/i.php`, `/d\xe9/i.php`,
/// `/pi\xe9`). warren gave the pool the file name as text and answered 404.
fn a_script_in_a_directory_named_in_latin1_runs(mpm: &str) {
    let (s, _) = start(mpm);
    let (status, _, body) = ask(&s, b"/d%E9/i.php/pi%E9");
    assert_eq!(status, 200, "{}", shown(&body));
    let fields: Vec<&[u8]> = body.split(|&b| b == b'|').collect();
    assert_eq!(fields.len(), 3, "{}", shown(&body));
    assert!(fields[0].ends_with(b"/htdocs/d\xe9/i.php"), "{}", shown(&body));
    assert_eq!((shown(fields[1]), shown(fields[2])), (shown(b"/d\xe9/i.php"), shown(b"/pi\xe9")));
}

each_mpm!(the_htaccess_of_a_directory_named_in_latin1_applies, a_script_in_a_directory_named_in_latin1_runs, a_front_controllers_path_info_keeps_the_bytes, a_query_made_from_a_back_reference_carries_the_bytes, a_redirect_escapes_the_bytes, proxy_pass_match_and_alias_match_take_the_bytes);
