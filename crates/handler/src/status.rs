//! server-status, like mod_status: an HTML page, and with `?auto` the
//! machine-readable text with Apache's field names that collectd and
//! apache_exporter read. The data comes from the MPM's scoreboard through
//! [`StatusSource`], so this layer knows nothing of processes.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::path::html_escape;
use crate::{Body, Response};
use warren_pool_api::MemoryBudget;

/// One worker as the scoreboard shows it.
#[derive(Clone, Debug)]
pub struct WorkerStatus {
    pub process_slot: usize,
    pub thread: usize,
    pub pid: i32,
    pub state: char,
    pub accesses: u64,
    pub bytes: u64,
    pub last_used_ms: u64,
    pub last_duration_us: u64,
    pub client: String,
    pub vhost: String,
    pub request: String,
}

/// One child process.
#[derive(Clone, Debug)]
pub struct ChildStatus {
    pub slot: usize,
    pub pid: i32,
    pub stopping: bool,
    /// Whether it takes new connections (event MPM: see warren-mpm's `spread`).
    pub accepting: bool,
}

#[derive(Clone, Debug, Default)]
pub struct StatusSnapshot {
    pub mpm: &'static str,
    pub restart_time_ms: u64,
    pub generation: u32,
    /// Live child processes.
    pub processes: Vec<ChildStatus>,
    /// Every slot: ServerLimit x ThreadLimit entries, `.` where nothing runs.
    pub workers: Vec<WorkerStatus>,
}

pub trait StatusSource: Send + Sync {
    fn snapshot(&self) -> StatusSnapshot;
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn busy(state: char) -> bool {
    !matches!(state, '_' | '.' | 'I')
}

/// The memory budget and the pools sized by it, as `Name: value` lines
/// (bytes) for `?auto`, or a paragraph.
fn memory_lines(m: &MemoryBudget, auto: bool) -> String {
    let mut out = String::new();
    let pressure = if m.pressure { 1 } else { 0 };
    if auto {
        let _ = writeln!(out, "MemoryBudget: {}\nMemoryBudgetSource: {}\nMemoryHeadroom: {}\nMemoryUsedByRest: {}\nMemoryRestNow: {}\nMemoryPressure: {pressure}\nMemoryCgroups: {}\nMemoryPasses: {}", m.limit, m.source, m.headroom, m.others, m.others_now, m.cgroups, m.passes);
        for p in &m.pools {
            let _ = writeln!(
                out,
                "PoolMaxChildren-{0}: {1}\nPoolMemoryPerChild-{0}: {2}\nPoolMemoryPeakChild-{0}: {3}\nPoolMemoryFixed-{0}: {4}\nPoolMemoryUsed-{0}: {5}\nPoolCgroupLimit-{0}: {6}\nPoolLargeChildrenReplaced-{0}: {7}\nPoolMemoryRememberedPeak-{0}: {8}\nPoolTasksLimit-{0}: {9}",
                p.pool, p.max_children, p.per_child, p.peak_child, p.fixed, p.used, p.cgroup_limit, p.recycled, p.remembered_peak, p.tasks_limit
            );
        }
        return out;
    }
    let mib = |b: u64| format!("{:.1} MB", b as f64 / 1048576.0);
    let _ = write!(
        out,
        "<h2>Memory budget</h2>\n<dl><dt>{} ({}), {} of headroom, {} for the rest ({} now){}</dt>\n<dt>pools' memory cgroups: {}</dt>\n",
        mib(m.limit),
        m.source,
        mib(m.headroom),
        mib(m.others),
        mib(m.others_now),
        if m.pressure { "; under memory pressure: pools do not grow" } else { "" },
        html_escape(m.cgroups)
    );
    for p in &m.pools {
        let cgroup = if p.cgroup_limit > 0 { format!(", its cgroup limited to {}", mib(p.cgroup_limit)) } else { String::new() };
        let cgroup = if p.tasks_limit > 0 { format!("{cgroup} and {} tasks", p.tasks_limit) } else { cgroup };
        let remembered = if p.remembered_peak > 0 { format!(", counted with the peak its last run learned ({})", mib(p.remembered_peak)) } else { String::new() };
        let _ = writeln!(
            out,
            "<dt>pool {}: pm.max_children auto = {}, children of {} (peak {}), {} for the pool whatever its size, {} in use{cgroup}{remembered}, {} children replaced for outgrowing it</dt>",
            html_escape(&p.pool),
            p.max_children,
            mib(p.per_child),
            mib(p.peak_child),
            mib(p.fixed),
            mib(p.used),
            p.recycled
        );
    }
    out.push_str("</dl>\n");
    out
}

/// The page; `memory`: the budget, when a pool is sized by it.
pub fn respond(host: usize, snap: &StatusSnapshot, memory: Option<&MemoryBudget>, auto: bool, extended: bool, server_name: &str, server_version: &str) -> Response {
    let uptime = (now_ms().saturating_sub(snap.restart_time_ms) / 1000).max(1);
    let accesses: u64 = snap.workers.iter().map(|w| w.accesses).sum();
    let bytes: u64 = snap.workers.iter().map(|w| w.bytes).sum();
    let busy_workers = snap.workers.iter().filter(|w| busy(w.state)).count();
    let idle_workers = snap.workers.iter().filter(|w| w.state == '_').count();
    let board: String = snap.workers.iter().map(|w| w.state).collect();
    let stopping = snap.processes.iter().filter(|p| p.stopping).count();
    let mut r = Response::new(200, host);
    let mut out = String::new();
    if auto {
        let _ = writeln!(out, "{server_name}");
        let _ = writeln!(out, "ServerVersion: {server_version}");
        let _ = writeln!(out, "ServerMPM: {}", snap.mpm);
        let _ = writeln!(out, "ParentServerConfigGeneration: {}", snap.generation + 1);
        let _ = writeln!(out, "ServerUptimeSeconds: {uptime}");
        let _ = writeln!(out, "Total Accesses: {accesses}");
        let _ = writeln!(out, "Total kBytes: {}", bytes / 1024);
        let _ = writeln!(out, "Uptime: {uptime}");
        let _ = writeln!(out, "ReqPerSec: {}", accesses as f64 / uptime as f64);
        let _ = writeln!(out, "BytesPerSec: {}", bytes as f64 / uptime as f64);
        let _ = writeln!(out, "BytesPerReq: {}", if accesses > 0 { bytes as f64 / accesses as f64 } else { 0.0 });
        let _ = writeln!(out, "BusyWorkers: {busy_workers}");
        let _ = writeln!(out, "IdleWorkers: {idle_workers}");
        let _ = writeln!(out, "Processes: {}", snap.processes.len());
        let _ = writeln!(out, "Stopping: {stopping}");
        let _ = writeln!(out, "Scoreboard: {board}");
        if let Some(m) = memory {
            out.push_str(&memory_lines(m, true));
        }
        r.body = Body::Bytes(out.into_bytes());
        return r.header("Content-Type", "text/plain; charset=ISO-8859-1");
    }
    let _ = write!(
        out,
        "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 3.2 Final//EN\">\n<html><head>\n<title>Warren Status</title>\n</head><body>\n<h1>Warren Server Status for {}</h1>\n<dl><dt>Server Version: {}</dt>\n<dt>Server MPM: {}</dt>\n<dt>Server uptime: {uptime} seconds</dt>\n<dt>Total accesses: {accesses} - Total Traffic: {} kB</dt>\n<dt>{busy_workers} requests currently being processed, {idle_workers} idle workers</dt>\n<dt>{} processes, {stopping} stopping</dt></dl>\n<pre>",
        html_escape(server_name),
        html_escape(server_version),
        snap.mpm,
        bytes / 1024,
        snap.processes.len()
    );
    for chunk in board.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str("</pre>\n<p>Scoreboard Key:<br>\n\"<b><code>_</code></b>\" Waiting for Connection, \"<b><code>S</code></b>\" Starting up, \"<b><code>R</code></b>\" Reading Request,<br>\n\"<b><code>W</code></b>\" Sending Reply, \"<b><code>K</code></b>\" Keepalive (read), \"<b><code>D</code></b>\" DNS Lookup,<br>\n\"<b><code>C</code></b>\" Closing connection, \"<b><code>L</code></b>\" Logging, \"<b><code>G</code></b>\" Gracefully finishing,<br>\n\"<b><code>I</code></b>\" Idle cleanup of worker, \"<b><code>.</code></b>\" Open slot with no current process</p>\n");
    // The per-process table of Apache's event MPM (the parts warren has).
    out.push_str("<table rules=\"all\" cellpadding=\"1%\">\n<tr><th>Slot</th><th>PID</th><th>Stopping</th><th>Accepting</th><th>Threads busy</th><th>Threads idle</th></tr>\n");
    for p in &snap.processes {
        let threads = snap.workers.iter().filter(|w| w.process_slot == p.slot);
        let (busy_threads, idle_threads) = threads.fold((0, 0), |(b, i), w| (b + usize::from(busy(w.state)), i + usize::from(w.state == '_')));
        let yes_no = |b: bool| if b { "yes" } else { "no" };
        let _ = writeln!(out, "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{busy_threads}</td><td>{idle_threads}</td></tr>", p.slot, p.pid, yes_no(p.stopping), yes_no(p.accepting));
    }
    out.push_str("</table>\n");
    if let Some(m) = memory {
        out.push_str(&memory_lines(m, false));
    }
    if extended {
        out.push_str("<table border=\"0\"><tr><th>Srv</th><th>PID</th><th>Acc</th><th>M</th><th>SS</th><th>Req</th><th>Bytes</th><th>Client</th><th>VHost</th><th>Request</th></tr>\n");
        let now = now_ms();
        for w in snap.workers.iter().filter(|w| w.state != '.') {
            let ss = if w.last_used_ms == 0 { 0 } else { now.saturating_sub(w.last_used_ms) / 1000 };
            let _ = writeln!(
                out,
                "<tr><td>{}-{}</td><td>{}</td><td>{}</td><td><b>{}</b></td><td>{ss}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                w.process_slot,
                w.thread,
                w.pid,
                w.accesses,
                w.state,
                w.last_duration_us / 1000,
                w.bytes,
                html_escape(&w.client),
                html_escape(&w.vhost),
                html_escape(&w.request)
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("</body></html>\n");
    r.body = Body::Bytes(out.into_bytes());
    r.header("Content-Type", "text/html; charset=ISO-8859-1")
}
