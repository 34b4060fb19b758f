//! CGI programs under each MPM, as mod_cgi/mod_cgid run them: ScriptAlias
//! and `AddHandler cgi-script` with `Options ExecCGI`, the RFC 3875
//! variables, the body on standard input, Status and Location, nph-
//! programs, Timeout, standard error to the error log, no descriptor of
//! warren's in the program, and the program's owner as its user.

mod common;

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;

use common::*;

/// A uid and gid no account has, at or above suexec's minimum.
/// A regular account (uid from 1000) and its primary group, made when
/// missing, which owns the site's programs: a program of root or a system
/// account runs only under a ScriptAlias. None when the tests are not root.
fn owner() -> Option<(u32, u32)> {
    if !nix_is_root() {
        return None;
    }
    let uid = regular_user("warren-cgi");
    let user = nix::unistd::User::from_uid(uid.into()).unwrap().unwrap();
    Some((uid, user.gid.as_raw()))
}

fn program(dir: &TempDir, rel: &str, text: &str) {
    let p = dir.write(rel, text);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn start(mpm: &str) -> Server {
    start_with(mpm, "")
}

fn start_with(mpm: &str, extra: &str) -> Server {
    let dir = TempDir::new(&format!("cgi-{mpm}"));
    standard_site(&dir);
    program(&dir, "cgi-bin/env.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nenv | sort\n");
    program(&dir, "cgi-bin/echo.pl", "#!/usr/bin/perl\nbinmode STDIN; my $n = $ENV{CONTENT_LENGTH} || 0; read(STDIN, my $b, $n);\nprint \"Content-Type: text/plain\\r\\n\\r\\n\", \"got \", length($b), \": \", $b;\n");
    program(&dir, "cgi-bin/status.cgi", "#!/bin/sh\nprintf 'Status: 418 Teapot\\nX-Cgi: yes\\nContent-Type: text/plain\\n\\nshort and stout\\n'\n");
    program(&dir, "cgi-bin/local.cgi", "#!/bin/sh\nprintf 'Location: /a.txt\\n\\n'\n");
    program(&dir, "cgi-bin/away.cgi", "#!/bin/sh\nprintf 'Location: http://example.com/x\\n\\n'\n");
    program(&dir, "cgi-bin/nph-raw.cgi", "#!/bin/sh\nprintf 'HTTP/1.1 203 Raw\\r\\nContent-Type: text/plain\\r\\n\\r\\nnph body'\n");
    program(&dir, "cgi-bin/hang.cgi", &format!("#!/bin/sh\necho $$ > {}/shared/hang.pid\nsleep 300 & wait\n", dir.0.display()));
    program(&dir, "cgi-bin/stderr.cgi", "#!/bin/sh\necho 'something went sideways' >&2\nprintf 'Content-Type: text/plain\\n\\nok'\n");
    program(&dir, "cgi-bin/fds.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nfind /proc/$$/fd -mindepth 1 -printf '%f %l\\n'\n");
    program(&dir, "cgi-bin/id.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nid -u\n");
    program(&dir, "cgi-bin/owned.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\necho $(id -u) $(id -g) $(id -G)\n");
    program(&dir, "cgi-bin/broken.cgi", "#!/bin/sh\necho 'this is no header'\n");
    program(&dir, "htdocs/run/hello.cgi", "#!/usr/bin/perl\nprint \"Content-Type: text/html\\n\\n<p>hello from perl</p>\";\n");
    program(&dir, "htdocs/norun/hello.cgi", "#!/bin/sh\necho secret source\n");
    program(&dir, "htdocs/run/index.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nindex program'\n");
    // A name in Latin-1 (caf E9), which is not UTF-8.
    let latin1 = dir.0.join("cgi-bin").join(std::ffi::OsStr::from_bytes(b"caf\xe9.cgi"));
    std::fs::write(&latin1, "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nprintf '%s|%s' \"$SCRIPT_NAME\" \"$PATH_INFO\"\n").unwrap();
    std::fs::set_permissions(&latin1, std::fs::Permissions::from_mode(0o755)).unwrap();
    if let Some((uid, gid)) = owner() {
        for f in ["cgi-bin/owned.cgi", "htdocs/run", "htdocs/run/hello.cgi", "htdocs/run/index.cgi", "htdocs/norun/hello.cgi"] {
            std::os::unix::fs::chown(dir.0.join(f), Some(uid), Some(gid)).unwrap();
        }
    }
    // Written by the children's and the programs' users (ScriptLog, the hanging program's pid).
    let shared = dir.0.join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let d = dir.0.display();
    let conf = format!(
        "Timeout 3\nScriptAlias /cgi-bin/ {d}/cgi-bin/\n<Directory {d}/cgi-bin>\n    Require all granted\n</Directory>\nScriptLog {d}/shared/cgi.log\n\
         ScriptLogBuffer 4\nScriptAlias /auth-bin/ {d}/cgi-bin/\n<Location /auth-bin/>\n    CGIPassAuth On\n    CGIVar REQUEST_URI current-uri\n</Location>\nRewriteEngine On\nRewriteRule ^/pretty/(.*)$ /auth-bin/env.cgi/$1 [PT]\n\
         SetEnv TZ Europe/Paris\nSetEnv FROM_CONFIG configured\nSetEnv LD_PRELOAD /nonexistent.so\n\
         <Directory {d}/htdocs/run>\n    Options +ExecCGI\n    AddHandler cgi-script .cgi .pl\n    DirectoryIndex index.cgi\n</Directory>\n<Directory {d}/htdocs/norun>\n    AddHandler cgi-script .cgi\n</Directory>\n{extra}"
    );
    Server::start_in(dir, mpm, &conf)
}

fn env_of(text: &str) -> std::collections::HashMap<String, String> {
    text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn the_rfc_3875_variables(mpm: &str) {
    let s = start(mpm);
    let r = s.get_with("/cgi-bin/env.cgi/extra/path?a=1&b=two", "Authorization: Basic dTpw\r\nX-Custom: yes\r\nProxy: http://evil/\r\n");
    assert_eq!(r.status, 200, "{}", r.text());
    let env = env_of(&r.text());
    let want = [
        ("GATEWAY_INTERFACE", "CGI/1.1".to_string()),
        ("REQUEST_METHOD", "GET".into()),
        ("QUERY_STRING", "a=1&b=two".into()),
        ("SCRIPT_NAME", "/cgi-bin/env.cgi".into()),
        ("PATH_INFO", "/extra/path".into()),
        ("SCRIPT_FILENAME", format!("{}/cgi-bin/env.cgi", s.dir.0.display())),
        ("PATH_TRANSLATED", format!("{}/htdocs/extra/path", s.dir.0.display())),
        ("REQUEST_URI", "/cgi-bin/env.cgi/extra/path?a=1&b=two".into()),
        ("SERVER_PROTOCOL", "HTTP/1.1".into()),
        ("SERVER_PORT", s.port.to_string()),
        ("REMOTE_ADDR", "127.0.0.1".into()),
        ("HTTP_X_CUSTOM", "yes".into()),
        // SetEnv reaches a program within suexec's safe variables only.
        ("TZ", "Europe/Paris".into()),
        ("PATH", "/usr/local/bin:/usr/bin:/bin".into()),
    ];
    for (k, v) in want {
        assert_eq!(env.get(k), Some(&v), "{k} in {env:?}");
    }
    assert!(env.contains_key("PATH") && env.contains_key("SERVER_NAME") && env.contains_key("REMOTE_PORT") && env.contains_key("DOCUMENT_ROOT"), "{env:?}");
    // Credentials and httpoxy are not the program's; nor php-cgi's REDIRECT_STATUS.
    for absent in ["HTTP_AUTHORIZATION", "HTTP_PROXY", "REDIRECT_STATUS", "CONTENT_LENGTH", "FROM_CONFIG", "LD_PRELOAD"] {
        assert!(!env.contains_key(absent), "{absent} in {env:?}");
    }
}

/// Over HTTP/2 (h2c) too, a body included.
fn over_http2(mpm: &str) {
    let s = start_with(mpm, "Protocols h2c http/1.1\n");
    let (code, body) = curl(&["-s", "--http2-prior-knowledge", "--data-binary", "hello h2", &s.url("/cgi-bin/echo.pl")]);
    assert_eq!((code, String::from_utf8_lossy(&body).as_ref()), (0, "got 8: hello h2"));
    let (code, body) = curl(&["-s", "-o", "/dev/null", "-w", "%{http_code} %{http_version}", "--http2-prior-knowledge", &s.url("/cgi-bin/status.cgi")]);
    assert_eq!((code, String::from_utf8_lossy(&body).as_ref()), (0, "418 2"));
}

/// CGIPassAuth and CGIVar, where a section sets them.
fn pass_auth_and_current_uri(mpm: &str) {
    let s = start(mpm);
    let env = env_of(&s.get_with("/auth-bin/env.cgi", "Authorization: Basic dTpw\r\n").text());
    assert_eq!(env.get("HTTP_AUTHORIZATION").map(String::as_str), Some("Basic dTpw"), "{env:?}");
    let env = env_of(&s.get("/pretty/x?q=1").text());
    assert_eq!((env.get("REQUEST_URI").map(String::as_str), env.get("PATH_INFO").map(String::as_str)), (Some("/auth-bin/env.cgi/x?q=1"), Some("/x")), "{env:?}");
    // Elsewhere, the client's REQUEST_URI.
    let env = env_of(&s.get("/cgi-bin/env.cgi/x?q=1").text());
    assert_eq!(env.get("REQUEST_URI").map(String::as_str), Some("/cgi-bin/env.cgi/x?q=1"));
}

fn post_body_on_stdin(mpm: &str) {
    let s = start(mpm);
    let body = "name=warren&lang=rust";
    let req = format!("POST /cgi-bin/echo.pl HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    let (r, _) = parse_response(&s.raw(req.as_bytes()));
    assert_eq!((r.status, r.text()), (200, format!("got {}: {body}", body.len())));
    // A large body, chunked: spooled, then written while the program reads.
    let big = "x".repeat(300_000);
    let chunked = format!("POST /cgi-bin/echo.pl HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{big}\r\n0\r\n\r\n", big.len());
    let (r, _) = parse_response(&s.raw(chunked.as_bytes()));
    assert_eq!(r.status, 200);
    assert!(r.text().starts_with("got 300000: xxx"), "{}", &r.text()[..40.min(r.text().len())]);
    // AddHandler cgi-script where ExecCGI is on: perl runs.
    assert_eq!(s.get("/run/hello.cgi").text(), "<p>hello from perl</p>");
    // A DirectoryIndex program runs too.
    assert_eq!(s.get("/run/").text(), "index program");
}

fn status_and_location(mpm: &str) {
    let s = start(mpm);
    let r = s.get("/cgi-bin/status.cgi");
    assert_eq!((r.status, r.header("X-Cgi"), r.text().as_str()), (418, Some("yes"), "short and stout\n"));
    // A local Location is served in its place; an absolute one is a 302.
    let r = s.get("/cgi-bin/local.cgi");
    assert_eq!((r.status, r.text().as_str()), (200, "0123456789abcdefghij"));
    let r = s.get("/cgi-bin/away.cgi");
    assert_eq!((r.status, r.header("Location")), (302, Some("http://example.com/x")));
    // A program whose output is no CGI answer: 500, and a ScriptLog record.
    let req = "POST /cgi-bin/broken.cgi HTTP/1.1\r\nHost: localhost\r\nContent-Length: 10\r\nConnection: close\r\n\r\nabcdefghij";
    assert_eq!(parse_response(&s.raw(req.as_bytes())).0.status, 500);
    let log = s.wait_log("shared/cgi.log", "broken.cgi");
    assert!(log.contains("%% 500 ") && log.contains("POST /cgi-bin/broken.cgi HTTP/1.1") && log.contains("End of script output before headers"), "{log}");
    // ScriptLogBuffer 4: the body's first 4 bytes.
    assert!(log.contains("\nabcd\n") && !log.contains("abcde"), "{log}");
    // An nph- program's status line is the answer's.
    let r = s.get("/cgi-bin/nph-raw.cgi");
    assert_eq!((r.status, r.text().as_str()), (203, "nph body"));
}

fn never_sent_as_text(mpm: &str) {
    let s = start(mpm);
    // ExecCGI off: refused, not served.
    let r = s.get("/norun/hello.cgi");
    assert_eq!(r.status, 403);
    assert!(!r.text().contains("secret source"));
    let log = s.wait_log("error.log", "Options ExecCGI is off");
    assert!(log.contains("norun/hello.cgi"), "{log}");
    // The ScriptAlias directory is not listed.
    assert_eq!(s.get("/cgi-bin/").status, 403);
}

fn hanging_program_timed_out(mpm: &str) {
    let s = start(mpm);
    let began = std::time::Instant::now();
    let r = s.get("/cgi-bin/hang.cgi");
    assert_eq!(r.status, 504, "{}", r.text());
    assert!(began.elapsed() < std::time::Duration::from_secs(20));
    // The program and its sleep (its process group) are gone.
    let pid: i32 = std::fs::read_to_string(s.dir.0.join("shared/hang.pid")).unwrap().trim().parse().unwrap();
    settle(|| std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |st| st.contains(") Z ")));
    let group_alive = std::fs::read_dir("/proc").unwrap().filter_map(Result::ok).filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok()).any(|st| {
        let after = st.rsplit_once(") ").map(|(_, a)| a.to_string()).unwrap_or_default();
        let fields: Vec<&str> = after.split_whitespace().collect();
        fields.len() > 3 && fields[2] == pid.to_string() && fields[0] != "Z"
    });
    assert!(!group_alive, "a process of group {pid} still runs");
    assert!(s.wait_log("error.log", "Timeout waiting for output").contains("hang.cgi"));
}

fn stderr_to_the_error_log(mpm: &str) {
    let s = start(mpm);
    assert_eq!(s.get("/cgi-bin/stderr.cgi").text(), "ok");
    let log = s.wait_log("error.log", "something went sideways");
    assert!(log.lines().any(|l| l.contains("AH01215: something went sideways") && l.contains("stderr.cgi") && l.contains("127.0.0.1")), "{log}");
}

/// A graceful restart's new children reach the same spawner.
fn programs_run_after_a_restart(mpm: &str) {
    let s = start(mpm);
    assert_eq!(s.get("/cgi-bin/status.cgi").status, 418);
    let before = s.children();
    unsafe_kill(s.pid(), 1);
    s.wait_log("error.log", "SIGHUP received");
    // The old children leave (the spawner, a child too, stays).
    let old_left = || s.children().iter().filter(|c| before.contains(c)).count();
    settle(|| old_left() == 1);
    assert_eq!(old_left(), 1, "{before:?} {:?}", s.children());
    for _ in 0..4 {
        assert_eq!(s.get("/cgi-bin/status.cgi").status, 418);
    }
}

fn no_inherited_descriptors(mpm: &str) {
    let s = start(mpm);
    let r = s.get("/cgi-bin/fds.cgi");
    let text = r.text();
    // Listed by a `find` the shell runs with no pipe of its own open (a
    // shell making a pipeline holds the pipe's ends for a while), sorted here.
    let mut fds: Vec<(&str, &str)> = text.lines().filter_map(|l| l.split_once(' ')).collect();
    fds.sort_by_key(|f| f.0.parse::<u32>().unwrap_or(u32::MAX));
    assert_eq!(fds.iter().take(3).map(|f| f.0).collect::<Vec<_>>(), ["0", "1", "2"], "{text}");
    // Beyond them only the program itself: the descriptor it was run from
    // (its interpreter reads it as /dev/fd/3) and the shell's own.
    let program = format!("{}/cgi-bin/fds.cgi", s.dir.0.display());
    assert!(fds[3..].iter().all(|f| f.1 == program), "{text}");
    assert!(fds.iter().any(|f| f.0 == "3"), "{text}");
}

fn runs_as_its_owner(mpm: &str) {
    let s = start(mpm);
    if !nix_is_root() {
        return;
    }
    // Its owner's file runs as its owner; root's as the server's User.
    let (uid, gid) = owner().unwrap();
    assert_eq!(s.get("/cgi-bin/owned.cgi").text().trim(), format!("{uid} {gid} {gid}"));
    assert_eq!(s.get("/cgi-bin/id.cgi").text().trim(), nobody().to_string());
}

/// SuexecUserGroup: every program of the host runs as that user, and
/// only its files in its directories run.
fn suexec_user_group(mpm: &str) {
    if !nix_is_root() {
        return;
    }
    let dir = TempDir::new(&format!("cgi-suexec-{mpm}"));
    standard_site(&dir);
    program(&dir, "sbin/mine.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nid -u\n");
    program(&dir, "sbin/theirs.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nid -u\n");
    let nobody = nobody();
    for f in ["sbin", "sbin/mine.cgi"] {
        std::os::unix::fs::chown(dir.0.join(f), Some(nobody), Some(nobody)).unwrap();
    }
    let (uid, gid) = owner().unwrap();
    std::os::unix::fs::chown(dir.0.join("sbin/theirs.cgi"), Some(uid), Some(gid)).unwrap();
    let d = dir.0.display();
    let conf = format!("SuexecUserGroup nobody nogroup\nFcgidMinProcessesPerClass 0\nScriptAlias /cgi-bin/ {d}/sbin/\n<Directory {d}/sbin>\n    Require all granted\n</Directory>\n");
    let s = Server::start_in(dir, mpm, &conf);
    assert_eq!(s.get("/cgi-bin/mine.cgi").text().trim(), nobody.to_string());
    let r = s.get("/cgi-bin/theirs.cgi");
    assert_eq!(r.status, 500);
    assert!(s.wait_log("error.log", "mismatch with directory").contains("theirs.cgi"));
}

/// With mod_cgid loaded, a program named only by an `.htaccess` file runs
/// (the spawner is started although the configuration names no program);
/// without it, the same file is refused, never sent as text.
fn programs_named_only_by_htaccess(mpm: &str) {
    for loaded in [true, false] {
        let dir = TempDir::new(&format!("cgi-htaccess-{mpm}-{loaded}"));
        standard_site(&dir);
        program(&dir, "htdocs/ht/hello.cgi", "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\nfrom htaccess'\n");
        if let Some((uid, gid)) = owner() {
            for f in ["htdocs/ht", "htdocs/ht/hello.cgi"] {
                std::os::unix::fs::chown(dir.0.join(f), Some(uid), Some(gid)).unwrap();
            }
        }
        dir.write("htdocs/ht/.htaccess", "Options +ExecCGI\nAddHandler cgi-script .cgi\n");
        let module = if loaded { "LoadModule cgid_module modules/mod_cgid.so\n" } else { "" };
        let conf = format!("{module}<Directory {}/htdocs/ht>\n    AllowOverride FileInfo Options\n</Directory>\n", dir.0.display());
        let s = Server::start_in(dir, mpm, &conf);
        let r = s.get("/ht/hello.cgi");
        match loaded {
            true => assert_eq!((r.status, r.text().as_str()), (200, "from htaccess"), "{}", s.read_log("error.log")),
            false => {
                assert_eq!(r.status, 503);
                assert!(!r.text().contains("printf"));
            }
        }
    }
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").unwrap().lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

/// A program whose name is not UTF-8 runs, its SCRIPT_NAME and PATH_INFO
/// the bytes (Apache 2.4.71: `/cgi-bin/caf\xe9.cgi|/x\xe9`); warren ran the
/// name read as text (U+FFFD), which is no file, and answered 404.
fn a_program_named_in_latin1_runs(mpm: &str) {
    let s = start(mpm);
    let (r, _) = parse_response(&s.raw(b"GET /cgi-bin/caf%E9.cgi/x%E9 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
    assert_eq!((r.status, r.body.escape_ascii().to_string()), (200, b"/cgi-bin/caf\xe9.cgi|/x\xe9".escape_ascii().to_string()));
}

each_mpm!(a_program_named_in_latin1_runs, programs_named_only_by_htaccess, over_http2, the_rfc_3875_variables, pass_auth_and_current_uri, post_body_on_stdin, status_and_location, never_sent_as_text, hanging_program_timed_out, stderr_to_the_error_log, no_inherited_descriptors, runs_as_its_owner, suexec_user_group, programs_run_after_a_restart);
