//! Apache compiles every pattern with `AP_REG_DOLLAR_ENDONLY` (its default
//! since 2.4.30, after CVE-2017-15715): `$` matches at the very end of the
//! subject only, not also before a final line feed as PCRE2's `$` does, so
//! `<FilesMatch "\.php$">` does not take a file named `x.php` and a line
//! feed for a script. The `pcre2` crate has no builder option for
//! PCRE2_DOLLAR_ENDONLY and PCRE2 no in-pattern setting for it, so each
//! `$` that is an anchor becomes `\z`, which means exactly that; a `$` in
//! a character class, after a backslash, in `\Q...\E` or in a `(?#...)`
//! comment is a literal and stays. A pattern that turns on multi-line mode
//! (`(?m)`) keeps its `$`: PCRE2 ignores DOLLAR_ENDONLY there too.

/// The pattern with its end anchors made `\z`, and the offsets (in the
/// result) of the characters added, to map a compile error's offset back.
pub(crate) fn end_only(pattern: &str) -> (String, Vec<usize>) {
    if sets_multi_line(pattern) {
        return (pattern.to_string(), Vec::new());
    }
    let bytes = pattern.as_bytes();
    let mut out = String::with_capacity(pattern.len() + 4);
    let mut added = Vec::new();
    let mut i = 0;
    let mut class = false;
    while i < bytes.len() {
        let b = bytes[i];
        let from = i;
        i += 1;
        match b {
            b'\\' if bytes.get(i) == Some(&b'Q') => {
                // Quoted to `\E` or the end.
                i = find(bytes, i + 1, b"\\E").map_or(bytes.len(), |e| e + 2);
            }
            // The escaped character, whatever it is (`\$`, `\]`).
            b'\\' => i = (i + 1).min(bytes.len()),
            b'[' if class && matches!(bytes.get(i), Some(b':' | b'.' | b'=')) => {
                // A POSIX class inside a class, `[:alpha:]`, to its own close.
                let close = [bytes[i], b']'];
                i = find(bytes, i + 1, &close).map_or(bytes.len(), |e| e + 2);
            }
            b'[' if !class => {
                class = true;
                // A `]` first (after an optional `^`) is a literal.
                if bytes.get(i) == Some(&b'^') {
                    i += 1;
                }
                if bytes.get(i) == Some(&b']') {
                    i += 1;
                }
            }
            b']' if class => class = false,
            b'(' if !class && bytes[i..].starts_with(b"?#") => {
                i = find(bytes, i, b")").map_or(bytes.len(), |e| e + 1);
            }
            b'$' if !class => {
                out.push_str("\\z");
                added.push(out.len() - 1);
                continue;
            }
            _ => {}
        }
        // Whole characters (a multi-byte one, or one escaped by a backslash).
        while !pattern.is_char_boundary(i) {
            i += 1;
        }
        out.push_str(&pattern[from..i]);
    }
    (out, added)
}

/// Where `needle` starts in `bytes` at or after `from`.
fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|p| from + p)
}

/// Whether an inline option setting turns on multi-line mode: `(?m)`,
/// `(?im:...)`, `(?x-s m)`; options after a `-` are turned off.
fn sets_multi_line(pattern: &str) -> bool {
    pattern.match_indices("(?").any(|(at, _)| {
        let options = pattern[at + 2..].split([')', ':']).next().unwrap_or("");
        let on = options.split('-').next().unwrap_or("");
        on.bytes().all(|c| c.is_ascii_alphabetic() || c == b'^' || c == b' ') && on.contains('m')
    })
}

/// An offset in the pattern [`end_only`] made, in the pattern as written.
pub(crate) fn offset_as_written(at: usize, added: &[usize]) -> usize {
    at - added.iter().filter(|&&a| a < at).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_become_end_only_and_literals_stay() {
        for (pattern, want) in [
            (r"\.php$", r"\.php\z"),
            (r"^(a|b$)$", r"^(a|b\z)\z"),
            (r"a\$b$", r"a\$b\z"),
            (r"[$]x$", r"[$]x\z"),
            (r"[]$]$", r"[]$]\z"),
            (r"[^]$]$", r"[^]$]\z"),
            (r"[[:alpha:]$]+$", r"[[:alpha:]$]+\z"),
            (r"\Q$x\E$", r"\Q$x\E\z"),
            (r"\Q$x", r"\Q$x"),
            (r"(?#cost $5)y$", r"(?#cost $5)y\z"),
            (r"é$", r"é\z"),
            (r"\\$", r"\\\z"),
            (r"\é$", r"\é\z"),
        ] {
            assert_eq!(end_only(pattern).0, want, "{pattern}");
        }
    }

    #[test]
    fn multi_line_patterns_keep_their_anchors() {
        for pattern in [r"(?m)^a$", r"(?im:a$)", r"(?x m)a$"] {
            assert_eq!(end_only(pattern).0, pattern);
        }
        assert_eq!(end_only(r"(?i-m)a$").0, r"(?i-m)a\z");
        assert_eq!(end_only(r"(?:m)$").0, r"(?:m)\z");
    }

    #[test]
    fn offsets_map_back_to_the_pattern_as_written() {
        let (made, added) = end_only("a$b$)");
        assert_eq!(made, r"a\zb\z)");
        // The `)` at 6 in what was made is at 4 as written.
        assert_eq!(offset_as_written(6, &added), 4);
        assert_eq!(offset_as_written(1, &added), 1);
    }
}
