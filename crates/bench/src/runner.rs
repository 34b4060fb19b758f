//! Runs a [`Suite`]: for each server, start it, run every scenario against
//! it (watching its memory and its PHP workers' apart), stop it. What each
//! run measured is kept as [`Figures`] for the report, and as the same JSON
//! that `warren bench --json` prints.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::memory::{self, Memory, Source};
use crate::probe;
use crate::servers::{self, Stack};
use crate::stats::{Second, Summary};
use crate::suite::{Load, Php, Scenario, ServerSpec, Suite, Urls};
use crate::{build_plan, client, Options, Plan};

/// One run of a scenario against one server, in the report's terms.
#[derive(Clone, Debug, Default)]
pub struct Figures {
    pub transactions: u64,
    /// Requests that got no response (connect, timeout, read, write, malformed).
    pub failed: u64,
    /// Responses with a status of 400 or more.
    pub non_2xx: u64,
    pub availability: f64,
    pub rate: f64,
    /// Seconds the run took.
    pub elapsed: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub series: Vec<Second>,
    /// Peak PSS in MB of the server's processes (PHP workers not counted)...
    pub server_mb: Option<f64>,
    /// ...and of the PHP workers (php-fpm's, or the pool's php-cgi).
    pub php_mb: Option<f64>,
    /// Idle scenarios: connections held open, and the median time of the
    /// fresh requests made while they were (None if all failed).
    pub held: Option<usize>,
    pub fresh_ms: Option<f64>,
    pub json: serde_json::Value,
}

/// A scenario against a server: its figures (the median run by rate), or
/// why there are none.
#[derive(Debug)]
pub struct Outcome {
    pub server: String,
    pub scenario: String,
    pub result: Result<Figures, String>,
    /// Every run's transaction rate, when it was repeated.
    pub rates: Vec<f64>,
}

pub struct Results {
    pub suite: Suite,
    pub outcomes: Vec<Outcome>,
    /// Name and version line of each piece of software.
    pub versions: Vec<(String, String)>,
}

impl Results {
    pub fn get(&self, server: &str, scenario: &str) -> Option<&Figures> {
        self.outcomes.iter().find(|o| o.server == server && o.scenario == scenario).and_then(|o| o.result.as_ref().ok())
    }
}

/// Raises the descriptor limit for the client (and the servers it starts):
/// idle-1000 and php-1000 need more than the usual 1024.
fn raise_fd_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}

fn version(cmd: &str, args: &[&str]) -> Option<String> {
    let out = servers::detach(std::process::Command::new(cmd).args(args)).output().ok()?;
    let text = if out.stdout.is_empty() { out.stderr } else { out.stdout };
    String::from_utf8_lossy(&text).lines().next().map(|l| l.trim().to_string())
}

/// Runs the whole suite; `log` hears of each step as it happens.
pub fn run(suite: &Suite, warren: PathBuf, log: &dyn Fn(&str)) -> Result<Results, String> {
    raise_fd_limit();
    let runnable: Vec<(&ServerSpec, Option<String>)> = suite.servers.iter().map(|s| (s, servers::missing(s))).collect();
    let fpm = runnable.iter().any(|(s, why)| why.is_none() && s.php == Php::Fpm);
    let stack = Stack::new(suite.port, warren.clone(), fpm)?;
    let mut versions = vec![("warren".to_string(), version(&warren.to_string_lossy(), &["--version"]).unwrap_or_default())];
    for (name, cmd, args) in [("nginx", "/usr/sbin/nginx", &["-v"][..]), ("Apache", "/usr/sbin/apache2", &["-v"][..]), ("php-cgi", "php-cgi", &["-v"][..])] {
        if let Some(v) = version(cmd, args) {
            versions.push((name.to_string(), v));
        }
    }
    let mut outcomes = Vec::new();
    for (spec, why_not) in runnable {
        let fail_all = |outcomes: &mut Vec<Outcome>, why: &str| {
            log(&format!("{}: {why}", spec.name));
            for sc in &suite.scenarios {
                outcomes.push(Outcome { server: spec.name.clone(), scenario: sc.name.clone(), result: Err(why.to_string()), rates: Vec::new() });
            }
        };
        if let Some(why) = why_not {
            fail_all(&mut outcomes, &why);
            continue;
        }
        let server = match stack.start(spec) {
            Ok(s) => s,
            Err(why) => {
                fail_all(&mut outcomes, &why);
                continue;
            }
        };
        log(&format!("{}: started (pid {})", spec.name, server.pid()));
        if !suite.warmup.is_zero() {
            let warm = Scenario {
                name: "warm-up".into(),
                load: Load::Requests { urls: Urls::Paths(vec!["/index.html".into()]), concurrency: 50, requests: None, duration: Some(suite.warmup), keep_alive: true, ramp: None, rate: None },
                repeat: 1,
                timeout: Duration::from_secs(10),
                headers: Vec::new(),
            };
            let _ = measure(&stack, suite, spec, server.pid(), &warm);
        }
        for sc in &suite.scenarios {
            let mut runs = Vec::new();
            let mut error = None;
            for _ in 0..sc.repeat {
                match measure(&stack, suite, spec, server.pid(), sc) {
                    Ok(f) => runs.push(f),
                    Err(e) => error = Some(e),
                }
                // Let the last connections close before the next run.
                std::thread::sleep(Duration::from_millis(500));
            }
            let rates: Vec<f64> = runs.iter().map(|f| f.rate).collect();
            runs.sort_by(|a, b| a.rate.total_cmp(&b.rate));
            let result = match (runs.len(), error) {
                (0, e) => Err(e.unwrap_or_else(|| "no run".into())),
                (n, _) => Ok(runs.swap_remove(n / 2)),
            };
            match &result {
                Ok(f) if f.held.is_some() => log(&format!("{}: {}: {} held, fresh request {:.2} ms", spec.name, sc.name, f.held.unwrap_or(0), f.fresh_ms.unwrap_or(f64::NAN))),
                Ok(f) => log(&format!("{}: {}: {:.0} req/s, p99 {:.2} ms, {} failed", spec.name, sc.name, f.rate, f.p99_ms, f.failed + f.non_2xx)),
                Err(e) => log(&format!("{}: {}: {e}", spec.name, sc.name)),
            }
            outcomes.push(Outcome { server: spec.name.clone(), scenario: sc.name.clone(), result, rates });
        }
        drop(server);
        log(&format!("{}: stopped", spec.name));
    }
    Ok(Results { suite: suite.clone(), outcomes, versions })
}

/// One run of `sc` against the running server `pid`.
fn measure(stack: &Stack, suite: &Suite, spec: &ServerSpec, pid: u32, sc: &Scenario) -> Result<Figures, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let php_workers = vec!["php-cgi".to_string()];
    let server_watch = memory::watch(Source::Part { root: pid, names: php_workers.clone(), only: false }, stop.clone());
    let php_source = match (spec.php, stack.fpm_pid()) {
        (Php::Pool, _) => Some(Source::Part { root: pid, names: php_workers, only: true }),
        (Php::Fpm, Some(fpm)) => Some(Source::Pid(fpm)),
        (Php::Fpm, None) => None,
    };
    let php_watch = php_source.map(|s| memory::watch(s, stop.clone()));
    let measured = load(stack, suite, sc);
    stop.store(true, Ordering::Relaxed);
    let server_mem = server_watch.join().ok();
    let php_mem = php_watch.and_then(|w| w.join().ok());
    let mb = |m: &Option<Memory>| m.as_ref().filter(|m| m.samples > 0).map(|m| m.peak as f64 / (1024.0 * 1024.0));
    let mut f = measured?;
    f.server_mb = mb(&server_mem);
    f.php_mb = mb(&php_mem);
    f.json["server"] = spec.name.clone().into();
    f.json["scenario"] = sc.name.clone().into();
    f.json["php_memory"] = f.php_mb.map_or(serde_json::Value::Null, |m| serde_json::json!({ "peak_mb": m }));
    if let Some(m) = f.server_mb {
        f.json["server_memory"] = serde_json::json!({ "peak_mb": m });
    }
    Ok(f)
}

fn load(stack: &Stack, suite: &Suite, sc: &Scenario) -> Result<Figures, String> {
    let addr = stack.addr();
    match &sc.load {
        Load::Idle { connections, path, samples } => {
            let idle = probe::idle(addr, path, *connections, *samples, sc.timeout);
            let mut times: Vec<f64> = idle.fresh.iter().flatten().map(|d| d.as_secs_f64() * 1000.0).collect();
            times.sort_by(f64::total_cmp);
            let failed = (idle.failed + idle.fresh.iter().filter(|t| t.is_none()).count()) as u64;
            let fresh_ms = (!times.is_empty()).then(|| times[times.len() / 2]);
            let all = (*connections + *samples) as f64;
            Ok(Figures {
                transactions: (idle.held + times.len()) as u64,
                failed,
                availability: 100.0 * (all - failed as f64) / all,
                held: Some(idle.held),
                fresh_ms,
                json: serde_json::json!({ "idle_connections": idle.held, "failed_connections": idle.failed, "fresh_requests_ms": idle.fresh.iter().map(|t| t.map(|d| d.as_secs_f64() * 1000.0)).collect::<Vec<_>>(), "fresh_request_ms": fresh_ms }),
                ..Figures::default()
            })
        }
        Load::Requests { urls, concurrency, requests, duration, keep_alive, ramp, rate } => {
            let paths = match urls {
                Urls::Paths(p) => p.clone(),
                Urls::Page(page) => page_and_images(addr, page)?,
            };
            let opts = Options { urls: paths.iter().map(|p| format!("http://127.0.0.1:{}{p}", stack.port)).collect(), keep_alive: *keep_alive, headers: sc.headers.clone(), ..Options::default() };
            let plan = Plan {
                targets: build_plan(&opts)?,
                concurrency: *concurrency,
                requests: *requests,
                duration: *duration,
                keep_alive: *keep_alive,
                timeout: sc.timeout,
                threads: suite.threads,
                rate: *rate,
                ramp: *ramp,
                progress: Arc::default(),
                tls: None,
            };
            let (stats, elapsed) = client::run(&plan);
            let sum = Summary { stats: &stats, elapsed, memory: None };
            Ok(Figures {
                transactions: sum.transactions(),
                failed: stats.failed(),
                non_2xx: stats.statuses.iter().filter(|(s, _)| **s >= 400).map(|(_, n)| n).sum(),
                availability: sum.availability(),
                rate: sum.transaction_rate(),
                elapsed: elapsed.as_secs_f64(),
                p50_ms: stats.percentile_ms(50.0),
                p90_ms: stats.percentile_ms(90.0),
                p99_ms: stats.percentile_ms(99.0),
                series: stats.series.clone(),
                json: sum.json(),
                ..Figures::default()
            })
        }
    }
}

/// The page and each image it links, as paths on the server.
fn page_and_images(addr: std::net::SocketAddr, page: &str) -> Result<Vec<String>, String> {
    let (status, body) = probe::fetch(addr, page, Duration::from_secs(10)).map_err(|e| format!("{page}: {e}"))?;
    if status != 200 {
        return Err(format!("{page}: status {status}"));
    }
    let dir = &page[..page.rfind('/').map_or(0, |i| i + 1)];
    let mut paths = vec![page.to_string()];
    paths.extend(probe::image_links(&String::from_utf8_lossy(&body)).into_iter().map(|src| if src.starts_with('/') { src } else { format!("{dir}{src}") }));
    Ok(paths)
}
