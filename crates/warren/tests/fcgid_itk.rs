//! The seeds' per-user set-ups, unchanged, under each MPM with Debian's
//! php-cgi: mod_fcgid's `AddHandler fcgid-script .php` and `FcgidWrapper`
//! inside `<IfModule mod_fcgid.c>`, mpm-itk's `AssignUserID` and suexec's
//! `SuexecUserGroup` run the host's PHP in a pool of warren's, as that user,
//! with mod_fcgid's limits as the pool's pm settings. Run as root (the
//! suite is), as it is about users.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::*;

const USER: &str = "warren-fcgid";

/// The test user (made once, if missing), and its uid.
fn test_user() -> u32 {
    let find = || std::fs::read_to_string("/etc/passwd").unwrap().lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f[0] == USER).then(|| f[2].parse::<u32>().unwrap())
    });
    if let Some(uid) = find() {
        return uid;
    }
    // Two tests may race to make it: the loser's useradd fails, the user is there.
    let _ = Command::new("useradd").args(["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", USER]).status();
    find().expect("useradd made the test user")
}

/// A site whose PHP says who runs it; readable by any user.
fn site(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    standard_site(&dir);
    dir.write("htdocs/who.php", "<?php echo 'uid=', posix_getuid(), ' pid=', getmypid(); // SOURCE-MARKER");
    dir.write("htdocs/post.php", "<?php echo strlen(file_get_contents('php://input'));");
    dir.write("htdocs/env.php", "<?php echo getenv('SITE_NAME');");
    for p in [dir.0.clone(), dir.0.join("htdocs")] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

fn docroot(dir: &TempDir) -> String {
    dir.0.join("htdocs").display().to_string()
}

/// The seed's mod_fcgid lines in a <Directory>, inside their <IfModule>:
/// PHP runs (never its source), in a pool as the server's user.
fn seed_fcgid_serves_php(mpm: &str) {
    let dir = site(&format!("fcgid-seed-{mpm}"));
    let conf = format!(
        "<Directory {}>\n  Options +ExecCGI\n  <IfModule mod_fcgid.c>\n    AddHandler fcgid-script .php\n    FcgidWrapper /usr/bin/php-cgi .php\n  </IfModule>\n</Directory>\nFcgidMinProcessesPerClass 0\n",
        docroot(&dir)
    );
    let s = Server::start_in(dir, mpm, &conf);
    let r = s.get("/who.php");
    assert_eq!(r.status, 200, "{}", r.text());
    let nobody = std::fs::read_to_string("/etc/passwd").unwrap().lines().find(|l| l.starts_with("nobody:")).unwrap().split(':').nth(2).unwrap().to_string();
    assert!(r.text().starts_with(&format!("uid={nobody} ")) && !r.text().contains("SOURCE-MARKER"), "{}", r.text());
    // Other files are served as they are.
    assert_eq!(s.get("/a.txt").text(), "0123456789abcdefghij");
    let log = s.read_log("error.log");
    assert!(log.contains("mapped to warren's pool fcgid-main: `/usr/bin/php-cgi`") && log.contains("pm ondemand, pm.max_children 100"), "{log}");
    assert!(!log.contains("answered 500"), "{log}");
}

/// mpm-itk's AssignUserID in a virtual host, inside its <IfModule>: the
/// host's PHP runs as that user, with mod_fcgid's limits; another host
/// without it is unchanged.
fn assign_user_id_runs_php_as_the_user(mpm: &str) {
    let uid = test_user();
    let dir = site(&format!("itk-{mpm}"));
    let root = docroot(&dir);
    let conf = format!(
        "<VirtualHost 127.0.0.1>\n  ServerName itk.test\n  DocumentRoot {root}\n  <IfModule mpm_itk_module>\n    AssignUserID {USER} {USER}\n    MaxClientsVHost 4\n  </IfModule>\n  Options +ExecCGI\n  AddHandler fcgid-script .php\n  FcgidMinProcessesPerClass 2\n  FcgidMaxRequestsPerProcess 3\n  FcgidMaxRequestLen 100\n  FcgidInitialEnv SITE_NAME itk\n</VirtualHost>\n"
    );
    let s = Server::start_in(dir, mpm, &conf);
    // pm dynamic keeping FcgidMinProcessesPerClass children.
    let first = s.wait_php_children(2);
    let r = s.get_from("itk.test", "/who.php");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().starts_with(&format!("uid={uid} ")), "{}", r.text());
    for pid in &first {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let real = status.lines().find(|l| l.starts_with("Uid:")).and_then(|l| l.split_whitespace().nth(1)).unwrap_or("");
        assert!(real.is_empty() || real == uid.to_string(), "child {pid} runs as {real}");
    }
    assert_eq!(s.get_from("itk.test", "/env.php").text(), "itk");
    // FcgidMaxRequestsPerProcess 3: 2 children serve 12 requests in at least 4 processes.
    let pids: std::collections::HashSet<String> = (0..12).map(|_| s.get_from("itk.test", "/who.php").text()).map(|t| t.split("pid=").nth(1).unwrap_or("").to_string()).collect();
    assert!(pids.len() >= 4, "{pids:?}");
    // FcgidMaxRequestLen 100: a longer body is refused before PHP sees it.
    let post = |n: usize| {
        let req = format!("POST /post.php HTTP/1.1\r\nHost: itk.test\r\nContent-Length: {n}\r\nConnection: close\r\n\r\n{}", "x".repeat(n));
        parse_response(&s.raw(req.as_bytes())).0
    };
    assert_eq!(post(50).text(), "50");
    assert_eq!(post(200).status, 413);
    let log = s.read_log("error.log");
    assert!(
        log.contains(&format!("mapped to warren's pool fcgid-itk.test: `php-cgi` as {USER}:{USER}"))
            && log.contains("pm dynamic, 2 kept, pm.max_children 4, pm.max_requests 3, idle timeout 300s, request_terminate_timeout 300s, request bodies up to 100 bytes, 1 environment variable(s)"),
        "{log}"
    );
}

/// suexec's SuexecUserGroup is the same mapping.
fn suexec_user_group_runs_php_as_the_user(mpm: &str) {
    let uid = test_user();
    let dir = site(&format!("suexec-{mpm}"));
    let conf = format!("<IfModule mod_suexec.c>\n  SuexecUserGroup {USER} {USER}\n</IfModule>\nOptions +ExecCGI\nAddHandler fcgid-script .php\nFcgidMinProcessesPerClass 0\n");
    let s = Server::start_in(dir, mpm, &conf);
    let r = s.get("/who.php");
    assert!(r.status == 200 && r.text().starts_with(&format!("uid={uid} ")), "{} {}", r.status, r.text());
}

/// The hosting panels' set-up: a starter script per site (`exec`s php-cgi
/// with the site's php.ini) as FcgidWrapper with a suffix, in the site's
/// <Directory>, and SuexecUserGroup: the script is the pool's command.
fn starter_script_wrapper(mpm: &str) {
    let uid = test_user();
    let dir = site(&format!("starter-{mpm}"));
    let ini = dir.write("php.ini", "auto_prepend_file=\n").display().to_string();
    let starter = dir.write("php-fcgi-starter", format!("#!/bin/sh\nPHPRC={}\nexport PHPRC\nexec /usr/bin/php-cgi \"$@\"\n", dir.0.display()));
    std::fs::set_permissions(&starter, std::fs::Permissions::from_mode(0o755)).unwrap();
    let conf = format!(
        "SuexecUserGroup {USER} {USER}\n<Directory {}>\n  Options +ExecCGI\n  FcgidWrapper {} .php\n</Directory>\nFcgidMinProcessesPerClass 0\n",
        docroot(&dir),
        starter.display()
    );
    dir.write("htdocs/ini.php", "<?php echo php_ini_loaded_file() ?: 'none';");
    let s = Server::start_in(dir, mpm, &conf);
    let r = s.get("/who.php");
    assert!(r.status == 200 && r.text().starts_with(&format!("uid={uid} ")), "{} {}", r.status, r.text());
    assert_eq!(s.get("/ini.php").text(), ini, "the starter's PHPRC");
}

each_mpm!(seed_fcgid_serves_php, assign_user_id_runs_php_as_the_user, suexec_user_group_runs_php_as_the_user, starter_script_wrapper);
