//! How `<Directory>`, `<Files>` and `<Location>` sections, ServerAlias
//! and `Require ip` match what a request names; no state.

/// Whether `<Directory dir>` can hold files under `root`: it contains the
/// root, or lies below it.
pub(crate) fn directories_overlap(dir: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    let below = dir.strip_prefix(root).is_some_and(|rest| rest.starts_with('/'));
    dir_contains(dir.trim_end_matches('/'), root) || below
}

/// `<Directory /a/b>` applies to `/a/b` and everything below it.
pub(crate) fn dir_contains(dir: &str, path: &str) -> bool {
    if dir.contains(['*', '?', '[']) {
        return glob::Pattern::new(dir).is_ok_and(|p| ancestors(path).any(|a| p.matches(a)));
    }
    dir.is_empty() || path == dir || (path.starts_with(dir) && path.as_bytes().get(dir.len()) == Some(&b'/'))
}

pub(crate) fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.char_indices().filter(|(_, c)| *c == '/').map(move |(i, _)| if i == 0 { "/" } else { &path[..i] }).chain(std::iter::once(path))
}

/// [`ancestors`] of a path's bytes, which need not be UTF-8: as many, in
/// the same order (a `/` is the same byte whether or not the rest reads as
/// UTF-8).
pub(crate) fn ancestors_bytes(path: &[u8]) -> impl Iterator<Item = &[u8]> {
    path.iter().enumerate().filter(|&(_, &b)| b == b'/').map(move |(i, _)| if i == 0 { &b"/"[..] } else { &path[..i] }).chain(std::iter::once(path))
}

/// Apache's `<Location /x>` matches `/x`, `/x/...`, and (as a plain prefix)
/// `/xyz` unless the prefix ends in a slash; we require a segment boundary,
/// which is what users expect from it.
pub(crate) fn location_matches(prefix: &str, url: &str) -> bool {
    let p = prefix.trim_end_matches('/');
    p.is_empty() || url == p || (url.starts_with(p) && url.as_bytes().get(p.len()) == Some(&b'/'))
}

/// Shell-style `*` and `?` matching, for ServerAlias and `<Files>`.
pub fn wildcard_match(pattern: &str, name: &str) -> bool {
    if !pattern.contains(['*', '?', '[']) {
        return pattern == name;
    }
    glob::Pattern::new(pattern).is_ok_and(|p| p.matches(name))
}

pub(crate) use warren_config::values::ip_in;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors_of_bytes_pair_with_those_of_the_text() {
        let path = b"/srv/d\xe9/x\xff";
        let text = String::from_utf8_lossy(path);
        let pairs: Vec<_> = ancestors(&text).zip(ancestors_bytes(path)).map(|(t, b)| (t.to_string(), b.to_vec())).collect();
        assert_eq!(pairs.len(), ancestors(&text).count());
        assert_eq!(pairs.len(), ancestors_bytes(path).count());
        assert_eq!(pairs[0], ("/".to_string(), b"/".to_vec()));
        assert_eq!(pairs[2], ("/srv/d\u{fffd}".to_string(), b"/srv/d\xe9".to_vec()));
        assert_eq!(pairs[3].1, path.to_vec());
    }

    #[test]
    fn directory_and_location_matching() {
        assert!(dir_contains("/srv/www", "/srv/www/a/b.html"));
        assert!(dir_contains("/srv/www", "/srv/www"));
        assert!(!dir_contains("/srv/www", "/srv/wwwx/a"));
        assert!(dir_contains("/srv/*/htdocs", "/srv/site/htdocs/x.html"));
        assert!(location_matches("/status", "/status"));
        assert!(location_matches("/status/", "/status/x"));
        assert!(!location_matches("/status", "/statusx"));
        assert!(directories_overlap("/srv", "/srv/a/htdocs"));
        assert!(directories_overlap("/srv/a/htdocs/", "/srv/a/htdocs"));
        assert!(directories_overlap("/srv/a/htdocs/blog", "/srv/a/htdocs"));
        assert!(directories_overlap("/srv/*/htdocs", "/srv/a/htdocs"));
        assert!(!directories_overlap("/srv/b", "/srv/a/htdocs"));
        assert!(!directories_overlap("/srv/a/htdocsx", "/srv/a/htdocs"));
        assert!(wildcard_match("*.example.org", "a.example.org"));
        assert!(!wildcard_match("*.example.org", "example.com"));
    }

    #[test]
    fn ip_networks() {
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        assert!(ip_in(ip("10.1.2.3"), ip("10.0.0.0"), 8));
        assert!(!ip_in(ip("11.1.2.3"), ip("10.0.0.0"), 8));
        assert!(ip_in(ip("::ffff:127.0.0.1"), ip("127.0.0.0"), 8));
        assert!(ip_in(ip("1.2.3.4"), ip("0.0.0.0"), 0));
    }
}
