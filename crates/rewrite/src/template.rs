//! A TestString, Substitution or flag value, compiled once into pieces as
//! Apache's `do_expand` reads it: `\c` is the character c; `$N` a group of
//! the rule's pattern and `%N` one of the last matched condition's;
//! `%{NAME}` a server variable (`%{HTTP:header}`, `%{ENV:var}` ...);
//! `${map:key|default}` a RewriteMap lookup. A `%{` or `${` without its
//! closing brace is literal text, as in Apache.

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    Literal(String),
    /// `$N`: group N of the rule's match.
    RuleGroup(usize),
    /// `%N`: group N of the last condition that matched.
    CondGroup(usize),
    /// `%{NAME}`, as written (case is decided at lookup).
    Variable(String),
    /// `${map:key|default}`.
    Map { name: String, key: Template, default: Option<Template> },
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Template {
    pub pieces: Vec<Piece>,
}

impl Template {
    pub fn parse(text: &str) -> Template {
        let mut pieces = Vec::new();
        let mut lit = String::new();
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            match c {
                b'\\' => {
                    // A trailing backslash stays; otherwise the next character is literal.
                    match text[i + 1..].chars().next() {
                        Some(next) => {
                            lit.push(next);
                            i += 1 + next.len_utf8();
                        }
                        None => {
                            lit.push('\\');
                            i += 1;
                        }
                    }
                    continue;
                }
                b'$' | b'%' if b.get(i + 1) == Some(&b'{') => {
                    let Some(close) = closing_curly(&text[i + 2..]) else {
                        lit.push_str(&text[i..i + 2]);
                        i += 2;
                        continue;
                    };
                    let inner = &text[i + 2..i + 2 + close];
                    if c == b'%' {
                        flush(&mut lit, &mut pieces);
                        pieces.push(Piece::Variable(inner.to_string()));
                    } else if let Some(colon) = char_in_curlies(inner, b':') {
                        let (name, rest) = (&inner[..colon], &inner[colon + 1..]);
                        let (key, default) = match char_in_curlies(rest, b'|') {
                            Some(bar) => (&rest[..bar], Some(Template::parse(&rest[bar + 1..]))),
                            None => (rest, None),
                        };
                        flush(&mut lit, &mut pieces);
                        pieces.push(Piece::Map { name: name.to_string(), key: Template::parse(key), default });
                    } else {
                        lit.push_str(&text[i..i + 2]);
                        i += 2;
                        continue;
                    }
                    i += 2 + close + 1;
                    continue;
                }
                b'$' | b'%' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                    flush(&mut lit, &mut pieces);
                    let n = (b[i + 1] - b'0') as usize;
                    pieces.push(if c == b'$' { Piece::RuleGroup(n) } else { Piece::CondGroup(n) });
                    i += 2;
                    continue;
                }
                _ => {}
            }
            let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
            lit.push(ch);
            i += ch.len_utf8();
        }
        flush(&mut lit, &mut pieces);
        Template { pieces }
    }

    /// The text when there is nothing to expand.
    pub fn as_literal(&self) -> Option<&str> {
        match self.pieces.as_slice() {
            [] => Some(""),
            [Piece::Literal(s)] => Some(s),
            _ => None,
        }
    }

    /// The maps the template names, for a check of the configuration.
    pub fn map_names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for p in &self.pieces {
            if let Piece::Map { name, key, default } = p {
                out.push(name.as_str());
                out.extend(key.map_names());
                if let Some(d) = default {
                    out.extend(d.map_names());
                }
            }
        }
        out
    }
}

fn flush(lit: &mut String, pieces: &mut Vec<Piece>) {
    if !lit.is_empty() {
        pieces.push(Piece::Literal(std::mem::take(lit)));
    }
}

/// The index of the `}` that closes a `{` just before `s`, nesting counted.
fn closing_curly(s: &str) -> Option<usize> {
    let mut depth = 1;
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The first `c` of `s` outside nested braces.
fn char_in_curlies(s: &str, c: u8) -> Option<usize> {
    let mut depth = 0;
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' => depth -= 1,
            _ if b == c && depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use Piece::*;

    #[test]
    fn pieces_as_apache_reads_them() {
        let t = Template::parse(r"/a/$1?x=%2&h=%{HTTP:Host}\$3");
        assert_eq!(
            t.pieces,
            vec![Literal("/a/".into()), RuleGroup(1), Literal("?x=".into()), CondGroup(2), Literal("&h=".into()), Variable("HTTP:Host".into()), Literal("$3".into())]
        );
        assert_eq!(Template::parse("-").as_literal(), Some("-"));
    }

    #[test]
    fn maps_with_defaults_and_nesting() {
        let t = Template::parse("${lower:%{HTTP_HOST}|${up:x}}");
        let [Map { name, key, default: Some(d) }] = t.pieces.as_slice() else { panic!("{t:?}") };
        assert_eq!(name, "lower");
        assert_eq!(key.pieces, vec![Variable("HTTP_HOST".into())]);
        assert_eq!(d.map_names(), vec!["up"]);
    }

    #[test]
    fn unclosed_or_nameless_braces_are_text() {
        assert_eq!(Template::parse("%{HTTP").as_literal(), Some("%{HTTP"));
        assert_eq!(Template::parse("${nomap}").as_literal(), Some("${nomap}"));
        assert_eq!(Template::parse("50%").as_literal(), Some("50%"));
        assert_eq!(Template::parse("a\\").as_literal(), Some("a\\"));
    }
}
