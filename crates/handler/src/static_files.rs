//! Static files: mapping to the filesystem with symlink and access checks,
//! DirectoryIndex and trailing-slash redirects, validators (ETag,
//! Last-Modified), the conditional requests of RFC 9110 13, and ranges
//! (RFC 9110 14) including multipart/byteranges.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::sync::Arc;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use warren_config::{Handler, LogLevel};
use warren_http::RequestHead;

use crate::file_cache::{CachedFile, FileIdentity, MAX_ENTRY};
use crate::router::{ConnInfo, Effective, Site};
use crate::symlinks::{self, Access, LinkRule, Refused};
use crate::{errors, listing, Body, Outcome, Part, Response};

/// More ranges than this in one request are answered with the whole file,
/// as Apache's MaxRanges default does.
pub const MAX_RANGES: usize = 200;

/// Opens a path a request named, with the flags every such open takes.
fn open(path: &Path) -> io::Result<File> {
    Ok(File::from(nix::fcntl::open(path, Access::Read.flags(), nix::sys::stat::Mode::empty())?))
}

#[allow(clippy::too_many_arguments)]
pub fn serve(
    site: &Site,
    host: usize,
    head: &RequestHead,
    conn: &ConnInfo,
    eff: Effective,
    url: &[u8],
    raw_path: &[u8],
    query: &[u8],
    fs: PathBuf,
) -> Outcome {
    if !site.allowed(&eff, conn.peer.ip(), conn.local.ip()) {
        return Outcome::Ready(site.error(host, 403, head, conn, &format!("client denied by server configuration: {}", fs.display())));
    }
    let options = eff.options();
    let rule = LinkRule::of(options);
    // Where links are restricted, the path is opened with its links checked
    // and served from that descriptor; where they are not, a stat of the path
    // is all the cache needs.
    let (meta, opened) = if rule == LinkRule::Follow {
        match std::fs::metadata(&fs) {
            Ok(m) => (m, None),
            Err(e) => return Outcome::Ready(open_error(site, host, head, conn, &fs, &e)),
        }
    } else {
        let checked = symlinks::open_in_root(site, host, &fs, rule, Access::Read).and_then(|f| match f.metadata() {
            Ok(m) => Ok((m, f)),
            Err(e) => Err(Refused::Io(e)),
        });
        match checked {
            Ok((m, f)) => (m, Some(f)),
            Err(Refused::Link(link)) => return Outcome::Ready(symlinks::refused(site, host, head, conn, &link)),
            Err(Refused::Io(e)) => return Outcome::Ready(open_error(site, host, head, conn, &fs, &e)),
        }
    };
    if meta.is_file() {
        return Outcome::Ready(serve_regular(site, host, head, conn, &eff, &meta, fs, opened));
    }
    if !meta.is_dir() {
        return Outcome::Ready(site.error(host, 403, head, conn, &format!("not a regular file: {}", fs.display())));
    }
    if !url.ends_with(b"/") {
        return Outcome::Ready(redirect_to_slash(site, host, head, conn, raw_path, query));
    }
    // Index candidates are judged by the directory's rule, as Apache judges
    // a link by the Options of the directory it is in; a checked directory's
    // candidates are opened below its descriptor, so the directory cannot be
    // swapped between its check and theirs.
    let mut refused_link = false;
    for index in eff.directory_index() {
        let candidate = fs.join(index);
        let (meta, file) = match &opened {
            None => match std::fs::metadata(&candidate) {
                Ok(m) => (m, None),
                Err(_) => continue,
            },
            Some(dir) => match symlinks::open_beneath(dir.as_fd(), &fs, Path::new(index), rule, Access::Read) {
                Ok(f) => match f.metadata() {
                    Ok(m) => (m, Some(f)),
                    Err(_) => continue,
                },
                Err(Refused::Link(link)) => {
                    // Logged now, once; the next candidate may still answer
                    // (as in Apache, where each candidate is a subrequest).
                    site.hosts[host].error_log.error(
                        Some(conn.peer),
                        &format!("Symbolic link not allowed or link target not accessible: {}", link.display()),
                    );
                    refused_link = true;
                    continue;
                }
                Err(Refused::Io(_)) => continue,
            },
        };
        if !meta.is_file() {
            continue;
        }
        let mut index_url = url.to_vec();
        index_url.extend_from_slice(index.as_bytes());
        let eff = site.effective(host, Some(&candidate), &index_url);
        if let Some(Some(h @ (Handler::FastCgi(_) | Handler::Pool(_)))) = eff.handler() {
            return site.script_gateway(host, head, conn, &eff, &crate::router::backend_of(h), candidate, &index_url, 0, query);
        }
        if let Some(r) = site.static_method(host, head, conn) {
            return Outcome::Ready(r);
        }
        if !site.allowed(&eff, conn.peer.ip(), conn.local.ip()) {
            return Outcome::Ready(site.error(host, 403, head, conn, &format!("client denied by server configuration: {}", candidate.display())));
        }
        return Outcome::Ready(serve_regular(site, host, head, conn, &eff, &meta, candidate, file));
    }
    if refused_link {
        // Not a listing in place of an index that a link was refused for.
        return Outcome::Ready(errors::respond(site, host, 403, Some(head), conn));
    }
    if let Some(r) = site.static_method(host, head, conn) {
        return Outcome::Ready(r);
    }
    if options.indexes {
        let url = url.to_vec();
        let signature = site.settings.server_signature.then(|| {
            format!("{} Server at {} Port {}", site.server_header, site.hosts[host].name, conn.local.port())
        });
        let source = match opened {
            None => listing::Source::Path(fs),
            Some(dir) => listing::Source::Checked(dir, rule),
        };
        return Outcome::Blocking(Box::new(move || listing::listing(host, source, &url, signature.as_deref())));
    }
    let why = format!(
        "Cannot serve directory {}: No matching DirectoryIndex ({}) found, and server-generated directory index forbidden by Options directive",
        fs.display(),
        eff.directory_index().join(",")
    );
    Outcome::Ready(site.error(host, 403, head, conn, &why))
}

/// A regular file: from the cache when it is small and unchanged, through
/// the descriptor kept open when it is large and unchanged, else opened
/// (and kept: its bytes when small, its descriptor when large). `opened` is
/// the descriptor a checked open gave (`meta` being its fstat): the file is
/// read from it, or answered from the cache when the cached copy is of the
/// very file it holds.
#[allow(clippy::too_many_arguments)]
fn serve_regular(
    site: &Site,
    host: usize,
    head: &RequestHead,
    conn: &ConnInfo,
    eff: &Effective,
    meta: &Metadata,
    fs: PathBuf,
    opened: Option<File>,
) -> Response {
    let cacheable = meta.len() <= MAX_ENTRY && head.header("range").is_none();
    if cacheable {
        if let Some(hit) = site.file_cache.get(&fs, meta) {
            return respond_whole(host, head, &hit.validators, hit.content_type.clone(), Body::Shared(hit.data.clone()), fs);
        }
    }
    let (file, meta) = match opened {
        Some(file) => (file, meta.clone()),
        None => {
            if meta.len() > MAX_ENTRY {
                if let Some(file) = site.file_cache.get_open(&fs, meta) {
                    return serve_file(site, host, head, eff, file, meta, fs);
                }
            }
            let file = match open(&fs) {
                Ok(f) => f,
                Err(e) => return open_error(site, host, head, conn, &fs, &e),
            };
            match file.metadata() {
                Ok(m) if m.is_file() => (file, m),
                Ok(_) => return site.error(host, 403, head, conn, &format!("not a regular file: {}", fs.display())),
                Err(e) => return open_error(site, host, head, conn, &fs, &e),
            }
        }
    };
    if cacheable && meta.len() <= MAX_ENTRY {
        let mut data = Vec::with_capacity(meta.len() as usize);
        if (&file).take(MAX_ENTRY + 1).read_to_end(&mut data).is_ok() && data.len() as u64 == meta.len() {
            let entry = Arc::new(CachedFile {
                identity: FileIdentity::of(&meta),
                data: Arc::from(data),
                validators: Validators::of(&meta),
                content_type: content_type(site, eff, &fs),
            });
            site.file_cache.insert(fs.clone(), entry.clone());
            return respond_whole(host, head, &entry.validators, entry.content_type.clone(), Body::Shared(entry.data.clone()), fs);
        }
    }
    let file = Arc::new(file);
    if meta.len() > MAX_ENTRY {
        site.file_cache.insert_open(fs.clone(), file.clone(), &meta);
    }
    serve_file(site, host, head, eff, file, &meta, fs)
}

/// A 200 (or 304/412) for a whole representation with known validators.
fn respond_whole(host: usize, head: &RequestHead, v: &Validators, ctype: Option<String>, body: Body, fs: PathBuf) -> Response {
    let mut r = Response::new(200, host);
    r.filename = Some(fs);
    if let Some(early) = precondition_response(&mut r, head, v) {
        return early;
    }
    r.add("Last-Modified", v.last_modified.clone());
    r.add("ETag", v.etag.clone());
    r.add("Accept-Ranges", "bytes");
    if let Some(t) = ctype {
        r.add("Content-Type", t);
    }
    r.body = body;
    r
}

/// Applies the conditional headers: Some(response) when they decide it.
fn precondition_response(r: &mut Response, head: &RequestHead, v: &Validators) -> Option<Response> {
    match evaluate_preconditions(head, v) {
        Precondition::Proceed => None,
        Precondition::NotModified => {
            let mut nm = Response::new(304, r.host);
            nm.filename = r.filename.take();
            Some(nm.header("Last-Modified", v.last_modified.clone()).header("ETag", v.etag.clone()))
        }
        Precondition::Failed => {
            let mut f = Response::new(412, r.host);
            f.filename = r.filename.take();
            f.body = Body::Bytes(b"<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n<title>412 Precondition Failed</title>\n</head><body>\n<h1>Precondition Failed</h1>\n<p>The precondition on the request for this URL evaluated to false.</p>\n</body></html>\n".to_vec());
            Some(f.header("Content-Type", "text/html; charset=iso-8859-1"))
        }
    }
}

pub(crate) fn open_error(site: &Site, host: usize, head: &RequestHead, conn: &ConnInfo, fs: &Path, e: &io::Error) -> Response {
    let status = match e.raw_os_error() {
        Some(libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG) => 404,
        Some(libc::EACCES | libc::EPERM | libc::ELOOP) => 403,
        _ => 500,
    };
    if status == 404 {
        // Not a fault of the request's form: logged at info, as Apache does.
        site.hosts[host].error_log.log(LogLevel::Info, Some(conn.peer), &format!("File does not exist: {}", fs.display()));
        return errors::respond(site, host, 404, Some(head), conn);
    }
    site.error(host, status, head, conn, &format!("cannot open {}: {e}", fs.display()))
}

fn redirect_to_slash(site: &Site, host: usize, head: &RequestHead, conn: &ConnInfo, raw_path: &[u8], query: &[u8]) -> Response {
    let authority = match head.host() {
        Some(h) if !h.is_empty() => String::from_utf8_lossy(h).into_owned(),
        _ => format!("{}:{}", site.hosts[host].name, conn.local.port()),
    };
    let location = format!("http://{authority}{}/{}", String::from_utf8_lossy(raw_path), String::from_utf8_lossy(query));
    let mut r = Response::new(301, host);
    r.body = Body::Bytes(errors::redirect_page(&location));
    r.header("Location", location).header("Content-Type", "text/html; charset=iso-8859-1")
}

fn content_type(site: &Site, eff: &Effective, fs: &Path) -> Option<String> {
    let name = fs.file_name().map_or(&b""[..], |n| n.as_bytes());
    let t = site.mime.lookup(name, eff.add_types())?;
    match eff.default_charset() {
        Some(cs) if (t == "text/html" || t == "text/plain") => Some(format!("{t}; charset={cs}")),
        _ => Some(t.to_string()),
    }
}

/// The validators of a file.
pub struct Validators {
    pub etag: String,
    pub modified: SystemTime,
    pub last_modified: String,
}

impl Validators {
    pub fn of(meta: &Metadata) -> Validators {
        let modified = UNIX_EPOCH + Duration::new(meta.mtime().max(0) as u64, meta.mtime_nsec().clamp(0, 999_999_999) as u32);
        let usec = meta.mtime().max(0) as u64 * 1_000_000 + meta.mtime_nsec().max(0) as u64 / 1000;
        Validators {
            // Apache's FileETag MTime Size form.
            etag: format!("\"{:x}-{:x}\"", meta.len(), usec),
            modified,
            last_modified: httpdate::fmt_http_date(modified),
        }
    }

    fn modified_secs(&self) -> u64 {
        self.modified.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
    }
}

/// Entity-tag comparison (RFC 9110 8.8.3.2) against a field value that is
/// `*` or a list of tags.
fn etag_matches(field: &[u8], ours: &str, weak_ok: bool) -> bool {
    let field = String::from_utf8_lossy(field);
    if field.trim() == "*" {
        return true;
    }
    field.split(',').map(str::trim).any(|tag| {
        let (weak, opaque) = match tag.strip_prefix("W/") {
            Some(t) => (true, t),
            None => (false, tag),
        };
        (weak_ok || !weak) && opaque == ours
    })
}

fn http_date_secs(field: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(field).ok()?;
    httpdate::parse_http_date(s.trim()).ok()?.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

/// The outcome of RFC 9110 13.2.2's evaluation order.
#[derive(Debug, PartialEq, Eq)]
pub enum Precondition {
    Proceed,
    NotModified,
    Failed,
}

pub fn evaluate_preconditions(head: &RequestHead, v: &Validators) -> Precondition {
    let get_or_head = matches!(head.method(), "GET" | "HEAD");
    if let Some(im) = head.header("if-match") {
        if !etag_matches(im, &v.etag, false) {
            return Precondition::Failed;
        }
    } else if let Some(date) = head.header("if-unmodified-since").and_then(http_date_secs) {
        if v.modified_secs() > date {
            return Precondition::Failed;
        }
    }
    if let Some(inm) = head.header("if-none-match") {
        if etag_matches(inm, &v.etag, true) {
            return if get_or_head { Precondition::NotModified } else { Precondition::Failed };
        }
    } else if get_or_head {
        if let Some(date) = head.header("if-modified-since").and_then(http_date_secs) {
            if v.modified_secs() <= date {
                return Precondition::NotModified;
            }
        }
    }
    Precondition::Proceed
}

#[derive(Debug, PartialEq, Eq)]
pub enum Ranges {
    /// No (usable) Range: send the whole representation.
    Whole,
    /// Inclusive (first, last) byte positions.
    Some(Vec<(u64, u64)>),
    Unsatisfiable,
}

/// Parses `bytes=` range sets against a representation of `size` bytes.
/// Syntax errors mean the field is ignored (RFC 9110 14.2).
pub fn parse_ranges(field: &[u8], size: u64) -> Ranges {
    let Ok(s) = std::str::from_utf8(field) else { return Ranges::Whole };
    let Some((unit, set)) = s.trim().split_once('=') else { return Ranges::Whole };
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return Ranges::Whole;
    }
    let mut out = Vec::new();
    let mut specs = 0;
    for spec in set.split(',') {
        let spec = spec.trim();
        if spec.is_empty() {
            continue;
        }
        specs += 1;
        let Some((a, b)) = spec.split_once('-') else { return Ranges::Whole };
        let (a, b) = (a.trim(), b.trim());
        let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
        if a.is_empty() {
            if !digits(b) {
                return Ranges::Whole;
            }
            let n: u64 = b.parse().unwrap_or(u64::MAX);
            if n > 0 && size > 0 {
                out.push((size.saturating_sub(n), size - 1));
            }
        } else {
            if !digits(a) || !(b.is_empty() || digits(b)) {
                return Ranges::Whole;
            }
            let first: u64 = match a.parse() {
                Ok(f) => f,
                Err(_) => continue,
            };
            let last: u64 = if b.is_empty() { u64::MAX } else { b.parse().unwrap_or(u64::MAX) };
            if last < first {
                return Ranges::Whole;
            }
            if first < size {
                out.push((first, last.min(size - 1)));
            }
        }
    }
    if specs == 0 || specs > MAX_RANGES {
        return Ranges::Whole;
    }
    if out.is_empty() {
        return Ranges::Unsatisfiable;
    }
    // Overlapping ranges are coalesced (RFC 9110 14.3 allows it; it defeats
    // requests that ask for the same bytes many times).
    let mut sorted = out.clone();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w[1].0 <= w[0].1.saturating_add(1)) {
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (f, l) in sorted {
            match merged.last_mut() {
                Some(m) if f <= m.1.saturating_add(1) => m.1 = m.1.max(l),
                _ => merged.push((f, l)),
            }
        }
        out = merged;
    }
    Ranges::Some(out)
}

fn if_range_allows(field: &[u8], v: &Validators) -> bool {
    let t = field.trim_ascii();
    if t.starts_with(b"\"") || t.starts_with(b"W/") {
        // Weak tags never match here (strong comparison).
        return t == v.etag.as_bytes();
    }
    http_date_secs(t) == Some(v.modified_secs())
}

static BOUNDARY_COUNTER: AtomicU64 = AtomicU64::new(0);

fn boundary() -> String {
    let n = BOUNDARY_COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    format!("{:016x}{:08x}", t ^ (u64::from(std::process::id()) << 32), n)
}

pub fn serve_file(site: &Site, host: usize, head: &RequestHead, eff: &Effective, file: Arc<File>, meta: &Metadata, fs: PathBuf) -> Response {
    let size = meta.len();
    let v = Validators::of(meta);
    let ctype = content_type(site, eff, &fs);
    let mut r = Response::new(200, host);
    r.filename = Some(fs);
    if let Some(early) = precondition_response(&mut r, head, &v) {
        return early;
    }
    let ranges = match head.header("range") {
        Some(range) if head.method() == "GET" && head.header("if-range").is_none_or(|ir| if_range_allows(ir, &v)) => {
            parse_ranges(range, size)
        }
        _ => Ranges::Whole,
    };
    r.add("Last-Modified", v.last_modified);
    r.add("ETag", v.etag);
    r.add("Accept-Ranges", "bytes");
    match ranges {
        Ranges::Whole => {
            if let Some(t) = ctype {
                r.add("Content-Type", t);
            }
            r.body = Body::File { file, start: 0, len: size };
        }
        Ranges::Unsatisfiable => {
            r.status = 416;
            r.add("Content-Range", format!("bytes */{size}"));
            r.add("Content-Type", "text/html; charset=iso-8859-1");
            r.body = Body::Bytes(format!(
                "<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n<title>416 Range Not Satisfiable</title>\n</head><body>\n<h1>Range Not Satisfiable</h1>\n<p>None of the ranges overlap the {size} bytes of this resource.</p>\n</body></html>\n"
            ).into_bytes());
        }
        Ranges::Some(list) if list.len() == 1 => {
            let (first, last) = list[0];
            r.status = 206;
            r.add("Content-Range", format!("bytes {first}-{last}/{size}"));
            if let Some(t) = ctype {
                r.add("Content-Type", t);
            }
            r.body = Body::File { file, start: first, len: last - first + 1 };
        }
        Ranges::Some(list) => {
            r.status = 206;
            let b = boundary();
            let part_type = ctype.map(|t| format!("Content-Type: {t}\r\n")).unwrap_or_default();
            let mut parts = Vec::with_capacity(list.len() * 2 + 1);
            for (i, (first, last)) in list.iter().enumerate() {
                let sep = if i == 0 { "" } else { "\r\n" };
                parts.push(Part::Bytes(format!("{sep}--{b}\r\n{part_type}Content-Range: bytes {first}-{last}/{size}\r\n\r\n").into_bytes()));
                parts.push(Part::FileRange { start: *first, len: last - first + 1 });
            }
            parts.push(Part::Bytes(format!("\r\n--{b}--\r\n").into_bytes()));
            r.add("Content-Type", format!("multipart/byteranges; boundary={b}"));
            r.body = Body::Parts { file, parts };
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(parse_ranges(b"bytes=0-9", 100), Ranges::Some(vec![(0, 9)]));
        assert_eq!(parse_ranges(b"bytes=90-", 100), Ranges::Some(vec![(90, 99)]));
        assert_eq!(parse_ranges(b"bytes=-10", 100), Ranges::Some(vec![(90, 99)]));
        assert_eq!(parse_ranges(b"bytes=-1000", 100), Ranges::Some(vec![(0, 99)]));
        assert_eq!(parse_ranges(b"bytes=50-1000", 100), Ranges::Some(vec![(50, 99)]));
        assert_eq!(parse_ranges(b"bytes=0-1, 10-19", 100), Ranges::Some(vec![(0, 1), (10, 19)]));
        assert_eq!(parse_ranges(b"bytes=0-10,5-20", 100), Ranges::Some(vec![(0, 20)]));
        assert_eq!(parse_ranges(b"bytes=100-", 100), Ranges::Unsatisfiable);
        assert_eq!(parse_ranges(b"bytes=-0", 100), Ranges::Unsatisfiable);
        assert_eq!(parse_ranges(b"bytes=5-1", 100), Ranges::Whole);
        assert_eq!(parse_ranges(b"items=0-1", 100), Ranges::Whole);
        assert_eq!(parse_ranges(b"bytes=a-b", 100), Ranges::Whole);
        let many = format!("bytes={}", (0..201).map(|i| format!("{i}-{i}")).collect::<Vec<_>>().join(","));
        assert_eq!(parse_ranges(many.as_bytes(), 1000), Ranges::Whole);
    }

    #[test]
    fn etags() {
        assert!(etag_matches(b"\"a\", \"b\"", "\"b\"", false));
        assert!(etag_matches(b"W/\"b\"", "\"b\"", true));
        assert!(!etag_matches(b"W/\"b\"", "\"b\"", false));
        assert!(etag_matches(b"*", "\"x\"", false));
        assert!(!etag_matches(b"\"c\"", "\"b\"", true));
    }
}
