//! What every gateway makes of a request's path and headers: the script a
//! path names and the PATH_INFO after it, request headers as HTTP_*
//! variables, and which environment variables an application may get.
//! FastCGI, CGI, the gateway routes and mod_rewrite (REQUEST_FILENAME and
//! PATH_INFO as Apache's directory walk splits them) share it.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::HeaderName;

/// Where a request maps: the script and the rest of the path after it.
pub struct ScriptTarget<'a> {
    /// SCRIPT_FILENAME: the file (or the backend's path) to run, as bytes:
    /// a file's name need not be UTF-8 (a directory named in Latin-1).
    pub filename: Vec<u8>,
    /// SCRIPT_NAME: the URL path of the script.
    pub name: &'a [u8],
    /// PATH_INFO: what follows the script in the URL path (may be empty).
    pub path_info: &'a [u8],
}

/// Whether the request's environment may give the application `name`:
/// not one of the server's own variables, which the directives that set
/// variables refuse, so the only ones here are the REDIRECT_* an internal
/// redirect renamed (REDIRECT_STATUS the status of the request it left).
pub(crate) fn from_environment(name: &str) -> bool {
    !warren_config::env_vars::is_server_variable(name) || name.starts_with("REDIRECT_")
}

/// An environment variable's value as a parameter. Variables hold text:
/// REDIRECT_QUERY_STRING, when it is the query this pass has (`query`,
/// without its `?`), gets that query's bytes, which may not be UTF-8 (the
/// client's, as sent); REDIRECT_URL the bytes of the URL the redirect left.
pub(crate) fn env_param(env: &crate::env::RequestEnv, name: &str, value: &str, query: &[u8]) -> Vec<u8> {
    if name.eq_ignore_ascii_case("REDIRECT_QUERY_STRING") && String::from_utf8_lossy(query) == value {
        query.to_vec()
    } else {
        env.bytes_of(name, value).to_vec()
    }
}

/// Every request header but Content-Type and Content-Length as HTTP_*:
/// repeated ones joined, as one field. Proxy is left out (httpoxy,
/// CVE-2016-5385); names with `_` too, so that `X_Forwarded_For` cannot
/// pose as `X-Forwarded-For`.
pub(crate) fn http_params<'h>(headers: impl Iterator<Item = (&'h [u8], &'h [u8])>) -> impl Iterator<Item = (HeaderName, Vec<u8>)> {
    let mut http: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, value) in headers {
        if name.eq_ignore_ascii_case(b"content-type") || name.eq_ignore_ascii_case(b"content-length") || name.eq_ignore_ascii_case(b"proxy") {
            continue;
        }
        if !name.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-') {
            continue;
        }
        // Made as bytes (ASCII, checked above), not a String extended char
        // by char, which encodes each one.
        let mut var = Vec::with_capacity(5 + name.len());
        var.extend_from_slice(b"HTTP_");
        var.extend(name.iter().map(|&b| if b == b'-' { b'_' } else { b.to_ascii_uppercase() }));
        let Ok(var) = String::from_utf8(var) else { continue };
        match http.iter_mut().find(|(n, _)| *n == var) {
            Some((_, v)) => {
                v.extend_from_slice(if var == "HTTP_COOKIE" { b"; " } else { b", " });
                v.extend_from_slice(value);
            }
            None => http.push((var, value.to_vec())),
        }
    }
    http.into_iter().map(|(n, v)| (HeaderName::Owned(n), v))
}

/// The script of a request whose URL path goes on past a file
/// (`/index.php/a/b`): the longest leading part that is a regular file.
pub fn split_path_info(fs: &Path) -> Option<(PathBuf, usize)> {
    let bytes = fs.as_os_str().as_bytes();
    let mut cut = bytes.len();
    while let Some(slash) = bytes[..cut].iter().rposition(|&b| b == b'/') {
        if slash == 0 {
            return None;
        }
        let candidate = Path::new(std::ffi::OsStr::from_bytes(&bytes[..slash]));
        match std::fs::metadata(candidate) {
            Ok(m) if m.is_file() => return Some((candidate.to_path_buf(), bytes.len() - slash)),
            Ok(_) => return None,
            Err(_) => cut = slash,
        }
    }
    None
}

