//! The attacker is a site owner on a shared server: they write a.test's
//! `.htaccess` and fill it with catastrophic regular expressions
//! (`^(a|a?)+$` against a header, the URL, a file name), then send requests
//! that make every one of them backtrack, to slow b.test, another owner's
//! site on the same server. Under each MPM: b.test answers its requests
//! correctly all along; a.test's requests get an answer (a pattern that
//! gives up does not match; a request whose rules run out of time gets
//! 500), the give-up logged once per pattern with its file and line; a
//! pattern cannot lift the limits itself.

mod common;

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::*;

/// The pattern of the finding, and a subject that makes it backtrack
/// exponentially: a run of a's that ends in something else.
const CATASTROPHIC: &str = "^(a|a?)+$";

fn evil_subject() -> String {
    format!("{}b", "a".repeat(40))
}

/// a.test (the attacker's, `.htaccess` allowed) and b.test (static files).
fn start(mpm: &str, htaccess: &[(&str, String)]) -> Server {
    let dir = TempDir::new(&format!("attacks-regex-{mpm}"));
    standard_site(&dir);
    dir.write("a/page.txt", "a's page");
    dir.write("a/matched.txt", "a pattern that gave up matched");
    dir.write("b/static.txt", "b's static file");
    for (rel, text) in htaccess {
        dir.write(rel, text);
    }
    let root = dir.0.display().to_string();
    let conf = format!(
        "<Directory {root}/a>\n    AllowOverride All\n</Directory>\n\
         <VirtualHost *>\n    ServerName a.test\n    DocumentRoot {root}/a\n</VirtualHost>\n\
         <VirtualHost *>\n    ServerName b.test\n    DocumentRoot {root}/b\n</VirtualHost>\n"
    );
    Server::start_in(dir, mpm, &conf)
}

/// `n` rules that each test the request's X-A header against the pattern,
/// and would serve matched.txt if one matched.
fn header_rules(n: usize) -> String {
    let mut text = String::from("RewriteEngine On\n");
    for _ in 0..n {
        text.push_str(&format!("RewriteCond %{{HTTP:X-A}} {CATASTROPHIC}\nRewriteRule ^ /matched.txt [L]\n"));
    }
    text
}

/// A GET on its own connection, with extra header lines.
fn get(s: &Server, host: &str, path: &str, headers: &str) -> Resp {
    let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{headers}Connection: close\r\n\r\n");
    parse_response(&s.raw(req.as_bytes())).0
}

/// While clients keep sending a.test requests that make its patterns
/// backtrack, b.test's static file is fetched again and again: each answer
/// must be whole and right. Returns a.test's answers.
fn b_answers_while_a_is_attacked(s: &Server, attacks: &[(String, String)]) -> Vec<Resp> {
    let stop = Arc::new(AtomicBool::new(false));
    let port = s.port;
    let attackers: Vec<_> = attacks
        .iter()
        .cloned()
        .map(|(path, headers)| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut answers = Vec::new();
                // At least one answer each, then more until b.test is done.
                while answers.is_empty() || !stop.load(Ordering::Relaxed) {
                    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                    c.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
                    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: a.test\r\n{headers}Connection: close\r\n\r\n").as_bytes()).unwrap();
                    answers.push(parse_response(&read_to_close(&mut c)).0);
                }
                answers
            })
        })
        .collect();
    for _ in 0..40 {
        let r = get(s, "b.test", "/static.txt", "");
        assert_eq!((r.status, r.text().as_str()), (200, "b's static file"), "b.test while a.test is attacked");
    }
    stop.store(true, Ordering::Relaxed);
    attackers.into_iter().flat_map(|t| t.join().unwrap()).collect()
}

fn another_host_answers_while_htaccess_patterns_backtrack(mpm: &str) {
    let evil = evil_subject();
    let s = start(
        mpm,
        &[
            // The finding: a hundred conditions on a header.
            ("a/hdr/.htaccess", header_rules(100)),
            ("a/hdr/page.txt", "a's page".into()),
            // The pattern of a rule, against the URL path.
            ("a/url/.htaccess", format!("RewriteEngine On\nRewriteRule {CATASTROPHIC} /matched.txt [L]\n")),
            // SetEnvIf against a header, and RedirectMatch against the URL.
            ("a/env/.htaccess", format!("SetEnvIf X-A {CATASTROPHIC} evil\nRedirectMatch 301 ^/env/{} /matched.txt\n", &CATASTROPHIC[1..])),
            ("a/env/page.txt", "env page".into()),
            // <FilesMatch> against the file's name.
            ("a/files/.htaccess", format!("<FilesMatch \"{CATASTROPHIC}\">\nRequire all denied\n</FilesMatch>\n")),
            (&format!("a/files/{evil}"), "files page".into()),
        ],
    );
    let header = format!("X-A: {evil}\r\n");
    let attacks = [
        ("/hdr/page.txt".to_string(), header.clone()),
        ("/hdr/page.txt".to_string(), header.clone()),
        ("/env/page.txt".to_string(), header.clone()),
        (format!("/env/{evil}"), String::new()),
        (format!("/url/{evil}"), String::new()),
        (format!("/files/{evil}"), String::new()),
    ];
    let answers = b_answers_while_a_is_attacked(&s, &attacks);
    for r in &answers {
        // No pattern that gave up counts as matching: never matched.txt,
        // nor the redirect, nor the FilesMatch's denial.
        assert!(matches!(r.status, 200 | 404 | 500), "a.test answered {} {:?}", r.status, r.text());
        assert_ne!(r.text(), "a pattern that gave up matched");
    }
    assert!(answers.iter().any(|r| r.text() == "a's page" || r.status == 500), "the header rules gave an answer");
    assert!(answers.iter().any(|r| r.text() == "env page"), "SetEnvIf gave up: the page is served");
    assert!(answers.iter().any(|r| r.text() == "files page"), "FilesMatch gave up: the file is not denied");
    // The long URLs matched no RewriteRule nor RedirectMatch: there is no such file.
    assert!(answers.iter().any(|r| r.status == 404));
    for origin in ["url/.htaccess:2) gave up", "env/.htaccess:1) gave up", "env/.htaccess:2) gave up", "files/.htaccess:1) gave up"] {
        let log = s.wait_log("error.log", origin);
        assert!(log.contains(origin), "{origin}: {log}");
    }
}

/// A thousand slow conditions add up to far more than the request's
/// budget for rules: it gets a 500 naming where the rules were stopped,
/// rather than holding its thread for a second.
fn rules_that_run_out_of_time_answer_500(mpm: &str) {
    let s = start(mpm, &[("a/.htaccess", header_rules(1000))]);
    let r = get(&s, "a.test", "/page.txt", &format!("X-A: {}\r\n", evil_subject()));
    assert_eq!(r.status, 500, "{}", r.text());
    let log = s.wait_log("error.log", "took longer than the request's budget");
    assert!(log.contains("took longer than the request's budget") && log.contains("a/.htaccess:"), "{log}");
    assert_eq!(get(&s, "b.test", "/static.txt", "").text(), "b's static file");
}

/// The give-up of one pattern is logged once, with the `.htaccess` file
/// and line that wrote it, however often it gives up (the requests go on
/// one connection: one process, whose patterns keep what they reported).
fn a_pattern_that_gives_up_is_logged_once_with_file_and_line(mpm: &str) {
    let s = start(mpm, &[("a/.htaccess", format!("# a comment\nRewriteEngine On\nRewriteCond %{{HTTP:X-A}} {CATASTROPHIC}\nRewriteRule ^ /matched.txt [L]\n"))]);
    let mut c = s.connect();
    let req = format!("GET /page.txt HTTP/1.1\r\nHost: a.test\r\nX-A: {}\r\n\r\n", evil_subject());
    let mut answers = Vec::new();
    for _ in 0..3 {
        c.write_all(req.as_bytes()).unwrap();
        let (r, _) = read_one(&mut c);
        answers.push(r);
    }
    for r in &answers {
        assert_eq!((r.status, r.text().as_str()), (200, "a's page"));
    }
    let needle = format!("{}/a/.htaccess:3) gave up", s.dir.0.display());
    let log = s.wait_log("error.log", &needle);
    assert_eq!(log.matches(&needle).count(), 1, "{log}");
    assert!(log.contains(&format!("regular expression '{CATASTROPHIC}'")), "{log}");
}

/// Reads one response (with a Content-Length body) from a kept-alive connection.
fn read_one(c: &mut std::net::TcpStream) -> (Resp, usize) {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    while !response_complete(&data) {
        let n = c.read(&mut buf).unwrap();
        assert!(n > 0, "closed before a whole response: {:?}", String::from_utf8_lossy(&data));
        data.extend_from_slice(&buf[..n]);
    }
    let len = data.len();
    (parse_response(&data).0, len)
}

/// PCRE2 lets a pattern set its own limits (`(*LIMIT_MATCH=n)`), the last
/// setting winning: one that tries is refused like a bad pattern (500,
/// with file and line), whatever its spelling of the setting.
fn a_pattern_cannot_lift_its_limits(mpm: &str) {
    let s = start(
        mpm,
        &[
            ("a/m/.htaccess", "RewriteEngine On\nRewriteRule (*LIMIT_MATCH=4000000000)^(a|a?)+$ /matched.txt\n".into()),
            ("a/d/.htaccess", "SetEnvIf X-A (*NO_JIT)(*LIMIT_DEPTH=4000000000)^(a|a?)+$ x\n".into()),
            ("a/m/page.txt", "m".into()),
            ("a/d/page.txt", "d".into()),
        ],
    );
    for dir in ["m", "d"] {
        let r = get(&s, "a.test", &format!("/{dir}/page.txt"), &format!("X-A: {}\r\n", evil_subject()));
        assert_eq!(r.status, 500, "{dir}: {}", r.text());
        let needle = format!("a/{dir}/.htaccess:");
        let log = s.wait_log("error.log", "warren bounds every match itself");
        assert!(log.lines().any(|l| l.contains(&needle) && l.contains("is not allowed")), "{log}");
    }
}

/// Over HTTP/2 the same: a stream whose routing runs the site owner's
/// patterns is routed on a thread, with its body read first.
fn over_http2_too(mpm: &str) {
    let dir = TempDir::new(&format!("attacks-regex-h2-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/a/.htaccess", header_rules(1));
    dir.write("htdocs/a/page.txt", "a's page");
    let root = dir.0.display().to_string();
    let s = Server::start_in(dir, mpm, &format!("Protocols h2c http/1.1\n<Directory {root}/htdocs/a>\n    AllowOverride All\n</Directory>\n"));
    let header = format!("X-A: {}", evil_subject());
    let (code, out) = curl(&["--http2-prior-knowledge", "-H", &header, &s.url("/a/page.txt")]);
    assert_eq!((code, String::from_utf8_lossy(&out).as_ref()), (0, "a's page"));
    // With a body: the same answer as over HTTP/1.1.
    let (code, out) = curl(&["--http2-prior-knowledge", "-H", &header, "--data-binary", "body", "-o", "/dev/null", "-w", "%{http_version} %{http_code}", &s.url("/a/page.txt")]);
    let h1 = status_of(&s.raw(format!("POST /a/page.txt HTTP/1.1\r\nHost: localhost\r\n{header}\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody").as_bytes()));
    assert_eq!((code, String::from_utf8_lossy(&out).into_owned()), (0, format!("2 {h1}")));
}

each_mpm!(
    another_host_answers_while_htaccess_patterns_backtrack,
    rules_that_run_out_of_time_answer_500,
    a_pattern_that_gives_up_is_logged_once_with_file_and_line,
    a_pattern_cannot_lift_its_limits,
    over_http2_too,
);
