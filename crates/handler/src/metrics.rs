//! `SetHandler metrics`: the server's figures in Prometheus's text format,
//! or in OpenMetrics when the scraper's Accept asks for
//! `application/openmetrics-text`. The figures come from the MPM through
//! [`MetricsSource`] (per-thread counters in the shared scoreboard, summed
//! at each scrape), and from warren's own pools through their dispatcher;
//! this layer only names and formats them.

use std::fmt::Write as _;

use warren_pool_api::{MemoryBudget, PoolStatus};

use crate::request::Request;
use crate::{Body, Response, Site};

/// The status classes requests are counted in; the last one holds
/// requests that ended without a status (the client went first).
pub const STATUS_CLASSES: [&str; 6] = ["1xx", "2xx", "3xx", "4xx", "5xx", "none"];

/// The request-duration histogram's upper bounds, in microseconds; one
/// more bucket (+Inf) holds the rest.
pub const DURATION_BOUNDS_US: [u64; 12] = [1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000, 10_000_000];

/// The class a status is counted in: an index into [`STATUS_CLASSES`].
pub fn status_class(status: u16) -> usize {
    match status {
        100..=599 => usize::from(status / 100 - 1),
        _ => STATUS_CLASSES.len() - 1,
    }
}

/// The histogram bucket a duration falls in (the last: +Inf).
pub fn duration_bucket(duration_us: u64) -> usize {
    DURATION_BOUNDS_US.iter().position(|&b| duration_us <= b).unwrap_or(DURATION_BOUNDS_US.len())
}

/// One virtual host's counts (virtual hosts sharing a name share them).
#[derive(Clone, Debug, Default)]
pub struct VhostFigures {
    pub name: String,
    /// Requests by [`STATUS_CLASSES`].
    pub requests: [u64; STATUS_CLASSES.len()],
    pub bytes_sent: u64,
}

/// The server's figures at one scrape.
#[derive(Clone, Debug, Default)]
pub struct MetricsSnapshot {
    pub mpm: &'static str,
    pub start_time_ms: u64,
    pub generation: u32,
    pub vhosts: Vec<VhostFigures>,
    /// Requests by duration bucket (not cumulative; the last is +Inf).
    pub duration_buckets: [u64; DURATION_BOUNDS_US.len() + 1],
    pub duration_sum_us: u64,
    pub tls_handshakes: u64,
    pub tls_resumed: u64,
    pub h2_streams: u64,
    /// Worker slots of live children by scoreboard state (`reading`,
    /// `writing`, `keepalive`, ...).
    pub workers: Vec<(&'static str, u64)>,
    pub children: u64,
    pub children_stopping: u64,
}

/// Where the figures come from; set by the MPM.
pub trait MetricsSource: Send + Sync {
    fn snapshot(&self) -> MetricsSnapshot;
    /// The counters a request to host `host` (an index into the site's
    /// hosts) goes to.
    fn host_bucket(&self, host: usize) -> usize;
}

/// Whether `accept` asks for OpenMetrics rather than Prometheus's text.
pub fn wants_openmetrics(accept: Option<&[u8]>) -> bool {
    accept.is_some_and(|a| {
        String::from_utf8_lossy(a).split(',').any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let is_om = parts.next().is_some_and(|t| t.eq_ignore_ascii_case("application/openmetrics-text"));
            // `q=0` refuses it.
            let refused = |p: &str| p.split_once('=').is_some_and(|(k, v)| k.trim().eq_ignore_ascii_case("q") && v.trim().parse::<f32>().is_ok_and(|q| q <= 0.0));
            is_om && !parts.any(refused)
        })
    })
}

/// A label value with `\`, `"` and newlines escaped, as both formats want.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn seconds(us: u64) -> String {
    format!("{}", us as f64 / 1e6)
}

/// Writes families; OpenMetrics names a counter's family without `_total`.
struct Writer {
    out: String,
    openmetrics: bool,
}

impl Writer {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let family = if self.openmetrics && kind == "counter" { name.trim_end_matches("_total") } else { name };
        let _ = writeln!(self.out, "# HELP {family} {help}\n# TYPE {family} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.out.push_str(name);
        if !labels.is_empty() {
            let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", label(v))).collect();
            let _ = write!(self.out, "{{{}}}", inner.join(","));
        }
        let _ = writeln!(self.out, " {value}");
    }

    fn single(&mut self, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }
}

/// One pool's figures: its status page's, and the memory budget's for it.
pub struct PoolFigures<'a> {
    pub status: &'a PoolStatus,
    pub max_children: u32,
    pub max_children_auto: bool,
}

/// A figure of each item of a list: its name (a counter's ends in
/// `_total`), its help, and how it is read from an item.
type Figure<T> = (&'static str, &'static str, fn(&T) -> u64);

/// One family per figure, a sample per item labelled `pool`.
fn write_per_pool<T>(w: &mut Writer, items: &[T], pool: fn(&T) -> &str, figures: &[Figure<T>]) {
    for (name, help, get) in figures {
        w.family(name, if name.ends_with("_total") { "counter" } else { "gauge" }, help);
        for item in items {
            w.sample(name, &[("pool", pool(item))], get(item));
        }
    }
}

fn write_pools(w: &mut Writer, pools: &[PoolFigures], memory: Option<&MemoryBudget>) {
    if !pools.is_empty() {
        write_per_pool(
            w,
            pools,
            |p| &p.status.pool,
            &[
                ("warren_pool_children_idle", "Idle children of the pool.", |p| p.status.idle_processes.into()),
                ("warren_pool_children_active", "Children of the pool serving a request.", |p| p.status.active_processes.into()),
                ("warren_pool_queue", "Requests waiting for a child of the pool.", |p| p.status.listen_queue.into()),
                ("warren_pool_queue_max", "The most requests that have waited for a child at once.", |p| p.status.max_listen_queue.into()),
                ("warren_pool_max_children", "pm.max_children now (with pm.max_children auto, the memory budget's decision).", |p| p.max_children.into()),
                ("warren_pool_max_children_auto", "1 where pm.max_children is auto (sized by the memory budget).", |p| p.max_children_auto.into()),
                ("warren_pool_accepted_total", "Requests the pool has taken.", |p| p.status.accepted_conn),
                ("warren_pool_max_children_reached_total", "Times the pool had every child busy and could start no more.", |p| p.status.max_children_reached.into()),
                ("warren_pool_slow_requests_total", "Requests slower than request_slowlog_timeout.", |p| p.status.slow_requests.into()),
            ],
        );
    }
    let Some(m) = memory else { return };
    w.single("warren_memory_budget_bytes", "gauge", "The memory the pools are sized to fit in.", m.limit);
    w.single("warren_memory_headroom_bytes", "gauge", "Memory of the budget kept free.", m.headroom);
    w.single("warren_memory_others_bytes", "gauge", "Memory counted for the rest of the machine.", m.others);
    w.single("warren_memory_pressure", "gauge", "1 while under memory pressure: pools do not grow.", u8::from(m.pressure));
    write_per_pool(
        w,
        &m.pools,
        |p| &p.pool,
        &[
            ("warren_pool_memory_per_child_bytes", "Memory a child of the pool is counted at.", |p| p.per_child),
            ("warren_pool_memory_used_bytes", "Memory the pool's children use now.", |p| p.used),
            ("warren_pool_max_children_budget", "The children the memory budget gives the pool.", |p| p.max_children.into()),
            ("warren_pool_large_children_replaced_total", "Children replaced for outgrowing their share.", |p| p.recycled.into()),
        ],
    );
}

/// The scrape's body and its content type.
pub fn render(snap: &MetricsSnapshot, pools: &[PoolFigures], memory: Option<&MemoryBudget>, openmetrics: bool) -> (String, &'static str) {
    let mut w = Writer { out: String::new(), openmetrics };
    w.family("warren_requests_total", "counter", "Requests answered, by virtual host and status class.");
    for v in &snap.vhosts {
        for (class, n) in STATUS_CLASSES.iter().zip(v.requests) {
            w.sample("warren_requests_total", &[("vhost", &v.name), ("class", class)], n);
        }
    }
    w.family("warren_sent_bytes_total", "counter", "Bytes sent in answers, by virtual host.");
    for v in &snap.vhosts {
        w.sample("warren_sent_bytes_total", &[("vhost", &v.name)], v.bytes_sent);
    }
    let name = "warren_request_duration_seconds";
    w.family(name, "histogram", "Time from a request's head to the end of its answer.");
    let mut cumulative = 0;
    for (i, n) in snap.duration_buckets.iter().enumerate() {
        cumulative += n;
        let le = DURATION_BOUNDS_US.get(i).map_or("+Inf".to_string(), |&b| seconds(b));
        w.sample(&format!("{name}_bucket"), &[("le", &le)], cumulative);
    }
    w.sample(&format!("{name}_sum"), &[], seconds(snap.duration_sum_us));
    w.sample(&format!("{name}_count"), &[], cumulative);
    w.family("warren_tls_handshakes_total", "counter", "TLS handshakes completed, by whether the session was resumed.");
    w.sample("warren_tls_handshakes_total", &[("resumed", "false")], snap.tls_handshakes.saturating_sub(snap.tls_resumed));
    w.sample("warren_tls_handshakes_total", &[("resumed", "true")], snap.tls_resumed);
    w.single("warren_http2_streams_total", "counter", "HTTP/2 streams that carried a request.", snap.h2_streams);
    w.family("warren_workers", "gauge", "Worker slots of live children, by scoreboard state.");
    for (state, n) in &snap.workers {
        w.sample("warren_workers", &[("state", state)], n);
    }
    w.single("warren_children", "gauge", "Live server children.", snap.children);
    w.single("warren_children_stopping", "gauge", "Server children finishing (told to stop or retiring).", snap.children_stopping);
    w.single("warren_config_generation", "gauge", "Graceful restarts since the server started.", snap.generation);
    w.single("warren_start_time_seconds", "gauge", "When the server started (Unix time).", snap.start_time_ms / 1000);
    w.family("warren_info", "gauge", "The MPM the server runs.");
    w.sample("warren_info", &[("mpm", snap.mpm)], 1);
    write_pools(&mut w, pools, memory);
    if openmetrics {
        w.out.push_str("# EOF\n");
        (w.out, "application/openmetrics-text; version=1.0.0; charset=utf-8")
    } else {
        (w.out, "text/plain; version=0.0.4; charset=utf-8")
    }
}

/// The answer to a scrape.
pub fn respond(host: usize, snap: &MetricsSnapshot, pools: &[PoolFigures], memory: Option<&MemoryBudget>, openmetrics: bool) -> Response {
    let (body, content_type) = render(snap, pools, memory, openmetrics);
    let mut r = Response::new(200, host);
    r.body = Body::Bytes(body.into_bytes());
    r.add("Content-Type", content_type);
    r.add("Cache-Control", "no-store");
    r
}

impl Site {
    /// `SetHandler metrics`, once `Require` let the request in.
    pub(crate) fn metrics_page(&self, req: Request) -> Response {
        let Some(source) = self.metrics.get() else {
            return self.error(req, 503, "metrics: no scoreboard in this process");
        };
        let snap = source.snapshot();
        let dispatch = self.pools.get();
        let memory = dispatch.and_then(|d| d.memory());
        let statuses: Vec<(PoolStatus, &warren_config::PoolConfig)> =
            self.settings.pools.iter().filter_map(|p| Some((dispatch?.status(&p.name)?, p))).collect();
        let pools: Vec<PoolFigures> = statuses
            .iter()
            .map(|(status, config)| {
                // With `auto`, the count the memory budget decided.
                let budget = memory.as_ref().and_then(|m| m.pools.iter().find(|p| p.pool == config.name));
                let max_children = if config.max_children_auto { budget.map_or(config.max_children, |b| b.max_children) } else { config.max_children };
                PoolFigures { status, max_children, max_children_auto: config.max_children_auto }
            })
            .collect();
        respond(req.host, &snap, &pools, memory.as_ref(), wants_openmetrics(req.head.header("accept")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> MetricsSnapshot {
        let mut s = MetricsSnapshot { mpm: "event", vhosts: vec![VhostFigures { name: "a\"b".into(), requests: [0, 3, 1, 0, 0, 0], bytes_sent: 99 }], ..Default::default() };
        s.duration_buckets[0] = 2;
        s.duration_buckets[DURATION_BOUNDS_US.len()] = 2;
        s
    }

    #[test]
    fn classes_and_buckets() {
        assert_eq!((status_class(101), status_class(204), status_class(599), status_class(0), status_class(600)), (0, 1, 4, 5, 5));
        assert_eq!((duration_bucket(0), duration_bucket(1_000), duration_bucket(1_001), duration_bucket(u64::MAX)), (0, 0, 1, 12));
    }

    #[test]
    fn text_format_is_cumulative_and_escaped() {
        let (text, ct) = render(&snapshot(), &[], None, false);
        assert!(ct.starts_with("text/plain; version=0.0.4"));
        assert!(text.contains("warren_requests_total{vhost=\"a\\\"b\",class=\"2xx\"} 3\n"), "{text}");
        assert!(text.contains("warren_request_duration_seconds_bucket{le=\"0.001\"} 2\n"));
        assert!(text.contains("warren_request_duration_seconds_bucket{le=\"10\"} 2\n"));
        assert!(text.contains("warren_request_duration_seconds_bucket{le=\"+Inf\"} 4\n"));
        assert!(text.contains("warren_request_duration_seconds_count 4\n"));
        assert!(text.contains("# TYPE warren_requests_total counter\n"));
        assert!(!text.contains("# EOF"));
    }

    #[test]
    fn openmetrics_names_counter_families_without_total_and_ends() {
        let (text, ct) = render(&snapshot(), &[], None, true);
        assert!(ct.starts_with("application/openmetrics-text"));
        assert!(text.contains("# TYPE warren_requests counter\n") && text.contains("warren_requests_total{"));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn accept_negotiation() {
        assert!(wants_openmetrics(Some(b"application/openmetrics-text;version=1.0.0,text/plain;q=0.5")));
        assert!(!wants_openmetrics(Some(b"text/plain")));
        assert!(!wants_openmetrics(Some(b"application/openmetrics-text;q=0")));
        assert!(!wants_openmetrics(None));
    }
}
