//! URL paths -> safe, normalised paths: percent-decoding and dot-segment
//! removal, with Apache's answers for what must not pass; and
//! [`beneath`], the one way a directive's or a rule's path is put under
//! the root it was mapped under, never above it; [`file_name`], the
//! name of the file a request was mapped to.

use std::borrow::Cow;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

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

/// The last component of a file's path, as [`Path::file_name`] gives it,
/// without parsing the path component by component from its end: a static
/// request asks for its file's name several times (the access-file check,
/// the script check, the type-map check), and `Path::file_name` costs
/// about 190 instructions each time.
pub fn file_name(fs: &Path) -> Option<&[u8]> {
    let bytes = fs.as_os_str().as_bytes();
    match bytes.iter().rposition(|&b| b == b'/') {
        // A plain last component; `.`, `..`, a trailing `/` and a path
        // without `/` are left to `Path::file_name`'s rules.
        Some(i) if i + 1 < bytes.len() && !matches!(&bytes[i + 1..], b"." | b"..") => Some(&bytes[i + 1..]),
        _ => fs.file_name().map(OsStrExt::as_bytes),
    }
}

/// A path as text, as `to_string_lossy` gives it: validated in one pass,
/// where lossy's own scan goes character by character (a PHP request
/// named its paths eight times, 1,500 instructions).
pub fn text(p: &Path) -> Cow<'_, str> {
    text_of(p.as_os_str().as_bytes())
}

/// Bytes as text, as `String::from_utf8_lossy` gives them (see [`text`]).
pub fn text_of(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(valid) => Cow::Borrowed(valid),
        Err(_) => String::from_utf8_lossy(bytes),
    }
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

/// A path that would leave the root it is mapped under.
#[derive(Debug, PartialEq, Eq)]
pub struct Climbs {
    /// The path as it was written (before its dot segments were removed).
    pub written: String,
}

impl std::fmt::Display for Climbs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} goes above the directory it is mapped under", self.written)
    }
}

/// `rel` under `root`, its dot segments removed as RFC 3986 5.2.4 removes
/// them from a URL: a `..` takes back the segment before it and may never
/// take back `root` itself. `rel` is a path as a directive, an alias target
/// or a rewrite rule wrote it (already decoded; a leading `/` is relative to
/// `root` too). A trailing slash is kept, as a URL's is.
///
/// Lexical removal is what makes the kernel's resolution safe here: with no
/// `..` left, only a symbolic link can lead elsewhere, and links are what
/// the Options (FollowSymLinks, SymLinksIfOwnerMatch) rule on.
pub fn beneath(root: &Path, rel: &[u8]) -> Result<PathBuf, Climbs> {
    let climbs = || Climbs { written: format!("{}/{}", root.display(), String::from_utf8_lossy(rel).trim_start_matches('/')) };
    if rel.contains(&0) {
        return Err(climbs());
    }
    // Built in place, in one buffer (every request maps its URL here):
    // each segment kept goes on the end, a `..` takes the last one off.
    let root = root.as_os_str().as_bytes();
    let mut out = Vec::with_capacity(root.len() + rel.len() + 1);
    out.extend_from_slice(root);
    let mut kept = 0usize;
    let mut trailing = false;
    for seg in rel.split(|&b| b == b'/') {
        trailing = false;
        match seg {
            b"" | b"." => trailing = true,
            b".." => {
                kept = kept.checked_sub(1).ok_or_else(climbs)?;
                // Back to the separator before the last segment; the first
                // after a root ending in `/` had none of its own.
                let cut = out[root.len()..].iter().rposition(|&b| b == b'/').map_or(root.len(), |i| root.len() + i);
                out.truncate(cut);
                trailing = true;
            }
            _ => {
                if out.last() != Some(&b'/') {
                    out.push(b'/');
                }
                out.extend_from_slice(seg);
                kept += 1;
            }
        }
    }
    // `/` names the root as a directory; nothing at all names it as it is
    // (an Alias of a single file).
    if trailing && !rel.is_empty() && out.last() != Some(&b'/') {
        out.push(b'/');
    }
    Ok(PathBuf::from(OsString::from_vec(out)))
}

/// `candidate`, a URL relative to `base` (a URL path) or absolute (from
/// `/`), resolved and normalised: what DirectoryIndex and FallbackResource
/// values name, as Apache's subrequests read them. None when it climbs
/// above `/` or does not normalise.
pub fn resolve_reference(base: &[u8], candidate: &[u8]) -> Option<Vec<u8>> {
    let mut joined = if candidate.starts_with(b"/") {
        Vec::new()
    } else {
        let dir_end = base.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
        base[..dir_end].to_vec()
    };
    if joined.is_empty() && !candidate.starts_with(b"/") {
        joined.push(b'/');
    }
    joined.extend_from_slice(candidate);
    // Directive values are text, not URLs: a `%` in one is itself.
    let escaped: Vec<u8> = joined.iter().flat_map(|&b| if b == b'%' { b"%25".to_vec() } else { vec![b] }).collect();
    normalize(&escaped).ok()
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

    #[test]
    fn text_is_what_lossy_gives() {
        use std::ffi::OsStr;
        for bytes in [&b""[..], b"/srv/www/index.php", "/srv/caf\u{e9}/\u{1f600}.php".as_bytes(), b"/srv/bad\xff\xfe/x.php", b"\xc3", b"ok\xe2\x82"] {
            assert_eq!(text_of(bytes), String::from_utf8_lossy(bytes), "{bytes:?}");
            let p = Path::new(OsStr::from_bytes(bytes));
            assert_eq!(text(p), p.to_string_lossy(), "{bytes:?}");
        }
    }

    #[test]
    fn file_name_is_path_file_name() {
        for p in ["/srv/www/index.html", "/srv/www/", "/srv/www/.", "/srv/www/..", "/srv/www//", "/srv/www/./a.txt", "/srv/www/.ht", "/", "", "a", ".", "..", "a/b", "/a/b/.", "/a/b/../", "/x/.html", "/x/a.b.c"] {
            assert_eq!(file_name(Path::new(p)), Path::new(p).file_name().map(OsStrExt::as_bytes), "{p}");
        }
        assert_eq!(file_name(Path::new(std::ffi::OsStr::from_bytes(b"/d/\xff.html"))), Some(&b"\xff.html"[..]));
    }

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
    fn beneath_a_root() {
        let b = |rel: &str| beneath(Path::new("/srv/a"), rel.as_bytes()).map(|p| p.to_string_lossy().into_owned());
        assert_eq!(b("index.html").unwrap(), "/srv/a/index.html");
        assert_eq!(b("/x/./y//z").unwrap(), "/srv/a/x/y/z");
        assert_eq!(b("x/../y").unwrap(), "/srv/a/y");
        assert_eq!(b("dir/").unwrap(), "/srv/a/dir/");
        assert_eq!(b("").unwrap(), "/srv/a");
        assert_eq!(b("/").unwrap(), "/srv/a/");
        assert_eq!(b("x/..").unwrap(), "/srv/a/");
        assert!(b("..").is_err());
        assert!(b("../../b/config.php").is_err());
        assert!(b("/../b/secret.txt").is_err());
        assert!(b("x/../../a2/f").is_err(), "a sibling whose name starts with the root's");
        assert!(b("files/../../../../../etc/passwd").is_err());
        assert_eq!(b("..\\..\\etc").unwrap(), "/srv/a/..\\..\\etc", "a backslash is a character of a name on Linux");
        assert!(beneath(Path::new("/srv/a"), b"x\0y").is_err(), "NUL");
        assert_eq!(beneath(Path::new("/"), b"etc/passwd").unwrap(), Path::new("/etc/passwd"));
        assert_eq!(beneath(Path::new("/"), b"a/b/../../c").unwrap(), Path::new("/c"));
        assert!(beneath(Path::new("/"), b"a/../..").is_err());
        let r = |rel: &str| beneath(Path::new("/srv/a/"), rel.as_bytes()).map(|p| p.to_string_lossy().into_owned());
        assert_eq!(r("x/../y").unwrap(), "/srv/a/y", "a root ending in /");
        assert_eq!(r("x/..").unwrap(), "/srv/a/");
        assert_eq!(r("x/y/../z/").unwrap(), "/srv/a/x/z/");
        assert_eq!(r("").unwrap(), "/srv/a/");
        assert!(r("x/../..").is_err());
        assert_eq!(b("a/b/c/../../d/./e/..").unwrap(), "/srv/a/a/d/");
    }

    #[test]
    fn references_resolved() {
        let r = |base: &str, c: &str| resolve_reference(base.as_bytes(), c.as_bytes()).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(r("/sub/", "index.php").unwrap(), "/sub/index.php");
        assert_eq!(r("/sub/page", "index.php").unwrap(), "/sub/index.php");
        assert_eq!(r("/sub/", "/index.php").unwrap(), "/index.php");
        assert_eq!(r("/x/y/", "../../b/config.php").unwrap(), "/b/config.php");
        assert_eq!(r("/sub/", "../../b/config.php"), None);
        assert_eq!(r("/", "../../../../../etc/passwd"), None);
        assert_eq!(r("/", "/../b/secret.txt"), None);
        assert_eq!(r("/", "a%2fb").unwrap(), "/a%2fb", "a directive's % is a character, not an escape");
    }

    #[test]
    fn encoding() {
        assert_eq!(encode(b"/a b/\xc3\xa9?#"), "/a%20b/%C3%A9%3F%23");
        assert_eq!(html_escape("<a href=\"x\">&"), "&lt;a href=&quot;x&quot;&gt;&amp;");
    }
}
