//! The response cache (mod_cache) in front of Debian's php-fpm, under each
//! MPM: what is and is not stored for each combination of caching headers,
//! HEAD from a stored GET, Vary, revalidation with the application (304),
//! CacheLock (many concurrent misses, one request to php-fpm),
//! CacheStaleOnError with php-fpm stopped, PURGE behind Require, the
//! `no-cache` variable of a logged-in cookie, no answer across virtual
//! hosts. Each script counts the requests php-fpm ran in a file of its own.

mod cache_site;
mod common;

use std::time::{Duration, Instant};

use cache_site::*;
use common::*;

fn stored_or_not_by_header_combination(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    for (case, stored) in [("maxage", true), ("smaxage", true), ("expires", true), ("lastmod", true), ("nostore", false), ("private", false), ("cookie", false), ("malformed", false), ("error", false), ("none", false)] {
        let first = s.get(&format!("/c.php/{case}"));
        let second = s.get(&format!("/c.php/{case}"));
        assert_eq!(runs(&s, case), if stored { 1 } else { 2 }, "{case}: first {:?}, second {:?}", cache_status(&first), cache_status(&second));
        if stored {
            assert_eq!(first.body, second.body, "{case}");
            assert!(cache_status(&first).contains("stored"), "{case}: {}", cache_status(&first));
            assert!(cache_status(&second).starts_with("warren; hit"), "{case}: {}", cache_status(&second));
            assert!(second.header("x-cache").is_some_and(|v| v.starts_with("HIT")), "{case}");
            assert!(second.header("age").is_some(), "{case}");
        } else {
            assert_ne!(first.body, second.body, "{case}");
        }
    }
    // A request with credentials is neither answered from nor stored in the cache.
    let with_auth = s.get_with("/c.php/maxage", "Authorization: Basic dTpw\r\n");
    assert_eq!(runs(&s, "maxage"), 2, "{}", cache_status(&with_auth));
    // HEAD from the stored GET: the same length, no body, no run.
    let head = parse_response_for(&s.raw(b"HEAD /c.php/maxage HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), true).0;
    let get = s.get("/c.php/maxage");
    assert_eq!(runs(&s, "maxage"), 2);
    assert_eq!(head.header("content-length"), Some(get.body.len().to_string().as_str()));
    assert!(cache_status(&head).starts_with("warren; hit"));
    // One range of the stored answer.
    let range = s.get_with("/c.php/maxage", "Range: bytes=0-9\r\n");
    assert_eq!(range.status, 206);
    assert_eq!(range.body, get.body[..10]);
    // A static file is cached too.
    let a = s.get("/a.txt");
    let b = s.get("/a.txt");
    assert_eq!(a.body, b"0123456789abcdefghij");
    assert!(cache_status(&b).starts_with("warren; hit"), "{}", cache_status(&b));
    // POST invalidates the URL (RFC 9111 4.4).
    let _ = s.raw(b"POST /c.php/maxage HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    let after = s.get("/c.php/maxage");
    assert!(!cache_status(&after).starts_with("warren; hit"), "{}", cache_status(&after));
}

/// WordPress flushes its output: php-fpm sends the answer in several
/// records, read whole into one buffer to be stored (it once waited
/// forever for a piece it already had).
fn an_answer_flushed_in_pieces_is_stored_whole(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let first = s.get("/c.php/flushed");
    let second = s.get("/c.php/flushed");
    assert_eq!(first.status, 200);
    assert!(first.body.starts_with(&[b'f'; 45_000]), "{} bytes", first.body.len());
    assert!(cache_status(&first).contains("stored"), "{}", cache_status(&first));
    assert!(cache_status(&second).starts_with("warren; hit"), "{}", cache_status(&second));
    assert_eq!(first.body, second.body);
    assert_eq!(runs(&s, "flushed"), 1);
}

fn vary_keeps_a_variant_per_selecting_header(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let fr = s.get_with("/c.php/vary", "Accept-Language: fr\r\n");
    let de = s.get_with("/c.php/vary", "Accept-Language: de\r\n");
    let fr_again = s.get_with("/c.php/vary", "Accept-Language: fr\r\n");
    assert_eq!(runs(&s, "vary"), 2);
    assert!(fr.text().contains("lang=fr") && de.text().contains("lang=de"));
    assert_eq!(fr_again.body, fr.body);
    let none = s.get("/c.php/vary");
    assert!(none.text().contains("lang=-"), "{}", none.text());
    assert_eq!(runs(&s, "vary"), 3);
}

/// Requests `path` until `done` holds of the answer, for up to 10 s.
fn poll(s: &Server, path: &str, done: impl Fn(&Resp) -> bool) -> Resp {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = s.get(path);
        if done(&r) {
            return r;
        }
        assert!(Instant::now() < deadline, "{path}: still {:?}", cache_status(&r));
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stale_entries_are_revalidated_with_the_application(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let first = s.get("/c.php/short");
    assert!(cache_status(&first).contains("stored"));
    // Once stale, the application is asked with If-None-Match and its 304 refreshes the entry.
    let revalidated = poll(&s, "/c.php/short", |r| cache_status(r).contains("fwd=stale"));
    assert_eq!(revalidated.status, 200);
    assert_eq!(revalidated.body, first.body);
    assert!(cache_status(&revalidated).contains("fwd-status=304"), "{}", cache_status(&revalidated));
    assert_eq!(revalidated.header("x-cache").map(|v| v.starts_with("REVALIDATE")), Some(true));
    let asked = std::fs::read_to_string(s.dir.0.join("inm-short")).unwrap();
    assert!(asked.lines().any(|l| l == "\"v1\""), "{asked}");
    // The client's own conditional request gets a 304 from the cache.
    let s304 = s.get_with("/c.php/short", "If-None-Match: \"v1\"\r\n");
    assert_eq!(s304.status, 304, "{}", cache_status(&s304));
}

/// A stale static file's entry is revalidated by the file's own
/// validators (as Apache's default handler answers mod_cache with 304),
/// not stored again; once the file changes, the new one is stored.
fn a_stale_static_entry_is_revalidated_by_the_files_validators(mpm: &str) {
    let (_fpm, s) = start(mpm, "ExpiresByType text/css \"access plus 1 second\"\n");
    s.dir.write("htdocs/s.css", "body { color: red }");
    let first = s.get("/s.css");
    assert!(cache_status(&first).contains("fwd=uri-miss; stored"), "{}", cache_status(&first));
    let revalidated = poll(&s, "/s.css", |r| !cache_status(r).starts_with("warren; hit"));
    assert_eq!((revalidated.status, revalidated.body.as_slice()), (200, b"body { color: red }".as_slice()));
    assert!(cache_status(&revalidated).contains("fwd=stale; fwd-status=304; stored"), "{}", cache_status(&revalidated));
    assert!(revalidated.header("x-cache").is_some_and(|v| v.starts_with("REVALIDATE")), "{:?}", revalidated.header("x-cache"));
    assert_eq!(revalidated.header("etag"), first.header("etag"));
    // Fresh again: hits until it is stale once more.
    let hit = s.get("/s.css");
    assert!(cache_status(&hit).starts_with("warren; hit") || cache_status(&hit).contains("fwd=stale"), "{}", cache_status(&hit));
    // A changed file (another length, so another ETag) is stored anew.
    s.dir.write("htdocs/s.css", "body { color: darkblue }");
    let changed = poll(&s, "/s.css", |r| r.body.as_slice() == b"body { color: darkblue }");
    assert!(cache_status(&changed).contains("fwd=uri-miss; stored"), "{}", cache_status(&changed));
    assert_ne!(changed.header("etag"), first.header("etag"));
}

fn cache_lock_sends_one_request_for_many_misses(mpm: &str) {
    let (_fpm, s) = start(mpm, "CacheLock On\nCacheLockMaxAge 10\n");
    let port = s.port;
    let clients: Vec<_> = (0..100).map(|_| std::thread::spawn(move || {
        let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        std::io::Write::write_all(&mut c, b"GET /c.php/slow HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
        parse_response(&read_to_close(&mut c)).0
    })).collect();
    let answers: Vec<Resp> = clients.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(answers.iter().all(|r| r.status == 200 && r.body == answers[0].body), "{:?}", answers.iter().map(|r| r.status).collect::<Vec<_>>());
    assert_eq!(runs(&s, "slow"), 1);
}

fn stale_copy_answers_when_php_fpm_is_stopped(mpm: &str) {
    let (fpm, s) = start(mpm, "CacheStaleOnError On\n");
    let first = s.get("/c.php/short");
    assert!(cache_status(&first).contains("stored"));
    drop(fpm);
    let stale = poll(&s, "/c.php/short", |r| cache_status(r).contains("stale-on-error"));
    assert_eq!(stale.status, 200);
    assert_eq!(stale.body, first.body);
    // Without a stored copy, the failure is the client's answer.
    assert_eq!(s.get("/c.php/maxage").status, 503);
}

fn purge_behind_require(mpm: &str) {
    let guarded = "<VirtualHost *>\nServerName guarded\n<If \"%{REQUEST_METHOD} == 'PURGE'\">\nRequire ip 127.0.0.1\n</If>\n</VirtualHost>\n<VirtualHost *>\nServerName open\n</VirtualHost>\n";
    let (_fpm, s) = start(mpm, guarded);
    let purge = |host: &str, path: &str| parse_response(&s.raw(format!("PURGE {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes())).0;
    s.get_from("guarded", "/c.php/maxage");
    assert!(cache_status(&s.get_from("guarded", "/c.php/maxage")).starts_with("warren; hit"));
    let r = purge("guarded", "/c.php/maxage");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(!cache_status(&s.get_from("guarded", "/c.php/maxage")).starts_with("warren; hit"));
    // A prefix.
    s.get_from("guarded", "/c.php/expires");
    assert_eq!(purge("guarded", "/c.php/*").status, 200);
    assert!(!cache_status(&s.get_from("guarded", "/c.php/expires")).starts_with("warren; hit"));
    // `warren cache purge URL`, from the command line.
    s.get_from("guarded", "/c.php/lastmod");
    assert!(cache_status(&s.get_from("guarded", "/c.php/lastmod")).starts_with("warren; hit"));
    let out = std::process::Command::new(BIN).args(["cache", "purge", "-f"]).arg(&s.conf).arg(format!("http://guarded:{}/c.php/lastmod", s.port)).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 entry removed"), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(!cache_status(&s.get_from("guarded", "/c.php/lastmod")).starts_with("warren; hit"));
    // Where anyone passes the Require rules, nobody purges.
    s.get_from("open", "/c.php/smaxage");
    assert_eq!(purge("open", "/c.php/smaxage").status, 405);
    assert!(cache_status(&s.get_from("open", "/c.php/smaxage")).starts_with("warren; hit"));
}

/// A purge key in a request field: the client that sends it purges, one
/// that does not is refused (anyone's rules are asked without the field).
fn purge_by_a_key_in_a_field(mpm: &str) {
    let (_fpm, s) = start(mpm, "<If \"%{REQUEST_METHOD} == 'PURGE'\">\nRequire expr \"%{HTTP:X-Purge-Key} == 'sesame'\"\n</If>\n");
    let purge = |extra: &str| parse_response(&s.raw(format!("PURGE /c.php/maxage HTTP/1.1\r\nHost: localhost\r\n{extra}Connection: close\r\n\r\n").as_bytes())).0;
    s.get("/c.php/maxage");
    assert!(cache_status(&s.get("/c.php/maxage")).starts_with("warren; hit"));
    assert_eq!(purge("").status, 405);
    assert!(cache_status(&s.get("/c.php/maxage")).starts_with("warren; hit"));
    let r = purge("X-Purge-Key: sesame\r\n");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(!cache_status(&s.get("/c.php/maxage")).starts_with("warren; hit"));
}

fn logged_in_cookie_bypasses_the_cache(mpm: &str) {
    let (_fpm, s) = start(mpm, "SetEnvIf Cookie \"wordpress_logged_in\" no-cache\n<Location /c.php>\nSetEnvIf X-Preview 1 no-cache\n</Location>\n");
    s.get("/c.php/maxage");
    let logged_in = s.get_with("/c.php/maxage", "Cookie: wordpress_logged_in_abc=admin\r\n");
    assert_eq!(runs(&s, "maxage"), 2, "{}", cache_status(&logged_in));
    // Its answer was not stored either: an anonymous visitor gets the first.
    let anon = s.get("/c.php/maxage");
    assert!(cache_status(&anon).starts_with("warren; hit"));
    assert_eq!(runs(&s, "maxage"), 2);
    // A directory's SetEnvIf, which runs after the lookup, keeps the answer out too.
    let first = s.get_with("/c.php/expires", "X-Preview: 1\r\n");
    assert!(cache_status(&first).contains("no-cache variable"), "{}", cache_status(&first));
    s.get_with("/c.php/expires", "X-Preview: 1\r\n");
    assert_eq!(runs(&s, "expires"), 2);
}

fn no_answer_crosses_virtual_hosts(mpm: &str) {
    let vhosts = "<VirtualHost *>\nServerName one\n</VirtualHost>\n<VirtualHost *>\nServerName two\n</VirtualHost>\n";
    let (_fpm, s) = start(mpm, vhosts);
    let one = s.get_from("one", "/c.php/maxage");
    let two = s.get_from("two", "/c.php/maxage");
    assert!(one.text().contains("host=one") && two.text().contains("host=two"), "{} / {}", one.text(), two.text());
    assert!(cache_status(&s.get_from("two", "/c.php/maxage")).starts_with("warren; hit"));
    assert_eq!(runs(&s, "maxage"), 2);
}


fn counts_in_server_status_and_metrics(mpm: &str) {
    let (_fpm, s) = start(mpm, "<Location /server-status>\nSetHandler server-status\n</Location>\n<Location /metrics>\nSetHandler metrics\n</Location>\nCacheDisable /server-status\nCacheDisable /metrics\n");
    s.get("/c.php/maxage");
    s.get("/c.php/maxage");
    s.get("/c.php/maxage");
    let status = key_values(&s.get("/server-status?auto").text().replace(": ", "="));
    assert_eq!(status.get("CacheHits").map(String::as_str), Some("2"), "{status:?}");
    assert_eq!(status.get("CacheMisses").map(String::as_str), Some("1"));
    assert_eq!(status.get("CacheStores").map(String::as_str), Some("1"));
    assert!(status.get("CacheBytesStored").is_some_and(|b| b.parse::<u64>().unwrap() > 0));
    let metrics = s.get("/metrics").text();
    assert!(metrics.contains("warren_cache_hits_total 2"), "{metrics}");
}

fn an_unwritable_cache_root_is_a_warning_and_answers_go_uncached(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let root = s.dir.0.join("cache");
    std::fs::set_permissions(&root, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    let _ = std::os::unix::fs::chown(&root, Some(0), None);
    let first = s.get("/c.php/maxage");
    assert_eq!(first.status, 200);
    let log = s.wait_log("error.log", "cannot be written");
    assert!(log.contains("answers are served uncached"), "{log}");
    assert!(!cache_status(&s.get("/c.php/maxage")).starts_with("warren; hit"));
}

fn malformed_caching_headers_are_served_not_stored_and_logged(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let r = s.get("/c.php/malformed");
    assert_eq!(r.status, 200);
    assert!(cache_status(&r).contains("malformed"), "{}", cache_status(&r));
    s.wait_log("error.log", "malformed Cache-Control");
}

fn socache_keeps_entries_in_shared_memory(mpm: &str) {
    let (_fpm, s) = start(mpm, "CacheEnable socache /c.php\nCacheSocacheMaxSize 4000\n");
    // One directory per server on /dev/shm, named by its PidFile.
    let pid_file = s.dir.0.join("warren.pid");
    let id = fnv(pid_file.as_os_str().as_encoded_bytes());
    let shm = std::path::PathBuf::from(format!("/dev/shm/warren-socache-{id:x}"));
    s.get("/c.php/maxage");
    let hit = s.get("/c.php/maxage");
    let exists = shm.join(".counters").exists();
    let _ = std::fs::remove_dir_all(&shm);
    assert!(cache_status(&hit).starts_with("warren; hit"), "{}", cache_status(&hit));
    assert!(exists, "{} holds no cache", shm.display());
    assert_eq!(runs(&s, "maxage"), 1);
    // Larger than CacheSocacheMaxSize: served, not stored.
    let big = s.get("/c.php/big");
    assert!(cache_status(&big).contains("not stored") || !cache_status(&big).contains("stored"), "{}", cache_status(&big));
    let _ = std::fs::remove_dir_all(&shm);
}

/// CacheQuickHandler Off: the cache answers after the access checks, so a
/// protected URL's answer is stored and served only to clients let in.
fn quick_handler_off_serves_protected_answers_only_to_those_let_in(mpm: &str) {
    let (_fpm, s) = start_protected(mpm, "CacheQuickHandler Off\n");
    assert_eq!(s.get("/members/c.php/smaxage").status, 401);
    assert_eq!(runs(&s, "smaxage"), 0);
    // s-maxage lets a shared cache store an answer to credentials (RFC 9111 3.5).
    let first = s.get_with("/members/c.php/smaxage", CAROL);
    assert_eq!(first.status, 200);
    assert!(cache_status(&first).contains("stored"), "{}", cache_status(&first));
    let hit = s.get_with("/members/c.php/smaxage", CAROL);
    assert!(cache_status(&hit).starts_with("warren; hit"), "{}", cache_status(&hit));
    assert_eq!(hit.body, first.body);
    assert_eq!(runs(&s, "smaxage"), 1);
    // Those the checks turn away get their 401, not the stored answer.
    for creds in ["", CAROL_WRONG] {
        let refused = s.get_with("/members/c.php/smaxage", creds);
        assert_eq!(refused.status, 401, "{creds:?}");
        assert_ne!(refused.body, first.body);
        assert!(refused.header("cache-status").is_none(), "{creds:?}: {}", cache_status(&refused));
    }
    // Without s-maxage, public or must-revalidate, an answer to credentials is not stored.
    s.get_with("/members/c.php/maxage", CAROL);
    let again = s.get_with("/members/c.php/maxage", CAROL);
    assert_eq!(runs(&s, "maxage"), 2, "{}", cache_status(&again));
    // A URL behind `Require ip`: stored, and a hit for the address let in.
    s.get("/local/c.php/expires");
    let local = s.get("/local/c.php/expires");
    assert!(cache_status(&local).starts_with("warren; hit"), "{}", cache_status(&local));
    assert_eq!(runs(&s, "expires"), 1);
}

/// CacheQuickHandler On (the default): hits come before the access checks,
/// so nothing behind them is stored.
fn quick_handler_on_stores_nothing_behind_access_checks(mpm: &str) {
    let (_fpm, s) = start_protected(mpm, "");
    for _ in 0..2 {
        assert_eq!(s.get_with("/members/c.php/smaxage", CAROL).status, 200);
        s.get("/local/c.php/expires");
    }
    assert_eq!(runs(&s, "smaxage"), 2);
    assert_eq!(runs(&s, "expires"), 2);
    assert_eq!(s.get("/members/c.php/smaxage").status, 401);
}

/// The bytes the files under `dir` and its directories take.
fn held_in(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let files = std::fs::read_dir(dir).into_iter().flatten().flatten().flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten());
    files.filter_map(|f| f.metadata().ok()).map(|m| m.blocks() * 512).sum()
}

/// The socache's bound (64 of CacheSocacheMaxSize) is set aside from the
/// memory budget before the server's children and the pools are sized, and its
/// entries, filled past the bound, stay within it.
fn socache_memory_is_set_aside_and_bounded(mpm: &str) {
    let body = "x".repeat(60_000);
    let pool = "<Pool www>\n    Command php-cgi\n    pm static\n    pm.max_children auto\n</Pool>\n";
    let (_fpm, s) = start_with(mpm, &format!("MemoryBudget 40M\nServerLimit 64\nMaxRequestWorkers auto\n{pool}CacheEnable socache /big/\nCacheSocacheMaxSize 65536\nExpiresDefault \"access plus 1 hour\"\n"), &[("htdocs/big/f.bin", &body)]);
    let shm = std::path::PathBuf::from(format!("/dev/shm/warren-socache-{:x}", fnv(s.dir.0.join("warren.pid").as_os_str().as_encoded_bytes())));
    let log = s.wait_log("error.log", "MaxRequestWorkers auto: ");
    let line = log.lines().find(|l| l.contains("MaxRequestWorkers auto: ")).unwrap().to_string();
    let log = s.wait_log("error.log", "pm.max_children auto: ");
    let pool_line = log.lines().find(|l| l.contains("pm.max_children auto: ")).unwrap().to_string();
    let bound = 65_536 * 64;
    let mut over = None;
    for i in 0..150 {
        let r = s.get(&format!("/big/f.bin?{i}"));
        assert_eq!(r.body.len(), body.len());
        let held = held_in(&shm);
        if held > bound {
            over = Some((i, held));
            break;
        }
        if i == 0 {
            assert!(cache_status(&r).contains("stored"), "{}", cache_status(&r));
        }
    }
    let stored = held_in(&shm);
    let _ = std::fs::remove_dir_all(&shm);
    // 40 MB less the 4 MB bound.
    assert!(line.contains("fit in 36.0 MB (MemoryBudget)"), "{line}");
    // (One child of the 32 MB guess does not fit beside the rest: the line says so.)
    assert!(pool_line.contains(" in 36.0 MB (MemoryBudget)"), "{pool_line}");
    assert_eq!(over, None, "held past the bound of {bound}");
    assert!(stored > bound / 2, "the entries hold {stored}: the cache was not filled");
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(b), &mut out).expect("a gzip body");
    out
}

fn unbrotli(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut brotli::Decompressor::new(b, 4096), &mut out).expect("a brotli body");
    out
}

/// The entry files under the disk cache's root.
fn entry_files(s: &Server) -> usize {
    let root = s.dir.0.join("cache");
    std::fs::read_dir(root).into_iter().flatten().flatten().filter(|d| d.path().is_dir()).map(|d| std::fs::read_dir(d.path()).map_or(0, |f| f.count())).sum()
}

/// A stored answer the site compresses is sent compressed to clients that
/// accept it: each coding made once and kept beside the entry, with
/// Content-Encoding, Vary and an ETag of its own; identity to the others.
fn hits_are_compressed_once_per_coding(mpm: &str) {
    let (_fpm, s) = start(mpm, "AddOutputFilterByType DEFLATE;BROTLI_COMPRESS text/html\n");
    let gzip = "Accept-Encoding: gzip\r\n";
    let miss = s.get_with("/c.php/etag", gzip);
    assert!(cache_status(&miss).contains("stored"), "{}", cache_status(&miss));
    assert_eq!(miss.header("content-encoding"), Some("gzip"));
    let identity = s.get("/c.php/etag");
    assert!(cache_status(&identity).starts_with("warren; hit"), "{}", cache_status(&identity));
    assert_eq!(identity.header("content-encoding"), None);
    assert!(identity.header("vary").is_some_and(|v| v.contains("Accept-Encoding")), "{:?}", identity.header("vary"));
    assert_eq!(identity.header("etag"), Some("\"v1\""));
    assert!(identity.text().contains("compressible compressible"));
    let first = s.get_with("/c.php/etag", gzip);
    let files = entry_files(&s);
    let second = s.get_with("/c.php/etag", gzip);
    for hit in [&first, &second] {
        assert!(cache_status(hit).starts_with("warren; hit"), "{}", cache_status(hit));
        assert_eq!(hit.header("content-encoding"), Some("gzip"));
        assert!(hit.header("vary").is_some_and(|v| v.contains("Accept-Encoding")));
        assert_eq!(hit.header("etag"), Some("\"v1-gzip\""));
        assert_eq!(gunzip(&hit.body), identity.body);
    }
    // The gzip variant was kept by the first hit: the second made nothing.
    assert_eq!(entry_files(&s), files);
    assert_eq!(second.body, first.body);
    let br = s.get_with("/c.php/etag", "Accept-Encoding: br\r\n");
    assert_eq!(br.header("content-encoding"), Some("br"));
    assert_eq!(br.header("etag"), Some("\"v1-br\""));
    assert_eq!(unbrotli(&br.body), identity.body);
    // The coded tag revalidates the coded variant.
    let not_modified = s.get_with("/c.php/etag", "Accept-Encoding: gzip\r\nIf-None-Match: \"v1-gzip\"\r\n");
    assert_eq!(not_modified.status, 304);
    // A range is of the identity.
    let range = s.get_with("/c.php/etag", "Accept-Encoding: gzip\r\nRange: bytes=0-9\r\n");
    assert_eq!((range.status, range.header("content-encoding")), (206, None));
    assert_eq!(range.body, identity.body[..10]);
    assert_eq!(runs(&s, "etag"), 1);
}

/// A tmpfs mounted for a test, unmounted when dropped.
struct SmallTmpfs(std::path::PathBuf);

impl SmallTmpfs {
    fn mount(at: &std::path::Path, size: &str) -> SmallTmpfs {
        let status = std::process::Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size},mode=0755"), "tmpfs"]).arg(at).status().expect("mount");
        assert!(status.success(), "mount a tmpfs at {} (the tests run as root)", at.display());
        SmallTmpfs(at.to_path_buf())
    }
}

impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A cache directory with no room left: a warning, and answers are served
/// uncached (the server's children keep serving).
fn a_full_cache_directory_is_a_warning_and_answers_go_uncached(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let root = s.dir.0.join("cache");
    let _tmpfs = SmallTmpfs::mount(&root, "64k");
    let _ = std::os::unix::fs::chown(&root, Some(nobody()), None);
    // Filled to the last byte.
    let mut hog = std::fs::File::create(root.join("hog")).unwrap();
    while std::io::Write::write_all(&mut hog, &[0u8; 1024]).is_ok() {}
    drop(hog);
    for _ in 0..3 {
        let r = s.get("/c.php/maxage");
        assert_eq!(r.status, 200);
        assert!(r.text().contains("case=maxage"), "{}", r.text());
        assert!(!cache_status(&r).contains("stored") || cache_status(&r).contains("not stored"), "{}", cache_status(&r));
    }
    assert_eq!(runs(&s, "maxage"), 3);
    let log = s.wait_log("error.log", "could not be stored");
    assert!(log.contains("served uncached"), "{log}");
    assert_eq!(s.get("/a.txt").status, 200);
}

/// An entry altered on disk is discarded, never served.
fn a_corrupt_entry_is_discarded_never_served(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let first = s.get("/c.php/maxage");
    assert!(cache_status(&s.get("/c.php/maxage")).starts_with("warren; hit"));
    let root = s.dir.0.join("cache");
    let mut altered = 0;
    for d in std::fs::read_dir(&root).unwrap().flatten().filter(|d| d.path().is_dir()) {
        for f in std::fs::read_dir(d.path()).unwrap().flatten() {
            let mut bytes = std::fs::read(f.path()).unwrap();
            // A byte of the body (the checksum's eight come last).
            let at = bytes.len() - 20;
            bytes[at] ^= 0x55;
            std::fs::write(f.path(), bytes).unwrap();
            altered += 1;
        }
    }
    assert!(altered > 0);
    let after = s.get("/c.php/maxage");
    assert!(!cache_status(&after).starts_with("warren; hit"), "{}", cache_status(&after));
    assert_ne!(after.body, first.body);
    assert!(after.text().starts_with("case=maxage"), "{}", after.text());
    assert_eq!(runs(&s, "maxage"), 2);
}

/// CacheQuickHandler Off keeps the rest of the cache: a stale entry of a
/// URL behind `Require ip` is revalidated with the application, and
/// CacheLock sends one of many concurrent misses to it.
fn quick_handler_off_revalidates_and_locks(mpm: &str) {
    let (_fpm, s) = start_protected(mpm, "CacheQuickHandler Off\nCacheLock On\nCacheLockMaxAge 10\n");
    let first = s.get("/local/c.php/short");
    assert!(cache_status(&first).contains("stored"), "{}", cache_status(&first));
    let revalidated = poll(&s, "/local/c.php/short", |r| cache_status(r).contains("fwd=stale"));
    assert_eq!(revalidated.body, first.body);
    assert!(cache_status(&revalidated).contains("fwd-status=304"), "{}", cache_status(&revalidated));
    let asked = std::fs::read_to_string(s.dir.0.join("inm-short")).unwrap();
    assert!(asked.lines().any(|l| l == "\"v1\""), "{asked}");
    let port = s.port;
    let clients: Vec<_> = (0..20).map(|_| std::thread::spawn(move || {
        let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        std::io::Write::write_all(&mut c, b"GET /local/c.php/slow HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
        parse_response(&read_to_close(&mut c)).0
    })).collect();
    let answers: Vec<Resp> = clients.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(answers.iter().all(|r| r.status == 200 && r.body == answers[0].body), "{:?}", answers.iter().map(|r| r.status).collect::<Vec<_>>());
    assert_eq!(runs(&s, "slow"), 1);
}

/// A directory's index, public for a minute, counting its runs in
/// `count-DIRNAME`.
const INDEX_PHP: &str = "<?php header('Cache-Control: public, max-age=60'); file_put_contents(__DIR__ . '/../../count-' . basename(__DIR__), 'x', FILE_APPEND | LOCK_EX); echo basename(__DIR__), ' index ', hrtime(true);";

/// A directory whose index has rules of its own (`<Files index.php>`):
/// under Off no hit is served on the directory's word, under On nothing
/// is stored that only some clients may read.
fn an_index_with_rules_of_its_own_is_judged_before_the_cache(mpm: &str) {
    let (_fpm, off) = start_protected(mpm, "CacheQuickHandler Off\nDirectoryIndex index.php index.html\n");
    off.dir.write("htdocs/team/index.php", INDEX_PHP);
    off.dir.write("htdocs/team/.htaccess", format!("<Files index.php>\n    AuthType Basic\n    AuthName team\n    AuthUserFile {}/private/htpasswd\n    Require valid-user\n</Files>\n", off.dir.0.display()));
    let member = off.get_with("/team/", CAROL);
    assert!(member.text().starts_with("team index"), "{}", member.text());
    assert!(cache_status(&off.get_with("/team/", CAROL)).starts_with("warren; hit"));
    let anonymous = off.get("/team/");
    // The index's refusal (warren's answer for an index is a 403).
    assert!(matches!(anonymous.status, 401 | 403) && !anonymous.text().contains("team index"), "{} {}", anonymous.status, anonymous.text());
    assert_eq!(runs(&off, "team"), 1);
    let (_fpm, on) = start_protected(mpm, "DirectoryIndex index.php index.html\n");
    on.dir.write("htdocs/near/index.php", INDEX_PHP);
    on.dir.write("htdocs/near/.htaccess", "<Files index.php>\n    Require ip 127.0.0.1\n</Files>\n");
    for _ in 0..2 {
        assert!(on.get("/near/").text().starts_with("near index"));
    }
    assert_eq!(runs(&on, "near"), 2);
}

each_mpm!(
    a_stale_static_entry_is_revalidated_by_the_files_validators,
    an_answer_flushed_in_pieces_is_stored_whole,
    an_index_with_rules_of_its_own_is_judged_before_the_cache,
    quick_handler_off_revalidates_and_locks,
    a_full_cache_directory_is_a_warning_and_answers_go_uncached,
    a_corrupt_entry_is_discarded_never_served,
    hits_are_compressed_once_per_coding,
    socache_memory_is_set_aside_and_bounded,
    quick_handler_off_serves_protected_answers_only_to_those_let_in,
    quick_handler_on_stores_nothing_behind_access_checks,
    purge_by_a_key_in_a_field,
    stored_or_not_by_header_combination,
    vary_keeps_a_variant_per_selecting_header,
    stale_entries_are_revalidated_with_the_application,
    cache_lock_sends_one_request_for_many_misses,
    stale_copy_answers_when_php_fpm_is_stopped,
    purge_behind_require,
    logged_in_cookie_bypasses_the_cache,
    no_answer_crosses_virtual_hosts,
    counts_in_server_status_and_metrics,
    an_unwritable_cache_root_is_a_warning_and_answers_go_uncached,
    malformed_caching_headers_are_served_not_stored_and_logged,
    socache_keeps_entries_in_shared_memory,
);
