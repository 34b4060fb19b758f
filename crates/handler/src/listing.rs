//! `Options Indexes`: an HTML listing of a directory without an index file.
//! It reads and stats every entry, so it runs on a worker thread.

use std::path::Path;

use crate::path::{encode, html_escape};
use crate::{Body, Response};

pub fn listing(host: usize, dir: &Path, url: &[u8], signature: Option<&str>) -> Response {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(_) => {
            let mut r = Response::new(403, host);
            r.body = Body::Bytes(b"<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n<title>403 Forbidden</title>\n</head><body>\n<h1>Forbidden</h1>\n<p>You don't have permission to access this resource.</p>\n</body></html>\n".to_vec());
            return r.header("Content-Type", "text/html; charset=iso-8859-1");
        }
    };
    let mut names: Vec<(String, bool, u64)> = entries
        .flatten()
        .map(|e| {
            let meta = std::fs::metadata(e.path()).ok();
            let is_dir = meta.as_ref().is_some_and(|m| m.is_dir());
            (e.file_name().to_string_lossy().into_owned(), is_dir, meta.map_or(0, |m| m.len()))
        })
        .collect();
    names.sort();
    let title = html_escape(&String::from_utf8_lossy(url));
    let mut html = format!(
        "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 3.2 Final//EN\">\n<html>\n <head>\n  <title>Index of {title}</title>\n </head>\n <body>\n<h1>Index of {title}</h1>\n<ul>"
    );
    if url != b"/" {
        let parent = &url[..url[..url.len() - 1].iter().rposition(|&b| b == b'/').map_or(1, |i| i + 1)];
        html.push_str(&format!("<li><a href=\"{}\"> Parent Directory</a></li>\n", encode(parent)));
    }
    for (name, is_dir, size) in names {
        let slash = if is_dir { "/" } else { "" };
        let size = if is_dir { String::new() } else { format!(" ({size} bytes)") };
        html.push_str(&format!(
            "<li><a href=\"./{}{slash}\"> {}{slash}</a>{size}</li>\n",
            html_escape(&encode(name.as_bytes())),
            html_escape(&name)
        ));
    }
    html.push_str("</ul>\n");
    if let Some(sig) = signature {
        html.push_str(&format!("<address>{}</address>\n", html_escape(sig)));
    }
    html.push_str("</body></html>\n");
    let mut r = Response::new(200, host);
    r.body = Body::Bytes(html.into_bytes());
    r.header("Content-Type", "text/html;charset=UTF-8")
}
