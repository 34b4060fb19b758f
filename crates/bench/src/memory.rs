//! The server's memory during a run, sampled once a second: the PSS of a
//! process and all its descendants (`--server-pid`), or a cgroup's
//! `memory.current` (`--server-cgroup`, cgroup v2), or part of a process
//! tree by command name (the suite counts a server's PHP workers apart).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone, Debug)]
pub enum Source {
    Pid(u32),
    Cgroup(PathBuf),
    /// The processes of `root`'s tree whose command name (`/proc/PID/comm`)
    /// is among `names` (`only`), or is not (`!only`).
    Part { root: u32, names: Vec<String>, only: bool },
}

/// Peak and mean of the samples, in bytes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Memory {
    pub samples: usize,
    pub peak: u64,
    pub mean: u64,
}

/// A process and its descendants, from /proc.
fn tree(root: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
            // The parent is the second field after the parenthesised name.
            let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)).and_then(|p| p.parse().ok());
            if let Some(ppid) = ppid {
                parents.push((pid, ppid));
            }
        }
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    out
}

/// One sample in bytes; None if the process or cgroup is gone.
pub fn sample(src: &Source) -> Option<u64> {
    match src {
        Source::Pid(pid) => tree_pss(*pid, |_| true),
        Source::Part { root, names, only } => tree_pss(*root, |pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            names.iter().any(|n| n == comm.trim()) == *only
        }),
        Source::Cgroup(dir) => std::fs::read_to_string(dir.join("memory.current")).ok()?.trim().parse().ok(),
    }
}

/// The PSS in bytes of the processes of `root`'s tree that `counts`.
fn tree_pss(root: u32, counts: impl Fn(u32) -> bool) -> Option<u64> {
    if !std::path::Path::new(&format!("/proc/{root}")).exists() {
        return None;
    }
    let kb: u64 = tree(root)
        .into_iter()
        .filter(|p| counts(*p))
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/smaps_rollup")).ok())
        .filter_map(|t| t.lines().find(|l| l.starts_with("Pss:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()))
        .sum();
    Some(kb * 1024)
}

/// Samples every second until `stop`, and once more then: a run shorter
/// than the thread takes to be scheduled still has its figure (and the
/// end of a run, often its peak, is always in).
pub fn watch(src: Source, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Memory> {
    std::thread::spawn(move || {
        let (mut n, mut peak, mut total) = (0usize, 0u64, 0u64);
        loop {
            if let Some(b) = sample(&src) {
                n += 1;
                peak = peak.max(b);
                total += b;
            }
            if stop.load(Ordering::Relaxed) {
                break;
            }
            // Sleep in small steps so that the end of the run is not delayed.
            for _ in 0..10 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Memory { samples: n, peak, mean: if n > 0 { total / n as u64 } else { 0 } }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_tree_has_memory() {
        let me = std::process::id();
        let b = sample(&Source::Pid(me)).unwrap();
        assert!(b > 100 * 1024, "{b}");
        assert!(tree(me).contains(&me));
        assert_eq!(sample(&Source::Pid(u32::MAX - 1)), None);
        let comm = std::fs::read_to_string(format!("/proc/{me}/comm")).unwrap().trim().to_string();
        assert_eq!(sample(&Source::Part { root: me, names: vec![comm.clone()], only: false }), Some(0));
        assert!(sample(&Source::Part { root: me, names: vec![comm], only: true }).unwrap() > 100 * 1024);
    }

    #[test]
    fn a_run_over_before_the_first_sample_still_has_one() {
        let m = watch(Source::Pid(std::process::id()), Arc::new(AtomicBool::new(true))).join().unwrap();
        assert_eq!(m.samples, 1);
        assert!(m.peak > 100 * 1024);
    }
}
