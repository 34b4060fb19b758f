//! The escaping mod_rewrite applies: back-references under `[B]` (as PHP's
//! urlencode, a space becoming `+`), redirect URLs (Apache's
//! `ap_escape_uri`, unless `[NE]`), and `int:escape` / `int:unescape`.

/// What `ap_escape_uri` leaves as it is in a path.
fn path_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"$-_.+!*'(),:;@&=/~".contains(&b)
}

/// `%xx` for `b`, in lower case as Apache writes it.
fn hex(b: u8) -> [u8; 3] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    [b'%', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]
}

/// Apache's `ap_escape_uri`: every byte but the path-safe ones as `%xx`
/// (a URL path's bytes, UTF-8 or not).
pub fn escape_uri(s: impl AsRef<[u8]>) -> String {
    let s = s.as_ref();
    let mut out = String::with_capacity(s.len());
    for &b in s {
        if path_safe(b) {
            out.push(b as char);
        } else {
            out.extend(hex(b).map(char::from));
        }
    }
    out
}

/// A back-reference under `[B]`: with no list, every byte but letters,
/// digits and `_` escaped; with `[B=list]` only those listed; never those
/// of `[BNE=list]`. Bytes, as the back-reference's: one left as it is
/// stays the byte it was, UTF-8 or not.
pub fn escape_backref(s: &[u8], only: Option<&str>, never: Option<&str>, no_plus: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * 3);
    for &b in s {
        let chosen = only.is_none_or(|l| l.as_bytes().contains(&b)) && never.is_none_or(|l| !l.as_bytes().contains(&b));
        if !chosen || b.is_ascii_alphanumeric() || b == b'_' {
            out.push(b);
        } else if b == b' ' && !no_plus {
            out.push(b'+');
        } else {
            out.extend_from_slice(&hex(b));
        }
    }
    out
}

/// `%xx` sequences decoded; a `%` not followed by two hex digits stays.
pub fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_apache() {
        assert_eq!(escape_uri("/a b/ü?x=%"), "/a%20b/%c3%bc%3fx=%25");
        assert_eq!(escape_backref(b"a b&c/d", None, None, false), b"a+b%26c%2fd");
        assert_eq!(escape_backref(b"a b&c/d", None, None, true), b"a%20b%26c%2fd");
        assert_eq!(escape_backref(b"a b&c/d", Some("&"), None, false), b"a b%26c/d");
        assert_eq!(escape_backref(b"a b&c/d", None, Some("/"), false), b"a+b%26c/d");
        assert_eq!(unescape("a%20b%zz%4"), "a b%zz%4");
        assert_eq!(unescape("%41"), "A");
        assert_eq!(escape_uri(b"/caf\xe9/a\xffb"), "/caf%e9/a%ffb");
        assert_eq!(escape_backref(b"caf\xe9/", None, None, false), b"caf%e9%2f");
        assert_eq!(escape_backref(b"caf\xe9 &", Some("&"), None, false), b"caf\xe9 %26", "a byte not listed stays itself");
    }
}
