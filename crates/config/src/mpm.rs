//! The MPM a configuration selects, its process and thread counts with
//! Apache's defaults, and Apache's corrections of impossible counts.

use std::path::PathBuf;

use crate::parse::{ConfigError, Origin};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Mpm {
    Event,
    Worker,
    Prefork,
}

impl Mpm {
    pub const ALL: [Mpm; 3] = [Mpm::Event, Mpm::Worker, Mpm::Prefork];

    pub fn from_module(name: &str) -> Option<Mpm> {
        match name {
            "mpm_event_module" => Some(Mpm::Event),
            "mpm_worker_module" => Some(Mpm::Worker),
            "mpm_prefork_module" => Some(Mpm::Prefork),
            _ => None,
        }
    }

    /// `event`, `worker` or `prefork`, as [`Mpm::name`] gives them.
    pub fn from_name(name: &str) -> Option<Mpm> {
        Mpm::ALL.into_iter().find(|m| m.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Mpm::Event => "event",
            Mpm::Worker => "worker",
            Mpm::Prefork => "prefork",
        }
    }

    pub fn module(self) -> &'static str {
        match self {
            Mpm::Event => "mpm_event_module",
            Mpm::Worker => "mpm_worker_module",
            Mpm::Prefork => "mpm_prefork_module",
        }
    }

    fn threaded(self) -> bool {
        self != Mpm::Prefork
    }
}

/// Process and thread counts, with Apache's names and defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpmTuning {
    pub start_servers: u32,
    pub server_limit: u32,
    pub threads_per_child: u32,
    pub thread_limit: u32,
    pub max_request_workers: u32,
    /// `MaxRequestWorkers auto`: as many children as the memory budget
    /// holds (`max_request_workers` is then ServerLimit's, the ceiling).
    pub max_request_workers_auto: bool,
    pub min_spare_threads: u32,
    pub max_spare_threads: u32,
    pub min_spare_servers: u32,
    pub max_spare_servers: u32,
    /// 0 means children are never retired.
    pub max_connections_per_child: u32,
    /// MaxChildConnections (event): the most connections one child holds
    /// at once; past it the child stops accepting, so that a flood of
    /// connections waits in the kernel's queue instead of in its memory.
    pub max_child_connections: u32,
}

impl MpmTuning {
    pub fn apache_defaults(mpm: Mpm) -> Self {
        match mpm {
            Mpm::Prefork => MpmTuning {
                start_servers: 5,
                server_limit: 256,
                threads_per_child: 1,
                thread_limit: 1,
                max_request_workers: 256,
                max_request_workers_auto: false,
                min_spare_threads: 0,
                max_spare_threads: 0,
                min_spare_servers: 5,
                max_spare_servers: 10,
                max_connections_per_child: 0,
                max_child_connections: 4096,
            },
            Mpm::Event | Mpm::Worker => MpmTuning {
                start_servers: 3,
                server_limit: 16,
                threads_per_child: 25,
                thread_limit: 64,
                max_request_workers: 400,
                max_request_workers_auto: false,
                min_spare_threads: 75,
                max_spare_threads: 250,
                min_spare_servers: 0,
                max_spare_servers: 0,
                max_connections_per_child: 0,
                max_child_connections: 4096,
            },
        }
    }

    /// Apache's corrections of impossible MPM values, each with a warning
    /// naming the directive's line (see event.c / prefork.c check_config).
    /// `set`: the counts the configuration sets, by name, where.
    pub fn correct(&mut self, mpm: Mpm, set: &[(&'static str, Origin)]) -> Vec<ConfigError> {
        let t = self;
        let mut warnings = Vec::new();
        let mut warn = |origin: Origin, message: String| warnings.push(ConfigError { origin, message });
        let origin_of = |name: &str| -> Origin {
            set.iter()
                .rev()
                .find(|(n, _)| *n == name)
                .map(|(_, o)| o.clone())
                .unwrap_or(Origin { file: std::sync::Arc::new(PathBuf::from("(defaults)")), line: 0 })
        };
        let was_set = |name: &str| set.iter().any(|(n, _)| *n == name);
        if mpm.threaded() {
            if t.thread_limit < 1 {
                warn(origin_of("ThreadLimit"), "ThreadLimit of 0 not allowed, increasing to 1".to_string());
                t.thread_limit = 1;
            }
            if t.threads_per_child > t.thread_limit {
                let (tpc, tl) = (t.threads_per_child, t.thread_limit);
                warn(origin_of("ThreadsPerChild"), format!("ThreadsPerChild of {tpc} exceeds ThreadLimit of {tl}, decreasing to match"));
                t.threads_per_child = t.thread_limit;
            } else if t.threads_per_child < 1 {
                warn(origin_of("ThreadsPerChild"), "ThreadsPerChild of 0 not allowed, increasing to 1".to_string());
                t.threads_per_child = 1;
            }
        }
        if t.server_limit < 1 {
            warn(origin_of("ServerLimit"), "ServerLimit of 0 not allowed, increasing to 1".to_string());
            t.server_limit = 1;
        }
        let per_child = t.threads_per_child.max(1);
        if t.max_request_workers_auto || !was_set("MaxRequestWorkers") && mpm.threaded() {
            t.max_request_workers = t.server_limit * per_child;
        }
        if t.max_request_workers < per_child {
            let m = t.max_request_workers;
            warn(origin_of("MaxRequestWorkers"), format!("MaxRequestWorkers of {m} is less than ThreadsPerChild of {per_child}, increasing to {per_child}; it must be at least as large as the number of threads in a single server"));
            t.max_request_workers = per_child;
        }
        if t.max_request_workers > t.server_limit * per_child {
            let (m, cap) = (t.max_request_workers, t.server_limit * per_child);
            warn(origin_of("MaxRequestWorkers"), format!("MaxRequestWorkers of {m} would require {} servers and would exceed ServerLimit of {}, decreasing to {cap}; to increase, raise ServerLimit", m.div_ceil(per_child), t.server_limit));
            t.max_request_workers = cap;
        }
        if mpm.threaded() && !t.max_request_workers.is_multiple_of(per_child) {
            let m = t.max_request_workers;
            let fixed = m - m % per_child;
            warn(origin_of("MaxRequestWorkers"), format!("MaxRequestWorkers of {m} is not an integer multiple of ThreadsPerChild of {per_child}, decreasing to nearest multiple {fixed}"));
            t.max_request_workers = fixed;
        }
        if t.start_servers > t.server_limit {
            let (ss, sl) = (t.start_servers, t.server_limit);
            warn(origin_of("StartServers"), format!("StartServers of {ss} exceeds ServerLimit of {sl}, decreasing to match"));
            t.start_servers = t.server_limit;
        } else if t.start_servers < 1 {
            warn(origin_of("StartServers"), "StartServers of 0 not allowed, increasing to 1".to_string());
            t.start_servers = 1;
        }
        if mpm.threaded() {
            if t.min_spare_threads < 1 {
                t.min_spare_threads = 1;
            }
            if t.max_spare_threads < t.min_spare_threads + per_child {
                t.max_spare_threads = t.min_spare_threads + per_child;
            }
        } else {
            if t.min_spare_servers < 1 {
                warn(origin_of("MinSpareServers"), "MinSpareServers of 0 not allowed, increasing to 1".to_string());
                t.min_spare_servers = 1;
            }
            if t.max_spare_servers < t.min_spare_servers + 1 {
                t.max_spare_servers = t.min_spare_servers + 1;
            }
        }
        warnings
    }
}
