//! The static path's names (the file name read from the path's bytes, the
//! type read from the last extension, the stat cache keyed by the path as
//! written, the Host lowered only where a virtual host listens) as an
//! anonymous client plays them: `.htaccess` and files a `<Files>` or
//! `<FilesMatch>` denies, asked for in every spelling (empty and dot
//! segments, percent-encodings, a trailing slash or dot, NUL), the same
//! spelling asked twice (a second answer from the cache), and a virtual
//! host that denies everything reached with its name in capitals, with a
//! trailing dot and with a port. None may answer with the file. Under
//! each MPM.

mod common;

use common::*;

const HTACCESS_SECRET: &str = "htaccess_secret_7731";
const DENIED_SECRET: &str = "files_denied_secret_4410";
const PRIVATE_SECRET: &str = "private_vhost_secret_9902";

fn site(mpm: &str) -> Server {
    let dir = TempDir::new(&format!("attack-static-names-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/.htaccess", format!("# {HTACCESS_SECRET}\n"));
    dir.write("htdocs/sub/.htaccess", format!("# {HTACCESS_SECRET}\n"));
    dir.write("htdocs/sub/secret.txt", DENIED_SECRET);
    dir.write("htdocs/sub/old.bak", DENIED_SECRET);
    dir.write("htdocs/sub/open.txt", "open");
    dir.write("private/p.txt", PRIVATE_SECRET);
    let d = dir.0.display();
    let conf = format!(
        "<Directory {d}/htdocs>\n    AllowOverride None\n</Directory>\n\
         <Directory {d}/htdocs/sub>\n    <Files secret.txt>\n        Require all denied\n    </Files>\n    <FilesMatch \"\\.bak$\">\n        Require all denied\n    </FilesMatch>\n</Directory>\n\
         <VirtualHost *>\n    ServerName default.test\n    DocumentRoot {d}/htdocs\n</VirtualHost>\n\
         <VirtualHost *>\n    ServerName private.test\n    DocumentRoot {d}/private\n    <Directory {d}/private>\n        Require all denied\n    </Directory>\n</VirtualHost>\n"
    );
    Server::start_in(dir, mpm, &conf)
}

fn ask(s: &Server, host: &str, path: &str) -> Resp {
    let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let answer = String::from_utf8_lossy(&s.raw(req.as_bytes())).into_owned();
    for secret in [HTACCESS_SECRET, DENIED_SECRET, PRIVATE_SECRET] {
        assert!(!answer.contains(secret), "GET {path} (Host: {host}) sent a denied file:\n{answer}");
    }
    parse_response(answer.as_bytes()).0
}

fn denied_files_in_every_spelling(mpm: &str) {
    let s = site(mpm);
    let spellings = [
        "/.htaccess", "//.htaccess", "/./.htaccess", "/%2ehtaccess", "/%2Ehtaccess", "/.ht%61ccess", "/sub/../.htaccess", "/sub/%2e%2e/.htaccess",
        "/.htaccess/", "/.htaccess.", "/.htaccess%00", "/.htaccess%2500", "/sub//.htaccess", "/sub/./.htaccess", "/x/../sub/.htaccess",
        "/sub/secret.txt", "/sub//secret.txt", "/sub/./secret.txt", "//sub/secret.txt", "/sub/secre%74.txt", "/x/../sub/secret.txt", "/sub/secret.txt/",
        "/sub/secret.txt.", "/sub/secret.txt%20", "/sub/old.bak", "/sub//old.bak", "/sub/old.b%61k", "/sub/./old.bak", "/sub/old.bak/", "/%73ub/old.bak",
    ];
    // Twice each: the second answer may come from what the first cached.
    for _ in 0..2 {
        for path in spellings {
            let r = ask(&s, "default.test", path);
            assert!(r.status >= 400, "GET {path}: {}", r.status);
        }
    }
    assert_eq!(ask(&s, "default.test", "/sub/open.txt").text(), "open");
    assert_eq!(ask(&s, "default.test", "/sub//open.txt").text(), "open");
    for host in ["private.test", "PRIVATE.TEST", "Private.Test.", "private.test.", &format!("private.test:{}", s.port), &format!("PRIVATE.test.:{}", s.port)] {
        for _ in 0..2 {
            assert_eq!(ask(&s, host, "/p.txt").status, 403, "Host: {host}");
        }
    }
}

each_mpm!(denied_files_in_every_spelling);
