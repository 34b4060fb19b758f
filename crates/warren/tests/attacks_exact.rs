//! Attacks on Apache's exact answers (issue 35, item 9), under each MPM
//! with php-fpm. The attacker is an anonymous client, and a tenant who can
//! upload files (an image that holds PHP, odd file names) and write
//! `.htaccess` rules and ErrorDocuments: PATH_INFO is now split before the
//! rewrite conditions and for a handler matched on the whole path, and an
//! internal redirect to a script with PATH_INFO names it to php-fpm as
//! mod_proxy_fcgi does. None of it may run a file that is not a script, run
//! a denied script, or let a front controller answer for a denied name.

mod common;

use common::*;

/// What the uploaded "image" holds: PHP that would say so if it ran.
const SHELL: &str = "<?php echo 'SHELL RAN';";

fn start(mpm: &str) -> (Fpm, Server) {
    let dir = TempDir::new(&format!("attacks-exact-{mpm}"));
    dir.write("htdocs/index.php", "<?php echo 'index ', $_SERVER['PATH_INFO'] ?? '-';");
    dir.write("htdocs/uploads/shell.jpg", SHELL);
    dir.write("htdocs/uploads/.htaccess", "RewriteEngine On\nRewriteCond %{REQUEST_FILENAME} !-f\nRewriteRule ^(.*)$ /index.php/$1 [L]\n");
    dir.write("htdocs/admin.php", "<?php echo 'ADMIN RAN';");
    dir.write("htdocs/.htaccess", "<Files admin.php>\nRequire all denied\n</Files>\n");
    dir.write("htdocs/fb/index.php", "<?php echo 'front';");
    dir.write("htdocs/fb/.htaccess", "FallbackResource /fb/index.php\n<FilesMatch \"\\.(sql|bak|env)$\">\nRequire all denied\n</FilesMatch>\n");
    // A name PHP would cut at its `?` were it prefixed with proxy:fcgi://.
    dir.write("htdocs/odd/shell", SHELL);
    dir.write("htdocs/odd/shell?.php", "<?php echo 'odd ', $_SERVER['PATH_INFO'] ?? '-';");
    dir.write("htdocs/odd/.htaccess", "ErrorDocument 404 /odd/shell%3F.php/err\n");
    let fpm = Fpm::start(&dir, "");
    let conf = format!(
        "DirectoryIndex index.php\n<Directory {root}>\n    AllowOverride All\n    Require all granted\n</Directory>\n\
         <FilesMatch \"\\.php$\">\n    SetHandler \"proxy:unix:{socket}|fcgi://localhost\"\n</FilesMatch>\n",
        root = dir.0.join("htdocs").display(),
        socket = fpm.socket.display()
    );
    let s = Server::start_in(dir, mpm, &conf);
    (fpm, s)
}

fn never_ran(r: &Resp, what: &str) {
    assert!(!r.text().contains("SHELL RAN") && !r.text().contains("ADMIN RAN"), "{what}: {} {}", r.status, r.text());
}

/// An uploaded image followed by a script's name, in every spelling, is
/// never run as PHP: the handler matched on the whole path finds no script
/// in front of the path info (the image is not one).
fn image_with_php_path_info_never_runs(mpm: &str) {
    let (_fpm, s) = start(mpm);
    for path in ["/uploads/shell.jpg/x.php", "/uploads/shell.jpg/.php", "/uploads/shell.jpg%2fx.php", "/uploads/shell.jpg/x.php/", "/uploads//shell.jpg/x.php", "/uploads/shell.jpg/%2e%2e/x.php", "/uploads/shell.jpg%00/x.php", "/uploads/shell.jpg\\x.php"] {
        never_ran(&s.get(path), path);
    }
    // The image itself is served as it is.
    assert_eq!(s.get("/uploads/shell.jpg").text(), SHELL);
    // The rewrite's -f sees the image as a file and leaves it: no front controller for it.
    let r = s.get("/uploads/shell.jpg/more");
    never_ran(&r, "shell.jpg/more");
    assert!(!r.text().starts_with("index"), "{}", r.text());
}

/// A denied script with path info behind it stays denied, whatever the path info's name.
fn denied_script_with_path_info(mpm: &str) {
    let (_fpm, s) = start(mpm);
    for path in ["/admin.php", "/admin.php/x", "/admin.php/x.php", "/admin.php/index.php", "/ADMIN.php/x.php", "/admin.php%2fx.php", "/admin.php/x.php#frag"] {
        let r = s.get(path);
        never_ran(&r, path);
        assert!(matches!(r.status, 400 | 403 | 404), "{path}: {}", r.status);
    }
}

/// A front controller does not answer for a name its directory denies.
fn fallback_does_not_step_around_a_deny(mpm: &str) {
    let (_fpm, s) = start(mpm);
    for path in ["/fb/dump.sql", "/fb/.env", "/fb/site.bak", "/fb/sub/dump.sql", "/fb/dump%2esql"] {
        assert_eq!(s.get(path).status, 403, "{path}");
    }
    assert_eq!(s.get("/fb/route").text(), "front");
}

/// A script whose name holds `?`, reached by an internal redirect with
/// path info, runs as itself: never the file before the `?`.
fn question_mark_in_a_script_name(mpm: &str) {
    let (_fpm, s) = start(mpm);
    let r = s.get("/odd/missing");
    never_ran(&r, "ErrorDocument to shell?.php/err");
    assert_eq!((r.status, r.text().as_str()), (404, "odd /err"));
}

each_mpm!(image_with_php_path_info_never_runs, denied_script_with_path_info, fallback_does_not_step_around_a_deny, question_mark_in_a_script_name);
