//! mod_mime's typing by every extension and mod_negotiation (MultiViews,
//! type maps), against Apache 2.4's answers: a client sends Accept,
//! Accept-Language, Accept-Charset and Accept-Encoding over a raw socket
//! and gets the variant Apache would give, with its Vary, TCN and
//! Content-Location; nothing acceptable is a 406 listing the variants; a
//! variant the client could not fetch by its own URL is never chosen, and a
//! script variant is run, never sent as text; a malformed type map is a 500
//! naming the file and line. Under each MPM.

mod common;

use common::*;

/// A TypesConfig of its own, so that the answers do not depend on the
/// machine's /etc/mime.types.
const TYPES: &str = "text/html html\ntext/plain txt\napplication/x-tar tar\nimage/png png\napplication/json json\n";

fn site(dir: &TempDir) {
    standard_site(dir);
    dir.write("mime.types", TYPES);
    dir.write("htdocs/page.html.en", "english page\n");
    dir.write("htdocs/file.tar.gz", "not really gzip");
    dir.write("htdocs/notes.txt.utf8", "utf-8 notes");
    dir.write("htdocs/plain/readme.txt", "plain");
    dir.write("htdocs/plain/page.html.en", "english page\n");
    dir.write("htdocs/forced/data.txt", "{}");
    dir.write("htdocs/mv/doc.html.en", "doc in English\n");
    dir.write("htdocs/mv/doc.html.fr", "doc en français\n");
    dir.write("htdocs/mv/doc.html.de", "Dokument auf Deutsch\n");
    dir.write("htdocs/mv/pic.png", "PNG");
    dir.write("htdocs/mv/idx/index.html.en", "index in English");
    dir.write("htdocs/mv/idx/index.html.fr", "index en français");
    dir.write("htdocs/mv/pic.html", "<img src=pic.png>");
    dir.write("htdocs/mv/data.txt", "plain data");
    dir.write("htdocs/mv/data.txt.gz", "gzipped data");
    dir.write("htdocs/mv/secret.html.en", "SECRET english");
    dir.write("htdocs/mv/secret.html.fr", "public french");
    dir.write("htdocs/mv/odd.weird", "no type anywhere");
    dir.write("htdocs/a.foo", "foo");
    dir.write("htdocs/mv/.htpasswd.txt", "SECRET hidden");
    dir.write("htdocs/fallback/doc.html.en", "fallback English\n");
    dir.write("htdocs/fallback/doc.html.de", "fallback Deutsch\n");
}

const CONF: &str = "TypesConfig mime.types\n\
AddLanguage en .en\nAddLanguage fr .fr\nAddLanguage de .de\n\
AddEncoding x-gzip .gz\nAddCharset UTF-8 .utf8\n\
AddHandler type-map .var\nAddType \"text/x-Foo; charset=UTF-8\" .foo\n\
LanguagePriority en fr de\n\
<Directory htdocs/plain>\n    RemoveLanguage .en\n    DefaultLanguage it\n</Directory>\n\
<Directory htdocs/forced>\n    ForceType application/json\n</Directory>\n\
<Directory htdocs/mv>\n    Options +MultiViews\n    DirectoryIndex index.php index\n</Directory>\n\
<Files \"secret.html.en\">\n    Require all denied\n</Files>\n\
<Directory htdocs/fallback>\n    Options +MultiViews\n    LanguagePriority de en\n    ForceLanguagePriority Prefer Fallback\n</Directory>\n";

fn start(mpm: &str, extra: &str) -> Server {
    let dir = TempDir::new(&format!("negotiation-{mpm}"));
    site(&dir);
    Server::start_in(dir, mpm, &format!("{CONF}{extra}"))
}

fn vary_tokens(r: &Resp) -> Vec<String> {
    r.header("vary").unwrap_or("").split(',').map(|t| t.trim().to_ascii_lowercase()).filter(|t| !t.is_empty()).collect()
}

fn every_extension_types_a_file(mpm: &str) {
    let s = start(mpm, "");
    let r = s.get("/page.html.en");
    assert_eq!((r.status, r.header("content-type"), r.header("content-language")), (200, Some("text/html"), Some("en")), "{:?}", r.headers);
    // The type of the last extension with one; the encoding of .gz (never
    // compressed again), named as the client names it.
    let r = s.get("/file.tar.gz");
    assert_eq!((r.header("content-type"), r.header("content-encoding")), (Some("application/x-tar"), Some("x-gzip")), "{:?}", r.headers);
    let r = s.get_with("/file.tar.gz", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(r.body, b"not really gzip");
    // Charsets (and AddType's types) in lower case, as Apache sends them.
    let r = s.get("/notes.txt.utf8");
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(s.get("/a.foo").header("content-type"), Some("text/x-foo; charset=utf-8"));
    // RemoveLanguage and DefaultLanguage below.
    let r = s.get("/plain/page.html.en");
    assert_eq!((r.header("content-type"), r.header("content-language")), (Some("text/html"), Some("it")), "{:?}", r.headers);
    let r = s.get("/plain/readme.txt");
    assert_eq!(r.header("content-language"), Some("it"));
    let r = s.get("/forced/data.txt");
    assert_eq!(r.header("content-type"), Some("application/json"));
    // Without MultiViews a missing name stays missing.
    assert_eq!(s.get("/page").status, 404);
}

fn multiviews_chooses_by_language(mpm: &str) {
    let s = start(mpm, "");
    let r = s.get_with("/mv/doc", "Accept-Language: fr, en;q=0.5\r\n");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text(), "doc en français\n");
    assert_eq!((r.header("content-language"), r.header("content-location"), r.header("tcn")), (Some("fr"), Some("doc.html.fr"), Some("choice")), "{:?}", r.headers);
    assert_eq!(vary_tokens(&r), ["negotiate", "accept-language"]);
    // de-AT takes de; without Accept-Language LanguagePriority decides.
    assert_eq!(s.get_with("/mv/doc", "Accept-Language: de-at, de;q=0.8\r\n").text(), "Dokument auf Deutsch\n");
    assert_eq!(s.get("/mv/doc").text(), "doc in English\n");
    // Equal qualities: LanguagePriority's order.
    assert_eq!(s.get_with("/mv/doc", "Accept-Language: de, fr\r\n").text(), "doc en français\n");
    // A DirectoryIndex candidate is negotiated too.
    let r = s.get_with("/mv/idx/", "Accept-Language: fr\r\n");
    assert_eq!((r.status, r.text().as_str(), r.header("content-location")), (200, "index en français", Some("index.html.fr")));
    // An extension asked for narrows the variants.
    assert_eq!(s.get_with("/mv/doc.html", "Accept-Language: de\r\n").text(), "Dokument auf Deutsch\n");
}

fn multiviews_chooses_by_type_and_encoding(mpm: &str) {
    let s = start(mpm, "");
    let r = s.get_with("/mv/pic", "Accept: text/html,application/xhtml+xml,*/*;q=0.8\r\n");
    assert_eq!((r.status, r.header("content-type")), (200, Some("text/html")), "{:?}", r.headers);
    assert_eq!(vary_tokens(&r), ["negotiate", "accept"]);
    let r = s.get_with("/mv/pic", "Accept: image/*\r\n");
    assert_eq!((r.header("content-type"), r.body.as_slice()), (Some("image/png"), &b"PNG"[..]));
    let r = s.get_with("/mv/data", "Accept-Encoding: gzip\r\n");
    assert_eq!((r.header("content-encoding"), r.text().as_str()), (Some("gzip"), "gzipped data"), "{:?}", r.headers);
    assert_eq!(vary_tokens(&r), ["negotiate", "accept-encoding"]);
    let r = s.get("/mv/data");
    assert_eq!((r.header("content-encoding"), r.text().as_str()), (None, "plain data"));
}

fn nothing_acceptable_is_406_with_the_list(mpm: &str) {
    let s = start(mpm, "");
    let r = s.get_with("/mv/pic", "Accept: application/json\r\n");
    assert_eq!(r.status, 406, "{}", r.text());
    let text = r.text();
    assert!(text.contains("<title>406 Not Acceptable</title>"), "{text}");
    assert!(text.contains("<p>An appropriate representation of the requested resource could not be found on this server.</p>\nAvailable variants:\n<ul>\n<li><a href=\"pic.html\">pic.html</a> , type text/html</li>\n<li><a href=\"pic.png\">pic.png</a> , type image/png</li>\n</ul>\n"), "{text}");
    assert_eq!(r.header("tcn"), Some("list"));
    assert_eq!(r.header("alternates"), Some("{\"pic.html\" 1 {type text/html} {length 17}}, {\"pic.png\" 1 {type image/png} {length 3}}"));
    assert!(s.wait_log("error.log", "no acceptable variant").contains("mv/pic"));
    // ForceLanguagePriority Fallback: the first of LanguagePriority instead.
    let r = s.get_with("/fallback/doc", "Accept-Language: ja\r\n");
    assert_eq!((r.status, r.text().as_str()), (200, "fallback Deutsch\n"));
    assert_eq!(s.get_with("/mv/doc", "Accept-Language: ja\r\n").status, 406);
}

fn never_a_variant_the_client_could_not_fetch(mpm: &str) {
    let s = start(mpm, "");
    // The denied English variant is not a candidate: French is sent.
    let r = s.get_with("/mv/secret", "Accept-Language: en, fr;q=0.1\r\n");
    assert_eq!((r.status, r.text().as_str()), (200, "public french"));
    assert_eq!(s.get("/mv/secret.html.en").status, 403);
    assert_eq!(vary_tokens(&r), ["negotiate"], "one variant left: nothing varies");
    // `.ht*` files are never variants, nor negotiated for; a name no
    // extension types is not one either.
    let r = s.get("/mv/.htpasswd");
    assert!(!r.text().contains("SECRET"), "{}", r.text());
    assert_eq!(r.status, 403, "{}", r.text());
    let r = s.get("/mv/odd");
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(s.wait_log("error.log", "None could be negotiated").contains("mv/odd"));
}

fn script_variants_run(mpm: &str) {
    let dir = TempDir::new(&format!("negotiation-php-{mpm}"));
    site(&dir);
    dir.write("htdocs/mv/app.php", "<?php echo 'ran ', $_SERVER['SCRIPT_NAME'];");
    dir.write("htdocs/mv/marked.php", "<?php echo 'ran ', 'marked';");
    let fpm = Fpm::start(&dir, "");
    let conf = format!(
        "{CONF}AddType application/x-httpd-php .php\n<Files \"app.php\">\n    SetHandler \"proxy:unix:{}|fcgi://localhost\"\n</Files>\n",
        fpm.socket.display()
    );
    let s = Server::start_in(dir, mpm, &conf);
    let r = s.get("/mv/app");
    assert_eq!((r.status, r.text().as_str()), (200, "ran /mv/app.php"), "{:?}", r.headers);
    // A script only AddType names runs in the host's mod_php pool, never
    // sent as its source.
    let r = s.get("/mv/marked");
    assert!(!r.text().contains("<?php"), "{}", r.text());
    assert_eq!((r.status, r.text().as_str()), (200, "ran marked"));
}

/// A type map in Debian's localized-error-pages form.
const ERROR_MAP: &str = "Content-language: de\nContent-type: text/html; charset=UTF-8\nBody:----------de--\n<p>Nicht gefunden</p>\n----------de--\n\nContent-language: en\nContent-type: text/html; charset=UTF-8\nBody:----------en--\n<p>Not found</p>\n----------en--\n\nContent-language: fr\nContent-type: text/html; charset=UTF-8\nBody:----------fr--\n<p>Introuvable</p>\n----------fr--\n";

fn type_maps_and_localized_error_pages(mpm: &str) {
    let dir = TempDir::new(&format!("negotiation-map-{mpm}"));
    site(&dir);
    dir.write("error/HTTP_NOT_FOUND.html.var", ERROR_MAP);
    dir.write("htdocs/maps/menu.var", "URI: menu.html.en\nContent-Type: text/html\nContent-Language: en\n\nURI: menu.html.fr\nContent-Type: text/html\nContent-Language: fr\n\nURI: menu.txt\nContent-Type: text/plain; qs=0.5\n");
    dir.write("htdocs/maps/menu.html.en", "menu en");
    dir.write("htdocs/maps/menu.html.fr", "menu fr");
    dir.write("htdocs/maps/menu.txt", "menu as text");
    dir.write("htdocs/maps/broken.var", "URI: menu.html.en\nContent-Type: text/html\nthis line has no colon\n");
    let root = dir.0.display().to_string();
    let conf = format!(
        "{CONF}Alias /error/ {root}/error/\n<Directory {root}/error>\n    Require all granted\n    LanguagePriority en de fr\n    ForceLanguagePriority Prefer Fallback\n</Directory>\nErrorDocument 404 /error/HTTP_NOT_FOUND.html.var\n"
    );
    let s = Server::start_in(dir, mpm, &conf);
    let r = s.get_with("/no/such/page", "Accept-Language: de\r\n");
    assert_eq!((r.status, r.text().as_str()), (404, "<p>Nicht gefunden</p>\n"), "{:?}", r.headers);
    assert_eq!((r.header("content-type"), r.header("content-language")), (Some("text/html; charset=utf-8"), Some("de")));
    assert_eq!(s.get_with("/missing", "Accept-Language: ja\r\n").text(), "<p>Not found</p>\n", "Fallback: LanguagePriority's first");
    // A map of files: the variant's own request serves it; qs weighs
    // with Accept's quality before languages count.
    let r = s.get_with("/maps/menu.var", "Accept-Language: fr, en;q=0.6\r\n");
    assert_eq!((r.status, r.text().as_str(), r.header("content-language")), (200, "menu fr", Some("fr")));
    assert_eq!((r.header("content-location"), r.header("tcn")), (Some("menu.html.fr"), Some("choice")));
    assert_eq!(vary_tokens(&r), ["negotiate", "accept", "accept-language"]);
    let r = s.get_with("/maps/menu.var", "Accept: text/plain, text/html;q=0.4\r\nAccept-Language: fr\r\n");
    assert_eq!(r.text(), "menu as text", "0.5 (qs) x 1 beats 1 x 0.4");
    let r = s.get_with("/maps/menu.var", "Accept: text/plain, text/html;q=0.6\r\n");
    assert_eq!(r.text(), "menu en", "1 x 0.6 beats 0.5 x 1; English by LanguagePriority");
    // A malformed map: 500, and the log names the file and line.
    assert_eq!(s.get("/maps/broken.var").status, 500);
    let log = s.wait_log("error.log", "Syntax error in type map");
    assert!(log.contains("maps/broken.var:3: no ':' in header 'this line has no colon'"), "{log}");
}

each_mpm!(
    every_extension_types_a_file,
    multiviews_chooses_by_language,
    multiviews_chooses_by_type_and_encoding,
    nothing_acceptable_is_406_with_the_list,
    never_a_variant_the_client_could_not_fetch,
    script_variants_run,
    type_maps_and_localized_error_pages,
);
