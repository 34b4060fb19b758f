//! Attacks on the mapping of paths to files, played by a site owner (their
//! `.htaccess`, their PHP) and by an anonymous client, under each MPM: two
//! sites side by side, `a.test` the attacker's and `b.test` the victim's,
//! and a file outside both. Every directive or rule that names a path
//! (DirectoryIndex, FallbackResource, ErrorDocument, Alias and AliasMatch,
//! RewriteRule in server and per-directory context, `[PT]`, an
//! application's local `Location:`) is tried with `..` that would climb out
//! of the root it is mapped under, plain, percent-encoded, double-encoded,
//! absolute and with backslashes. Nothing from outside the root may come
//! back, each refusal is logged with what made it, and the connection
//! goes on answering.

mod common;

use common::*;

each_mpm!(
    directory_index_stays_beneath_the_root,
    fallback_resource_stays_beneath_the_root,
    server_rewrite_from_the_query_cannot_climb,
    htaccess_rewrite_cannot_climb,
    aliases_stay_beneath_their_directory,
    client_urls_cannot_climb,
    application_and_error_documents_cannot_climb,
    a_refusal_leaves_the_connection_answering,
    links_planted_by_the_site_owner,
    htaccess_is_the_directory_owners_own,
    a_tenant_cannot_choose_another_sites_pool,
    an_htaccess_changed_before_every_request_is_obeyed,
);

/// What must never be in an answer to a.test: b's script source, b's
/// private file, and the file outside both roots.
const B_SOURCE: &str = "B-SOURCE-db_password";
const B_SECRET: &str = "B-SECRET-FILE";
const OUTSIDE: &str = "OUTSIDE-BOTH-ROOTS";

/// The two sites, a.test's `.htaccess` files (`htaccess`: path under
/// `a/`, text) and what more `a_vhost` adds to a.test's `<VirtualHost>`
/// (`{d}` in it is the test's directory).
fn start(mpm: &str, tag: &str, htaccess: &[(&str, &str)], a_vhost: &str) -> Server {
    let dir = TempDir::new(&format!("attack-paths-{tag}-{mpm}"));
    standard_site(&dir);
    dir.write("a/index.html", "a's home");
    dir.write("a/own.html", "a's own page");
    dir.write("a/front.html", "a's front controller");
    dir.write("a/files/ok.txt", "a's download");
    dir.write("a/x/y/.keep", "");
    dir.write("a/shared/index.html", "a's shared index");
    dir.write("b/config.php", format!("<?php $db_password = 'hunter2'; /* {B_SOURCE} */"));
    dir.write("b/secret.txt", B_SECRET);
    dir.write("outside.txt", OUTSIDE);
    dir.write("shared/doc.txt", "shared doc");
    dir.write("a/loc.php", "<?php header('Location: /../../b/secret.txt'); echo 'moved';");
    dir.write("a/loc2.php", "<?php header('Location: /%2e%2e/%2e%2e/outside.txt'); echo 'moved';");
    for (path, text) in htaccess {
        dir.write(&format!("a/{path}"), text);
    }
    let d = dir.0.display();
    let conf = format!(
        "<Directory />\n    Require all denied\n</Directory>\n\
         <Directory {d}/htdocs>\n    Require all granted\n</Directory>\n\
         <Directory {d}/a>\n    Require all granted\n    AllowOverride All\n</Directory>\n\
         <Directory {d}/b>\n    Require all granted\n    <Files config.php>\n        SetHandler None\n    </Files>\n</Directory>\n\
         <Directory {d}/shared>\n    Require all granted\n</Directory>\n\
         <Pool a>\n    Command php-cgi\n    pm static\n    pm.max_children 1\n</Pool>\n\
         <Pool b>\n    Command php-cgi\n    pm static\n    pm.max_children 1\n</Pool>\n\
         <DirectoryMatch \"^{d}/b\">\n    <FilesMatch \\.php$>\n        SetHandler pool:b\n    </FilesMatch>\n</DirectoryMatch>\n\
         <VirtualHost *>\n    ServerName a.test\n    DocumentRoot {d}/a\n    <FilesMatch \\.php$>\n        SetHandler pool:a\n    </FilesMatch>\n{}\n</VirtualHost>\n\
         <VirtualHost *>\n    ServerName b.test\n    DocumentRoot {d}/b\n</VirtualHost>\n",
        a_vhost.replace("{d}", &d.to_string())
    );
    Server::start_in(dir, mpm, &conf)
}

/// `r` holds nothing from outside a.test's root.
fn assert_nothing_leaked(what: &str, r: &Resp) {
    let text = r.text();
    for secret in [B_SOURCE, B_SECRET, OUTSIDE, "root:x:0:0"] {
        assert!(!text.contains(secret), "{what}: {} leaked {secret}: {text}", r.status);
    }
}

fn directory_index_stays_beneath_the_root(mpm: &str) {
    let s = start(
        mpm,
        "index",
        &[
            ("d1/.htaccess", "DirectoryIndex ../../b/config.php\n<Files config.php>\nSetHandler None\n</Files>\n"),
            ("d2/.htaccess", "DirectoryIndex ../../../../../../../../etc/passwd\n"),
            ("d3/.htaccess", "DirectoryIndex /../b/secret.txt\n"),
            ("d4/.htaccess", "DirectoryIndex %2e%2e/%2e%2e/b/secret.txt ..%2f..%2fb%2fsecret.txt\n"),
            ("d5/.htaccess", "DirectoryIndex ..\\..\\b\\secret.txt\n"),
            ("d6/.htaccess", "DirectoryIndex ../../outside.txt ../own.html\n"),
            ("x/y/.htaccess", "DirectoryIndex ../../own.html\n"),
            ("d7/.htaccess", "DirectoryIndex /shared/index.html\n"),
        ],
        "",
    );
    for d in ["/d1/", "/d2/", "/d3/", "/d4/", "/d5/"] {
        let r = s.get_from("a.test", d);
        assert_nothing_leaked(d, &r);
        assert_eq!(r.status, 403, "{d}: no index that may be served, no listing: {}", r.text());
    }
    // A candidate that climbs is skipped; one beneath the root still answers,
    // relative to the directory's URL as Apache's subrequest reads it.
    let r = s.get_from("a.test", "/d6/");
    assert_eq!((r.status, r.text().as_str()), (200, "a's own page"));
    let r = s.get_from("a.test", "/x/y/");
    assert_eq!((r.status, r.text().as_str()), (200, "a's own page"), "`..` that stays beneath the root is resolved");
    let r = s.get_from("a.test", "/d7/");
    assert_eq!((r.status, r.text().as_str()), (200, "a's shared index"), "an absolute candidate is a URL of the host, not a file from /");
    let log = s.wait_log("error.log", "DirectoryIndex ../../outside.txt");
    for value in ["DirectoryIndex ../../b/config.php", "DirectoryIndex ../../../../../../../../etc/passwd", "DirectoryIndex /../b/secret.txt"] {
        assert!(log.contains(&format!("{value}: ")) && log.contains("goes above"), "{value} not logged:\n{log}");
    }
}

fn fallback_resource_stays_beneath_the_root(mpm: &str) {
    let s = start(
        mpm,
        "fallback",
        &[
            ("f1/.htaccess", "FallbackResource /../b/secret.txt\n"),
            ("f2/.htaccess", "FallbackResource ../../b/secret.txt\n"),
            ("f3/.htaccess", "FallbackResource /%2e%2e/outside.txt\n"),
            ("f4/.htaccess", "FallbackResource /front.html\n"),
        ],
        "",
    );
    for d in ["/f1/missing", "/f1/sub/deeper/missing"] {
        let r = s.get_from("a.test", d);
        assert_nothing_leaked(d, &r);
        assert_eq!(r.status, 403, "{d}: {}", r.text());
    }
    // warren takes only a URL path from `/`: the file is refused whole.
    let r = s.get_from("a.test", "/f2/missing");
    assert_nothing_leaked("/f2/missing", &r);
    assert_eq!(r.status, 500);
    // A `%` in a directive is itself: a file of that name, which is missing.
    let r = s.get_from("a.test", "/f3/missing");
    assert_nothing_leaked("/f3/missing", &r);
    assert_eq!(r.status, 404);
    let r = s.get_from("a.test", "/f4/missing");
    assert_eq!((r.status, r.text().as_str()), (200, "a's front controller"));
    let log = s.wait_log("error.log", "(FallbackResource)");
    assert!(log.contains("Cannot map the request to a file") && log.contains("/../b/secret.txt goes above"), "{log}");
    assert!(log.contains("[client 127.0.0.1:"), "{log}");
}

fn server_rewrite_from_the_query_cannot_climb(mpm: &str) {
    let vhost = "    RewriteEngine On\n    RewriteCond %{QUERY_STRING} ^f=(.+)$\n    RewriteRule ^/dl$ /files/%1 [L]\n\
                 RewriteCond %{QUERY_STRING} ^f=(.+)$\n    RewriteRule ^/pt$ /files/%1 [PT]\n\
                 RewriteCond %{QUERY_STRING} ^f=(.+)$\n    RewriteRule ^/get$ %{DOCUMENT_ROOT}/files/%1 [L]\n";
    let s = start(mpm, "srvrw", &[], vhost);
    for q in [
        "/dl?f=../../../../../etc/passwd",
        "/dl?f=../../b/secret.txt",
        "/dl?f=../../outside.txt",
        "/pt?f=../../../b/secret.txt",
        "/get?f=../../b/secret.txt",
        "/get?f=../../../../../../etc/passwd",
    ] {
        let r = s.get_from("a.test", q);
        assert_nothing_leaked(q, &r);
        assert_eq!(r.status, 403, "{q}: {}", r.text());
    }
    // Encoded in the query, the escapes stay as they are: no such file.
    for q in ["/dl?f=..%2f..%2fb%2fsecret.txt", "/dl?f=%2e%2e/%2e%2e/b/secret.txt", "/dl?f=%252e%252e/outside.txt"] {
        let r = s.get_from("a.test", q);
        assert_nothing_leaked(q, &r);
        assert_eq!(r.status, 404, "{q}");
    }
    // What stays beneath the root is served as before.
    for q in ["/dl?f=ok.txt", "/dl?f=sub/../ok.txt", "/pt?f=ok.txt"] {
        let r = s.get_from("a.test", q);
        assert_eq!((r.status, r.text().as_str()), (200, "a's download"), "{q}");
    }
    let log = s.wait_log("error.log", "RewriteRule at ");
    assert!(log.contains("Cannot map the request to a file") && log.contains("warren.conf:"), "the rule's file and line: {log}");
}

fn htaccess_rewrite_cannot_climb(mpm: &str) {
    let rules = "RewriteEngine On\nRewriteCond %{QUERY_STRING} ^f=(.+)$\nRewriteRule ^x$ %1 [L]\nRewriteCond %{QUERY_STRING} ^g=(.+)$\nRewriteRule ^y$ /%1 [L]\n";
    let s = start(mpm, "dirrw", &[("r/.htaccess", rules)], "");
    for q in ["/r/x?f=../../b/secret.txt", "/r/x?f=../../../../../../etc/passwd", "/r/y?g=../b/secret.txt", "/r/y?g=../../outside.txt"] {
        let r = s.get_from("a.test", q);
        assert_nothing_leaked(q, &r);
        assert_eq!(r.status, 403, "{q}: {}", r.text());
    }
    let r = s.get_from("a.test", "/r/x?f=../own.html");
    assert_eq!((r.status, r.text().as_str()), (200, "a's own page"));
    let log = s.wait_log("error.log", "RewriteRule at ");
    assert!(log.contains(".htaccess:3") || log.contains(".htaccess:5"), "the rule's file and line: {log}");
}

fn aliases_stay_beneath_their_directory(mpm: &str) {
    let vhost = "    Alias /al {d}/shared\n    AliasMatch ^/am/([^/]*)-([^/]*)$ {d}/shared/$1/$2\n";
    let s = start(mpm, "alias", &[], vhost);
    let r = s.get_from("a.test", "/al/doc.txt");
    assert_eq!((r.status, r.text().as_str()), (200, "shared doc"), "{}", s.read_log("error.log"));
    let r = s.get_from("a.test", "/am/doc.txt-");
    assert_eq!(r.status, 404, "{}", r.text());
    for u in ["/al/../outside.txt", "/al/%2e%2e/outside.txt", "/al/..%2foutside.txt", "/am/..-outside.txt", "/am/..-..%2fb/secret.txt"] {
        let r = s.get_from("a.test", u);
        assert_nothing_leaked(u, &r);
        assert!(r.status >= 400, "{u}: {}", r.status);
    }
    let r = s.get_from("a.test", "/am/..-outside.txt");
    assert_eq!(r.status, 403);
    let log = s.wait_log("error.log", "(AliasMatch)");
    assert!(log.contains("goes above"), "{log}");
}

fn client_urls_cannot_climb(mpm: &str) {
    let s = start(mpm, "client", &[], "");
    for u in [
        "/../b/secret.txt",
        "/../../outside.txt",
        "/%2e%2e/outside.txt",
        "/%2E%2E/%2e%2e/outside.txt",
        "/.%2e/outside.txt",
        "/%252e%252e/outside.txt",
        "/..%2foutside.txt",
        "/..%5c..%5coutside.txt",
        "/..\\..\\outside.txt",
        "/x/../../outside.txt",
        "/own.html%00/../../outside.txt",
    ] {
        let req = format!("GET {u} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
        let (resp, _) = parse_response(&s.raw(req.as_bytes()));
        assert_nothing_leaked(u, &resp);
        assert!(resp.status >= 400, "{u}: {}", resp.status);
    }
    // The absolute form names b.test's host but not a way out of it.
    let req = "GET http://b.test/../outside.txt HTTP/1.1\r\nHost: b.test\r\nConnection: close\r\n\r\n";
    let (resp, _) = parse_response(&s.raw(req.as_bytes()));
    assert_nothing_leaked("absolute-form", &resp);
}

fn application_and_error_documents_cannot_climb(mpm: &str) {
    let s = start(
        mpm,
        "appdoc",
        &[("e/.htaccess", "ErrorDocument 404 /../b/secret.txt\n"), ("e2/.htaccess", "ErrorDocument 404 /e2/missing-too.html\nErrorDocument 403 /../../outside.txt\n")],
        "",
    );
    for u in ["/loc.php", "/loc2.php"] {
        let r = s.get_from("a.test", u);
        assert_nothing_leaked(u, &r);
        assert_ne!(r.status, 200, "{u}: a local Location that climbs is not followed: {}", r.text());
    }
    // A document that climbs, and one that is missing itself: the built-in
    // page of the first error, no loop.
    for u in ["/e/missing", "/e2/missing"] {
        let r = s.get_from("a.test", u);
        assert_nothing_leaked(u, &r);
        assert_eq!(r.status, 404, "{u}");
    }
}

fn a_refusal_leaves_the_connection_answering(mpm: &str) {
    let s = start(mpm, "conn", &[("d1/.htaccess", "DirectoryIndex ../../b/secret.txt\n"), ("f1/.htaccess", "FallbackResource /../b/secret.txt\n")], "");
    let mut c = s.connect();
    let pipeline = "GET /d1/ HTTP/1.1\r\nHost: a.test\r\n\r\nGET /f1/missing HTTP/1.1\r\nHost: a.test\r\n\r\nGET /own.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n";
    std::io::Write::write_all(&mut c, pipeline.as_bytes()).unwrap();
    let all = read_to_close(&mut c);
    let answers = parse_all(&all);
    assert_eq!(answers.iter().map(|r| r.status).collect::<Vec<_>>(), [403, 403, 200]);
    assert_eq!(answers[2].text(), "a's own page");
    for r in &answers {
        assert_nothing_leaked("pipelined", r);
    }
}

/// The site owner (here `nobody`) plants links to b's files in a's tree;
/// the admin's SymLinksIfOwnerMatch (set for a's directory in an
/// `.htaccess` here) refuses each, on every way to it.
fn links_planted_by_the_site_owner(mpm: &str) {
    use std::os::unix::fs::{lchown, symlink};
    let s = start(
        mpm,
        "links",
        &[(".htaccess", "Options -FollowSymLinks +SymLinksIfOwnerMatch\n"), ("idx/.htaccess", "DirectoryIndex steal.txt\n"), ("fb/.htaccess", "FallbackResource /steal.txt\n")],
        "",
    );
    let d = &s.dir.0;
    let nobody = nobody();
    for (target, at) in [("b/secret.txt", "a/steal.txt"), ("b", "a/bdir"), ("b/secret.txt", "a/idx/steal.txt"), ("outside.txt", "a/out.txt")] {
        symlink(d.join(target), d.join(at)).unwrap();
        lchown(d.join(at), Some(nobody), None).unwrap();
    }
    for u in ["/steal.txt", "/bdir/secret.txt", "/bdir/config.php", "/idx/", "/fb/missing", "/out.txt"] {
        let r = s.get_from("a.test", u);
        assert_nothing_leaked(u, &r);
        assert_eq!(r.status, 403, "{u}: {}", r.text());
    }
    let log = s.wait_log("error.log", "Symbolic link not allowed");
    assert!(log.contains(&format!("{}", d.join("a/steal.txt").display())), "{log}");
}

/// An `.htaccess` is read as the server's user, who may read what its
/// directory's owner cannot, and its errors are quoted into a log the owner
/// reads: a link to another site's secret, or a hard link to it, is not read.
fn htaccess_is_the_directory_owners_own(mpm: &str) {
    use std::os::unix::fs::{lchown, symlink};
    let s = start(mpm, "htlink", &[("lk/x.txt", "x"), ("hl/x.txt", "x"), ("own/x.txt", "x"), ("own/rules.txt", "Require all denied\n")], "");
    let d = &s.dir.0;
    let nobody = nobody();
    // The site's owner (nobody) links to b's secret (root's)...
    symlink(d.join("b/secret.txt"), d.join("a/lk/.htaccess")).unwrap();
    lchown(d.join("a/lk/.htaccess"), Some(nobody), None).unwrap();
    // ...and hard-links a file of another user (here nobody's, in root's directory).
    let theirs = s.dir.write("b/theirs.txt", B_SECRET);
    std::os::unix::fs::chown(&theirs, Some(nobody), None).unwrap();
    std::fs::hard_link(&theirs, d.join("a/hl/.htaccess")).unwrap();
    // A link to a file of the link's own owner is followed, as Debian's
    // WordPress links its .htaccess (root's) to /etc/wordpress/htaccess (root's).
    symlink(d.join("a/own/rules.txt"), d.join("a/own/.htaccess")).unwrap();
    for u in ["/lk/x.txt", "/hl/x.txt"] {
        let r = s.get_from("a.test", u);
        assert_nothing_leaked(u, &r);
        assert_eq!(r.status, 500, "{u}");
    }
    assert_eq!(s.get_from("a.test", "/own/x.txt").status, 403, "the linked file's Require applies");
    let log = s.wait_log("error.log", "a hard link");
    assert!(log.contains("a symbolic link to a file of another owner"), "{log}");
    assert!(!log.contains(B_SECRET), "the secret quoted into the log:\n{log}");
}

/// b's pool is given to b's tree by a `<DirectoryMatch>`: a's `.htaccess`
/// may not hand a's script to it (it would run as b, with b's files).
fn a_tenant_cannot_choose_another_sites_pool(mpm: &str) {
    let s = start(mpm, "otherpool", &[("w/.htaccess", "<Files w.php>\nSetHandler pool:b\n</Files>\n"), ("w/w.php", "<?php echo 'RAN-IN-POOL-B';")], "");
    let r = s.get_from("a.test", "/w/w.php");
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(!r.text().contains("RAN-IN-POOL-B"));
    // b's own scripts still go to b's pool.
    s.dir.write("b/own.php", "<?php echo 'b ran';");
    let r = s.get_from("b.test", "/own.php");
    assert_eq!((r.status, r.text().as_str()), (200, "b ran"));
}

/// A site owner rewrites an `.htaccess` before every request (under the
/// event MPM, such a file is read on a worker thread, never on the loop):
/// each request is answered by the file as it is then, its access rules
/// and its LimitRequestBody included.
fn an_htaccess_changed_before_every_request_is_obeyed(mpm: &str) {
    let s = start(mpm, "htchange", &[("c/page.txt", "c's page"), ("c/post.php", "<?php echo 'posted ', strlen(file_get_contents('php://input'));")], "");
    let ht = s.dir.0.join("a/c/.htaccess");
    for round in 0..6 {
        // A size of its own each time, so that no two versions look alike.
        let pad = "#".repeat(round + 1);
        let (text, want) = if round % 2 == 0 { (format!("Require all denied\n{pad}\n"), 403) } else { (format!("Require all granted\n{pad}\n"), 200) };
        std::fs::write(&ht, text).unwrap();
        let r = s.get_from("a.test", "/c/page.txt");
        assert_eq!(r.status, want, "round {round}: {}", r.text());
    }
    std::fs::write(&ht, "LimitRequestBody 10\n").unwrap();
    let post = "POST /c/post.php HTTP/1.1\r\nHost: a.test\r\nContent-Length: 100\r\nConnection: close\r\n\r\n".to_string() + &"x".repeat(100);
    let (r, _) = parse_response(&s.raw(post.as_bytes()));
    assert_eq!(r.status, 413, "{}", r.text());
    std::fs::write(&ht, "LimitRequestBody 1000\n").unwrap();
    let (r, _) = parse_response(&s.raw(post.as_bytes()));
    assert_eq!((r.status, r.text().as_str()), (200, "posted 100"));
}
