//! The site the response cache's tests share (cache.rs, attacks_cache.rs):
//! one PHP script answering with the caching headers its PATH_INFO names,
//! counting its runs, behind warren with the whole host cached on disk.

#![allow(dead_code)]

use crate::common::*;

/// `/c.php/CASE` answers with the caching headers of CASE, and appends a
/// byte to `count-CASE` beside htdocs for each run.
pub const CASES_PHP: &str = r#"<?php
$case = trim($_SERVER['PATH_INFO'] ?? '/none', '/');
file_put_contents(__DIR__ . "/../count-$case", 'x', FILE_APPEND | LOCK_EX);
$etag = '"v1"';
switch ($case) {
case 'maxage': case 'private-place': header('Cache-Control: max-age=60'); break;
case 'etag': header('Cache-Control: max-age=60'); header("ETag: $etag"); echo str_repeat('compressible ', 100); break;
case 'smaxage': header('Cache-Control: max-age=0, s-maxage=60'); break;
case 'expires': header('Expires: ' . gmdate('D, d M Y H:i:s', time() + 60) . ' GMT'); break;
case 'lastmod': header('Last-Modified: ' . gmdate('D, d M Y H:i:s', time() - 36000) . ' GMT'); break;
case 'nostore': header('Cache-Control: no-store, max-age=60'); break;
case 'private': header('Cache-Control: private, max-age=60'); break;
case 'cookie': header('Cache-Control: max-age=60'); setcookie('session', 'abc'); break;
case 'malformed': header('Cache-Control: max-age=ten'); break;
case 'error': header('Cache-Control: max-age=60'); http_response_code(500); break;
case 'vary': header('Cache-Control: max-age=60'); header('Vary: Accept-Language'); break;
case 'varystar': header('Cache-Control: max-age=60'); header('Vary: Accept-Language'); header('Vary: *', false); break;
case 'short':
    header('Cache-Control: max-age=1');
    header("ETag: $etag");
    file_put_contents(__DIR__ . "/../inm-$case", ($_SERVER['HTTP_IF_NONE_MATCH'] ?? '-') . "\n", FILE_APPEND | LOCK_EX);
    if (($_SERVER['HTTP_IF_NONE_MATCH'] ?? '') === $etag) { http_response_code(304); exit; }
    break;
case 'slow': header('Cache-Control: max-age=60'); usleep(700000); break;
case 'big': header('Cache-Control: max-age=60'); echo str_repeat('b', 5000); break;
case 'flushed': header('Cache-Control: max-age=60'); for ($i = 0; $i < 45; $i++) { echo str_repeat('f', 1000); if ($i % 10 == 0) flush(); } break;
case 'echo': header('Cache-Control: max-age=60'); echo 'xfh=', $_SERVER['HTTP_X_FORWARDED_HOST'] ?? '-', ' '; break;
}
echo "case=$case lang=", $_SERVER['HTTP_ACCEPT_LANGUAGE'] ?? '-', " host=", $_SERVER['SERVER_NAME'], " uri=", $_SERVER['REQUEST_URI'], " t=", hrtime(true);
"#;

/// php-fpm, warren handing `*.php` to it, the whole host cached on disk.
pub fn start(mpm: &str, extra: &str) -> (Fpm, Server) {
    start_with(mpm, extra, &[])
}

/// [`start`], with more files (path relative to the server's directory, content).
pub fn start_with(mpm: &str, extra: &str, files: &[(&str, &str)]) -> (Fpm, Server) {
    let dir = TempDir::new(&format!("cache-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/c.php", CASES_PHP);
    for (path, content) in files {
        dir.write(path, content);
    }
    let fpm = Fpm::start(&dir, "");
    // CacheRoot is the server user's to write, as Debian's package makes
    // /var/cache/apache2/mod_cache_disk www-data's.
    let root = dir.0.join("cache");
    std::fs::create_dir(&root).unwrap();
    let _ = std::os::unix::fs::chown(&root, Some(nobody()), None);
    let conf = format!(
        "<FilesMatch \"\\.php$\">\n    SetHandler \"proxy:unix:{}|fcgi://localhost\"\n</FilesMatch>\nCacheRoot {}\nCacheEnable disk /\nCacheHeader On\nExpiresActive On\nExpiresByType text/plain \"access plus 1 hour\"\n{extra}",
        fpm.socket.display(),
        root.display()
    );
    let server = Server::start_in(dir, mpm, &conf);
    (fpm, server)
}

/// How many times php-fpm ran `case`.
pub fn runs(s: &Server, case: &str) -> usize {
    std::fs::read(s.dir.0.join(format!("count-{case}"))).map_or(0, |b| b.len())
}

pub fn cache_status(r: &Resp) -> String {
    r.header("cache-status").unwrap_or("(none)").to_string()
}

/// `carol:singer` (a `{SHA}` line of htpasswd's) for the members' area.
pub const MEMBERS_PASSWD: &str = "carol:{SHA}X9zPCbMFzMPlYX7+7QubnxKI7iM=\n";
pub const CAROL: &str = "Authorization: Basic Y2Fyb2w6c2luZ2Vy\r\n";
pub const CAROL_WRONG: &str = "Authorization: Basic Y2Fyb2w6d3Jvbmc=\r\n";

/// The cases' script in `members/` (Basic credentials, from an `.htaccess`
/// file) and in `local/` (`Require ip 127.0.0.1` in a `<Location>`),
/// counting its runs (and the validators it was asked with) in the same
/// files as `/c.php`.
pub fn start_protected(mpm: &str, extra: &str) -> (Fpm, Server) {
    let nested = CASES_PHP.replace("__DIR__ . \"/../", "__DIR__ . \"/../../");
    let files = [("htdocs/members/c.php", nested.as_str()), ("htdocs/local/c.php", nested.as_str()), ("private/htpasswd", MEMBERS_PASSWD)];
    let (fpm, s) = start_with(mpm, &format!("{extra}<Directory />\n    AllowOverride AuthConfig\n</Directory>\n<Location /local/>\n    Require ip 127.0.0.1\n</Location>\n"), &files);
    s.dir.write("htdocs/members/.htaccess", format!("AuthType Basic\nAuthName members\nAuthUserFile {}/private/htpasswd\nRequire valid-user\n", s.dir.0.display()));
    (fpm, s)
}
