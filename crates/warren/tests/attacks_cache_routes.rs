//! Attacks on the response cache by a site owner with an `.htaccess` file
//! (AllowOverride All in their directory): the server keeps a page for
//! some clients (`Require ip 127.0.0.1`, an intranet page), and the owner
//! wants it stored under a URL of theirs, which the cache (whose hits are
//! served before any access rule) would then give to anyone. They route
//! their URL to the page with a RewriteRule `[PT]`, a plain per-directory
//! rewrite (an internal redirect), a FallbackResource and a DirectoryIndex
//! naming it, then lure a client the rules let in (127.0.0.1) to it; a
//! stranger (127.0.0.2) then asks for the same URL. The same routes to a
//! public page are stored and hit, so the test sees what the cache keeps.

mod common;

use std::io::{Read, Write};
use std::net::Ipv4Addr;

use common::*;

const STRANGER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

fn start(mpm: &str) -> Server {
    let dir = TempDir::new(&format!("attacks-cache-routes-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/intranet/secret.html", "TOP SECRET\n");
    dir.write("htdocs/public.html", "for anyone\n");
    let rewrites = "RewriteEngine On\nRewriteRule ^pt-(.*)$ /$1 [PT]\nRewriteRule ^internal-(.*)$ /$1\n";
    dir.write("htdocs/tenant/.htaccess", rewrites);
    dir.write("htdocs/fallback-secret/.htaccess", "FallbackResource /intranet/secret.html\n");
    dir.write("htdocs/fallback-public/.htaccess", "FallbackResource /public.html\n");
    dir.write("htdocs/index-secret/.htaccess", "DirectoryIndex /intranet/secret.html\n");
    dir.write("htdocs/index-public/.htaccess", "DirectoryIndex /public.html\n");
    let root = dir.0.join("cache");
    std::fs::create_dir_all(&root).unwrap();
    // The server user's to write, as Debian's package makes it.
    let _ = std::os::unix::fs::chown(&root, Some(nobody()), None);
    let d = dir.0.display();
    let conf = format!(
        "CacheRoot {d}/cache\nCacheEnable disk /\nCacheHeader On\nExpiresActive On\nExpiresByType text/html \"access plus 1 hour\"\n\
         <Directory {d}/htdocs>\n  AllowOverride All\n</Directory>\n<Directory {d}/htdocs/intranet>\n  Require ip 127.0.0.1\n</Directory>\n"
    );
    Server::start_in(dir, mpm, &conf)
}

/// The status, Cache-Status and body of a GET of `path` from `from`.
fn get_from(s: &Server, from: Ipv4Addr, path: &str) -> (u16, String, String) {
    let mut c = connect_from(from, s.port);
    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = c.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let cache_status = head.lines().find_map(|l| l.strip_prefix("Cache-Status: ")).unwrap_or("").to_string();
    (status_of(head.as_bytes()), cache_status, body.to_string())
}

fn routes_to_a_restricted_page_are_not_stored(mpm: &str) {
    let s = start(mpm);
    // The page itself: the insider gets it, the stranger not, never stored.
    assert_eq!(get_from(&s, Ipv4Addr::LOCALHOST, "/intranet/secret.html").0, 200);
    assert_eq!(get_from(&s, STRANGER, "/intranet/secret.html").0, 403);
    // A DirectoryIndex given as a URL is not judged by the cache at all
    // (never stored, public or not); the other routes to a public page are.
    let routes = [("/tenant/pt-intranet/secret.html", "/tenant/pt-public.html", true), ("/tenant/internal-intranet/secret.html", "/tenant/internal-public.html", true), ("/fallback-secret/none", "/fallback-public/none", true), ("/index-secret/", "/index-public/", false)];
    for (secret, public, public_stored) in routes {
        // The public page by the same route is stored: a stranger's second ask is a hit.
        let (status, _, body) = get_from(&s, Ipv4Addr::LOCALHOST, public);
        assert_eq!((status, body.as_str()), (200, "for anyone\n"), "{public}");
        let (status, cache, body) = get_from(&s, STRANGER, public);
        assert_eq!((status, body.as_str()), (200, "for anyone\n"), "{public}");
        assert_eq!(cache.starts_with("warren; hit"), public_stored, "{public}: {cache}");
        // The insider, lured, gets the page; it is not stored for the stranger.
        let (status, cache, body) = get_from(&s, Ipv4Addr::LOCALHOST, secret);
        assert_eq!((status, body.as_str()), (200, "TOP SECRET\n"), "{secret}");
        assert!(!cache.contains("stored"), "{secret}: {cache}");
        let (status, cache, body) = get_from(&s, STRANGER, secret);
        assert!(!body.contains("TOP SECRET"), "{secret} reached a stranger ({status}, {cache})");
        assert_eq!(status, 403, "{secret}: {cache}");
    }
    let log = s.wait_log("error.log", "[client 127.0.0.2");
    assert!(log.lines().any(|l| l.contains("[client 127.0.0.2") && l.contains("client denied by server configuration")), "{log}");
}

each_mpm!(routes_to_a_restricted_page_are_not_stored);
