//! Apache's exact answers (issue 35, item 9), under each MPM, with
//! Debian's php-fpm: each expectation here was first read off Debian's
//! apache2 2.4.71 serving the same tree (mod_proxy_fcgi to the same
//! php-fpm). PATH_INFO is split before the per-directory rewrite
//! conditions; FallbackResource comes after the access checks and answers
//! for a directory without an index; the DirectoryIndex script gets its own
//! sections' headers; POST to a static file, OPTIONS and `#`; mod_deflate's
//! small files; error-page and listing markup; the CGI variables.

mod common;

use common::*;

/// A script that shows what PHP was given.
const DUMP: &str = "<?php\n$k = array_keys($_SERVER); sort($k);\nforeach ($k as $n) { if (is_string($_SERVER[$n])) echo $n, '=', $_SERVER[$n], \"\\n\"; }\n";

/// WordPress's rules, which send what is not a file to index.php.
const WORDPRESS_RULES: &str = "RewriteEngine On\nRewriteBase /wp/\nRewriteRule ^index\\.php$ - [L]\nRewriteCond %{REQUEST_FILENAME} !-f\nRewriteCond %{REQUEST_FILENAME} !-d\nRewriteRule . /wp/index.php?from-rule=1 [L]\n";

fn start(mpm: &str) -> (Fpm, Server) {
    let dir = TempDir::new(&format!("exact-{mpm}"));
    dir.write("htdocs/wp/index.php", DUMP);
    dir.write("htdocs/wp/xmlrpc.php", DUMP);
    dir.write("htdocs/wp/.htaccess", WORDPRESS_RULES);
    dir.write("htdocs/tiny.txt", "hi\n");
    dir.write("htdocs/m68.txt", "a".repeat(68));
    dir.write("htdocs/m69.txt", "a".repeat(69));
    dir.write("htdocs/empty.php", "<?php ");
    dir.write("htdocs/two.php", "<?php echo 'hi';");
    // A front controller by FallbackResource, and a name it must not serve.
    dir.write("htdocs/fb/index.php", "<?php echo 'front ', $_SERVER['REQUEST_URI'];");
    dir.write("htdocs/fb/.htaccess", "FallbackResource /fb/index.php\n<FilesMatch \"\\.(bak|sql)$\">\nRequire all denied\n</FilesMatch>\n");
    dir.write("htdocs/fb/empty/.keep", "");
    // Drupal's front page: two weeks for files, nothing for its PHP.
    dir.write("htdocs/drupal/index.php", "<?php echo 'drupal';");
    dir.write("htdocs/drupal/.htaccess", "ExpiresActive On\nExpiresDefault A1209600\n<FilesMatch \\.php$>\nExpiresActive Off\nHeader set X-PHP yes\n</FilesMatch>\n");
    // An ErrorDocument and a rule that go to a script with PATH_INFO.
    dir.write("htdocs/app/index.php", DUMP);
    dir.write("htdocs/app/.htaccess", "RewriteEngine On\nRewriteRule ^pi/(.*)$ index.php/$1 [L]\nErrorDocument 404 /app/index.php/error/404\n");
    dir.write("htdocs/gone/.htaccess", "ErrorDocument 404 /gone/nothere.html\n");
    dir.write("htdocs/list/a.txt", "x");
    dir.write("htdocs/list/sub/b.txt", "x");
    let fpm = Fpm::start(&dir, "");
    let conf = format!(
        "DirectoryIndex index.html index.php\n<Directory {root}>\n    AllowOverride All\n    Options Indexes FollowSymLinks\n    Require all granted\n</Directory>\n\
         <FilesMatch \".+\\.php$\">\n    SetHandler \"proxy:unix:{socket}|fcgi://localhost\"\n</FilesMatch>\nAddOutputFilterByType DEFLATE text/html text/plain\n",
        root = dir.0.join("htdocs").display(),
        socket = fpm.socket.display()
    );
    let s = Server::start_in(dir, mpm, &conf);
    (fpm, s)
}

fn vars(r: &Resp) -> std::collections::HashMap<String, String> {
    key_values(&r.text())
}

/// `RewriteCond %{REQUEST_FILENAME} !-f` sees the file of
/// `/xmlrpc.php/extra/path`, which runs with its PATH_INFO; and
/// `/index.php/blog/feed.php`, though its name ends in `.php`, runs
/// index.php (AcceptPathInfo's default for scripts).
fn path_info_split_before_rewrite_conditions(mpm: &str) {
    let (_fpm, s) = start(mpm);
    let r = s.get("/wp/xmlrpc.php/extra/path");
    assert_eq!(r.status, 200, "{}", r.text());
    let v = vars(&r);
    assert!(v["SCRIPT_FILENAME"].ends_with("/htdocs/wp/xmlrpc.php"), "{v:?}");
    assert_eq!((v["PATH_INFO"].as_str(), v["QUERY_STRING"].as_str()), ("/extra/path", ""));
    let v = vars(&s.get("/wp/index.php/blog/feed.php"));
    assert!(v["SCRIPT_FILENAME"].ends_with("/htdocs/wp/index.php"), "{v:?}");
    assert_eq!((v["SCRIPT_NAME"].as_str(), v["PATH_INFO"].as_str()), ("/wp/index.php", "/blog/feed.php"));
    // What is no file at all still goes to the front controller.
    let v = vars(&s.get("/wp/blog/2024/hello?c=3"));
    assert_eq!((v["SCRIPT_NAME"].as_str(), v["QUERY_STRING"].as_str()), ("/wp/index.php", "from-rule=1"));
    // The query the rule left, as Apache's r->args at the redirect.
    assert_eq!((v["REDIRECT_URL"].as_str(), v["REDIRECT_QUERY_STRING"].as_str()), ("/wp/blog/2024/hello", "from-rule=1"));
}

/// An ErrorDocument and a rewrite to a script with PATH_INFO run that
/// script with it (php-fpm answered "File not found." before).
fn internal_redirects_to_path_info(mpm: &str) {
    let (_fpm, s) = start(mpm);
    let r = s.get("/app/missing?q=1");
    assert_eq!(r.status, 404);
    let v = vars(&r);
    assert_eq!((v["SCRIPT_NAME"].as_str(), v["PATH_INFO"].as_str(), v["PHP_SELF"].as_str()), ("/app/index.php", "/error/404", "/app/index.php/error/404"), "{}", r.text());
    assert_eq!((v["REDIRECT_STATUS"].as_str(), v["REDIRECT_URL"].as_str(), v["REDIRECT_QUERY_STRING"].as_str()), ("404", "/app/missing", "q=1"));
    assert!(v["SCRIPT_FILENAME"].ends_with("/htdocs/app/index.php"), "PHP strips mod_proxy_fcgi's prefix: {v:?}");
    let r = s.get("/app/pi/abc");
    assert_eq!(r.status, 200, "{}", r.text());
    let v = vars(&r);
    assert_eq!((v["PATH_INFO"].as_str(), v["REDIRECT_URL"].as_str(), v["REDIRECT_STATUS"].as_str()), ("/abc", "/app/pi/abc", "200"));
}

/// The same with warren's own php-cgi pool, which knows no mod_proxy_fcgi
/// prefix ("No input file specified." before).
fn internal_redirects_to_path_info_in_a_pool(mpm: &str) {
    let dir = TempDir::new(&format!("exact-pool-{mpm}"));
    dir.write("htdocs/app/index.php", DUMP);
    dir.write("htdocs/app/.htaccess", "RewriteEngine On\nRewriteRule ^pi/(.*)$ index.php/$1 [L]\nErrorDocument 404 /app/index.php/error/404\n");
    let conf = format!(
        "<Directory {}>\n    AllowOverride All\n    Require all granted\n</Directory>\n<Pool app>\n    Command php-cgi\n    pm static\n    pm.max_children 1\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:app\n</FilesMatch>\n",
        dir.0.join("htdocs").display()
    );
    let s = Server::start_in(dir, mpm, &conf);
    let r = s.get("/app/missing");
    assert_eq!(r.status, 404, "{}", r.text());
    let v = vars(&r);
    assert_eq!((v["SCRIPT_NAME"].as_str(), v["PATH_INFO"].as_str(), v["REDIRECT_STATUS"].as_str()), ("/app/index.php", "/error/404", "404"), "{}", r.text());
    assert!(v["SCRIPT_FILENAME"].ends_with("/htdocs/app/index.php"), "{v:?}");
    let v = vars(&s.get("/app/pi/abc"));
    assert_eq!((v["PATH_INFO"].as_str(), v["REDIRECT_STATUS"].as_str()), ("/abc", "200"), "{v:?}");
    // A direct request gets REDIRECT_STATUS all the same: php-cgi needs it.
    assert_eq!(vars(&s.get("/app/index.php/x")).get("REDIRECT_STATUS").map(String::as_str), Some("200"));
}

/// FallbackResource: after the access checks, and for a directory without an index.
fn fallback_resource_as_mod_dir(mpm: &str) {
    let (_fpm, s) = start(mpm);
    assert_eq!(s.get("/fb/some/route").text(), "front /fb/some/route");
    let r = s.get("/fb/empty/");
    assert_eq!((r.status, r.text().as_str()), (200, "front /fb/empty/"));
    // A missing name the section denies is denied, not handed to the front controller.
    assert_eq!(s.get("/fb/dump.sql").status, 403);
    assert_eq!(s.get("/fb/").text(), "front /fb/");
}

/// The DirectoryIndex script's own sections (`<FilesMatch \.php$>`) give
/// its answer's expiry and headers.
fn directory_index_gets_its_own_sections(mpm: &str) {
    let (_fpm, s) = start(mpm);
    let r = s.get("/drupal/");
    assert_eq!((r.status, r.text().as_str()), (200, "drupal"));
    assert_eq!((r.header("Cache-Control"), r.header("Expires"), r.header("X-PHP")), (None, None, Some("yes")));
    let r = s.get("/drupal/index.php");
    assert_eq!((r.header("Cache-Control"), r.header("X-PHP")), (None, Some("yes")));
}

/// POST to a static file answers the file; OPTIONS and 405 say core's
/// Allow; a fragment in the target is a 400; `OPTIONS *` has no Allow.
fn methods_and_targets(mpm: &str) {
    let (_fpm, s) = start(mpm);
    let out = s.raw(b"POST /tiny.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET /tiny.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    let all = parse_all(&out);
    assert_eq!(all.iter().map(|r| (r.status, r.text())).collect::<Vec<_>>(), vec![(200, "hi\n".to_string()), (200, "hi\n".to_string())]);
    let r = parse_response(&s.raw(b"OPTIONS /tiny.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")).0;
    assert_eq!((r.status, r.header("Allow"), r.header("Content-Type")), (200, Some("OPTIONS,HEAD,GET,POST,TRACE"), Some("text/plain")));
    let r = parse_response(&s.raw(b"OPTIONS /list/ HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")).0;
    assert_eq!((r.status, r.header("Content-Type")), (200, Some("httpd/unix-directory")));
    // A listing is for GET: POST falls to the default handler, which serves no directory.
    let r = parse_response(&s.raw(b"POST /list/ HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx")).0;
    assert_eq!(r.status, 404);
    // mod_dir's redirect to the slash comes first, whatever the method.
    let r = parse_response(&s.raw(b"OPTIONS /list HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")).0;
    assert_eq!(r.status, 301);
    let r = parse_response(&s.raw(b"PUT /tiny.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")).0;
    assert_eq!((r.status, r.header("Allow")), (405, Some("OPTIONS,HEAD,GET,POST,TRACE")));
    let r = parse_response(&s.raw(b"OPTIONS * HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")).0;
    assert_eq!((r.status, r.header("Allow")), (200, None));
    let r = parse_response(&s.raw(b"GET /tiny.txt#frag HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")).0;
    assert_eq!(r.status, 400);
    assert!(r.text().contains("could not understand.<br />\n</p>"), "{}", r.text());
    // An encoded one is a name like any other.
    assert_eq!(s.get("/tiny%23frag.txt").status, 404);
    // Refused before any section is walked (an encoded slash, a fragment):
    // the built-in page, not the ErrorDocument of app/.htaccess, which
    // would run its script.
    let r = s.get("/app/index.php%2fextra");
    assert_eq!(r.status, 404);
    assert!(r.text().contains("<h1>Not Found</h1>") && !r.text().contains("SCRIPT_NAME"), "{}", r.text());
    let r = parse_response(&s.raw(b"GET /app/x#frag HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")).0;
    assert_eq!(r.status, 400);
    assert!(!r.text().contains("SCRIPT_NAME"), "{}", r.text());
}

/// mod_deflate: a static file of 68 bytes or less, and an empty answer,
/// are sent as they are and say nothing of Accept-Encoding; a script's
/// two bytes are encoded.
fn compression_thresholds(mpm: &str) {
    let (_fpm, s) = start(mpm);
    let gz = "Accept-Encoding: gzip\r\n";
    for path in ["/tiny.txt", "/m68.txt", "/empty.php"] {
        let r = s.get_with(path, gz);
        assert_eq!((r.status, r.header("Content-Encoding"), r.header("Vary")), (200, None, None), "{path}");
    }
    for path in ["/m69.txt", "/two.php"] {
        let r = s.get_with(path, gz);
        assert_eq!((r.header("Content-Encoding"), r.header("Vary")), (Some("gzip"), Some("Accept-Encoding")), "{path}");
    }
    assert_eq!(s.get("/m69.txt").header("Vary"), Some("Accept-Encoding"));
    // A range is of the file as it is, and says it varies all the same.
    let r = s.get_with("/m69.txt", "Range: bytes=0-9\r\nAccept-Encoding: gzip\r\n");
    assert_eq!((r.status, r.header("Content-Encoding"), r.header("Vary")), (206, None, Some("Accept-Encoding")));
}

/// Error pages and listings in Apache 2.4.71's markup.
fn markup_as_apache(mpm: &str) {
    let (_fpm, s) = start(mpm);
    let r = parse_response(&s.raw(b"FOO /tiny.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")).0;
    assert_eq!(r.status, 501);
    assert_eq!(
        r.text(),
        "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01//EN\" \"http://www.w3.org/TR/html4/strict.dtd\">\n<html><head>\n<title>501 Not Implemented</title>\n</head><body>\n<h1>Not Implemented</h1>\n<p>FOO not supported for current URL.<br />\n</p>\n</body></html>\n"
    );
    // An ErrorDocument that fails too is said on the first error's page.
    let r = s.get("/gone/x");
    assert_eq!(r.status, 404);
    assert!(r.text().ends_with("<p>The requested URL was not found on this server.</p>\n<p>Additionally, a 404 Not Found\nerror was encountered while trying to use an ErrorDocument to handle the request.</p>\n</body></html>\n"), "{}", r.text());
    let r = s.get("/list/");
    assert_eq!((r.status, r.header("Content-Type")), (200, Some("text/html;charset=ISO-8859-1")));
    assert_eq!(
        r.text(),
        "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01//EN\" \"http://www.w3.org/TR/html4/strict.dtd\">\n<html>\n <head>\n  <title>Index of /list</title>\n </head>\n <body>\n<h1>Index of /list</h1>\n<ul><li><a href=\"/\"> Parent Directory</a></li>\n<li><a href=\"a.txt\"> a.txt</a></li>\n<li><a href=\"sub/\"> sub/</a></li>\n</ul>\n</body></html>\n"
    );
}

/// The CGI variables as mod_proxy_fcgi sends them to php-fpm: no
/// REDIRECT_STATUS on a request that was not redirected, Apache's
/// SERVER_ADMIN placeholder, an empty SERVER_SIGNATURE.
fn cgi_variables_as_mod_proxy_fcgi(mpm: &str) {
    let (_fpm, s) = start(mpm);
    let v = vars(&s.get("/wp/xmlrpc.php?a=1"));
    assert_eq!(v.get("REDIRECT_STATUS"), None, "{v:?}");
    assert_eq!((v["SERVER_ADMIN"].as_str(), v["SERVER_SIGNATURE"].as_str(), v["QUERY_STRING"].as_str()), ("[no address given]", "", "a=1"));
    // After an internal redirect it is there, as the environment's.
    assert_eq!(vars(&s.get("/wp/some/route")).get("REDIRECT_STATUS").map(String::as_str), Some("200"));
}

each_mpm!(
    path_info_split_before_rewrite_conditions,
    internal_redirects_to_path_info,
    internal_redirects_to_path_info_in_a_pool,
    fallback_resource_as_mod_dir,
    directory_index_gets_its_own_sections,
    methods_and_targets,
    compression_thresholds,
    markup_as_apache,
    cgi_variables_as_mod_proxy_fcgi,
);
