//! A local ErrorDocument is an internal redirect, as in Apache: it goes
//! through routing, `Require`, DirectoryIndex and the handler (php-fpm, or a
//! php-cgi pool), keeps the error's status, and gives the script Apache's
//! REDIRECT_ variables. A script is never sent as text. Under each MPM.

mod common;

use common::*;

/// What the error scripts print: enough to tell which request they answer.
const VARS: &str = r#"<?php
foreach (['REDIRECT_STATUS','REDIRECT_URL','REDIRECT_QUERY_STRING','REDIRECT_REQUEST_METHOD','REQUEST_URI',
    'REQUEST_METHOD','SCRIPT_NAME','QUERY_STRING','CONTENT_LENGTH'] as $k) {
    echo $k, '=', $_SERVER[$k] ?? '(unset)', "\n";
}
echo 'input=', file_get_contents('php://input'), "\n";
"#;

fn site(dir: &TempDir) {
    standard_site(dir);
    dir.write("htdocs/err.php", VARS);
    // WordPress's own way: its front controller answers every missing URL.
    dir.write("htdocs/index.php", "<?php echo 'front controller for ', $_SERVER['REQUEST_URI'];");
    dir.write("htdocs/ok.php", "<?php header('Status: 200 OK'); echo 'found after all';");
    dir.write("htdocs/errors/index.php", "<?php echo 'directory index error page ', $_SERVER['REDIRECT_STATUS'];");
    dir.write("htdocs/denied/err.php", "<?php echo 'SECRET';");
    dir.write("htdocs/maint.html", "down for maintenance");
}

/// How `*.php` reaches PHP in a test: php-fpm's socket or a php-cgi pool.
enum Php {
    Fpm(Fpm),
    Pool,
}

fn start(mpm: &str, php: &str, extra: &str) -> (Option<Fpm>, Server) {
    let dir = TempDir::new(&format!("errdoc-{php}-{mpm}"));
    site(&dir);
    let (php, handler) = match php {
        "fpm" => {
            let fpm = Fpm::start(&dir, "");
            let h = fpm.handler();
            (Php::Fpm(fpm), h)
        }
        _ => (Php::Pool, "pool:www".to_string()),
    };
    let pool = "<Pool www>\n    Command /usr/bin/php-cgi\n    User nobody\n    Group nogroup\n    pm static\n    pm.max_children 2\n</Pool>\n";
    let conf = format!(
        "{}DirectoryIndex index.php index.html\n<FilesMatch \"\\.php$\">\n    SetHandler \"{handler}\"\n</FilesMatch>\n<Directory htdocs/denied>\n    Require all denied\n</Directory>\n{extra}",
        if matches!(php, Php::Pool) { pool } else { "" }
    );
    let s = Server::start_in(dir, mpm, &conf);
    (match php { Php::Fpm(f) => Some(f), Php::Pool => None }, s)
}

fn never_source(r: &Resp) {
    let text = r.text();
    assert!(!text.contains("<?php") && !text.contains("SECRET"), "script source or denied script in the answer:\n{text}");
}

fn script_answers_with_the_error_status(mpm: &str, php: &str) {
    let (_fpm, s) = start(mpm, php, "ErrorDocument 404 /err.php\nErrorDocument 403 /err.php");
    let r = s.get("/no/such/page?x=1&y=2");
    never_source(&r);
    assert_eq!(r.status, 404, "{}", r.text());
    let v = key_values(&r.text());
    for (k, want) in [
        ("REDIRECT_STATUS", "404"),
        ("REDIRECT_URL", "/no/such/page"),
        ("REDIRECT_QUERY_STRING", "x=1&y=2"),
        ("REDIRECT_REQUEST_METHOD", "GET"),
        ("REQUEST_URI", "/no/such/page?x=1&y=2"),
        ("REQUEST_METHOD", "GET"),
        ("SCRIPT_NAME", "/err.php"),
    ] {
        assert_eq!(v.get(k).map(String::as_str), Some(want), "{k} in\n{}", r.text());
    }
    // A 403 (a denied directory) goes the same way.
    let r = s.get("/denied/");
    never_source(&r);
    assert_eq!((r.status, key_values(&r.text()).get("REDIRECT_STATUS").cloned()), (403, Some("403".into())), "{}", r.text());
    // HEAD: the status and no body.
    let out = s.raw(b"HEAD /missing HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let (r, rest) = parse_response_for(&out, true);
    assert_eq!((r.status, r.body.len(), rest.len()), (404, 0, 0));
}

/// A POST to a missing URL: the error document gets a GET without the
/// body, the body is read and dropped, and the next request on the
/// connection gets its own answer.
fn post_body_is_not_the_documents(mpm: &str, php: &str) {
    let (_fpm, s) = start(mpm, php, "ErrorDocument 404 /err.php");
    let body = "field=value&other=thing";
    let req = format!(
        "POST /missing.php HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}GET /a.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let out = s.raw(req.as_bytes());
    let all = parse_all(&out);
    assert_eq!(all.len(), 2, "{}", String::from_utf8_lossy(&out));
    never_source(&all[0]);
    assert_eq!(all[0].status, 404);
    let v = key_values(&all[0].text());
    assert_eq!(v.get("REQUEST_METHOD").map(String::as_str), Some("GET"));
    assert_eq!(v.get("REDIRECT_REQUEST_METHOD").map(String::as_str), Some("POST"));
    assert_eq!(v.get("input").map(String::as_str), Some(""), "the error document read the client's body");
    assert_eq!((all[1].status, all[1].text().as_str()), (200, "0123456789abcdefghij"));
}

/// `ErrorDocument 404 /index.php`, as WordPress sites have it: the page is
/// rendered for the URL asked for, never sent as text.
fn front_controller(mpm: &str, php: &str) {
    let (_fpm, s) = start(mpm, php, "ErrorDocument 404 /index.php");
    let r = s.get("/2026/11/hello-world/");
    never_source(&r);
    assert_eq!((r.status, r.text().as_str()), (404, "front controller for /2026/11/hello-world/"));
}

/// A script's own Status wins; the document's access rules and
/// DirectoryIndex apply; a document that fails leaves the built-in page.
fn documents_are_routed(mpm: &str, php: &str) {
    let (_fpm, s) = start(
        mpm,
        php,
        "ErrorDocument 404 /ok.php\n<Location /idx>\nErrorDocument 404 /errors/\n</Location>\n<Location /hidden>\nErrorDocument 404 /denied/err.php\n</Location>\n<Location /gone>\nErrorDocument 404 /gone-too.php\n</Location>",
    );
    let r = s.get("/whatever");
    assert_eq!((r.status, r.text().as_str()), (200, "found after all"));
    let r = s.get("/idx/missing");
    assert_eq!((r.status, r.text().as_str()), (404, "directory index error page 404"));
    let r = s.get("/hidden/missing");
    never_source(&r);
    assert_eq!(r.status, 404);
    assert!(r.text().contains("<h1>Not Found</h1>"), "{}", r.text());
    let log = s.wait_log("error.log", "ErrorDocument 404 /denied/err.php answered 403");
    assert!(log.contains("127.0.0.1"), "{log}");
    let r = s.get("/gone/missing");
    assert_eq!(r.status, 404);
    assert!(r.text().contains("<h1>Not Found</h1>"), "{}", r.text());
}

/// The backend is down: a static ErrorDocument 503 is served with the
/// 503; a script one (on the same dead backend) falls back to the
/// built-in page, once, without a loop.
fn backend_down(mpm: &str) {
    let dir = TempDir::new(&format!("errdoc-down-{mpm}"));
    site(&dir);
    dir.write("htdocs/hello.php", "<?php echo 'hello';");
    dir.write("htdocs/scripted/x.php", "<?php echo 'x';");
    let dead = dir.0.join("nobody-listens.sock");
    let conf = format!(
        "<FilesMatch \"\\.php$\">\n    SetHandler \"proxy:unix:{}|fcgi://localhost\"\n</FilesMatch>\nErrorDocument 503 /maint.html\n<Location /scripted>\nErrorDocument 503 /err.php\n</Location>\n",
        dead.display()
    );
    let s = Server::start_in(dir, mpm, &conf);
    let r = s.get("/hello.php");
    assert_eq!((r.status, r.text().as_str()), (503, "down for maintenance"));
    let r = s.get("/scripted/x.php");
    never_source(&r);
    assert_eq!(r.status, 503);
    assert!(r.text().contains("Service Unavailable"), "{}", r.text());
}

/// Each case once with php-fpm and once with a php-cgi pool.
macro_rules! with_each_php {
    ($($case:ident: $fpm:ident, $pool:ident;)*) => {
        $(
            fn $fpm(mpm: &str) {
                $case(mpm, "fpm")
            }
            fn $pool(mpm: &str) {
                $case(mpm, "pool")
            }
        )*
    };
}

with_each_php! {
    script_answers_with_the_error_status: fpm_script_answers_with_the_error_status, pool_script_answers_with_the_error_status;
    post_body_is_not_the_documents: fpm_post_body_is_not_the_documents, pool_post_body_is_not_the_documents;
    front_controller: fpm_front_controller, pool_front_controller;
    documents_are_routed: fpm_documents_are_routed, pool_documents_are_routed;
}

each_mpm!(
    fpm_script_answers_with_the_error_status,
    pool_script_answers_with_the_error_status,
    fpm_post_body_is_not_the_documents,
    pool_post_body_is_not_the_documents,
    fpm_front_controller,
    pool_front_controller,
    fpm_documents_are_routed,
    pool_documents_are_routed,
    backend_down,
);
