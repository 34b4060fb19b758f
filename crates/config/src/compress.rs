//! Compression settings, as mod_deflate, mod_brotli and mod_filter name
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
//!
//! The directives are in `directives/compress.rs`,
//! the request half in the handler's `compress` module.

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
