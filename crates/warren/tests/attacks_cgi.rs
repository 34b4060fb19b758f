//! Attacks on CGI: a site owner who can write files (and an `.htaccess`
//! with FileInfo) but not the server's configuration tries to have warren
//! run what suexec would refuse (a world-writable program, one in a
//! world-writable directory, a link to a program outside the tree) or run
//! an upload as a program; an anonymous client tries to climb out of the
//! tree through PATH_INFO, percent-encoded, double-encoded, with NUL and
//! backslashes, and to read a program's source.

mod common;

use std::os::unix::fs::PermissionsExt;

use common::*;

fn program(dir: &TempDir, rel: &str, text: &str, mode: u32) {
    let p = dir.write(rel, text);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
}

const ENV: &str = "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\necho \"PI=$PATH_INFO\"\necho \"PT=$PATH_TRANSLATED\"\necho RAN\n";

fn start(mpm: &str) -> Server {
    let dir = TempDir::new(&format!("attacks-cgi-{mpm}"));
    standard_site(&dir);
    program(&dir, "cgi-bin/env.cgi", ENV, 0o755);
    program(&dir, "cgi-bin/writable.cgi", ENV, 0o757);
    program(&dir, "cgi-bin/open/in-open-dir.cgi", ENV, 0o755);
    std::fs::set_permissions(dir.0.join("cgi-bin/open"), std::fs::Permissions::from_mode(0o777)).unwrap();
    program(&dir, "outside/evil.cgi", ENV, 0o755);
    std::os::unix::fs::symlink(dir.0.join("outside/evil.cgi"), dir.0.join("cgi-bin/link.cgi")).unwrap();
    std::os::unix::fs::symlink(dir.0.join("outside"), dir.0.join("cgi-bin/linkdir")).unwrap();
    // An upload the site owner made a program of in .htaccess.
    program(&dir, "htdocs/uploads/shell.txt", ENV, 0o755);
    dir.write("htdocs/uploads/.htaccess", "AddHandler cgi-script .txt\n");
    dir.write("htdocs/opts/.htaccess", "Options +ExecCGI\nAddHandler cgi-script .txt\n");
    program(&dir, "htdocs/opts/shell.txt", ENV, 0o755);
    let d = dir.0.display();
    let conf = format!(
        "ScriptAlias /cgi-bin/ {d}/cgi-bin/\n<Directory {d}/cgi-bin>\n    Require all granted\n</Directory>\n<Directory {d}/htdocs>\n    AllowOverride FileInfo\n</Directory>\n"
    );
    Server::start_in(dir, mpm, &conf)
}

fn refused(s: &Server, path: &str, status: u16, log_needle: &str) {
    let r = s.get(path);
    assert_eq!(r.status, status, "{path}: {}", r.text());
    assert!(!r.text().contains("RAN") && !r.text().contains("printf"), "{path}: {}", r.text());
    let log = s.wait_log("error.log", log_needle);
    assert!(log.contains(log_needle), "{path}: {log}");
}

fn what_suexec_refuses_does_not_run(mpm: &str) {
    let s = start(mpm);
    assert!(s.get("/cgi-bin/env.cgi").text().contains("RAN"));
    refused(&s, "/cgi-bin/writable.cgi", 500, "writable.cgi is writable by group or others");
    refused(&s, "/cgi-bin/open/in-open-dir.cgi", 500, "cgi-bin/open is writable by group or others");
    refused(&s, "/cgi-bin/link.cgi", 500, "link.cgi is a symbolic link");
    refused(&s, "/cgi-bin/linkdir/evil.cgi", 500, "evil.cgi is outside");
}

fn uploads_are_not_programs(mpm: &str) {
    let s = start(mpm);
    // FileInfo lets .htaccess name the handler, but ExecCGI is off there.
    refused(&s, "/uploads/shell.txt", 403, "Options ExecCGI is off in this directory");
    // And Options is not the .htaccess file's to turn on.
    let r = s.get("/opts/shell.txt");
    assert_eq!(r.status, 500);
    assert!(!r.text().contains("RAN"));
}

fn path_info_stays_in_the_tree(mpm: &str) {
    let s = start(mpm);
    for path in ["/cgi-bin/env.cgi/../../../etc/passwd", "/cgi-bin/env.cgi/%2e%2e/%2e%2e/etc/passwd", "/cgi-bin/..%2f..%2fetc/passwd", "/cgi-bin/%2e%2e/outside/evil.cgi", "/cgi-bin/env.cgi%00.txt", "/cgi-bin/..%5c..%5coutside/evil.cgi"] {
        let r = s.get(path);
        let text = r.text();
        assert!(!text.contains("root:"), "{path}: {text}");
        if r.status == 200 {
            // Ran the real program, with PATH_INFO and PATH_TRANSLATED inside.
            let pt = text.lines().find_map(|l| l.strip_prefix("PT=")).unwrap_or("");
            assert!(pt.is_empty() || pt.starts_with(&format!("{}/htdocs/", s.dir.0.display())), "{path}: {text}");
            assert!(!pt.contains(".."), "{path}: {text}");
        } else {
            assert!(matches!(r.status, 400 | 403 | 404), "{path}: {} {text}", r.status);
        }
    }
    // Double-encoded dots are a name, not a climb.
    let r = s.get("/cgi-bin/env.cgi/%252e%252e/x");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("PI=/%2e%2e/x"), "{}", r.text());
}

each_mpm!(what_suexec_refuses_does_not_run, uploads_are_not_programs, path_info_stays_in_the_tree);
