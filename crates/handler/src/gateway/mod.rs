//! The plan every backend protocol shares: a request routed to a FastCGI
//! application, a CGI program or an HTTP backend becomes a [`Gateway`]
//! holding the backend, the CGI/1.1 variables (RFC 3875) and what the
//! answer needs (filters, compression, the response cache's part); a CGI
//! program's plan carries a [`Program`], an HTTP backend's an [`HttpPlan`],
//! each defined in a file that does not import this one back. The MPM runs
//! the plan with [`Site::run_gateway`](crate::Site::run_gateway) on a
//! thread that may block, or relays it on the event loop.
//!
//! - `error`: why an exchange failed, and the status it earns.
//! - `script`: where a script's path ends and PATH_INFO starts, and the
//!   variables every gateway gives (request headers as HTTP_*, the
//!   environment's).
//! - `stream`: a connection to a backend, unix or TCP.

pub mod error;
pub mod script;
pub mod stream;

use std::path::PathBuf;
use std::time::Duration;

use warren_config::{FcgiAddr, FcgiBackend};
use warren_http::RequestHead;

use crate::cgi::program::Program;
use crate::gateway::stream::describe;
use crate::fastcgi::response::CgiHead;
use crate::proxy_http::plan::HttpPlan;
use crate::{internal_redirect, path, HeaderName, Response};

/// A request to run on a backend: a FastCGI application, or (with
/// `program` or `http` set) a CGI program or an HTTP backend.
pub struct Gateway {
    pub host: usize,
    pub backend: FcgiBackend,
    pub timeout: Duration,
    /// The CGI variables but CONTENT_LENGTH, known once the body is.
    pub(crate) params: Vec<(HeaderName, Vec<u8>)>,
    /// The script, for log lines.
    pub(crate) script: String,
    /// Internal redirects already followed to get here.
    pub(crate) redirects: u8,
    /// REQUEST_URI, for a pool's status page.
    pub(crate) uri: Vec<u8>,
    /// Set when this request is a local ErrorDocument answering an error:
    /// the status of that error.
    pub(crate) error_status: Option<u16>,
    /// Already sent again after a pool's child went away without answering.
    pub(crate) retried: bool,
    /// The request's filters and environment, for the answer.
    pub(crate) filters: Option<Box<crate::filters::RequestFilters>>,
    /// The compression directives for the script's answer.
    pub(crate) compress: Option<Box<crate::compress::Rules>>,
    /// A CGI program to start rather than a FastCGI application to ask
    /// (see [`crate::cgi`]).
    pub(crate) program: Option<Box<Program>>,
    /// PHP reads the variables (ProxyFCGIBackendType FPM, or a warren pool's php-cgi).
    pub(crate) php: bool,
    /// An HTTP backend to ask rather than a FastCGI application (see
    /// [`crate::proxy_http`]).
    pub(crate) http: Option<Box<HttpPlan>>,
    /// The member of a `balancer://` chosen for it (see [`crate::balancer`]).
    pub(crate) balanced: Option<Box<crate::balancer::Elected>>,
    /// The response cache's part in the answer (response_cache.rs).
    pub(crate) capture: Option<Box<crate::response_cache::Capture>>,
    /// As [`Response::restricted`]: not for the response cache.
    pub(crate) restricted: bool,
}

impl Gateway {
    /// A plan for an HTTP backend (mod_proxy_http): `backend.addr` is where
    /// it is reached, `name` its URL for log lines.
    pub(crate) fn for_http(host: usize, backend: FcgiBackend, timeout: Duration, name: String, uri: Vec<u8>, plan: HttpPlan) -> Gateway {
        Gateway { host, backend, timeout, params: Vec::new(), script: name, redirects: 0, uri, error_status: None, retried: false, filters: None, compress: None, program: None, php: false, http: Some(Box::new(plan)), balanced: None, capture: None, restricted: false }
    }

    /// A plan that asks `backend` for `script` with no CGI variables but
    /// those the caller sets (an application that needs none; tests of
    /// what drives an exchange).
    pub fn to_backend(host: usize, backend: FcgiBackend, timeout: Duration, script: String) -> Gateway {
        Gateway { host, backend, timeout, params: Vec::new(), script, redirects: 0, uri: Vec::new(), error_status: None, retried: false, filters: None, compress: None, program: None, php: false, http: None, balanced: None, capture: None, restricted: false }
    }

    /// Whether this plan must run on a thread, never on the event loop: a
    /// CGI program's and an HTTP backend's exchanges block.
    /// An answer the cache takes a copy of is read there too.
    pub fn needs_thread(&self) -> bool {
        self.program.is_some() || self.http.is_some() || self.balanced.is_some() || self.capture.is_some()
    }

    /// A copy to send to a balancer's member: each attempt of a balanced
    /// request runs one (never a CGI program's plan).
    pub(crate) fn again(&self) -> Gateway {
        Gateway {
            host: self.host,
            backend: self.backend.clone(),
            timeout: self.timeout,
            params: self.params.clone(),
            script: self.script.clone(),
            redirects: self.redirects,
            uri: self.uri.clone(),
            error_status: self.error_status,
            retried: self.retried,
            filters: self.filters.clone(),
            compress: self.compress.clone(),
            program: None,
            php: self.php,
            http: self.http.clone(),
            balanced: None,
            capture: None,
            restricted: self.restricted,
        }
    }


    /// The response to an HTTP backend's answer of `status` (its fields and
    /// body to be added), with the request's filters.
    pub(crate) fn proxied_response(&self, status: u16) -> Response {
        let mut r = Response::new(status, self.host);
        r.filters = self.filters.clone().map(|mut f| {
            f.from_application = true;
            f
        });
        r
    }

    /// Whether the request may be sent once more, to another of its pool's
    /// children, after the child it went to was lost before answering:
    /// once, and only a GET or HEAD without a body, which may be repeated
    /// (RFC 9110 9.2.2), as nginx's fastcgi_next_upstream does.
    pub fn retry_lost_child(&mut self, head: &RequestHead) -> bool {
        let ok = !self.retried && matches!(self.backend.addr, FcgiAddr::Pool(_)) && matches!(head.method(), "GET" | "HEAD") && head.framing == warren_http::BodyFraming::None;
        self.retried |= ok;
        ok
    }

    /// Whether the application is to get the client's request body: an
    /// error document (a GET standing in for the request) does not.
    pub fn takes_body(&self) -> bool {
        self.error_status.is_none()
    }

    /// The whole request, body included, as one write; the connection is
    /// not kept.
    pub fn whole_request(&self, body: Option<&[u8]>) -> Vec<u8> {
        let body = body.filter(|_| self.takes_body());
        let mut params: Vec<(&[u8], &[u8])> = self.params.iter().map(|(n, v)| (n.as_bytes(), v.as_slice())).collect();
        let length = body.map(|b| b.len().to_string());
        if let Some(n) = &length {
            params.push((b"CONTENT_LENGTH", n.as_bytes()));
        }
        let mut out = Vec::with_capacity(1024 + body.map_or(0, <[u8]>::len));
        warren_fcgi::client::encode_begin(&mut out, 1, &params, false, body.is_none());
        if let Some(b) = body {
            if !b.is_empty() {
                warren_fcgi::record::write_stream(&mut out, warren_fcgi::record::RecordType::Stdin, 1, b);
            }
            warren_fcgi::record::write_record(&mut out, warren_fcgi::record::RecordType::Stdin, 1, &[]);
        }
        out
    }

    /// Makes this request the answer to an error of `original`, as
    /// Apache's ErrorDocument: the script sees the original REQUEST_URI and
    /// the REDIRECT_ variables, gets no request body, and its answer keeps
    /// the error's status unless it gives a `Status:` of its own.
    pub fn answer_error(&mut self, status: u16, original: &RequestHead) {
        let uri = original.path_and_query().to_vec();
        let query = path::split_query(&uri).1;
        let query = query.strip_prefix(b"?").unwrap_or(query).to_vec();
        self.set_param("REDIRECT_STATUS", status.to_string().into_bytes());
        self.set_param("REDIRECT_URL", internal_redirect::redirect_url(original));
        self.name_script_as_apache();
        if !query.is_empty() {
            self.set_param("REDIRECT_QUERY_STRING", query);
        }
        self.set_param("REDIRECT_REQUEST_METHOD", original.method().as_bytes().to_vec());
        self.set_param("REQUEST_URI", uri.clone());
        self.uri = uri;
        self.error_status = Some(status);
    }

    /// After an internal redirect (REDIRECT_URL) to a script with PATH_INFO
    /// (`ErrorDocument 404 /index.php/error/404`, a rule to
    /// `index.php/$1`), PHP's "pretty much apache specific" REDIRECT_URL
    /// rule would take PATH_TRANSLATED for the script ("File not found.",
    /// "No input file specified.") or drop PATH_INFO. php-fpm is given
    /// SCRIPT_FILENAME as mod_proxy_fcgi names it, `proxy:fcgi://localhost/...`,
    /// which it strips; php-cgi (warren's pools), which knows no such
    /// prefix, and a name holding `?` (PHP cuts a prefixed name there:
    /// `shell?.php` would run `shell`) are given the path with its PATH_INFO,
    /// which PHP splits at the script itself, and no PATH_TRANSLATED.
    pub(crate) fn name_script_as_apache(&mut self) {
        let has = |p: &[(HeaderName, Vec<u8>)], name: &str| p.iter().any(|(n, v)| n == name && !v.is_empty());
        if !self.php || !has(&self.params, "PATH_INFO") || !has(&self.params, "REDIRECT_URL") {
            return;
        }
        let pool = matches!(self.backend.addr, warren_config::FcgiAddr::Pool(_));
        let path_info = self.params.iter().find(|(n, _)| n == "PATH_INFO").map(|(_, v)| v.clone()).unwrap_or_default();
        let Some(at) = self.params.iter().position(|(n, v)| n == "SCRIPT_FILENAME" && v.starts_with(b"/")) else { return };
        let name = &mut self.params[at].1;
        if !pool && !name.contains(&b'?') {
            name.splice(0..0, b"proxy:fcgi://localhost".iter().copied());
        } else {
            name.extend_from_slice(&path_info);
            self.params.retain(|(n, _)| n != "PATH_TRANSLATED");
        }
    }

    pub(crate) fn set_param(&mut self, name: &'static str, value: Vec<u8>) {
        match self.params.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v = value,
            None => self.params.push((HeaderName::Borrowed(name), value)),
        }
    }

    /// The response for an application's head (its body to be added).
    pub fn response(&self, head: &mut CgiHead) -> Response {
        let status = match self.error_status {
            Some(error) if !head.explicit_status => error,
            _ => head.status,
        };
        let mut r = Response::new(status, self.host);
        r.headers = std::mem::take(&mut head.headers);
        if let Some(rules) = &self.compress {
            let ctype = r.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("content-type")).map(|(_, v)| v.as_str());
            r.compress = rules.offer(ctype);
        }
        r.filename = Some(PathBuf::from(&self.script));
        r.filters = self.filters.clone().map(|mut f| {
            f.from_application = true;
            f
        });
        r
    }

    /// Whether the request's filters are known yet.
    pub fn has_filters(&self) -> bool {
        self.filters.is_some()
    }

    /// The application's answer varies on these request headers too
    /// (mod_rewrite's conditions read them).
    pub fn vary_on(&mut self, vary: &[String], conn: &crate::ConnInfo, head: &RequestHead) {
        match &mut self.filters {
            Some(f) => f.vary.extend(vary.iter().cloned()),
            None => self.set_filters(Box::new(crate::filters::RequestFilters { vary: vary.to_vec(), ..crate::filters::RequestFilters::new(conn.useragent.ip(), conn.tls.is_some()) }), head),
        }
    }

    /// Gives the request its filters and environment: `RequestHeader` rules
    /// change the HTTP_* variables the application gets, and each
    /// environment variable is one more variable, unless it would replace
    /// one the server sets (as in Apache, where the CGI variables are set
    /// over `subprocess_env`) or is one of the server's names at all
    /// ([`script::from_environment`]).
    pub fn set_filters(&mut self, f: Box<crate::filters::RequestFilters>, head: &RequestHead) {
        let now = crate::filters::Timing { received: std::time::SystemTime::now(), start: std::time::Instant::now() };
        if let Some(headers) = crate::filters::headers::request_headers(&f, head, now) {
            self.params.retain(|(n, _)| !n.starts_with("HTTP_") && n != "CONTENT_TYPE");
            if let Some((_, t)) = headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("content-type")) {
                self.params.push((HeaderName::Borrowed("CONTENT_TYPE"), t.clone()));
            }
            self.params.extend(script::http_params(headers.iter().map(|(n, v)| (n.as_bytes(), v.as_slice()))));
        }
        for (name, value) in f.env.iter().filter(|(n, _)| script::from_environment(n)) {
            if !self.params.iter().any(|(n, _)| n == name) {
                let query = self.params.iter().find(|(n, _)| n == "QUERY_STRING").map_or(&[][..], |(_, q)| q);
                let value = script::env_param(&f.env, name, value, query);
                self.params.push((HeaderName::Owned(name.to_string()), value));
            }
        }
        self.filters = Some(f);
    }

    /// Whether the answer is read at the application's pace, what the
    /// client has not taken yet held by warren (the default), or relayed
    /// at the client's pace (`flushpackets=on`, `X-Accel-Buffering: no`):
    /// a stream of events, a long poll, a progress page.
    pub fn buffers(&self, head: &CgiHead) -> bool {
        !self.backend.flush_packets && !head.unbuffered
    }

    /// REQUEST_URI, as a pool's status page shows it.
    pub fn uri(&self) -> &[u8] {
        &self.uri
    }

    /// The backend's address, as it appears in log lines.
    pub fn backend_name(&self) -> String {
        describe(&self.backend.addr)
    }
}
