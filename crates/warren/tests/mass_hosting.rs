//! Mass and per-user hosting under each MPM: mod_vhost_alias's
//! VirtualDocumentRoot serves a directory per Host (one made while the
//! server runs serves on the next request, DOCUMENT_ROOT is its
//! directory), and mod_userdir's `/~user/` serves a user's directory with
//! the user's PHP in a pool as that user (not as the server's user), with
//! Debian's userdir.conf unchanged; disabled users and root get 404; the
//! redirect form answers 302. Run as root (the suite is), as it is about
//! users.

mod common;

use common::*;

const PHP_POOL: &str = "<Pool www>\n  Command /usr/bin/php-cgi\n  User www-data\n  Group www-data\n  pm ondemand\n  pm.max_children 2\n</Pool>\n<FilesMatch \"\\.php$\">\n  SetHandler pool:www\n</FilesMatch>\n";

fn get_as(s: &Server, host: &str, path: &str) -> (u16, String) {
    let port = s.port.to_string();
    let (code, out) = curl(&["-o", "-", "-w", "\n%{http_code}", "--resolve", &format!("{host}:{port}:127.0.0.1"), &format!("http://{host}:{port}{path}")]);
    assert_eq!(code, 0, "curl failed");
    let text = String::from_utf8_lossy(&out).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap();
    (status.parse().unwrap(), body.to_string())
}

/// VirtualDocumentRoot DIR/%0: a.test and b.test from their directories,
/// Host case and port ignored; a directory made while running serves at
/// once; DOCUMENT_ROOT is the host's directory; an unknown host is 404.
fn virtual_document_root_by_host(mpm: &str) {
    let dir = TempDir::new(&format!("mass-vdr-{mpm}"));
    standard_site(&dir);
    let mass = dir.0.join("mass");
    dir.write("mass/a.test/index.html", "site A");
    dir.write("mass/b.test/index.html", "site B");
    dir.write("mass/b.test/root.php", "<?php echo $_SERVER['DOCUMENT_ROOT'], '|', $_SERVER['SCRIPT_FILENAME'];");
    let conf = format!("{PHP_POOL}VirtualDocumentRoot {}/%0\n<Directory {}>\n  Require all granted\n</Directory>\n", mass.display(), mass.display());
    let s = Server::start_in(dir, mpm, &conf);
    assert_eq!(get_as(&s, "a.test", "/"), (200, "site A".to_string()));
    assert_eq!(get_as(&s, "b.test", "/index.html"), (200, "site B".to_string()));
    assert_eq!(s.get_from("A.Test.", "/index.html").text(), "site A");
    let (status, body) = get_as(&s, "b.test", "/root.php");
    assert_eq!((status, body), (200, format!("{m}/b.test|{m}/b.test/root.php", m = mass.display())));
    // No directory for it yet: 404; made while running: served.
    assert_eq!(get_as(&s, "c.test", "/").0, 404);
    std::fs::create_dir_all(mass.join("c.test")).unwrap();
    std::fs::write(mass.join("c.test/index.html"), "site C").unwrap();
    assert_eq!(get_as(&s, "c.test", "/"), (200, "site C".to_string()));
}

/// VirtualDocumentRoot with parts of the name (`%-2/%1`), and the IP form.
fn virtual_document_root_parts_and_ip(mpm: &str) {
    let dir = TempDir::new(&format!("mass-parts-{mpm}"));
    standard_site(&dir);
    let base = dir.0.join("parts");
    dir.write("parts/example/www/index.html", "www of example");
    dir.write("byip/127.0.0.1/index.html", "by address");
    let conf = format!(
        "VirtualDocumentRoot {b}/%-2/%1\n<Directory {d}>\n  Require all granted\n</Directory>\n<VirtualHost 127.0.0.1>\n  ServerName ip.test\n  VirtualDocumentRootIP {d}/byip/%0\n</VirtualHost>\n<VirtualHost 127.0.0.1>\n  ServerName www.example.org\n  ServerAlias *.example.org\n  VirtualDocumentRoot {b}/%-2/%1\n</VirtualHost>\n",
        b = base.display(),
        d = dir.0.display()
    );
    let s = Server::start_in(dir, mpm, &conf);
    assert_eq!(get_as(&s, "www.example.org", "/"), (200, "www of example".to_string()));
    assert_eq!(get_as(&s, "ip.test", "/"), (200, "by address".to_string()));
}

/// `/~user/` with Debian's userdir.conf (its `/home/*` as this test's
/// homes): alice's files, alice's PHP as alice in a pool of her own (the
/// server's own PHP stays nobody's), a disabled user and root 404, and a
/// file added while running is served.
fn user_dirs_with_their_own_php(mpm: &str) {
    let alice = regular_user("warren-alice");
    regular_user("warren-bob");
    user_file("warren-alice", &format!("hello-{mpm}.txt"), "alice's page");
    user_file("warren-alice", &format!("who-{mpm}.php"), "<?php echo 'uid=', posix_getuid(), ' root=', $_SERVER['DOCUMENT_ROOT'];");
    user_file("warren-bob", &format!("hello-{mpm}.txt"), "bob's page");
    let dir = TempDir::new(&format!("mass-userdir-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/who.php", "<?php echo 'uid=', posix_getuid();");
    let debian = std::fs::read_to_string("/etc/apache2/mods-available/userdir.conf").unwrap_or_else(|_| {
        "UserDir public_html\nUserDir disabled root\n\n<Directory /home/*/public_html>\n\tAllowOverride FileInfo AuthConfig Limit Indexes\n\tOptions MultiViews Indexes SymLinksIfOwnerMatch IncludesNoExec\n\tRequire method GET POST OPTIONS\n</Directory>\n".to_string()
    });
    dir.write("userdir.conf", debian.replace("/home/*", &format!("{USER_HOMES}/*")));
    let conf = format!("{PHP_POOL}LoadModule userdir_module modules/mod_userdir.so\n<IfModule mod_userdir.c>\n  Include userdir.conf\n  UserDir disabled warren-bob\n</IfModule>\n");
    let s = Server::start_in(dir, mpm, &conf);
    let page = s.get(&format!("/~warren-alice/hello-{mpm}.txt"));
    assert_eq!((page.status, page.text().as_str()), (200, "alice's page"));
    let r = s.get(&format!("/~warren-alice/who-{mpm}.php"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().starts_with(&format!("uid={alice} root=")), "{}", r.text());
    let www_data = nix::unistd::User::from_name("www-data").unwrap().unwrap().uid;
    assert_eq!(s.get("/who.php").text(), format!("uid={www_data}"));
    // Disabled, root (always), and no such user: not users' directories.
    assert_eq!(s.get(&format!("/~warren-bob/hello-{mpm}.txt")).status, 404);
    assert_eq!(s.get("/~root/").status, 404);
    assert_eq!(s.get("/~warren-nosuchuser/").status, 404);
    // Without the slash: redirected to it, as any directory.
    assert_eq!(s.get("/~warren-alice").status, 301);
    user_file("warren-alice", &format!("later-{mpm}.txt"), "added later");
    assert_eq!(s.get(&format!("/~warren-alice/later-{mpm}.txt")).text(), "added later");
    let log = s.read_log("error.log");
    assert!(log.contains("run in a pool as each user (userdir-USER: php-cgi, pm ondemand"), "{log}");
    // Alice's children stop once idle (the pool's 10 s).
    let alice_children = || s.php_cgi_children().into_iter().filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default().lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some(&alice.to_string()))).count();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    while alice_children() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(alice_children(), 0, "alice's pool is stopped when idle");
}

/// An account made with useradd after start gets a pool of its own at
/// its first script, which runs as the user (no reload), and keeps it
/// through a graceful restart; an account made
/// after start whose directory is not its own is refused (503 with
/// Retry-After) once for a flood of requests; a flood of `/~made-up-N/`
/// makes no pool and asks for none.
fn user_made_after_start_gets_its_pool(mpm: &str) {
    let (late, stranger) = (format!("warren-late-{mpm}"), format!("warren-notown-{mpm}"));
    remove_user(&late);
    remove_user(&stranger);
    regular_user("warren-alice");
    let dir = user_dir_site(&format!("mass-late-{mpm}"));
    let s = Server::start_in(dir, mpm, &format!("{PHP_POOL}Include userdir.conf\n"));
    let uid = late_user(&late);
    own_home(&late, uid);
    user_file(&late, "who.php", "<?php echo 'uid=', posix_getuid();");
    let r = s.get(&format!("/~{late}/who.php"));
    assert_eq!((r.status, r.text()), (200, format!("uid={uid}")));
    // Its pool is made once: the next request uses it.
    assert_eq!(s.get(&format!("/~{late}/who.php")).text(), format!("uid={uid}"));
    // A graceful restart makes it the configuration's pool, not another one.
    unsafe_kill(s.pid(), 1);
    s.wait_log("error.log", "SIGHUP received: graceful restart");
    assert_eq!(s.get(&format!("/~{late}/who.php")).text(), format!("uid={uid}"));
    let stranger_uid = late_user(&stranger);
    user_file(&stranger, "who.php", "<?php echo 'uid=', posix_getuid();");
    for _ in 0..20 {
        let r = s.get(&format!("/~{stranger}/who.php"));
        assert_eq!(r.status, 503, "{}", r.text());
        assert!(r.header("retry-after").is_some(), "{:?}", r.header("retry-after"));
    }
    for n in 0..100 {
        assert_eq!(s.get(&format!("/~warren-madeup-{n}/x.php")).status, 404);
    }
    let log = s.read_log("error.log");
    assert_eq!(log.matches(&format!("pool userdir-{late} made for the scripts of ~{late}")).count(), 1, "{log}");
    assert_eq!(log.matches(&format!("no pool for the scripts of ~{stranger}: no directory of the user's")).count(), 1, "{log}");
    assert!(!log.lines().any(|l| l.contains("warren-madeup") && l.contains("pool")), "{log}");
    assert_eq!(log.matches("made for the scripts of").count(), 1, "{log}");
    assert!(!s.php_cgi_children().into_iter().any(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default().lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some(&stranger_uid.to_string()))));
}

/// `UserDir http://example.org/users/`: a 302 there, with the rest and the query.
fn user_dir_redirect(mpm: &str) {
    let s = Server::start(mpm, "UserDir http://example.org/users/\n");
    let r = s.get("/~someone/a/b.html?x=1");
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("http://example.org/users/someone/a/b.html?x=1"));
}

/// CGI programs in a user's directory and in a Host's directory run, as
/// their owner, from the tree they were found in (suexec's document root
/// is then that directory, not the server's DocumentRoot).
fn programs_in_user_and_host_directories(mpm: &str) {
    use std::os::unix::fs::PermissionsExt;
    let alice = regular_user("warren-alice");
    let gid = nix::unistd::User::from_uid(alice.into()).unwrap().unwrap().gid.as_raw();
    let id_program = "#!/bin/sh\nprintf 'Content-Type: text/plain\\n\\n'\nid -u\n";
    let owned_program = |file: &std::path::Path| {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o755)).unwrap();
        for p in [file, file.parent().unwrap()] {
            std::os::unix::fs::chown(p, Some(alice), Some(gid)).unwrap();
        }
    };
    user_file("warren-alice", &format!("cgi-{mpm}/id.cgi"), id_program);
    owned_program(std::path::Path::new(&format!("{USER_HOMES}/warren-alice/public_html/cgi-{mpm}/id.cgi")));
    let dir = user_dir_site(&format!("mass-cgi-{mpm}"));
    let program = dir.write("mass/a.test/run/id.cgi", id_program);
    owned_program(&program);
    let mass = dir.0.join("mass");
    let conf = format!(
        "Include userdir.conf\nVirtualDocumentRoot {m}/%0\n<Directory {m}>\n  Require all granted\n</Directory>\n\
         <Directory ~ \"(/public_html/cgi-|/run)\">\n  Options +ExecCGI\n  AddHandler cgi-script .cgi\n</Directory>\n",
        m = mass.display()
    );
    let s = Server::start_in(dir, mpm, &conf);
    let r = s.get(&format!("/~warren-alice/cgi-{mpm}/id.cgi"));
    assert_eq!((r.status, r.text().trim()), (200, alice.to_string().as_str()), "{}", s.read_log("error.log"));
    assert_eq!(get_as(&s, "a.test", "/run/id.cgi"), (200, format!("{alice}\n")), "{}", s.read_log("error.log"));
}

each_mpm!(programs_in_user_and_host_directories, virtual_document_root_by_host, virtual_document_root_parts_and_ip, user_dirs_with_their_own_php, user_dir_redirect, user_made_after_start_gets_its_pool);
