//! Compression directives, as mod_deflate, mod_brotli and mod_filter name
//! them: which responses get which encoder ([`OutputFilters`], set per
//! directory by `AddOutputFilterByType`, `SetOutputFilter`,
//! `AddOutputFilter` and `RemoveOutputFilter`), the encoders' settings
//! (`DeflateCompressionLevel`, `BrotliCompressionQuality`,
//! `BrotliWindowSize`, `DeflateAlterETag`, `BrotliAlterETag`, per host), and warren's `PrecompressedFiles` (serve
//! `file.br` / `file.gz` found beside a file, as nginx's gzip_static).
//!
//! The only filters warren has are the two encoders; naming another
//! (`INCLUDES`, `SUBSTITUTE`, ...) is an error rather than a filter
//! silently not applied.

use crate::builder::Builder;
use crate::parse::Directive;

/// A set of encoders, as a filter chain names them (`DEFLATE;BROTLI_COMPRESS`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Encoders {
    pub gzip: bool,
    pub brotli: bool,
}

impl Encoders {
    pub const NONE: Encoders = Encoders { gzip: false, brotli: false };

    pub fn any(self) -> bool {
        self.gzip || self.brotli
    }

    pub fn or(self, o: Encoders) -> Encoders {
        Encoders { gzip: self.gzip || o.gzip, brotli: self.brotli || o.brotli }
    }
}

/// mod_deflate's default DeflateCompressionLevel is zlib's default.
pub const DEFAULT_DEFLATE_LEVEL: u32 = 6;
/// mod_brotli's default BrotliCompressionQuality.
pub const DEFAULT_BROTLI_QUALITY: u32 = 5;
/// mod_brotli's default BrotliWindowSize.
pub const DEFAULT_BROTLI_WINDOW: u32 = 18;

/// What an encoder does to the ETag of what it encodes (`DeflateAlterETag`,
/// `BrotliAlterETag`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AlterETag {
    /// `"tag-gzip"`, `"tag-br"`: Apache's default.
    #[default]
    AddSuffix,
    /// The same tag as the identity representation's (RFC 9110 says a
    /// strong tag must differ; Apache offers it nonetheless).
    NoChange,
    /// No ETag at all.
    Remove,
}

/// One directory level's compression settings; `None` and empty lists
/// inherit.
#[derive(Clone, Debug, Default)]
pub struct OutputFilters {
    /// `AddOutputFilterByType`: (media type, lower case; encoders), added to
    /// what is inherited.
    pub by_type: Vec<(String, Encoders)>,
    /// `SetOutputFilter`: every response here, whatever its type.
    pub set: Option<Encoders>,
    /// `AddOutputFilter` (Some) and `RemoveOutputFilter` (None) by file
    /// extension (lower case, no dot), in config order.
    pub by_extension: Vec<(String, Option<Encoders>)>,
    pub deflate_level: Option<u32>,
    pub brotli_quality: Option<u32>,
    pub brotli_window: Option<u32>,
    pub deflate_alter_etag: Option<AlterETag>,
    pub brotli_alter_etag: Option<AlterETag>,
    /// `PrecompressedFiles On|Off`.
    pub precompressed: Option<bool>,
}

impl OutputFilters {
    /// Layers `over` on top of `self`.
    pub fn merge(&mut self, over: &OutputFilters) {
        self.by_type.extend(over.by_type.iter().cloned());
        if over.set.is_some() {
            self.set = over.set;
        }
        self.by_extension.extend(over.by_extension.iter().cloned());
        self.deflate_level = over.deflate_level.or(self.deflate_level);
        self.brotli_quality = over.brotli_quality.or(self.brotli_quality);
        self.brotli_window = over.brotli_window.or(self.brotli_window);
        self.deflate_alter_etag = over.deflate_alter_etag.or(self.deflate_alter_etag);
        self.brotli_alter_etag = over.brotli_alter_etag.or(self.brotli_alter_etag);
        self.precompressed = over.precompressed.or(self.precompressed);
    }
}

/// `DEFLATE;BROTLI_COMPRESS`: the encoders a filter chain names.
fn encoders(chain: &str) -> Result<Encoders, String> {
    let mut e = Encoders::NONE;
    for name in chain.split(';').filter(|n| !n.is_empty()) {
        if name.eq_ignore_ascii_case("DEFLATE") {
            e.gzip = true;
        } else if name.eq_ignore_ascii_case("BROTLI_COMPRESS") {
            e.brotli = true;
        } else {
            return Err(format!("output filter '{name}' is not one warren has (DEFLATE, BROTLI_COMPRESS)"));
        }
    }
    if e.any() {
        Ok(e)
    } else {
        Err("no output filter named".to_string())
    }
}

pub(crate) fn add_output_filter_by_type(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    let [chain, types @ ..] = d.args.as_slice() else {
        return b.error(&d.origin, "AddOutputFilterByType takes filter[;filter...] and one or more media types");
    };
    if types.is_empty() {
        return b.error(&d.origin, "AddOutputFilterByType takes filter[;filter...] and one or more media types");
    }
    match encoders(chain) {
        Ok(e) => {
            for t in types {
                if !t.contains('/') {
                    return b.error(&d.origin, format!("AddOutputFilterByType: '{t}' is not a media type"));
                }
            }
            filters.by_type.extend(types.iter().map(|t| (t.to_ascii_lowercase(), e)));
        }
        Err(m) => b.error(&d.origin, format!("AddOutputFilterByType: {m}")),
    }
}

pub(crate) fn set_output_filter(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    match d.args.as_slice() {
        [chain] => match encoders(chain) {
            Ok(e) => filters.set = Some(e),
            Err(m) => b.error(&d.origin, format!("SetOutputFilter: {m}")),
        },
        _ => b.error(&d.origin, "SetOutputFilter takes one argument, filter[;filter...]"),
    }
}

pub(crate) fn add_output_filter(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    let [chain, exts @ ..] = d.args.as_slice() else {
        return b.error(&d.origin, "AddOutputFilter takes filter[;filter...] and one or more extensions");
    };
    if exts.is_empty() {
        return b.error(&d.origin, "AddOutputFilter takes filter[;filter...] and one or more extensions");
    }
    match encoders(chain) {
        Ok(e) => filters.by_extension.extend(exts.iter().map(|x| (extension(x), Some(e)))),
        Err(m) => b.error(&d.origin, format!("AddOutputFilter: {m}")),
    }
}

pub(crate) fn remove_output_filter(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    if d.args.is_empty() {
        return b.error(&d.origin, "RemoveOutputFilter takes one or more extensions");
    }
    filters.by_extension.extend(d.args.iter().map(|x| (extension(x), None)));
}

fn extension(x: &str) -> String {
    x.trim_start_matches('.').to_ascii_lowercase()
}

fn bounded(b: &mut Builder, d: &Directive, low: u32, high: u32) -> Option<u32> {
    match d.args.as_slice() {
        [v] => match v.parse::<u32>() {
            Ok(n) if (low..=high).contains(&n) => return Some(n),
            _ => b.error(&d.origin, format!("{}: '{v}' is not a whole number from {low} to {high}", d.name)),
        },
        _ => b.error(&d.origin, format!("{} takes one argument, a whole number from {low} to {high}", d.name)),
    }
    None
}

pub(crate) fn deflate_compression_level(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    if let Some(n) = bounded(b, d, 1, 9) {
        filters.deflate_level = Some(n);
    }
}

pub(crate) fn brotli_compression_quality(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    if let Some(n) = bounded(b, d, 0, 11) {
        filters.brotli_quality = Some(n);
    }
}

pub(crate) fn brotli_window_size(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    if let Some(n) = bounded(b, d, 10, 24) {
        filters.brotli_window = Some(n);
    }
}

fn alter_etag(b: &mut Builder, d: &Directive) -> Option<AlterETag> {
    match d.args.as_slice() {
        [v] if v.eq_ignore_ascii_case("addsuffix") => Some(AlterETag::AddSuffix),
        [v] if v.eq_ignore_ascii_case("nochange") => Some(AlterETag::NoChange),
        [v] if v.eq_ignore_ascii_case("remove") => Some(AlterETag::Remove),
        _ => {
            b.error(&d.origin, format!("{} takes AddSuffix, NoChange or Remove", d.name));
            None
        }
    }
}

pub(crate) fn deflate_alter_etag(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    if let Some(a) = alter_etag(b, d) {
        filters.deflate_alter_etag = Some(a);
    }
}

pub(crate) fn brotli_alter_etag(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    if let Some(a) = alter_etag(b, d) {
        filters.brotli_alter_etag = Some(a);
    }
}

pub(crate) fn precompressed_files(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    match d.args.as_slice() {
        [v] if v.eq_ignore_ascii_case("on") => filters.precompressed = Some(true),
        [v] if v.eq_ignore_ascii_case("off") => filters.precompressed = Some(false),
        _ => b.error(&d.origin, "PrecompressedFiles takes On or Off"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_chains() {
        assert_eq!(encoders("DEFLATE").unwrap(), Encoders { gzip: true, brotli: false });
        assert_eq!(encoders("brotli_compress;deflate").unwrap(), Encoders { gzip: true, brotli: true });
        assert!(encoders("INCLUDES").unwrap_err().contains("INCLUDES"));
        assert!(encoders(";").is_err());
    }
}
