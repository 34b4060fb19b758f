//! What the response cache shows and does for its admin: its counts on
//! server-status and the metrics page, and `warren cache purge URL`.

use super::*;

impl Site {
    /// Every store's counts added up (hits, misses, stores, evictions,
    /// bytes stored: [`warren_cache::COUNTER_NAMES`]), None when no host caches.
    pub fn cache_counts(&self) -> Option<[u64; 5]> {
        let mut roots = Vec::new();
        for (i, h) in self.hosts.iter().enumerate() {
            for e in &h.config.cache.enable {
                if let Some(s) = self.store_for(i, e.kind) {
                    if !roots.iter().any(|r: &Arc<Store>| r.root() == s.root()) {
                        roots.push(s);
                    }
                }
            }
        }
        if roots.is_empty() {
            return None;
        }
        Some(roots.iter().map(|s| s.counters.read()).fold([0; 5], |a, c| std::array::from_fn(|i| a[i] + c[i])))
    }

    /// server-status (`auto`: its machine-readable form) or the metrics
    /// page `r` with the cache's counts, when a host caches.
    pub(crate) fn with_cache_counts(&self, mut r: Response, page: CountsPage) -> Response {
        let (Some(counts), Body::Bytes(body)) = (self.cache_counts(), &mut r.body) else { return r };
        let text = String::from_utf8_lossy(body).into_owned();
        let named = warren_cache::COUNTER_NAMES.iter().zip(counts);
        let text = match page {
            CountsPage::StatusAuto => text + &named.map(|(n, v)| format!("Cache{}: {v}\n", camel(n))).collect::<String>(),
            CountsPage::StatusHtml => {
                let dl: String = named.map(|(n, v)| format!("<dt>Cache {}: {v}</dt>\n", n.replace('_', " "))).collect();
                text.replacen("</body>", &format!("<h2>Response cache</h2>\n<dl>{dl}</dl>\n</body>"), 1)
            }
            CountsPage::Metrics => {
                // OpenMetrics names a counter's family without `_total` (as metrics.rs writes them).
                let openmetrics = text.contains("# EOF");
                let lines: String = named
                    .map(|(n, v)| {
                        let family = if openmetrics { format!("warren_cache_{n}") } else { format!("warren_cache_{n}_total") };
                        format!("# HELP {family} The response cache's {}, every process's.\n# TYPE {family} counter\nwarren_cache_{n}_total {v}\n", n.replace('_', " "))
                    })
                    .collect();
                match text.rfind("# EOF") {
                    Some(at) => format!("{}{lines}{}", &text[..at], &text[at..]),
                    None => text + &lines,
                }
            }
        };
        r.body = Body::Bytes(text.into_bytes());
        r
    }
}

/// Which page [`Site::with_cache_counts`] adds to.
pub(crate) enum CountsPage {
    StatusAuto,
    StatusHtml,
    Metrics,
}

/// `bytes_stored` -> `BytesStored`.
fn camel(name: &str) -> String {
    name.split('_').map(|w| w[..1].to_ascii_uppercase() + &w[1..]).collect()
}

/// Removes the entries of `target` (whatever Host value and variant they
/// were stored for), or of every URL under it when it ends in `*`.
pub(super) fn purge_target(store: &Store, base: &str, target: &str) -> usize {
    match target.strip_suffix('*') {
        Some(prefix) => store.purge_prefix(&format!("{base}{prefix}")),
        None => store.purge_prefix(&format!("{base}{target}\u{0}")),
    }
}

impl Site {
    /// `warren cache purge URL`: the entries of an absolute URL
    /// (`http://name[:port]/path`, or `.../prefix*`), in the stores of the
    /// host its name and port choose. Ok: how many were removed.
    pub fn purge_url(&self, url: &str) -> Result<usize, String> {
        let (scheme, rest) = url.split_once("://").filter(|(s, _)| matches!(*s, "http" | "https")).ok_or_else(|| format!("{url}: an absolute http:// or https:// URL is expected"))?;
        let (authority, target) = rest.find('/').map_or((rest, "/"), |at| rest.split_at(at));
        let (name, port) = match authority.rsplit_once(':') {
            Some((n, p)) => (n, p.parse::<u16>().map_err(|_| format!("{url}: a bad port"))?),
            None => (authority, if scheme == "https" { 443 } else { 80 }),
        };
        let host = self.select_host(Some(name.as_bytes()), ([127, 0, 0, 1], port).into());
        let c = &self.hosts[host].config.cache;
        if c.enable.is_empty() {
            return Err(format!("{url}: the host {} has no CacheEnable", self.hosts[host].name));
        }
        let base = c.key_base_url.clone().unwrap_or_else(|| format!("{scheme}://{}:{port}", self.hosts[host].name));
        let target = keyed_target(c, target.as_bytes());
        let mut removed = 0;
        for kind in [CacheKind::Disk, CacheKind::Socache] {
            if c.enable.iter().any(|e| e.kind == kind) {
                let store = self.store_for(host, kind).ok_or_else(|| format!("{url}: the cache directory cannot be opened (see the error log)"))?;
                removed += purge_target(&store, &base, &target);
            }
        }
        Ok(removed)
    }
}
