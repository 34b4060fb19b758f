//! PHP front controllers as their frameworks ship them, under each MPM:
//! Laravel's `public/.htaccess` and Symfony's (symfony/apache-pack) send
//! every URL that is not a file to `index.php`, which sees the client's
//! REQUEST_URI; their redirects (trailing slash, `/index.php/...`) and
//! environment (Authorization kept for PHP) work as under Apache.

mod common;

use common::*;

/// What the front controller sees.
const INDEX_PHP: &str = "<?php\nforeach (['REQUEST_URI', 'SCRIPT_NAME', 'PATH_INFO', 'HTTP_AUTHORIZATION', 'REDIRECT_STATUS'] as $k) {\n    echo $k, '=', $_SERVER[$k] ?? '-', \"\\n\";\n}\n";

/// Laravel 10/11's public/.htaccess, as the framework ships it.
const LARAVEL: &str = r#"<IfModule mod_rewrite.c>
    <IfModule mod_negotiation.c>
        Options -MultiViews -Indexes
    </IfModule>

    RewriteEngine On

    # Handle Authorization Header
    RewriteCond %{HTTP:Authorization} .
    RewriteRule .* - [E=HTTP_AUTHORIZATION:%{HTTP:Authorization}]

    # Redirect Trailing Slashes If Not A Folder...
    RewriteCond %{REQUEST_FILENAME} !-d
    RewriteCond %{REQUEST_URI} (.+)/$
    RewriteRule ^ %1 [L,R=301]

    # Send Requests To Front Controller...
    RewriteCond %{REQUEST_FILENAME} !-d
    RewriteCond %{REQUEST_FILENAME} !-f
    RewriteRule ^ index.php [L]
</IfModule>
"#;

/// Symfony's public/.htaccess (symfony/apache-pack), its rules as shipped.
const SYMFONY: &str = r#"DirectoryIndex index.php

<IfModule mod_negotiation.c>
    Options -MultiViews
</IfModule>

<IfModule mod_rewrite.c>
    RewriteEngine On

    # The base of the URL, whatever the directory the app is in.
    RewriteCond %{REQUEST_URI}::$0 ^(/.+)/(.*)::\2$
    RewriteRule .* - [E=BASE:%1]

    RewriteCond %{HTTP:Authorization} .+
    RewriteRule ^ - [E=HTTP_AUTHORIZATION:%0]

    # /index.php/foo is redirected to /foo, but not the internal rewrite.
    RewriteCond %{ENV:REDIRECT_STATUS} =""
    RewriteRule ^index\.php(?:/(.*)|$) %{ENV:BASE}/$1 [R=301,L]

    RewriteCond %{REQUEST_FILENAME} -f
    RewriteRule ^ - [L]

    RewriteRule ^ %{ENV:BASE}/index.php [L]
</IfModule>

<IfModule !mod_rewrite.c>
    <IfModule mod_alias.c>
        RedirectMatch 307 ^/$ /index.php/
    </IfModule>
</IfModule>
"#;

/// The site as Debian's Apache has it: its dir.conf lists index.php among
/// the DirectoryIndex files, which Laravel's `/` relies on.
fn start(mpm: &str, tag: &str, htaccess: &str) -> Server {
    let dir = TempDir::new(&format!("{tag}-{mpm}"));
    dir.write("app/public/index.php", INDEX_PHP);
    dir.write("app/public/.htaccess", htaccess);
    dir.write("app/public/css/app.css", "body{}");
    dir.write("app/public/docs/index.html", "docs");
    let d = dir.0.display();
    let conf = format!(
        "DocumentRoot {d}/app/public\nDirectoryIndex index.html index.php\n<Directory {d}/app/public>\n    AllowOverride All\n    Require all granted\n</Directory>\n\
         <Pool app>\n    Command php-cgi\n    pm static\n    pm.max_children 1\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:app\n</FilesMatch>\n"
    );
    Server::start_in(dir, mpm, &conf)
}

fn seen(r: &Resp) -> std::collections::HashMap<String, String> {
    assert_eq!(r.status, 200, "{}", r.text());
    key_values(&r.text())
}

fn laravel_front_controller(mpm: &str) {
    let s = start(mpm, "laravel", LARAVEL);
    let v = seen(&s.get("/users/42?tab=posts"));
    assert_eq!((v["REQUEST_URI"].as_str(), v["SCRIPT_NAME"].as_str()), ("/users/42?tab=posts", "/index.php"));
    // The Authorization header reaches PHP (Apache's CGI variables leave it out).
    let r = s.get_with("/api/me", "Authorization: Bearer t0ken\r\n");
    // The rules read Authorization: the answer says it varies on it, as Apache's does.
    assert_eq!(r.header("Vary"), Some("Authorization"));
    let v = seen(&r);
    assert_eq!(v["HTTP_AUTHORIZATION"], "Bearer t0ken");
    // Trailing slashes are redirected away, unless it is a directory.
    let r = s.get("/users/42/");
    assert_eq!(r.status, 301);
    assert!(r.header("Location").is_some_and(|l| l.ends_with("/users/42")), "{:?}", r.header("Location"));
    assert_eq!(s.get("/docs/").text(), "docs");
    // Files are files.
    assert_eq!(s.get("/css/app.css").text(), "body{}");
    assert_eq!(seen(&s.get("/")).get("REQUEST_URI").map(String::as_str), Some("/"));
}

fn symfony_front_controller(mpm: &str) {
    let s = start(mpm, "symfony", SYMFONY);
    let v = seen(&s.get("/blog/hello?page=2"));
    assert_eq!((v["REQUEST_URI"].as_str(), v["SCRIPT_NAME"].as_str()), ("/blog/hello?page=2", "/index.php"));
    // The internal redirect sets REDIRECT_STATUS, so the rewrite to
    // index.php is not itself redirected (else: a loop of 301s).
    assert_eq!(v["REDIRECT_STATUS"], "200");
    let v = seen(&s.get_with("/api", "Authorization: Basic dTpw\r\n"));
    assert_eq!(v["HTTP_AUTHORIZATION"], "Basic dTpw");
    // /index.php/foo from a client is redirected to /foo.
    let r = s.get("/index.php/blog/hello");
    assert_eq!(r.status, 301);
    assert!(r.header("Location").is_some_and(|l| l.ends_with("/blog/hello")), "{:?}", r.header("Location"));
    assert_eq!(s.get("/css/app.css").text(), "body{}");
    assert_eq!(seen(&s.get("/")).get("SCRIPT_NAME").map(String::as_str), Some("/index.php"));
}

/// certbot's HTTP vhost: every URL redirected to https, the redirect
/// carrying the host's `Header always` lines as Apache's does.
fn certbot_redirect_keeps_security_headers(mpm: &str) {
    let conf = "<VirtualHost *>\nServerName example.com\nRewriteEngine on\nRewriteCond %{SERVER_NAME} =example.com\n\
                RewriteRule ^ https://%{SERVER_NAME}%{REQUEST_URI} [END,NE,R=permanent]\n\
                Header always set Strict-Transport-Security \"max-age=63072000\"\n</VirtualHost>\n";
    let s = Server::start(mpm, conf);
    let r = s.get_from("Example.COM", "/page?x=1");
    assert_eq!(r.status, 301);
    assert_eq!(r.header("Location"), Some("https://example.com/page?x=1"));
    assert_eq!(r.header("Strict-Transport-Security"), Some("max-age=63072000"));
}

/// What Laravel's rules set ([E=]) is seen by a Header line of the same
/// file, and the PHP answer carries both that header and the rules' Vary.
fn rewrite_environment_reaches_headers(mpm: &str) {
    let htaccess = format!("{LARAVEL}Header set X-Had-Auth yes env=HTTP_AUTHORIZATION\n");
    let s = start(mpm, "laravel-hdr", &htaccess);
    let r = s.get_with("/api/me", "Authorization: Bearer t0ken\r\n");
    assert_eq!(seen(&r)["HTTP_AUTHORIZATION"], "Bearer t0ken");
    assert_eq!((r.header("X-Had-Auth"), r.header("Vary")), (Some("yes"), Some("Authorization")));
    let r = s.get("/api/me");
    assert_eq!((r.status, r.header("X-Had-Auth"), r.header("Vary")), (200, None, None));
}

each_mpm!(laravel_front_controller, symfony_front_controller, certbot_redirect_keeps_security_headers, rewrite_environment_reaches_headers);
