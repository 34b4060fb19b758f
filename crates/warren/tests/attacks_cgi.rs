//! Attacks on CGI: a site owner who can write files (and an `.htaccess`
//! with FileInfo) but not the server's configuration tries to have warren
//! run what suexec would refuse (a world-writable program, one in a
//! world-writable directory, a link to a program outside the tree) or run
//! an upload as a program; an anonymous client tries to climb out of the
//! tree through PATH_INFO, percent-encoded, double-encoded, with NUL and
//! backslashes, and to read a program's source. The site owner also
//! tries to win the race between suexec's checks and the exec (a directory
//! of the path swapped for a link), to have root's or a system account's
//! program in their tree run as the server's User, to slip LD_PRELOAD,
//! BASH_ENV or PERL5OPT into a program's environment with SetEnv or
//! RewriteRule [E=], and to pin the server's threads with a program whose
//! descendants keep its pipes open.

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
    // A link to a directory inside the tree: what a tenant swaps with a real
    // directory between the checks and the exec.
    program(&dir, "cgi-bin/real/inner.cgi", ENV, 0o755);
    std::os::unix::fs::symlink(dir.0.join("cgi-bin/real"), dir.0.join("cgi-bin/swapped")).unwrap();
    // Programs in the site's tree, where Options ExecCGI is on.
    program(&dir, "htdocs/exec/root.cgi", ENV, 0o755);
    program(&dir, "htdocs/exec/mine.cgi", ENV, 0o755);
    program(&dir, "htdocs/exec/other-group.cgi", ENV, 0o755);
    program(&dir, "htdocs/exec/env.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nenv\n", 0o755);
    dir.write("htdocs/exec/.htaccess", "SetEnv LD_PRELOAD /nonexistent/evil.so\nSetEnv BASH_ENV /tmp/evil.sh\nSetEnv PERL5OPT -Mevil\nSetEnv PYTHONSTARTUP /tmp/evil.py\nSetEnv IFS x\nRewriteEngine On\nRewriteRule ^env\\.cgi$ - [E=LD_LIBRARY_PATH:/tmp,E=RUBYOPT:-revil]\n");
    let bg = dir.0.join("shared");
    std::fs::create_dir_all(&bg).unwrap();
    std::fs::set_permissions(&bg, std::fs::Permissions::from_mode(0o777)).unwrap();
    // Answers, then leaves a descendant in a session of its own holding
    // its standard error (and input), and one in its group that ignores TERM.
    let pinning = format!(
        "#!/bin/sh\nsetsid sh -c 'echo $$ > {b}/escaped.pid; exec sleep 60' >/dev/null &\nsh -c \"trap '' TERM; echo \\$\\$ > {b}/stubborn.pid; exec sleep 60\" >/dev/null &\nwhile [ ! -s {b}/escaped.pid ] || [ ! -s {b}/stubborn.pid ]; do :; done\nprintf 'Content-Type: text/plain\\n\\nanswered'\nexec >&-\n",
        b = bg.display()
    );
    program(&dir, "htdocs/exec/pinning.cgi", &pinning, 0o755);
    if let Some((uid, gid)) = site_owner() {
        for f in ["htdocs/exec", "htdocs/exec/mine.cgi", "htdocs/exec/env.cgi", "htdocs/exec/pinning.cgi", "htdocs/exec/other-group.cgi"] {
            std::os::unix::fs::chown(dir.0.join(f), Some(uid), Some(gid)).unwrap();
        }
        // A group of others' that the owner's file has.
        std::os::unix::fs::chown(dir.0.join("htdocs/exec/other-group.cgi"), None, Some(nobody())).unwrap();
    }
    // An upload the site owner made a program of in .htaccess.
    program(&dir, "htdocs/uploads/shell.txt", ENV, 0o755);
    dir.write("htdocs/uploads/.htaccess", "AddHandler cgi-script .txt\n");
    dir.write("htdocs/opts/.htaccess", "Options +ExecCGI\nAddHandler cgi-script .txt\n");
    program(&dir, "htdocs/opts/shell.txt", ENV, 0o755);
    let d = dir.0.display();
    let conf = format!(
        "Timeout 5\nScriptAlias /cgi-bin/ {d}/cgi-bin/\n<Directory {d}/cgi-bin>\n    Require all granted\n</Directory>\n<Directory {d}/htdocs>\n    AllowOverride FileInfo\n</Directory>\n<Directory {d}/htdocs/exec>\n    Options +ExecCGI\n    AddHandler cgi-script .cgi\n</Directory>\n"
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
    refused(&s, "/cgi-bin/linkdir/evil.cgi", 500, "cgi-bin/linkdir is a symbolic link on the way");
    // Even a link that stays in the tree: the race's tool.
    assert!(s.get("/cgi-bin/real/inner.cgi").text().contains("RAN"));
    refused(&s, "/cgi-bin/swapped/inner.cgi", 500, "cgi-bin/swapped is a symbolic link on the way");
}

/// The regular account (uid from 1000) that owns the site's files, and its
/// primary group; None when the tests are not root (nothing switches user).
fn site_owner() -> Option<(u32, u32)> {
    let root = std::fs::read_to_string("/proc/self/status").unwrap().lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    if !root {
        return None;
    }
    let uid = regular_user("warren-cgi");
    Some((uid, nix::unistd::User::from_uid(uid.into()).unwrap().unwrap().gid.as_raw()))
}

/// Root's program in a site's tree does not run as the server's User; a
/// program runs with its owner's own group, not one its file was given.
fn system_programs_in_a_site_do_not_run(mpm: &str) {
    let s = start(mpm);
    let Some((_, gid)) = site_owner() else { return };
    assert!(s.get("/exec/mine.cgi").text().contains("RAN"));
    refused(&s, "/exec/root.cgi", 500, "root.cgi belongs to root or a system account (uid 0) and is not under a ScriptAlias");
    refused(&s, "/exec/other-group.cgi", 500, &format!("other-group.cgi: its group {} is neither its owner's ({gid}) nor a system group", nobody()));
}

/// What SetEnv and [E=] add reaches a program only within suexec's list.
fn no_loader_or_interpreter_variables(mpm: &str) {
    let s = start(mpm);
    let r = s.get_with("/exec/env.cgi", "Proxy: http://evil/\r\n");
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    assert!(text.contains("SCRIPT_NAME=/exec/env.cgi"), "{text}");
    for name in ["LD_PRELOAD", "BASH_ENV", "PERL5OPT", "PYTHONSTARTUP", "IFS=x", "LD_LIBRARY_PATH", "RUBYOPT", "HTTP_PROXY"] {
        assert!(!text.lines().any(|l| l.starts_with(name)), "{name} in {text}");
    }
    assert!(text.lines().any(|l| l == "PATH=/usr/local/bin:/usr/bin:/bin"), "{text}");
}

/// The threads of warren's processes named `name`.
fn threads_named(s: &Server, name: &str) -> usize {
    std::iter::once(s.pid())
        .chain(s.children())
        .flat_map(|pid| std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten())
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
        .count()
}

/// A program's descendants that keep its pipes open hold no thread of the
/// server; what stays in its group is killed (TERM ignored or not) once
/// the request is answered.
fn descendants_do_not_pin_the_server(mpm: &str) {
    let s = start(mpm);
    let shared = s.dir.0.join("shared");
    // A body larger than the pipe, which nothing reads.
    let body = vec![b'x'; 256 * 1024];
    let mut req = format!("POST /exec/pinning.cgi HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).into_bytes();
    req.extend_from_slice(&body);
    let answer = String::from_utf8_lossy(&s.raw(&req)).into_owned();
    assert!(answer.starts_with("HTTP/1.1 200") && answer.contains("\r\nanswered\r\n"), "{answer} {}", s.read_log("error.log"));
    let pid = |f: &str| std::fs::read_to_string(shared.join(f)).unwrap().trim().parse::<i32>().unwrap();
    let alive = |p: i32| std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|st| !st.contains(") Z "));
    let (escaped, stubborn) = (pid("escaped.pid"), pid("stubborn.pid"));
    settle(|| !alive(stubborn));
    assert!(!alive(stubborn), "the program's group outlived the request");
    settle(|| threads_named(&s, "cgi-stderr") + threads_named(&s, "cgi-stdin") == 0);
    let left = (threads_named(&s, "cgi-stderr"), threads_named(&s, "cgi-stdin"));
    // The escaped one still runs, holding the pipes: the threads ended anyway.
    assert!(alive(escaped));
    unsafe_kill(escaped as u32, 9);
    assert_eq!(left, (0, 0), "pump threads still running");
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

each_mpm!(what_suexec_refuses_does_not_run, uploads_are_not_programs, path_info_stays_in_the_tree, system_programs_in_a_site_do_not_run, no_loader_or_interpreter_variables, descendants_do_not_pin_the_server);
