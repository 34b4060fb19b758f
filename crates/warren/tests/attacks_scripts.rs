//! Attacks on "a script is never sent as text" and on the server-wide
//! handlers, under each MPM. The attacker is an anonymous client who wants
//! a script's source (its passwords) from a site whose configuration names
//! its scripts in a way warren cannot run (mod_fastcgi's configuration,
//! mod_fcgid's AddHandler without a wrapper, AddType application/x-httpd-php, cgi-script, handlers warren
//! lacks), trying every way to the file: its URL in many spellings,
//! DirectoryIndex, FallbackResource, ErrorDocument, Alias, rewrite rules,
//! PATH_INFO, ranges and validators, HTTP/2. Then a site owner with an
//! `.htaccess` who wants the whole server's scoreboard, or their own
//! scripts' source past the server's marks; and a site owner whose PHP
//! floods the shared error log or reads other sites' PHP settings in `ps`.

mod common;

use std::process::Command;

use common::*;

/// What each script holds: no answer may contain it.
const SECRET: &str = "db_password_hunter2";

fn script(tag: &str) -> String {
    format!("<?php $db_password = \"{SECRET}\"; echo \"ran {tag}\";")
}

/// A site whose every script carries [`SECRET`], configured by `conf`
/// (`DOCROOT` in it stands for the site's DocumentRoot).
fn site(mpm: &str, conf: &str) -> Server {
    let dir = TempDir::new(&format!("scripts-{mpm}"));
    standard_site(&dir);
    for f in ["x.php", "index.php", "front.php", "err.php", "x.php.txt", "X.PHP", "a.cgi", "s.phtml", "sub/y.php", "k.phps"] {
        dir.write(&format!("htdocs/{f}"), script(f));
    }
    dir.write("htdocs/plain.txt", "plain text");
    let docroot = dir.0.join("htdocs").to_string_lossy().into_owned();
    let conf = conf.replace("DOCROOT", &docroot);
    Server::start_in(dir, mpm, &format!("LoadModule http2_module modules/mod_http2.so\nProtocols h2c http/1.1\n{conf}"))
}

/// Asks for `path` and checks the answer holds no source; returns it.
fn ask(s: &Server, path: &str) -> Resp {
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let answer = s.raw(req.as_bytes());
    assert!(!String::from_utf8_lossy(&answer).contains(SECRET), "GET {path} sent a script's source:\n{}", String::from_utf8_lossy(&answer));
    parse_response(&answer).0
}

/// `FILE:LINE` of the first line of `s`'s configuration holding `needle`.
fn line_of(s: &Server, needle: &str) -> String {
    let text = std::fs::read_to_string(&s.conf).unwrap();
    let n = text.lines().position(|l| l.contains(needle)).expect("the line is in the configuration") + 1;
    format!("{}:{n}", s.conf.display())
}

/// The ways to a script an anonymous client has, with the status each
/// must get where nothing can run scripts: none sends the source.
fn every_way_refused(s: &Server) {
    for (path, status) in [
        ("/x.php", 500),
        ("/x.php?a=1", 500),
        ("/%78.php", 500),
        ("/x%2ephp", 500),
        ("/./x.php", 500),
        ("//x.php", 500),
        ("/sub/../x.php", 500),
        ("/sub/%2e%2e/x.php", 500),
        ("/sub/y.php", 500),
        ("/X.PHP", 500),
        // Apache's mod_mime: any extension names the handler.
        ("/x.php.txt", 500),
        // The DirectoryIndex candidate, and the fallback of a missing file.
        ("/", 500),
        ("/missing", 500),
        ("/al/x.php", 500),
        ("/rw", 500),
        // No handler splits PATH_INFO: no such file (or its fallback,
        // itself a script); 0: any refusal.
        ("/x.php/extra", 404),
        ("/x.php/", 404),
        ("/x.php%00", 0),
        ("/x.php%2500", 0),
        ("/x.php%5c", 0),
        ("/x.ph%70%20", 0),
        ("/x.php::$DATA", 0),
    ] {
        let r = ask(s, path);
        match status {
            0 => assert!(r.status >= 400, "GET {path}: {}", r.status),
            _ => assert_eq!(r.status, status, "GET {path}: {}", r.text()),
        }
    }
    for headers in ["Range: bytes=0-10\r\n", "If-None-Match: *\r\n", "Accept-Encoding: gzip, br\r\n", "If-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n"] {
        let r = s.get_with("/x.php", headers);
        assert_eq!(r.status, 500, "{headers}");
        assert!(!r.text().contains(SECRET), "{headers}");
    }
    let head = s.raw(b"HEAD /x.php HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert_eq!(status_of(&head), 500);
    // An error page that is itself a script is not sent either.
    let r = ask(s, "/nothere.txt");
    assert!(r.status == 404 || r.status == 500, "{}", r.status);
    // HTTP/2: the same handler, the same refusal.
    let (code, out) = curl(&["--http2-prior-knowledge", "-D", "-", &s.url("/x.php")]);
    let out = String::from_utf8_lossy(&out);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("HTTP/2 500") && !out.contains(SECRET), "{out}");
    // Files the configuration does not name stay served.
    assert_eq!(s.get("/plain.txt").text(), "plain text");
}

/// Around each case's lines: the ways in (index, fallback, alias,
/// rewrite, error document).
fn ways(lines: &str) -> String {
    format!("<Directory DOCROOT>\n{lines}\n  DirectoryIndex index.php\n  FallbackResource /front.php\n</Directory>\nAlias /al DOCROOT\nRewriteEngine On\nRewriteRule ^/rw$ /x.php\nErrorDocument 404 /err.php\n")
}

/// A FastCGI configuration in the <IfModule> of a module warren lacks
/// (mod_fastcgi, mod_fcgid's predecessor): skipped, yet .php files stay
/// scripts. `-t` says so as an error, naming the line, and still loads (as
/// Apache does).
fn fastcgi_seed_in_ifmodule(mpm: &str) {
    let seed = "  Options +ExecCGI\n  <IfModule mod_fastcgi.c>\n    AddHandler fastcgi-script .php\n    FcgidWrapper /usr/bin/php-cgi .php\n  </IfModule>";
    let s = site(mpm, &ways(seed));
    every_way_refused(&s);
    let add_handler = line_of(&s, "AddHandler fastcgi-script");
    let log = s.wait_log("error.log", "makes");
    assert!(log.contains(&format!("{add_handler}: AddHandler fastcgi-script .php makes")) && log.contains("x.php a script, and no FastCGI handler runs it here"), "{log}");
    assert!(log.contains("[client 127.0.0.1:"), "the refusal names the client:\n{log}");
    let out = Command::new(env!("CARGO_BIN_EXE_warren")).args(["-t", "-f"]).arg(&s.conf).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Syntax OK"), "{err}");
    assert!(err.contains(&format!("{add_handler}: AddHandler fastcgi-script .php: files ending in .php are scripts")) && err.contains("(error: answered 500)"), "{err}");
    assert!(err.contains(&format!("{}: FcgidWrapper /usr/bin/php-cgi .php: files ending in .php are scripts", line_of(&s, "FcgidWrapper"))), "{err}");
}

/// `AddHandler fcgid-script .php` alone (no wrapper, no user, no limit of
/// mod_fcgid's: nothing says how to run them) marks: never sent as text.
/// With a wrapper, `-t` says the pool it maps to (fcgid_itk.rs serves it).
fn fcgid_add_handler_alone(mpm: &str) {
    let dir = TempDir::new(&format!("fcgid-bare-{mpm}"));
    dir.write("htdocs/x.php", script("x"));
    let conf = dir.write("bare.conf", "Listen 127.0.0.1:1\nDocumentRoot htdocs\nUser nobody\nGroup nogroup\nOptions +ExecCGI\nAddHandler fcgid-script .php\nFcgidWrapper /usr/bin/php-cgi .php\n");
    let out = Command::new(env!("CARGO_BIN_EXE_warren")).args(["-t", "-f"]).arg(&conf).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.contains("bare.conf:7: mpm-itk/suexec/mod_fcgid lines mapped to warren's pool fcgid-main") && err.contains("bare.conf:6: the files matching (?i)\\.(php)$ run in warren's pool fcgid-main"), "{err}");
    assert!(!err.contains("answered 500"), "{err}");
    let s = site(mpm, &ways("  Options +ExecCGI\n  AddHandler fcgid-script .php"));
    every_way_refused(&s);
}

fn add_type_php(mpm: &str) {
    // mod_php's type runs in the host's PHP pool (mod_php.rs) every way
    // in; `x.php.txt`, which mod_php would run too, stays a 500.
    let s = site(mpm, &ways("  AddType application/x-httpd-php .php"));
    for (path, ran) in [("/x.php", "x.php"), ("/X.PHP", "X.PHP"), ("/", "index.php"), ("/missing", "front.php"), ("/al/x.php", "x.php"), ("/rw", "x.php"), ("/x.php/extra", "x.php")] {
        let r = ask(&s, path);
        assert_eq!((r.status, r.text()), (200, format!("ran {ran}")), "GET {path}");
    }
    assert_eq!(ask(&s, "/x.php.txt").status, 500);
    // The source highlighter's type too: warren has no highlighter.
    let s = site(mpm, "AddType application/x-httpd-php-source .phps\n");
    assert_eq!(ask(&s, "/k.phps").status, 500);
    // A rewrite rule's [T=] of such a type, likewise.
    let s = site(mpm, "RewriteEngine On\nRewriteRule \\.txt$ - [T=application/x-httpd-php]\n");
    assert_eq!(ask(&s, "/x.php.txt").status, 500);
    assert!(s.wait_log("error.log", "[T=]").contains("x.php.txt is application/x-httpd-php by a rewrite rule's [T=]"));
}

fn set_handler_php_script(mpm: &str) {
    let s = site(mpm, &ways("  <FilesMatch \"\\.(php|txt)$\">\n    SetHandler php-script\n  </FilesMatch>\n  <Files plain.txt>\n    SetHandler None\n  </Files>"));
    // SetHandler None after it does not undo the mark: plain.txt is refused too.
    assert_eq!(ask(&s, "/plain.txt").status, 500);
    for path in ["/x.php", "/", "/missing", "/al/x.php", "/rw", "/x.php.txt"] {
        assert_eq!(ask(&s, path).status, 500, "{path}");
    }
}

fn add_handler_cgi_script(mpm: &str) {
    let s = site(mpm, "<Directory DOCROOT>\n  Options +ExecCGI\n  AddHandler cgi-script .cgi .pl\n</Directory>\n");
    // A CGI program now (see cgi.rs): one that cannot be executed is a 500.
    assert_eq!(ask(&s, "/a.cgi").status, 500);
    assert_eq!(ask(&s, "/a.cgi?x").status, 500);
    assert!(s.wait_log("error.log", "cannot execute the program").contains("a.cgi"));
    assert_eq!(s.get("/plain.txt").status, 200);
}

/// A handler warren has never heard of marks as well, in <Location> too.
fn unknown_handler(mpm: &str) {
    let s = site(mpm, "<Location /sub>\n  SetHandler frobnicate-handler\n</Location>\n<Files s.phtml>\n  SetHandler x-httpd-php\n</Files>\n");
    assert_eq!(ask(&s, "/sub/y.php").status, 500);
    assert_eq!(ask(&s, "/s.phtml").status, 500);
    assert_eq!(s.get("/x.php").status, 200, "a file nothing names is served as it is");
}

/// Where the configuration also gives the files a FastCGI handler, that
/// runs them: the marks refuse only what would be sent as text.
fn fastcgi_handler_wins(mpm: &str) {
    let s = site(mpm, "AddHandler fcgid-script .php\n<Pool www>\n  Command /usr/bin/php-cgi\n  User nobody\n  Group nogroup\n  pm static\n  pm.max_children 1\n</Pool>\n<FilesMatch \\.php$>\n  SetHandler pool:www\n  SetHandler application/x-httpd-php\n</FilesMatch>\nDirectoryIndex index.php\n");
    let r = ask(&s, "/x.php");
    assert_eq!((r.status, r.text()), (200, "ran x.php".to_string()));
    assert_eq!(ask(&s, "/").text(), "ran index.php");
    assert_eq!(ask(&s, "/x.php.txt").status, 500, "no handler for .txt: refused, not sent");
}

/// A site owner's `.htaccess`: `SetHandler None` cannot undo what the
/// server named a script, nor can a skipped <IfModule>'s lines be hidden.
fn htaccess_cannot_unmark(mpm: &str) {
    let s = site(mpm, "<Directory DOCROOT>\n  AllowOverride All\n</Directory>\nAddHandler php-script .php\n");
    s.dir.write("htdocs/.htaccess", "<Files x.php>\nSetHandler None\nSetHandler default-handler\n</Files>\nRemoveHandler .php\n<IfModule mod_php7.c>\nAddType application/x-httpd-php .inc\n</IfModule>\n");
    s.dir.write("htdocs/conf.inc", script("conf.inc"));
    assert_eq!(ask(&s, "/x.php").status, 500);
    assert_eq!(ask(&s, "/conf.inc").status, 500);
    assert_eq!(s.get("/plain.txt").status, 200);
}

/// `.htaccess` asks for the server's scoreboard (every host's clients and
/// request lines): a 500 naming the file and line wherever the handler
/// applies, file or not, whatever case or form; the admin's own
/// restricted page stays as it is.
fn htaccess_server_status(mpm: &str) {
    let s = site(mpm, "ExtendedStatus On\n<Directory DOCROOT>\n  AllowOverride FileInfo\n</Directory>\n<Location /server-status>\n  SetHandler server-status\n  Require ip 192.0.2.1\n</Location>\n");
    s.dir.write("htdocs/sub/.htaccess", "# the whole server, please\nSetHandler server-status\n");
    s.dir.write("htdocs/st/.htaccess", "<Files status>\n  SetHandler SERVER-STATUS\n</Files>\n<Files info>\n  SetHandler server-info\n</Files>\n<Files bm>\n  SetHandler balancer-manager\n</Files>\n");
    s.dir.write("htdocs/st/page.html", "a page");
    for path in ["/sub/", "/sub/y.php", "/sub/nothing", "/sub/y.php?auto", "/st/status", "/st/status?auto", "/st/info", "/st/bm"] {
        let r = ask(&s, path);
        assert_eq!(r.status, 500, "{path}: {}", r.text());
        assert!(!r.text().contains("Scoreboard") && !r.text().contains("Server uptime"), "{path}: {}", r.text());
    }
    assert_eq!(s.get("/st/page.html").text(), "a page", "the rest of the directory is served");
    assert_eq!(s.get("/server-status").status, 403);
    let log = s.wait_log("error.log", "htdocs/st/.htaccess:2: SetHandler SERVER-STATUS");
    assert!(log.contains("htdocs/sub/.htaccess:2: SetHandler server-status: a server-wide handler cannot be set in .htaccess"), "{log}");
    assert!(log.contains("htdocs/st/.htaccess:2: SetHandler SERVER-STATUS: a server-wide handler"), "{log}");
    assert!(log.contains("htdocs/st/.htaccess:5: SetHandler server-info: a server-wide handler"), "{log}");
    let (_, out) = curl(&["--http2-prior-knowledge", &s.url("/st/status?auto")]);
    assert!(!String::from_utf8_lossy(&out).contains("Total Accesses"), "{}", String::from_utf8_lossy(&out));
}

/// A site with a pool of php-cgi as nobody, its `.php` files run there.
fn pool_site(mpm: &str, pool: &str) -> Server {
    site(mpm, &format!("<Pool www>\n  Command /usr/bin/php-cgi\n  User nobody\n  Group nogroup\n  pm static\n  pm.max_children 1\n{pool}\n</Pool>\n<FilesMatch \\.php$>\n  SetHandler pool:www\n</FilesMatch>\n"))
}

/// A site owner's PHP prints to stderr without pause: the shared error
/// log gets the pool's burst, then a bounded rate and a count of the rest,
/// not hundreds of megabytes.
fn stderr_flood_is_bounded(mpm: &str) {
    let s = pool_site(mpm, "");
    s.dir.write("htdocs/spam.php", "<?php $e = fopen('php://stderr', 'w'); for ($i = 0; $i < 100000; $i++) { fwrite($e, \"spam line $i \" . str_repeat('x', 200) . \"\\n\"); } echo 'spammed';");
    let started = std::time::Instant::now();
    for _ in 0..3 {
        let r = s.get("/spam.php");
        assert_eq!((r.status, r.text()), (200, "spammed".to_string()), "{}", s.read_log("error.log"));
    }
    // Once the bucket lets a line through again, the count of the rest.
    let log = s.wait_log("error.log", "of its children's output not logged");
    let elapsed = started.elapsed().as_secs_f64() + 1.0;
    let logged = log.lines().filter(|l| l.contains("child said into stderr: \"spam line")).count();
    let dropped: u64 = log.lines().filter_map(|l| l.split("[pool www] ").nth(1)?.split(" lines of its children's output not logged").next()?.parse::<u64>().ok()).sum();
    assert!(dropped > 0, "{log}");
    // 200 at once, then 20 a second.
    assert!(logged as f64 <= 200.0 + 20.0 * elapsed + 1.0, "{logged} lines in {elapsed} s");
    assert!(log.len() < 1 << 20, "the error log grew to {} bytes", log.len());
    // The pool still answers, and its next lines are logged again later.
    assert_eq!(s.get("/x.php").text(), "ran x.php");
}

/// Every user sees every command line in `ps`: the pool's PHP settings
/// are not on it, yet reach PHP; the file they are in is for root and the
/// pool's group alone.
fn php_settings_not_in_ps(mpm: &str) {
    let s = pool_site(mpm, "  php_value[user_agent] = db-secret-host.internal\n  php_admin_value[open_basedir] = /srv/secret-basedir:/tmp\n  php_flag[display_errors] off");
    s.dir.write("htdocs/ini.php", "<?php echo ini_get('user_agent'), ' ', ini_get('open_basedir'), ' ', var_export((bool) ini_get('display_errors'), true), ' ', extension_loaded('calendar') ? 'conf.d read' : 'conf.d missing';");
    let children = s.wait_php_children(1);
    let r = s.get("/ini.php");
    assert_eq!(r.text(), "db-secret-host.internal /srv/secret-basedir:/tmp false conf.d read");
    for pid in children {
        let out = Command::new("ps").args(["-o", "args=", "-p", &pid.to_string()]).output().unwrap();
        let args = String::from_utf8_lossy(&out.stdout);
        assert!(!args.trim().is_empty(), "ps shows the child");
        assert!(!args.contains("secret") && !args.contains("-d"), "ps shows: {args}");
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        let scan = environ.split(|&b| b == 0).find_map(|v| v.strip_prefix(b"PHP_INI_SCAN_DIR=")).map(|v| String::from_utf8_lossy(v).into_owned()).unwrap();
        let (inherited, ours) = scan.rsplit_once(':').unwrap();
        assert_eq!(inherited, "", "the compiled-in scan directory first (conf.d is read)");
        use std::os::unix::fs::MetadataExt;
        let file = std::path::Path::new(ours).join("warren.ini");
        let meta = std::fs::metadata(&file).unwrap();
        let dir = std::fs::metadata(ours).unwrap();
        let nogroup = String::from_utf8(Command::new("id").args(["-g", "nobody"]).output().unwrap().stdout).unwrap();
        if nix_root() {
            assert_eq!((meta.mode() & 0o777, meta.uid(), meta.gid().to_string()), (0o440, 0, nogroup.trim().to_string()));
            assert_eq!((dir.mode() & 0o777, dir.uid()), (0o750, 0));
        }
        assert!(std::fs::read_to_string(&file).unwrap().contains("open_basedir=\"/srv/secret-basedir:/tmp\""));
    }
}

fn nix_root() -> bool {
    std::fs::read_to_string("/proc/self/status").unwrap().lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

each_mpm!(
    fastcgi_seed_in_ifmodule,
    fcgid_add_handler_alone,
    add_type_php,
    set_handler_php_script,
    add_handler_cgi_script,
    unknown_handler,
    fastcgi_handler_wins,
    htaccess_cannot_unmark,
    htaccess_server_status,
    stderr_flood_is_bounded,
    php_settings_not_in_ps,
);
