//! Error responses: Apache-style HTML pages, or what `ErrorDocument` says.

use std::io;
use std::path::Path;

use warren_config::{ErrorDocument, LogLevel};
use warren_http::response::reason;
use warren_http::RequestHead;

use crate::path::{self, html_escape};
use crate::conn::ConnInfo;
use crate::request::Request;
use crate::site::Site;
use crate::{Body, Response};

/// What the page says, as Apache's `get_canned_error_string` (its
/// line breaks and `<br />` kept: clients and tests compare pages).
fn message(status: u16, method: &str, admin: &str) -> String {
    match status {
        400 => "Your browser sent a request that this server could not understand.<br />\n".into(),
        403 => "You don't have permission to access this resource.".into(),
        404 => "The requested URL was not found on this server.".into(),
        405 => format!("The requested method {} is not allowed for this URL.", html_escape(method)),
        406 => "An appropriate representation of the requested resource could not be found on this server.".into(),
        408 => "Server timeout waiting for the HTTP request from the client.".into(),
        412 => "The precondition on the request for this URL evaluated to false.".into(),
        413 => "The amount of data provided in the request exceeds the capacity limit.".into(),
        414 => "The requested URL's length exceeds the capacity limit for this server.".into(),
        416 => "None of the range-specifier values in the Range request-header field overlap the current extent of the selected resource.".into(),
        417 => "The expectation given in the Expect request-header field could not be met by this server.".into(),
        421 => "The client needs a new connection for this request as the requested host name does not match the Server Name Indication (SNI) in use for this connection.".into(),
        431 => "The request's header fields are too large for this server.".into(),
        501 => format!("{} not supported for current URL.<br />\n", html_escape(method)),
        503 => "The server is temporarily unable to service your request.".into(),
        506 => "A variant for the requested resource\n<pre>\n\n</pre>\nis itself a negotiable resource. This indicates a configuration error.".into(),
        505 => "The server does not support the HTTP protocol version used in the request.".into(),
        _ => format!(
            "The server encountered an internal error or\nmisconfiguration and was unable to complete\nyour request.</p>\n<p>Please contact the server administrator at \n {} to inform them of the time this error occurred,\n and the actions you performed just before this error.</p>\n<p>More information about this error may be available\nin the server error log.",
            html_escape(admin)
        ),
    }
}

/// ServerSignature's words, HTML-escaped (`warren/0.1 Server at example.org
/// Port 80`): None while it is Off.
pub(crate) fn signature_words(site: &Site, host: usize, port: u16) -> Option<String> {
    site.settings.server_signature.then(|| format!("{} Server at {} Port {port}", html_escape(&site.server_header), html_escape(&site.hosts[host].name)))
}

impl Site {
    /// SERVER_SIGNATURE as Apache's `ap_psignature` gives it to scripts:
    /// the `<address>` line, empty while ServerSignature is Off.
    pub(crate) fn signature(&self, req: Request) -> String {
        signature_words(self, req.host, req.conn.local.port()).map(|w| format!("<address>{w}</address>\n")).unwrap_or_default()
    }
}

/// `page` (a built-in one) saying that its ErrorDocument failed too, in
/// Apache's words, before the signature. Apache names the first error's
/// status there, whatever the document's was (measured: a 404 whose
/// document is denied says "Additionally, a 404 Not Found").
pub(crate) fn with_recursive_error(mut page: Response) -> Response {
    let status = page.status;
    if let Body::Bytes(body) = &mut page.body {
        let tail = [&b"<hr>\n<address>"[..], b"</body></html>\n"];
        if let Some(at) = tail.iter().find_map(|t| body.windows(t.len()).rposition(|w| w == *t)) {
            let said = format!("<p>Additionally, a {status} {}\nerror was encountered while trying to use an ErrorDocument to handle the request.</p>\n", reason(status));
            body.splice(at..at, said.into_bytes());
        }
    }
    page
}

/// The built-in page for `status`.
pub fn page(site: &Site, host: usize, status: u16, method: &str, conn: &ConnInfo) -> Vec<u8> {
    let title = format!("{status} {}", reason(status));
    let mut body = format!(
        "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01//EN\" \"http://www.w3.org/TR/html4/strict.dtd\">\n<html><head>\n<title>{title}</title>\n</head><body>\n<h1>{}</h1>\n<p>{}</p>\n",
        reason(status),
        message(status, method, site.hosts[host].config.server_admin.as_deref().unwrap_or("[no address given]"))
    );
    if let Some(words) = signature_words(site, host, conn.local.port()) {
        body.push_str(&format!("<hr>\n<address>{words}</address>\n"));
    }
    body.push_str("</body></html>\n");
    body.into_bytes()
}

impl Site {
    /// The host (and port) a redirect to this server names: the client's
    /// Host field as sent, else the host's name and the connection's port.
    pub(crate) fn client_authority(&self, req: Request) -> String {
        match req.head.host() {
            Some(h) if !h.is_empty() => String::from_utf8_lossy(h).into_owned(),
            _ => format!("{}:{}", self.hosts[req.host].name, req.conn.local.port()),
        }
    }

    /// An external redirect to `location`, with Apache's page for it.
    pub(crate) fn redirect_to(&self, req: Request, status: u16, location: String) -> Response {
        let mut r = Response::new(status, req.host);
        r.body = Body::Bytes(redirect_page(status, &location));
        r.header("Location", location).header("Content-Type", "text/html; charset=iso-8859-1")
    }

    /// An error response (with ErrorDocument applied) and its error-log line.
    pub fn error(&self, req: Request, status: u16, why: &str) -> Response {
        self.hosts[req.host].error_log.error(Some(req.conn.useragent), &format!("{why}: {}", String::from_utf8_lossy(req.head.request_line())));
        self.error_page(req, status)
    }

    /// An error found in the request's target before it was mapped (a `#`,
    /// a bad `%`-escape, an encoded slash): as Apache, which answers these
    /// before it walks any section, only the host's own ErrorDocument
    /// applies, not one of a `<Directory>`, `<Location>` or `.htaccess`.
    pub(crate) fn error_before_mapping(&self, req: Request, status: u16, why: &str) -> Response {
        self.hosts[req.host].error_log.error(Some(req.conn.useragent), &format!("{why}: {}", String::from_utf8_lossy(req.head.request_line())));
        respond_as(self, req.host, status, Some(req.head), req.conn, Sections::HostOnly)
    }

    /// An error for a request that could not be parsed (no host known yet).
    pub fn protocol_error(&self, status: u16, conn: &ConnInfo, why: &str) -> Response {
        self.error_log.error(Some(conn.useragent), why);
        respond(self, 0, status, None, conn)
    }

    /// The answer for `status`: what the ErrorDocument in force says, or
    /// the built-in page.
    pub fn error_page(&self, req: Request, status: u16) -> Response {
        respond(self, req.host, status, Some(req.head), req.conn)
    }

    /// The answer to a file a request names that could not be opened.
    pub(crate) fn open_error(&self, req: Request, fs: &Path, e: &io::Error) -> Response {
        let status = match e.raw_os_error() {
            Some(libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG) => 404,
            Some(libc::EACCES | libc::EPERM | libc::ELOOP) => 403,
            _ => 500,
        };
        if status == 404 {
            // Not a fault of the request's form: logged at info, as Apache does.
            self.hosts[req.host].error_log.log(LogLevel::Info, Some(req.conn.useragent), &format!("File does not exist: {}", fs.display()));
            return self.error_page(req, 404);
        }
        self.error(req, status, &format!("cannot open {}: {e}", fs.display()))
    }

    /// The answer to a method that static resources do not take, if it is
    /// one. As Apache's default handler, POST is answered with the file
    /// (its body read and dropped); OPTIONS and the 405 and 501 name what
    /// core allows, TRACE while TraceEnable is on.
    pub fn static_method(&self, req: Request) -> Option<Response> {
        let method = req.head.method();
        let allow = if self.settings.trace_enable { "OPTIONS,HEAD,GET,POST,TRACE" } else { "OPTIONS,HEAD,GET,POST" };
        match method {
            "GET" | "HEAD" | "POST" => None,
            "OPTIONS" => Some(Response::new(200, req.host).header("Allow", allow)),
            "PUT" | "DELETE" | "PATCH" | "TRACE" | "CONNECT" | "PROPFIND" | "PROPPATCH" | "MKCOL" | "COPY" | "MOVE" | "LOCK" | "UNLOCK" => {
                let r = self.error(req, 405, &format!("method {method} not allowed for this URL"));
                Some(r.header("Allow", allow))
            }
            _ => Some(self.error(req, 501, &format!("method {method} not implemented")).header("Allow", allow)),
        }
    }

    /// The 403 for a path that a directive or rule (`by`) would take above
    /// the directory it is mapped under, with Apache's AH00127 words.
    pub(crate) fn climbs(&self, req: Request, by: &str, climbs: &path::Climbs) -> Response {
        self.error(req, 403, &format!("Cannot map the request to a file: {climbs} ({by})"))
    }

    pub(crate) fn denied(&self, req: Request, what: &[u8]) -> Response {
        self.error(req, 403, &format!("client denied by server configuration: {}", String::from_utf8_lossy(what)))
    }

    /// 401 with the challenge for Basic credentials; the log line names
    /// the user that failed, if any.
    pub(crate) fn unauthorized(&self, req: Request, what: &[u8], realm: &str) -> Response {
        let why = match crate::auth::Credentials::of(req.head) {
            Some(c) => format!("user {:?}: authentication failure for \"{}\": Password Mismatch or not allowed", c.user, String::from_utf8_lossy(what)),
            None => format!("no credentials for \"{}\"", String::from_utf8_lossy(what)),
        };
        let mut r = self.error(req, 401, &why);
        r.headers.push(("WWW-Authenticate".into(), format!("Basic realm=\"{realm}\"")));
        r
    }
}

/// Which configuration an error page is looked up in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sections {
    /// The sections and `.htaccess` files of the resource asked for.
    OfResource,
    /// The host's own, outside every section.
    HostOnly,
}

fn respond(site: &Site, host: usize, status: u16, head: Option<&RequestHead>, conn: &ConnInfo) -> Response {
    respond_as(site, host, status, head, conn, Sections::OfResource)
}

fn respond_as(site: &Site, host: usize, status: u16, head: Option<&RequestHead>, conn: &ConnInfo, sections: Sections) -> Response {
    let method = head.map_or("GET", |h| h.method());
    let mut resp = Response::new(status, host);
    resp.close = head.is_none();
    if let Some(head) = head {
        let eff = match sections {
            Sections::OfResource => {
                let url = path::lookup_url(head.path_and_query());
                let fs = site.lookup_fs_path(crate::request::Request::new(head, conn, host), &url);
                site.effective(host, Some(&fs), &url)
            }
            Sections::HostOnly => crate::dir_config::Effective::of_host(&site.hosts[host].config.dir),
        };
        match eff.error_document(status) {
            Some(ErrorDocument::Text(text)) => {
                resp.body = Body::Bytes(text.clone().into_bytes());
                return resp.header("Content-Type", "text/html; charset=iso-8859-1");
            }
            Some(ErrorDocument::Redirect(url)) => {
                let mut r = Response::new(302, host).header("Location", url.clone());
                r.body = Body::Bytes(redirect_page(302, url));
                return r.header("Content-Type", "text/html; charset=iso-8859-1");
            }
            Some(ErrorDocument::Local(local)) => {
                // The built-in page stays as the answer should the document
                // itself fail; Site::handle follows the redirect.
                resp.error_document = Some(local.clone());
            }
            Some(ErrorDocument::Default) | None => {}
        }
    }
    resp.body = Body::Bytes(page(site, host, status, method, conn));
    resp.header("Content-Type", "text/html; charset=iso-8859-1")
}

pub fn redirect_page(status: u16, location: &str) -> Vec<u8> {
    // Apache's words: 303 says where the answer is, the others that the document moved.
    let said = if status == 303 { "The answer to your request is located" } else { "The document has moved" };
    format!(
        "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01//EN\" \"http://www.w3.org/TR/html4/strict.dtd\">\n<html><head>\n<title>{status} {0}</title>\n</head><body>\n<h1>{0}</h1>\n<p>{said} <a href=\"{1}\">here</a>.</p>\n</body></html>\n",
        reason(status),
        html_escape(location)
    )
    .into_bytes()
}
