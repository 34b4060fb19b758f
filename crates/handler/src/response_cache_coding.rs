//! Compressed hits. An answer is stored as it leaves the handler, before
//! compression; when the site compresses it (mod_deflate's
//! AddOutputFilterByType, SetOutputFilter, AddOutputFilter, warren's
//! brotli), the offer is stored beside its fields ([`OFFER_FIELD`], never
//! sent). A hit for a client that accepts an offered coding is answered
//! with the entry's variant in that coding: made once, the first time it is
//! asked for, and stored beside the entry (its key is the entry's with the
//! time it was stored and the coding, so a new or revalidated entry gets new
//! variants); every later hit sends the stored bytes. The variant's fields
//! are those `compress::finish` gives an encoded answer (Content-Encoding,
//! the ETag's `-gzip` or `-br`, no Content-Length or Accept-Ranges), and
//! every answer made of such an entry, encoded or not, has `Vary:
//! Accept-Encoding`, as Apache's. A range is of the identity.
//! A client whose environment says `no-gzip` or `no-brotli` gets the
//! identity, without Vary (response_cache.rs decides, `refuses_coding`).

use std::sync::Arc;

use warren_cache::{Entry, Store};
use warren_config::compress::{AlterETag, Encoders};
use warren_http::RequestHead;

use crate::compress::{self, acceptable, Coding, Levels, Offer};
use crate::{HeaderName, Response};

/// The stored field that keeps the site's compression offer for an entry
/// (a name no answer can have).
pub(crate) const OFFER_FIELD: &str = ":warren-compress";

/// The offer as [`OFFER_FIELD`]'s value: `gzip,br;gzip level;brotli
/// quality;brotli window;gzip ETag;brotli ETag;static`.
pub(crate) fn offer_field(offer: &Offer) -> (String, String) {
    let l = offer.levels;
    let tag = |a: AlterETag| match a {
        AlterETag::AddSuffix => "suffix",
        AlterETag::NoChange => "same",
        AlterETag::Remove => "none",
    };
    let codings = [("gzip", offer.encoders.gzip), ("br", offer.encoders.brotli)].iter().filter(|c| c.1).map(|c| c.0).collect::<Vec<_>>().join(",");
    let value = format!("{codings};{};{};{};{};{};{}", l.gzip, l.brotli_quality, l.brotli_window, tag(l.gzip_etag), tag(l.brotli_etag), u8::from(offer.file.is_some()));
    (OFFER_FIELD.to_string(), value)
}

/// [`offer_field`]'s value read back: the encoders, their levels and
/// whether the answer was a static file's.
fn parse_offer(value: &str) -> Option<(Encoders, Levels, bool)> {
    let parts: Vec<&str> = value.split(';').collect();
    let [codings, gzip, quality, window, gzip_etag, brotli_etag, file] = parts[..] else { return None };
    let tag = |s: &str| match s {
        "suffix" => Some(AlterETag::AddSuffix),
        "same" => Some(AlterETag::NoChange),
        "none" => Some(AlterETag::Remove),
        _ => None,
    };
    let encoders = Encoders { gzip: codings.split(',').any(|c| c == "gzip"), brotli: codings.split(',').any(|c| c == "br") };
    let levels = Levels { gzip: gzip.parse().ok()?, brotli_quality: quality.parse().ok()?, brotli_window: window.parse().ok()?, gzip_etag: tag(gzip_etag)?, brotli_etag: tag(brotli_etag)? };
    Some((encoders, levels, file == "1"))
}

/// What a hit on `e` sends the client of `head`.
pub(crate) enum Chosen {
    /// The entry as stored; `varies`: with `Vary: Accept-Encoding`.
    Identity { varies: bool },
    /// Its variant in the coding the client prefers.
    Coded(Arc<Entry>),
}

/// The representation of `e` for the client of `head`: its coded variant
/// from `store`, made and stored there if it is not yet.
pub(crate) fn choose(store: &Store, head: &RequestHead, e: &Entry) -> Chosen {
    let Some((encoders, levels, from_file)) = e.header(OFFER_FIELD).and_then(parse_offer) else { return Chosen::Identity { varies: false } };
    // compress::finish's rules: 200 only, not what is encoded already or
    // says no-transform, not an empty answer or a short static file.
    let no_transform = e.header("cache-control").is_some_and(|v| v.to_ascii_lowercase().contains("no-transform"));
    if e.status != 200 || e.header("content-encoding").is_some() || no_transform || e.body.is_empty() || (from_file && (e.body.len() as u64) < compress::MIN_STATIC_LENGTH) {
        return Chosen::Identity { varies: false };
    }
    if head.header("range").is_some() {
        return Chosen::Identity { varies: true };
    }
    let Some(coding) = acceptable(head.header("accept-encoding")).iter().find(|c| c.offered_by(encoders)) else { return Chosen::Identity { varies: true } };
    let key = format!("{}\u{0}{}\u{0}{}", e.key, e.stored_at, coding.token());
    let none = |_: &str| None;
    if let Some(v) = store.lookup_shared(&key, &none) {
        return Chosen::Coded(v);
    }
    let coded = Arc::new(encode(e, coding, levels));
    // Served whether or not it could be kept (a full cache: made again next time).
    let _ = store.store(&key, &[], &none, Entry::clone(&coded));
    Chosen::Coded(coded)
}

/// `e` encoded in `coding`, with the fields of an encoded answer.
fn encode(e: &Entry, coding: Coding, levels: Levels) -> Entry {
    let mut r = Response::new(e.status, 0);
    r.headers = e.headers.iter().filter(|(n, _)| n != OFFER_FIELD).map(|(n, v)| (HeaderName::Owned(n.clone()), v.clone())).collect();
    r.vary_on("Accept-Encoding");
    let r = compress::encoded(r, coding, levels);
    let headers = r.headers.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    Entry { key: String::new(), status: e.status, headers, body: Arc::from(compress::stream::compress_all(&e.body, coding, levels)), stored_at: e.stored_at, fresh_until: e.fresh_until }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offer_reads_back_as_written() {
        let levels = Levels { gzip: 9, brotli_quality: 4, brotli_window: 20, gzip_etag: AlterETag::Remove, brotli_etag: AlterETag::AddSuffix };
        let offer = Offer { encoders: Encoders { gzip: true, brotli: false }, levels, file: None };
        let (name, value) = offer_field(&offer);
        assert_eq!(name, OFFER_FIELD);
        let (encoders, read, from_file) = parse_offer(&value).unwrap();
        assert!(encoders.gzip && !encoders.brotli && !from_file);
        assert_eq!(read, levels);
        assert!(parse_offer("gzip;x;1;1;suffix;suffix;0").is_none());
    }
}
