//! The response cache's part in a request routed with CacheQuickHandler
//! Off: the entry the pipeline's handler stage looks up, carried by the
//! [`Request`](crate::Request) through its access checks. Apart from the
//! cache, which imports the request and the filters, so that the request
//! can hold it without importing the cache back.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use warren_cache::{Entry, Store};

/// CacheQuickHandler Off: the entry the pipeline's handler stage looks
/// up, and what it found there.
pub struct AfterAccess {
    pub(super) store: Arc<Store>,
    pub(super) key: String,
    /// The client's Cache-Control refuses a stored answer.
    pub(super) refuses: bool,
    /// The access checks let the client in: the cache has its say.
    pub(super) passed: Cell<bool>,
    pub(super) hit: Cell<bool>,
    pub(super) stale: RefCell<Option<Entry>>,
}

impl std::fmt::Debug for AfterAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AfterAccess").field("key", &self.key).finish_non_exhaustive()
    }
}
