//! Access around FastCGI applications, as an anonymous client would probe
//! it, under each MPM: `<Location>` rules hold on the whole URL of a script
//! with path info, a pool's status page exists only on the hosts that use
//! the pool, and an application's interim status cannot shift the answers
//! on a keep-alive connection.

mod common;

use common::*;

fn app_site(dir: &TempDir) {
    standard_site(dir);
    dir.write("htdocs/app.php", "<?php echo 'app ', $_SERVER['PATH_INFO'] ?? '-';");
    dir.write("htdocs/uploads/shell.php", "<?php echo 'app shell';");
}

const POOL: &str = "<Pool www>\n    Command /usr/bin/php-cgi\n    User nobody\n    Group nogroup\n    pm static\n    pm.max_children 2\n</Pool>\n";

const RULES: &str = "<Location /app.php/admin>\n    Require all denied\n</Location>\n<LocationMatch \"^/app\\.php/secret\">\n    Require ip 10.0.0.0/8\n</LocationMatch>\n<LocationMatch \"^/uploads/.*\\.php$\">\n    Require all denied\n</LocationMatch>\n";

fn path_info_is_under_location(s: &Server) {
    // The last two: a rule on the script's own URL (uploads hardening)
    // holds when path info follows it.
    for url in ["/app.php/admin", "/app.php/admin/users", "/app.php/admin/users?id=1", "/app.php/secret/x", "/uploads/shell.php", "/uploads/shell.php/x"] {
        let r = s.get(url);
        assert_eq!(r.status, 403, "{url}: {}", r.text());
        assert!(!r.text().starts_with("app "), "{url} ran the script: {}", r.text());
    }
    assert_eq!(s.get("/app.php/other").text(), "app /other");
    assert_eq!(s.get("/app.php/administrator").text(), "app /administrator", "a Location matches whole segments");
    assert_eq!(s.get("/app.php").text(), "app -");
    let log = s.wait_log("error.log", "client denied by server configuration");
    assert!(log.contains("127.0.0.1"), "{log}");
}

fn fpm_location_holds_with_path_info(mpm: &str) {
    let dir = TempDir::new(&format!("loc-fpm-{mpm}"));
    app_site(&dir);
    let fpm = Fpm::start(&dir, "");
    let conf = format!("{}{RULES}", fpm.php_files());
    let s = Server::start_in(dir, mpm, &conf);
    path_info_is_under_location(&s);
}

fn pool_location_holds_with_path_info(mpm: &str) {
    let dir = TempDir::new(&format!("loc-pool-{mpm}"));
    app_site(&dir);
    let conf = format!("{POOL}<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n{RULES}");
    let s = Server::start_in(dir, mpm, &conf);
    path_info_is_under_location(&s);
}

/// Two sites, each with its pool and a status page: neither host shows
/// the other's pool (whose `?full` page lists request URIs and queries).
fn pool_status_only_on_its_hosts(mpm: &str) {
    let dir = TempDir::new(&format!("pool-status-hosts-{mpm}"));
    standard_site(&dir);
    dir.write("a/a.php", "<?php echo 'a';");
    dir.write("b/b.php", "<?php echo 'b';");
    let root = dir.0.display();
    let pool = |name: &str, status: &str| {
        format!("    <Pool {name}>\n        Command /usr/bin/php-cgi\n        User nobody\n        Group nogroup\n        pm static\n        pm.max_children 1\n        pm.status_path {status}\n    </Pool>\n")
    };
    let conf = format!(
        "<VirtualHost *>\n    ServerName a.test\n    DocumentRoot {root}/a\n{}    <FilesMatch \"\\.php$\">\n        SetHandler pool:pa\n    </FilesMatch>\n</VirtualHost>\n<VirtualHost *>\n    ServerName b.test\n    DocumentRoot {root}/b\n{}{}    <FilesMatch \"\\.php$\">\n        SetHandler pool:pb\n    </FilesMatch>\n</VirtualHost>\n",
        pool("pa", "/status"),
        pool("pb", "/b-status"),
        "    <Location /status>\n        Require all denied\n    </Location>\n",
    );
    let s = Server::start_in(dir, mpm, &conf);
    let get = |host: &str, path: &str| s.get_from(host, path);
    assert_eq!(get("b.test", "/b.php?token=b-secret").text(), "b");
    assert_eq!(get("a.test", "/a.php").text(), "a");
    let r = get("b.test", "/b-status?full");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("pool:                 pb") && r.text().contains("b-secret"), "{}", r.text());
    let r = get("a.test", "/b-status?full");
    assert_eq!(r.status, 404, "pool pb's status page on host a: {}", r.text());
    assert!(!r.text().contains("b-secret"));
    assert_eq!(get("a.test", "/status").text().lines().next(), Some("pool:                 pa"));
    // Pool pa's page on host b: b's own <Location /status> denies it, and
    // b does not use pa anyway.
    let r = get("b.test", "/status?full");
    assert_ne!(r.status, 200, "{}", r.text());
    assert!(!r.text().contains("pool:"));
}

/// Debian's layout: each site's `<Directory>` hands its PHP to its own pool
/// in the main server's config, which every virtual host inherits. A host
/// shows only the status page of the pool its own files go to.
fn pool_status_with_sections_in_the_main_config(mpm: &str) {
    let dir = TempDir::new(&format!("pool-status-dirs-{mpm}"));
    standard_site(&dir);
    dir.write("a/a.php", "<?php echo 'a';");
    dir.write("b/b.php", "<?php echo 'b';");
    let root = dir.0.display();
    let mut conf = String::new();
    for site in ["a", "b"] {
        conf.push_str(&format!(
            "<Pool p{site}>\n    Command /usr/bin/php-cgi\n    User nobody\n    Group nogroup\n    pm static\n    pm.max_children 1\n    pm.status_path /fpm-status-{site}\n</Pool>\n<Directory {root}/{site}>\n    <FilesMatch \"\\.php$\">\n        SetHandler pool:p{site}\n    </FilesMatch>\n</Directory>\n"
        ));
    }
    for site in ["a", "b"] {
        conf.push_str(&format!("<VirtualHost *>\n    ServerName {site}.test\n    DocumentRoot {root}/{site}\n</VirtualHost>\n"));
    }
    let s = Server::start_in(dir, mpm, &conf);
    let get = |host: &str, path: &str| s.get_from(host, path);
    assert_eq!(get("a.test", "/a.php?token=a-secret").text(), "a");
    assert_eq!(get("b.test", "/b.php").text(), "b");
    let r = get("a.test", "/fpm-status-a?full");
    assert!(r.text().contains("a-secret"), "{}", r.text());
    let r = get("b.test", "/fpm-status-a?full");
    assert_eq!(r.status, 404, "pool pa's status page on host b: {}", r.text());
    assert!(!r.text().contains("a-secret"));
    assert_eq!(get("b.test", "/fpm-status-b").status, 200);
}

/// `Status: 101` (or 100) from an application is not a final answer: 502,
/// and the next request on the connection gets its own answer.
fn interim_status_is_a_bad_gateway(mpm: &str) {
    let dir = TempDir::new(&format!("interim-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/switch.php", "<?php header('Status: 101 Switching Protocols'); header('Upgrade: websocket'); echo 'after the switch';");
    dir.write("htdocs/continue.php", "<?php header('Status: 100 Continue'); echo 'more';");
    let fpm = Fpm::start(&dir, "");
    let conf = fpm.php_files();
    let s = Server::start_in(dir, mpm, &conf);
    for script in ["switch.php", "continue.php"] {
        let req = format!("GET /{script} HTTP/1.1\r\nHost: localhost\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        let out = s.raw(req.as_bytes());
        let all = parse_all(&out);
        assert_eq!(all.len(), 2, "{}", String::from_utf8_lossy(&out));
        assert_eq!(all[0].status, 502, "{script}: {}", all[0].text());
        assert_eq!((all[1].status, all[1].text().as_str()), (200, "0123456789abcdefghij"), "{script}");
    }
    let log = s.wait_log("error.log", "bad Status");
    assert!(log.contains("not a final status"), "{log}");
}

each_mpm!(
    fpm_location_holds_with_path_info,
    pool_location_holds_with_path_info,
    pool_status_only_on_its_hosts,
    pool_status_with_sections_in_the_main_config,
    interim_status_is_a_bad_gateway,
);
