//! mod_alias under each MPM: Alias and AliasMatch serve files outside the
//! DocumentRoot under the `<Directory>` rules of where they are; Redirect and
//! RedirectMatch answer before any of that, keeping the query string.

mod common;

use common::*;

fn start(mpm: &str) -> Server {
    let dir = TempDir::new(&format!("alias-{mpm}"));
    standard_site(&dir);
    dir.write("outside/file.txt", "outside file");
    dir.write("outside/sub/deep.txt", "deep");
    dir.write("locked/secret.txt", "secret");
    dir.write("app/who.php", "<?php echo __FILE__, ' ', $_SERVER['SCRIPT_NAME'];");
    let d = dir.0.display();
    let conf = format!(
        "<Directory />\n    Require all denied\n</Directory>\n<Directory {d}/htdocs>\n    Require all granted\n</Directory>\n<Directory {d}/outside>\n    Require all granted\n</Directory>\n<Directory {d}/app>\n    Require all granted\n</Directory>\n\
         Alias /ext {d}/outside\nAlias /slash/ {d}/outside/\nAlias /locked {d}/locked\nAliasMatch ^/m/(.+)\\.text$ {d}/outside/$1.txt\nAlias /app {d}/app\n\
         Redirect permanent /old /sub\nRedirect seeother /elsewhere http://example.com/there\nRedirectMatch 410 ^/gone\nRedirectMatch ^/r/(\\w+)$ /sub/$1.html\nRedirect /ext/moved /a.txt\n\
         <Pool www>\n    Command php-cgi\n    pm static\n    pm.max_children 1\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n"
    );
    Server::start_in(dir, mpm, &conf)
}

fn aliases_serve_outside_the_document_root(mpm: &str) {
    let s = start(mpm);
    assert_eq!(s.get("/ext/file.txt").text(), "outside file");
    assert_eq!(s.get("/ext/sub/deep.txt").text(), "deep");
    assert_eq!(s.get("/slash/file.txt").text(), "outside file");
    assert_eq!(s.get("/m/sub/deep.text").text(), "deep");
    // Segment by segment: /extra is not under /ext.
    assert_eq!(s.get("/extra/file.txt").status, 404);
    // The Directory rules of the alias's target apply.
    assert_eq!(s.get("/locked/secret.txt").status, 403);
    // The directory itself without its slash: redirected to it, as in the DocumentRoot.
    let r = s.get("/ext/sub");
    assert_eq!((r.status, r.header("Location").map(|l| l.ends_with("/ext/sub/"))), (301, Some(true)), "{}", r.text());
    // A script under an alias runs from there.
    let php = s.get("/app/who.php").text();
    assert_eq!(php, format!("{}/app/who.php /app/who.php", s.dir.0.display()));
    // The rest of the site is untouched.
    assert_eq!(s.get("/a.txt").text(), "0123456789abcdefghij");
}

fn redirects_answer_first(mpm: &str) {
    let s = start(mpm);
    let r = s.get("/old/page.html?x=1&y=2");
    assert_eq!(r.status, 301);
    assert!(r.header("Location").unwrap().ends_with("/sub/page.html?x=1&y=2"), "{:?}", r.header("Location"));
    assert!(r.text().contains("Moved Permanently"));
    let r = s.get("/elsewhere/a%20b");
    assert_eq!((r.status, r.header("Location")), (303, Some("http://example.com/there/a%20b")));
    assert!(r.text().contains("See Other"));
    assert_eq!(s.get("/gone/anything").status, 410);
    let r = s.get("/r/page");
    assert_eq!(r.status, 302);
    assert!(r.header("Location").unwrap().ends_with("/sub/page.html"), "{:?}", r.header("Location"));
    // Redirects come before aliases, whatever their order in the file.
    let r = s.get("/ext/moved");
    assert_eq!(r.status, 302);
    assert_eq!(s.get("/oldish").status, 404, "whole segments only");
}

/// DirectorySlash: On redirects a directory named without its slash, Off
/// and NotFound answer 404 (mod_dir, point 4 of issue 20, beside mod_alias).
fn directory_slash_on_and_off(mpm: &str) {
    let dir = TempDir::new(&format!("dirslash-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/api/index.html", "api index");
    let conf = format!("<Directory {}/htdocs/api>\n    DirectorySlash Off\n</Directory>\n", dir.0.display());
    let s = Server::start_in(dir, mpm, &conf);
    let r = s.get("/sub?q=1");
    assert_eq!(r.status, 301);
    assert!(r.header("Location").is_some_and(|l| l.ends_with("/sub/?q=1")), "{:?}", r.header("Location"));
    assert_eq!(s.get("/api").status, 404);
    assert_eq!(s.get("/api/").text(), "api index");
}

/// FallbackResource (mod_dir): a request for a file that does not exist is
/// answered by the front controller, which sees the URI the client asked
/// for; a real file, a handler's own 404 and `disabled` are left alone.
fn fallback_resource_reaches_the_front_controller(mpm: &str) {
    let dir = TempDir::new(&format!("fallback-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/index.php", "<?php echo $_SERVER['REQUEST_METHOD'], ' ', $_SERVER['REQUEST_URI'], ' ', $_SERVER['SCRIPT_NAME'];");
    dir.write("htdocs/static/keep.txt", "kept");
    let d = dir.0.display();
    let conf = format!(
        "<Pool www>\n    Command php-cgi\n    pm static\n    pm.max_children 1\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n<Directory {d}/htdocs>\n    FallbackResource /index.php\n</Directory>\n<Directory {d}/htdocs/static>\n    FallbackResource disabled\n</Directory>\n"
    );
    let s = Server::start_in(dir, mpm, &conf);
    assert_eq!(s.get("/users/42?tab=1").text(), "GET /users/42?tab=1 /index.php");
    let (out, _) = s.exchange(b"POST /api/items HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
    assert!(String::from_utf8_lossy(&out).ends_with("POST /api/items /index.php"), "{}", String::from_utf8_lossy(&out));
    assert_eq!(s.get("/a.txt").text(), "0123456789abcdefghij");
    // A script that does not exist is the handler's to answer, as in Apache.
    assert_eq!(s.get("/missing.php").status, 404);
    assert_eq!(s.get("/static/nothing.txt").status, 404);
    assert_eq!(s.get("/static/keep.txt").text(), "kept");
}

/// ScriptAlias: its files are programs, run by the FastCGI handler in
/// force, else as CGI programs (one that cannot be executed is a 500),
/// never sent as text, and its directory is not listed.
fn script_alias_runs_or_refuses(mpm: &str) {
    let dir = TempDir::new(&format!("scriptalias-{mpm}"));
    standard_site(&dir);
    dir.write("bin/hello.php", "<?php echo 'run: ', $_SERVER['SCRIPT_NAME'];");
    dir.write("bin/tool.pl", "#!/usr/bin/perl\nprint 'secret source';\n");
    let d = dir.0.display();
    let conf = format!(
        "ScriptAlias /cgi-bin/ {d}/bin/
<Directory {d}/bin>
    Require all granted
    Options +Indexes
</Directory>
         <Pool www>
    Command php-cgi
    pm static
    pm.max_children 1
</Pool>
<FilesMatch \"\\.php$\">
    SetHandler pool:www
</FilesMatch>
"
    );
    let s = Server::start_in(dir, mpm, &conf);
    assert_eq!(s.get("/cgi-bin/hello.php").text(), "run: /cgi-bin/hello.php");
    let r = s.get("/cgi-bin/tool.pl");
    assert_eq!(r.status, 500);
    assert!(!r.text().contains("secret source"));
    let log = s.wait_log("error.log", "cannot execute the program");
    assert!(log.contains("End of script output before headers"), "{log}");
    assert_eq!(s.get("/cgi-bin/").status, 403);
    assert!(s.wait_log("error.log", "attempt to invoke directory as script").contains("/bin"));
}

each_mpm!(aliases_serve_outside_the_document_root, redirects_answer_first, directory_slash_on_and_off, fallback_resource_reaches_the_front_controller, script_alias_runs_or_refuses);
