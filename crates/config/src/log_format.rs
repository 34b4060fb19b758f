//! `LogFormat` strings compiled into items, checked when the config is read so
//! that an unknown `%` directive is an error with file and line.

/// One piece of an access log line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogItem {
    Literal(String),
    /// `%h` (no lookups: the address) and `%a`: the client's address, as
    /// RemoteIPHeader may have found it behind proxies.
    RemoteAddr,
    /// `%{c}a` and `%{c}h`: the connection's peer (a proxy, if any; the
    /// address a PROXY protocol header gave).
    PeerAddr,
    /// `%{c}a` / `%{remote}p` style peer port: `%{remote}p`.
    RemotePort,
    /// `%l`: identd is never asked, so always `-`.
    RemoteLogname,
    /// `%u`: no authentication yet, so always `-`.
    RemoteUser,
    /// `%t`: `[22/Nov/2026:08:58:27 +0000]`.
    Time,
    /// `%r`: the request line as received.
    RequestLine,
    /// `%s` / `%<s` / `%>s`.
    Status,
    /// `%b`: body bytes, `-` for none.
    BytesClf,
    /// `%B`: body bytes, `0` for none.
    Bytes,
    /// `%O`: bytes sent, headers included.
    BytesSent,
    /// `%I`: bytes received, request head and body included.
    BytesReceived,
    RequestHeader(String),
    ResponseHeader(String),
    /// `%D` microseconds, `%T` seconds, `%{ms}T` milliseconds.
    Duration(DurationUnit),
    Method,
    UrlPath,
    /// `%q`: `?query` or empty.
    Query,
    Protocol,
    /// `%v` canonical server name, `%V` the name the client asked for.
    ServerName,
    RequestedHost,
    LocalPort,
    LocalAddr,
    Pid,
    /// `%k`: keep-alive requests on this connection before this one.
    KeepAliveCount,
    /// `%X`: `+` kept alive, `-` closed, `X` aborted.
    ConnectionStatus,
    /// `%f`: the file served, `-` if none.
    Filename,
    /// `%{VAR}e`: the request environment's variable, `-` if unset.
    Env(String),
    /// `%{VAR}x` and `%{VAR}c`: mod_ssl's variables (SSL_PROTOCOL,
    /// SSL_CIPHER, ...; HTTPS), `-` on a plain connection.
    Ssl(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DurationUnit {
    Micros,
    Millis,
    Seconds,
}

pub const COMMON: &str = "%h %l %u %t \"%r\" %>s %b";
pub const COMBINED: &str = "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\"";

/// The nicknames Debian's apache2.conf defines, available without a `LogFormat`.
pub const PREDEFINED: &[(&str, &str)] = &[
    ("common", COMMON),
    ("combined", COMBINED),
    ("vhost_combined", "%v:%p %h %l %u %t \"%r\" %>s %O \"%{Referer}i\" \"%{User-Agent}i\""),
    ("referer", "%{Referer}i -> %U"),
    ("agent", "%{User-agent}i"),
];

/// The mod_ssl variables `%{VAR}x` can log.
pub const SSL_LOG_VARS: &[&str] = &["HTTPS", "SSL_PROTOCOL", "SSL_CIPHER", "SSL_CIPHER_USEKEYSIZE", "SSL_CIPHER_ALGKEYSIZE", "SSL_SESSION_RESUMED", "SSL_TLS_SNI"];

pub fn compile(format: &str) -> Result<Vec<LogItem>, String> {
    let mut items = Vec::new();
    let mut literal = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => literal.push('\n'),
                Some('t') => literal.push('\t'),
                Some(other) => literal.push(other),
                None => literal.push('\\'),
            }
            continue;
        }
        if c != '%' {
            literal.push(c);
            continue;
        }
        // Modifiers Apache allows before the letter: `<`, `>`.
        while chars.next_if(|c| *c == '<' || *c == '>').is_some() {}
        let mut arg = None;
        if chars.next_if_eq(&'{').is_some() {
            let mut a = String::new();
            loop {
                match chars.next() {
                    Some('}') => break,
                    Some(ch) => a.push(ch),
                    None => return Err(format!("unterminated %{{ in log format \"{format}\"")),
                }
            }
            arg = Some(a);
        }
        let Some(letter) = chars.next() else {
            return Err(format!("log format \"{format}\" ends with a lone %"));
        };
        let item = match (letter, arg.as_deref()) {
            ('%', None) => {
                literal.push('%');
                continue;
            }
            ('h' | 'a', None) => LogItem::RemoteAddr,
            ('h' | 'a', Some("c")) => LogItem::PeerAddr,
            ('l', None) => LogItem::RemoteLogname,
            ('u', None) => LogItem::RemoteUser,
            ('t', None) => LogItem::Time,
            ('r', None) => LogItem::RequestLine,
            ('s', None) => LogItem::Status,
            ('b', None) => LogItem::BytesClf,
            ('B', None) => LogItem::Bytes,
            ('O', None) => LogItem::BytesSent,
            ('I', None) => LogItem::BytesReceived,
            ('i', Some(h)) => LogItem::RequestHeader(h.to_ascii_lowercase()),
            ('o', Some(h)) => LogItem::ResponseHeader(h.to_ascii_lowercase()),
            ('D', None) => LogItem::Duration(DurationUnit::Micros),
            ('T', None | Some("s")) => LogItem::Duration(DurationUnit::Seconds),
            ('T', Some("ms")) => LogItem::Duration(DurationUnit::Millis),
            ('T', Some("us")) => LogItem::Duration(DurationUnit::Micros),
            ('m', None) => LogItem::Method,
            ('U', None) => LogItem::UrlPath,
            ('q', None) => LogItem::Query,
            ('H', None) => LogItem::Protocol,
            ('v', None) => LogItem::ServerName,
            ('V', None) => LogItem::RequestedHost,
            ('p', None | Some("canonical") | Some("local")) => LogItem::LocalPort,
            ('p', Some("remote")) => LogItem::RemotePort,
            ('A', None) => LogItem::LocalAddr,
            ('P', None | Some("pid")) => LogItem::Pid,
            ('k', None) => LogItem::KeepAliveCount,
            ('X', None) => LogItem::ConnectionStatus,
            ('f', None) => LogItem::Filename,
            ('e', Some(var)) => LogItem::Env(var.to_string()),
            ('x' | 'c', Some(var)) if crate::log_format::SSL_LOG_VARS.contains(&var) => LogItem::Ssl(var.to_string()),
            (l, Some(a)) => return Err(format!("unsupported log format directive %{{{a}}}{l}")),
            (l, None) => return Err(format!("unsupported log format directive %{l}")),
        };
        if !literal.is_empty() {
            items.push(LogItem::Literal(std::mem::take(&mut literal)));
        }
        items.push(item);
    }
    if !literal.is_empty() {
        items.push(LogItem::Literal(literal));
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_compiles() {
        let items = compile(COMBINED).unwrap();
        assert_eq!(items[0], LogItem::RemoteAddr);
        assert!(items.contains(&LogItem::RequestHeader("user-agent".into())));
        assert!(items.contains(&LogItem::Status));
    }

    #[test]
    fn rejects_unknown_and_handles_escapes() {
        assert!(compile("%Z").is_err());
        assert!(compile("%{x").is_err());
        assert_eq!(compile("100%% \\\"%D\\\"").unwrap(), vec![
            LogItem::Literal("100% \"".into()),
            LogItem::Duration(DurationUnit::Micros),
            LogItem::Literal("\"".into())
        ]);
    }
}
