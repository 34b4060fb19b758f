//! What a process learns while it serves, beside the configuration it was
//! given ([`crate::Site`], built once and never changed): each child keeps
//! its own, filled by requests and checked against the files at each use
//! (see `warren_stat_cache`), so nothing here is shared between children
//! nor outlives a restart.

use std::sync::Arc;

use crate::compress::cache::CompressedCache;
use crate::fastcgi::backend::BackendPool;
use crate::file_cache::FileCache;
use crate::htaccess::HtaccessCache;

#[derive(Default)]
pub struct Caches {
    /// Small static files' bytes and large ones' open descriptors.
    pub files: FileCache,
    /// Compressed copies of static files.
    pub compressed: CompressedCache,
    /// The `.htaccess` files read so far.
    pub htaccess: HtaccessCache,
    /// Idle connections to FastCGI applications (`enablereuse=on`).
    pub backends: Arc<BackendPool>,
    /// Idle connections to HTTP backends, and those in error (ProxyPass http://).
    pub http_backends: Arc<crate::proxy_http::connections::HttpBackends>,
    /// The home directories of accounts `/~user/` named.
    pub homes: crate::accounts::Homes,
    /// The response cache's stores this process opened (their entries are
    /// files every process shares: response_cache.rs).
    pub responses: crate::response_cache::Stores,
}
