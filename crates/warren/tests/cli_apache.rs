//! apache2ctl's habits, as a user coming from Apache tries them: `warren -S`
//! (virtual hosts by address, with DocumentRoots, listeners and pools),
//! `-M` (the modules a configuration has, and what warren makes of each),
//! `-V`, Debian's `envvars` read beside the configuration as apache2ctl
//! reads it, `-k reopen-logs` after logrotate, and packaging/warren-ctl's
//! commands against a running server.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::envvars::*;
use common::*;

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env_remove("APACHE_ENVVARS").output().expect("run warren")
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "warren failed: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A configuration with two name-based hosts on one address, one on
/// another, and a pool, in a directory of its own.
fn vhost_config(dir: &TempDir) -> PathBuf {
    for d in ["www", "a", "b", "c"] {
        std::fs::create_dir_all(dir.0.join(d)).unwrap();
    }
    dir.write(
        "warren.conf",
        "Listen 127.0.0.1:18080\nListen 127.0.0.1:18081\nServerName main.test\nDocumentRoot www\nPidFile run/warren.pid\nErrorLog logs/error.log\n\
         User www-data\nGroup www-data\n\
         <Pool shop>\n  Command /usr/bin/php-cgi\n  pm static\n  pm.max_children 3\n</Pool>\n\
         <VirtualHost *:18080>\n  ServerName a.test\n  ServerAlias www.a.test\n  DocumentRoot a\n  <FilesMatch \\.php$>\n    SetHandler pool:shop\n  </FilesMatch>\n</VirtualHost>\n\
         <VirtualHost *:18080>\n  ServerName b.test\n  DocumentRoot b\n</VirtualHost>\n\
         <VirtualHost 127.0.0.1:18081>\n  ServerName c.test\n  DocumentRoot c\n</VirtualHost>\n",
    )
}

/// As `apache2ctl -S`: the name-based address with its default server and
/// each host at its file and line, aliases, then the run configuration;
/// and what Apache does not show: DocumentRoots, pools, listeners.
#[test]
fn dash_s_shows_hosts_by_address_with_roots_pools_and_listeners() {
    let dir = TempDir::new("cli-s");
    let conf = vhost_config(&dir);
    let out = stdout(&run(&["-f", conf.to_str().unwrap(), "-S"]));
    let c = conf.display();
    let root = dir.0.display();
    let expected_start = format!(
        "VirtualHost configuration:\n\
         *:18080                is a NameVirtualHost\n\
         \x20        default server a.test ({c}:14)\n\
         \x20        port 18080 namevhost a.test ({c}:14)\n\
         \x20                alias www.a.test\n\
         \x20                DocumentRoot \"{root}/a\"\n\
         \x20                pools: shop\n\
         \x20        port 18080 namevhost b.test ({c}:22)\n\
         \x20                DocumentRoot \"{root}/b\"\n\
         127.0.0.1:18081        c.test ({c}:26)\n\
         \x20        DocumentRoot \"{root}/c\"\n\
         ServerRoot: \"{root}\"\n\
         Main DocumentRoot: \"{root}/www\"\n\
         Main ErrorLog: \"{root}/logs/error.log\"\n\
         PidFile: \"{root}/run/warren.pid\"\n"
    );
    assert!(out.starts_with(&expected_start), "got:\n{out}\nexpected to start with:\n{expected_start}");
    let uid = std::fs::read_to_string("/etc/passwd").unwrap().lines().find_map(|l| l.strip_prefix("www-data:x:").and_then(|r| r.split(':').next().map(str::to_string))).expect("www-data in /etc/passwd");
    assert!(out.contains(&format!("\nUser: name=\"www-data\" id={uid}\n")), "{out}");
    assert!(out.contains("\nListen:\n         127.0.0.1:18080 (http)\n         127.0.0.1:18081 (http)\n"), "{out}");
    assert!(out.contains(&format!("\nPools:\n         shop ({c}:9): /usr/bin/php-cgi as www-data, pm static, max_children 3\n")), "{out}");
    // apache2ctl's own spelling of it, as certbot runs it.
    let dumped = stdout(&run(&["-f", conf.to_str().unwrap(), "-t", "-D", "DUMP_VHOSTS", "-D", "DUMP_RUN_CFG"]));
    assert!(dumped.starts_with(&expected_start) && dumped.contains("\nDefine: DUMP_VHOSTS\nDefine: DUMP_RUN_CFG\n"), "{dumped}");
}

/// -S on a configuration with an error prints the error, as FILE:LINE, and fails.
#[test]
fn dash_s_on_a_broken_configuration_names_the_line_and_fails() {
    let dir = TempDir::new("cli-s-bad");
    let conf = dir.write("warren.conf", "Listen 127.0.0.1:18082\nDocumentRoot .\nFrobnicate on\n");
    let out = run(&["-f", conf.to_str().unwrap(), "-S"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:3:", conf.display())) && err.contains("Frobnicate"), "{err}");
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
}

/// -M: the modules `<IfModule>` sees, `(shared)` where a LoadModule line
/// loaded it; ssl only once loaded; what warren makes of each.
#[test]
fn dash_m_lists_the_modules_and_what_warren_makes_of_them() {
    let dir = TempDir::new("cli-m");
    std::fs::create_dir_all(dir.0.join("www")).unwrap();
    let conf = dir.write("warren.conf", "LoadModule mpm_prefork_module x.so\nLoadModule rewrite_module x.so\nLoadModule auth_basic_module x.so\nListen 127.0.0.1:18083\nDocumentRoot www\n");
    let out = stdout(&run(&["-f", conf.to_str().unwrap(), "-M"]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "Loaded Modules:");
    let line = |id: &str| lines.iter().find(|l| l.starts_with(&format!(" {id} "))).copied();
    assert_eq!(line("core_module"), Some(" core_module (static) - built in: the core directives"), "{out}");
    assert!(line("rewrite_module").is_some_and(|l| l.starts_with(" rewrite_module (shared) - built in: RewriteEngine")), "{out}");
    assert!(line("auth_basic_module").is_some_and(|l| l.contains("(shared) - its directives AuthBasicAuthoritative, AuthBasicFake")), "{out}");
    assert_eq!(line("mpm_prefork_module"), Some(" mpm_prefork_module (static) - built in: the MPM in force"), "{out}");
    assert_eq!(line("mpm_event_module"), None, "{out}");
    // Not loaded: its <IfModule> is false, so it is not listed.
    assert_eq!(line("ssl_module"), None, "{out}");
    // A module warren lacks is never listed.
    assert_eq!(line("lua_module"), None, "{out}");
    let with_ssl = dir.write("ssl.conf", "LoadModule ssl_module x.so\nListen 127.0.0.1:18083\nDocumentRoot www\n");
    let out = stdout(&run(&["-f", with_ssl.to_str().unwrap(), "-M"]));
    assert!(out.lines().any(|l| l.starts_with(" ssl_module (shared) - built in: TLS")), "{out}");
    assert!(out.lines().any(|l| l == " mpm_event_module (static) - built in: the MPM in force"), "{out}");
    let dumped = stdout(&run(&["-f", with_ssl.to_str().unwrap(), "-t", "-D", "DUMP_MODULES"]));
    assert_eq!(dumped, out);
}

/// -V: version, build, the MPM the configuration chooses, and its paths.
#[test]
fn dash_v_shows_the_build_the_mpm_and_the_paths() {
    let out = stdout(&run(&["-V"]));
    assert!(out.starts_with(&format!("Server version: warren/{} (linux)\n", env!("CARGO_PKG_VERSION"))), "{out}");
    assert!(out.contains("\nServer MPM:     event\n") && out.contains("\n -D SERVER_CONFIG_FILE=\"/etc/warren/warren.conf\"\n"), "{out}");
    let dir = TempDir::new("cli-v");
    std::fs::create_dir_all(dir.0.join("www")).unwrap();
    let conf = dir.write("warren.conf", "LoadModule mpm_prefork_module x.so\nListen 127.0.0.1:18084\nDocumentRoot www\nPidFile w.pid\n");
    let out = stdout(&run(&["-f", conf.to_str().unwrap(), "-V"]));
    assert!(out.contains("\nServer MPM:     prefork\n  threaded:     no\n"), "{out}");
    assert!(out.contains(&format!("\n -D SERVER_CONFIG_FILE=\"{}\"\n", conf.display())), "{out}");
    assert!(out.contains(&format!("\n -D DEFAULT_PIDLOG=\"{}\"\n", dir.0.join("w.pid").display())), "{out}");
    // --mpm wins, as at start.
    let out = stdout(&run(&["-f", conf.to_str().unwrap(), "--mpm", "worker", "-V"]));
    assert!(out.contains("\nServer MPM:     worker\n"), "{out}");
    let short = stdout(&run(&["-v"]));
    assert_eq!(short, format!("Server version: warren/{} (linux)\n", env!("CARGO_PKG_VERSION")));
}

/// With no APACHE_* variables set, `-f DIR/apache2.conf` sources
/// DIR/envvars as apache2ctl does: Debian's values reach the
/// configuration; one the environment sets wins over envvars'.
#[test]
fn envvars_beside_the_configuration_is_read_as_apache2ctl_reads_it() {
    let (dir, conf) = envvars_tree("cli-envvars");
    let out = stdout(&without_apache_vars(&conf).output().unwrap());
    assert!(out.contains("\nPidFile: \"/var/run/apache2/apache2.pid\"\n"), "{out}");
    assert!(out.contains("\nMain ErrorLog: \"/var/log/apache2/error.log\"\n"), "{out}");
    assert!(out.contains("\nUser: name=\"www-data\" id="), "{out}");
    let logs = dir.0.join("mylogs");
    let out = stdout(&without_apache_vars(&conf).env("APACHE_LOG_DIR", &logs).output().unwrap());
    assert!(out.contains(&format!("\nMain ErrorLog: \"{}/error.log\"\n", logs.display())), "{out}");
    assert!(out.contains("\nPidFile: \"/var/run/apache2/apache2.pid\"\n"), "{out}");
    // APACHE_ENVVARS names another file, as for apache2ctl.
    let other = dir.write("other-envvars", "export APACHE_RUN_USER=nobody APACHE_RUN_GROUP=nogroup APACHE_PID_FILE=/tmp/other.pid APACHE_RUN_DIR=/tmp APACHE_LOG_DIR=/tmp\n");
    let out = stdout(&without_apache_vars(&conf).env("APACHE_ENVVARS", &other).output().unwrap());
    assert!(out.contains("\nPidFile: \"/tmp/other.pid\"\n") && out.contains("\nUser: name=\"nobody\""), "{out}");
}

/// After logrotate moved the logs, `-k reopen-logs` (SIGUSR1) has warren
/// write to new files: the next request's line is in a new access.log.
fn reopen_logs_after_rotation(mpm: &str) {
    let s = Server::start(mpm, "");
    assert_eq!(s.get("/index.html").status, 200);
    let log = s.dir.0.join("access.log");
    wait_for(|| std::fs::read_to_string(&log).is_ok_and(|t| t.contains("GET /index.html")), "the first request's log line");
    std::fs::rename(&log, s.dir.0.join("access.log.1")).unwrap();
    let out = Command::new(BIN).arg("-f").arg(&s.conf).args(["-k", "reopen-logs"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    s.wait_log("error.log", "SIGUSR1 received");
    // Children are replaced to take the new files: poll until a request is
    // logged in the new file (each try is a new request, logged somewhere).
    wait_for(
        || {
            let _ = s.get("/a.txt");
            std::fs::read_to_string(&log).is_ok_and(|t| t.contains("GET /a.txt"))
        },
        "a line in the reopened access.log",
    );
    let rotated = std::fs::read_to_string(s.dir.0.join("access.log.1")).unwrap();
    assert!(rotated.contains("GET /index.html"), "{rotated}");
}

fn wait_for(ready: impl Fn() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// packaging/warren-ctl, run with the test's binary and configuration.
fn warren_ctl(s: &Server, args: &[&str]) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/warren-ctl");
    Command::new("sh")
        .arg(script)
        .args(args)
        .env("WARREN", BIN)
        .env("WARREN_CONF", &s.conf)
        .env("WARREN_STATUSURL", s.url("/server-status"))
        .output()
        .expect("run warren-ctl")
}

/// warren-ctl's apache2ctl commands against a running server: configtest,
/// status (mod_status's ?auto), fullstatus, graceful (refused while the
/// configuration has errors, as apache2ctl refuses), stop.
fn warren_ctl_drives_a_running_server(mpm: &str) {
    let mut s = Server::start(mpm, "<Location /server-status>\nSetHandler server-status\n</Location>\n");
    let text = |o: &Output| format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let o = warren_ctl(&s, &["configtest"]);
    assert!(o.status.success() && text(&o).contains("Syntax OK"), "{}", text(&o));
    let o = warren_ctl(&s, &["status"]);
    assert!(o.status.success() && text(&o).lines().any(|l| l.starts_with("BusyWorkers: ")), "{}", text(&o));
    let o = warren_ctl(&s, &["fullstatus"]);
    assert!(o.status.success() && text(&o).contains("<html"), "{}", text(&o));
    // A broken configuration is not sent: no SIGHUP reaches the server.
    let good = std::fs::read_to_string(&s.conf).unwrap();
    std::fs::write(&s.conf, format!("{good}Frobnicate on\n")).unwrap();
    let o = warren_ctl(&s, &["graceful"]);
    assert!(!o.status.success() && text(&o).contains("Frobnicate"), "{}", text(&o));
    std::fs::write(&s.conf, &good).unwrap();
    let o = warren_ctl(&s, &["graceful"]);
    assert!(o.status.success(), "{}", text(&o));
    let log = s.wait_log("error.log", "SIGHUP received");
    assert_eq!(log.matches("SIGHUP received").count(), 1, "{log}");
    assert_eq!(s.get("/index.html").status, 200);
    let o = warren_ctl(&s, &["stop"]);
    assert!(o.status.success(), "{}", text(&o));
    let child = s.child.as_mut().unwrap();
    wait_for(|| child_exited(child), "warren to exit after warren-ctl stop");
    assert!(std::net::TcpStream::connect(("127.0.0.1", s.port)).is_err());
}

fn child_exited(child: &std::process::Child) -> bool {
    // /proc/PID goes (or turns zombie) once warren exits.
    std::fs::read_to_string(format!("/proc/{}/stat", child.id())).map_or(true, |st| st.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().next()) == Some("Z"))
}

each_mpm!(reopen_logs_after_rotation, warren_ctl_drives_a_running_server);
