//! Options FollowSymLinks and SymLinksIfOwnerMatch on every path warren
//! serves or runs, under each MPM: index files, a directory link in the middle
//! of a path, listings, and scripts handed to php-fpm (`SetHandler proxy:`)
//! and to a php-cgi pool (`SetHandler pool:NAME`), whose source must never be
//! answered. The tests run as root, so that a link can be given to another
//! owner than its target (lchown).

mod common;

use std::os::unix::fs::{lchown, symlink};
use std::path::Path;

use common::*;

each_mpm!(
    index_links,
    directory_link_in_the_middle,
    script_links_through_php_fpm,
    script_links_through_a_pool,
    links_if_owner_match,
);

/// The source of every script: if this appears in a response, a script was
/// sent as text.
const SOURCE_MARK: &str = "SOURCE-OF-THE-SCRIPT";

fn script(dir: &TempDir, rel: &str, says: &str) {
    dir.write(rel, format!("<?php /* {SOURCE_MARK} */ echo '{says}', ' ran';"));
}

fn link(target: &str, dir: &TempDir, at: &str) {
    symlink(target, dir.0.join(at)).unwrap();
}

/// The error log names the refused link and the client, once for each of
/// the `n` requests refused for it.
fn assert_refusals_logged(s: &Server, link: &Path, n: usize) {
    let needle = format!("Symbolic link not allowed or link target not accessible: {}", link.display());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let log = s.read_log("error.log");
        let lines: Vec<&str> = log.lines().filter(|l| l.contains(&needle)).collect();
        if lines.len() >= n || std::time::Instant::now() > deadline {
            assert_eq!(lines.len(), n, "{} refusals of {} logged: {log}", n, link.display());
            assert!(lines.iter().all(|l| l.contains("[client 127.0.0.1:")), "{lines:?}");
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

fn index_links(mpm: &str) {
    let dir = TempDir::new("links-index");
    dir.write("htdocs/real.html", "the real page");
    dir.write("htdocs/follow/.keep", "");
    link("../real.html", &dir, "htdocs/follow/index.html");
    dir.write("htdocs/nofollow/.keep", "");
    link("../real.html", &dir, "htdocs/nofollow/index.html");
    // A refused index link does not turn into a listing, but a later
    // DirectoryIndex candidate that is a plain file still answers.
    dir.write("htdocs/second/index.htm", "the second candidate");
    link("../real.html", &dir, "htdocs/second/index.html");
    let conf = "DirectoryIndex index.html index.htm\n<Directory htdocs/nofollow>\nOptions -FollowSymLinks +Indexes\n</Directory>\n<Directory htdocs/second>\nOptions -FollowSymLinks\n</Directory>";
    let s = Server::start_in(dir, mpm, conf);
    let r = s.get("/follow/");
    assert_eq!((r.status, r.text().as_str()), (200, "the real page"), "FollowSymLinks (the default) follows an index link");
    let r = s.get("/nofollow/");
    assert_eq!(r.status, 403);
    assert!(!r.text().contains("the real page") && !r.text().contains("Index of"), "{}", r.text());
    assert_eq!(s.get("/nofollow/index.html").status, 403, "asked for by name too");
    assert_refusals_logged(&s, &s.dir.0.join("htdocs/nofollow/index.html"), 2);
    assert_refusals_logged(&s, &s.dir.0.join("htdocs/second/index.html"), 0);
    let r = s.get("/second/");
    assert_eq!((r.status, r.text().as_str()), (200, "the second candidate"));
    assert_eq!(s.get("/real.html").status, 200);
}

fn directory_link_in_the_middle(mpm: &str) {
    let dir = TempDir::new("links-middle");
    dir.write("htdocs/realdir/file.txt", "in the real directory");
    dir.write("htdocs/nolinks/.keep", "");
    link("../realdir", &dir, "htdocs/nolinks/dirlink");
    link("realdir", &dir, "htdocs/dirlink");
    let conf = "<Directory htdocs/nolinks>\nOptions -FollowSymLinks +Indexes\n</Directory>\n<Directory htdocs/realdir>\nOptions +Indexes\n</Directory>";
    let s = Server::start_in(dir, mpm, conf);
    assert_eq!(s.get("/realdir/file.txt").text(), "in the real directory");
    assert_eq!(s.get("/dirlink/file.txt").text(), "in the real directory", "links are followed where FollowSymLinks is on");
    let r = s.get("/nolinks/dirlink/file.txt");
    assert_eq!(r.status, 403);
    assert!(!r.text().contains("in the real directory"));
    // Nor is the directory behind the link listed, though the real one is.
    assert!(s.get("/realdir/").text().contains("file.txt"));
    let r = s.get("/nolinks/dirlink/");
    assert_eq!(r.status, 403);
    assert!(!r.text().contains("file.txt"), "{}", r.text());
    // The listing of the directory holding the link leaves the link out.
    let r = s.get("/nolinks/");
    assert_eq!(r.status, 200);
    assert!(r.text().contains(".keep") && !r.text().contains("dirlink"), "{}", r.text());
    assert_refusals_logged(&s, &s.dir.0.join("htdocs/nolinks/dirlink"), 2);
}

/// The scripts: `real.php`, links to it where links are allowed and where
/// they are not (the script, the directory index), and a directory link to
/// a directory of scripts.
fn script_site(tag: &str) -> TempDir {
    let dir = TempDir::new(tag);
    script(&dir, "htdocs/real.php", "real");
    script(&dir, "htdocs/phpdir/inner.php", "inner");
    dir.write("htdocs/links/.keep", "");
    link("../real.php", &dir, "htdocs/links/link.php");
    dir.write("htdocs/nolinks/.keep", "");
    link("../real.php", &dir, "htdocs/nolinks/link.php");
    link("../real.php", &dir, "htdocs/nolinks/index.php");
    link("../phpdir", &dir, "htdocs/nolinks/dirlink");
    dir
}

/// Script links refused under -FollowSymLinks (asked for by name, as the
/// index, with path info, by POST, behind a directory link), never their
/// source; followed where links are allowed. `handler` hands `*.php` to the
/// application.
fn script_links(mpm: &str, dir: TempDir, handler: &str) {
    let conf = format!("{handler}\nDirectoryIndex index.php index.html\n<Directory htdocs/nolinks>\nOptions -FollowSymLinks\n</Directory>");
    let s = Server::start_in(dir, mpm, &conf);
    let r = s.get("/real.php");
    assert_eq!((r.status, r.text().as_str()), (200, "real ran"), "{}", r.text());
    assert_eq!(s.get("/links/link.php").text(), "real ran", "a script link is followed under FollowSymLinks");
    for path in ["/nolinks/link.php", "/nolinks/", "/nolinks/index.php", "/nolinks/link.php/more/path", "/nolinks/dirlink/inner.php"] {
        let r = s.get(path);
        assert_eq!(r.status, 403, "{path}: {}", r.text());
        assert!(!r.text().contains(SOURCE_MARK) && !r.text().contains(" ran"), "{path}: {}", r.text());
    }
    let post = "POST /nolinks/link.php HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc";
    let out = s.raw(post.as_bytes());
    assert_eq!(status_of(&out), 403);
    assert!(!String::from_utf8_lossy(&out).contains(SOURCE_MARK));
    assert_refusals_logged(&s, &s.dir.0.join("htdocs/nolinks/link.php"), 3);
    assert_refusals_logged(&s, &s.dir.0.join("htdocs/nolinks/index.php"), 2);
    assert_refusals_logged(&s, &s.dir.0.join("htdocs/nolinks/dirlink"), 1);
}

fn script_links_through_php_fpm(mpm: &str) {
    let dir = script_site("links-fpm");
    let fpm = Fpm::start(&dir, "");
    let handler = fpm.php_files();
    script_links(mpm, dir, &handler);
}

const POOL: &str = "<Pool www>\nCommand /usr/bin/php-cgi\nUser nobody\nGroup nogroup\npm static\npm.max_children 2\n</Pool>\n<FilesMatch \"\\.php$\">\nSetHandler pool:www\n</FilesMatch>";

fn script_links_through_a_pool(mpm: &str) {
    script_links(mpm, script_site("links-pool"), POOL);
}

fn links_if_owner_match(mpm: &str) {
    let dir = TempDir::new("links-owner");
    dir.write("htdocs/target.txt", "root's file");
    script(&dir, "htdocs/target.php", "the target script");
    dir.write("htdocs/owner/.keep", "");
    // Links made by root to root's files: owners match.
    link("../target.txt", &dir, "htdocs/owner/mine.txt");
    link("../target.php", &dir, "htdocs/owner/mine.php");
    // The same links, owned by nobody: what nobody could publish in a tree of
    // its own, pointing at root's files.
    link("../target.txt", &dir, "htdocs/owner/theirs.txt");
    link("../target.php", &dir, "htdocs/owner/theirs.php");
    link("..", &dir, "htdocs/owner/theirdir");
    let uid = nobody();
    for l in ["theirs.txt", "theirs.php", "theirdir"] {
        lchown(dir.0.join("htdocs/owner").join(l), Some(uid), None).unwrap();
    }
    let conf = format!("{POOL}\n<Directory htdocs/owner>\nOptions SymLinksIfOwnerMatch\n</Directory>");
    let s = Server::start_in(dir, mpm, &conf);
    let r = s.get("/owner/mine.txt");
    assert_eq!((r.status, r.text().as_str()), (200, "root's file"));
    let r = s.get("/owner/mine.php");
    assert_eq!((r.status, r.text().as_str()), (200, "the target script ran"), "{}", s.read_log("error.log"));
    for path in ["/owner/theirs.txt", "/owner/theirs.php", "/owner/theirdir/target.txt"] {
        let r = s.get(path);
        assert_eq!(r.status, 403, "{path}: {}", r.text());
        assert!(!r.text().contains("root's") && !r.text().contains(" ran") && !r.text().contains(SOURCE_MARK), "{path}: {}", r.text());
    }
    for l in ["theirs.txt", "theirs.php", "theirdir"] {
        assert_refusals_logged(&s, &s.dir.0.join("htdocs/owner").join(l), 1);
    }
}
