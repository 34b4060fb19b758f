//! Lines brought from Apache that warren does not act on are said where an
//! administrator looks, under each MPM: at start in the error log (directives
//! accepted and inert, `<IfModule>` blocks of modules warren lacks), and when
//! an `.htaccess` file holding such lines is read. `TraceEnable Off` answers
//! 405 to every TRACE, before a FastCGI backend could see it; IndexIgnore
//! keeps entries out of listings.

mod common;

use common::*;

fn start(mpm: &str) -> Server {
    let dir = TempDir::new(&format!("from-apache-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/app/x.txt", "app file");
    dir.write("htdocs/app/.htaccess", "HeaderName HEADER.html\n<IfModule mod_php.c>\n  php_value memory_limit 256M\n</IfModule>\n");
    let d = dir.0.display();
    let conf = format!(
        "TraceEnable Off\nIndexOptions FancyIndexing\nIndexOptions +HTMLTable\n<IfModule mod_gnutls.c>\n    Listen 127.0.0.1:1443\n</IfModule>\n\
         <Directory {d}/htdocs/app>\n    AllowOverride All\n</Directory>\n\
         # Port 9 (discard) has no FastCGI application: a request that reaches it fails.\n\
         ProxyPass /backend/ fcgi://127.0.0.1:9/\n"
    );
    Server::start_in(dir, mpm, &conf)
}

fn inert_lines_and_skipped_blocks_are_logged_at_start(mpm: &str) {
    let s = start(mpm);
    let conf = std::fs::read_to_string(&s.conf).unwrap();
    let line_of = |text: &str| conf.lines().position(|l| l.starts_with(text)).unwrap() + 1;
    let log = s.wait_log("error.log", "skipped 1 line: <IfModule mod_gnutls.c>");
    let skipped = format!("warren.conf:{}: skipped 1 line: <IfModule mod_gnutls.c>: gnutls_module is not built into warren", line_of("<IfModule mod_gnutls.c>"));
    assert!(log.contains(&skipped), "{skipped}\n{log}");
    let inert = format!("warren.conf:{}: IndexOptions (here and on 1 more line): accepted, not acted on", line_of("IndexOptions Fancy"));
    assert!(log.contains(&inert), "{inert}\n{log}");
    // Said once, not by every child.
    assert_eq!(log.matches("IndexOptions").count(), 1, "{log}");
}

fn an_htaccess_files_inert_lines_are_logged_when_it_is_read(mpm: &str) {
    let s = start(mpm);
    assert_eq!(s.get("/app/x.txt").text(), "app file");
    let log = s.wait_log("error.log", "app/.htaccess:2: skipped");
    assert!(log.contains("app/.htaccess:1: HeaderName: accepted, not acted on"), "{log}");
    assert!(log.contains("app/.htaccess:2: skipped 1 line: <IfModule mod_php.c>: php_module is not loaded"), "{log}");
}

fn trace_enable_off_answers_405_to_every_trace(mpm: &str) {
    let s = start(mpm);
    // The backend is down: what reaches it fails.
    assert_eq!(s.get("/backend/x.php").status, 503);
    for path in ["/a.txt", "/backend/x.php", "/nowhere"] {
        let (resp, _) = s.exchange(format!("TRACE {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes());
        assert_eq!(status_of(&resp), 405, "TRACE {path}: {}", String::from_utf8_lossy(&resp));
    }
    assert_eq!(s.get("/a.txt").status, 200);
}

/// Debian's autoindex.conf: `IndexIgnore .??* *~ ...` keeps `.git` and
/// `.env` out of listings; patterns add up below; IndexIgnoreReset drops
/// those above.
fn index_ignore_leaves_entries_out_of_listings(mpm: &str) {
    let dir = TempDir::new(&format!("index-ignore-{mpm}"));
    for f in ["list/.env", "list/.git/HEAD", "list/notes.txt~", "list/page.html", "list/keep.txt", "list/reset/.env", "list/reset/keep.txt", "list/reset/drop.txt"] {
        dir.write(&format!("htdocs/{f}"), "x");
    }
    let d = dir.0.display();
    let conf = format!(
        "IndexIgnore .??* *~\n<Directory {d}/htdocs/list>\n    Options +Indexes\n    IndexIgnore page.*\n</Directory>\n\
         <Directory {d}/htdocs/list/reset>\n    IndexIgnoreReset On\n    IndexIgnore drop.*\n</Directory>\n"
    );
    let s = Server::start_in(dir, mpm, &conf);
    let list = s.get("/list/").text();
    assert!(list.contains("keep.txt") && list.contains("reset/"), "{list}");
    for hidden in [".env", ".git", "notes.txt~", "page.html"] {
        assert!(!list.contains(hidden), "{hidden} listed:\n{list}");
    }
    // Left out of the listing only.
    assert_eq!(s.get("/list/page.html").status, 200);
    let list = s.get("/list/reset/").text();
    assert!(list.contains(".env") && list.contains("keep.txt") && !list.contains("drop.txt"), "{list}");
}

each_mpm!(
    inert_lines_and_skipped_blocks_are_logged_at_start,
    an_htaccess_files_inert_lines_are_logged_when_it_is_read,
    trace_enable_off_answers_405_to_every_trace,
    index_ignore_leaves_entries_out_of_listings,
);
