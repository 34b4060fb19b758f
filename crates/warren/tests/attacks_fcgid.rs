//! Attacks on the mod_fcgid/mpm-itk mapping (fcgid.rs in warren-config),
//! under each MPM with Debian's php-cgi. The attacker is an anonymous
//! client of the seeds' mod_fcgid host who wants a script's source (its
//! passwords), to run PHP where the admin said `Options -ExecCGI` (an
//! uploads directory), or to push a body past FcgidMaxRequestLen; then the
//! site's owner, with an `.htaccess` file, who wants to run other programs
//! or files through the pool, change its user, or run PHP in the uploads
//! directory past `Options -ExecCGI`.

mod common;

use common::*;

/// What each script holds: no answer may contain it.
const SECRET: &str = "db_password_hunter2";

fn script(tag: &str) -> String {
    format!("<?php $db_password = \"{SECRET}\"; echo \"ran {tag}\";")
}

/// The seed's mod_fcgid host, with an uploads directory where the admin
/// turned ExecCGI off, and `.htaccess` files (`uploads_htaccess` in the
/// uploads directory, `htaccess` in `owner/`).
fn site(mpm: &str, htaccess: &str, uploads_htaccess: &str) -> Server {
    let dir = TempDir::new(&format!("attacks-fcgid-{mpm}"));
    standard_site(&dir);
    for f in ["x.php", "X.PHP", "x.php.txt", "index.php", "uploads/evil.php", "uploads/index.php", "owner/y.php", "owner/page.txt", "app.fcgi"] {
        dir.write(&format!("htdocs/{f}"), script(f));
    }
    // Text an owner may upload: PHP in it, but no secret (it is served as it is).
    dir.write("htdocs/uploads/evil.txt", "<?php echo 'EXEC' . 'UTED';");
    if !htaccess.is_empty() {
        dir.write("htdocs/owner/.htaccess", htaccess);
    }
    if !uploads_htaccess.is_empty() {
        dir.write("htdocs/uploads/.htaccess", uploads_htaccess);
    }
    let root = dir.0.join("htdocs").display().to_string();
    let conf = format!(
        "<Directory {root}>\n  Options +ExecCGI\n  AllowOverride All\n  DirectoryIndex index.php\n  <IfModule mod_fcgid.c>\n    AddHandler fcgid-script .php\n    FcgidWrapper /usr/bin/php-cgi .php\n  </IfModule>\n</Directory>\n<Directory {root}/uploads>\n  Options -ExecCGI\n  AllowOverride FileInfo\n</Directory>\nFcgidMaxRequestLen 100\nFcgidMinProcessesPerClass 0\n<IfModule mod_fcgid.c>\n  FcgidConnectTimeout 20\n  AddHandler fcgid-script .fcgi\n</IfModule>\n"
    );
    Server::start_in(dir, mpm, &conf)
}

/// Asks for `path` and checks the answer holds no source; returns it.
fn ask(s: &Server, path: &str) -> Resp {
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let answer = s.raw(req.as_bytes());
    assert!(!String::from_utf8_lossy(&answer).contains(SECRET), "GET {path} sent a script's source:\n{}", String::from_utf8_lossy(&answer));
    parse_response(&answer).0
}

/// An anonymous client: every spelling of a script runs it or is refused,
/// never sends it; the uploads directory runs nothing.
fn anonymous_client(mpm: &str) {
    let s = site(mpm, "", "");
    for (path, expect) in [
        ("/x.php", "ran x.php"),
        ("/%78.php", "ran x.php"),
        ("/x%2ephp", "ran x.php"),
        ("/./x.php", "ran x.php"),
        ("//x.php", "ran x.php"),
        ("/owner/../x.php", "ran x.php"),
        // mod_mime's extensions are not case-sensitive.
        ("/X.PHP", "ran X.PHP"),
        ("/", "ran index.php"),
    ] {
        let r = ask(&s, path);
        assert_eq!((r.status, r.text().as_str()), (200, expect), "GET {path}");
    }
    // Apache's mod_mime would run x.php.txt as PHP; warren neither runs
    // nor sends it.
    assert_eq!(ask(&s, "/x.php.txt").status, 500);
    // Debian's fcgid.conf: `.fcgi` files are programs of their own, which
    // php-cgi would print: scripts answered 500, not sent to the pool.
    assert_eq!(ask(&s, "/app.fcgi").status, 500);
    for path in ["/x.php%00", "/x.php%2500", "/x.php%5c", "/x.ph%70%20", "/x.php::$DATA", "/x.php%2f"] {
        let r = ask(&s, path);
        assert!(r.status >= 400, "GET {path}: {} {}", r.status, r.text());
    }
    // Options -ExecCGI: 403 for every way in, as Apache's mod_fcgid.
    for path in ["/uploads/evil.php", "/uploads/EVIL.PHP", "/uploads/%65vil.php", "/uploads/evil.php/x", "/uploads/", "/owner/../uploads/evil.php"] {
        let r = ask(&s, path);
        assert!(r.status == 403 || r.status == 404, "GET {path}: {} {}", r.status, r.text());
        assert!(!r.text().contains("ran "), "GET {path} ran: {}", r.text());
    }
    assert_eq!(ask(&s, "/uploads/evil.php").status, 403);
    assert!(s.wait_log("error.log", "Options ExecCGI is off in this directory").contains("[client 127.0.0.1:"));
    // FcgidMaxRequestLen, with a length, chunked, and a length that lies.
    let post = |head: &str, body: &str| {
        let req = format!("POST /x.php HTTP/1.1\r\nHost: localhost\r\n{head}Connection: close\r\n\r\n{body}");
        parse_response(&s.raw(req.as_bytes())).0.status
    };
    assert_eq!(post("Content-Length: 10\r\n", "0123456789"), 200);
    assert_eq!(post("Content-Length: 101\r\n", &"x".repeat(101)), 413);
    assert_eq!(post("Transfer-Encoding: chunked\r\n", &format!("65\r\n{}\r\n0\r\n\r\n", "x".repeat(0x65))), 413);
    assert_eq!(post("Content-Length: 99999999999\r\n", "x"), 413);
}

/// The site's owner, `.htaccess` in `owner/`: the wrapper, the user and
/// the limits are the admin's alone (500, said with the line); marking
/// more extensions for mod_fcgid makes them scripts warren does not run
/// (500), never their text, never a program of the owner's choosing.
fn site_owner_htaccess(mpm: &str) {
    for (htaccess, path) in [
        ("FcgidWrapper /bin/sh .txt\n", "/owner/page.txt"),
        ("AssignUserID root root\n", "/owner/y.php"),
        ("SuexecUserGroup root root\n", "/owner/y.php"),
        ("FcgidMaxRequestLen 999999999\n", "/owner/y.php"),
        ("FcgidInitialEnv PHPRC /tmp\n", "/owner/y.php"),
        ("AddHandler fcgid-script .txt\n", "/owner/page.txt"),
    ] {
        let s = site(mpm, htaccess, "");
        let r = ask(&s, path);
        assert_eq!(r.status, 500, "{htaccess}: {}", r.text());
        assert!(!r.text().contains("ran "), "{htaccess}: {}", r.text());
        let log = s.wait_log("error.log", "htaccess");
        assert!(log.contains("owner/.htaccess:1"), "{htaccess}: {log}");
    }
}

/// The site's owner, `.htaccess` in the uploads directory (FileInfo only):
/// no way to have PHP run there past the admin's `Options -ExecCGI`.
fn uploads_stay_off(mpm: &str) {
    for uploads in [
        "AddHandler fcgid-script .php .txt\n",
        "<Files evil.txt>\n  SetHandler fcgid-script\n</Files>\n",
        "SetHandler pool:fcgid-main\n",
        "<FilesMatch \\.php$>\n  SetHandler pool:fcgid-main\n</FilesMatch>\n",
        "Options +ExecCGI\n",
    ] {
        let s = site(mpm, "", uploads);
        for path in ["/uploads/evil.php", "/uploads/evil.txt"] {
            let r = ask(&s, path);
            assert!(r.status >= 400 || !path.ends_with(".php"), "{uploads} GET {path}: {} {}", r.status, r.text());
            assert!(!r.text().contains("ran ") && !r.text().contains("EXECUTED"), "{uploads} GET {path} ran: {}", r.text());
        }
    }
}

each_mpm!(anonymous_client, site_owner_htaccess, uploads_stay_off);
