//! Apache compiles every pattern with `AP_REG_DOLLAR_ENDONLY` (its default
//! since 2.4.30, after CVE-2017-15715): `$` matches at the very end of the
//! subject only, not also before a final line feed as PCRE2's `$` does, so
//! `<FilesMatch "\.php$">` does not take a file named `x.php` and a line
//! feed for a script. The `pcre2` crate has no builder option for
//! PCRE2_DOLLAR_ENDONLY and PCRE2 no in-pattern setting for it, so each
//! `$` that is an anchor becomes `\z`, which means exactly that; a `$` in
//! a character class, after a backslash, in `\Q...\E` or in a `(?#...)`
//! comment is a literal and stays. Where multi-line mode is on (`(?m)`,
//! `(?m:...)`, to the end of the group that set it) `$` stays: PCRE2
//! ignores DOLLAR_ENDONLY there too. In extended mode (`(?x)`) a `#` starts
//! a comment to the end of the line.

/// The options the scan follows, as a group has them.
#[derive(Clone, Copy, Default)]
struct Options {
    multi_line: bool,
    extended: bool,
}

/// The pattern with its end anchors made `\z`, and the offsets (in the
/// result) of the characters added, to map a compile error's offset back.
pub(crate) fn end_only(pattern: &str) -> (String, Vec<usize>) {
    let bytes = pattern.as_bytes();
    let mut out = String::with_capacity(pattern.len() + 4);
    let mut added = Vec::new();
    let mut i = 0;
    let mut class = false;
    let mut options = Options::default();
    // The options of each group around the one the scan is in.
    let mut outer: Vec<Options> = Vec::new();
    while i < bytes.len() {
        let b = bytes[i];
        let from = i;
        i += 1;
        match b {
            b'\\' if bytes.get(i) == Some(&b'Q') => {
                // Quoted to `\E` or the end.
                i = find(bytes, i + 1, b"\\E").map_or(bytes.len(), |e| e + 2);
            }
            // `\c` and the character it makes a control character of (`\c$` is `d`).
            b'\\' if bytes.get(i) == Some(&b'c') => i = (i + 2).min(bytes.len()),
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
            _ if class => {}
            b'(' if bytes[i..].starts_with(b"?#") || verb_with_name(&bytes[i..]) => {
                // A comment, or a verb's name (`(*MARK:$)`): nothing in it is an anchor.
                i = find(bytes, i, b")").map_or(bytes.len(), |e| e + 1);
            }
            b'(' => match option_setting(&bytes[i..]) {
                // `(?m)`: the rest of the group around it.
                Some((set, len)) if bytes[i + len - 1] == b')' => {
                    options = set(options);
                    i += len;
                }
                // `(?m:...)`: this group.
                Some((set, len)) => {
                    outer.push(options);
                    options = set(options);
                    i += len;
                }
                None => outer.push(options),
            },
            b')' => options = outer.pop().unwrap_or(options),
            b'#' if options.extended => i = find(bytes, i, b"\n").unwrap_or(bytes.len()),
            b'$' if !options.multi_line => {
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

/// Whether what follows a `(` is a backtracking verb with a name,
/// `*MARK:`, `*:`, `*SKIP:` (upper case; `*pla:` is an assertion).
fn verb_with_name(after_paren: &[u8]) -> bool {
    after_paren.first() == Some(&b'*') && after_paren[1..].iter().find(|c| !c.is_ascii_uppercase()) == Some(&b':')
}

/// What follows a `(` when it is an inline option setting, `?im)`,
/// `?x-m:`, `?^s)`: how it changes the options, and its length to the
/// `)` or `:` included.
fn option_setting(after_paren: &[u8]) -> Option<(impl Fn(Options) -> Options, usize)> {
    let rest = after_paren.strip_prefix(b"?")?;
    let len = rest.iter().position(|&c| c == b')' || c == b':')?;
    let letters = &rest[..len];
    if !letters.iter().all(|&c| c.is_ascii_alphabetic() || c == b'-' || c == b'^') {
        return None;
    }
    let letters = letters.to_vec();
    let set = move |mut options: Options| {
        let mut on = true;
        for &c in &letters {
            match c {
                // `(?^)`: back to the defaults first.
                b'^' => options = Options::default(),
                b'-' => on = false,
                b'm' => options.multi_line = on,
                b'x' => options.extended = on,
                _ => {}
            }
        }
        options
    };
    Some((set, len + 2))
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
        for pattern in [r"(?m)^a$", r"(?im:a$)", r"(?m)(a)$", r"(?^m)a$"] {
            assert_eq!(end_only(pattern).0, pattern);
        }
        assert_eq!(end_only(r"(?i-m)a$").0, r"(?i-m)a\z");
        assert_eq!(end_only(r"(?:m)$").0, r"(?:m)\z");
    }

    /// Each as PCRE2 compiles it with DOLLAR_ENDONLY (checked with PHP's
    /// `preg_match` and its `D` modifier): a setting lasts to the end of
    /// its group, across `|`, and only from where it stands.
    #[test]
    fn multi_line_mode_lasts_to_the_end_of_its_group() {
        for (pattern, want) in [
            (r"(?:(?m)a$)|b$", r"(?:(?m)a$)|b\z"),
            (r"(?m:a)$", r"(?m:a)\z"),
            (r"(?m)(?-m:a$)", r"(?m)(?-m:a\z)"),
            (r"(?m)a$(?-m)$", r"(?m)a$(?-m)\z"),
            (r"(?m)a(?-m)|b$", r"(?m)a(?-m)|b\z"),
            (r"(?m)(?^)a$", r"(?m)(?^)a\z"),
            (r"a$(?m)", r"a\z(?m)"),
            // Not option settings: a class, a quote, a comment.
            (r"[(?m)]$", r"[(?m)]\z"),
            (r"\Q(?m)\E$", r"\Q(?m)\E\z"),
            (r"(?x)a$ # (?m)", r"(?x)a\z # (?m)"),
        ] {
            assert_eq!(end_only(pattern).0, want, "{pattern}");
        }
    }

    #[test]
    fn comments_verbs_and_control_characters_hold_no_anchor() {
        for (pattern, want) in [
            // In extended mode `#` comments to the end of the line; a `#` in a class is one.
            (r"(?x) a $ # [", r"(?x) a \z # ["),
            ("(?x)a # $\n$", "(?x)a # $\n\\z"),
            (r"(?x)[#]$", r"(?x)[#]\z"),
            (r"a#$", r"a#\z"),
            // `\c$` is the character `d`.
            (r"\c$x$", r"\c$x\z"),
            (r"a(*MARK:$)$", r"a(*MARK:$)\z"),
            // An alpha assertion holds a pattern.
            (r"(*pla:a$)a", r"(*pla:a\z)a"),
        ] {
            assert_eq!(end_only(pattern).0, want, "{pattern}");
        }
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
