//! Attacks on users' pools made while warren runs (UserDir, an account
//! newer than the pools), under each MPM. The attacker is an anonymous
//! client trying to make warren create pools, or run scripts, as accounts
//! of its choosing: root, made-up names in every spelling (percent-encoded,
//! dots, NUL, upper case, too long), and a system account made after start
//! that has a directory of its own; and a tenant whose `.htaccess` names
//! the server's PHP pool for their scripts. Run as root (the suite is), as
//! it is about users.

mod common;

use common::*;

const PHP_POOL: &str = "<Pool www>\n  Command /usr/bin/php-cgi\n  User www-data\n  Group www-data\n  pm ondemand\n  pm.max_children 2\n</Pool>\n<FilesMatch \"\\.php$\">\n  SetHandler pool:www\n</FilesMatch>\n";

/// The uids of the running php-cgi children.
fn php_uids(s: &Server) -> Vec<String> {
    s.php_cgi_children()
        .into_iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?.lines().find(|l| l.starts_with("Uid:"))?.split_whitespace().nth(1).map(str::to_string))
        .collect()
}

fn no_pool_for_chosen_names(mpm: &str) {
    let (tenant, system) = (format!("warren-atk-{mpm}"), format!("warren-sys-{mpm}"));
    remove_user(&tenant);
    remove_user(&system);
    let dir = user_dir_site(&format!("attack-userpools-{mpm}"));
    let conf = format!("{PHP_POOL}Include userdir.conf\n<Directory {USER_HOMES}/*/public_html>\n  AllowOverride FileInfo\n</Directory>\n");
    let s = Server::start_in(dir, mpm, &conf);

    // A tenant made after start names the server's pool in its .htaccess:
    // its scripts still run as itself.
    let uid = late_user(&tenant);
    own_home(&tenant, uid);
    user_file(&tenant, "who.php", "<?php echo 'uid=', posix_getuid();");
    user_file(&tenant, ".htaccess", "SetHandler pool:www\n");
    let r = s.get(&format!("/~{tenant}/who.php"));
    assert_eq!((r.status, r.text()), (200, format!("uid={uid}")));

    // A system account made after start, with a directory and a script of
    // its own: not a user's site unless `UserDir enabled` names it.
    let _ = std::process::Command::new("useradd").args(["--system", "--user-group", "--no-create-home", "--home-dir", &format!("{USER_HOMES}/{system}"), "--shell", "/usr/sbin/nologin", &system]).status();
    let system_uid = nix::unistd::User::from_name(&system).unwrap().expect("useradd --system").uid.as_raw();
    assert!(system_uid < 1000);
    std::fs::create_dir_all(format!("{USER_HOMES}/{system}/public_html")).unwrap();
    own_home(&system, system_uid);
    user_file(&system, "who.php", "<?php echo 'uid=', posix_getuid();");
    let r = s.get(&format!("/~{system}/who.php"));
    assert_eq!(r.status, 503, "{}", r.text());

    // Names of the client's choosing: never asked for.
    let upper = tenant.to_uppercase();
    let long = "a".repeat(40);
    for path in ["/~root/x.php", "/~%2e%2e/x.php", "/~..%2fetc/x.php", "/~nobody%00/x.php", &format!("/~{upper}/who.php"), &format!("/~{long}/x.php"), "/~daemon/x.php", "/~www-data/x.php", "/~%72oot/x.php", "/~root%2f..%2froot/x.php"] {
        let status = s.get(path).status;
        assert!(matches!(status, 400 | 403 | 404), "{path}: {status}");
    }
    let log = s.read_log("error.log");
    assert_eq!(log.matches("made for the scripts of").count(), 1, "only the tenant's pool: {log}");
    assert_eq!(log.matches(&format!("no pool for the scripts of ~{system}: a system account")).count(), 1, "{log}");
    let uids = php_uids(&s);
    assert!(!uids.contains(&"0".to_string()) && !uids.contains(&system_uid.to_string()), "{uids:?}");
    remove_user(&system);
}

each_mpm!(no_pool_for_chosen_names);
