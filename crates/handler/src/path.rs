//! URL paths -> safe, normalised paths: percent-decoding and dot-segment
//! removal, with Apache's answers for what must not pass.

/// Why a URL path was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum PathError {
    /// Malformed (bad `%` escape, or `..` above the root): 400.
    BadRequest(&'static str),
    /// Encoded `/` or NUL (AllowEncodedSlashes Off): 404, as Apache answers.
    NotFound(&'static str),
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Decodes `%XX` escapes and removes `.`, `..` and empty segments. The result
/// starts with `/` and ends with `/` when the input did (or ended in a dot
/// segment), so `/a/b/..` is `/a/`.
pub fn normalize(raw: &[u8]) -> Result<Vec<u8>, PathError> {
    if raw.first() != Some(&b'/') {
        return Err(PathError::BadRequest("path does not start with /"));
    }
    let mut decoded = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'%' {
            let (Some(h), Some(l)) = (raw.get(i + 1).and_then(|&c| hex(c)), raw.get(i + 2).and_then(|&c| hex(c))) else {
                return Err(PathError::BadRequest("invalid %-escape in the URL"));
            };
            let c = h << 4 | l;
            match c {
                0 => return Err(PathError::NotFound("encoded NUL in the URL")),
                b'/' => return Err(PathError::NotFound("encoded slash in the URL (AllowEncodedSlashes Off)")),
                _ => decoded.push(c),
            }
            i += 3;
        } else {
            decoded.push(b);
            i += 1;
        }
    }
    let mut out: Vec<u8> = Vec::with_capacity(decoded.len());
    let mut stack: Vec<usize> = Vec::new();
    let mut trailing = false;
    for seg in decoded.split(|&b| b == b'/').skip(1) {
        trailing = false;
        match seg {
            b"" | b"." => trailing = true,
            b".." => {
                let Some(len) = stack.pop() else {
                    return Err(PathError::BadRequest("URL path goes above the document root"));
                };
                out.truncate(len);
                trailing = true;
            }
            _ => {
                stack.push(out.len());
                out.push(b'/');
                out.extend_from_slice(seg);
            }
        }
    }
    if out.is_empty() || trailing {
        out.push(b'/');
    }
    Ok(out)
}

/// Splits a request target into its path and its query (with the `?`, or empty).
pub fn split_query(target: &[u8]) -> (&[u8], &[u8]) {
    match target.iter().position(|&b| b == b'?') {
        Some(i) => target.split_at(i),
        None => (target, &[]),
    }
}

/// The normalised path of a request target, or `/` where it does not
/// normalise: for lookups (LimitRequestBody, ErrorDocument) that must give
/// an answer for any request.
pub fn lookup_url(target: &[u8]) -> Vec<u8> {
    normalize(split_query(target).0).unwrap_or_else(|_| b"/".to_vec())
}

/// Percent-encodes a path for use in a URL (listings, redirects).
pub fn encode(path: &[u8]) -> String {
    let mut s = String::with_capacity(path.len());
    for &b in path {
        if b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// Escapes text for HTML.
pub fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Result<String, PathError> {
        normalize(s.as_bytes()).map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn normalization() {
        assert_eq!(n("/").unwrap(), "/");
        assert_eq!(n("/a//b/./c").unwrap(), "/a/b/c");
        assert_eq!(n("/a/b/../c/").unwrap(), "/a/c/");
        assert_eq!(n("/a/b/..").unwrap(), "/a/");
        assert_eq!(n("/a%20b").unwrap(), "/a b");
        assert_eq!(n("/a/%2e%2e/b").unwrap(), "/b");
    }

    #[test]
    fn refusals() {
        assert_eq!(n("/.."), Err(PathError::BadRequest("URL path goes above the document root")));
        assert!(matches!(n("/%2e%2e/etc/passwd"), Err(PathError::BadRequest(_))));
        assert!(matches!(n("/a/../../etc"), Err(PathError::BadRequest(_))));
        assert!(matches!(n("/a%2fb"), Err(PathError::NotFound(_))));
        assert!(matches!(n("/a%00b"), Err(PathError::NotFound(_))));
        assert!(matches!(n("/a%zz"), Err(PathError::BadRequest(_))));
        assert!(matches!(n("/a%4"), Err(PathError::BadRequest(_))));
        assert!(matches!(n("a"), Err(PathError::BadRequest(_))));
    }

    #[test]
    fn query_split_and_lookup_url() {
        assert_eq!(split_query(b"/a?b=c?d"), (&b"/a"[..], &b"?b=c?d"[..]));
        assert_eq!(split_query(b"/a"), (&b"/a"[..], &b""[..]));
        assert_eq!(lookup_url(b"/x/../y?q"), b"/y");
        assert_eq!(lookup_url(b"/../etc"), b"/");
    }

    #[test]
    fn encoding() {
        assert_eq!(encode(b"/a b/\xc3\xa9?#"), "/a%20b/%C3%A9%3F%23");
        assert_eq!(html_escape("<a href=\"x\">&"), "&lt;a href=&quot;x&quot;&gt;&amp;");
    }
}
