//! mod_headers, mod_expires and the request environment (mod_env,
//! mod_setenvif) under each MPM, as real sites write them: security headers
//! in `<IfModule mod_headers.c>` on static files, PHP answers (a php-cgi
//! pool) and error pages; headers an application sets removed or edited;
//! RequestHeader and SetEnv reaching PHP; `env=` and `expr=` conditions;
//! Expires by type, by default and from `.htaccess`.

mod common;

use std::io::Write;
use std::time::{Duration, SystemTime};

use common::*;

/// Prints what PHP sees, and sets headers for Header to act on.
const SHOW_PHP: &str = "<?php\nheader('X-Powered-By: PHP/test');\nheader('X-App-Flag: raw-value');\n\
    foreach (['HTTP_X_ADDED', 'HTTP_X_SECRET', 'HTTP_USER_AGENT', 'SITE_NAME', 'in_area', 'is_bot'] as $k) {\n    echo $k, '=', $_SERVER[$k] ?? '-', \"\\n\";\n}\n";

/// A site with a php-cgi pool for `.php` files and `extra` configuration.
fn start(mpm: &str, tag: &str, extra: &str) -> Server {
    let dir = TempDir::new(&format!("hdr-{tag}-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/show.php", SHOW_PHP);
    dir.write("htdocs/area/show.php", SHOW_PHP);
    dir.write("htdocs/style.css", "body{}");
    dir.write("htdocs/pic.png", b"\x89PNG\r\n\x1a\n");
    let conf = format!(
        "<Pool app>\n    Command php-cgi\n    pm static\n    pm.max_children 1\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:app\n</FilesMatch>\n{extra}\n"
    );
    Server::start_in(dir, mpm, &conf)
}

const SECURITY: &str = r#"<IfModule mod_headers.c>
    Header always set Strict-Transport-Security "max-age=31536000; includeSubDomains"
    Header set X-Content-Type-Options nosniff
    Header unset X-Powered-By
    Header edit X-App-Flag ^raw-(.*)$ edited-$1
</IfModule>"#;

fn security_headers_on_static_php_and_error_answers(mpm: &str) {
    let s = start(mpm, "sec", &format!("{SECURITY}\nLimitRequestBody 10\n"));
    let hsts = Some("max-age=31536000; includeSubDomains");
    let r = s.get("/index.html");
    assert_eq!(r.status, 200);
    assert_eq!((r.header("Strict-Transport-Security"), r.header("X-Content-Type-Options")), (hsts, Some("nosniff")));

    let r = s.get("/show.php");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!((r.header("Strict-Transport-Security"), r.header("X-Content-Type-Options")), (hsts, Some("nosniff")));
    assert_eq!(r.header("X-Powered-By"), None, "Header unset removes the application's header");
    assert_eq!(r.header("X-App-Flag"), Some("edited-value"));

    // An error page: `always` only, as Apache's err_headers_out.
    let r = s.get("/no-such-file");
    assert_eq!(r.status, 404);
    assert_eq!(r.header("Strict-Transport-Security"), hsts);
    assert_eq!(r.header("X-Content-Type-Options"), None);
    // A request body too large: answered before any handler.
    let answer = s.raw(b"POST /show.php HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n");
    let r = parse_response(&answer).0;
    assert_eq!(r.status, 413);
    assert_eq!((r.header("Strict-Transport-Security"), r.header("X-Content-Type-Options")), (hsts, None));
    // A redirect (DirectorySlash) is the server's own answer too.
    let r = s.get("/sub");
    assert_eq!(r.status, 301);
    assert_eq!((r.header("Strict-Transport-Security"), r.header("X-Content-Type-Options")), (hsts, None));
}

const ENVIRONMENT: &str = r#"SetEnvIf Request_URI "^/area/" in_area=yes
BrowserMatchNoCase ^testbot is_bot
SetEnv SITE_NAME demo
RequestHeader set X-Added from-warren
RequestHeader unset X-Secret
Header set X-Bot yes env=is_bot
Header set X-Not-Bot yes env=!is_bot
Header set X-Site "site=%{SITE_NAME}e"
Header set X-Html yes "expr=%{CONTENT_TYPE} =~ /html/"
Header set X-Under-Sub yes "expr=%{REQUEST_URI} =~ m#^/sub/#"
BrowserMatch ^Closer nokeepalive"#;

fn request_headers_and_environment(mpm: &str) {
    let s = start(mpm, "env", ENVIRONMENT);
    let r = s.get_with("/area/show.php", "User-Agent: TestBot/1.0\r\nX-Secret: hunter2\r\n");
    assert_eq!(r.status, 200, "{}", r.text());
    let v = key_values(&r.text());
    assert_eq!(v["HTTP_X_ADDED"], "from-warren", "RequestHeader set reaches the application");
    assert_eq!(v["HTTP_X_SECRET"], "-", "RequestHeader unset hides it from the application");
    assert_eq!(v["HTTP_USER_AGENT"], "TestBot/1.0");
    assert_eq!((v["SITE_NAME"].as_str(), v["in_area"].as_str(), v["is_bot"].as_str()), ("demo", "yes", "1"));
    assert_eq!((r.header("X-Bot"), r.header("X-Not-Bot")), (Some("yes"), None));
    assert_eq!(r.header("X-Site"), Some("site=demo"));
    assert_eq!(r.header("X-Html"), Some("yes"), "PHP's answer is text/html");

    // Outside /area/ and without the browser: the other branches.
    let v = key_values(&s.get("/show.php").text());
    assert_eq!((v["in_area"].as_str(), v["is_bot"].as_str()), ("-", "-"));
    let r = s.get("/sub/page.html");
    assert_eq!((r.header("X-Bot"), r.header("X-Not-Bot"), r.header("X-Under-Sub")), (None, Some("yes"), Some("yes")));
    let r = s.get("/a.txt");
    assert_eq!((r.header("X-Html"), r.header("X-Under-Sub")), (None, None));

    // nokeepalive: the connection is closed after the answer, though the
    // client asked to keep it.
    assert_eq!(keep_alive_answer(&s, "Closer/2").header("Connection"), Some("close"));
    assert_ne!(keep_alive_answer(&s, "Other/2").header("Connection"), Some("close"));
}

fn environment_in_access_logs(mpm: &str) {
    let s = start(mpm, "log", "SetEnvIf Request_URI ^/health dontlog\nSetEnv SITE_NAME demo\nLogFormat \"%U site=%{SITE_NAME}e\" envfmt\nCustomLog env.log envfmt env=!dontlog\n");
    // On one connection, so that one writer logs both, in order.
    let answers = s.raw(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_eq!(parse_all(&answers).iter().map(|r| r.status).collect::<Vec<_>>(), vec![404, 200]);
    let log = s.wait_log("env.log", "/a.txt site=demo");
    assert!(!log.contains("/health"), "{log}");
}

/// One HTTP/1.1 request on a connection kept open: the answer, read whole.
fn keep_alive_answer(s: &Server, agent: &str) -> Resp {
    let mut c = s.connect();
    write!(c, "GET /a.txt HTTP/1.1\r\nHost: localhost\r\nUser-Agent: {agent}\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !response_complete(&got) {
        match read_some(&mut c, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    parse_response(&got).0
}

const EXPIRES: &str = r#"<IfModule mod_expires.c>
    ExpiresActive On
    ExpiresByType text/css "access plus 1 month"
    ExpiresByType image/png A3600
    ExpiresByType text/plain "modification plus 1 minute"
    ExpiresByType text/html M60
    ExpiresDefault "access plus 2 minutes"
</IfModule>
<IfModule mod_headers.c>
    <FilesMatch "\.css$">
        Header append Cache-Control public
    </FilesMatch>
</IfModule>"#;

fn expires_by_type_and_default(mpm: &str) {
    let s = start(mpm, "exp", &format!("{EXPIRES}\n<Location /server-status>\n    SetHandler server-status\n</Location>\n"));
    // Modified long ago: a modification-based time already past is now.
    let old = SystemTime::now() - Duration::from_secs(86400);
    std::fs::File::options().write(true).open(s.dir.0.join("htdocs/a.txt")).unwrap().set_modified(old).unwrap();

    let r = s.get("/style.css");
    assert_eq!(r.header("Cache-Control"), Some("max-age=2592000, public"), "Header acts after mod_expires");
    let expires = r.header("Expires").expect("Expires");
    let date = r.header("Date").expect("Date");
    let ahead = httpdate(expires).duration_since(httpdate(date)).expect("Expires after Date").as_secs();
    // The request's time and the Date may be a second apart.
    assert!((2592000 - 1..=2592000).contains(&ahead), "{expires} vs {date}");

    assert_eq!(s.get("/pic.png").header("Cache-Control"), Some("max-age=3600"));
    assert_eq!(s.get("/a.txt").header("Cache-Control"), Some("max-age=0"));
    // ExpiresDefault: a type without a rule of its own.
    dir_write(&s, "htdocs/data.json", "{}");
    assert_eq!(s.get("/data.json").header("Cache-Control"), Some("max-age=120"));
    // A PHP answer: the script's modification time, as Apache's r->finfo.
    std::fs::File::options().write(true).open(s.dir.0.join("htdocs/show.php")).unwrap().set_modified(old).unwrap();
    let r = s.get("/show.php");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Cache-Control"), Some("max-age=0"));
    // A server-status page (text/html) has no file at all: nothing.
    let r = s.get("/server-status");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!((r.header("Cache-Control"), r.header("Expires")), (None, None));
    // Nor does an error.
    let r = s.get("/missing.css");
    assert_eq!(r.status, 404);
    assert_eq!((r.header("Cache-Control"), r.header("Expires")), (None, None));
}

fn dir_write(s: &Server, rel: &str, text: &str) {
    s.dir.write(rel, text);
}

fn httpdate(text: &str) -> SystemTime {
    // `Sun, 06 Nov 1994 08:49:37 GMT`, the only form warren sends.
    let parts: Vec<&str> = text.split([' ', ':']).collect();
    let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].iter().position(|m| *m == parts[2]).expect("month") as i64 + 1;
    let n = |i: usize| parts[i].parse::<i64>().expect("number");
    let (y, d) = (n(3), n(1));
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y2, m2) = if month <= 2 { (y - 1, month + 9) } else { (y, month - 3) };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    SystemTime::UNIX_EPOCH + Duration::from_secs((days * 86400 + n(4) * 3600 + n(5) * 60 + n(6)) as u64)
}

fn htaccess_headers_and_expires(mpm: &str) {
    let dir = TempDir::new(&format!("hdr-ht-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/sub/.htaccess", "Header set X-From-Htaccess sub\nExpiresActive On\nExpiresDefault A60\n");
    dir.write("htdocs/bad/x.txt", "x");
    dir.write("htdocs/bad/.htaccess", "# a mistake\nHeader frob X-Nope\n");
    let d = dir.0.display();
    let conf = format!("<Directory {d}/htdocs/sub>\n    AllowOverride FileInfo Indexes\n</Directory>\n<Directory {d}/htdocs/bad>\n    AllowOverride FileInfo\n</Directory>\n");
    let s = Server::start_in(dir, mpm, &conf);
    let r = s.get("/sub/page.html");
    assert_eq!(r.status, 200);
    assert_eq!((r.header("X-From-Htaccess"), r.header("Cache-Control")), (Some("sub"), Some("max-age=60")));
    let r = s.get("/index.html");
    assert_eq!((r.header("X-From-Htaccess"), r.header("Cache-Control")), (None, None));
    assert_eq!(s.get("/bad/x.txt").status, 500);
    let log = s.wait_log("error.log", "bad/.htaccess:2");
    assert!(log.contains("unknown action 'frob'"), "{log}");
}

each_mpm!(
    security_headers_on_static_php_and_error_answers,
    request_headers_and_environment,
    environment_in_access_logs,
    expires_by_type_and_default,
    htaccess_headers_and_expires
);
