//! The attacker: a site's owner (`nobody` here) who can write the
//! directory the configuration puts their vhost's logs in, and plants
//! there, before a start, a graceful restart or a log reopen, a symbolic
//! link, a hard link, a file of their own or a FIFO, hoping that warren's
//! root parent creates, truncates or appends to a file of the attacker's
//! choosing (the victim). warren must refuse, naming the directive, its
//! file and line, and the path, at start (where the host's log is left out
//! and the others' sites served: a cold start refused for a tenant's link
//! would let the tenant keep every site down) and at `-t`; a graceful
//! restart and a USR1 keep the log they had. Logs where only root writes
//! (including a root directory under the sticky /tmp, and links root made)
//! keep working.

mod common;
use common::*;

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

each_mpm!(restart_and_reopen_keep_the_log_they_had);

const NOBODY: u32 = 65534;
const VICTIM_TEXT: &str = "untouched\n";

fn is_root() -> bool {
    nix::unistd::Uid::effective().is_root()
}

/// A directory the site's owner can write: nobody's when the tests run as
/// root, else one anyone can write (neither is root's to trust).
fn site_logs(dir: &TempDir, site: &str) -> PathBuf {
    let logs = dir.0.join(format!("sites/{site}/logs"));
    std::fs::create_dir_all(&logs).unwrap();
    if is_root() {
        std::os::unix::fs::chown(&logs, Some(NOBODY), Some(NOBODY)).unwrap();
    } else {
        std::fs::set_permissions(&logs, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    logs
}

/// A file of root's the attacker wants written.
fn victim(dir: &TempDir) -> PathBuf {
    dir.write("victim.txt", VICTIM_TEXT)
}

/// A link the site's owner made.
fn plant_link(target: &Path, at: &Path) {
    symlink(target, at).unwrap();
    if is_root() {
        std::os::unix::fs::lchown(at, Some(NOBODY), Some(NOBODY)).unwrap();
    }
}

/// The harness's configuration, on a port of its own.
fn write_conf(dir: &TempDir, extra: &str) -> PathBuf {
    let port = free_port();
    dir.write(
        "warren.conf",
        format!("LoadModule mpm_event_module modules/mod_mpm_event.so\nListen 127.0.0.1:{port}\nServerName localhost\nDocumentRoot htdocs\nPidFile warren.pid\nErrorLog error.log\nLogLevel info\nCustomLog access.log combined\nUser nobody\nGroup nogroup\n{extra}\n"),
    )
}

/// The line of `conf` that holds `needle`, as `file:line`.
fn origin_of(conf: &Path, needle: &str) -> String {
    let text = std::fs::read_to_string(conf).unwrap();
    let line = text.lines().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("{needle} not in {text}")) + 1;
    format!("{}:{line}", conf.display())
}

/// Runs warren with `args`; its exit status and standard error, or None
/// if it was still running after 20 s (it started: killed then).
fn run_to_exit(args: &[&str], conf: &Path) -> Option<(std::process::ExitStatus, String)> {
    let mut child = Command::new(BIN).args(args).arg("-f").arg(conf).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            return Some((status, err));
        }
        if Instant::now() > deadline {
            let _ = terminate(child, STOP_GRACE);
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One attack: what the configuration says, what the attacker plants.
struct Attack {
    what: &'static str,
    directive: &'static str,
    /// The configuration's extra lines; `{logs}` is the site's log directory.
    config: &'static str,
    /// The path named in the message.
    path: &'static str,
    plant: fn(logs: &Path, victim: &Path),
    /// Words the refusal says.
    says: &'static str,
}

const VHOST: &str = "<VirtualHost *>\nServerName a.test\nDocumentRoot htdocs\n";

fn attacks() -> Vec<Attack> {
    vec![
        Attack { what: "ErrorLog a link", directive: "ErrorLog", config: "ErrorLog {logs}/vhost.log", path: "{logs}/vhost.log", plant: |l, v| plant_link(v, &l.join("vhost.log")), says: "symbolic link" },
        Attack { what: "CustomLog a link", directive: "CustomLog", config: "CustomLog {logs}/access.log combined", path: "{logs}/access.log", plant: |l, v| plant_link(v, &l.join("access.log")), says: "symbolic link" },
        Attack { what: "TransferLog a hard link", directive: "TransferLog", config: "TransferLog {logs}/transfer.log", path: "{logs}/transfer.log", plant: |l, v| std::fs::hard_link(v, l.join("transfer.log")).unwrap(), says: "2 names" },
        Attack {
            what: "a directory on the way a link",
            directive: "ErrorLog",
            config: "ErrorLog {logs}/old/victim.txt",
            path: "{logs}/old/victim.txt",
            plant: |l, v| plant_link(v.parent().unwrap(), &l.join("old")),
            says: "symbolic link",
        },
        Attack {
            what: "a dangling link (root would create the target)",
            directive: "CustomLog",
            config: "CustomLog {logs}/new.log combined",
            path: "{logs}/new.log",
            plant: |l, v| plant_link(&v.with_file_name("created-by-root"), &l.join("new.log")),
            says: "symbolic link",
        },
        Attack { what: "climbing out with ..", directive: "ErrorLog", config: "ErrorLog {logs}/../../../victim.txt", path: "{logs}/../../../victim.txt", plant: |_, _| {}, says: "'..'" },
        Attack { what: "a NUL in the path", directive: "ErrorLog", config: "ErrorLog {logs}/a\0b.log", path: "{logs}/a\0b.log", plant: |_, _| {}, says: "NUL" },
        Attack {
            what: "a file of the attacker's",
            directive: "CustomLog",
            config: "CustomLog {logs}/theirs.log combined",
            path: "{logs}/theirs.log",
            plant: |l, _| {
                std::fs::write(l.join("theirs.log"), "").unwrap();
                if is_root() {
                    std::os::unix::fs::chown(l.join("theirs.log"), Some(NOBODY), None).unwrap();
                }
            },
            says: "belongs to nobody",
        },
        Attack {
            what: "a FIFO (an open for writing would hang)",
            directive: "ErrorLog",
            config: "ErrorLog {logs}/fifo.log",
            path: "{logs}/fifo.log",
            plant: |l, _| nix::unistd::mkfifo(&l.join("fifo.log"), nix::sys::stat::Mode::from_bits_truncate(0o666)).unwrap(),
            says: "not a regular file",
        },
    ]
}

/// Each attack, at `-t` and at start: refused, said with the directive,
/// its file and line and the path; the victim untouched; at start the
/// server runs without that log.
#[test]
fn planted_files_are_refused_at_start_and_by_t() {
    for a in attacks() {
        if a.says.contains("nobody") && !is_root() {
            // The tests' own user owns what they make.
            continue;
        }
        let dir = TempDir::new("rootfiles-start");
        let logs = site_logs(&dir, "a");
        let victim = victim(&dir);
        (a.plant)(&logs, &victim);
        let line = a.config.replace("{logs}", &logs.display().to_string());
        let path = a.path.replace("{logs}", &logs.display().to_string());
        let conf = write_conf(&dir, &format!("{VHOST}{line}\n</VirtualHost>"));
        let origin = origin_of(&conf, &line);
        let (status, err) = run_to_exit(&["-t"], &conf).unwrap_or_else(|| panic!("{}: -t did not end", a.what));
        assert!(!status.success(), "{}: -t passed: {err}", a.what);
        let expected = format!("{origin}: {} {path}: refused: ", a.directive);
        assert!(err.contains(&expected) && err.contains(a.says), "{}: -t said {err:?}, not {expected:?} ... {:?}", a.what, a.says);
        // At a cold start the virtual host's log is left out, not every
        // site: warren starts, and its main error log says why.
        let child = Command::new(BIN).arg("-f").arg(&conf).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let started = loop {
            let log = std::fs::read_to_string(dir.0.join("error.log")).unwrap_or_default();
            if dir.0.join("warren.pid").exists() && log.contains(&expected) || Instant::now() > deadline {
                break log;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let _ = terminate(child, STOP_GRACE);
        assert!(started.contains(&expected) && started.contains(a.says), "{}: the main error log says {started:?}", a.what);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), VICTIM_TEXT, "{}: the victim was written", a.what);
        assert!(!dir.0.join("created-by-root").exists(), "{}: root created the link's target", a.what);
    }
}

/// PidFile is truncated and written: a link would have root empty the
/// victim. And `-t` names every refusal, not just the first.
#[test]
fn pid_file_links_are_refused_and_t_lists_them_all() {
    let dir = TempDir::new("rootfiles-pid");
    let logs = site_logs(&dir, "a");
    let victim = victim(&dir);
    plant_link(&victim, &logs.join("warren.pid"));
    plant_link(&victim, &logs.join("error.log"));
    let conf = write_conf(&dir, &format!("PidFile {0}/warren.pid\n{VHOST}ErrorLog {0}/error.log\n</VirtualHost>", logs.display()));
    let (status, err) = run_to_exit(&["-t"], &conf).unwrap();
    assert!(!status.success());
    assert!(err.contains(&format!("{}: PidFile {}/warren.pid: refused", origin_of(&conf, "PidFile /"), logs.display())), "{err}");
    assert!(err.contains(&format!("{}: ErrorLog {}/error.log: refused", origin_of(&conf, "ErrorLog /"), logs.display())), "{err}");
    let (status, err) = run_to_exit(&[], &conf).expect("warren started");
    assert!(!status.success() && err.contains("refused"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), VICTIM_TEXT);
}

/// `warren -k stop` reads the PidFile as root: one the site's owner wrote
/// would have root signal a process of their choosing.
#[test]
fn k_stop_believes_no_pid_file_another_user_wrote() {
    if !is_root() {
        return;
    }
    let dir = TempDir::new("rootfiles-k");
    let logs = site_logs(&dir, "a");
    let mut bystander = Command::new("sleep").arg("60").spawn().unwrap();
    let pid_file = logs.join("warren.pid");
    std::fs::write(&pid_file, format!("{}\n", bystander.id())).unwrap();
    std::os::unix::fs::chown(&pid_file, Some(NOBODY), None).unwrap();
    let conf = write_conf(&dir, &format!("PidFile {}", pid_file.display()));
    let (status, err) = run_to_exit(&["-k", "stop"], &conf).unwrap();
    assert!(!status.success());
    assert!(err.contains("PidFile") && err.contains("belongs to nobody"), "{err}");
    assert!(bystander.try_wait().unwrap().is_none(), "the bystander was signalled");
    let _ = bystander.kill();
    let _ = bystander.wait();
}

/// A php-cgi pool's slow log is opened by root at each entry: refused at
/// start already.
#[test]
fn slow_log_links_are_refused_at_start() {
    if !Path::new("/usr/bin/php-cgi").exists() {
        return;
    }
    let dir = TempDir::new("rootfiles-slow");
    let logs = site_logs(&dir, "a");
    let victim = victim(&dir);
    plant_link(&victim, &logs.join("slow.log"));
    let conf = write_conf(
        &dir,
        &format!("<Pool www>\n    Command /usr/bin/php-cgi\n    User nobody\n    Group nogroup\n    request_slowlog_timeout = 1s\n    slowlog = {}/slow.log\n</Pool>", logs.display()),
    );
    for args in [&["-t"][..], &[]] {
        let (status, err) = run_to_exit(args, &conf).expect("warren started");
        assert!(!status.success());
        assert!(err.contains(&format!("slowlog {}/slow.log: refused", logs.display())), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), VICTIM_TEXT);
}

/// Logs in directories only root writes, through links root made, and in a
/// root-owned sticky directory, work at start, at a graceful restart and
/// at a reopen, as before.
#[test]
fn logs_where_only_root_writes_still_work() {
    let dir = TempDir::new("rootfiles-ok");
    standard_site(&dir);
    std::fs::create_dir_all(dir.0.join("real-logs")).unwrap();
    symlink(dir.0.join("real-logs"), dir.0.join("logs")).unwrap();
    let sticky = dir.0.join("sticky");
    std::fs::create_dir(&sticky).unwrap();
    std::fs::set_permissions(&sticky, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let extra = format!("{VHOST}ErrorLog logs/a-error.log\nCustomLog {}/a-access.log combined\n</VirtualHost>", sticky.display());
    let s = Server::start_in(dir, "event", &extra);
    assert_eq!(s.get_from("a.test", "/a.txt?first").status, 200);
    assert_eq!(s.get_from("a.test", "/missing-first").status, 404);
    s.wait_log("sticky/a-access.log", "first");
    s.wait_log("real-logs/a-error.log", "missing-first");
    unsafe_kill(s.pid(), 1);
    s.wait_log("error.log", "SIGHUP received");
    unsafe_kill(s.pid(), 10);
    s.wait_log("error.log", "SIGUSR1 received");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !s.read_log("sticky/a-access.log").contains("second") {
        assert_eq!(s.get_from("a.test", "/a.txt?second").status, 200);
        assert!(Instant::now() < deadline, "nothing logged after the restart: {}", s.read_log("error.log"));
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = s.read_log("error.log");
    assert!(!log.contains("refused"), "{log}");
}

/// Logs in the site's directory, opened at start; then the site's owner
/// moves them away and plants links. A graceful restart is refused and
/// keeps the running configuration; USR1 keeps each log's old file; both
/// say why; the victim is untouched and requests are still logged, into
/// the files warren had.
fn restart_and_reopen_keep_the_log_they_had(mpm: &str) {
    let dir = TempDir::new(&format!("rootfiles-restart-{mpm}"));
    standard_site(&dir);
    let logs = site_logs(&dir, "a");
    let victim = victim(&dir);
    let extra = format!("{VHOST}ErrorLog {0}/error.log\nCustomLog {0}/access.log combined\n</VirtualHost>", logs.display());
    let s = Server::start_in(dir, mpm, &extra);
    assert_eq!(s.get_from("a.test", "/a.txt?before").status, 200);
    s.wait_log("sites/a/logs/access.log", "before");
    for name in ["access.log", "error.log"] {
        std::fs::rename(logs.join(name), logs.join(format!("{name}.moved"))).unwrap();
        plant_link(&victim, &logs.join(name));
    }
    unsafe_kill(s.pid(), 1);
    let log = s.wait_log("error.log", "still serving with the running configuration");
    assert!(log.contains(&format!("graceful restart: {}", origin_of(&s.conf, "ErrorLog /"))) || log.contains(&format!("graceful restart: {}", origin_of(&s.conf, "CustomLog /"))), "{log}");
    assert!(log.contains(&format!("{}/", logs.display())) && log.contains(": refused: "), "{log}");
    unsafe_kill(s.pid(), 10);
    // Each log says so in turn: wait for each line, not for the first.
    for directive in ["ErrorLog", "CustomLog"] {
        let said = format!("reopening the logs: {}: {directive} ", origin_of(&s.conf, &format!("{directive} /")));
        let log = s.wait_log("error.log", &said);
        assert!(log.contains(&said) && log.contains("still writing to the file it had"), "{said:?} not in {log}");
    }
    // Every child serves with the log it had (children replaced after USR1
    // get the parent's descriptors).
    let deadline = Instant::now() + Duration::from_secs(20);
    while !s.read_log("sites/a/logs/access.log.moved").contains("after") || !s.read_log("sites/a/logs/error.log.moved").contains("missing-after") {
        assert_eq!(s.get_from("a.test", "/a.txt?after").status, 200);
        assert_eq!(s.get_from("a.test", "/missing-after").status, 404);
        assert!(Instant::now() < deadline, "the moved logs got nothing more: {}", s.read_log("error.log"));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), VICTIM_TEXT);
}

/// A graceful restart that moves the PidFile where the site's owner has
/// planted a link is refused (the PidFile stays, the victim is not
/// emptied); once the link is gone, the restart writes the new PidFile
/// and removes the old one.
#[test]
fn pid_file_moved_at_a_graceful_restart() {
    let dir = TempDir::new("rootfiles-pid-restart");
    standard_site(&dir);
    let logs = site_logs(&dir, "a");
    let victim = victim(&dir);
    let s = Server::start_in(dir, "event", "");
    let old = s.dir.0.join("warren.pid");
    let new = logs.join("warren.pid");
    plant_link(&victim, &new);
    let conf = std::fs::read_to_string(&s.conf).unwrap();
    std::fs::write(&s.conf, conf.replace("PidFile warren.pid", &format!("PidFile {}", new.display()))).unwrap();
    unsafe_kill(s.pid(), 1);
    let log = s.wait_log("error.log", "still serving with the running configuration");
    assert!(log.contains(&format!("PidFile {}: refused", new.display())), "{log}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), VICTIM_TEXT);
    assert_eq!(std::fs::read_to_string(&old).unwrap().trim(), s.pid().to_string());
    std::fs::remove_file(&new).unwrap();
    unsafe_kill(s.pid(), 1);
    let deadline = Instant::now() + Duration::from_secs(20);
    while old.exists() || std::fs::read_to_string(&new).unwrap_or_default().trim() != s.pid().to_string() {
        assert!(Instant::now() < deadline, "the PidFile did not move: {}", s.read_log("error.log"));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), VICTIM_TEXT);
}
