//! Attacks on mass and per-user hosting, under each MPM. The attacker is
//! an anonymous client choosing its Host (VirtualDocumentRoot makes it part
//! of a path) and its `/~user/` URL, and a hosted user with a `.htaccess`
//! (AllowOverride FileInfo, as Debian's userdir.conf gives) who wants
//! their PHP to run as the server's PHP user rather than their own. A
//! secret file beside the mass tree, /etc/passwd and root's home must
//! never be served, and a user's script must never run as another user.

mod common;

use common::*;

const SECRET: &str = "TOPSECRET-beside-the-tree";

/// The users named are the only ones served (`UserDir enabled`): the
/// tests of other MPMs make and remove accounts meanwhile.
fn attack_server(mpm: &str) -> (Server, u32) {
    let alice = regular_user("warren-alice");
    user_file("warren-alice", &format!("evil-{mpm}/.htaccess"), "SetHandler pool:www\n");
    user_file("warren-alice", &format!("evil-{mpm}/who.php"), "<?php echo 'uid=', posix_getuid();");
    user_file("warren-alice", &format!("evil-{mpm}/who.txt"), "<?php echo 'uid=', posix_getuid();");
    let dir = TempDir::new(&format!("attack-mass-{mpm}"));
    standard_site(&dir);
    dir.write("secret.txt", SECRET);
    dir.write("mass/a.test/index.html", "site A");
    let conf = format!(
        "<Pool www>\n  Command /usr/bin/php-cgi\n  User www-data\n  Group www-data\n  pm ondemand\n</Pool>\n<FilesMatch \"\\.php$\">\n  SetHandler pool:www\n</FilesMatch>\nVirtualDocumentRoot {d}/mass/%0\n<Directory {d}>\n  Require all granted\n</Directory>\nUserDir public_html\nUserDir disabled\nUserDir enabled warren-alice warren-late-{mpm}\n<Directory {USER_HOMES}/*/public_html>\n  AllowOverride FileInfo\n  Require all granted\n</Directory>\n",
        d = dir.0.display()
    );
    (Server::start_in(dir, mpm, &conf), alice)
}

/// Host values that try to leave the pattern's tree: 400, never the secret.
fn hosts_cannot_climb(mpm: &str) {
    let (s, _) = attack_server(mpm);
    for host in ["..", "../", "a.test/..", "a.test/../..", "..%2f", "%2e%2e", "a.test\\..\\..", ".", "..a", "a..test", "[::1]", "a test", "a.test%00", ".a.test", "-/..", "a.test/../../secret.txt"] {
        let raw = s.raw(format!("GET /secret.txt HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes());
        let (r, _) = parse_response(&raw);
        assert!(!r.text().contains(SECRET), "Host {host:?}: {}", r.text());
        assert!(r.status == 400, "Host {host:?}: {} {}", r.status, r.text());
    }
    // The absolute form's authority names the host too.
    for target in ["http://../secret.txt", "http://..%2f/secret.txt", "http://a.test/../secret.txt"] {
        let raw = s.raw(format!("GET {target} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n").as_bytes());
        let (r, _) = parse_response(&raw);
        assert!(!r.text().contains(SECRET) && r.status != 200, "{target}: {} {}", r.status, r.text());
    }
    // The good name still serves, and a bad one is logged naming the client.
    assert_eq!(s.get_from("a.test", "/").text(), "site A");
    let log = s.read_log("error.log");
    assert!(log.contains("[client 127.0.0.1") && log.contains("cannot name a VirtualDocumentRoot directory"), "{log}");
}

/// `/~user/` URLs that try to climb out of a user's directory, name root
/// or a non-user: never /etc/passwd, root's files nor the secret.
fn user_urls_cannot_climb(mpm: &str) {
    let (s, _) = attack_server(mpm);
    for url in [
        "/~../secret.txt",
        "/~%2e%2e/secret.txt",
        "/~warren-alice/../../../etc/passwd",
        "/~warren-alice/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/~warren-alice/..%2f..%2f..%2fetc/passwd",
        "/~warren-alice/%252e%252e/%252e%252e/etc/passwd",
        "/~warren-alice%2f..%2f..%2f..%2fetc/passwd",
        "/~root/.bashrc",
        "/~root/",
        "/~./etc/passwd",
        "/~/etc/passwd",
        "/~warren-alice\\..\\..\\..\\etc\\passwd",
        "/~warren-alice/%00/etc/passwd",
    ] {
        let r = s.get(url);
        let text = r.text();
        assert!(!text.contains("root:x:0:0") && !text.contains(SECRET) && r.status != 200, "{url}: {} {text}", r.status);
    }
}

/// A user's `.htaccess` naming the server's pool (`SetHandler pool:www`):
/// the script still runs as the user; a `.txt` handed to a pool by it runs
/// as the user too, never as www-data.
fn users_htaccess_cannot_borrow_a_pool(mpm: &str) {
    let (s, alice) = attack_server(mpm);
    for file in ["who.php", "who.txt"] {
        let r = s.get(&format!("/~warren-alice/evil-{mpm}/{file}"));
        assert_eq!((r.status, r.text()), (200, format!("uid={alice}")), "{file}");
    }
}

each_mpm!(hosts_cannot_climb, user_urls_cannot_climb, users_htaccess_cannot_borrow_a_pool);
