//! Attacks on mod_php's settings, under each MPM with the real php-fpm.
//! The attacker is a site owner who can write `.htaccess` files
//! (AllowOverride All) and PHP in their own DocumentRoot, on a server whose
//! configuration locks settings with php_admin_value and hosts another
//! site: they try to undo the locks (php_value of the locked name, of
//! PHP_INI_SYSTEM settings, `extension`), to smuggle a second setting
//! into a value (quotes, `;`), php_admin_* in `.htaccess` (plain, in
//! `<Files>`, in `<IfModule>`), to reach the other site's PHP, and to have
//! a php-fpm pool shared with another site carry their settings. Then an
//! anonymous client sending `PHP_VALUE` as a header.

mod common;

use common::*;

/// Prints the settings named in the query, and whether /etc/passwd is
/// readable (open_basedir).
const PROBE: &str = "<?php foreach (explode(',', $_SERVER['QUERY_STRING']) as $n) { echo $n, '=', ini_get($n), \"\\n\"; } echo @file_get_contents('/etc/passwd') === false ? 'passwd:no' : 'passwd:READ';";

/// Two hosts, each with mod_php's AddType; the first locks open_basedir
/// and lets `.htaccess` do everything in its DocumentRoot.
fn server(mpm: &str) -> Server {
    let dir = TempDir::new("attacks-modphp");
    standard_site(&dir);
    for site in ["a", "b"] {
        dir.write(&format!("{site}/probe.php"), PROBE);
        dir.write(&format!("{site}/sub/probe.php"), PROBE);
        dir.write(&format!("{site}/ini.php"), &PROBE[..PROBE.find(" echo @").unwrap()]);
    }
    let d = dir.0.display().to_string();
    let conf = format!(
        "AddType application/x-httpd-php .php\n\
         <VirtualHost *>\n  ServerName a.test\n  DocumentRoot {d}/a\n  php_admin_value open_basedir {d}/a:/tmp\n  <Directory {d}/a>\n    AllowOverride All\n  </Directory>\n</VirtualHost>\n\
         <VirtualHost *>\n  ServerName b.test\n  DocumentRoot {d}/b\n</VirtualHost>\n"
    );
    Server::start_in(dir, mpm, &conf)
}

fn probe(s: &Server, host: &str, path: &str) -> Resp {
    let r = s.get_from(host, path);
    assert!(!r.text().contains("passwd:READ") && !r.text().contains("root:x:0:0"), "{host}{path}: {}", r.text());
    r
}

/// php_value of a locked name, of PHP_INI_SYSTEM settings and of
/// `extension`: none applied; each said in the error log when read.
fn htaccess_cannot_undo_locks(mpm: &str) {
    let s = server(mpm);
    let root = s.dir.0.display().to_string();
    s.dir.write("a/sub/.htaccess", "php_value open_basedir /\nphp_flag allow_url_include on\nphp_value extension /tmp/evil.so\nphp_value disable_functions none\n");
    let r = probe(&s, "a.test", "/sub/probe.php?open_basedir,allow_url_include,disable_functions");
    assert_eq!(r.text(), format!("open_basedir={root}/a:/tmp\nallow_url_include=\ndisable_functions=\npasswd:no"), "{}", s.read_log("error.log"));
    let log = s.wait_log("error.log", "extension is not applied");
    for name in ["allow_url_include", "disable_functions", "open_basedir"] {
        assert!(log.contains(&format!("{name} is not applied: only the server's configuration may set it")), "{name}: {log}");
    }
    // ini_set from the tenant's PHP cannot widen it either.
    s.dir.write("a/widen.php", "<?php var_dump(ini_set('open_basedir', '/')); echo @file_get_contents('/etc/passwd') === false ? 'passwd:no' : 'passwd:READ';");
    assert_eq!(probe(&s, "a.test", "/widen.php").text(), "bool(false)\npasswd:no");
}

/// A value cannot carry a second setting: a `;` stays in the value (it is
/// quoted for PHP), a double quote is refused with the line.
fn values_carry_one_setting(mpm: &str) {
    let s = server(mpm);
    s.dir.write("a/sub/.htaccess", "php_value user_agent x;auto_prepend_file=/etc/passwd\n");
    let r = probe(&s, "a.test", "/sub/probe.php?user_agent,auto_prepend_file");
    assert_eq!(r.text(), "user_agent=x;auto_prepend_file=/etc/passwd\nauto_prepend_file=\npasswd:no");
    s.dir.write("a/sub/.htaccess", "php_value user_agent x\"\\nauto_prepend_file=/etc/passwd\n");
    assert_eq!(probe(&s, "a.test", "/sub/probe.php?auto_prepend_file").status, 500);
    s.wait_log("error.log", "may not hold a double quote");
}

/// php_admin_* in `.htaccess`, however wrapped, is a 500 naming the line;
/// in a `<IfModule !mod_php.c>` it is skipped, as Apache would.
fn htaccess_admin_lines_are_500(mpm: &str) {
    let s = server(mpm);
    for (text, line) in [
        ("php_admin_value open_basedir /\n", 1),
        ("<Files probe.php>\n  php_admin_flag engine on\n</Files>\n", 2),
        ("<IfModule mod_php.c>\n  php_admin_value open_basedir /\n</IfModule>\n", 2),
    ] {
        s.dir.write("a/sub/.htaccess", text);
        let r = probe(&s, "a.test", "/sub/probe.php?open_basedir");
        assert_eq!(r.status, 500, "{text}");
        s.wait_log("error.log", &format!("sub/.htaccess:{line}: php_admin_"));
    }
    s.dir.write("a/sub/.htaccess", "<IfModule !mod_php.c>\n  php_admin_value open_basedir /\n</IfModule>\n");
    assert_eq!(probe(&s, "a.test", "/sub/probe.php?user_agent").status, 200);
}

/// The tenant's `.htaccess` values never reach the other host's PHP, over
/// many requests alternating between the two.
fn other_host_never_sees_them(mpm: &str) {
    let s = server(mpm);
    s.dir.write("a/.htaccess", "php_value user_agent from-a\nphp_value precision 3\n");
    for round in 0..25 {
        assert_eq!(s.get_from("a.test", "/ini.php?user_agent,precision").text(), "user_agent=from-a\nprecision=3\n", "round {round}");
        assert_eq!(s.get_from("b.test", "/ini.php?user_agent,precision").text(), "user_agent=\nprecision=14\n", "round {round}");
    }
}

/// Sites sharing one php-fpm `<Pool>` (no mod_php lines): a tenant's
/// `.htaccess` php_value is not sent there (it would stay in the shared
/// worker for the other site's requests), and the error log says so.
fn shared_pool_gets_no_values(mpm: &str) {
    let dir = TempDir::new("attacks-modphp-shared");
    standard_site(&dir);
    let ini = &PROBE[..PROBE.find(" echo @").unwrap()];
    dir.write("a/ini.php", ini);
    dir.write("b/ini.php", ini);
    dir.write("a/.htaccess", "php_value user_agent from-a\n");
    let d = dir.0.display().to_string();
    let conf = format!(
        "<Pool shared>\n  Command php-fpm\n  pm static\n  pm.max_children 1\n</Pool>\n<FilesMatch \\.php$>\n  SetHandler pool:shared\n</FilesMatch>\n\
         <VirtualHost *>\n  ServerName a.test\n  DocumentRoot {d}/a\n  <Directory {d}/a>\n    AllowOverride All\n  </Directory>\n</VirtualHost>\n\
         <VirtualHost *>\n  ServerName b.test\n  DocumentRoot {d}/b\n</VirtualHost>\n"
    );
    let s = Server::start_in(dir, mpm, &conf);
    for round in 0..10 {
        assert_eq!(s.get_from("a.test", "/ini.php?user_agent").text(), "user_agent=\n", "round {round}");
        assert_eq!(s.get_from("b.test", "/ini.php?user_agent").text(), "user_agent=\n", "round {round}");
    }
    s.wait_log("error.log", "a/.htaccess:1: user_agent is not applied: this request goes to a FastCGI application that is not the host's own PHP pool");
}

/// An anonymous client's `PHP_VALUE` header is HTTP_PHP_VALUE, nothing more.
fn client_header_is_not_a_setting(mpm: &str) {
    let s = server(mpm);
    for header in ["PHP_VALUE: auto_prepend_file=/etc/passwd\r\n", "PHP-VALUE: auto_prepend_file=/etc/passwd\r\n", "Php_Admin_Value: open_basedir=/\r\n"] {
        let r = s.get_with("/probe.php?auto_prepend_file", header);
        assert!(!r.text().contains("root:x:0:0"), "{header}: {}", r.text());
    }
}

each_mpm!(shared_pool_gets_no_values, htaccess_cannot_undo_locks, values_carry_one_setting, htaccess_admin_lines_are_500, other_host_never_sees_them, client_header_is_not_a_setting);
