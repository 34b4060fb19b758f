//! `Options Indexes`: an HTML listing of a directory without an index file.
//! It reads and stats every entry, so it runs on a worker thread.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use nix::dir::Dir;
use nix::sys::stat::{fstatat, SFlag};
use nix::fcntl::AtFlags;

use crate::path::{encode, html_escape};
use crate::symlinks::{self, LinkRule};
use crate::{Body, Response};


/// IndexIgnore's patterns, for the directory listed.
pub struct Ignore {
    patterns: Vec<String>,
    dir: PathBuf,
}

impl Ignore {
    pub fn new(patterns: Vec<String>, dir: PathBuf) -> Ignore {
        Ignore { patterns, dir }
    }

    fn hides(&self, name: &str) -> bool {
        self.patterns.iter().any(|p| match p.contains('/') {
            true => crate::sections::wildcard_match(p, &self.dir.join(name).to_string_lossy()),
            false => crate::sections::wildcard_match(p, name),
        })
    }
}

/// The listing of the directory `dir` (opened beneath its root by
/// `symlinks::open_in_root`), its entries shown as `rule` lets links through.
pub fn listing(host: usize, dir: File, rule: LinkRule, url: &[u8], signature: Option<&str>, ignore: &Ignore) -> Response {
    let names = checked_entries(dir, rule);
    let mut names: Vec<(String, bool)> = match names {
        Ok(n) => n,
        Err(_) => {
            let mut r = Response::new(403, host);
            r.body = Body::Bytes(b"<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01//EN\" \"http://www.w3.org/TR/html4/strict.dtd\">\n<html><head>\n<title>403 Forbidden</title>\n</head><body>\n<h1>Forbidden</h1>\n<p>You don't have permission to access this resource.</p>\n</body></html>\n".to_vec());
            return r.header("Content-Type", "text/html; charset=iso-8859-1");
        }
    };
    names.retain(|(name, ..)| !ignore.hides(name));
    names.sort();
    // mod_autoindex's plain list (no IndexOptions FancyIndexing): its
    // title without the trailing slash, names without sizes.
    let trimmed = match url.iter().rposition(|&b| b != b'/') {
        Some(last) => &url[..=last],
        None => b"/",
    };
    let title = html_escape(&String::from_utf8_lossy(trimmed));
    let mut html = format!(
        "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01//EN\" \"http://www.w3.org/TR/html4/strict.dtd\">\n<html>\n <head>\n  <title>Index of {title}</title>\n </head>\n <body>\n<h1>Index of {title}</h1>\n<ul>"
    );
    if url != b"/" {
        let parent = &url[..url[..url.len() - 1].iter().rposition(|&b| b == b'/').map_or(1, |i| i + 1)];
        html.push_str(&format!("<li><a href=\"{}\"> Parent Directory</a></li>\n", encode(parent)));
    }
    for (name, is_dir) in names {
        let slash = if is_dir { "/" } else { "" };
        // `./` only where the name would read as a URL scheme (`a:b`), as Apache's.
        let dot = if name.contains(':') { "./" } else { "" };
        html.push_str(&format!(
            "<li><a href=\"{dot}{}{slash}\"> {}{slash}</a></li>\n",
            html_escape(&encode(name.as_bytes())),
            html_escape(&name)
        ));
    }
    html.push_str("</ul>\n");
    if let Some(sig) = signature {
        html.push_str(&format!("<address>{}</address>\n", sig));
    }
    html.push_str("</body></html>\n");
    let mut r = Response::new(200, host);
    r.body = Body::Bytes(html.into_bytes());
    // Apache's charset without IndexOptions Charset=.
    r.header("Content-Type", "text/html;charset=ISO-8859-1")
}

/// The entries of a directory read through its descriptor (so not a
/// directory swapped in since its check), leaving out the links `rule` would
/// not follow, as Apache's autoindex leaves out what it would refuse to serve.
fn checked_entries(dir: File, rule: LinkRule) -> std::io::Result<Vec<(String, bool)>> {
    let mut d = Dir::from_fd(OwnedFd::from(dir))?;
    let fd = d.as_fd().try_clone_to_owned()?;
    let mut out = Vec::new();
    for entry in d.iter().flatten() {
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." || !symlinks::entry_visible(fd.as_fd(), name, rule) {
            continue;
        }
        let st = fstatat(fd.as_fd(), name, AtFlags::empty()).ok();
        let is_dir = st.is_some_and(|s| SFlag::from_bits_truncate(s.st_mode & SFlag::S_IFMT.bits()) == SFlag::S_IFDIR);
        out.push((name.to_string_lossy().into_owned(), is_dir));
    }
    Ok(out)
}
