//! Attacks on the response cache. The attacker is an anonymous client who
//! wants a stored answer of its making served to others (cache poisoning
//! through the Host field, X-Forwarded-Host and other fields not in the
//! key, percent-encoded and NUL path variants), or wants another client's
//! answer: one behind `Require`, or a virtual host's answer served for
//! another (a tenant's PHP or `.htaccess` making its answers long-lived).

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
    for field in ["X-Forwarded-Host: evil.example", "X-Forwarded-Proto: javascript", "X-Original-URL: /admin", "Forwarded: host=evil.example"] {
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

each_mpm!(
    a_foreign_host_field_is_its_own_entry,
    unkeyed_forwarding_fields_are_never_stored,
    encoded_paths_do_not_share_entries,
    an_answer_behind_require_is_not_stored,
    a_tenant_cannot_store_for_another_virtual_host,
);
