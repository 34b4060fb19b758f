//! mod_cache's request half: where the pipeline looks a request up in the
//! response cache (`warren-cache`) and where it stores an answer.
//!
//! - Lookup ([`Site::through_cache`]), before the pipeline routes the
//!   request (Apache's quick handler): a GET or HEAD under a CacheEnable
//!   prefix of its host, with no Authorization, not refused by the
//!   client's `Cache-Control: no-cache` (unless CacheIgnoreCacheControl)
//!   and without the `no-cache` variable the host's SetEnvIf lines may set
//!   (`SetEnvIf Cookie wordpress_logged_in no-cache`), is answered from a
//!   fresh entry: its conditional requests (304) and one range (206) from
//!   the stored whole answer, HEAD from a stored GET. An answer is stored
//!   as sent, its Header and Expires lines applied (mod_expires' lifetimes
//!   count), before compression: a hit is compressed as the site offers,
//!   each coding once (response_cache_coding.rs).
//!   Under CacheQuickHandler Off the lookup waits until the pipeline's
//!   access checks let the client in ([`Site::hit_after_access`]).
//! - Storing: a static answer (bytes or a whole small file) is stored as
//!   the pipeline returns it; an application's answer (FastCGI, warren's
//!   pools, CGI, HTTP backends) is read ahead on the gateway's thread up to
//!   the largest entry ([`Capture`], installed on the
//!   [`Gateway`](crate::gateway::Gateway) and run by `Site::run_gateway`)
//!   and stored when whole; a larger one goes out as it comes. A stale entry with a validator is revalidated:
//!   the application gets If-None-Match / If-Modified-Since, and its 304
//!   refreshes the entry; a static file whose validators are still the
//!   entry's refreshes it the same way. A stale entry answers a 5xx (CacheStaleOnError).
//! - A request the cache is told to leave alone (the `no-cache`
//!   variable, Authorization, CacheDisable) says `Cache-Status: ...;
//!   fwd=bypass` (RFC 9211); a hit for a client whose environment says
//!   `no-gzip` is sent uncompressed.
//! - CacheLock: one request per key goes to the application; the others
//!   get the stale entry, or wait (on a thread, never the event loop) for
//!   the entry, at most CacheLockMaxAge.
//! - An unsafe method (POST, PUT, DELETE, PATCH) invalidates its URL
//!   (RFC 9111 4.4); PURGE removes a URL (or, ending in `*`, a prefix) for a
//!   client that `<Limit PURGE>`'s Require lets in ([`Site::purge`]).
//!
//! The key is the host's scheme, ServerName (the virtual host chosen, never
//! the client's Host field alone) and port, or CacheKeyBaseURL, then the
//! request target as the client sent it (so `/a%2f` and `/a/` are
//! different entries), then the host's index and the client's Host value:
//! nothing stored for one virtual host answers another's request.
//! Only an answer the URL's Require rules give anyone is stored (a hit is
//! served before they are checked), unless CacheQuickHandler is Off. Requests carrying fields that proxies use to rewrite URLs
//! (X-Forwarded-Host, X-Original-URL...) are never stored: an application
//! may build its links from them, and they are not in the key.
//!
//! Beside this file: response_cache_store.rs (the store step and
//! [`Capture`]), response_cache_admin.rs (counts for server-status and
//! metrics, `warren cache purge`), response_cache_coding.rs (compressed hits),
//! response_cache_lookup.rs ([`AfterAccess`], which a request carries).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use warren_cache::{policy, Entry, LockState, Rules, Store};
use warren_config::cache::{CacheDirectives, CacheKind};
use warren_config::LogLevel;
use warren_http::RequestHead;

use crate::conditional::{self, Precondition, Ranges, Validators};
use crate::dir_config::Effective;
use crate::response_cache_coding::{self as coding, Chosen};
use crate::env::RequestEnv;
use crate::{path, Body, BodySource, ConnInfo, HeaderName, Outcome, Request, Response, Site};

#[path = "response_cache_store.rs"]
mod store;
#[path = "response_cache_admin.rs"]
mod admin;
#[path = "response_cache_lookup.rs"]
pub(crate) mod lookup;

pub use store::Capture;
pub(crate) use admin::CountsPage;
use admin::purge_target;
use lookup::AfterAccess;
use store::{no_cache_set, store_answer, warn_malformed};

/// The total size a `disk` cache keeps its CacheRoot within.
const DISK_TOTAL: u64 = 64 << 20;
/// How many of CacheSocacheMaxSize's entries a `socache` cache holds at most.
const SOCACHE_ENTRIES: u64 = 64;

/// Request fields that name another host, scheme or URL to applications
/// behind proxies (or another method: frameworks' overrides): a request
/// carrying one is never stored.
const UNKEYED_URL_FIELDS: &[&str] = &[
    "x-forwarded-host", "x-forwarded-server", "x-forwarded-proto", "x-forwarded-scheme", "x-forwarded-prefix", "x-forwarded-port", "x-forwarded-ssl", "x-forwarded-uri", "x-forwarded-path", "front-end-https", "x-url-scheme", "x-original-url", "x-original-host", "x-rewrite-url", "x-host", "forwarded",
    "x-http-method-override", "x-http-method", "x-method-override",
];

/// The stores this process has opened, by directory (None: it could not be
/// opened, said once in the error log).
#[derive(Default)]
pub struct Stores(Mutex<HashMap<PathBuf, Option<Arc<Store>>>>);

/// What the cache does for one request it may answer or store.
struct Plan {
    store: Arc<Store>,
    key: String,
    /// The key's prefix before the request target: purges are made of it.
    base: String,
    /// The request's environment says `no-gzip` (or `no-brotli`): a hit
    /// goes out as stored, never compressed.
    no_coding: bool,
}

/// Whether an answer to this request may be stored at all: a GET without
/// the fields that name another URL.
fn storable_request(head: &RequestHead) -> bool {
    head.method() == "GET" && !UNKEYED_URL_FIELDS.iter().any(|f| head.header(f).is_some())
}


fn rules(c: &CacheDirectives) -> Rules {
    Rules {
        default_expire: c.default_expire(),
        max_expire: c.max_expire(),
        min_expire: c.min_expire(),
        last_modified_factor: c.last_modified_factor(),
        ignore_no_last_mod: c.ignore_no_last_mod.unwrap_or(false),
        store_no_store: c.store_no_store.unwrap_or(false),
        store_private: c.store_private.unwrap_or(false),
        ignore_headers: c.ignore_headers().to_vec(),
    }
}

/// A request field's value as the application sees it: every line of a
/// repeated field joined (as the FastCGI parameters join them), so that a
/// variant is chosen by all of it, not by its first line.
fn field_of<'a>(head: &'a RequestHead) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| {
        let lines: Vec<_> = head.headers().filter(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes())).map(|(_, v)| String::from_utf8_lossy(v)).collect();
        (!lines.is_empty()).then(|| lines.join(if name.eq_ignore_ascii_case("cookie") { "; " } else { ", " }))
    }
}

fn as_pairs(headers: &[(HeaderName, String)]) -> Vec<(String, String)> {
    headers.iter().map(|(n, v)| (n.to_string(), v.clone())).collect()
}

/// The target as it goes in the key: the query left out
/// (CacheIgnoreQueryString) or rid of session identifiers.
fn keyed_target(c: &CacheDirectives, raw: &[u8]) -> String {
    let raw = String::from_utf8_lossy(raw);
    let (path, query) = match raw.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (raw.to_string(), None),
    };
    let ids = c.ignore_url_session_identifiers.as_deref().unwrap_or(&[]);
    let path = match path.split_once(';') {
        Some((p, params)) if !ids.is_empty() => {
            let kept: Vec<&str> = params.split(';').filter(|kv| !ids.iter().any(|id| kv.split('=').next() == Some(id.as_str()))).collect();
            if kept.is_empty() { p.to_string() } else { format!("{p};{}", kept.join(";")) }
        }
        _ => path,
    };
    match query {
        Some(_) if c.ignore_query_string.unwrap_or(false) => path,
        Some(q) => {
            let kept: Vec<&str> = q.split('&').filter(|kv| !ids.iter().any(|id| kv.split('=').next() == Some(id.as_str()))).collect();
            if kept.is_empty() { path } else { format!("{path}?{}", kept.join("&")) }
        }
        None => path,
    }
}

impl Site {
    /// The store for `kind` of `host`, opened on first use in this process
    /// (as the server's user, who must be able to write it).
    fn store_for(&self, host: usize, kind: CacheKind) -> Option<Arc<Store>> {
        let c = &self.hosts[host].config.cache;
        let (root, max_entry, total) = match kind {
            CacheKind::Disk => (c.root.clone()?, c.max_file_size(), DISK_TOTAL),
            CacheKind::Socache => (self.socache_dir(), c.socache_max_size(), self.socache_bound()),
        };
        let mut map = self.caches.responses.0.lock().ok()?;
        map.entry(root.clone())
            .or_insert_with(|| match Store::open(&root, max_entry, total) {
                Ok(s) => Some(Arc::new(s)),
                Err(e) => {
                    let why = format!("CacheRoot {}: cannot be written ({e}): answers are served uncached", root.display());
                    self.hosts[host].error_log.log(LogLevel::Warn, None, &why);
                    None
                }
            })
            .clone()
    }

    /// The `socache` directory: one per server (its PidFile), on the
    /// shared-memory tmpfs, for every host.
    fn socache_dir(&self) -> PathBuf {
        let id = self.settings.pid_file.as_ref().map_or(0, |p| fnv(p.as_os_str().as_encoded_bytes()));
        PathBuf::from(format!("/dev/shm/warren-socache-{id:x}"))
    }

    /// What the `socache` directory is kept within: room for
    /// [`SOCACHE_ENTRIES`] of the largest CacheSocacheMaxSize of the hosts
    /// using it (0: none does).
    fn socache_bound(&self) -> u64 {
        let caching = self.hosts.iter().map(|h| &h.config.cache).filter(|c| c.enable.iter().any(|e| e.kind == CacheKind::Socache));
        caching.map(|c| c.socache_max_size() * SOCACHE_ENTRIES).max().unwrap_or(0)
    }

    /// Has the memory budget (pools' `pm.max_children auto`, `MaxRequestWorkers
    /// auto`) set the `socache` directory's bound aside: its entries are
    /// tmpfs pages charged to the memory cgroup, which no process's size shows.
    pub(crate) fn reserve_cache_memory(&self) {
        let bound = self.socache_bound();
        warren_memory::reserved::reserve((bound > 0).then(|| warren_memory::reserved::Reservation { dir: self.socache_dir(), bound }));
    }

    /// The cache's plan for a request to `host`, if its URL is cached.
    fn cache_plan(&self, head: &RequestHead, conn: &ConnInfo, host: usize) -> Option<Plan> {
        let c = &self.hosts[host].config.cache;
        if c.enable.is_empty() {
            return None;
        }
        let raw = head.path_and_query();
        let (raw_path, _) = path::split_query(raw);
        let url = path::normalize(raw_path).ok()?;
        let store = self.store_for(host, c.enabled_for(&url)?)?;
        let base = match &c.key_base_url {
            Some(b) => b.clone(),
            None => format!("{}://{}:{}", if conn.tls.is_some() { "https" } else { "http" }, self.hosts[host].name, conn.local.port()),
        };
        let client_host = head.host().map(|h| String::from_utf8_lossy(h).to_ascii_lowercase()).unwrap_or_default();
        let key = format!("{base}{}\u{0}{host}\u{0}{client_host}", keyed_target(c, raw));
        Some(Plan { store, key, base, no_coding: false })
    }

    /// [`Site::route`] through the response cache.
    pub(crate) fn through_cache(&self, head: &RequestHead, conn: &ConnInfo, on_loop: bool) -> Outcome {
        if !self.caches_responses {
            return self.route(head, conn, on_loop);
        }
        let host = self.select_host(head.host(), conn.local);
        let Some(mut plan) = self.cache_plan(head, conn, host) else {
            let outcome = self.route(head, conn, on_loop);
            // RFC 9211: an answer the cache was configured not to handle says so.
            return match disabled_here(&self.hosts[host].config.cache, head) {
                true => bypassed(outcome, conn, "CacheDisable", Vec::new()),
                false => outcome,
            };
        };
        let c = &self.hosts[host].config.cache;
        match head.method() {
            "GET" | "HEAD" => {}
            "PURGE" => return self.purge(head, conn, host, &plan, on_loop),
            "POST" | "PUT" | "DELETE" | "PATCH" => {
                // RFC 9111 4.4: the URL's stored answers are no longer to be trusted.
                plan.store.invalidate(&plan.key);
                return self.route(head, conn, on_loop);
            }
            _ => return self.route(head, conn, on_loop),
        }
        // Under CacheQuickHandler Off the credentials are checked before a
        // hit, and an answer to them is stored only as RFC 9111 3.5 allows.
        let quick = c.quick_handler();
        let env = self.host_env(head, conn, host);
        if quick && head.header("authorization").is_some() {
            return bypassed(self.route(head, conn, on_loop), conn, "Authorization", Vec::new());
        }
        if env.as_ref().is_some_and(|e| e.get("no-cache").is_some()) {
            // As Apache's, X-Cache and X-Cache-Detail say so too.
            let name = &self.hosts[host].name;
            let mut said = Vec::new();
            if c.header.unwrap_or(false) {
                said.push(("X-Cache", format!("MISS from {name}")));
            }
            if c.detail_header.unwrap_or(false) {
                said.push(("X-Cache-Detail", format!("\"environment variable 'no-cache' is set\" from {name}")));
            }
            return bypassed(self.route(head, conn, on_loop), conn, "the no-cache variable", said);
        }
        plan.no_coding = env.as_ref().is_some_and(refuses_coding);
        let field = field_of(head);
        let refuses = !c.ignore_cache_control.unwrap_or(false)
            && policy::request_refuses_stored(head.header("cache-control").map(|v| String::from_utf8_lossy(v)).as_deref(), head.header("pragma").map(|v| String::from_utf8_lossy(v)).as_deref());
        if !quick {
            return self.through_cache_after_access(head, conn, host, plan, refuses, on_loop);
        }
        let now = Store::now();
        let mut stale = None;
        if !refuses {
            if let Some(e) = plan.store.lookup_shared(&plan.key, &field) {
                if e.is_fresh(now) {
                    plan.store.counters.hit();
                    return Outcome::Ready(self.answer_of_entry(&plan.store, head, conn, host, &e, "hit", plan.no_coding));
                }
                stale = Some(Entry::clone(&e));
            }
        }
        plan.store.counters.miss();
        let lock = match c.lock() && head.method() == "GET" {
            true => match self.cache_lock(&plan, head, conn, host, stale.as_ref(), on_loop) {
                Ok(lock) => lock,
                Err(outcome) => return outcome,
            },
            false => None,
        };
        let storable_request = storable_request(head)
            && match self.open_to_anyone(head, conn, host, on_loop) {
                Some(open) => open,
                None => return Outcome::OffLoop,
            };
        let outcome = self.route(head, conn, on_loop);
        self.store_outcome(head, conn, host, plan, outcome, stale, lock, storable_request)
    }

    /// CacheLock for a miss: the lock (None: another request holds it and
    /// its answer came while this one waited, or nothing to wait for), or
    /// the answer to give instead (the stale copy, the stored answer the
    /// holder made, or OffLoop: waiting is for a thread).
    // The answer instead is the request's outcome, returned at once: no copying to spare.
    #[allow(clippy::result_large_err)]
    fn cache_lock(&self, plan: &Plan, head: &RequestHead, conn: &ConnInfo, host: usize, stale: Option<&Entry>, on_loop: bool) -> Result<Option<warren_cache::store::LockGuard>, Outcome> {
        let c = &self.hosts[host].config.cache;
        match plan.store.lock(&plan.key, c.lock_max_age()) {
            LockState::Acquired(g) => Ok(Some(g)),
            LockState::Held => {
                if let Some(e) = stale {
                    return Err(Outcome::Ready(self.answer_of_entry(&plan.store, head, conn, host, e, "stale; detail=locked", plan.no_coding)));
                }
                if on_loop {
                    return Err(Outcome::OffLoop);
                }
                match self.wait_for_entry(plan, head, c.lock_max_age()) {
                    Some(e) => {
                        plan.store.counters.hit();
                        Err(Outcome::Ready(self.answer_of_entry(&plan.store, head, conn, host, &e, "hit; detail=waited", plan.no_coding)))
                    }
                    None => Ok(None),
                }
            }
        }
    }

    /// CacheQuickHandler Off (Apache's cache_handler, a normal handler):
    /// the request goes through the pipeline, and once its access checks
    /// (Require, Basic credentials, Order/Deny, `.htaccess` files, after the
    /// rewrite rules) let the client in, a fresh stored answer is served
    /// ([`Site::hit_after_access`]); otherwise what the handler answers is
    /// stored as under On, whoever may read it (a hit is checked first).
    fn through_cache_after_access(&self, head: &RequestHead, conn: &ConnInfo, host: usize, plan: Plan, refuses: bool, on_loop: bool) -> Outcome {
        let c = &self.hosts[host].config.cache;
        let lookup = AfterAccess { store: plan.store.clone(), key: plan.key.clone(), refuses, passed: Cell::new(false), hit: Cell::new(false), stale: RefCell::new(None) };
        let outcome = self.route_with(head, conn, on_loop, Some(&lookup));
        // A client the checks turned away never reaches the cache.
        if lookup.hit.get() || !lookup.passed.get() || matches!(outcome, Outcome::OffLoop) {
            return outcome;
        }
        plan.store.counters.miss();
        let stale = lookup.stale.into_inner();
        let lock = match c.lock() && head.method() == "GET" && matches!(outcome, Outcome::Gateway(_)) {
            true => match self.cache_lock(&plan, head, conn, host, stale.as_ref(), on_loop) {
                Ok(lock) => lock,
                Err(outcome) => return outcome,
            },
            false => None,
        };
        let storable = storable_request(head);
        self.store_outcome(head, conn, host, plan, outcome, stale, lock, storable)
    }

    /// Under CacheQuickHandler Off, at the pipeline's handler stage: the
    /// fresh stored answer for a client the access rules in force (`dir`,
    /// and those of the index of a directory `fs`) let in. None: the handler answers (and a stale entry is kept for
    /// revalidation).
    pub(crate) fn hit_after_access(&self, req: Request, url: &[u8], fs: &std::path::Path, dir: &Effective) -> Option<Outcome> {
        let lookup = req.pass.cache_after_access?;
        // The handler turns the client away (403) on its own, also for a
        // directory's index with rules of its own.
        if !dir.allows(req.head, req.conn) || !self.index_allows(req, url, fs, dir, |index| index.allows(req.head, req.conn)) {
            return None;
        }
        lookup.passed.set(true);
        if lookup.refuses {
            return None;
        }
        let e = lookup.store.lookup_shared(&lookup.key, &field_of(req.head))?;
        if !e.is_fresh(Store::now()) {
            *lookup.stale.borrow_mut() = Some(Entry::clone(&e));
            return None;
        }
        lookup.store.counters.hit();
        lookup.hit.set(true);
        // The place's own SetEnvIf, SetEnv and rewrite `[E=]` lines have run here.
        let no_coding = refuses_coding(&RequestEnv::for_request(req, url, dir));
        Some(Outcome::Ready(self.answer_of_entry(&lookup.store, req.head, req.conn, req.host, &e, "hit", no_coding)))
    }

    /// The pipeline's `outcome` for a miss: a ready answer stored, or the
    /// application's answer captured as it comes (revalidating `stale`).
    #[allow(clippy::too_many_arguments)]
    fn store_outcome(&self, head: &RequestHead, conn: &ConnInfo, host: usize, plan: Plan, outcome: Outcome, stale: Option<Entry>, lock: Option<warren_cache::store::LockGuard>, storable_request: bool) -> Outcome {
        let c = &self.hosts[host].config.cache;
        match outcome {
            Outcome::Ready(r) => {
                let storable = storable_request && !r.restricted;
                Outcome::Ready(self.store_ready(head, conn, r, &plan, stale, storable))
            }
            Outcome::Gateway(mut gw) if storable_request && !gw.restricted => {
                // The application is asked whether the stale copy is current,
                // unless the client asks its own question.
                let revalidating = stale.as_ref().filter(|_| head.header("if-none-match").is_none() && head.header("if-modified-since").is_none());
                if let Some(e) = revalidating {
                    if let Some(tag) = e.header("etag") {
                        gw.set_param("HTTP_IF_NONE_MATCH", tag.as_bytes().to_vec());
                    }
                    if let Some(lm) = e.header("last-modified") {
                        gw.set_param("HTTP_IF_MODIFIED_SINCE", lm.as_bytes().to_vec());
                    }
                }
                let revalidate = revalidating.is_some();
                gw.capture = Some(Box::new(Capture { store: plan.store, key: plan.key, rules: rules(c), host, stale: stale.filter(|_| revalidate || c.stale_on_error()), revalidating: revalidate, stale_on_error: c.stale_on_error(), header: c.header.unwrap_or(false), no_coding: plan.no_coding, _lock: lock }));
                Outcome::Gateway(gw)
            }
            other => other,
        }
    }

    /// Waits, on a thread that may block, for the request holding `plan`'s
    /// lock to store its answer: the entry, or None once the lock is gone
    /// or `max_age` has passed (the request then goes to the application).
    fn wait_for_entry(&self, plan: &Plan, head: &RequestHead, max_age: Duration) -> Option<Entry> {
        let deadline = Instant::now() + max_age;
        let field = field_of(head);
        loop {
            if let Some(e) = plan.store.lookup(&plan.key, &field).filter(|e| e.is_fresh(Store::now())) {
                return Some(e);
            }
            if !plan.store.locked(&plan.key, max_age) || Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Whether the URL's Require rules let an anonymous client from
    /// anywhere in: a hit is served before they are checked (the quick
    /// handler), so only such an answer is stored.
    /// None on an event loop where that needs a tenant's `.htaccess` file
    /// read or its expressions run: the request goes to a thread.
    /// The rules are asked about a client that sends nothing but the
    /// request line and Host: one let in by a field it sent (`Require
    /// expr` on a header, an `<If>` on a cookie) is not anyone.
    fn open_to_anyone(&self, head: &RequestHead, conn: &ConnInfo, host: usize, on_loop: bool) -> Option<bool> {
        let url = path::lookup_url(head.path_and_query());
        self.open_to_anyone_at(head, conn, host, &url, None, on_loop)
    }

    /// [`Site::open_to_anyone`] for the place `url` (mapped to `fs`, else
    /// mapped here) that a request was routed to.
    fn open_to_anyone_at(&self, head: &RequestHead, conn: &ConnInfo, host: usize, url: &[u8], fs: Option<&std::path::Path>, on_loop: bool) -> Option<bool> {
        let Some(bare) = bare_request(head) else { return Some(false) };
        let nobody: std::net::SocketAddr = ([192, 0, 2, 1], 1).into();
        let anyone = ConnInfo { peer: nobody, useragent: nobody, ..*conn };
        let req = Request::new(&bare, &anyone, host);
        let req = Request { pass: crate::request::Pass { on_loop, ..req.pass }, ..req };
        let fs = fs.map_or_else(|| self.lookup_fs_path(req, url), std::path::Path::to_path_buf);
        let dir = self.effective_for(req, &fs, url);
        if on_loop && (dir.htaccess_deferred || dir.runs_htaccess_patterns()) {
            return None;
        }
        Some(dir.allows(&bare, &anyone) && self.index_allows(req, url, &fs, &dir, |index| index.allows(&bare, &anyone)))
    }

    /// Whether `allows` says yes of the rules of the file DirectoryIndex
    /// serves for `url` when it names a directory (`fs`): the index is
    /// judged by its own sections (`<Files index.php>`) as well as the
    /// directory's, after the pipeline's access stage, and the cache must
    /// not answer for it on the directory's word. An index given as a URL
    /// (`/index.php`) or negotiated (MultiViews) is not judged here: no.
    fn index_allows(&self, req: Request, url: &[u8], fs: &std::path::Path, dir: &Effective, allows: impl Fn(&Effective) -> bool) -> bool {
        if !url.ends_with(b"/") || !fs.is_dir() {
            return true;
        }
        for index in dir.directory_index() {
            if index.contains('/') || index == "." || index == ".." {
                return false;
            }
            let candidate = fs.join(index);
            if std::fs::symlink_metadata(&candidate).is_err() {
                if dir.options().multiviews {
                    return false;
                }
                continue;
            }
            let mut index_url = url.to_vec();
            index_url.extend_from_slice(index.as_bytes());
            return allows(&self.effective_for(req, &candidate, &index_url));
        }
        true
    }

    /// Whether an answer routed through `url`, mapped to `fs` (None: a
    /// proxied URL, mapped here only to find its sections; `rewritten`: by
    /// a rule, so that the request's own URL names another place), is to be
    /// kept out of the cache: the host caches GETs, and the rules there do
    /// not let just anyone in. Asked at each place a request is routed
    /// to: a rewrite or an internal redirect (an `.htaccess` file's
    /// `RewriteRule ^x$ /private/page [PT]`) takes it where the rules of
    /// the URL asked for (which [`Site::open_to_anyone`] judged) do not reach.
    pub(crate) fn kept_from_cache(&self, req: Request, url: &[u8], fs: Option<&std::path::Path>, rewritten: bool) -> bool {
        let c = &self.hosts[req.host].config.cache;
        // Under CacheQuickHandler Off a hit is served only at the place the
        // request is routed to, after that place's checks: nothing to keep out.
        if c.enable.is_empty() || !c.quick_handler() || req.head.method() != "GET" {
            return false;
        }
        // The request's own URL and place: judged already (open_to_anyone).
        if !rewritten && url == path::lookup_url(req.head.path_and_query()) {
            return false;
        }
        // On an event loop, where the rules cannot be run, the request goes
        // to a thread anyway (the access stage sends it): keep it out.
        self.open_to_anyone_at(req.head, req.conn, req.host, url, fs, req.pass.on_loop) != Some(true)
    }

    /// The request's environment as the host's own SetEnvIf, BrowserMatch
    /// and SetEnv lines make it, before the URL is mapped (None: the host
    /// has none): `no-cache` keeps the request out of the cache, `no-gzip`
    /// a hit from being compressed.
    fn host_env(&self, head: &RequestHead, conn: &ConnInfo, host: usize) -> Option<RequestEnv> {
        let own = &self.hosts[host].config.dir;
        if own.set_env_if.is_empty() && own.env.is_empty() {
            return None;
        }
        let url = path::lookup_url(head.path_and_query());
        Some(RequestEnv::for_request(Request::new(head, conn, host), &url, &Effective::of_host(own)))
    }

    /// A static or built-in answer: stored when it may be; a 5xx replaced
    /// by the stale entry (CacheStaleOnError).
    fn store_ready(&self, head: &RequestHead, conn: &ConnInfo, mut r: Response, plan: &Plan, stale: Option<Entry>, storable_request: bool) -> Response {
        let c = &self.hosts[r.host].config.cache;
        crate::filters::apply_now(&mut r, head);
        if r.status >= 500 && c.stale_on_error() {
            if let Some(e) = &stale {
                return self.answer_of_entry(&plan.store, head, conn, r.host, e, "stale; detail=stale-on-error", plan.no_coding);
            }
        }
        // A static file still the stored one: revalidated by its own
        // validators (Apache's default handler answers mod_cache's
        // conditional request with 304), not read and stored again.
        if let Some(e) = stale.as_ref().filter(|e| storable_request && unchanged_file(e, &r)) {
            return self.revalidated(plan, head, conn, r.host, e, &as_pairs(&r.headers));
        }
        let body: Option<Arc<[u8]>> = match &r.body {
            Body::Empty => Some(Arc::from(&[][..])),
            Body::Bytes(b) => Some(Arc::from(b.as_slice())),
            Body::Shared(b) => Some(b.clone()),
            Body::File { file, start: 0, len } if *len <= plan.store.max_entry => {
                let mut buf = vec![0; *len as usize];
                std::os::unix::fs::FileExt::read_exact_at(&**file, &mut buf, 0).ok().map(|()| Arc::from(buf))
            }
            _ => None,
        };
        let detail = match body {
            _ if !storable_request || r.error_document.is_some() || r.tunnel.is_some() => "fwd=uri-miss".to_string(),
            _ if no_cache_set(&r) => "fwd=uri-miss; detail=\"the no-cache variable\"".to_string(),
            None => "fwd=uri-miss; detail=body not storable".to_string(),
            Some(body) => {
                let headers = as_pairs(&r.headers);
                match store_answer(&plan.store, &plan.key, &rules(c), r.status, &headers, body, r.compress.as_deref(), head, &self.hosts[r.host].error_log) {
                    Ok(()) => "fwd=uri-miss; stored".to_string(),
                    Err(why) => {
                        warn_malformed(&self.hosts[r.host].error_log, &why, head);
                        format!("fwd=uri-miss; detail=\"{why}\"")
                    }
                }
            }
        };
        r.add("Cache-Status", format!("warren; {detail}"));
        if c.header.unwrap_or(false) {
            r.add("X-Cache", format!("MISS from {}", self.hosts[r.host].name));
        }
        r
    }

    /// The answer of stale entry `e` that the origin confirmed current (a
    /// 304, or a static file whose validators are the entry's): the entry
    /// stored again with the origin's `fresh` fields over its own, and
    /// served from the store (X-Cache: REVALIDATE, as Apache's).
    fn revalidated(&self, plan: &Plan, head: &RequestHead, conn: &ConnInfo, host: usize, e: &Entry, fresh: &[(String, String)]) -> Response {
        let c = &self.hosts[host].config.cache;
        let mut merged = e.headers.clone();
        for (n, v) in fresh {
            merged.retain(|(m, _)| !m.eq_ignore_ascii_case(n));
            merged.push((n.clone(), v.clone()));
        }
        let refreshed = store_answer(&plan.store, &plan.key, &rules(c), e.status, &merged, e.body.clone(), None, head, &self.hosts[host].error_log);
        let e = plan.store.lookup(&plan.key, &field_of(head)).unwrap_or_else(|| e.clone());
        let how = if refreshed.is_ok() { "fwd=stale; fwd-status=304; stored" } else { "fwd=stale; fwd-status=304" };
        let mut answer = self.answer_of_entry(&plan.store, head, conn, host, &e, how, plan.no_coding);
        if c.header.unwrap_or(false) {
            answer.headers.retain(|(n, _)| n != "X-Cache");
            answer.add("X-Cache", format!("REVALIDATE from {}", self.hosts[host].name));
        }
        answer
    }

    /// The answer made of a stored entry: its status and fields with Age
    /// and Cache-Status, 304 to a matching conditional request, 206 to one
    /// range of it.
    #[allow(clippy::too_many_arguments)]
    fn answer_of_entry(&self, store: &Store, head: &RequestHead, conn: &ConnInfo, host: usize, e: &Entry, how: &str, no_coding: bool) -> Response {
        let now = Store::now();
        let ttl = e.fresh_until as i64 - now as i64;
        let chosen = if no_coding { Chosen::Identity { varies: false } } else { coding::choose(store, head, e) };
        let e = match &chosen {
            Chosen::Coded(variant) => variant,
            Chosen::Identity { .. } => e,
        };
        let mut r = Response::new(e.status, host);
        r.headers = e.headers.iter().filter(|(n, _)| n != coding::OFFER_FIELD).map(|(n, v)| (HeaderName::Owned(n.clone()), v.clone())).collect();
        if let Chosen::Identity { varies: true } = chosen {
            r.vary_on("Accept-Encoding");
        }
        r.add("Age", e.age(now).to_string());
        r.add("Cache-Status", format!("warren; {how}; ttl={ttl}"));
        let c = &self.hosts[host].config.cache;
        if c.header.unwrap_or(false) {
            let word = if how.starts_with("hit") { "HIT" } else { "STALE" };
            r.add("X-Cache", format!("{word} from {}", self.hosts[host].name));
        }
        if c.detail_header.unwrap_or(false) {
            r.add("X-Cache-Detail", format!("\"cache hit\" from {}", self.hosts[host].name));
        }
        // Only a request with a validator of its own can be answered 304
        // (the stored date is not parsed for every hit).
        let asks = head.header("if-none-match").is_some() || head.header("if-modified-since").is_some();
        let modified = e.header("last-modified").filter(|_| asks).and_then(|v| httpdate::parse_http_date(v).ok());
        let v = Validators { etag: e.header("etag").unwrap_or("\"\u{0}\"").to_string(), modified: modified.unwrap_or(SystemTime::UNIX_EPOCH + Duration::from_secs(e.stored_at)), last_modified: String::new() };
        if asks && e.status == 200 && (e.header("etag").is_some() || modified.is_some()) && conditional::evaluate_preconditions(head, &v) == Precondition::NotModified {
            r.status = 304;
            r.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("content-type") && !n.eq_ignore_ascii_case("content-encoding"));
        } else if let (200, Some(range), None) = (e.status, head.header("range"), head.header("if-range")) {
            match conditional::parse_ranges(range, e.body.len() as u64) {
                Ranges::Some(ranges) if ranges.len() == 1 => {
                    let (first, last) = ranges[0];
                    r.status = 206;
                    r.add("Content-Range", format!("bytes {first}-{last}/{}", e.body.len()));
                    r.body = Body::Bytes(e.body[first as usize..=last as usize].to_vec());
                }
                Ranges::Unsatisfiable => {
                    let mut u = self.error(Request::new(head, conn, host), 416, "range not satisfiable from the cached answer");
                    u.add("Content-Range", format!("bytes */{}", e.body.len()));
                    return u;
                }
                _ => r.body = Body::Shared(e.body.clone()),
            }
        } else {
            r.body = Body::Shared(e.body.clone());
        }
        // Stored as sent: its Header and Expires lines were applied before it was stored.
        r
    }

    /// `PURGE /url` (or `/prefix*`): the stored answers removed, for a
    /// client the host's Require lines for PURGE let in (an `<Limit PURGE>`
    /// or `<Location>` around the cached URLs); a 405 elsewhere.
    fn purge(&self, head: &RequestHead, conn: &ConnInfo, host: usize, plan: &Plan, on_loop: bool) -> Outcome {
        if on_loop {
            // The Require rules may be a tenant's `.htaccess` file's.
            return Outcome::OffLoop;
        }
        let req = Request::new(head, conn, host);
        let url = path::lookup_url(head.path_and_query());
        let fs = self.lookup_fs_path(req, &url);
        let dir = self.effective_for(req, &fs, &url);
        // Rules that an anonymous client from anywhere, sending no field of
        // its own, passes (the default `Require all granted`) do not let
        // anyone purge; a key in a field the client sends does.
        if !dir.allows(head, conn) || self.open_to_anyone(head, conn, host, false) != Some(false) {
            let why = "PURGE: refused: the Require rules for PURGE here do not let this client in, or let anyone in (write e.g. <If \"%{REQUEST_METHOD} == 'PURGE'\"> Require ip 127.0.0.1 </If>)";
            self.hosts[host].error_log.error(Some(conn.useragent), why);
            let mut r = self.error(req, 405, why);
            r.add("Allow", "GET, HEAD, POST");
            return Outcome::Ready(r);
        }
        let target = keyed_target(&self.hosts[host].config.cache, head.path_and_query());
        let removed = purge_target(&plan.store, &plan.base, &target);
        let why = format!("PURGE {target}: {removed} entr{} removed", if removed == 1 { "y" } else { "ies" });
        self.hosts[host].error_log.log(LogLevel::Info, Some(conn.useragent), &why);
        let mut r = Response::new(200, host);
        r.add("Content-Type", "text/plain");
        r.body = Body::Bytes(format!("{why}\n").into_bytes());
        Outcome::Ready(r)
    }
}

/// `head` without its fields but Host: the request of a client that
/// sends nothing of its own (None if it cannot be made, and then nothing
/// is stored).
fn bare_request(head: &RequestHead) -> Option<RequestHead> {
    let mut wire = format!("{} ", head.method()).into_bytes();
    wire.extend_from_slice(head.path_and_query());
    wire.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    wire.extend_from_slice(head.host().unwrap_or_default());
    wire.extend_from_slice(b"\r\n\r\n");
    let limits = warren_http::HeadLimits { request_line: wire.len(), field_size: wire.len(), fields: 1, head: wire.len() };
    warren_http::parse_head(&wire, &limits).ok().flatten().map(|(h, _)| h)
}

/// Whether static answer `r` is the representation entry `e` holds: a
/// whole file (opened, or read by the small-file cache) whose strong ETag
/// is the entry's, or, without ETags, whose Last-Modified and length are.
fn unchanged_file(e: &Entry, r: &Response) -> bool {
    let len = match &r.body {
        Body::File { start: 0, len, .. } => *len,
        Body::Shared(b) => b.len() as u64,
        Body::Bytes(b) => b.len() as u64,
        _ => return false,
    };
    let field = |name: &str| r.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
    if e.status != 200 || r.status != 200 || r.filename.is_none() {
        return false;
    }
    match (e.header("etag"), field("etag")) {
        (Some(stored), Some(now)) => stored == now && !now.starts_with("W/"),
        (None, None) => e.header("last-modified").is_some_and(|lm| field("last-modified") == Some(lm)) && e.body.len() as u64 == len,
        _ => false,
    }
}

/// Whether the request's URL is one CacheDisable takes out of a
/// CacheEnable prefix.
fn disabled_here(c: &CacheDirectives, head: &RequestHead) -> bool {
    if c.disable.is_empty() {
        return false;
    }
    let (raw_path, _) = path::split_query(head.path_and_query());
    path::normalize(raw_path).is_ok_and(|url| c.disabled_for(&url))
}

/// Whether `env` says no compression: mod_deflate's `no-gzip` (Debian's
/// BrowserMatch lines for old browsers) or mod_brotli's `no-brotli`, as
/// `compress::finish` reads them.
fn refuses_coding(env: &RequestEnv) -> bool {
    env.get("no-gzip").is_some() || env.get("no-brotli").is_some()
}

/// `outcome` of a request that passed the cache without its having a
/// say (RFC 9211: `fwd=bypass`): Cache-Status and the `more` fields on
/// the ready answer, or on the application's answer through the
/// request's Header rules (which every driver applies to it last).
fn bypassed(outcome: Outcome, conn: &ConnInfo, why: &str, mut more: Vec<(&'static str, String)>) -> Outcome {
    more.insert(0, ("Cache-Status", format!("warren; fwd=bypass; detail=\"{why}\"")));
    match outcome {
        Outcome::Ready(mut r) => {
            for (name, value) in more {
                r.add(name, value);
            }
            Outcome::Ready(r)
        }
        Outcome::Gateway(mut gw) => {
            let origin = warren_config::parse::Origin { file: Arc::new(PathBuf::from("(the response cache)")), line: 0 };
            let filters = gw.filters.get_or_insert_with(|| Box::new(crate::filters::RequestFilters::new(conn.useragent.ip(), conn.tls.is_some())));
            for (name, value) in more {
                // `%%`: a Header value is a format, and these are the cache's own words.
                let args = ["always".to_string(), "add".to_string(), name.to_string(), value.replace('%', "%%")];
                if let Ok(rule) = warren_config::headers::parse_rule(&args, false, false, &origin) {
                    filters.headers.push(Arc::new(rule));
                }
            }
            Outcome::Gateway(gw)
        }
        other => other,
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
#[path = "response_cache_tests.rs"]
mod tests;
