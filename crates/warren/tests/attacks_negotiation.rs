//! Attacks on content negotiation. The attacker is a site owner who writes
//! `.htaccess` files (AllowOverride All: type maps, MultiViews,
//! AddLanguage...) and wants another file than his own answered, a script's
//! source, or the server stalled; and an anonymous client who crafts
//! names and Accept fields to reach a file the configuration denies. Each
//! attack must end in a refusal (403, 404, 500, 406) with none of the
//! protected bytes in the answer. Under each MPM.

mod common;

use common::*;

const PASSWD_MARK: &str = "root:x:0:0";
const SECRET: &str = "TOP-SECRET";

fn start(mpm: &str) -> Server {
    let dir = TempDir::new(&format!("attacks-negotiation-{mpm}"));
    standard_site(&dir);
    // The tenant's own tree: maps and MultiViews set by .htaccess.
    dir.write("htdocs/t/.htaccess", "Options +MultiViews -FollowSymLinks\nAddHandler type-map .var\nAddLanguage en .en\nAddLanguage fr .fr\nAddType application/x-httpd-php .php\n<Files \"hidden.html.en\">\n    Require all denied\n</Files>\n");
    dir.write("htdocs/t/climb.var", "URI: ../../../../../../etc/passwd\nContent-Type: text/plain\n");
    dir.write("htdocs/t/climb-encoded.var", "URI: %2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd\nContent-Type: text/plain\n");
    dir.write("htdocs/t/slash.var", "URI: /../../etc/passwd\nContent-Type: text/plain\n");
    dir.write("htdocs/t/private.var", "URI: /private/secret.txt\nContent-Type: text/plain\n");
    dir.write("htdocs/t/source.var", "URI: app.php\nContent-Type: text/plain\n");
    dir.write("htdocs/t/app.php", format!("<?php // {SECRET} source\n"));
    dir.write("htdocs/t/loop-a.var", "URI: loop-b.var\nContent-Type: text/html\n");
    dir.write("htdocs/t/loop-b.var", "URI: loop-a.var\nContent-Type: text/html\n");
    dir.write("htdocs/t/broken.var", "URI: x.html\nContent-Type text/html\n");
    dir.write("htdocs/t/huge.var", "# padding\n".repeat(120_000));
    dir.write("htdocs/t/hidden.html.en", SECRET);
    dir.write("htdocs/t/.htpasswd.en", format!("admin:{SECRET}"));
    dir.write("htdocs/t/doc.html.fr", "le document");
    dir.write("htdocs/private/secret.txt", SECRET);
    std::os::unix::fs::symlink("/etc/passwd", dir.0.join("htdocs/t/doc.html.en")).unwrap();
    let conf = "<Directory htdocs>\n    AllowOverride All\n</Directory>\n<Directory htdocs/private>\n    Require all denied\n</Directory>\nAddHandler php-script .php\n";
    Server::start_in(dir, mpm, conf)
}

fn refused(r: &Resp, what: &str) {
    let text = r.text();
    assert!(!text.contains(PASSWD_MARK) && !text.contains(SECRET), "{what}: protected bytes answered ({}):\n{text}", r.status);
    assert!(r.status >= 400, "{what}: answered {}:\n{text}", r.status);
}

fn type_map_uris_stay_beneath_the_root(mpm: &str) {
    let s = start(mpm);
    for map in ["climb", "climb-encoded", "slash"] {
        let r = s.get(&format!("/t/{map}.var"));
        refused(&r, map);
    }
    // The map's URI is a request of its own: the denied directory stays denied.
    let r = s.get("/t/private.var");
    refused(&r, "private.var");
    assert_eq!(r.status, 403);
}

fn a_script_chosen_by_a_map_is_never_its_source(mpm: &str) {
    let s = start(mpm);
    let r = s.get("/t/source.var");
    refused(&r, "source.var");
    assert_eq!(r.status, 500);
    // MultiViews to the same script: still never its source.
    refused(&s.get("/t/app"), "/t/app");
}

fn maps_naming_maps_end_and_bad_maps_are_500(mpm: &str) {
    let s = start(mpm);
    // A map choosing a map is Apache's 506, not a loop.
    let r = s.get("/t/loop-a.var");
    assert_eq!(r.status, 506, "{}", r.text());
    assert!(r.text().contains("<title>506 Variant Also Negotiates</title>"), "{}", r.text());
    assert!(s.wait_log("error.log", "is a type map itself").contains("loop-b.var"));
    let r = s.get("/t/broken.var");
    assert_eq!(r.status, 500);
    assert!(s.wait_log("error.log", "Syntax error in type map").contains("t/broken.var:2: no ':'"));
    let r = s.get("/t/huge.var");
    assert_eq!(r.status, 500);
    assert!(s.wait_log("error.log", "larger than").contains("t/huge.var"));
    // The server still answers.
    assert_eq!(s.get("/a.txt").status, 200);
}

fn multiviews_never_reaches_a_protected_variant(mpm: &str) {
    let s = start(mpm);
    // Denied by the tenant's <Files>: only the French one could answer, and
    // it is not English, so English-only clients get 406, not the secret.
    let r = s.get_with("/t/hidden", "Accept-Language: en\r\n");
    refused(&r, "hidden");
    // An access file's name is denied; its variants never chosen.
    refused(&s.get("/t/.htpasswd"), ".htpasswd");
    refused(&s.get_with("/t/.htpasswd", "Accept-Language: en\r\n"), ".htpasswd en");
    // A link to /etc/passwd, where the tenant's Options refuse links.
    let r = s.get_with("/t/doc", "Accept-Language: en\r\n");
    assert!(!r.text().contains(PASSWD_MARK), "{}", r.text());
    // Names crafted to slip past the prefix match.
    for path in ["/t/doc%00", "/t/doc%2f..%2f..%2fetc%2fpasswd", "/t/..%2fprivate/secret", "/t/doc\\..\\..\\private\\secret"] {
        let r = s.get(path);
        refused(&r, path);
    }
}

fn huge_accept_fields_are_answered(mpm: &str) {
    let s = start(mpm);
    let langs: Vec<String> = (0..1500).map(|i| format!("x{i};q=0.{}", i % 10)).collect();
    let r = s.get_with("/t/doc.html", &format!("Accept-Language: {}, fr;q=0.1\r\nAccept: {}\r\n", langs.join(","), "a/b,".repeat(800)));
    // 406 (nothing the Accept field takes) or a 431 for the fields' size: never a stall or a crash.
    assert!(matches!(r.status, 406 | 431), "{} {}", r.status, r.text());
    assert_eq!(s.get_with("/t/doc", "Accept-Language: fr\r\n").text(), "le document");
}

each_mpm!(
    type_map_uris_stay_beneath_the_root,
    a_script_chosen_by_a_map_is_never_its_source,
    maps_naming_maps_end_and_bad_maps_are_500,
    multiviews_never_reaches_a_protected_variant,
    huge_accept_fields_are_answered,
);
