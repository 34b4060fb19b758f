//! Compression, as mod_deflate and mod_brotli: a response is sent gzip- or
//! brotli-encoded when the configuration offers an encoder for it
//! (`AddOutputFilterByType`, `SetOutputFilter`, `AddOutputFilter`) and the
//! client accepts that coding; static files may also be answered by a
//! precompressed copy beside them (`PrecompressedFiles`, as nginx's
//! gzip_static).
//!
//! The handler that makes a response attaches an [`Offer`] to it (what may
//! be done: the encoders configured for it, their levels, the file it comes
//! from); [`finish`] is the one entry point, called where the response
//! leaves the handler for the MPM, and decides with the request: nothing
//! for a response without an offer, so a site without compression pays a
//! branch. Apache's rules: only 200 answers are encoded (not 206 ranges,
//! not 204 or errors), nor one that already has a Content-Encoding or says
//! `Cache-Control: no-transform`; `Vary: Accept-Encoding` goes on every
//! answer an encoder was offered for, encoded or not, but empty answers and
//! static files under [`MIN_STATIC_LENGTH`] are left alone, Vary and all; the ETag of an encoded answer gets `-gzip` or `-br`
//! (`DeflateAlterETag`, `BrotliAlterETag`: AddSuffix by default), and a 304 answers
//! such a tag with the tag of the representation the client would get.
//!
//! - `negotiate`: Accept-Encoding, q-values and preference.
//! - `cache`: compressed copies of static files per file version.
//! - `stream`: the encoders, whole or over a streamed body.

pub mod cache;
pub mod negotiate;
pub mod stream;

use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use warren_config::compress::{AlterETag, Encoders, OutputFilters, DEFAULT_BROTLI_QUALITY, DEFAULT_BROTLI_WINDOW, DEFAULT_DEFLATE_LEVEL};
use warren_http::RequestHead;

pub use cache::Levels;
pub use negotiate::{acceptable, Coding};
pub use stream::StreamEncoder;

use warren_stat_cache::FileVersion;
use crate::dir_config::Effective;
use crate::{Body, Response, Site};

/// Static files shorter than this are sent as they are, without `Vary`,
/// as Debian's Apache 2.4.71 sends them (measured: 68 bytes are sent
/// as is, 69 gzip-encoded). A script's answer has no such bound there: a
/// two-byte PHP answer is encoded too.
pub const MIN_STATIC_LENGTH: u64 = 69;

/// The static file a response is made of, for the compressed cache and
/// the precompressed copies beside it.
#[derive(Debug)]
pub struct StaticFile {
    pub path: PathBuf,
    pub identity: FileVersion,
    pub mtime: (i64, i64),
    pub size: u64,
    /// PrecompressedFiles On.
    pub precompressed: bool,
    /// Whether a precompressed copy may be a symbolic link (Options
    /// FollowSymLinks, without SymLinksIfOwnerMatch).
    pub follow_links: bool,
}

/// What may be done to a response; see the module's overview.
#[derive(Debug)]
pub struct Offer {
    /// The encoders configured for the response's type.
    pub encoders: Encoders,
    pub levels: Levels,
    pub file: Option<StaticFile>,
}

/// The compression directives of a request's layers, merged, for a
/// response whose type is not known yet (a FastCGI application's): see
/// [`Rules::offer`].
#[derive(Clone, Debug)]
pub struct Rules {
    filters: OutputFilters,
    /// What the script's extension adds (AddOutputFilter).
    by_extension: Encoders,
}

fn layers<'a>(eff: &'a Effective) -> impl Iterator<Item = &'a OutputFilters> + Clone {
    eff.layers.iter().filter_map(|l| l.output_filters.as_ref())
}

/// The media type of a Content-Type value, without parameters.
fn media_type(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or("").trim()
}

fn extension(path: &Path) -> Option<&str> {
    path.file_name()?.to_str()?.rsplit_once('.').map(|(_, e)| e)
}

/// The encoders, levels and PrecompressedFiles of `filters` (least
/// specific first) for a file with extension `ext` and type `media`.
fn resolve<'a>(filters: impl Iterator<Item = &'a OutputFilters> + Clone, ext: Option<&str>, media: Option<&str>) -> (Encoders, Levels, bool) {
    let mut set = Encoders::NONE;
    let mut by_ext = Encoders::NONE;
    let mut by_type = Encoders::NONE;
    let mut levels = Levels {
        gzip: DEFAULT_DEFLATE_LEVEL,
        brotli_quality: DEFAULT_BROTLI_QUALITY,
        brotli_window: DEFAULT_BROTLI_WINDOW,
        gzip_etag: AlterETag::AddSuffix,
        brotli_etag: AlterETag::AddSuffix,
    };
    let mut precompressed = false;
    for f in filters {
        if let Some(s) = f.set {
            set = s;
        }
        if let Some(ext) = ext {
            for (x, e) in &f.by_extension {
                if x.eq_ignore_ascii_case(ext) {
                    by_ext = e.unwrap_or(Encoders::NONE);
                }
            }
        }
        if let Some(media) = media {
            for (t, e) in &f.by_type {
                if t.eq_ignore_ascii_case(media) {
                    by_type = by_type.or(*e);
                }
            }
        }
        levels.gzip = f.deflate_level.unwrap_or(levels.gzip);
        levels.brotli_quality = f.brotli_quality.unwrap_or(levels.brotli_quality);
        levels.brotli_window = f.brotli_window.unwrap_or(levels.brotli_window);
        levels.gzip_etag = f.deflate_alter_etag.unwrap_or(levels.gzip_etag);
        levels.brotli_etag = f.brotli_alter_etag.unwrap_or(levels.brotli_etag);
        precompressed = f.precompressed.unwrap_or(precompressed);
    }
    (set.or(by_ext).or(by_type), levels, precompressed)
}

/// The offer for a static file of type `content_type`: None where no
/// compression directive applies (nothing to do, nothing allocated).
pub fn static_offer(eff: &Effective, path: &Path, meta: &std::fs::Metadata, content_type: Option<&str>) -> Option<Box<Offer>> {
    let filters = layers(eff);
    filters.clone().next()?;
    let (encoders, levels, precompressed) = resolve(filters, extension(path), content_type.map(media_type));
    if !encoders.any() && !precompressed {
        return None;
    }
    let options = eff.options();
    let file = StaticFile {
        path: path.to_path_buf(),
        identity: FileVersion::of(meta),
        mtime: (meta.mtime(), meta.mtime_nsec()),
        size: meta.len(),
        precompressed,
        follow_links: options.follow_symlinks && !options.symlinks_if_owner_match,
    };
    Some(Box::new(Offer { encoders, levels, file: Some(file) }))
}

/// The rules for a script's answer: None where no compression directive
/// applies.
pub fn gateway_rules(eff: &Effective, script: &Path) -> Option<Box<Rules>> {
    let mut filters = layers(eff);
    let mut merged = filters.next()?.clone();
    for f in filters {
        merged.merge(f);
    }
    let (by_extension, _, _) = resolve(std::iter::once(&merged), extension(script), None);
    Some(Box::new(Rules { filters: merged, by_extension }))
}

impl Rules {
    /// The offer for an answer of this Content-Type.
    pub fn offer(&self, content_type: Option<&str>) -> Option<Box<Offer>> {
        let (encoders, levels, _) = resolve(std::iter::once(&self.filters), None, content_type.map(media_type));
        let encoders = encoders.or(self.by_extension);
        encoders.any().then(|| Box::new(Offer { encoders, levels, file: None }))
    }
}

fn header<'r>(resp: &'r Response, name: &str) -> Option<&'r str> {
    resp.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

/// The response as it leaves for the client of `head`: encoded when its
/// offer and the client agree on a coding (see the module's overview).
pub fn finish(site: &Site, head: Option<&RequestHead>, mut resp: Response) -> Response {
    let Some(offer) = resp.compress.take() else { return resp };
    let Some(head) = head else { return resp };
    // SetEnvIf's no-gzip (Debian's BrowserMatch lines for old browsers) and
    // mod_brotli's no-brotli: warren reads either as "no compression".
    let env_says_no = resp.filters.as_ref().is_some_and(|f| f.env.get("no-gzip").is_some() || f.env.get("no-brotli").is_some());
    if !matches!(resp.status, 200 | 206 | 304) || env_says_no || header(&resp, "content-encoding").is_some() {
        return resp;
    }
    if header(&resp, "cache-control").is_some_and(|v| v.to_ascii_lowercase().contains("no-transform")) {
        return resp;
    }
    let empty = resp.status == 200 && match &resp.body {
        Body::Stream { len, .. } => *len == Some(0),
        body => body.is_empty(),
    };
    // An empty answer (a script's that printed nothing) is left alone too.
    if empty || offer.file.as_ref().is_some_and(|f| f.size < MIN_STATIC_LENGTH) {
        return resp;
    }
    let precompressed = offer.file.as_ref().filter(|f| f.precompressed);
    // An answer that depends on Accept-Encoding says so, encoded or not
    // (a range of the file too, as Apache's).
    resp.vary_on("Accept-Encoding");
    if resp.status == 206 {
        return resp;
    }
    for coding in acceptable(head.header("accept-encoding")).iter() {
        if let Some(copy) = precompressed.and_then(|f| sibling(f, coding)) {
            if resp.status == 200 {
                resp.body = copy;
            }
            return encoded(resp, coding, offer.levels);
        }
        if !coding.offered_by(offer.encoders) {
            continue;
        }
        if resp.status == 304 {
            return encoded(resp, coding, offer.levels);
        }
        let body = std::mem::replace(&mut resp.body, Body::Empty);
        return match encode_body(site, &offer, body, coding) {
            Ok(body) => {
                resp.body = body;
                encoded(resp, coding, offer.levels)
            }
            Err(body) => {
                resp.body = body;
                resp
            }
        };
    }
    resp
}


/// The response's headers for its encoded representation.
pub(crate) fn encoded(mut resp: Response, coding: Coding, levels: Levels) -> Response {
    resp.add("Content-Encoding", coding.token());
    // Ranges are of the identity representation (a Range request is
    // answered with it), so the encoded one does not offer them.
    resp.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("accept-ranges") && !n.eq_ignore_ascii_case("content-length"));
    let alter = match coding {
        Coding::Gzip => levels.gzip_etag,
        Coding::Brotli => levels.brotli_etag,
    };
    match alter {
        AlterETag::AddSuffix => {
            if let Some((_, tag)) = resp.headers.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case("etag")) {
                if let Some(open) = tag.strip_suffix('"') {
                    *tag = format!("{open}{}\"", coding.etag_suffix());
                }
            }
        }
        AlterETag::NoChange => {}
        AlterETag::Remove => resp.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("etag")),
    }
    resp
}

/// `body` encoded in `coding`; given back when it cannot be (a body of
/// parts, a file too large to encode whole and keep).
fn encode_body(site: &Site, offer: &Offer, body: Body, coding: Coding) -> Result<Body, Body> {
    let levels = offer.levels;
    match (body, &offer.file) {
        (Body::Bytes(b), None) => Ok(Body::Bytes(stream::compress_all(&b, coding, levels))),
        // An application's answer the response cache read whole and kept.
        (Body::Shared(b), None) => Ok(Body::Bytes(stream::compress_all(&b, coding, levels))),
        (Body::Stream { source, .. }, _) => Ok(Body::Stream { source: Box::new(stream::Encoded::new(source, StreamEncoder::new(coding, levels))), len: None }),
        (body @ (Body::Shared(_) | Body::File { .. } | Body::Bytes(_)), Some(f)) => {
            if let Some(copy) = site.caches.compressed.get(&f.path, coding, &f.identity, levels) {
                return Ok(Body::Shared(copy));
            }
            let source: std::borrow::Cow<[u8]> = match &body {
                Body::Shared(data) => std::borrow::Cow::Borrowed(data),
                Body::Bytes(data) => std::borrow::Cow::Borrowed(data),
                Body::File { file, start, len } if *len <= cache::MAX_SOURCE => {
                    let mut data = vec![0; *len as usize];
                    if file.read_exact_at(&mut data, *start).is_err() {
                        return Err(body);
                    }
                    std::borrow::Cow::Owned(data)
                }
                _ => return Err(body),
            };
            let copy: Arc<[u8]> = Arc::from(stream::compress_all(&source, coding, levels));
            site.caches.compressed.insert(f.path.clone(), coding, f.identity, levels, copy.clone());
            Ok(Body::Shared(copy))
        }
        (body, _) => Err(body),
    }
}

/// The precompressed copy of `f` in `coding` (`file.css.br`,
/// `file.css.gz`), if there is one at least as new as the file.
fn sibling(f: &StaticFile, coding: Coding) -> Option<Body> {
    let mut name = f.path.clone().into_os_string();
    name.push(match coding {
        Coding::Gzip => ".gz",
        Coding::Brotli => ".br",
    });
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    let mut flags = libc::O_CLOEXEC | libc::O_NONBLOCK;
    if !f.follow_links {
        // The file itself was checked; a copy beside it must not be a
        // link either.
        flags |= libc::O_NOFOLLOW;
    }
    let file: File = open.custom_flags(flags).open(&name).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || (meta.mtime(), meta.mtime_nsec()) < f.mtime {
        return None;
    }
    Some(Body::File { file: Arc::new(file), start: 0, len: meta.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_follows_the_layers() {
        let mut server = OutputFilters::default();
        server.by_type.push(("text/css".into(), Encoders { gzip: true, brotli: false }));
        server.deflate_level = Some(9);
        let mut dir = OutputFilters::default();
        dir.by_type.push(("text/css".into(), Encoders { gzip: false, brotli: true }));
        dir.by_extension.push(("txt".into(), Some(Encoders { gzip: true, brotli: false })));
        let (e, levels, pre) = resolve([&server, &dir].into_iter(), Some("css"), Some("text/css"));
        assert_eq!(e, Encoders { gzip: true, brotli: true });
        assert_eq!(levels.gzip, 9);
        assert_eq!(levels.brotli_quality, DEFAULT_BROTLI_QUALITY);
        assert!(!pre);
        let (e, ..) = resolve([&server, &dir].into_iter(), Some("TXT"), Some("text/plain"));
        assert_eq!(e, Encoders { gzip: true, brotli: false });
        let mut below = OutputFilters::default();
        below.by_extension.push(("txt".into(), None));
        let (e, ..) = resolve([&server, &dir, &below].into_iter(), Some("txt"), Some("text/plain"));
        assert_eq!(e, Encoders::NONE, "RemoveOutputFilter undoes AddOutputFilter above");
        assert_eq!(media_type("Text/HTML; charset=UTF-8"), "Text/HTML");
    }

    #[test]
    fn encoded_headers() {
        let mut r = Response::new(200, 0).header("ETag", "\"a-b\"").header("Accept-Ranges", "bytes");
        r.vary_on("Accept-Encoding");
        r.vary_on("Accept-Encoding");
        let levels = resolve(std::iter::empty(), None, None).1;
        let r = encoded(r, Coding::Gzip, levels);
        assert_eq!(header(&r, "etag"), Some("\"a-b-gzip\""));
        assert_eq!(header(&r, "vary"), Some("Accept-Encoding"));
        assert_eq!(header(&r, "content-encoding"), Some("gzip"));
        assert!(header(&r, "accept-ranges").is_none());
        let mut r = Response::new(200, 0).header("Vary", "Cookie");
        r.vary_on("Accept-Encoding");
        assert_eq!(header(&r, "vary"), Some("Cookie, Accept-Encoding"));
        let r = Response::new(200, 0).header("ETag", "\"a-b\"");
        assert_eq!(header(&encoded(r, Coding::Brotli, Levels { brotli_etag: AlterETag::NoChange, ..levels }), "etag"), Some("\"a-b\""));
        let r = Response::new(200, 0).header("ETag", "\"a-b\"");
        assert_eq!(header(&encoded(r, Coding::Gzip, Levels { gzip_etag: AlterETag::Remove, ..levels }), "etag"), None);
    }
}
