//! Evaluating the conditions of header rules (`env=[!]VAR`, `expr=`) and
//! filling in their value formats (`%t`, `%D`, `%{VAR}e`), against what is
//! known of the request and, for `Header`, of its response.

use std::net::IpAddr;

use warren_config::headers::{Condition, Expr, ExprTest, ExprVar, ExprWord, FormatPiece, ValueFormat};
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
            Some(Condition::Expr(e)) => self.eval(e),
        }
    }

    fn eval(&self, e: &Expr) -> bool {
        let result = match &e.test {
            ExprTest::Const(b) => *b,
            ExprTest::NonEmpty(w) => !self.word(w).is_empty(),
            ExprTest::Empty(w) => self.word(w).is_empty(),
            ExprTest::Matches(w, re) => re.is_match(&self.word(w)),
            ExprTest::Equals(a, b) => self.word(a) == self.word(b),
        };
        result != e.negate
    }

    fn word(&self, w: &ExprWord) -> String {
        match w {
            ExprWord::Text(t) => t.clone(),
            ExprWord::Var(v) => self.var(v),
        }
    }

    fn var(&self, v: &ExprVar) -> String {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let head = self.head;
        let resp_header = |name: &str| {
            self.response.and_then(|(_, h)| h.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone())).unwrap_or_default()
        };
        match v {
            // Apache's r->uri: the decoded path.
            ExprVar::RequestUri => head
                .map(|h| {
                    let raw = crate::path::split_query(h.path_and_query()).0;
                    text(&crate::path::normalize(raw).unwrap_or_else(|_| raw.to_vec()))
                })
                .unwrap_or_default(),
            ExprVar::QueryString => {
                head.map(|h| text(crate::path::split_query(h.path_and_query()).1.strip_prefix(b"?").unwrap_or_default())).unwrap_or_default()
            }
            ExprVar::RequestMethod => head.map(|h| h.method().to_string()).unwrap_or_default(),
            ExprVar::RemoteAddr => self.remote.to_string(),
            ExprVar::RequestScheme => if self.https { "https" } else { "http" }.to_string(),
            ExprVar::ContentType => resp_header("Content-Type"),
            ExprVar::RequestStatus => self.response.map(|(s, _)| s.to_string()).unwrap_or_default(),
            ExprVar::RequestHeader(name) => head.and_then(|h| h.header(name)).map(text).unwrap_or_default(),
            ExprVar::ResponseHeader(name) => resp_header(name),
            ExprVar::Env(name) => self.env.get(name).unwrap_or_default().to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant, SystemTime};
    use warren_config::headers::parse_expr;

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
        let holds = |text: &str| facts.eval(&parse_expr(text).unwrap());
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
