//! Evaluating the conditions of header rules (`env=[!]VAR`, `expr=`: the
//! facts Apache's expressions see, [`warren_config::expr::Facts`]) and
//! filling in their value formats (`%t`, `%D`, `%{VAR}e`), against what is
//! known of the request and, for `Header`, of its response.

use std::net::IpAddr;

use warren_config::headers::{Condition, FormatPiece, ValueFormat};
use warren_http::RequestHead;

use super::Timing;
use crate::env::RequestEnv;
use crate::HeaderName;

/// What a condition can look at.
pub struct Facts<'a> {
    pub head: Option<&'a RequestHead>,
    pub remote: IpAddr,
    pub https: bool,
    pub env: &'a RequestEnv,
    /// The response's status and headers (None for `RequestHeader`).
    pub response: Option<(u16, &'a [(HeaderName, String)])>,
    pub timing: Timing,
}

impl Facts<'_> {
    pub fn holds(&self, c: &Option<Condition>) -> bool {
        match c {
            None => true,
            Some(Condition::Env { name, negate }) => self.env.get(name).is_some() != *negate,
            Some(Condition::Expr(e)) => e.holds(self),
        }
    }

    /// A header value with its specifiers filled in.
    pub fn format(&self, f: &ValueFormat) -> String {
        if let Some(lit) = f.literal() {
            return lit.to_string();
        }
        let mut out = String::new();
        for p in &f.0 {
            match p {
                FormatPiece::Text(t) => out.push_str(t),
                FormatPiece::RequestTime => {
                    let us = self.timing.received.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros());
                    out.push_str(&format!("t={us}"));
                }
                FormatPiece::Duration => out.push_str(&format!("D={}", self.timing.start.elapsed().as_micros())),
                // A variable may hold what a client sent (SetEnvIf captures
                // from the decoded path): no control character, CR and LF
                // above all, may reach a header line.
                FormatPiece::Env(name) => out.extend(self.env.get(name).unwrap_or_default().chars().filter(|c| !c.is_control() || *c == '\t')),
            }
        }
        out
    }
}

impl warren_config::expr::Facts for Facts<'_> {
    fn variable(&self, name: &str) -> Option<String> {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let head = self.head;
        Some(match name {
            // Apache's r->uri: the decoded path.
            "REQUEST_URI" | "DOCUMENT_URI" => {
                let raw = crate::path::split_query(head?.path_and_query()).0;
                text(&crate::path::normalize(raw).unwrap_or_else(|_| raw.to_vec()))
            }
            "QUERY_STRING" => text(crate::path::split_query(head?.path_and_query()).1.strip_prefix(b"?").unwrap_or_default()),
            "REQUEST_METHOD" => head?.method().to_string(),
            "THE_REQUEST" => text(head?.request_line()),
            "SERVER_PROTOCOL" => head?.version.as_str().to_string(),
            "REMOTE_ADDR" => self.remote.to_string(),
            "REQUEST_SCHEME" => if self.https { "https" } else { "http" }.to_string(),
            "HTTPS" => if self.https { "on" } else { "off" }.to_string(),
            "CONTENT_TYPE" => return self.response_header("Content-Type"),
            "REQUEST_STATUS" => self.response?.0.to_string(),
            _ => return name.strip_prefix("HTTP_").and_then(|h| self.request_header(&h.replace('_', "-"))),
        })
    }

    fn request_header(&self, name: &str) -> Option<String> {
        self.head?.header(name).map(|v| String::from_utf8_lossy(v).into_owned())
    }

    fn response_header(&self, name: &str) -> Option<String> {
        self.response?.1.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone())
    }

    fn env(&self, name: &str) -> Option<String> {
        self.env.get(name).map(str::to_string)
    }

    fn remote_ip(&self) -> IpAddr {
        self.remote
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant, SystemTime};
    use warren_config::expr::Expr;

    #[test]
    fn tests_on_request_response_and_environment() {
        let (head, _) = warren_http::parse_head(
            b"GET /a%20b/c?x=1 HTTP/1.1\r\nHost: h\r\nUser-Agent: curl/8\r\n\r\n",
            &warren_http::HeadLimits { request_line: 100, field_size: 100, fields: 10, head: 1000 },
        )
        .unwrap()
        .unwrap();
        let mut env = RequestEnv::default();
        env.set("FOO", "bar");
        env.set("EVIL", "a\r\nSet-Cookie: x\u{7f}");
        let headers = vec![(HeaderName::Borrowed("Content-Type"), "text/html; charset=utf-8".to_string())];
        let timing = Timing { received: SystemTime::UNIX_EPOCH + Duration::from_secs(2), start: Instant::now() };
        let facts = Facts { head: Some(&head), remote: "10.0.0.1".parse().unwrap(), https: false, env: &env, response: Some((404, &headers)), timing };
        let holds = |text: &str| Expr::parse(text, false).unwrap().holds(&facts);
        assert!(holds("%{REQUEST_URI} == '/a b/c'"));
        assert!(holds("%{QUERY_STRING} == 'x=1'"));
        assert!(holds("%{CONTENT_TYPE} =~ /html/"));
        assert!(holds("%{REQUEST_STATUS} == '404'"));
        assert!(holds("%{HTTP_USER_AGENT} =~ m#^curl/#"));
        assert!(holds("%{req:user-agent} != 'wget'"));
        assert!(holds("-n %{env:FOO}") && holds("-z %{env:BAR}"));
        assert!(holds("%{REMOTE_ADDR} =~ /^10\\./") && !holds("!%{REMOTE_ADDR} =~ /^10\\./"));
        assert!(holds("%{resp:content-type} !~ /json/"));
        let f = warren_config::headers::ValueFormat::parse("%{FOO}e %t %{NONE}e.").unwrap();
        assert_eq!(facts.format(&f), "bar t=2000000 .");
        let f = warren_config::headers::ValueFormat::parse("%{EVIL}e").unwrap();
        assert_eq!(facts.format(&f), "aSet-Cookie: x");
    }
}
