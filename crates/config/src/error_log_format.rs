//! ErrorLogFormat, compiled as Apache's core.c parses it: items, literal
//! strings (a space that is not escaped starts a new field), and the
//! `% ` field separator. An item with no value (a message without a client)
//! removes its whole field, unless `-` asks for a hyphen; a digit (`%7F`)
//! shows the item only for messages of that level or more verbose.

/// What one item writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorLogPart {
    Literal(String),
    /// `%t` (`Sun Nov 22 08:58:27 2026`), `%{u}t` (with microseconds),
    /// `%{c}t` (`2026-11-22 08:58:27`), `%{cu}t`.
    Time { compact: bool, micros: bool },
    /// `%l`.
    Level,
    /// `%P`.
    Pid,
    /// `%T`, `%{g}T`: the thread's id (the kernel's).
    Tid,
    /// `%a`, `%{c}a`: the client's address and port.
    Client,
    /// `%m`: the module; warren's messages are all core's.
    Module,
    /// `%M`.
    Message,
    /// Items Apache fills from what warren does not have (`%E` APR status,
    /// `%F` C source file, `%L` log id, `%{...}i` request header, `%v`):
    /// never a value, so their field is left out as Apache leaves it.
    Unavailable,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorLogItem {
    pub part: ErrorLogPart,
    /// A field begins here (`% `, or a literal that begins with a space).
    pub field_start: bool,
    /// `%-x`: `-` where there is no value.
    pub hyphen: bool,
    /// `%7x`: shown for messages of this level (0 emerg ... 7 debug, 8+
    /// trace) or more verbose only.
    pub min_level: u8,
}

/// Apache's default ErrorLogFormat, less what warren has no value for.
pub const DEFAULT: &str = "[%{u}t] [%-m:%l] [pid %P:tid %T] [client\\ %a] %M";

/// Compiles `format`; the error says which escape is wrong.
pub fn compile(format: &str) -> Result<Vec<ErrorLogItem>, String> {
    let mut items = Vec::new();
    let mut rest = format;
    let mut seen_message = false;
    while !rest.is_empty() {
        let (item, after) = item(rest)?;
        seen_message |= item.part == ErrorLogPart::Message;
        items.push(item);
        rest = after;
    }
    if !seen_message {
        return Err(format!("ErrorLogFormat \"{format}\" has no %M: the message would not be logged"));
    }
    Ok(items)
}

fn item(s: &str) -> Result<(ErrorLogItem, &str), String> {
    let mut it = ErrorLogItem { part: ErrorLogPart::Unavailable, field_start: false, hyphen: false, min_level: 0 };
    let Some(mut s) = s.strip_prefix('%') else {
        it.field_start = s.starts_with(' ');
        let (literal, after) = literal(s);
        it.part = ErrorLogPart::Literal(literal);
        return Ok((it, after));
    };
    if let Some(after) = s.strip_prefix(' ') {
        // `% `: a field separator before the next item.
        let (mut next, after) = item(after)?;
        next.field_start = true;
        return Ok((next, after));
    }
    if let Some(after) = s.strip_prefix('%') {
        it.part = ErrorLogPart::Literal("%".into());
        return Ok((it, after));
    }
    let mut arg = "";
    loop {
        let Some(c) = s.chars().next() else { return Err("ErrorLogFormat: a % item runs off the end of the format".into()) };
        s = &s[c.len_utf8()..];
        match c {
            '{' => {
                let end = s.find('}').ok_or("ErrorLogFormat: %{ without }")?;
                arg = &s[..end];
                s = &s[end + 1..];
            }
            '-' => it.hyphen = true,
            '+' => return Err("ErrorLogFormat: the '+' flag cannot be used in the main error log format".into()),
            '0'..='9' => {
                let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
                let level: u32 = format!("{c}{}", &s[..digits]).parse().map_err(|_| "ErrorLogFormat: a level too large")?;
                if level > 15 {
                    return Err("ErrorLogFormat: the specified loglevel modifier is out of range".into());
                }
                it.min_level = level as u8;
                s = &s[digits..];
            }
            _ => {
                it.part = match (c, arg) {
                    ('t', "") => ErrorLogPart::Time { compact: false, micros: false },
                    ('t', "u") => ErrorLogPart::Time { compact: false, micros: true },
                    ('t', "c") => ErrorLogPart::Time { compact: true, micros: false },
                    ('t', "cu" | "uc") => ErrorLogPart::Time { compact: true, micros: true },
                    ('l', _) => ErrorLogPart::Level,
                    ('P', _) => ErrorLogPart::Pid,
                    ('T', _) => ErrorLogPart::Tid,
                    ('a', "" | "c") => ErrorLogPart::Client,
                    ('m', _) => ErrorLogPart::Module,
                    ('M', _) => ErrorLogPart::Message,
                    ('E' | 'F' | 'L' | 'i' | 'v' | 'V' | 'n' | 'e' | 'k' | 'A', _) => ErrorLogPart::Unavailable,
                    ('t', other) => return Err(format!("ErrorLogFormat: %{{{other}}}t: only %t, %{{u}}t, %{{c}}t and %{{cu}}t are supported")),
                    _ => return Err(format!("ErrorLogFormat: unrecognized error log format directive %{c}")),
                };
                return Ok((it, s));
            }
        }
    }
}

/// A literal up to the next `%` or unescaped non-leading space, with
/// Apache's escapes (`\ `, `\t`, `\n`, `\r`).
fn literal(s: &str) -> (String, &str) {
    let mut out = String::new();
    let mut at_start = true;
    let mut chars = s.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        if c == '%' || (c == ' ' && !at_start) {
            return (out, &s[i..]);
        }
        chars.next();
        if c != '\\' {
            at_start &= c == ' ';
            out.push(c);
            continue;
        }
        match chars.next() {
            Some((_, 't')) => out.push('\t'),
            Some((_, 'n')) => out.push('\n'),
            Some((_, 'r')) => out.push('\r'),
            Some((_, other)) => out.push(other),
            None => out.push('\\'),
        }
    }
    (out, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apache_default_format() {
        let items = compile(DEFAULT).unwrap();
        let parts: Vec<&ErrorLogPart> = items.iter().map(|i| &i.part).collect();
        let lit = |s: &str| ErrorLogPart::Literal(s.into());
        assert_eq!(parts[..4], [&lit("["), &ErrorLogPart::Time { compact: false, micros: true }, &lit("]"), &lit(" [")]);
        assert!(items[3].field_start);
        assert!(items[4].hyphen && items[4].part == ErrorLogPart::Module);
        // `[client\ %a]`: the escaped space keeps `[client ` one literal.
        let client = items.iter().position(|i| i.part == ErrorLogPart::Client).unwrap();
        assert_eq!(items[client - 1].part, lit(" [client "));
        assert!(items[client - 1].field_start);
    }

    #[test]
    fn flags_and_errors() {
        let items = compile("%7F: %-a% %{cu}t %%%M").unwrap();
        assert_eq!(items[0].min_level, 7);
        assert!(items[2].field_start && items[3].hyphen && items[3].part == ErrorLogPart::Client);
        assert!(items[4].field_start && items[4].part == ErrorLogPart::Time { compact: true, micros: true });
        assert!(compile("%t %l").unwrap_err().contains("no %M"));
        assert!(compile("%X %M").unwrap_err().contains("%X"));
        assert!(compile("%+a %M").is_err());
        assert!(compile("%{u}").is_err());
    }
}
