//! Storing answers in the response cache: the store step every answer goes
//! through (RFC 9111's rules and the admin's), and [`Capture`], which reads an
//! application's answer ahead on the gateway's thread and stores it when whole.

use super::*;

/// The parts of an answer being stored as the application sends it.
pub struct Capture {
    pub(super) store: Arc<Store>,
    pub(super) key: String,
    pub(super) rules: Rules,
    pub(super) host: usize,
    /// The stale entry: for CacheStaleOnError, and being revalidated when
    /// `revalidating` (its validators went to the application).
    pub(super) stale: Option<Entry>,
    pub(super) revalidating: bool,
    pub(super) stale_on_error: bool,
    pub(super) header: bool,
    /// As [`Plan::no_coding`], for the stale entry's answer.
    pub(super) no_coding: bool,
    /// Held until the answer is stored or given up.
    pub(super) _lock: Option<warren_cache::store::LockGuard>,
}

/// Whether the request's environment, as the pipeline left it (a
/// directory's SetEnvIf, a rewrite rule's `[E=no-cache]`), keeps its
/// answer out of the cache.
pub(super) fn no_cache_set(r: &Response) -> bool {
    r.filters.as_ref().is_some_and(|f| f.env.get("no-cache").is_some())
}

/// Says once per process, in `log`, that a cache could not store an answer
/// (its directory full or unwritable): the server goes on serving uncached.
fn warn_unstored(log: &crate::logs::ErrorLog, e: &std::io::Error) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if e.kind() != std::io::ErrorKind::Other && !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        log.log(LogLevel::Warn, None, &format!("response cache: an answer could not be stored ({e}): answers are served uncached until there is room (said once)"));
    }
}

/// Says once per process that an answer's caching headers were malformed
/// or contradictory: it was served and not stored.
pub(super) fn warn_malformed(log: &crate::logs::ErrorLog, why: &str, head: &RequestHead) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if (why.contains("malformed") || why.contains("two different")) && !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        log.log(LogLevel::Warn, None, &format!("response cache: {why} in the answer to {}: served, not stored (said once)", String::from_utf8_lossy(head.path_and_query())));
    }
}

/// Stores an answer if RFC 9111 and the admin's rules let it.
#[allow(clippy::too_many_arguments)]
pub(super) fn store_answer(store: &Store, key: &str, rules: &Rules, status: u16, headers: &[(String, String)], body: Arc<[u8]>, offer: Option<&crate::compress::Offer>, head: &RequestHead, log: &crate::logs::ErrorLog) -> Result<(), String> {
    let has_query = head.path_and_query().contains(&b'?');
    let fresh = rules.storable(status, headers, has_query, head.header("authorization").is_some(), SystemTime::now()).map_err(str::to_string)?;
    let now = Store::now();
    let mut kept = rules.kept_headers(headers);
    // The site's compression offer, for compressed hits (response_cache_coding.rs).
    kept.extend(offer.map(coding::offer_field));
    let entry = Entry { key: String::new(), status, headers: kept, body, stored_at: now, fresh_until: now + fresh.lifetime.as_secs() };
    store.store(key, &policy::vary_names(headers), &field_of(head), entry).map_err(|e| {
        warn_unstored(log, &e);
        format!("not stored: {e}")
    })
}

impl Capture {
    /// The application's answer `r`, its body stored in the cache when whole (or,
    /// for a 304 to our revalidation, the refreshed entry; for a 5xx, the
    /// stale one).
    pub fn answer(self: Box<Self>, site: &Site, head: &RequestHead, conn: &ConnInfo, mut r: Response) -> Response {
        if let Some(e) = &self.stale {
            // A 304 to the client's own validators is the client's answer.
            if r.status == 304 && self.revalidating {
                let plan = Plan { store: self.store.clone(), key: self.key.clone(), base: String::new(), no_coding: self.no_coding };
                return site.revalidated(&plan, head, conn, self.host, e, &as_pairs(&r.headers));
            }
            if r.status >= 500 && self.stale_on_error {
                return site.answer_of_entry(&self.store, head, conn, self.host, e, "stale; detail=stale-on-error", self.no_coding);
            }
        }
        crate::filters::apply_now(&mut r, head);
        let headers = as_pairs(&r.headers);
        let has_query = head.path_and_query().contains(&b'?');
        let verdict = self.rules.storable(r.status, &headers, has_query, false, SystemTime::now());
        let log = &site.hosts[self.host].error_log;
        let detail = match verdict {
            Err(why) => {
                warn_malformed(log, why, head);
                format!("fwd=uri-miss; detail=\"{why}\"")
            }
            Ok(_) if r.error_document.is_some() => "fwd=uri-miss".to_string(),
            Ok(_) if no_cache_set(&r) => "fwd=uri-miss; detail=\"the no-cache variable\"".to_string(),
            Ok(_) => {
                // Read whole (on this thread, up to the largest entry) so
                // that what Cache-Status says is what was done.
                let (body, whole) = hold(std::mem::replace(&mut r.body, Body::Empty), self.store.max_entry);
                r.body = body;
                match whole {
                    Some(bytes) => match store_answer(&self.store, &self.key, &self.rules, r.status, &headers, bytes, r.compress.as_deref(), head, log) {
                        Ok(()) => "fwd=uri-miss; stored".to_string(),
                        Err(why) => format!("fwd=uri-miss; detail=\"{why}\""),
                    },
                    None => "fwd=uri-miss; detail=\"not stored: larger than the cache's largest entry\"".to_string(),
                }
            }
        };
        r.add("Cache-Status", format!("warren; {detail}"));
        if self.header {
            r.add("X-Cache", format!("MISS from {}", site.hosts[self.host].name));
        }
        r
    }
}

/// `body` with its bytes, when it is whole and no larger than `max`: a
/// stream is read ahead up to `max` bytes, and what was read goes out
/// first if it is larger (or failed before its end).
fn hold(body: Body, max: u64) -> (Body, Option<Arc<[u8]>>) {
    match body {
        Body::Empty => (Body::Empty, Some(Arc::from(&[][..]))),
        Body::Bytes(b) if b.len() as u64 <= max => {
            let bytes: Arc<[u8]> = Arc::from(b.as_slice());
            (Body::Shared(bytes.clone()), Some(bytes))
        }
        Body::Stream { mut source, len } if len.is_none_or(|l| l <= max) => {
            let mut held = Vec::new();
            loop {
                match source.next_piece(&mut held) {
                    Ok(true) if held.len() as u64 <= max => {}
                    Ok(true) => return (Body::Stream { source: Box::new(Prefixed { held: Some(held), inner: source, failed: None }), len }, None),
                    Ok(false) => {
                        let bytes: Arc<[u8]> = Arc::from(held);
                        return (Body::Shared(bytes.clone()), Some(bytes));
                    }
                    Err(e) => return (Body::Stream { source: Box::new(Prefixed { held: Some(held), inner: source, failed: Some(e) }), len }, None),
                }
            }
        }
        other => (other, None),
    }
}

/// A body whose first bytes were read ahead: those, then the rest (or the
/// failure that ended the reading).
struct Prefixed {
    held: Option<Vec<u8>>,
    inner: Box<dyn BodySource>,
    failed: Option<std::io::Error>,
}

impl BodySource for Prefixed {
    fn next_piece(&mut self, out: &mut Vec<u8>) -> std::io::Result<bool> {
        if let Some(held) = self.held.take() {
            out.extend_from_slice(&held);
            return Ok(true);
        }
        match self.failed.take() {
            Some(e) => Err(e),
            None => self.inner.next_piece(out),
        }
    }

    fn read_ahead(&self) -> bool {
        self.inner.read_ahead()
    }

    fn take_encoder(&mut self) -> Option<crate::compress::StreamEncoder> {
        self.inner.take_encoder()
    }
}
