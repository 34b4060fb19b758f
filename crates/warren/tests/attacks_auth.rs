//! Attacks on Basic authentication, under each MPM. The attacker is an
//! anonymous client who wants a protected directory (wp-admin) without its
//! password: other spellings of its URL (percent-encoded, double-encoded,
//! doubled slashes, dot segments, backslashes, NUL), broken and oversized
//! credentials, and names that would forge log lines; and a site owner
//! whose `.htaccess` points AuthUserFile at the system's files.

mod common;

use common::*;

fn start(mpm: &str) -> Server {
    let dir = TempDir::new(&format!("attacks-auth-{mpm}"));
    standard_site(&dir);
    let d = dir.0.display().to_string();
    // `htpasswd -nbm admin 's3cret:x'`: a colon in the password is the password's.
    dir.write("private/htpasswd", "admin:$apr1$QYwr9r6h$4nN8JZVslbF/44ZVrYShD.\n");
    dir.write("htdocs/wp-admin/index.html", "admin page");
    dir.write("htdocs/wp-admin/secret.txt", "secret");
    dir.write("htdocs/wp-admin/.htpasswd", "admin:$apr1$QYwr9r6h$4nN8JZVslbF/44ZVrYShD.\n");
    dir.write("htdocs/wp-admin/.htaccess", format!("AuthType Basic\nAuthName admin\nAuthUserFile {d}/private/htpasswd\nRequire valid-user\n"));
    dir.write("htdocs/shadow/.htaccess", "AuthType Basic\nAuthName x\nAuthUserFile /etc/passwd\nRequire valid-user\n");
    dir.write("htdocs/shadow/f.txt", "f");
    let conf = format!("<Directory {d}/htdocs>\n    AllowOverride All\n</Directory>\n");
    Server::start_in(dir, mpm, &conf)
}

fn status_of_raw(s: &Server, target: &str, extra: &str) -> u16 {
    status_of(&s.raw(format!("GET {target} HTTP/1.1\r\nHost: localhost\r\n{extra}Connection: close\r\n\r\n").as_bytes()))
}

fn other_spellings_of_the_url_are_still_protected(mpm: &str) {
    let s = start(mpm);
    for target in [
        "/wp-admin/secret.txt",
        "/wp%2dadmin/secret.txt",
        "/wp-admin%2fsecret.txt",
        "//wp-admin//secret.txt",
        "/./wp-admin/./secret.txt",
        "/sub/../wp-admin/secret.txt",
        "/sub/%2e%2e/wp-admin/secret.txt",
        "/wp-admin/secret%2etxt",
        "/wp-admin/secret.txt?x",
        "/wp-admin/secret.txt/",
        "/wp-admin/",
        "/wp-admin",
    ] {
        let st = status_of_raw(&s, target, "");
        assert!(matches!(st, 401 | 404 | 400 | 301), "{target}: {st}");
    }
    for target in ["/wp-admin%252fsecret.txt", "/wp-admin\\secret.txt", "/wp-admin/secret.txt%00", "/WP-ADMIN/secret.txt"] {
        let raw = s.raw(format!("GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes());
        let (r, _) = parse_response(&raw);
        assert!(r.status != 200 || !r.text().contains("secret"), "{target}: {}", r.status);
    }
}

fn broken_credentials_are_401(mpm: &str) {
    let s = start(mpm);
    let b64 = |t: &str| {
        let out = std::process::Command::new("base64").arg("-w0").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
        use std::io::Write;
        out.stdin.as_ref().unwrap().write_all(t.as_bytes()).unwrap();
        String::from_utf8(out.wait_with_output().unwrap().stdout).unwrap()
    };
    for header in [
        String::new(),
        "Authorization: Basic\r\n".into(),
        "Authorization: Basic \r\n".into(),
        "Authorization: Basic ====\r\n".into(),
        format!("Authorization: Basic {}\r\n", b64("admin")),
        format!("Authorization: Basic {}\r\n", b64(":s3cret:x")),
        format!("Authorization: Basic {}\r\n", b64("admin:s3cret")),
        format!("Authorization: Basic {}\r\n", b64("admin:s3cret:x\0")),
        format!("Authorization: Basic {}\r\n", b64("admin\0:s3cret:x")),
        format!("Authorization: Bearer {}\r\n", b64("admin:s3cret:x")),
        format!("Authorization: Basic {}\r\n", b64(&format!("admin:{}", "x".repeat(6000)))),
    ] {
        assert_eq!(status_of_raw(&s, "/wp-admin/secret.txt", &header), 401, "{header:?}");
    }
    // The colon after the first is the password's.
    assert_eq!(status_of_raw(&s, "/wp-admin/secret.txt", &format!("Authorization: basic {}\r\n", b64("admin:s3cret:x"))), 200);
    // A user name made to forge an access-log line is escaped there.
    let forged = "evil\" 200 1 \"-\"\n127.0.0.1 - root";
    assert_eq!(status_of_raw(&s, "/wp-admin/secret.txt", &format!("Authorization: Basic {}\r\n", b64(&format!("{forged}:x")))), 401);
    let log = s.wait_log("access.log", "evil\\\" 200");
    assert!(log.contains("evil\\\" 200"), "{log}");
    assert!(!log.lines().any(|l| l.starts_with("127.0.0.1 - root")), "{log}");
}

fn the_password_file_is_never_served(mpm: &str) {
    let s = start(mpm);
    for target in ["/wp-admin/.htpasswd", "/wp-admin/.HTPASSWD", "/wp-admin/%2ehtpasswd", "/wp-admin/.htaccess"] {
        let st = status_of_raw(&s, target, "Authorization: Basic YWRtaW46czNjcmV0Ong=\r\n");
        assert!(matches!(st, 403 | 404), "{target}: {st}");
    }
}

fn a_system_file_as_password_file_lets_nobody_in(mpm: &str) {
    let s = start(mpm);
    // root:x:0:0:... : the "hash" is x:0:0:..., which no password matches.
    assert_eq!(status_of_raw(&s, "/shadow/f.txt", "Authorization: Basic cm9vdDp4\r\n"), 401);
    assert_eq!(status_of_raw(&s, "/shadow/f.txt", ""), 401);
}

each_mpm!(
    other_spellings_of_the_url_are_still_protected,
    broken_credentials_are_401,
    the_password_file_is_never_served,
    a_system_file_as_password_file_lets_nobody_in
);
