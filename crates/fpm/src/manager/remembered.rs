//! The auto pools' learned peaks kept across restarts: so that a pool that
//! starts again does not count its children as the prior's 32 MB (two
//! children in a 128 MB budget) until it has learned them anew.
//!
//! The parent writes, beside the PidFile (its name with `.peaks`), each
//! auto pool's largest child peak once the pool has learned it, and the
//! rest's peak under that load, with the budget's limit and when each was
//! measured. Only what the running pool measured itself is written, never
//! what it was started from, so a site whose children became smaller is
//! re-learned within a run. A pool starting with an entry of its shape
//! (command, user and PHP settings: what makes a child's size) not older
//! than [`MAX_AGE`] counts its children at the larger of the remembered
//! peak and what it measures, for one sizing window
//! (`warren_memory::peak::WINDOW`), by which time it has learned its own.
//!
//! The file is the parent's (root's when warren starts as root), mode
//! 0600, replaced whole by a rename; one that is not a regular file of
//! warren's user with no access for others and one name, malformed (a
//! child's peak of 0, or past 1 TB), or too old is ignored and said so in
//! the log. A pool with no child measured in its window (ondemand, idle)
//! keeps the figure it had: it is never written as 0.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use std::time::{Duration, Instant};

use warren_config::PoolConfig;
use warren_memory::mb;
use warren_memory::peak::WINDOW;

use super::{now_secs, Manager};

/// A remembered figure older than this is not used: the site may have changed.
pub(super) const MAX_AGE: u64 = 24 * 3600;
/// The file is never longer than this (a few lines a pool).
const MAX_LEN: u64 = 64 << 10;
/// No peak in the file is larger (1 TB): one that is was not measured.
const MAX_PEAK: u64 = 1 << 40;
const HEADER: &str = "# warren: the learned peaks of pools with pm.max_children auto (written by warren; do not edit)";

/// A pool's learned child peak: the shape of the pool it was measured in,
/// the peak in bytes, and when (seconds since the epoch); and the largest
/// part the pool cost whatever its size (a php-fpm master and its shared
/// opcache), which is measured only once the master runs: without it a
/// restarted pool's first count was made as if it cost nothing (6-9
/// children at 128 MB where 3-6 fit a second later). 0 when not known (a
/// file written before it was kept).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PoolPeak {
    pub shape: u64,
    pub peak: u64,
    pub at: u64,
    pub fixed: u64,
}

/// The rest's peak under load: the limit it was measured under, the peak, when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RestPeak {
    pub limit: u64,
    pub peak: u64,
    pub at: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Peaks {
    pub pools: HashMap<String, PoolPeak>,
    pub rest: Option<RestPeak>,
}

/// Where a warren with `pid_file` keeps its pools' peaks.
pub(super) fn peaks_path(pid_file: &Path) -> PathBuf {
    let mut p = pid_file.as_os_str().to_owned();
    p.push(".peaks");
    p.into()
}

/// What makes a pool's children the size they are: a peak learned in a
/// pool of another shape is not this pool's. FNV-1a, stable across builds.
pub(super) fn shape_of(p: &PoolConfig) -> u64 {
    let text = format!("{:?}|{:?}|{:?}|{:?}|{:?}|{:?}", p.command, p.user, p.group, p.php_ini, p.php_admin_ini, p.php_fpm_settings);
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

impl Peaks {
    /// The file's text: one line a figure.
    pub(super) fn render(&self) -> String {
        let mut out = format!("{HEADER}\n");
        if let Some(r) = self.rest {
            out.push_str(&format!("rest {} {} {}\n", r.limit, r.peak, r.at));
        }
        let mut names: Vec<&String> = self.pools.keys().collect();
        names.sort();
        for name in names {
            let p = self.pools[name];
            out.push_str(&format!("pool {name} {:016x} {} {} {}\n", p.shape, p.peak, p.at, p.fixed));
        }
        out
    }

    /// The figures of `text`, those measured more than [`MAX_AGE`] before
    /// `now` left out (and named in the second part); an error names the
    /// first line that is not one of [`Peaks::render`]'s.
    pub(super) fn parse(text: &str, now: u64) -> Result<(Peaks, Vec<String>), String> {
        let mut peaks = Peaks::default();
        let mut stale = Vec::new();
        let fresh = |at: u64| at <= now.saturating_add(60) && now.saturating_sub(at) <= MAX_AGE;
        for (n, line) in text.lines().enumerate() {
            let bad = || format!("line {}: {:?}", n + 1, line.chars().take(80).collect::<String>());
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let words: Vec<&str> = line.split(' ').collect();
            let num = |w: &str| w.parse::<u64>().map_err(|_| bad());
            // A size warren measured: a child's is never nothing, and none
            // is near what would overflow the sums it goes into.
            let size = |w: &str, least: u64| num(w).and_then(|n| if (least..=MAX_PEAK).contains(&n) { Ok(n) } else { Err(bad()) });
            match words.as_slice() {
                ["rest", limit, peak, at] => {
                    let r = RestPeak { limit: num(limit)?, peak: size(peak, 0)?, at: num(at)? };
                    if fresh(r.at) {
                        peaks.rest = Some(r);
                    } else {
                        stale.push("the rest".to_string());
                    }
                }
                ["pool", name, shape, peak, at, fixed @ ..] if !name.is_empty() && fixed.len() <= 1 => {
                    let fixed = fixed.first().map_or(Ok(0), |f| size(f, 0))?;
                    let p = PoolPeak { shape: u64::from_str_radix(shape, 16).map_err(|_| bad())?, peak: size(peak, 1)?, at: num(at)?, fixed };
                    if fresh(p.at) {
                        peaks.pools.insert((*name).to_string(), p);
                    } else {
                        stale.push(format!("pool {name}"));
                    }
                }
                _ => return Err(bad()),
            }
        }
        Ok((peaks, stale))
    }

    /// Reads `path`: None when there is none; an error when it is not
    /// warren's own private file or cannot be read.
    pub(super) fn read(path: &Path) -> Result<Option<String>, String> {
        let file = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let meta = file.metadata().map_err(|e| e.to_string())?;
        // A second name is a hard link someone made to a file of root's
        // (where fs.protected_hardlinks is off), whose first line would be
        // quoted in the error log as not warren's format.
        if !meta.is_file() || meta.uid() != nix::unistd::geteuid().as_raw() || meta.mode() & 0o077 != 0 || meta.nlink() != 1 {
            return Err(format!("not a file of warren's user (uid {}) with mode 0600 and one name", nix::unistd::geteuid()));
        }
        let mut text = String::new();
        file.take(MAX_LEN).read_to_string(&mut text).map_err(|e| e.to_string())?;
        Ok(Some(text))
    }

    /// Replaces `path` with these figures: a new file of warren's user,
    /// mode 0600, renamed over it (a reader never sees half of one).
    pub(super) fn write(&self, path: &Path) -> std::io::Result<()> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".new");
        let tmp = PathBuf::from(tmp);
        // Never through a name someone else made (a link, a file of theirs).
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(&tmp)?;
        f.write_all(self.render().as_bytes())?;
        drop(f);
        std::fs::rename(&tmp, path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }
}

/// How often, at most, the file is written while its figures move (it is
/// also written at stop), and how often while they hold (so that a server
/// running for days keeps them fresh).
const SAVE_EVERY: Duration = Duration::from_secs(10);
const REFRESH_EVERY: u64 = 3600;

/// A remembered peak in use: the peak, when it was measured (seconds since
/// the epoch), and until when it is used; for a pool, its fixed part too
/// ([`PoolPeak::fixed`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct InUse {
    pub peak: u64,
    pub at: u64,
    pub until: Instant,
    pub fixed: u64,
}

impl InUse {
    fn from(peak: u64, at: u64) -> InUse {
        InUse { peak, at, until: Instant::now() + WINDOW, fixed: 0 }
    }

    /// The peak, while it is used.
    pub(super) fn now(this: Option<InUse>, now: Instant) -> Option<u64> {
        this.filter(|r| now < r.until).map(|r| r.peak)
    }

    /// How long ago it was measured, for the log.
    pub(super) fn age(&self) -> String {
        let s = now_secs().saturating_sub(self.at);
        if s < 120 { format!("{s} s") } else if s < 7200 { format!("{} min", s / 60) } else { format!("{} h", s / 3600) }
    }
}

impl Peaks {
    /// The figures without when they were measured: what a write would change.
    fn figures(&self) -> Peaks {
        let mut p = self.clone();
        p.pools.values_mut().for_each(|p| p.at = 0);
        if let Some(r) = p.rest.as_mut() {
            r.at = 0;
        }
        p
    }
}

impl Manager {
    /// Reads the peaks file, saying in the log what of it is not used.
    pub(super) fn load_peaks(&mut self) {
        let Some(path) = self.peaks_file.clone() else { return };
        let text = match Peaks::read(&path) {
            Ok(Some(t)) => t,
            Ok(None) => return,
            Err(e) => {
                self.log.warn(&format!("{}: the pools' remembered peaks not used: {e}", path.display()));
                return;
            }
        };
        match Peaks::parse(&text, now_secs()) {
            Ok((peaks, stale)) => {
                if !stale.is_empty() {
                    self.log.notice(&format!("{}: the remembered peaks of {} not used: measured more than {} h ago", path.display(), stale.join(", "), MAX_AGE / 3600));
                }
                self.peaks = peaks;
            }
            Err(e) => self.log.warn(&format!("{}: the pools' remembered peaks not used: not warren's format at {e}", path.display())),
        }
    }

    /// The remembered peak of a pool like `p`, if one is known (said in the
    /// log when there is one for a pool of another shape).
    pub(super) fn remembered_peak(&self, p: &PoolConfig) -> Option<InUse> {
        let r = self.peaks.pools.get(&p.name)?;
        if r.shape != shape_of(p) {
            let path = self.peaks_file.as_ref().map_or(String::new(), |f| f.display().to_string());
            self.log.notice(&format!("[pool {}] the child peak remembered in {path} ({}) was learned by a pool of another command, user or PHP settings: not used", p.name, mb(r.peak)));
            return None;
        }
        Some(InUse { fixed: r.fixed, ..InUse::from(r.peak, r.at) })
    }

    /// The rest's remembered peak, if measured under `limit`.
    pub(super) fn remembered_rest(&self, limit: u64) -> Option<InUse> {
        self.peaks.rest.filter(|r| r.limit == limit).map(|r| InUse::from(r.peak, r.at))
    }

    /// Notes the figures the auto pools learned themselves (each warm
    /// pool's peak; the rest's under `limit`, once a pool is warm) and
    /// writes them when they moved (at most every [`SAVE_EVERY`]), or when
    /// `now_or_never` (at stop).
    pub(super) fn save_peaks(&mut self, limit: u64, rest: u64, now_or_never: bool) {
        let Some(path) = self.peaks_file.clone() else { return };
        let (now, secs) = (Instant::now(), now_secs());
        let mut next = self.peaks.clone();
        for run in &mut self.pools {
            // A warm pool has measured a child; written as 0, its next
            // start would count children at nothing.
            let Some(a) = run.auto.as_mut().filter(|a| a.warm) else { continue };
            let Some(peak) = a.learned(now).filter(|&p| p > 0) else { continue };
            next.pools.insert(run.config.name.clone(), PoolPeak { shape: shape_of(&run.config), peak, at: secs, fixed: a.fixed_seen });
            next.rest = Some(RestPeak { limit, peak: rest, at: secs });
        }
        let oldest = self.peaks.pools.values().map(|p| p.at).chain(self.peaks.rest.map(|r| r.at)).min().unwrap_or(secs);
        let moved = next.figures() != self.peaks.figures() || (next != self.peaks && secs.saturating_sub(oldest) >= REFRESH_EVERY);
        let due = now_or_never || self.peaks_saved.is_none_or(|t| now.duration_since(t) >= SAVE_EVERY);
        if !moved || !due {
            return;
        }
        self.peaks_saved = Some(now);
        match next.write(&path) {
            Ok(()) => self.peaks = next,
            // Said once: the next try is SAVE_EVERY later, and says nothing more.
            Err(e) if !self.peaks_failed => {
                self.peaks_failed = true;
                self.log.warn(&format!("{}: cannot keep the pools' learned peaks for the next start: {e}", path.display()));
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warren_config::parse::Origin;

    #[test]
    fn peaks_read_back_what_was_written() {
        let mut p = Peaks { rest: Some(RestPeak { limit: 128 << 20, peak: 40 << 20, at: 1000 }), ..Peaks::default() };
        p.pools.insert("www".into(), PoolPeak { shape: 0xabc, peak: 9 << 20, at: 1000, fixed: 21 << 20 });
        let (back, stale) = Peaks::parse(&p.render(), 1000 + 3600).unwrap();
        assert_eq!((back, stale), (p, vec![]));
        // A file written before the fixed part was kept: not known, 0.
        let (old, _) = Peaks::parse("pool www 0000000000000abc 9437184 1000\n", 1000).unwrap();
        assert_eq!(old.pools["www"], PoolPeak { shape: 0xabc, peak: 9 << 20, at: 1000, fixed: 0 });
    }

    #[test]
    fn old_malformed_and_foreign_figures_are_not_used() {
        let text = "rest 134217728 41943040 1000\npool www 0000000000000abc 9437184 1000\npool new 00000000000000ff 8388608 87000\n";
        let (p, stale) = Peaks::parse(text, 1000 + MAX_AGE + 1).unwrap();
        assert_eq!(stale, vec!["the rest".to_string(), "pool www".to_string()]);
        assert_eq!(p.pools.keys().collect::<Vec<_>>(), vec!["new"]);
        assert!(p.rest.is_none());
        assert!(Peaks::parse(text, 10).unwrap().0.pools.is_empty(), "figures from the future (a clock set back) are not used");
        for bad in ["pool www abc", "pool www zz 1 2", "rest 1 2", "rest 1 2 x", "peak 1", "pool  0 1 2", "pool www ab 0 87000", "pool www ab 18446744073709551615 87000", "rest 1 18446744073709551615 87000", "pool www ab 1 87000 x", "pool www ab 1 87000 18446744073709551615", "pool www ab 1 87000 1 2"] {
            assert!(Peaks::parse(bad, 10).is_err(), "{bad}");
        }
        let origin = || Origin { file: std::sync::Arc::new("x".into()), line: 1 };
        let a = PoolConfig::new("www", vec!["php-fpm8.2".into()], origin());
        let mut b = a.clone();
        assert_eq!(shape_of(&a), shape_of(&b));
        b.php_admin_ini.push(("memory_limit".into(), "512M".into()));
        assert_ne!(shape_of(&a), shape_of(&b), "other PHP settings, another shape");
        assert_eq!(peaks_path(Path::new("/run/warren.pid")), Path::new("/run/warren.pid.peaks"));
    }

    #[test]
    fn the_file_is_private_and_a_foreign_one_refused() {
        let dir = std::env::temp_dir().join(format!("warren-peaks-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("warren.pid.peaks");
        let mut p = Peaks::default();
        p.pools.insert("www".into(), PoolPeak { shape: 1, peak: 2, at: 3, fixed: 4 });
        p.write(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(Peaks::read(&path).unwrap().as_deref(), Some(p.render().as_str()));
        // Readable by others: someone may have written it.
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        assert!(Peaks::read(&path).is_err());
        // A link is not followed.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &path).unwrap();
        assert!(Peaks::read(&path).is_err());
        std::fs::remove_file(&path).unwrap();
        // Nor a second name of a private file (a hard link to it).
        let other = dir.join("other");
        p.write(&other).unwrap();
        std::fs::hard_link(&other, &path).unwrap();
        assert!(Peaks::read(&path).is_err(), "a hard link is refused");
        std::fs::remove_file(&other).unwrap();
        assert!(Peaks::read(&path).is_ok(), "one name again");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(Peaks::read(&path).unwrap(), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
