//! mod_php's configurations, unchanged, under each MPM with the real
//! php-fpm (Debian's php-fpm8.2) and php-cgi: Debian's own
//! mods-available/php8.x.conf (from /etc/apache2, or as test.sh takes it
//! out of libapache2-mod-php's package), `AddType application/x-httpd-php`,
//! and `php_value`, `php_flag`, `php_admin_value`, `php_admin_flag` in the
//! configuration and in `.htaccess`, read back through `ini_get()`.

mod common;

use common::*;

/// Debian's mods-available/php8.x.conf: the installed one, else the copy
/// test.sh took out of libapache2-mod-php's package (installing that
/// package would switch Debian's apache2 to prefork).
fn debian_php_conf() -> String {
    let installed = std::fs::read_dir("/etc/apache2/mods-available").into_iter().flatten().flatten().map(|e| e.path()).find(|p| {
        let name = p.file_name().unwrap_or_default().to_string_lossy().into_owned();
        name.starts_with("php8") && name.ends_with(".conf")
    });
    let path = installed.unwrap_or_else(|| "/var/cache/warren-test/mod_php/php.conf".into());
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (test.sh fetches Debian's mod_php configuration)", path.display()))
}

/// What the PHP scripts of these tests print: the SAPI and the settings
/// named in the query, `name=value` each.
const INI_PHP: &str = "<?php echo PHP_SAPI, \"\\n\"; foreach (explode(',', $_SERVER['QUERY_STRING']) as $n) { echo $n, '=', ini_get($n), \"\\n\"; }";

/// A site with Debian's php8.2.conf loaded, as `a2enmod php8.2` leaves it;
/// `{root}` in `extra` is the site's directory.
fn debian_site(mpm: &str, tag: &str, extra: &str) -> Server {
    let dir = TempDir::new(tag);
    standard_site(&dir);
    dir.write("mods/php8.2.conf", debian_php_conf());
    dir.write("htdocs/hello.php", "<?php echo 'hello from ', PHP_SAPI; // SOURCE-MARKER");
    dir.write("htdocs/hello.phtml", "<?php echo 'phtml ran'; // SOURCE-MARKER");
    dir.write("htdocs/hello.phps", "<?php echo 'shown'; // SOURCE-MARKER");
    dir.write("htdocs/.php", "<?php // SOURCE-MARKER");
    dir.write("htdocs/ini.php", INI_PHP);
    dir.write("htdocs/sub/ini.php", INI_PHP);
    dir.write("htdocs/sub/set.php", "<?php var_dump(ini_set('memory_limit', '11M')); echo ini_get('memory_limit');");
    let extra = extra.replace("{root}", &dir.0.display().to_string());
    Server::start_in(dir, mpm, &format!("LoadModule php_module /usr/lib/apache2/modules/libphp8.2.so\nInclude mods/php8.2.conf\nDirectoryIndex index.php index.html\n{extra}"))
}

fn no_source(r: &Resp) {
    assert!(!r.text().contains("SOURCE-MARKER") && !r.text().contains("<?php"), "source sent: {}", r.text());
}

/// Debian's php8.2.conf loads and serves: .php and .phtml run in php-fpm,
/// .phps and a bare `.php` are denied by its own `Require all denied`.
fn debian_conf_serves_php(mpm: &str) {
    let s = debian_site(mpm, "modphp-debian", "");
    let r = s.get("/hello.php");
    assert_eq!((r.status, r.text().as_str()), (200, "hello from fpm-fcgi"), "{}", s.read_log("error.log"));
    let r = s.get("/hello.phtml");
    assert_eq!((r.status, r.text().as_str()), (200, "phtml ran"));
    for path in ["/hello.phps", "/.php"] {
        let r = s.get(path);
        assert_eq!(r.status, 403, "{path}");
        no_source(&r);
    }
    // The start said where the host's PHP goes.
    let mapped = format!("php8.2.conf:4: mod_php lines mapped to warren's pool php-main: `{}`, php-fpm, settings per request", php_fpm_binary().display());
    assert!(s.wait_log("error.log", &mapped).contains(&mapped));
    // A .txt file is still a file.
    assert_eq!(s.get("/a.txt").text(), "0123456789abcdefghij");
}

/// Debian's php8.x.conf beside its userdir.conf (`a2enmod userdir`): the
/// server starts and serves PHP; the users' scripts are refused, as a pool
/// of each user's beside mod_php's pool of the server's user could be
/// reached by that pool's code.
fn debian_conf_with_userdir_starts(mpm: &str) {
    let s = debian_site(mpm, "modphp-userdir", "LoadModule userdir_module /usr/lib/apache2/modules/mod_userdir.so\nInclude /etc/apache2/mods-available/userdir.conf\n");
    let r = s.get("/hello.php");
    assert_eq!((r.status, r.text().as_str()), (200, "hello from fpm-fcgi"), "{}", s.read_log("error.log"));
    let refused = "UserDir: the users' scripts are refused (503): <Pool php-main> runs as the server's user";
    assert!(s.wait_log("error.log", refused).contains(refused));
}

/// `SetHandler application/x-httpd-php-source` without Debian's deny:
/// warren shows no source, highlighted or not (a 500 naming the line).
fn phps_is_never_source(mpm: &str) {
    let dir = TempDir::new("modphp-phps");
    standard_site(&dir);
    dir.write("htdocs/x.phps", "<?php echo 'x'; // SOURCE-MARKER");
    dir.write("htdocs/x.php", "<?php echo 'ran'; // SOURCE-MARKER");
    let s = Server::start_in(dir, mpm, "AddType application/x-httpd-php .php\n<FilesMatch \".+\\.phps$\">\n  SetHandler application/x-httpd-php-source\n</FilesMatch>\n");
    assert_eq!(s.get("/x.php").text(), "ran");
    let r = s.get("/x.phps");
    assert_eq!(r.status, 500);
    no_source(&r);
    s.wait_log("error.log", "SetHandler application/x-httpd-php-source makes");
}

/// php_value in the virtual host and in `.htaccess` (AllowOverride
/// Options) reach PHP; the more specific wins, and the host's own value
/// is back for the next request outside the directory.
fn php_value_in_vhost_and_htaccess(mpm: &str) {
    let extra = "<Directory {root}/htdocs/sub>\n  AllowOverride Options\n</Directory>\n<VirtualHost *>\n  ServerName localhost\n  php_value memory_limit 77M\n  php_flag html_errors off\n</VirtualHost>\n";
    let s = debian_site(mpm, "modphp-values", extra);
    s.dir.write("htdocs/sub/.htaccess", "<IfModule mod_php.c>\n  php_value memory_limit 99M\n  php_value precision 5\n</IfModule>\n");
    for _ in 0..4 {
        let r = s.get("/ini.php?memory_limit,html_errors");
        assert_eq!(r.text(), "fpm-fcgi\nmemory_limit=77M\nhtml_errors=0\n", "{}", s.read_log("error.log"));
        let r = s.get("/sub/ini.php?memory_limit,html_errors,precision");
        assert_eq!(r.text(), "fpm-fcgi\nmemory_limit=99M\nhtml_errors=0\nprecision=5\n", "{}", s.read_log("error.log"));
    }
}

/// php_admin_value wins over a later `.htaccess` php_value and is locked
/// against ini_set; php_admin_value in `.htaccess` is a 500, as in Apache.
fn admin_values_are_locked(mpm: &str) {
    let extra = "<Directory {root}/htdocs/sub>\n  AllowOverride Options\n  php_admin_value memory_limit 55M\n</Directory>\n<Directory {root}/htdocs/bad>\n  AllowOverride All\n</Directory>\n";
    let s = debian_site(mpm, "modphp-admin", extra);
    s.dir.write("htdocs/sub/.htaccess", "php_value memory_limit 99M\n");
    s.dir.write("htdocs/bad/.htaccess", "php_admin_value open_basedir /\n");
    s.dir.write("htdocs/bad/ini.php", INI_PHP);
    let r = s.get("/sub/ini.php?memory_limit");
    assert_eq!(r.text(), "fpm-fcgi\nmemory_limit=55M\n", "{}", s.read_log("error.log"));
    let r = s.get("/sub/set.php");
    assert_eq!(r.text(), "bool(false)\n55M");
    let r = s.get("/bad/ini.php?open_basedir");
    assert_eq!(r.status, 500);
    s.wait_log("error.log", "bad/.htaccess:1: php_admin_value not allowed here");
}

/// Two virtual hosts with different php_value, and one with none, each in
/// its own pool: many requests alternating between them never see
/// another's value (php-fpm keeps a value in the worker it was sent to).
fn hosts_never_see_each_others_values(mpm: &str) {
    let mut extra = String::new();
    for (name, line) in [("a.test", "php_value user_agent site-a"), ("b.test", "php_value user_agent site-b"), ("c.test", "")] {
        extra.push_str(&format!("<VirtualHost *>\n  ServerName {name}\n  DocumentRoot htdocs\n  {line}\n</VirtualHost>\n"));
    }
    let s = debian_site(mpm, "modphp-hosts", &extra);
    for round in 0..30 {
        for (host, want) in [("a.test", "site-a"), ("b.test", "site-b"), ("c.test", "")] {
            let r = s.get_from(host, "/ini.php?user_agent");
            assert_eq!(r.text(), format!("fpm-fcgi\nuser_agent={want}\n"), "round {round}, {host}; {}", s.read_log("error.log"));
        }
    }
    let log = s.read_log("error.log");
    for pool in ["php-a.test", "php-b.test", "php-c.test"] {
        assert!(log.contains(&format!("pool {pool}:")), "{pool}: {log}");
    }
    // The virtual hosts take every address: the main server, which answers
    // nothing, gets no pool (as the server's user it would sit beside the
    // hosts' own).
    assert!(!log.contains("pool php-main"), "{log}");
}

/// `php_admin_flag engine Off` (Debian's for user directories): the files
/// are answered 403, not run and not sent as source as Apache would.
fn engine_off_is_403(mpm: &str) {
    let s = debian_site(mpm, "modphp-engine", "<Directory {root}/htdocs/sub>\n  php_admin_flag engine Off\n</Directory>\n");
    let r = s.get("/sub/ini.php?engine");
    assert_eq!(r.status, 403);
    no_source(&r);
    s.wait_log("error.log", "PHP's engine is off here");
    // php-fpm has no `engine` setting (mod_php's own): warren's refusal is all.
    assert_eq!(s.get("/ini.php").text(), "fpm-fcgi\n=\n");
}

/// With a php-cgi pool (mpm-itk's AssignUserID gives the host one), the
/// host's own php_value is on the pool's command line; a section's is said
/// at start not to be applied, an `.htaccess` file's when it is read.
fn php_cgi_pool_takes_host_values(mpm: &str) {
    let extra = "<VirtualHost *>\n  ServerName localhost\n  AssignUserID nobody nogroup\n  php_value memory_limit 66M\n  <Directory {root}/htdocs/sub>\n    php_value memory_limit 88M\n  </Directory>\n  <Directory {root}/htdocs/other>\n    AllowOverride Options\n  </Directory>\n</VirtualHost>\n";
    let s = debian_site(mpm, "modphp-cgi", extra);
    s.dir.write("htdocs/other/.htaccess", "php_value memory_limit 44M\n");
    s.dir.write("htdocs/other/ini.php", INI_PHP);
    assert_eq!(s.get("/other/ini.php?memory_limit").text(), "cgi-fcgi\nmemory_limit=66M\n");
    s.wait_log("error.log", "other/.htaccess:1: memory_limit is not applied: the pool fcgid-localhost runs php-cgi");
    let r = s.get("/ini.php?memory_limit");
    assert_eq!(r.text(), "cgi-fcgi\nmemory_limit=66M\n", "{}", s.read_log("error.log"));
    assert_eq!(s.get("/sub/ini.php?memory_limit").text(), "cgi-fcgi\nmemory_limit=66M\n");
    s.wait_log("error.log", "memory_limit is not applied: the pool fcgid-localhost runs php-cgi");
}

each_mpm!(debian_conf_serves_php, debian_conf_with_userdir_starts, phps_is_never_source, php_value_in_vhost_and_htaccess, admin_values_are_locked, hosts_never_see_each_others_values, engine_off_is_403, php_cgi_pool_takes_host_values);
