//! The status page of one of warren's own pools (`pm.status_path`), with
//! php-fpm's fields and formats: plain text, `?json`, and `?full` for a
//! block per process.

use warren_config::{Handler, PoolConfig};

use crate::dir_config::{backend_of, Effective};
use crate::gateway::script::ScriptTarget;
use crate::filters::{self, RequestFilters};
use crate::request::Request;
use crate::{Body, Outcome, Response, Site};
pub use warren_pool_api::{PoolStatus, ProcessStatus};

fn http_time(secs: u64) -> String {
    crate::log_time::clf_time(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The page for `query` (`json`, `full`, both, or neither).
pub fn respond(host: usize, st: &PoolStatus, query: &[u8], now: u64) -> Response {
    let q = String::from_utf8_lossy(query);
    let flags: Vec<&str> = q.trim_start_matches('?').split('&').collect();
    let json = flags.contains(&"json");
    let full = flags.contains(&"full");
    let since = now.saturating_sub(st.start_time);
    let total = st.idle_processes + st.active_processes;
    let fields: Vec<(&str, String, bool)> = vec![
        ("pool", st.pool.clone(), true),
        ("process manager", st.process_manager.clone(), true),
        ("start time", if json { st.start_time.to_string() } else { http_time(st.start_time) }, !json),
        ("start since", since.to_string(), false),
        ("accepted conn", st.accepted_conn.to_string(), false),
        ("listen queue", st.listen_queue.to_string(), false),
        ("max listen queue", st.max_listen_queue.to_string(), false),
        ("listen queue len", st.listen_queue_len.to_string(), false),
        ("idle processes", st.idle_processes.to_string(), false),
        ("active processes", st.active_processes.to_string(), false),
        ("total processes", total.to_string(), false),
        ("max active processes", st.max_active_processes.to_string(), false),
        ("max children reached", st.max_children_reached.to_string(), false),
        ("slow requests", st.slow_requests.to_string(), false),
    ];
    let mut fields = fields;
    // pm.max_children auto: the count and the figures it was made from, in bytes.
    if let Some((m, p)) = st.memory.as_ref().and_then(|m| Some((m, m.pools.first()?))) {
        fields.extend([
            ("max children auto", p.max_children.to_string(), false),
            ("memory per child", p.per_child.to_string(), false),
            ("memory peak child", p.peak_child.to_string(), false),
            ("memory fixed", p.fixed.to_string(), false),
            ("memory used", p.used.to_string(), false),
            ("memory budget", m.limit.to_string(), false),
            ("memory budget source", m.source.to_string(), true),
            ("memory headroom", m.headroom.to_string(), false),
            ("memory of the rest", m.others.to_string(), false),
            ("memory pressure", u8::from(m.pressure).to_string(), false),
            ("memory cgroups", m.cgroups.to_string(), true),
            ("memory cgroup limit", p.cgroup_limit.to_string(), false),
            ("large children replaced", p.recycled.to_string(), false),
            ("memory remembered peak", p.remembered_peak.to_string(), false),
        ]);
    }
    let procs: Vec<Vec<(&str, String, bool)>> = st
        .processes
        .iter()
        .map(|p| {
            vec![
                ("pid", p.pid.to_string(), false),
                ("state", p.state.to_string(), true),
                ("start time", if json { p.start_time.to_string() } else { http_time(p.start_time) }, !json),
                ("start since", now.saturating_sub(p.start_time).to_string(), false),
                ("requests", p.requests.to_string(), false),
                ("request duration", p.request_duration_us.to_string(), false),
                ("request uri", p.request_uri.clone(), true),
                ("last request memory", p.last_request_memory.to_string(), false),
            ]
        })
        .collect();
    let mut body = String::new();
    if json {
        let obj = |fs: &[(&str, String, bool)]| {
            let items: Vec<String> = fs.iter().map(|(k, v, quoted)| format!("{}:{}", json_str(k), if *quoted { json_str(v) } else { v.clone() })).collect();
            format!("{{{}}}", items.join(","))
        };
        let mut top = obj(&fields);
        if full {
            top.pop();
            let list: Vec<String> = procs.iter().map(|p| obj(p)).collect();
            top.push_str(&format!(",\"processes\":[{}]}}", list.join(",")));
        }
        body = top;
    } else {
        for (k, v, _) in &fields {
            body.push_str(&format!("{:<22}{v}\n", format!("{k}:")));
        }
        if full {
            for p in &procs {
                body.push_str("\n************************\n");
                for (k, v, _) in p {
                    body.push_str(&format!("{:<22}{v}\n", format!("{k}:")));
                }
            }
        }
    }
    let mut r = Response::new(200, host);
    r.body = Body::Bytes(body.into_bytes());
    r.add("Content-Type", if json { "application/json" } else { "text/plain" });
    r.add("Cache-Control", "no-cache, no-store, must-revalidate");
    r
}

impl Site {
    /// A pool's `pm.status_path`, answered by warren from the pool's table
    /// (or by a php-fpm pool itself) on the hosts that use the pool (as
    /// php-fpm answers it only to the requests sent to it): its page lists
    /// request URIs and query strings.
    pub(crate) fn pool_status(&self, req: Request, url: &[u8], query: &[u8]) -> Option<Outcome> {
        let host = req.host;
        let used = &self.hosts[host].pools;
        let pool = self.settings.pools.iter().find(|p| used.contains(&p.name) && p.status_path.as_deref().is_some_and(|s| s.as_bytes() == url))?;
        let eff = self.effective(host, None, url);
        let filters = RequestFilters::for_request(req, url, &eff);
        Some(filters::attach(self.pool_status_page(req, pool, &eff, url, query), filters, req.head))
    }

    fn pool_status_page(&self, req: Request, pool: &PoolConfig, eff: &Effective, url: &[u8], query: &[u8]) -> Outcome {
        let host = req.host;
        if !eff.allows(req.head, req.conn) {
            return Outcome::Ready(self.denied(req, url));
        }
        if pool.runs_php_fpm() {
            // php-fpm answers it itself, its children and their requests included.
            let target = ScriptTarget { filename: url.to_vec(), name: url, path_info: b"" };
            return self.gateway(req, &backend_of(&Handler::Pool(pool.name.clone())), target, query, None);
        }
        let Some(st) = self.pools.get().and_then(|d| d.status(&pool.name)) else {
            return Outcome::Ready(self.error(req, 503, &format!("pool {} is not running", pool.name)));
        };
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Outcome::Ready(respond(host, &st, query, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let st = PoolStatus { pool: "www".into(), process_manager: "dynamic".into(), start_time: 1000, accepted_conn: 7, idle_processes: 2, active_processes: 1, processes: vec![ProcessStatus { pid: 42, state: "Idle", start_time: 1000, requests: 3, request_uri: "/a\"b".into(), ..Default::default() }], ..Default::default() };
        let text = |r: Response| match r.body {
            Body::Bytes(b) => String::from_utf8(b).unwrap(),
            _ => unreachable!(),
        };
        let plain = text(respond(0, &st, b"", 1010));
        assert!(plain.contains("pool:                 www\n") && plain.contains("total processes:      3\n") && plain.contains("max children reached: 0\n"), "{plain}");
        assert!(!plain.contains("pid:"));
        let json = text(respond(0, &st, b"json&full", 1010));
        assert!(json.starts_with("{\"pool\":\"www\",\"process manager\":\"dynamic\",\"start time\":1000,"), "{json}");
        assert!(json.contains("\"processes\":[{\"pid\":42,\"state\":\"Idle\"") && json.contains("\"request uri\":\"/a\\\"b\"") && json.ends_with("]}"), "{json}");
        let full = text(respond(0, &st, b"full", 1010));
        assert!(full.contains("************************\npid:                  42\n"), "{full}");
    }
}
