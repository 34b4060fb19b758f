//! The `warren` command: `serve` a directory with built-in defaults, or run,
//! check (`-t`) or signal (`-k`) a server configured by an Apache-style file.
//! It reads the configuration (`warren-config`), builds the site
//! (`warren-handler`), binds the listeners and hands over to the MPM's
//! parent process (`warren-mpm`), giving it the children's serving
//! (`warren-serve`).
//!
//! `tests/` holds the integration tests: they start this binary on
//! 127.0.0.1 and talk to it with real clients, each under every MPM
//! (`each_mpm!`, in the shared harness `tests/common/mod.rs`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod apache_cli;
mod bench_cli;
mod envvars;
mod md_helper;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use warren_config::{load_file, LoadOptions, Mpm, Settings};
use warren_handler::Site;

#[derive(Parser)]
#[command(name = "warren", version, about = "A web server for PHP and FastCGI sites on small machines", args_conflicts_with_subcommands = true, disable_version_flag = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Run from this configuration file (Apache syntax).
    #[arg(short = 'f', value_name = "FILE")]
    config: Option<PathBuf>,
    /// Check the configuration and exit: prints `Syntax OK` or each error as FILE:LINE: message.
    #[arg(short = 't')]
    test: bool,
    /// Send a signal to the running server (found through its PidFile).
    #[arg(short = 'k', value_enum, value_name = "ACTION")]
    signal: Option<Action>,
    /// Define a name for <IfDefine NAME> (repeatable).
    #[arg(short = 'D', value_name = "NAME")]
    defines: Vec<String>,
    /// Override the MPM the configuration loads.
    #[arg(long, value_parser = mpm_name())]
    mpm: Option<Mpm>,
    /// Let server children and pools run as root (User root, or no User,
    /// when started as root), as php-fpm's -R; `warren serve` started as
    /// root then keeps root instead of running as www-data or nobody.
    #[arg(short = 'R', long = "allow-to-run-as-root", global = true)]
    allow_root: bool,
    /// Show the virtual hosts by address, with their DocumentRoots and pools,
    /// the listeners and the run configuration, as `apache2ctl -S`.
    #[arg(short = 'S', requires = "config")]
    dump_vhosts: bool,
    /// Show the modules the configuration has and what warren makes of each, as `apache2ctl -M`.
    #[arg(short = 'M', requires = "config")]
    dump_modules: bool,
    /// Show the version, the build, the MPM and the paths, as `apache2 -V`.
    #[arg(short = 'V')]
    show_build: bool,
    /// Show the version as `apache2 -v` does (`Server version: warren/...`).
    #[arg(short = 'v')]
    show_version: bool,
    /// Print the version (`warren 0.1.0`).
    #[arg(long = "version")]
    long_version: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a directory with built-in defaults, no configuration file needed.
    Serve {
        /// The directory to serve.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Address and port to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        #[arg(long, value_parser = mpm_name(), default_value = "event")]
        mpm: Mpm,
    },
    /// Load-test HTTP servers, as ab and siege do: siege's report and ab's percentiles.
    Bench(Box<BenchArgs>),
    /// The response cache (CacheEnable): `warren cache purge URL`.
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
    /// Write warren's man page (warren.8) and shell completions (bash, zsh,
    /// fish) into DIR, from this command line's own definition (the Debian
    /// package is built with them).
    #[command(hide = true)]
    GenerateDocs {
        dir: PathBuf,
    },
}

/// `warren cache`'s actions.
#[derive(Subcommand)]
enum CacheAction {
    /// Remove the stored answers of a URL (every Host value and variant),
    /// or of every URL under a prefix written with a final `*`:
    /// `warren cache purge http://example.org/blog/*`.
    Purge {
        /// The configuration whose caches to purge.
        #[arg(short = 'f', value_name = "FILE", default_value = "/etc/warren/warren.conf")]
        config: PathBuf,
        /// An absolute URL: its name and port choose the virtual host.
        url: String,
    },
}

/// `warren cache purge`: the configuration loaded, the URL's entries removed.
fn cache_command(action: &CacheAction, defines: &[String]) -> ExitCode {
    let CacheAction::Purge { config, url } = action;
    let loaded = load_file(config, &LoadOptions { defines: defines.to_vec(), mpm_override: None });
    let Some(settings) = loaded.settings else {
        for e in &loaded.errors {
            eprintln!("{e}");
        }
        return ExitCode::FAILURE;
    };
    let purged = Site::new(settings).and_then(|site| site.purge_url(url));
    match purged {
        Ok(n) => {
            println!("{url}: {n} entr{} removed", if n == 1 { "y" } else { "ies" });
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("warren: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `warren bench`'s options.
#[derive(clap::Args, Debug)]
struct BenchArgs {
    /// http:// or https:// URLs, requested in turn.
    #[arg(required_unless_present_any = ["url_file", "suite"])]
    urls: Vec<String>,
    /// Compare servers: start each set-up a suite file names (warren under
    /// each MPM, nginx, Apache), run its scenarios, write a report.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["urls", "url_file"])]
    suite: Option<PathBuf>,
    /// Where --suite writes report.md, report.html, its SVG charts and JSON.
    #[arg(long, value_name = "DIR", default_value = "warren-report")]
    out: PathBuf,
    /// Requests in all (default: 1000 unless -t is given).
    #[arg(short = 'n')]
    requests: Option<u64>,
    /// Concurrent connections.
    #[arg(short = 'c', default_value_t = 10)]
    concurrency: usize,
    /// Run this long: seconds (30) or with a unit (30s, 2m).
    #[arg(short = 't', value_parser = warren_bench::parse_duration)]
    time: Option<std::time::Duration>,
    /// Keep connections alive between requests (off by default, as in ab).
    #[arg(short = 'k')]
    keep_alive: bool,
    /// An extra request header, `Name: value` (repeatable).
    #[arg(short = 'H')]
    header: Vec<String>,
    /// The request method (default GET, or POST with -p).
    #[arg(short = 'm')]
    method: Option<String>,
    /// Send this file as the request body.
    #[arg(short = 'p')]
    body_file: Option<PathBuf>,
    /// Send requests at this many per second (open loop); response times
    /// count from when each request was due.
    #[arg(long, value_parser = bench_cli::parse_rate)]
    rate: Option<f64>,
    /// Users rising linearly, FROM-TO:DURATION (e.g. 1-150:60), as in the
    /// seeds' ramping tests; -c is then TO.
    #[arg(long, value_parser = warren_bench::parse_ramp)]
    ramp: Option<(usize, usize, std::time::Duration)>,
    /// A siege URL file: one URL a line, optionally `POST body`.
    #[arg(short = 'f', value_name = "FILE")]
    url_file: Option<PathBuf>,
    /// Sample the PSS of this process and its descendants each second.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Sample this cgroup's memory.current each second (cgroup v2).
    #[arg(long)]
    server_cgroup: Option<PathBuf>,
    /// Give up on a request after this long.
    #[arg(long, default_value = "30s", value_parser = warren_bench::parse_duration)]
    timeout: std::time::Duration,
    /// Client threads (default: the number of CPUs).
    #[arg(long)]
    threads: Option<usize>,
    /// Print one JSON object instead of the report.
    #[arg(long)]
    json: bool,
    /// https://: accept any certificate, as curl -k does (handshake
    /// signatures are still checked). (-k is keep-alive, as in ab.)
    #[arg(long)]
    insecure: bool,
    /// https://: trust the certificates of this PEM file instead of the
    /// system's bundle.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    cacert: Option<PathBuf>,
    /// https://: a full handshake on every new connection (by default
    /// sessions are cached and resumed, with tickets or session IDs).
    #[arg(long)]
    no_resume: bool,
    /// https://: offer only RSA or only ECDSA signature schemes, so that a
    /// server with both certificates uses that one (rsa, ecdsa, any).
    #[arg(long, value_name = "KIND", default_value = "any", value_parser = warren_bench::tls::Auth::parse)]
    tls_auth: warren_bench::tls::Auth,
}

#[derive(Clone, Copy, ValueEnum)]
enum Action {
    /// Stop the server (SIGTERM): in-flight requests finish first (bounded wait).
    Stop,
    /// Re-read the configuration and restart children without dropping connections (SIGHUP).
    Graceful,
    /// Stop accepting, let every connection finish, then exit (SIGWINCH).
    GracefulStop,
    /// Reopen the log files after rotation, losing no line (SIGUSR1): what logrotate's postrotate calls.
    ReopenLogs,
}

/// `--mpm`: one of the names config's `Mpm` knows, listed in `--help`.
fn mpm_name() -> impl clap::builder::TypedValueParser<Value = Mpm> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Mpm::ALL.map(Mpm::name)).map(|name: String| Mpm::from_name(&name).expect("a name PossibleValuesParser let through"))
}

fn main() -> ExitCode {
    // The ACME helper the parent executed (md_helper.rs): before anything
    // closes the descriptor its brief comes on.
    if let Some(code) = md_helper::run_if_asked() {
        return code;
    }
    // First, while warren has one thread and before it opens anything:
    // the sockets systemd passed are descriptors 3 and on.
    let systemd = warren_mpm::systemd::Systemd::take_from_env();
    close_inherited_descriptors(3 + systemd.activated.len() as libc::c_uint);
    limit_malloc_arenas();
    let cli = Cli::parse();
    let mut warnings = Vec::new();
    let mut skipped = Vec::new();
    let mut scripts = Vec::new();
    if let Some(Command::Bench(args)) = &cli.command {
        return bench_cli::bench(args);
    }
    if let Some(Command::GenerateDocs { dir }) = &cli.command {
        return generate_docs(dir);
    }
    if let Some(Command::Cache { action }) = &cli.command {
        return cache_command(action, &cli.defines);
    }
    if cli.long_version {
        print!("{}", Cli::command().render_version());
        return ExitCode::SUCCESS;
    }
    if cli.show_version {
        print!("{}", apache_cli::version_line());
        return ExitCode::SUCCESS;
    }
    if let Some(file) = &cli.config {
        if let Some(envvars) = envvars::file_for(file) {
            if let Err(e) = envvars::import(&envvars, file) {
                eprintln!("warren: {e} (warning)");
            }
        }
    }
    let settings = match (&cli.command, &cli.config) {
        (Some(Command::Serve { dir, listen, mpm }), _) => {
            let dir = match dir.canonicalize() {
                Ok(d) if d.is_dir() => d,
                _ => {
                    eprintln!("warren: {} is not a directory", dir.display());
                    return ExitCode::FAILURE;
                }
            };
            let mut s = Settings::for_directory(&dir, *listen, *mpm);
            // php-fpm where installed: its children share one opcache.
            let php = match warren_config::pool::find_php_fpm(None).or_else(|| find_on_path("php-cgi")) {
                Some(php) => {
                    s.add_builtin_php_pool(&php);
                    format!("PHP through a pool of {}", php.display())
                }
                None => "no php-fpm or php-cgi installed: .php files are served as they are".to_string(),
            };
            let user = match serve_account(&mut s, &dir, cli.allow_root) {
                Ok(u) => u,
                Err(e) => {
                    eprintln!("warren: {e}");
                    return ExitCode::FAILURE;
                }
            };
            if let Some(e) = warren_config::accounts::check_accounts(&s, cli.allow_root).first() {
                eprintln!("warren: {}", e.message);
                return ExitCode::FAILURE;
            }
            eprintln!("warren: serving {} on http://{listen}/ ({} MPM; {php}{user})", dir.display(), s.mpm.name());
            s
        }
        (None, Some(file)) => {
            let opts = LoadOptions { defines: cli.defines.clone(), mpm_override: cli.mpm };
            // -k only needs the PidFile: a server running with -R must be
            // stoppable without it.
            // -S, -M and -V report; they start nothing as anyone.
            // apache2ctl's -S and -M are `-t -D DUMP_VHOSTS -D DUMP_RUN_CFG`
            // and `-t -D DUMP_MODULES`, which tools (certbot) call as such.
            let dumps = |names: &[&str]| cli.test && cli.defines.iter().any(|d| names.contains(&d.as_str()));
            let dump_vhosts = cli.dump_vhosts || dumps(&["DUMP_VHOSTS", "DUMP_RUN_CFG"]);
            let dump_modules = cli.dump_modules || dumps(&["DUMP_MODULES"]);
            let reports = dump_vhosts || dump_modules || cli.show_build;
            let loaded = if cli.signal.is_some() || reports { load_file(file, &opts) } else { load_checked(file, &opts, cli.allow_root) };
            for w in &loaded.warnings {
                eprintln!("{w} (warning)");
                warnings.push(w.to_string());
            }
            // `<IfModule>` blocks of modules warren lacks: not errors, but
            // lines warren does not act on, so said as well.
            for s in loaded.skipped.iter().chain(&loaded.mapped) {
                eprintln!("{s}");
                skipped.push(s.to_string());
            }
            // Files named as scripts that no handler of warren's runs:
            // answered 500, so said as errors, though Apache loads them.
            for e in &loaded.scripts {
                eprintln!("{e} (error: answered 500)");
                scripts.push(e.to_string());
            }
            for e in &loaded.errors {
                eprintln!("{e}");
            }
            let Some(settings) = loaded.settings else {
                if !(cli.test || reports) {
                    eprintln!("warren: configuration has errors; not starting");
                }
                return ExitCode::FAILURE;
            };
            if reports {
                if dump_vhosts {
                    print!("{}", apache_cli::dump_vhosts(&settings, &cli.defines));
                }
                if dump_modules {
                    print!("{}", apache_cli::dump_modules(settings.mpm, &loaded.loaded_modules));
                }
                if cli.show_build {
                    print!("{}", apache_cli::version_report(Some(&settings), Some(file)));
                }
                return ExitCode::SUCCESS;
            }
            if cli.test {
                // Certificates and keys are read and checked as at start.
                match warren_tls::ServerTls::new(&settings) {
                    Ok(tls) => {
                        for w in tls.iter().flat_map(|t| t.warnings()) {
                            eprintln!("{w} (warning)");
                        }
                    }
                    Err(errors) => {
                        for e in errors {
                            eprintln!("{e}");
                        }
                        return ExitCode::FAILURE;
                    }
                }
                // The files root would write, checked as at start
                // (without creating them).
                let refused = warren_handler::root_files::check_settings(&settings);
                for e in &refused {
                    eprintln!("{e}");
                }
                if !refused.is_empty() {
                    return ExitCode::FAILURE;
                }
                println!("Syntax OK");
                return ExitCode::SUCCESS;
            }
            if let Some(action) = cli.signal {
                return signal_server(settings.pid_file.as_deref(), action);
            }
            settings
        }
        (Some(Command::Bench(_) | Command::GenerateDocs { .. } | Command::Cache { .. }), _) => unreachable!("handled above"),
        (None, None) if cli.show_build => {
            print!("{}", apache_cli::version_report(None, None));
            return ExitCode::SUCCESS;
        }
        (None, None) => {
            eprintln!("warren: give a configuration file (-f FILE) or use `warren serve DIR`; see --help");
            return ExitCode::from(2);
        }
    };
    let reload: Option<warren_mpm::parent::Reload> = match (&cli.command, &cli.config) {
        (None, Some(file)) => {
            let file = file.clone();
            let opts = LoadOptions { defines: cli.defines.clone(), mpm_override: cli.mpm };
            let allow_root = cli.allow_root;
            Some(Box::new(move || {
                let loaded = load_checked(&file, &opts, allow_root);
                match loaded.settings {
                    Some(s) => {
                        // mod_md's helper reads the new configuration too;
                        // none runs (the first MDomain, or it died): forked now.
                        let helper = MD_HELPER.load(std::sync::atomic::Ordering::SeqCst);
                        if helper <= 0 || nix::sys::signal::kill(nix::unistd::Pid::from_raw(helper), nix::sys::signal::Signal::SIGHUP).is_err() {
                            MD_HELPER.store(0, std::sync::atomic::Ordering::SeqCst);
                        }
                        let mut said: Vec<String> = loaded.warnings.iter().chain(&loaded.skipped).chain(&loaded.mapped).chain(&loaded.scripts).map(ToString::to_string).collect();
                        if let Err(e) = start_md_helper(&s, Some(MdReread { file: file.clone(), options: opts.clone(), allow_root })) {
                            said.push(e);
                        }
                        Ok((s, said))
                    }
                    None => Err(loaded.errors.iter().map(ToString::to_string).collect()),
                }
            }))
        }
        _ => None,
    };
    let md_reread = match (&cli.command, &cli.config) {
        (None, Some(file)) => Some(MdReread { file: file.clone(), options: LoadOptions { defines: cli.defines.clone(), mpm_override: cli.mpm }, allow_root: cli.allow_root }),
        _ => None,
    };
    run(settings, &warnings, &skipped, &scripts, reload, md_reread, systemd)
}

use warren_acme::helper::Reread as MdReread;

/// Forks mod_md's ACME helper when `settings` need one (managed domains,
/// OCSP stapling) and none runs: at start, and at the graceful restart
/// that adds the first MDomain. It reads the configuration again with
/// `reread` when the parent's graceful restart has.
fn start_md_helper(settings: &Settings, reread: Option<MdReread>) -> Result<(), String> {
    if MD_HELPER.load(std::sync::atomic::Ordering::SeqCst) > 0 {
        return Ok(());
    }
    let log = warren_acme::helper::LogPlace { file: settings.error_log.clone().filter(|_| settings.error_log_sink.is_none()), origin: settings.main.error_log_origin.clone(), level: settings.log_level };
    let pid = warren_acme::helper::start(settings, log, reread)?;
    MD_HELPER.store(pid.map_or(0, |p| p.as_raw()), std::sync::atomic::Ordering::SeqCst);
    Ok(())
}

/// The ACME helper's pid (0: none), for the graceful restart to tell it.
static MD_HELPER: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// Loads a configuration file, and refuses server children or pools that
/// would run as root without -R, and a pool sharing the server's user with
/// pools of other users: errors that hold only for the user warren runs as,
/// so they are checked here, at start, at -t and at each graceful restart.
fn load_checked(file: &Path, opts: &LoadOptions, allow_root: bool) -> warren_config::Loaded {
    let mut loaded = load_file(file, opts);
    if let Some(settings) = &loaded.settings {
        let errors = warren_config::accounts::check_accounts(settings, allow_root);
        if !errors.is_empty() {
            loaded.errors.extend(errors);
            loaded.settings = None;
        }
    }
    loaded
}

/// `warren serve` started as root runs its children (and its PHP pool) as
/// an unprivileged account, as there is no configuration to name one; -R
/// keeps root. What the start-up line says about it.
fn serve_account(s: &mut Settings, dir: &Path, allow_root: bool) -> Result<String, String> {
    use warren_config::accounts;
    if !accounts::running_as_root() {
        return Ok(String::new());
    }
    if allow_root {
        return Ok("; children run as root (-R)".into());
    }
    let Some(a) = accounts::default_unprivileged_account() else {
        return Err("started as root, and neither www-data nor nobody exists to run the children as; pass -R to run them as root".into());
    };
    s.user = Some(a.name.clone());
    s.group = None;
    if can_read_dir(dir, &a) {
        Ok(format!("; children run as {}", a.name))
    } else {
        Ok(format!("; children run as {}, WHO CANNOT READ {}: make it and the directories above it readable (chmod o+rx), or pass -R to run as root", a.name, dir.display()))
    }
}

/// Whether `a` may list and enter `dir`, asked of the kernel by a child
/// that becomes `a`: permission bits, ACLs and every directory on the way.
fn can_read_dir(dir: &Path, a: &warren_config::accounts::Account) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let (Ok(path), Ok(name)) = (std::ffi::CString::new(dir.as_os_str().as_bytes()), std::ffi::CString::new(a.name.as_str())) else { return false };
    let Ok(groups) = nix::unistd::getgrouplist(&name, a.gid) else { return false };
    let groups: Vec<libc::gid_t> = groups.into_iter().map(nix::unistd::Gid::as_raw).collect();
    // SAFETY: warren has one thread here; the child only makes system calls
    // on values prepared above, then _exit.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => unsafe {
            let ok = libc::setgroups(groups.len(), groups.as_ptr()) == 0
                && libc::setgid(a.gid.as_raw()) == 0
                && libc::setuid(a.uid.as_raw()) == 0
                && libc::access(path.as_ptr(), libc::R_OK | libc::X_OK) == 0;
            libc::_exit(if ok { 0 } else { 1 })
        },
        Ok(nix::unistd::ForkResult::Parent { child }) => matches!(nix::sys::wait::waitpid(child, None), Ok(nix::sys::wait::WaitStatus::Exited(_, 0))),
        // Cannot tell: say nothing rather than warn wrongly.
        Err(_) => true,
    }
}


/// The man page's sections that clap has no word for: where the Debian
/// package puts things, and where to read more.
const MAN_FILES: &str = r".SH FILES
.TP
/etc/warren/warren.conf
The configuration (Apache syntax); your sites go in /etc/warren/conf.d/*.conf.
.TP
/var/log/warren/
access.log and error.log; /etc/logrotate.d/warren rotates them, then runs warren -k reopen-logs.
.TP
/run/warren/warren.pid
The PidFile that -k signals.
.SH SEE ALSO
warren-ctl (apache2ctl's commands), systemctl(1) (start, stop, reload: a graceful restart),
/usr/share/doc/warren/install.md, /usr/share/doc/warren/configuration.md.
";

/// `warren generate-docs DIR`: the man page and completions, generated from
/// [`Cli`] so that they say what this binary takes.
fn generate_docs(dir: &Path) -> ExitCode {
    let write = || -> std::io::Result<()> {
        std::fs::create_dir_all(dir.join("completions"))?;
        let cmd = Cli::command();
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd.clone()).section("8").render(&mut page)?;
        page.extend_from_slice(MAN_FILES.as_bytes());
        std::fs::write(dir.join("warren.8"), page)?;
        for shell in [clap_complete::Shell::Bash, clap_complete::Shell::Zsh, clap_complete::Shell::Fish] {
            clap_complete::generate_to(shell, &mut cmd.clone(), "warren", dir.join("completions"))?;
        }
        Ok(())
    };
    match write() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("warren: {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    }
}

/// The first executable `name` in PATH.
fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// Descriptors above standard error that whoever started warren left open
/// (a shell's redirections, a leaky supervisor) would go on into every
/// server child, which runs as `User` and holds no use for them: warren
/// opens nothing it needs before this, and takes none by inheritance but
/// the sockets of socket activation, below `first`.
fn close_inherited_descriptors(first: libc::c_uint) {
    // SAFETY: closes only descriptors nothing in this process refers to yet.
    unsafe {
        if libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0 as libc::c_uint) != 0 {
            // Kernels before 5.11.
            let highest = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).map_or(1024, |(soft, _)| soft.min(65536));
            for fd in first as libc::c_int..highest as libc::c_int {
                libc::close(fd);
            }
        }
    }
}

/// glibc gives each thread that allocates its own arena (up to 8 per CPU),
/// and an arena keeps what its thread freed: with ThreadsPerChild threads
/// in each child that is megabytes per child. Two arenas are plenty for
/// threads that allocate little, and contend little for them.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a malloc parameter; called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

fn run(settings: Settings, warnings: &[String], skipped: &[String], scripts: &[String], reload: Option<warren_mpm::parent::Reload>, md_reread: Option<MdReread>, mut systemd: warren_mpm::systemd::Systemd) -> ExitCode {
    // CGI programs are started by a process forked now, while warren has
    // one thread (see warren_handler::cgi::spawner).
    if settings.uses_cgi() {
        if let Err(e) = warren_handler::cgi::spawner::start(settings.user.as_deref(), settings.group.as_deref()) {
            eprintln!("warren: cannot start the CGI spawner: {e}");
            return ExitCode::FAILURE;
        }
    }
    // mod_md's ACME client: a process of its own, forked now too.
    if let Err(e) = start_md_helper(&settings, md_reread) {
        eprintln!("warren: {e}");
        return ExitCode::FAILURE;
    }
    // Read as root, before any privilege is dropped: keys may be readable by root only.
    let tls = match warren_tls::ServerTls::new(&settings) {
        Ok(t) => t,
        Err(errors) => {
            for e in errors {
                eprintln!("warren: {e}");
            }
            return ExitCode::FAILURE;
        }
    };
    use warren_mpm::systemd::activation;
    let mut listeners = Vec::new();
    let mut activation_warnings = Vec::new();
    let activated = !systemd.activated.is_empty();
    for addr in &settings.listen {
        let listener = activation::take(&mut systemd.activated, *addr).unwrap_or_else(|| {
            if activated {
                activation_warnings.push(activation::unmatched_listen(*addr));
            }
            warren_mpm::bind(*addr, settings.listen_backlog).map_err(|e| e.to_string())
        });
        match listener {
            Ok(mut l) => {
                l.tls = tls.as_ref().and_then(|t| t.for_listener(*addr));
                l.h2 = Some(settings.h2_listener(*addr)).filter(|h| h.any()).map(std::sync::Arc::new);
                listeners.push(l);
            }
            Err(e) => {
                eprintln!("warren: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    activation_warnings.extend(activation::leftovers(std::mem::take(&mut systemd.activated)));
    let (site, refused_logs) = match Site::new_at_start(settings) {
        Ok((s, refused)) => (Arc::new(s), refused),
        Err(e) => {
            eprintln!("warren: {e}");
            return ExitCode::FAILURE;
        }
    };
    for r in &refused_logs {
        eprintln!("warren: {r}");
        site.error_log.log(warren_config::LogLevel::Error, None, r);
    }
    // Apache logs its corrections of MPM values; so does warren.
    for w in warnings.iter().chain(tls.as_ref().map_or(&[][..], |t| t.warnings())) {
        site.error_log.log(warren_config::LogLevel::Warn, None, w);
    }
    for w in &activation_warnings {
        eprintln!("warren: {w}");
        site.error_log.log(warren_config::LogLevel::Warn, None, w);
    }
    for s in skipped {
        site.error_log.notice(s);
    }
    for s in scripts {
        site.error_log.log(warren_config::LogLevel::Error, None, s);
    }
    // The parent runs warren's own pools through `pool-api`; fpm's manager is the one.
    let parent = match warren_mpm::Parent::new(site, listeners, reload, warren_fpm::Manager::make, warren_serve::child::run) {
        Ok(p) => p.with_systemd(systemd),
        Err(e) => {
            eprintln!("warren: cannot create the scoreboard: {e}");
            return ExitCode::FAILURE;
        }
    };
    ExitCode::from(parent.run() as u8)
}

/// `-k ACTION`: signal the PidFile's process; for the stops, wait for it to go.
fn signal_server(pid_file: Option<&Path>, action: Action) -> ExitCode {
    let Some(pid_file) = pid_file else {
        eprintln!("warren: no PidFile configured");
        return ExitCode::FAILURE;
    };
    // A PidFile another user could have written would have root signal
    // the process of their choice: it is read as root writes it.
    let text = match warren_handler::root_files::open_read(pid_file) {
        Ok(f) => std::io::read_to_string(f).ok(),
        Err(e @ warren_handler::root_files::RootFileError::Refused(_)) => {
            eprintln!("warren: {}", warren_handler::root_files::describe("PidFile", None, pid_file, &e));
            return ExitCode::FAILURE;
        }
        Err(_) => None,
    };
    let pid = match text.and_then(|s| s.trim().parse::<i32>().ok()) {
        Some(p) => nix::unistd::Pid::from_raw(p),
        None => {
            eprintln!("warren: cannot read a pid from {} (is warren running?)", pid_file.display());
            return ExitCode::FAILURE;
        }
    };
    use nix::sys::signal::Signal;
    let (signal, wait) = match action {
        Action::Stop => (Signal::SIGTERM, Some(Duration::from_secs(15))),
        Action::Graceful => (Signal::SIGHUP, None),
        Action::GracefulStop => (Signal::SIGWINCH, None),
        Action::ReopenLogs => (Signal::SIGUSR1, None),
    };
    if let Err(e) = nix::sys::signal::kill(pid, signal) {
        eprintln!("warren: cannot signal pid {pid}: {e} (stale PidFile {}?)", pid_file.display());
        return ExitCode::FAILURE;
    }
    let Some(wait) = wait else { return ExitCode::SUCCESS };
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        if !alive(pid) {
            return ExitCode::SUCCESS;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("warren: pid {pid} did not stop within {wait:?}");
    ExitCode::FAILURE
}

/// Whether a process still runs (a zombie waiting for its parent does not).
fn alive(pid: nix::unistd::Pid) -> bool {
    if nix::sys::signal::kill(pid, None).is_err() {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}
