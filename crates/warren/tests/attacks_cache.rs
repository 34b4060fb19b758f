//! Attacks on the response cache. The attacker is an anonymous client who
//! wants a stored answer of its making served to others (cache poisoning
//! through the Host field, X-Forwarded-Host and other fields not in the
//! key, percent-encoded and NUL path variants), or wants another client's
//! answer: one behind `Require`, or a virtual host's answer served for
//! another (a tenant's PHP or `.htaccess` making its answers long-lived).
//! Also a local user (a tenant's PHP) with the cache directory: planting
//! entries or links in it, reading what it stores. Under CacheQuickHandler
//! Off, a client without the credentials that wants the answer a member's
//! request stored, by other spellings of its URL.

mod cache_site;
mod common;

use cache_site::*;
use common::*;

fn raw_get(s: &Server, target: &str, host: &str, extra: &str) -> Resp {
    parse_response(&s.raw(format!("GET {target} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n").as_bytes())).0
}

fn a_foreign_host_field_is_its_own_entry(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    // Host names no virtual host: the main server answers, keyed by that name.
    let evil = raw_get(&s, "/c.php/maxage", "evil.example", "");
    assert!(cache_status(&evil).contains("stored"), "{}", cache_status(&evil));
    let plain = s.get("/c.php/maxage");
    assert!(!cache_status(&plain).starts_with("warren; hit"), "{}", cache_status(&plain));
    assert_eq!(runs(&s, "maxage"), 2);
}

fn unkeyed_forwarding_fields_are_never_stored(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    for field in ["X-Forwarded-Host: evil.example", "X-Forwarded-Proto: javascript", "X-Original-URL: /admin", "Forwarded: host=evil.example", "X-Forwarded-Ssl: on", "Front-End-Https: on", "X-Original-Host: evil.example", "X-HTTP-Method-Override: DELETE"] {
        let poisoned = s.get_with("/c.php/echo", &format!("{field}\r\n"));
        assert!(!cache_status(&poisoned).contains("stored"), "{field}: {}", cache_status(&poisoned));
    }
    let clean = s.get("/c.php/echo");
    assert!(clean.text().contains("xfh=- "), "{}", clean.text());
}

fn encoded_paths_do_not_share_entries(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let plain = s.get("/c.php/maxage");
    for variant in ["/c.php/%6daxage", "/c.php/maxage%2f", "/c.php/maxage/", "/c.php//maxage", "/c.php/maxage%252f"] {
        let r = s.get(variant);
        assert!(!cache_status(&r).starts_with("warren; hit"), "{variant}: {}", cache_status(&r));
        if r.status == 200 {
            assert_ne!(r.body, plain.body, "{variant}");
        }
    }
    for bad in ["/c.php/max%00age", "/c.php/max\\age", "/c.php/../c.php/maxage"] {
        let r = s.get(bad);
        assert!(!cache_status(&r).starts_with("warren; hit"), "{bad}: {}", cache_status(&r));
    }
    // Only the first, exact form is a hit.
    assert!(cache_status(&s.get("/c.php/maxage")).starts_with("warren; hit"));
}

fn an_answer_behind_require_is_not_stored(mpm: &str) {
    let (_fpm, s) = start(mpm, "<Location /c.php/private-place>\nRequire ip 127.0.0.1\n</Location>\n");
    // The script makes this answer public for a minute, as for `maxage`.
    let first = s.get("/c.php/private-place");
    assert_eq!(first.status, 200);
    let second = s.get("/c.php/private-place");
    assert!(!cache_status(&second).starts_with("warren; hit"), "{}", cache_status(&second));
    assert_eq!(runs(&s, "private-place"), 2);
}

fn a_tenant_cannot_store_for_another_virtual_host(mpm: &str) {
    let vhosts = "<VirtualHost *>\nServerName tenant\nDocumentRoot tenant\n<Directory tenant>\nAllowOverride All\n</Directory>\n</VirtualHost>\n<VirtualHost *>\nServerName victim\n</VirtualHost>\n";
    // The tenant's own PHP and .htaccess make its answers public and long-lived.
    let files = [("tenant/c.php", "<?php header('Cache-Control: public, max-age=600'); echo 'tenant says hi';"), ("tenant/.htaccess", "Header set Cache-Control \"public, max-age=600\"\n")];
    let (_fpm, s) = start_with(mpm, vhosts, &files);
    for (target, host) in [("/c.php/maxage", "tenant"), ("http://victim/c.php/maxage", "tenant"), ("/c.php/maxage", "TENANT"), ("/c.php/maxage", "tenant:80")] {
        let _ = raw_get(&s, target, host, "");
    }
    let victim = s.get_from("victim", "/c.php/maxage");
    assert!(victim.text().contains("case=maxage") && victim.text().contains("host=victim"), "{}", victim.text());
}

/// `Vary: *` (RFC 9110 12.5.5: no request matches) in a second Vary
/// field counts as in the first.
fn vary_star_in_any_vary_field_is_never_served(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let first = s.get("/c.php/varystar");
    let second = s.get("/c.php/varystar");
    assert!(!cache_status(&second).starts_with("warren; hit"), "{} / {}", cache_status(&first), cache_status(&second));
    assert_eq!(runs(&s, "varystar"), 2);
}

/// The application sees a repeated field joined (`fr, PAYLOAD`); a
/// variant chosen by its first line only would be the plain `fr` one,
/// served to every French reader.
fn a_repeated_selecting_field_does_not_poison_a_variant(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let evil = s.get_with("/c.php/vary", "Accept-Language: fr\r\nAccept-Language: <script>evil()</script>\r\n");
    assert!(evil.text().contains("<script>"), "{}", evil.text());
    let victim = s.get_with("/c.php/vary", "Accept-Language: fr\r\n");
    assert!(!victim.text().contains("<script>"), "{} {}", cache_status(&victim), victim.text());
    assert!(victim.text().contains("lang=fr "), "{}", victim.text());
}

/// Rules that let in a client by what it sends (a key in a field, a
/// cookie): the answer it was let in for must not be stored, or the next
/// anonymous client gets it from the cache, before any rule is checked.
fn an_answer_let_in_by_a_request_field_is_not_stored(mpm: &str) {
    let (_fpm, s) = start(mpm, "<Location /c.php/maxage>\nRequire expr \"%{HTTP:X-Key} == 'sesame'\"\n</Location>\n<Location /c.php/expires>\n<If \"%{HTTP_COOKIE} =~ /staff=1/\">\nRequire all granted\n</If>\n<Else>\nRequire all denied\n</Else>\n</Location>\n");
    for (path, field) in [("/c.php/maxage", "X-Key: sesame\r\n"), ("/c.php/expires", "Cookie: staff=1\r\n")] {
        let insider = s.get_with(path, field);
        assert_eq!(insider.status, 200, "{path}: {}", insider.text());
        let anonymous = s.get(path);
        assert_eq!(anonymous.status, 403, "{path}: {} {}", cache_status(&anonymous), anonymous.text());
        assert!(!anonymous.text().contains("case="), "{path}: {}", anonymous.text());
    }
}

/// The server's children are nobody: the test runs as root (test.sh) or
/// as the server's user, and either way the files below are not theirs to
/// be harmed through.
fn a_cache_directory_others_may_write_is_not_used(mpm: &str) {
    use std::os::unix::fs::PermissionsExt;
    let (_fpm, s) = start(mpm, "");
    let root = s.dir.0.join("cache");
    // A file the server's user may write (another site's data), and a
    // tenant's link to it where the store keeps its counts.
    let victim = s.dir.0.join("other-site-data");
    std::fs::write(&victim, b"precious").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::os::unix::fs::symlink(&victim, root.join(".counters")).unwrap();
    let first = s.get("/c.php/maxage");
    let second = s.get("/c.php/maxage");
    assert_eq!(first.status, 200);
    assert!(!cache_status(&second).starts_with("warren; hit"), "{}", cache_status(&second));
    assert_eq!(runs(&s, "maxage"), 2);
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    let log = s.wait_log("error.log", "any user may write in it");
    assert!(log.contains("any user may write in it"), "{log}");
}

fn stored_answers_are_not_readable_by_other_users(mpm: &str) {
    use std::os::unix::fs::MetadataExt;
    let (_fpm, s) = start(mpm, "");
    // A variant chosen by the request: what a tenant's PHP must not read.
    s.get_with("/c.php/vary", "Accept-Language: fr\r\n");
    assert!(cache_status(&s.get_with("/c.php/vary", "Accept-Language: fr\r\n")).starts_with("warren; hit"));
    let mut seen = 0;
    for shard in std::fs::read_dir(s.dir.0.join("cache")).unwrap().flatten().filter(|d| d.file_name().len() == 2) {
        assert_eq!(shard.metadata().unwrap().mode() & 0o077, 0, "{:?}", shard.path());
        for file in std::fs::read_dir(shard.path()).unwrap().flatten() {
            assert_eq!(file.metadata().unwrap().mode() & 0o077, 0, "{:?}", file.path());
            seen += 1;
        }
    }
    // The vary record and its variant.
    assert!(seen >= 2, "{seen}");
}

/// CacheQuickHandler Off: once a member's request stored the answer of a
/// URL behind Basic credentials, no spelling of that URL gets it to a
/// client without them (they are checked before any hit).
fn other_spellings_do_not_get_a_protected_stored_answer(mpm: &str) {
    let (_fpm, s) = start_protected(mpm, "CacheQuickHandler Off\n");
    assert!(s.get_with("/members/c.php/smaxage", CAROL).text().contains("case=smaxage"));
    assert!(cache_status(&s.get_with("/members/c.php/smaxage", CAROL)).starts_with("warren; hit"));
    let spellings = ["/members/c.php/smaxage", "/members//c.php/smaxage", "/%6dembers/c.php/smaxage", "/members/./c.php/smaxage", "/x/../members/c.php/smaxage", "/members%2fc.php/smaxage", "/members/c.php/smaxage?", "/members/c%2ephp/smaxage", "//members/c.php/smaxage"];
    for target in spellings {
        for extra in ["", CAROL_WRONG, "Authorization: Basic Y2Fyb2w6\r\n", "Range: bytes=0-5\r\n", "Cache-Control: only-if-cached\r\n"] {
            let r = raw_get(&s, target, "localhost", extra);
            assert_ne!(r.status / 100, 2, "{target} {extra:?}: {} {}", r.status, r.text());
            assert!(!r.text().contains("case=smaxage"), "{target} {extra:?}: the member's answer");
        }
    }
    let head = parse_response_for(&s.raw(b"HEAD /members/c.php/smaxage HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"), true).0;
    assert_eq!(head.status, 401);
    assert_eq!(runs(&s, "smaxage"), 1);
}

each_mpm!(
    other_spellings_do_not_get_a_protected_stored_answer,
    vary_star_in_any_vary_field_is_never_served,
    a_repeated_selecting_field_does_not_poison_a_variant,
    an_answer_let_in_by_a_request_field_is_not_stored,
    a_cache_directory_others_may_write_is_not_used,
    stored_answers_are_not_readable_by_other_users,
    a_foreign_host_field_is_its_own_entry,
    unkeyed_forwarding_fields_are_never_stored,
    encoded_paths_do_not_share_entries,
    an_answer_behind_require_is_not_stored,
    a_tenant_cannot_store_for_another_virtual_host,
);
