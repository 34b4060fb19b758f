//! HTTP Basic authentication under each MPM, as a site sets it up in its
//! `.htaccess` (WordPress's wp-admin behind AuthType Basic, AuthUserFile,
//! Require valid-user): right, wrong and missing credentials, each of
//! htpasswd's hash formats, Require user and group, the password file
//! changed while serving, REMOTE_USER and AUTH_TYPE reaching PHP, and
//! `%u` in the access log; mod_access_compat's Order, Allow, Deny and
//! Satisfy, alone and with Require (the client is 127.0.0.1).

mod common;

use common::*;

/// Made with `htpasswd -nbB -C 5`, `-nbm`, `-nbs`, `-nbd` and `-nb5`.
const USERS: &str = "alice:$2y$05$RAKu8.4cJEw/Ee3lnO.Nie.XOmsal8zdrtiv5BV26Be2neYEXoukq\n\
bob:$apr1$NRe3PzwD$x82mS47UksBgGkxvMLCcH/\n\
carol:{SHA}X9zPCbMFzMPlYX7+7QubnxKI7iM=\n\
dave:/IEleqz/hmZ.M\n\
erin:$6$AfBasrFmqmv7k/gp$XXDLo7BFb.smWtLj01x9tBz0RG4mvNOxJCOXrEK8GseapGDDlm6C6XxNC5JMdtkdURXysLwfwhJx7snTG2Zfo0\n";

fn start(mpm: &str) -> Server {
    let dir = TempDir::new(&format!("auth-{mpm}"));
    standard_site(&dir);
    let d = dir.0.display().to_string();
    dir.write("private/htpasswd", USERS);
    dir.write("private/groups", "editors: bob carol\n");
    dir.write("htdocs/wp-admin/index.html", "admin page");
    dir.write("htdocs/wp-admin/who.php", "<?php echo ($_SERVER['REMOTE_USER'] ?? 'none'), ' ', ($_SERVER['AUTH_TYPE'] ?? 'none');");
    dir.write("htdocs/who.php", "<?php echo ($_SERVER['REMOTE_USER'] ?? 'none'), ' ', ($_SERVER['AUTH_TYPE'] ?? 'none');");
    dir.write("htdocs/wp-admin/.htaccess", format!("AuthType Basic\nAuthName \"Admin area\"\nAuthUserFile {d}/private/htpasswd\nRequire valid-user\n"));
    dir.write("htdocs/only-bob/.htaccess", format!("AuthType Basic\nAuthName bob\nAuthUserFile {d}/private/htpasswd\nRequire user bob\n"));
    dir.write("htdocs/only-bob/f.txt", "bob's");
    dir.write("htdocs/editors/.htaccess", format!("AuthType Basic\nAuthName ed\nAuthUserFile {d}/private/htpasswd\nAuthGroupFile {d}/private/groups\nRequire group editors\n"));
    dir.write("htdocs/editors/f.txt", "editors'");
    dir.write("htdocs/broken/.htaccess", "AuthType Basic\nRequire valid-user\n");
    dir.write("htdocs/broken/f.txt", "never");
    dir.write("htdocs/local-or-user/.htaccess", format!("AuthType Basic\nAuthName x\nAuthUserFile {d}/private/htpasswd\nRequire ip 127.0.0.1\nRequire valid-user\n"));
    dir.write("htdocs/local-or-user/f.txt", "local");
    dir.write("htdocs/noauth/.htaccess", format!("AuthUserFile {d}/private/htpasswd\n"));
    dir.write("htdocs/noauth/f.txt", "no auth");
    let auth = format!("AuthType Basic\nAuthName s\nAuthUserFile {d}/private/htpasswd\nRequire valid-user\n");
    for (name, lines) in [
        ("deny-all", "Order deny,allow\nDeny from all\n".to_string()),
        ("deny-all-allow-me", "Order deny,allow\nDeny from all\nAllow from 10.0.0.0/8 127.0.0.1\n".to_string()),
        ("allow-all-deny-me", "Order allow,deny\nAllow from all\nDeny from 127.0\n".to_string()),
        ("allow-deny-nothing", "Order Allow,Deny\n".to_string()),
        ("mutual", "Order mutual-failure\nAllow from 127.0.0.0/255.0.0.0\nDeny from 10.1\n".to_string()),
        ("host-name", "Order deny,allow\nDeny from evil.example\n".to_string()),
        ("any-not-me", format!("Order deny,allow\nDeny from all\nAllow from 10.0.0.0/8\n{auth}Satisfy Any\n")),
        ("any-me", format!("Order deny,allow\nDeny from all\nAllow from 127.0.0.1\n{auth}Satisfy Any\n")),
        ("all-not-me", format!("Order deny,allow\nDeny from all\nAllow from 10.0.0.0/8\n{auth}Satisfy All\n")),
        ("all-me", format!("Order deny,allow\nDeny from all\nAllow from 127.0.0.1\n{auth}Satisfy All\n")),
        ("all-of", format!("AuthType Basic\nAuthName s\nAuthUserFile {d}/private/htpasswd\n<RequireAll>\n  Require ip 127.0.0.1\n  Require valid-user\n</RequireAll>\n")),
        ("none-of-me", "<RequireAll>\n  Require all granted\n  <RequireNone>\n    Require ip 127.0.0.1\n  </RequireNone>\n</RequireAll>\n".to_string()),
        ("none-of-others", "<RequireAll>\n  Require all granted\n  <RequireNone>\n    Require ip 10.0.0.0/8\n  </RequireNone>\n</RequireAll>\n".to_string()),
        ("none-alone", "<RequireNone>\n  Require ip 10.0.0.0/8\n</RequireNone>\n".to_string()),
        ("bad-block", "<RequireAny>\n  AuthName inside\n</RequireAny>\n".to_string()),
        ("any-without-user", "Order deny,allow\nDeny from all\nRequire all granted\nSatisfy Any\n".to_string()),
    ] {
        dir.write(&format!("htdocs/{name}/.htaccess"), lines);
        dir.write(&format!("htdocs/{name}/f.txt"), name);
    }
    let conf = format!(
        "<Directory {d}/htdocs>\n    AllowOverride AuthConfig Limit\n</Directory>\n\
         <Directory {d}/htdocs/noauth>\n    AllowOverride None\n</Directory>\n\
         <Pool www>\n    Command php-cgi\n    pm static\n    pm.max_children 1\n</Pool>\n<FilesMatch \\.php$>\n    SetHandler pool:www\n</FilesMatch>\n"
    );
    Server::start_in(dir, mpm, &conf)
}

/// An `Authorization: Basic` line (base64 written out: the tests' crate has no base64).
fn basic(user: &str, password: &str) -> String {
    let mut enc = Vec::new();
    let raw = format!("{user}:{password}");
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in raw.as_bytes().chunks(3) {
        let v = chunk.iter().enumerate().fold(0u32, |v, (i, &b)| v | (b as u32) << (16 - 8 * i));
        for k in 0..4 {
            enc.push(if k <= chunk.len() { T[(v >> (18 - 6 * k)) as usize & 63] } else { b'=' });
        }
    }
    format!("Authorization: Basic {}\r\n", String::from_utf8(enc).unwrap())
}

fn wp_admin_asks_for_and_checks_credentials(mpm: &str) {
    let s = start(mpm);
    let r = s.get("/wp-admin/");
    assert_eq!(r.status, 401);
    assert_eq!(r.header("WWW-Authenticate"), Some("Basic realm=\"Admin area\""));
    assert_eq!(s.get_with("/wp-admin/", &basic("alice", "wrong")).status, 401);
    assert_eq!(s.get_with("/wp-admin/", &basic("nobody", "wonderland")).status, 401);
    assert_eq!(s.get_with("/wp-admin/", "Authorization: Basic !!notbase64\r\n").status, 401);
    assert_eq!(s.get_with("/wp-admin/", "Authorization: Digest username=\"alice\"\r\n").status, 401);
    let r = s.get_with("/wp-admin/", &basic("alice", "wonderland"));
    assert_eq!((r.status, r.text()), (200, "admin page".to_string()));
    // Elsewhere, nothing asked.
    assert_eq!(s.get("/a.txt").status, 200);
    let log = s.wait_log("access.log", "\"GET /wp-admin/ HTTP/1.1\" 200");
    assert!(log.lines().any(|l| l.contains(" alice [") && l.contains("\" 200 ")), "{log}");
    let errors = s.wait_log("error.log", "user \"alice\": authentication failure");
    assert!(errors.lines().any(|l| l.contains("user \"alice\": authentication failure") && l.contains("127.0.0.1")), "{errors}");
}

fn each_htpasswd_format(mpm: &str) {
    let s = start(mpm);
    for (user, password) in [("alice", "wonderland"), ("bob", "builder"), ("carol", "singer"), ("dave", "diver"), ("erin", "e5pass")] {
        assert_eq!(s.get_with("/wp-admin/index.html", &basic(user, password)).status, 200, "{user}");
        assert_eq!(s.get_with("/wp-admin/index.html", &basic(user, &password.to_uppercase())).status, 401, "{user}");
        // A second time, from what was remembered.
        assert_eq!(s.get_with("/wp-admin/index.html", &basic(user, password)).status, 200, "{user}");
    }
}

fn require_user_and_group(mpm: &str) {
    let s = start(mpm);
    assert_eq!(s.get_with("/only-bob/f.txt", &basic("bob", "builder")).status, 200);
    assert_eq!(s.get_with("/only-bob/f.txt", &basic("alice", "wonderland")).status, 401);
    assert_eq!(s.get_with("/editors/f.txt", &basic("carol", "singer")).status, 200);
    assert_eq!(s.get_with("/editors/f.txt", &basic("alice", "wonderland")).status, 401);
    // Require ip or valid-user: the address alone is enough.
    assert_eq!(s.get("/local-or-user/f.txt").status, 200);
    // A Require of users without a password file is the site's mistake: 500, never open.
    assert_eq!(s.get_with("/broken/f.txt", &basic("alice", "wonderland")).status, 500);
    let log = s.wait_log("error.log", "AuthType Basic without an AuthUserFile");
    assert!(log.contains("AuthType Basic without an AuthUserFile"), "{log}");
}

fn the_password_file_is_read_again_when_it_changes(mpm: &str) {
    let s = start(mpm);
    assert_eq!(s.get_with("/wp-admin/index.html", &basic("bob", "builder")).status, 200);
    s.dir.write("private/htpasswd", "bob:{SHA}X9zPCbMFzMPlYX7+7QubnxKI7iM=\nfrank:broken line without hash\n:x\n");
    // A bad line: 500 naming file and line.
    assert_eq!(s.get_with("/wp-admin/index.html", &basic("bob", "builder")).status, 500);
    let log = s.wait_log("error.log", "private/htpasswd:3: not a `user:hash` line");
    assert!(log.contains("private/htpasswd:3: not a `user:hash` line"), "{log}");
    s.dir.write("private/htpasswd", "bob:{SHA}X9zPCbMFzMPlYX7+7QubnxKI7iM=\n");
    // bob's password is now carol's: the old one no longer opens.
    assert_eq!(s.get_with("/wp-admin/index.html", &basic("bob", "builder")).status, 401);
    assert_eq!(s.get_with("/wp-admin/index.html", &basic("bob", "singer")).status, 200);
}

fn remote_user_reaches_php(mpm: &str) {
    let s = start(mpm);
    assert_eq!(s.get("/wp-admin/who.php").status, 401);
    let r = s.get_with("/wp-admin/who.php", &basic("carol", "singer"));
    assert_eq!((r.status, r.text()), (200, "carol Basic".to_string()));
    // A header the client sends elsewhere makes no user of it.
    let r = s.get_with("/who.php", &basic("carol", "singer"));
    assert_eq!((r.status, r.text()), (200, "none none".to_string()));
}

fn auth_directives_need_allow_override_auth_config(mpm: &str) {
    let s = start(mpm);
    // AllowOverride None: the file is not read, the directory is open.
    assert_eq!(s.get("/noauth/f.txt").text(), "no auth");
}

fn order_allow_deny_and_satisfy(mpm: &str) {
    let s = start(mpm);
    let status = |path: &str| s.get(path).status;
    assert_eq!(status("/deny-all/f.txt"), 403);
    assert_eq!(status("/deny-all-allow-me/f.txt"), 200);
    assert_eq!(status("/allow-all-deny-me/f.txt"), 403);
    assert_eq!(status("/allow-deny-nothing/f.txt"), 403);
    assert_eq!(status("/mutual/f.txt"), 200);
    // A host name would be looked up in DNS: the file is refused, not half read.
    assert_eq!(status("/host-name/f.txt"), 500);
    let log = s.wait_log("error.log", "host names are not looked up");
    assert!(log.contains("host names are not looked up"), "{log}");
    // Satisfy Any: the address or the password.
    assert_eq!(status("/any-not-me/f.txt"), 401);
    assert_eq!(s.get_with("/any-not-me/f.txt", &basic("bob", "builder")).status, 200);
    assert_eq!(status("/any-me/f.txt"), 200);
    // Satisfy All: the address and the password.
    assert_eq!(status("/all-me/f.txt"), 401);
    assert_eq!(s.get_with("/all-me/f.txt", &basic("bob", "builder")).status, 200);
    assert_eq!(s.get_with("/all-not-me/f.txt", &basic("bob", "builder")).status, 403);
    // Satisfy Any without a user to ask for: the address check stands.
    assert_eq!(status("/any-without-user/f.txt"), 403);
}

fn require_blocks(mpm: &str) {
    let s = start(mpm);
    let status = |path: &str| s.get(path).status;
    assert_eq!(status("/all-of/f.txt"), 401);
    assert_eq!(s.get_with("/all-of/f.txt", &basic("bob", "builder")).status, 200);
    assert_eq!(status("/none-of-me/f.txt"), 403);
    assert_eq!(status("/none-of-others/f.txt"), 200);
    // A <RequireNone> never grants by itself.
    assert_eq!(status("/none-alone/f.txt"), 403);
    assert_eq!(status("/bad-block/f.txt"), 500);
    let log = s.wait_log("error.log", "bad-block/.htaccess:2: AuthName is not allowed in <RequireAny>");
    assert!(log.contains("bad-block/.htaccess:2: AuthName is not allowed in <RequireAny>"), "{log}");
}

each_mpm!(
    require_blocks,
    order_allow_deny_and_satisfy,
    wp_admin_asks_for_and_checks_credentials,
    each_htpasswd_format,
    require_user_and_group,
    the_password_file_is_read_again_when_it_changes,
    remote_user_reaches_php,
    auth_directives_need_allow_override_auth_config
);
