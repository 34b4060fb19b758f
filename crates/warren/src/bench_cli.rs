//! `warren bench`: the load client's command line, its progress bar, and
//! `--suite` runs of servers set up from a suite file.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use crate::BenchArgs;

/// A progress bar on the terminal's standard error, redrawn four times a second.
fn progress_bar(
    done: std::sync::Arc<std::sync::atomic::AtomicU64>,
    requests: Option<u64>,
    duration: Option<std::time::Duration>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<()> {
    use std::io::Write as _;
    use std::sync::atomic::Ordering;
    std::thread::spawn(move || {
        let begin = std::time::Instant::now();
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(250));
            let n = done.load(Ordering::Relaxed);
            let t = begin.elapsed();
            let part = match (requests, duration) {
                (Some(r), _) => n as f64 / r.max(1) as f64,
                (None, Some(d)) => t.as_secs_f64() / d.as_secs_f64().max(1e-9),
                (None, None) => 0.0,
            }
            .min(1.0);
            let filled = (part * 30.0) as usize;
            eprint!("\r[{}{}] {n} requests, {:.1} s ", "#".repeat(filled), " ".repeat(30 - filled), t.as_secs_f64());
            let _ = std::io::stderr().flush();
        }
        eprint!("\r{}\r", " ".repeat(60));
    })
}

pub(crate) fn parse_rate(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(r) if r > 0.0 && r.is_finite() => Ok(r),
        _ => Err(format!("'{v}' is not a positive number of requests per second")),
    }
}

/// `warren bench`.
pub(crate) fn bench(args: &BenchArgs) -> ExitCode {
    let BenchArgs { urls, suite, out, requests, concurrency, time, keep_alive, header, method, body_file, rate, ramp, url_file, server_pid, server_cgroup, timeout, threads, json, insecure, cacert, no_resume, tls_auth } = args;
    if let Some(file) = suite {
        return bench_suite(file, out);
    }
    let body = match body_file {
        Some(p) => match std::fs::read(p) {
            Ok(b) => Some(b),
            Err(e) => {
                eprintln!("warren bench: {}: {e}", p.display());
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let url_lines = match url_file {
        Some(p) => match std::fs::read_to_string(p).map_err(|e| e.to_string()).and_then(|t| warren_bench::parse_url_file(&t)) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("warren bench: {}: {e}", p.display());
                return ExitCode::from(2);
            }
        },
        None => Vec::new(),
    };
    let opts = warren_bench::Options { urls: urls.clone(), url_lines, method: method.clone(), headers: header.clone(), body, keep_alive: *keep_alive };
    let targets = match warren_bench::build_plan(&opts) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("warren bench: {e}");
            return ExitCode::from(2);
        }
    };
    let tls = if targets.iter().any(|t| t.tls.is_some()) {
        let o = warren_bench::tls::TlsOptions { insecure: *insecure, cacert: cacert.clone(), no_resume: *no_resume, auth: *tls_auth };
        match warren_bench::tls::client_config(&o) {
            Ok(c) => Some(c),
            Err(e) => {
                eprintln!("warren bench: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        None
    };
    if *concurrency == 0 {
        eprintln!("warren bench: -c must be at least 1");
        return ExitCode::from(2);
    }
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let duration = time.or(ramp.map(|r| r.2));
    let plan = warren_bench::Plan {
        targets,
        concurrency: ramp.map_or(*concurrency, |r| r.1),
        requests: requests.or(if duration.is_some() { None } else { Some(1000) }),
        duration,
        rate: *rate,
        ramp: *ramp,
        progress: std::sync::Arc::default(),
        keep_alive: *keep_alive,
        timeout: *timeout,
        threads: threads.unwrap_or(cpus),
        tls,
    };
    let source = match (server_pid, server_cgroup) {
        (Some(pid), _) => Some(warren_bench::memory::Source::Pid(*pid)),
        (None, Some(dir)) => Some(warren_bench::memory::Source::Cgroup(dir.clone())),
        (None, None) => None,
    };
    if let Some(src) = &source {
        if warren_bench::memory::sample(src).is_none() {
            eprintln!("warren bench: cannot read the memory of {src:?}");
            return ExitCode::from(2);
        }
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = source.map(|src| warren_bench::memory::watch(src, stop.clone()));
    // SAFETY: isatty only looks at the descriptor.
    let bar = (!*json && unsafe { libc::isatty(2) } == 1).then(|| progress_bar(plan.progress.clone(), plan.requests, plan.duration, stop.clone()));
    let (stats, elapsed) = warren_bench::client::run(&plan);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    if let Some(b) = bar {
        let _ = b.join();
    }
    let memory = watcher.and_then(|w| w.join().ok());
    let summary = warren_bench::Summary { stats: &stats, elapsed, memory };
    if *json {
        println!("{}", summary.json());
    } else {
        print!("{}", summary.text());
    }
    ExitCode::SUCCESS
}

/// `warren bench --suite FILE`: progress on stderr, the report in `out`.
fn bench_suite(file: &Path, out: &Path) -> ExitCode {
    let suite = match std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display())).and_then(|t| warren_bench::suite::parse(&t, &file.display().to_string()).map_err(|e| e.to_string())) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("warren bench: {e}");
            return ExitCode::from(2);
        }
    };
    let warren = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("warren bench: cannot find the warren binary: {e}");
            return ExitCode::from(2);
        }
    };
    let began = Instant::now();
    let log = |line: &str| eprintln!("[{:>5.0} s] {line}", began.elapsed().as_secs_f64());
    let results = match warren_bench::runner::run(&suite, warren, &log) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("warren bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    let title = format!("warren bench --suite {}", file.file_name().map_or(file.display().to_string(), |n| n.to_string_lossy().into_owned()));
    if let Err(e) = warren_bench::report::write(&results, out, &title) {
        eprintln!("warren bench: {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    eprintln!("report: {}", out.join("report.html").display());
    ExitCode::SUCCESS
}
