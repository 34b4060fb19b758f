//! What a FastCGI application is told of a request: the CGI/1.1 variables
//! of RFC 3875 and those PHP expects, and which part of the path is the
//! script.

use std::net::IpAddr;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use warren_config::FcgiBackend;
use warren_http::response::write_decimal;

use super::php_settings::PhpParams;
use crate::gateway::script::{from_environment, http_params, ScriptTarget};
use crate::gateway::Gateway;
use crate::logs::strip_port;
use crate::dir_config::Effective;
use crate::{HeaderName, Outcome, Request, Site};

impl Site {
    /// The plan for running `target` on `backend`; `dir` is the
    /// configuration merged for it, when routing has it.
    pub fn gateway(&self, req: Request, backend: &FcgiBackend, target: ScriptTarget, query: &[u8], dir: Option<&Effective>) -> Outcome {
        let h = &self.hosts[req.host];
        let timeout = backend.timeout.or(h.config.proxy_timeout).unwrap_or(self.settings.timeout);
        let mut params = self.cgi_params(req, &target, query);
        // php-cgi (warren's own pools) refuses to run without REDIRECT_STATUS
        // (cgi.force_redirect); php-fpm does not need it, and mod_proxy_fcgi
        // sends it only after an internal redirect, as the environment's.
        if matches!(backend.addr, warren_config::FcgiAddr::Pool(_)) && !params.iter().any(|(n, _)| n == "REDIRECT_STATUS") {
            params.push((HeaderName::Borrowed("REDIRECT_STATUS"), b"200".to_vec()));
        }
        // The user whose password matched (routing checked it before).
        if req.head.header("authorization").is_some() {
            let user = match dir {
                Some(eff) => eff.remote_user(req.head),
                None => self.effective(req.host, Some(Path::new(OsStr::from_bytes(&target.filename))), target.name).remote_user(req.head),
            };
            if let Some(user) = user {
                params.push((HeaderName::Borrowed("REMOTE_USER"), user.into_bytes()));
                params.push((HeaderName::Borrowed("AUTH_TYPE"), b"Basic".to_vec()));
            }
        }
        let script = Path::new(OsStr::from_bytes(&target.filename));
        let php = match dir {
            Some(eff) => self.php_params(req, backend, eff),
            None if h.config.php_pool.is_some() => self.php_params(req, backend, &self.effective(req.host, Some(script), target.name)),
            None => PhpParams::Send(Vec::new()),
        };
        match php {
            PhpParams::Send(php) => params.extend(php),
            PhpParams::EngineOff(why) => return Outcome::Ready(self.error(req, 403, &why)),
        }
        let uri = req.head.path_and_query().to_vec();
        let compress = match dir {
            Some(eff) => crate::compress::gateway_rules(eff, script),
            None if self.compresses => crate::compress::gateway_rules(&self.effective(req.host, Some(script), target.name), script),
            None => None,
        };
        let php = matches!(backend.addr, warren_config::FcgiAddr::Pool(_)) || dir.is_none_or(|d| d.fcgi_backend_type() == warren_config::FcgiBackendType::Fpm);
        let mut gw = Gateway { host: req.host, backend: backend.clone(), timeout, params, script: String::from_utf8_lossy(&target.filename).into_owned(), redirects: 0, uri, error_status: None, retried: false, filters: None, compress, program: None, php, http: None, balanced: None, capture: None, restricted: false };
        gw.name_script_as_apache();
        Outcome::Gateway(Box::new(gw))
    }

    /// SERVER_SOFTWARE: the Server header, and "Apache/2.4-compatible"
    /// where the script's directory takes rewrite rules from `.htaccess`
    /// files. WordPress (like other PHP applications) offers pretty
    /// permalinks and writes its rules to `.htaccess` only when this names
    /// Apache (or LiteSpeed); where warren would not read the file, saying
    /// so would make it write rules that do nothing.
    fn server_software(&self, host: usize, script: &str) -> Vec<u8> {
        let mut v = self.server_header.clone();
        let dir = Path::new(script).parent().map(|d| d.to_string_lossy());
        let h = &self.hosts[host];
        if h.reads_htaccess && dir.is_some_and(|d| crate::htaccess::overrides_for(&h.config, &d).is_some_and(|o| o.lets_in("RewriteRule"))) {
            v.push_str(" Apache/2.4-compatible");
        }
        v.into_bytes()
    }

    /// The CGI/1.1 variables of RFC 3875 and those PHP expects.
    fn cgi_params(&self, req: Request, target: &ScriptTarget, query: &[u8]) -> Vec<(HeaderName, Vec<u8>)> {
        let Request { head, conn, host, env, .. } = req;
        let h = &self.hosts[host];
        let root = self.document_root_text(req);
        let server_name = match head.host() {
            Some(v) if !v.is_empty() => strip_port(v).to_vec(),
            _ => h.name.clone().into_bytes(),
        };
        let mut p: Vec<(HeaderName, Vec<u8>)> = Vec::with_capacity(32);
        let set = |p: &mut Vec<(HeaderName, Vec<u8>)>, n: &'static str, v: Vec<u8>| p.push((HeaderName::Borrowed(n), v));
        set(&mut p, "GATEWAY_INTERFACE", b"CGI/1.1".to_vec());
        set(&mut p, "SERVER_SOFTWARE", self.server_software(host, &String::from_utf8_lossy(&target.filename)));
        set(&mut p, "SERVER_NAME", server_name);
        set(&mut p, "SERVER_ADDR", ip_text(conn.local.ip()));
        set(&mut p, "SERVER_PORT", decimal(conn.local.port()));
        set(&mut p, "SERVER_PROTOCOL", head.version.as_str().as_bytes().to_vec());
        set(&mut p, "REMOTE_ADDR", ip_text(conn.useragent.ip()));
        set(&mut p, "REMOTE_PORT", decimal(conn.useragent.port()));
        set(&mut p, "REQUEST_METHOD", head.method().as_bytes().to_vec());
        set(&mut p, "REQUEST_URI", head.path_and_query().to_vec());
        set(&mut p, "REQUEST_SCHEME", conn.scheme().as_bytes().to_vec());
        if let Some(tls) = &conn.tls {
            // mod_ssl sets HTTPS always, and the SSL_ variables with
            // SSLOptions +StdEnvVars, which Debian's default-ssl.conf gives
            // to PHP: they are always here.
            set(&mut p, "HTTPS", b"on".to_vec());
            set(&mut p, "SSL_PROTOCOL", tls.protocol.as_bytes().to_vec());
            set(&mut p, "SSL_CIPHER", tls.cipher.as_bytes().to_vec());
            set(&mut p, "SSL_CIPHER_USEKEYSIZE", tls.cipher_bits.to_string().into_bytes());
            set(&mut p, "SSL_CIPHER_ALGKEYSIZE", tls.cipher_bits.to_string().into_bytes());
            set(&mut p, "SSL_SESSION_RESUMED", if tls.resumed { b"Resumed".to_vec() } else { b"Initial".to_vec() });
            if let Some(h) = tls.sni_host {
                set(&mut p, "SSL_TLS_SNI", self.hosts[h].name.clone().into_bytes());
            }
        }
        set(&mut p, "QUERY_STRING", query.strip_prefix(b"?").unwrap_or(query).to_vec());
        set(&mut p, "SCRIPT_NAME", target.name.to_vec());
        set(&mut p, "SCRIPT_FILENAME", target.filename.clone());
        if !target.path_info.is_empty() {
            set(&mut p, "PATH_INFO", target.path_info.to_vec());
            let mut translated = root.clone().into_bytes();
            translated.extend_from_slice(target.path_info);
            set(&mut p, "PATH_TRANSLATED", translated);
        }
        set(&mut p, "DOCUMENT_ROOT", root.clone().into_bytes());
        set(&mut p, "CONTEXT_DOCUMENT_ROOT", root.into_bytes());
        set(&mut p, "CONTEXT_PREFIX", Vec::new());
        // As mod_proxy_fcgi passes them: Apache's placeholder for a host
        // without ServerAdmin, and the signature (empty with ServerSignature Off).
        set(&mut p, "SERVER_ADMIN", h.config.server_admin.as_deref().unwrap_or("[no address given]").as_bytes().to_vec());
        set(&mut p, "SERVER_SIGNATURE", self.signature(req).into_bytes());
        if let Some(t) = head.header("content-type") {
            set(&mut p, "CONTENT_TYPE", t.to_vec());
        }
        p.extend(http_params(head.headers()));
        // The request's environment, as Apache passes subprocess_env: a
        // variable set there wins over an HTTP_* one of the same name, but
        // never replaces the server's own.
        let query = query.strip_prefix(b"?").unwrap_or(query);
        for (name, value) in env.iter().filter(|(n, _)| from_environment(n)) {
            let value = crate::gateway::script::env_param(env, name, value, query);
            match p.iter_mut().find(|(n, _)| n == name) {
                Some((_, v)) => *v = value,
                None => p.push((HeaderName::Owned(name.to_string()), value)),
            }
        }
        p
    }

}

/// An address as `IpAddr`'s Display writes it. An IPv4 address is written
/// here: Display's formatter (padding, width) took 1,500 instructions an
/// address, a fifth of a PHP request's variables.
fn ip_text(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(v4) => {
            let mut out = Vec::with_capacity(15);
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                write_decimal(&mut out, octet.into());
            }
            out
        }
        IpAddr::V6(v6) => v6.to_string().into_bytes(),
    }
}

/// A port in decimal.
fn decimal(n: u16) -> Vec<u8> {
    let mut out = Vec::with_capacity(5);
    write_decimal(&mut out, n.into());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_ports_read_as_display_writes_them() {
        for ip in ["0.0.0.0", "127.0.0.1", "10.20.30.40", "255.255.255.255", "1.2.3.4", "192.168.100.9", "::1", "::ffff:127.0.0.1", "2001:db8::8:800:200c:417a"] {
            let ip: IpAddr = ip.parse().unwrap();
            assert_eq!(ip_text(ip), ip.to_string().into_bytes(), "{ip}");
        }
        for n in [0u16, 1, 9, 10, 99, 100, 443, 8080, 9999, 10000, 65535] {
            assert_eq!(decimal(n), n.to_string().into_bytes(), "{n}");
        }
    }
}
