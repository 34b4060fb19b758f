//! warren's response cache, Apache's mod_cache with mod_cache_disk and
//! mod_cache_socache: what the handler stores of an answer and serves
//! again without asking the application.
//!
//! - `policy`: RFC 9111's rules — whether an answer may be stored
//!   (status, Cache-Control, Expires, Authorization, Set-Cookie, the
//!   admin's CacheStore* lines) and for how long it is fresh
//!   (max-age, s-maxage, Expires, the Last-Modified heuristic, bounded by
//!   CacheMinExpire and CacheMaxExpire), and whether a request may be
//!   answered from the cache at all.
//! - `entry`: one stored answer (status, fields, body, times) and its
//!   file format, checked whole at every read (a corrupt or truncated
//!   file is discarded, never served).
//! - `store`: the entries of one directory, shared by every child and
//!   thread because they are files: a key's file is named by a SHA-1 of the
//!   key, written to a temporary file and renamed into place, so a
//!   reader sees a whole entry or none; Vary makes the key's file a list
//!   of selecting fields pointing to one file per variant; the total size
//!   is bounded by evicting the least recently stored; lock files make one
//!   request per key go to the backend (CacheLock); the counts of hits,
//!   misses, stores, evictions and bytes are words of a file every process
//!   maps shared.
//!
//! The handler (handler/src/response_cache.rs) decides where in the
//! pipeline a lookup and a store happen, and makes the answers.

pub mod entry;
pub mod policy;
pub mod store;

pub use entry::Entry;
pub use policy::{Freshness, Rules};
pub use store::{Counters, LockState, Store, COUNTER_NAMES};
