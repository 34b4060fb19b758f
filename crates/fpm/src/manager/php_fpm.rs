//! A pool that is a php-fpm master of its own (`Command php-fpm8.2`): its
//! configuration, written by warren from the `<Pool>`, and how the master
//! is started.
//!
//! php-fpm forks its children after PHP's start-up, so they share one
//! opcache (the compiled scripts), where php-cgi children started one by
//! one each compile and keep their own; and they accept on one socket, so a
//! request waits for a child in the kernel's listen queue, not in warren
//! (but for `pm.max_children auto`, where warren holds requests to the
//! count: see `shape::PhpFpmShape::capped`).
//! Each pool has a master of its own, running as the pool's user: pools of
//! different users never share an opcache. The master is warren's child,
//! in a session of its own, and gets the pool's socket from warren
//! (`FPM_SOCKETS`, as php-fpm hands sockets to itself across a reload)
//! and its configuration through a memfd: it creates no file and binds
//! nothing, so it needs no directory of its own.

use std::fmt::Write as _;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use warren_config::{PmStyle, PoolConfig};

use super::{detach_child, highest_open_fd, now_secs, Manager};

/// A php-fpm master that exits sooner than this after its start waits
/// twice as long as the last time (at most the maximum) to be started again.
pub(super) const MASTER_YOUTH: Duration = Duration::from_secs(10);
pub(super) const MASTER_BACKOFF_MAX: Duration = Duration::from_secs(60);

impl Manager {
    /// Starts a php-fpm pool's master, which starts the pool's children
    /// itself. `fresh_socket` after a master died: a fresh socket at the
    /// same path for the new master, for a child of the old one that left
    /// its session (setsid), and so outlived it, keeps a socket no one
    /// connects to any more.
    pub(super) fn spawn_php_fpm(&mut self, pool: usize, fresh_socket: bool) -> bool {
        let socket = &self.table.pools[pool].sockets[0];
        if fresh_socket {
            match self.make_socket(&self.pools[pool].config, socket) {
                Ok(l) => self.pools[pool].listeners[0] = l,
                Err(e) => {
                    self.log.error(&format!("[pool {}] {e}", self.pools[pool].config.name));
                    return false;
                }
            }
        }
        let run = &self.pools[pool];
        let c = &run.config;
        // Root only when warren is (with -R): a pool without User, or User root.
        let as_root = run.credentials.as_ref().map_or(nix::unistd::geteuid().is_root(), |c| c.uid.is_root());
        let key = listen_key(socket);
        let conf = match config_memfd(&c.name, &config_text(c, self.limit(pool), &key, as_root)) {
            Ok(fd) => fd,
            Err(e) => {
                self.log.error(&format!("[pool {}] cannot write php-fpm's configuration: {e}", c.name));
                return false;
            }
        };
        let (socket_fd, conf_fd) = (run.listeners[0].as_raw_fd(), conf.as_raw_fd());
        let mut cmd = Command::new(&c.command[0]);
        cmd.args(["-F", "-y", &format!("/proc/self/fd/{conf_fd}")]);
        if as_root {
            cmd.arg("-R");
        }
        cmd.args(&c.command[1..]).env_clear().env("PATH", "/usr/local/bin:/usr/bin:/bin");
        // The pool's socket, as php-fpm passes sockets to itself on a reload.
        cmd.env("FPM_SOCKETS", format!("{}={socket_fd}", key.display()));
        // Standard error must be the pool's pipe: it is given to the pool's
        // user below, which must never happen to another file.
        let (stdout, stderr) = match run.output.as_ref().map(|o| (o.write.try_clone(), o.write.try_clone())) {
            Some((Ok(a), Ok(b))) => (Stdio::from(a), Stdio::from(b)),
            _ => {
                self.log.error(&format!("[pool {}] cannot pass its output pipe to php-fpm; not starting it", c.name));
                return false;
            }
        };
        cmd.stdin(Stdio::null()).stdout(stdout).stderr(stderr);
        let creds = run.credentials.clone();
        let highest_fd = highest_open_fd();
        let cgroup = self.cgroup_joins(pool);
        // SAFETY: join_in_child, detach_child and fcntl are async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                // Its children inherit both the cgroup and the OOM score
                // (raised past their master's when they are measured).
                crate::cgroup::join_in_child(cgroup, crate::cgroup::MASTER_OOM_SCORE_ADJ);
                // php-fpm opens its error_log, /proc/self/fd/2, by path:
                // as the pool's user, that needs the pool's pipe to be its.
                if let Some(c) = creds.as_ref() {
                    if libc::fchown(2, c.uid.as_raw(), c.gid.as_raw()) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                detach_child(creds.as_ref(), highest_fd)?;
                // The two descriptors the master is given, and no other.
                for fd in [socket_fd, conf_fd] {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        match cmd.spawn() {
            Ok(child) => {
                let pid = child.id() as i32;
                let s = self.table.slot(pool, 0);
                s.started.store(now_secs(), Ordering::Relaxed);
                s.pid.store(pid, Ordering::Relaxed);
                let run = &mut self.pools[pool];
                run.children.insert(pid, 0);
                run.master_started = Some(std::time::Instant::now());
                true
            }
            Err(e) => {
                self.log.error(&format!("pool {}: cannot start {}: {e}", c.name, c.command[0]));
                false
            }
        }
    }

}

/// The name php-fpm is told its socket has, `listen` and the key in
/// `FPM_SOCKETS`: never created. php-fpm unlinks its listen path as it
/// exits, which, were it the pool's, would remove the socket a master that
/// replaced it (after it died) is taking requests on.
fn listen_key(socket: &Path) -> std::path::PathBuf {
    let mut key = socket.as_os_str().to_owned();
    key.push(".fpm");
    key.into()
}

/// Kills what is left of a php-fpm master's session, the master gone: its
/// children would otherwise go on taking requests from the pool's socket
/// with no one to manage them. The master leads its session and process
/// group (setsid in detach_child), and the kernel does not give that
/// number to another process while members of the group remain.
pub(super) fn end_session_of(master: i32) {
    let _ = kill(Pid::from_raw(-master), Signal::SIGKILL);
}



/// php-fpm's configuration for one pool of `max_children` listening on
/// `socket`; a pool with `pm.max_children auto` runs at its ceiling
/// whatever `max_children` (warren holds it to its count). `as_root`: the
/// master runs as root (warren -R with no User), which php-fpm then wants
/// said in the pool.
pub fn config_text(p: &PoolConfig, max_children: u32, socket: &Path, as_root: bool) -> String {
    let mut c = String::new();
    // Errors and what the children print go to standard error, a pipe
    // warren copies to its error log with the pool's name.
    let _ = writeln!(c, "[global]\nerror_log = /proc/self/fd/2\nlog_level = warning\ndaemonize = no\n");
    let _ = writeln!(c, "[{}]", p.name);
    let _ = writeln!(c, "listen = {}\nlisten.backlog = {}", socket.display(), p.listen_backlog);
    if as_root {
        let _ = writeln!(c, "user = root\ngroup = root");
    }
    let pm = match p.pm {
        PmStyle::Static => "static",
        PmStyle::Dynamic => "dynamic",
        PmStyle::Ondemand => "ondemand",
    };
    if p.max_children_auto {
        // Up to the ceiling, a child started when a request finds none
        // idle and none kept idle: warren lets `count` requests in at
        // once, so the count moves with the budget without a new master
        // and `count` children serve `count` requests (a kept idle child
        // would hold a child's memory and serve nothing). Idle children go
        // after pm.process_idle_timeout, or when warren stops the surplus
        // of a smaller count.
        let _ = writeln!(c, "pm = ondemand\npm.max_children = {}", p.max_children);
    } else {
        let _ = writeln!(c, "pm = {pm}\npm.max_children = {max_children}");
    }
    if p.pm == PmStyle::Dynamic && !p.max_children_auto {
        // Within a count smaller than the pool's own, as php-fpm requires.
        let max_spare = p.max_spare_servers.min(max_children);
        let min_spare = p.min_spare_servers.min(max_spare);
        let _ = writeln!(c, "pm.start_servers = {}\npm.min_spare_servers = {min_spare}\npm.max_spare_servers = {max_spare}", p.start_servers.clamp(min_spare, max_spare));
    }
    let _ = writeln!(c, "pm.max_spawn_rate = {}\npm.process_idle_timeout = {}s\npm.max_requests = {}", p.max_spawn_rate, p.process_idle_timeout.as_secs().max(1), p.max_requests);
    if let Some(t) = p.request_terminate_timeout {
        let _ = writeln!(c, "request_terminate_timeout = {}s", t.as_secs().max(1));
    }
    if let (Some(t), Some(log)) = (p.request_slowlog_timeout, &p.slowlog) {
        let _ = writeln!(c, "request_slowlog_timeout = {}s\nslowlog = {}", t.as_secs().max(1), ini_value(&log.to_string_lossy()));
    }
    if let Some(path) = &p.status_path {
        let _ = writeln!(c, "pm.status_path = {}", ini_value(path));
    }
    let _ = writeln!(c, "catch_workers_output = {}\ndecorate_workers_output = no", if p.catch_output { "yes" } else { "no" });
    let _ = writeln!(c, "clear_env = yes\nenv[PATH] = /usr/local/bin:/usr/bin:/bin");
    for (k, v) in &p.env {
        let _ = writeln!(c, "env[{k}] = {}", ini_value(v));
    }
    for (k, v) in &p.php_ini {
        let _ = writeln!(c, "php_value[{k}] = {}", ini_value(v));
    }
    for (k, v) in &p.php_admin_ini {
        let _ = writeln!(c, "php_admin_value[{k}] = {}", ini_value(v));
    }
    // Last, so that a pool file's own choice (clear_env, say) wins.
    for (k, v) in &p.php_fpm_settings {
        let _ = writeln!(c, "{k} = {}", ini_value(v));
    }
    c
}

/// A value as php-fpm's INI reader should see it: as written in a pool
/// file (so `E_ALL & ~E_DEPRECATED` stays an expression, `On` a boolean,
/// `'a,b'` a raw string), in double quotes only when it holds a `;`
/// (which would start a comment) or a `=` (which php-fpm would refuse
/// unquoted, so the file had it quoted); the config refuses a `"` in the
/// values of a php-fpm pool.
fn ini_value(v: &str) -> String {
    if v.contains([';', '=']) || v.starts_with(char::is_whitespace) || v.ends_with(char::is_whitespace) {
        format!("\"{v}\"")
    } else {
        v.to_string()
    }
}

/// The configuration in a memfd, for the master to read as
/// `/proc/self/fd/N`. Sealed: the master's children inherit it, and a
/// memfd is writable through /proc by its owner's processes, so a script
/// could otherwise rewrite its pool's configuration (its php_admin_value
/// locks, its listen address) and have it read again on a reload (SIGUSR2).
pub fn config_memfd(name: &str, text: &str) -> std::io::Result<OwnedFd> {
    use nix::fcntl::{fcntl, FcntlArg, SealFlag};
    use nix::sys::memfd::{memfd_create, MFdFlags};
    let fd = memfd_create(format!("warren-pool-{name}").as_str(), MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING)?;
    let mut written = 0;
    while written < text.len() {
        written += nix::unistd::write(&fd, &text.as_bytes()[written..])?;
    }
    nix::unistd::lseek(&fd, 0, nix::unistd::Whence::SeekSet)?;
    let seals = SealFlag::F_SEAL_WRITE | SealFlag::F_SEAL_GROW | SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_SEAL;
    fcntl(&fd, FcntlArg::F_ADD_SEALS(seals))?;
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use warren_config::parse::Origin;

    #[test]
    fn config_of_a_pool() {
        let mut p = PoolConfig::new("www", vec!["/usr/sbin/php-fpm8.2".into()], Origin { file: std::sync::Arc::new("x".into()), line: 1 });
        p.request_terminate_timeout = Some(Duration::from_secs(30));
        p.env.push(("APP".into(), "a b".into()));
        p.php_admin_ini.push(("open_basedir".into(), "/srv".into()));
        let c = config_text(&p, p.max_children, Path::new("/run/w/www.sock"), false);
        assert!(c.starts_with("[global]\nerror_log = /proc/self/fd/2\n"), "{c}");
        for line in ["[www]", "listen = /run/w/www.sock", "pm = dynamic", "pm.max_children = 5", "pm.start_servers = 2", "request_terminate_timeout = 30s", "env[APP] = a b", "php_admin_value[open_basedir] = /srv", "catch_workers_output = yes"] {
            assert!(c.lines().any(|l| l == line), "{line} missing in\n{c}");
        }
        assert!(!c.contains("user ="), "{c}");
        assert!(config_text(&p, 5, Path::new("/s"), true).contains("\nuser = root\ngroup = root\n"));
        let small = config_text(&p, 1, Path::new("/s"), false);
        for line in ["pm.max_children = 1", "pm.start_servers = 1", "pm.min_spare_servers = 1", "pm.max_spare_servers = 1"] {
            assert!(small.lines().any(|l| l == line), "{line} missing in\n{small}");
        }
        // pm.max_children auto: the master at the ceiling, no idle child kept.
        p.max_children_auto = true;
        p.max_children = 64;
        let auto = config_text(&p, 3, Path::new("/s"), false);
        for line in ["pm = ondemand", "pm.max_children = 64", "pm.process_idle_timeout = 10s"] {
            assert!(auto.lines().any(|l| l == line), "{line} missing in\n{auto}");
        }
        assert!(!auto.contains("spare") && !auto.contains("start_servers"), "{auto}");
        assert_eq!(ini_value("E_ALL & ~E_DEPRECATED"), "E_ALL & ~E_DEPRECATED");
        assert_eq!(ini_value("/var/log/a; b"), "\"/var/log/a; b\"");
        assert_eq!(ini_value("a=b"), "\"a=b\"");
    }

    #[test]
    fn config_memfd_is_sealed() {
        let fd = config_memfd("t", "[global]\n").unwrap();
        assert!(nix::unistd::write(&fd, b"x").is_err(), "a sealed memfd refuses writes");
        assert_eq!(std::fs::read_to_string(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd))).unwrap(), "[global]\n");
    }
}
