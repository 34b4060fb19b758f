//! What Apache's expressions (`<If>`, `Require expr`) see of a request
//! once its URL is mapped to a file: [`RouteFacts`], warren_config's
//! [`Facts`] for it.

use std::net::IpAddr;
use std::path::Path;

use warren_config::expr::Facts;

use crate::env::RequestEnv;
use crate::request::Request;
use crate::site::Site;

/// A request whose URL path is `url` (decoded), mapped to the file `fs`
/// once that is known.
pub struct RouteFacts<'a> {
    /// For the host's name and DocumentRoot.
    pub site: Option<&'a Site>,
    pub req: Request<'a>,
    pub url: &'a [u8],
    pub fs: Option<&'a Path>,
    /// The request's environment as it stands (SetEnvIfExpr sees what the
    /// lines before it set).
    pub env: &'a RequestEnv,
}

impl Facts for RouteFacts<'_> {
    fn variable(&self, name: &str) -> Option<String> {
        let Request { head, conn, host, .. } = self.req;
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let https = conn.tls.is_some();
        Some(match name {
            "REQUEST_METHOD" => head.method().to_string(),
            "REQUEST_SCHEME" => conn.scheme().to_string(),
            "REQUEST_URI" | "DOCUMENT_URI" => text(self.url),
            "QUERY_STRING" => text(crate::path::split_query(head.path_and_query()).1.strip_prefix(b"?").unwrap_or_default()),
            "REQUEST_FILENAME" | "SCRIPT_FILENAME" => self.fs?.to_string_lossy().into_owned(),
            "THE_REQUEST" => text(head.request_line()),
            "REMOTE_ADDR" => conn.useragent.ip().to_string(),
            "CONN_REMOTE_ADDR" => conn.peer.ip().to_string(),
            "REMOTE_PORT" => conn.useragent.port().to_string(),
            "SERVER_NAME" => match head.host() {
                Some(v) if !v.is_empty() => text(crate::logs::strip_port(v)),
                _ => self.site?.hosts[host].name.clone(),
            },
            "SERVER_PORT" => conn.local.port().to_string(),
            "SERVER_PROTOCOL" => head.version.as_str().to_string(),
            "DOCUMENT_ROOT" | "CONTEXT_DOCUMENT_ROOT" => self.site?.document_root_text(self.req),
            "HTTPS" => if https { "on" } else { "off" }.to_string(),
            "IPV6" => if conn.useragent.is_ipv6() { "on" } else { "off" }.to_string(),
            "IS_SUBREQ" => "false".to_string(),
            "SERVER_SOFTWARE" => "Apache".to_string(),
            _ => match name.strip_prefix("HTTP_") {
                Some(header) => return self.request_header(&header.replace('_', "-")),
                None => return None,
            },
        })
    }

    fn request_header(&self, name: &str) -> Option<String> {
        self.req.head.header(name).map(|v| String::from_utf8_lossy(v).into_owned())
    }

    /// There is no response yet where sections are merged.
    fn response_header(&self, _name: &str) -> Option<String> {
        None
    }

    fn env(&self, name: &str) -> Option<String> {
        self.env.get(name).map(str::to_string)
    }

    fn remote_ip(&self) -> IpAddr {
        self.req.conn.useragent.ip()
    }
}
