//! Static files: mapping to the filesystem with symlink and access checks,
//! DirectoryIndex and trailing-slash redirects, validators (ETag,
//! Last-Modified), the conditional requests of RFC 9110 13, and ranges
//! (RFC 9110 14) including multipart/byteranges.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::sync::Arc;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use warren_config::{Handler, LogLevel};
use warren_http::RequestHead;

use crate::compress::{self, Offer};
use crate::conditional::{evaluate_preconditions, if_range_allows, parse_ranges, Precondition, Ranges, Validators};
use crate::file_cache::{CachedFile, MAX_ENTRY};
use crate::mime::Fields;
use crate::multiviews::Negotiated;
use crate::dir_config::Effective;
use crate::request::{Request, Route};
use crate::site::Site;
use crate::symlinks::{self, Access, LinkRule, Refused};
use crate::{listing, path, Body, Outcome, Part, Response};

/// Opens a file a request named, beneath the root it was mapped under.
fn open(site: &Site, host: usize, path: &Path) -> io::Result<File> {
    symlinks::open_in_root(site, host, path, LinkRule::Follow, Access::Read).map_err(|e| match e {
        Refused::Io(e) => e,
        Refused::Link(_) => io::Error::from_raw_os_error(libc::EACCES),
    })
}

/// `.htaccess`, `.htpasswd` and the AccessFileName files are never sent:
/// every Apache configuration denies `^\.ht` (Debian's in apache2.conf),
/// and users expect it of a server that reads them.
fn is_access_file(site: &Site, host: usize, fs: &Path) -> bool {
    path::file_name(fs).is_some_and(|n| site.is_access_file_name(host, n))
}

impl Site {
    /// Whether a file of this name is never sent (see `is_access_file`).
    pub(crate) fn is_access_file_name(&self, host: usize, name: &[u8]) -> bool {
        name.starts_with(b".ht") || self.hosts[host].access_file_names.iter().any(|a| a.as_bytes() == name)
    }
}

/// Whether the directory `fs` has none of its DirectoryIndex files (for
/// FallbackResource, which then answers in place of a listing). An index
/// named by URL (`/index.php`) is taken as present: [`serve`] judges it.
pub(crate) fn lacks_index(eff: &Effective, fs: &Path) -> bool {
    eff.directory_index().iter().all(|index| !index.contains('/') && index != "." && index != ".." && !fs.join(index).is_file())
}

pub fn serve(site: &Site, route: Route) -> Outcome {
    let Route { req, url, query, fs, dir: eff } = route;
    let (host, conn) = (req.host, req.conn);
    if !eff.allows(req.head, conn) || is_access_file(site, host, &fs) {
        return Outcome::Ready(site.error(req, 403, &format!("client denied by server configuration: {}", fs.display())));
    }
    let options = eff.options();
    let rule = LinkRule::of(options);
    // Where links are restricted, the path is opened with its links checked
    // and served from that descriptor; where they are not, a stat of the path
    // is all the cache needs.
    let (meta, opened) = if rule == LinkRule::Follow {
        match std::fs::metadata(&fs) {
            Ok(m) => (m, None),
            Err(e) => return Outcome::Ready(site.open_error(req, &fs, &e)),
        }
    } else {
        let checked = symlinks::open_in_root(site, host, &fs, rule, Access::Read).and_then(|f| match f.metadata() {
            Ok(m) => Ok((m, f)),
            Err(e) => Err(Refused::Io(e)),
        });
        match checked {
            Ok((m, f)) => (m, Some(f)),
            Err(Refused::Link(link)) => return Outcome::Ready(symlinks::refused(site, req, &link)),
            Err(Refused::Io(e)) => return Outcome::Ready(site.open_error(req, &fs, &e)),
        }
    };
    if meta.is_file() {
        return Outcome::Ready(serve_regular(site, req, &eff, &meta, fs, opened));
    }
    if !meta.is_dir() {
        return Outcome::Ready(site.error(req, 403, &format!("not a regular file: {}", fs.display())));
    }
    if !url.ends_with(b"/") {
        if !eff.directory_slash() {
            // Apache's core then declines to serve a directory: no index, no listing.
            return Outcome::Ready(site.error(req, 404, &format!("Attempt to serve directory: {}", fs.display())));
        }
        return Outcome::Ready(redirect_to_slash(site, req, query));
    }
    // Index candidates are judged by the directory's rule, as Apache judges
    // a link by the Options of the directory it is in; a checked directory's
    // candidates are opened below its descriptor, so the directory cannot be
    // swapped between its check and theirs.
    let mut refused_link = false;
    for index in eff.directory_index() {
        // A name is looked up in the directory; anything else is a URL, as
        // Apache's subrequest reads it (`/index.php`, `../front.php`), mapped
        // like any request and never above the root.
        let plain = !index.contains('/') && index != "." && index != "..";
        let (candidate, index_url) = if plain {
            let mut index_url = url.to_vec();
            index_url.extend_from_slice(index.as_bytes());
            (fs.join(index), index_url)
        } else {
            let mapped = path::resolve_reference(url, index.as_bytes())
                .ok_or_else(|| path::Climbs { written: index.clone() })
                .and_then(|u| Ok((site.fs_path(req, &u)?, u)));
            match mapped {
                Ok(m) => m,
                Err(climbs) => {
                    site.hosts[host].error_log.error(Some(conn.useragent), &format!("DirectoryIndex {index}: {climbs}; candidate skipped"));
                    continue;
                }
            }
        };
        // With MultiViews a candidate no file has is negotiated
        // (`DirectoryIndex index` finds index.html.en), as Apache's index
        // subrequest is; one negotiation cannot answer gives way to the next.
        if options.multiviews && std::fs::symlink_metadata(&candidate).is_err() {
            let candidate_eff = site.effective_for(req, &candidate, &index_url);
            if let Some(Negotiated::Chosen(o)) = site.multiviews(req, &index_url, query, &candidate, &candidate_eff) {
                return o;
            }
            continue;
        }
        let (meta, file) = match &opened {
            None => match std::fs::metadata(&candidate) {
                Ok(m) => (m, None),
                Err(_) => continue,
            },
            Some(dir) => match if plain { symlinks::open_beneath(dir.as_fd(), &fs, Path::new(index), rule, Access::Read) } else { symlinks::open_in_root(site, host, &candidate, rule, Access::Read) } {
                Ok(f) => match f.metadata() {
                    Ok(m) => (m, Some(f)),
                    Err(_) => continue,
                },
                Err(Refused::Link(link)) => {
                    // Logged now, once; the next candidate may still answer
                    // (as in Apache, where each candidate is a subrequest).
                    site.hosts[host].error_log.error(
                        Some(conn.useragent),
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
        let eff = site.effective_for(req, &candidate, &index_url);
        // An index elsewhere (`DirectoryIndex /private/page.html`) is
        // stored only if its own rules let anyone have it.
        let kept_from_cache = site.kept_from_cache(req, &index_url, Some(&candidate), true);
        // The index's own sections give the answer's headers and expiry
        // (`<FilesMatch \.php$> ExpiresActive Off`), as mod_dir's internal
        // redirect takes the index's configuration: they win over the
        // directory's, which the pipeline attaches after.
        let filters = crate::filters::RequestFilters::for_request(req, &index_url, &eff);
        let outcome = if let Some(Some(h @ (Handler::FastCgi(_) | Handler::Pool(_)))) = eff.handler() {
            let backend = crate::dir_config::backend_of(h);
            let index = Route { req, url: &index_url, query, fs: candidate, dir: eff };
            site.script_gateway(&index, &backend, 0, Some(&meta))
        } else {
            // A CGI program as the index (`DirectoryIndex index.cgi`) runs.
            let index = Route { req, url: &index_url, query, fs: candidate, dir: eff };
            match site.cgi_route(&index) {
                Some(o) => o,
                None => {
                    let Route { fs: candidate, dir: eff, .. } = index;
                    if let Some(r) = site.static_method(req) {
                        return Outcome::Ready(typed_options(site, r, &eff, &candidate, false));
                    } else if !eff.allows(req.head, conn) {
                        Outcome::Ready(site.error(req, 403, &format!("client denied by server configuration: {}", candidate.display())))
                    } else {
                        Outcome::Ready(serve_regular(site, req, &eff, &meta, candidate, file))
                    }
                }
            }
        };
        let outcome = if kept_from_cache { outcome.restricted() } else { outcome };
        return crate::filters::attach(outcome, filters, req.head);
    }
    if refused_link {
        // Not a listing in place of an index that a link was refused for.
        return Outcome::Ready(site.error_page(req, 403));
    }
    if let Some(r) = site.static_method(req) {
        return Outcome::Ready(typed_options(site, r, &eff, &fs, true));
    }
    // mod_autoindex lists (or refuses) for GET only; a POST falls to
    // Apache's default handler, which serves no directory: 404.
    if req.head.method() == "POST" {
        site.hosts[host].error_log.log(LogLevel::Info, Some(conn.useragent), &format!("Attempt to serve directory: {}", fs.display()));
        return Outcome::Ready(site.error_page(req, 404));
    }
    if options.indexes {
        let url = url.to_vec();
        let signature = crate::errors::signature_words(site, host, conn.local.port());
        let ignore = listing::Ignore::new(eff.index_ignore(), fs.clone());
        let dir = match opened {
            None => match open(site, host, &fs) {
                Ok(dir) => dir,
                Err(e) => return Outcome::Ready(site.open_error(req, &fs, &e)),
            },
            Some(dir) => dir,
        };
        return Outcome::Blocking(Box::new(move || listing::listing(host, dir, rule, &url, signature.as_deref(), &ignore)));
    }
    let why = format!(
        "Cannot serve directory {}: No matching DirectoryIndex ({}) found, and server-generated directory index forbidden by Options directive",
        fs.display(),
        eff.directory_index().join(",")
    );
    Outcome::Ready(site.error(req, 403, &why))
}

/// A regular file: from the cache when it is small and unchanged, through
/// the descriptor kept open when it is large and unchanged, else opened
/// (and kept: its bytes when small, its descriptor when large). `opened` is
/// the descriptor a checked open gave (`meta` being its fstat): the file is
/// read from it, or answered from the cache when the cached copy is of the
/// very file it holds.
fn serve_regular(site: &Site, req: Request, eff: &Effective, meta: &Metadata, fs: PathBuf, opened: Option<File>) -> Response {
    if let Some(refused) = crate::scripts::refuse_static(site, req, eff, &fs) {
        return refused;
    }
    let (host, head) = (req.host, req.head);
    let cacheable = meta.len() <= MAX_ENTRY && head.header("range").is_none();
    if cacheable {
        if let Some(hit) = site.caches.files.get(&fs, meta) {
            let ctype = forced_type(req).or_else(|| hit.fields.content_type.clone());
            let offer = offer_for(eff, &fs, meta, &hit.fields, ctype.as_deref());
            return respond_whole(host, head, &hit.validators, (&hit.fields, ctype), Body::Shared(hit.data.clone()), fs, offer);
        }
    }
    let (file, meta) = match opened {
        Some(file) => (file, meta.clone()),
        None => {
            if meta.len() > MAX_ENTRY {
                if let Some(file) = site.caches.files.get_open(&fs, meta) {
                    return serve_file(site, req, eff, file, meta, fs);
                }
            }
            let file = match open(site, host, &fs) {
                Ok(f) => f,
                Err(e) => return site.open_error(req, &fs, &e),
            };
            match file.metadata() {
                Ok(m) if m.is_file() => (file, m),
                Ok(_) => return site.error(req, 403, &format!("not a regular file: {}", fs.display())),
                Err(e) => return site.open_error(req, &fs, &e),
            }
        }
    };
    if cacheable && meta.len() <= MAX_ENTRY {
        let mut data = Vec::with_capacity(meta.len() as usize);
        if (&file).take(MAX_ENTRY + 1).read_to_end(&mut data).is_ok() && data.len() as u64 == meta.len() {
            let entry = Arc::new(CachedFile {
                data: Arc::from(data),
                validators: Validators::of(&meta),
                fields: fields(site, eff, &fs),
            });
            site.caches.files.insert(fs.clone(), &meta, entry.clone());
            let ctype = forced_type(req).or_else(|| entry.fields.content_type.clone());
            let offer = offer_for(eff, &fs, &meta, &entry.fields, ctype.as_deref());
            return respond_whole(host, head, &entry.validators, (&entry.fields, ctype), Body::Shared(entry.data.clone()), fs, offer);
        }
    }
    let file = Arc::new(file);
    if meta.len() > MAX_ENTRY {
        site.caches.files.insert_open(fs.clone(), file.clone(), &meta);
    }
    serve_file(site, req, eff, file, &meta, fs)
}

/// A 200 (or 304/412) for a whole representation with known validators.
fn respond_whole(host: usize, head: &RequestHead, v: &Validators, (fields, ctype): (&Fields, Option<String>), body: Body, fs: PathBuf, offer: Option<Box<Offer>>) -> Response {
    let mut r = Response::new(200, host);
    r.filename = Some(fs);
    if let Some(mut early) = precondition_response(&mut r, head, v) {
        early.compress = offer;
        return early;
    }
    r.compress = offer;
    r.add("Last-Modified", v.last_modified.clone());
    r.add("ETag", v.etag.clone());
    r.add("Accept-Ranges", "bytes");
    fields.add_to(&mut r, ctype, head);
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
            f.body = Body::Bytes(b"<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01//EN\" \"http://www.w3.org/TR/html4/strict.dtd\">\n<html><head>\n<title>412 Precondition Failed</title>\n</head><body>\n<h1>Precondition Failed</h1>\n<p>The precondition on the request for this URL evaluated to false.</p>\n</body></html>\n".to_vec());
            Some(f.header("Content-Type", "text/html; charset=iso-8859-1"))
        }
    }
}

fn redirect_to_slash(site: &Site, req: Request, query: &[u8]) -> Response {
    let raw_path = path::split_query(req.head.path_and_query()).0;
    let location = format!("{}://{}{}/{}", req.conn.scheme(), site.client_authority(req), String::from_utf8_lossy(raw_path), String::from_utf8_lossy(query));
    site.redirect_to(req, 301, location)
}

/// mod_rewrite's `[T=type]` for this request, which no cache keeps.
fn forced_type(req: Request) -> Option<String> {
    req.pass.forced_type.map(str::to_string)
}

/// An OPTIONS answer (`r`) with the Content-Type Apache's mod_mime gives
/// the resource, as Apache sends it: the file's by its name (a missing one
/// too), `httpd/unix-directory` for a directory.
pub(crate) fn typed_options(site: &Site, mut r: Response, eff: &Effective, fs: &Path, directory: bool) -> Response {
    if r.status == 200 {
        let t = if directory { Some("httpd/unix-directory".to_string()) } else { fields(site, eff, fs).content_type };
        if let Some(t) = t {
            r.add("Content-Type", t);
        }
    }
    r
}

/// The fields every extension of the file's name gives (mod_mime).
fn fields(site: &Site, eff: &Effective, fs: &Path) -> Fields {
    let name = fs.file_name().map_or(&b""[..], |n| n.as_bytes());
    site.mime.typing(name, eff).fields(eff.default_charset())
}

/// The compression offer for a file, none for one already encoded (a
/// `.gz` with AddEncoding): mod_deflate does not encode it again.
fn offer_for(eff: &Effective, fs: &Path, meta: &Metadata, fields: &Fields, ctype: Option<&str>) -> Option<Box<Offer>> {
    if fields.content_encoding.is_some() {
        return None;
    }
    compress::static_offer(eff, fs, meta, ctype)
}

static BOUNDARY_COUNTER: AtomicU64 = AtomicU64::new(0);

fn boundary() -> String {
    let n = BOUNDARY_COUNTER.fetch_add(1, Ordering::Relaxed);
    let t = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    format!("{:016x}{:08x}", t ^ (u64::from(std::process::id()) << 32), n)
}

pub fn serve_file(site: &Site, req: Request, eff: &Effective, file: Arc<File>, meta: &Metadata, fs: PathBuf) -> Response {
    let (host, head) = (req.host, req.head);
    let size = meta.len();
    let v = Validators::of(meta);
    let fields = fields(site, eff, &fs);
    let ctype = forced_type(req).or_else(|| fields.content_type.clone());
    let offer = offer_for(eff, &fs, meta, &fields, ctype.as_deref());
    let mut r = Response::new(200, host);
    r.filename = Some(fs);
    if let Some(mut early) = precondition_response(&mut r, head, &v) {
        early.compress = offer;
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
            fields.add_to(&mut r, ctype, head);
            r.body = Body::File { file, start: 0, len: size };
            r.compress = offer;
        }
        Ranges::Unsatisfiable => {
            r.status = 416;
            r.add("Content-Range", format!("bytes */{size}"));
            r.add("Content-Type", "text/html; charset=iso-8859-1");
            r.body = Body::Bytes(format!(
                "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 4.01//EN\" \"http://www.w3.org/TR/html4/strict.dtd\">\n<html><head>\n<title>416 Range Not Satisfiable</title>\n</head><body>\n<h1>Range Not Satisfiable</h1>\n<p>None of the ranges overlap the {size} bytes of this resource.</p>\n</body></html>\n"
            ).into_bytes());
        }
        Ranges::Some(list) if list.len() == 1 => {
            let (first, last) = list[0];
            r.status = 206;
            r.add("Content-Range", format!("bytes {first}-{last}/{size}"));
            fields.add_to(&mut r, ctype, head);
            r.body = Body::File { file, start: first, len: last - first + 1 };
            // For its Vary: a range is of the identity representation, never encoded.
            r.compress = offer;
        }
        Ranges::Some(list) => {
            r.status = 206;
            r.compress = offer;
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
