//! The typed settings a configuration yields, and Apache's defaults for what
//! it leaves out: [`Settings`] is the whole server; [`HostConfig`] is the
//! main server or one `<VirtualHost>`. What sections set is in
//! [`dir_config`](crate::dir_config).

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use warren_regex::Regex;

use crate::backend::ProxyRoute;
use crate::dir_config::{DirConfig, DirSection, Handler, OptionFlags, OptionsSpec, Require, SectionMatch};
use crate::log_format::LogItem;
use crate::mpm::{Mpm, MpmTuning};
use crate::parse::Origin;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub request_line: usize,
    pub field_size: usize,
    pub fields: usize,
    pub head: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { request_line: 8190, field_size: 8190, fields: 100, head: 64 * 1024 }
    }
}

/// One stage of `RequestReadTimeout` (mod_reqtimeout):
/// `timeout[-maxtimeout][,MinRate=rate]`, in seconds and bytes a second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadStage {
    /// 0: no limit for the stage (only Timeout applies).
    pub initial: u32,
    /// 0: no maximum.
    pub max: u32,
    /// 0: the timeout is not raised as data comes.
    pub min_rate: u32,
}

/// `RequestReadTimeout`: how long a request's head and body may take to
/// arrive. TLS handshakes (`handshake=`) are not timed: warren has no TLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestReadTimeout {
    pub header: ReadStage,
    pub body: ReadStage,
}

impl Default for RequestReadTimeout {
    /// Apache's: `header=20-40,MinRate=500 body=20,MinRate=500`.
    fn default() -> Self {
        RequestReadTimeout {
            header: ReadStage { initial: 20, max: 40, min_rate: 500 },
            body: ReadStage { initial: 20, max: 0, min_rate: 500 },
        }
    }
}


#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerTokens {
    Full,
    Os,
    Minimal,
    Minor,
    Major,
    Prod,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum LogLevel {
    Emerg,
    Alert,
    Crit,
    Error,
    Warn,
    Notice,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    /// Apache's numbering, syslog's severities up to debug (7): emerg 0,
    /// alert 1 ... debug 7, trace 8; the order of the variants.
    pub fn number(self) -> u8 {
        self as u8
    }

    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Emerg => "emerg",
            LogLevel::Alert => "alert",
            LogLevel::Crit => "crit",
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Notice => "notice",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}


#[derive(Clone, Debug)]
pub struct CustomLog {
    /// The file; for a piped log, the argument as written (`|program`).
    pub path: PathBuf,
    /// The program a piped log (`CustomLog "|program" ...`) writes to.
    pub pipe: Option<crate::log_target::PipedProgram>,
    pub format: Vec<LogItem>,
    /// `env=VAR` (`env=!VAR`): only requests whose environment has (has
    /// not) the variable are logged.
    pub env_condition: Option<(String, bool)>,
    /// `CustomLog` or `TransferLog`, and where: for the messages that
    /// refuse the file (see warren_handler::root_files).
    pub directive: &'static str,
    pub origin: Option<Origin>,
}

/// The main server or one virtual host.
#[derive(Clone, Debug, Default)]
pub struct HostConfig {
    pub server_name: Option<String>,
    /// The pool the host's mpm-itk, suexec or mod_fcgid lines map to (see
    /// [`crate::fcgid`]): it runs scripts only where `Options ExecCGI` is on.
    pub fcgid_pool: Option<String>,
    /// The pool mod_php's lines send the host's PHP to (see [`crate::mod_php`]).
    pub php_pool: Option<crate::mod_php::PhpPool>,
    /// The port ServerName gives, which self-referential URLs use when the
    /// client's Host names none (Apache's UseCanonicalName Off).
    pub server_port: Option<u16>,
    pub aliases: Vec<String>,
    pub document_root: PathBuf,
    pub custom_logs: Vec<CustomLog>,
    pub error_log: Option<PathBuf>,
    /// `ErrorLog "|program"` or `ErrorLog syslog[:facility]` (error_log is then None).
    pub error_log_sink: Option<crate::log_target::LogSink>,
    /// Where ErrorLog was set, for the messages that refuse its file.
    pub error_log_origin: Option<Origin>,
    pub server_admin: Option<String>,
    pub dir: DirConfig,
    pub sections: Vec<DirSection>,
    /// ProxyPass and ProxyPassMatch, in config order (the first match wins).
    pub proxy_routes: Vec<ProxyRoute>,
    /// ProxyTimeout (None: Timeout).
    pub proxy_timeout: Option<Duration>,
    /// ProxyPassReverse, ProxyPreserveHost, ProxyVia... (mod_proxy_http).
    pub proxy_http: crate::proxy_http::ProxyHttp,
    /// Alias, AliasMatch, Redirect and RedirectMatch, in config order (a
    /// virtual host's first, then the main server's).
    pub url_aliases: Vec<crate::alias::UrlAlias>,
    /// AccessFileName (None: `.htaccess`).
    pub access_file_names: Option<Vec<String>>,
    /// mod_remoteip: the client's address behind proxies.
    pub remote_ip: crate::remote_ip::RemoteIp,
    /// mod_ssl's lines written for this host, unmerged.
    pub ssl: crate::tls::TlsDirectives,
    /// Its TLS settings, merged with the main server's: Some exactly when
    /// `SSLEngine on` holds for it.
    pub tls: Option<crate::tls::TlsHost>,
    /// `Protocols` and mod_http2's lines written for this host, unmerged.
    pub http2: crate::h2::H2Directives,
    /// `Protocols` and `ProtocolsHonorOrder` in force for it (a virtual
    /// host's own, else the main server's; Apache's `http/1.1` if none).
    pub protocols: crate::h2::Protocols,
    /// Its HTTP/2 settings, merged with the main server's. A listener's
    /// connections use its default host's: [`Settings::h2_listener`].
    pub h2: crate::h2::H2Settings,
    /// mod_vhost_alias: roots interpolated from the request's host.
    pub vhost_alias: crate::mass::VhostAlias,
    /// mod_userdir: `/~user/` (None: no UserDir line).
    pub user_dir: Option<crate::mass::UserDir>,
    /// mod_cache's lines, the main server's merged in (crate::cache).
    pub cache: crate::cache::CacheDirectives,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VhostAddr {
    /// None for `*` / `_default_`.
    pub ip: Option<IpAddr>,
    /// None for `*` or no port.
    pub port: Option<u16>,
}

impl VhostAddr {
    /// Whether a virtual host at this address takes connections to `local`.
    pub fn takes(&self, local: std::net::SocketAddr) -> bool {
        self.ip.is_none_or(|ip| ip == local.ip() || ip.is_unspecified()) && self.port.is_none_or(|p| p == local.port())
    }
}

#[derive(Clone, Debug)]
pub struct VirtualHost {
    pub addrs: Vec<VhostAddr>,
    pub host: HostConfig,
    pub origin: Origin,
    /// Its own mpm-itk, suexec or mod_fcgid lines, until the build maps
    /// them onto a pool (see [`crate::fcgid`]).
    pub per_user: Option<crate::fcgid::PerUser>,
}

#[derive(Clone, Debug)]
pub struct Settings {
    pub server_root: PathBuf,
    pub mpm: Mpm,
    pub tuning: MpmTuning,
    /// Every listener (plain and TLS).
    pub listen: Vec<SocketAddr>,
    /// The listeners `Listen ... https` named (see also
    /// [`Settings::tls_listener`]).
    pub https_listen: Vec<SocketAddr>,
    /// mod_ssl's server-wide settings.
    pub tls: crate::tls::TlsGlobal,
    /// mod_md: the managed domains and their settings.
    pub md: crate::md::MdGlobal,
    pub pid_file: Option<PathBuf>,
    /// Where PidFile was set (None: the default), for the messages that
    /// refuse its file.
    pub pid_file_origin: Option<Origin>,
    pub user: Option<String>,
    pub group: Option<String>,
    /// Where `User` and `Group` were set, for errors about the accounts.
    pub user_origin: Option<Origin>,
    pub group_origin: Option<Origin>,
    /// The configuration file (line 0), for errors about what it leaves
    /// out; None for `warren serve`.
    pub config_origin: Option<Origin>,
    pub timeout: Duration,
    pub keep_alive: bool,
    pub keep_alive_timeout: Duration,
    pub max_keep_alive_requests: u32,
    pub limits: Limits,
    /// RequestReadTimeout: heads and bodies that arrive too slowly get 408.
    pub request_read_timeout: RequestReadTimeout,
    pub server_tokens: ServerTokens,
    pub server_signature: bool,
    /// TraceEnable Off: every TRACE is answered 405, the applications'
    /// too; On (the default) hands TRACE to applications and answers 405
    /// for static resources, as warren never echoes a request.
    pub trace_enable: bool,
    pub log_level: LogLevel,
    /// None: standard error (or error_log_sink).
    pub error_log: Option<PathBuf>,
    /// The main server's ErrorLog when it is a program or syslog.
    pub error_log_sink: Option<crate::log_target::LogSink>,
    /// ErrorLogFormat (None: warren's `[time] [level] [pid N] [client ip:port] message`).
    pub error_log_format: Option<Vec<crate::error_log_format::ErrorLogItem>>,
    /// SyslogSocket: where `ErrorLog syslog` sends (/dev/log, which rsyslog
    /// and systemd-journald both read).
    pub syslog_socket: PathBuf,
    /// BufferedLogs: access lines are batched per thread and written at
    /// least every 250 ms and at stop (On, warren's default), or each as its
    /// request ends (Off).
    pub buffered_logs: bool,
    pub types_config: Option<PathBuf>,
    /// ExtendedStatus: per-worker details on the server-status page.
    pub extended_status: bool,
    /// GracefulShutdownTimeout: how long a graceful stop waits (None: no limit).
    pub graceful_shutdown_timeout: Option<Duration>,
    /// ListenBacklog: the length of each listening socket's queue.
    pub listen_backlog: u32,
    /// MemoryBudget: the memory warren and its pools may use, in bytes,
    /// which sizes pools with `pm.max_children auto` (None: the cgroup's
    /// limit, else the machine's memory).
    pub memory_budget: Option<u64>,
    /// mod_cgi's server-wide settings (ScriptLog...).
    pub cgi: crate::cgi::CgiSettings,
    /// Every `<Pool>`, of the main server and the virtual hosts (names are global).
    pub pools: Vec<crate::pool::PoolConfig>,
    /// `<Proxy balancer://...>`: server-wide, named by any host's ProxyPass.
    pub balancers: Vec<crate::balancer::Balancer>,
    pub main: HostConfig,
    pub virtual_hosts: Vec<VirtualHost>,
}

impl Settings {
    /// Apache's compiled-in defaults: what a configuration file starts from.
    pub fn apache_defaults(server_root: &Path, mpm: Mpm) -> Settings {
        Settings {
            server_root: server_root.to_path_buf(),
            mpm,
            tuning: MpmTuning::apache_defaults(mpm),
            listen: Vec::new(),
            https_listen: Vec::new(),
            tls: crate::tls::TlsGlobal::default(),
            md: crate::md::MdGlobal::default(),
            pid_file: Some(server_root.join("warren.pid")),
            pid_file_origin: None,
            user: None,
            group: None,
            user_origin: None,
            group_origin: None,
            config_origin: None,
            timeout: Duration::from_secs(60),
            keep_alive: true,
            keep_alive_timeout: Duration::from_secs(5),
            max_keep_alive_requests: 100,
            limits: Limits::default(),
            request_read_timeout: RequestReadTimeout::default(),
            server_tokens: ServerTokens::Full,
            server_signature: false,
            trace_enable: true,
            log_level: LogLevel::Warn,
            error_log: None,
            error_log_sink: None,
            error_log_format: None,
            syslog_socket: PathBuf::from("/dev/log"),
            buffered_logs: true,
            types_config: None,
            extended_status: false,
            graceful_shutdown_timeout: None,
            memory_budget: None,
            // Apache's default is 511. Ours is larger because listeners use
            // TCP_DEFER_ACCEPT: a connection waiting for its first bytes
            // holds a place too, and a burst of a thousand clients (ab -c
            // 1000) overflows 511 and costs the overflowed a retransmission.
            listen_backlog: 4096,
            cgi: crate::cgi::CgiSettings::default(),
            pools: Vec::new(),
            balancers: Vec::new(),
            main: HostConfig {
                document_root: PathBuf::from("/var/www/html"),
                dir: DirConfig {
                    options: vec![OptionsSpec::Set(OptionFlags::DEFAULT)],
                    directory_index: Some(vec!["index.html".into()]),
                    ..DirConfig::default()
                },
                ..HostConfig::default()
            },
            virtual_hosts: Vec::new(),
        }
    }

    /// The built-in defaults `warren serve DIR` starts from: no config file,
    /// every file under DIR readable, directory listings on, one child per CPU.
    /// `warren serve`'s PHP: a pool "php" running `php` (php-fpm, or
    /// php-cgi; php-fpm's defaults: dynamic, at most 5 children) for
    /// `*.php`, and `index.php` first among the directory indexes.
    pub fn add_builtin_php_pool(&mut self, php: &Path) {
        let origin = Origin { file: std::sync::Arc::new(PathBuf::from("(warren serve)")), line: 0 };
        self.pools.push(crate::pool::PoolConfig::new("php", vec![php.to_string_lossy().into_owned()], origin.clone()));
        let config = DirConfig { handler: Some(Some(Handler::Pool("php".into()))), ..DirConfig::default() };
        let matcher = SectionMatch::FilesMatch(Regex::new(r"\.php$").expect("a valid regex"));
        self.main.sections.push(DirSection { matcher, within: None, config, origin });
        self.main.dir.directory_index = Some(vec!["index.php".into(), "index.html".into()]);
    }

    pub fn for_directory(dir: &Path, listen: SocketAddr, mpm: Mpm) -> Settings {
        let mut s = Settings::apache_defaults(dir, mpm);
        s.listen = vec![listen];
        s.pid_file = None;
        s.main.document_root = dir.to_path_buf();
        s.main.dir.options = vec![OptionsSpec::Set(OptionFlags { indexes: true, ..OptionFlags::DEFAULT })];
        s.main.dir.require = Some(vec![Require::All(true)]);
        if mpm != Mpm::Prefork {
            // One child per CPU, with Debian's spare-thread bounds around them.
            let cpus = std::thread::available_parallelism().map_or(2, |n| n.get() as u32);
            let t = &mut s.tuning;
            t.start_servers = cpus.clamp(1, t.server_limit);
            t.min_spare_threads = 25;
            t.max_spare_threads = t.threads_per_child * t.start_servers + 25;
        }
        s
    }

    /// Whether the configuration names CGI programs (a ScriptAlias, or
    /// `cgi-script` on a line of it or of its sections): then warren starts
    /// its spawner at start. A `cgi-script` line in an `.htaccess` file alone
    /// does not (it is answered 503 until a restart with one).
    pub fn uses_cgi(&self) -> bool {
        let names_programs = |h: &HostConfig| h.url_aliases.iter().any(|a| a.script) || h.dir.scripts.iter().chain(h.sections.iter().flat_map(|s| s.config.scripts.iter())).any(|m| m.cgi);
        self.cgi.module_loaded || std::iter::once(&self.main).chain(self.virtual_hosts.iter().map(|v| &v.host)).any(names_programs)
    }
}

/// One `stage=value` of RequestReadTimeout's value, as mod_reqtimeout reads
/// it: `20`, `20,MinRate=500`, `20-40,MinRate=500` (a range needs MinRate).
pub fn parse_read_stage(value: &str) -> Result<ReadStage, String> {
    let int = |v: &str| -> Result<u32, String> {
        if v.is_empty() {
            return Err("a number is missing".into());
        }
        v.parse::<u32>().map_err(|_| format!("'{v}' is not a whole number"))
    };
    let lower = value.to_ascii_lowercase();
    let mut stage = ReadStage { initial: 0, max: 0, min_rate: 0 };
    match lower.find(",minrate=") {
        Some(at) => {
            stage.min_rate = int(&value[at + ",minrate=".len()..])?;
            if stage.min_rate == 0 {
                return Err("minimum data rate must be larger than 0".into());
            }
            let times = &value[..at];
            match times.split_once('-') {
                Some((initial, max)) => {
                    stage.initial = int(initial)?;
                    stage.max = int(max)?;
                }
                None => stage.initial = int(times)?,
            }
        }
        None if value.contains('-') => return Err("MinRate must be set to use a timeout range".into()),
        None => stage.initial = int(value)?,
    }
    if stage.max > 0 && stage.initial >= stage.max {
        return Err("maximum timeout must be larger than initial timeout".into());
    }
    Ok(stage)
}

pub(crate) fn parse_vhost_addr(a: &str) -> Result<VhostAddr, String> {
    let (host, port) = if let Some(rest) = a.strip_prefix('[') {
        let (h, p) = rest.split_once(']').ok_or_else(|| format!("bad address {a}"))?;
        (h, p.strip_prefix(':'))
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (a, None),
        }
    };
    let port = match port {
        None | Some("*") => None,
        Some(p) => Some(p.parse::<u16>().map_err(|_| format!("<VirtualHost {a}>: bad port '{p}'"))?),
    };
    let ip = match host {
        "*" | "_default_" => None,
        h => match h.parse::<IpAddr>() {
            Ok(ip) => Some(ip),
            Err(_) => match (h, 0).to_socket_addrs().ok().and_then(|mut i| i.next()) {
                Some(sa) => Some(sa.ip()),
                None => return Err(format!("<VirtualHost {a}>: cannot resolve '{h}'")),
            },
        },
    };
    Ok(VhostAddr { ip, port })
}

/// `LogLevel`'s value: a level name, `trace1` to `trace8` all meaning trace.
pub(crate) fn parse_log_level(s: &str) -> Option<LogLevel> {
    Some(match s.to_ascii_lowercase().as_str() {
        "emerg" => LogLevel::Emerg,
        "alert" => LogLevel::Alert,
        "crit" => LogLevel::Crit,
        "error" => LogLevel::Error,
        "warn" => LogLevel::Warn,
        "notice" => LogLevel::Notice,
        "info" => LogLevel::Info,
        "debug" => LogLevel::Debug,
        t if t.starts_with("trace") && t[5..].parse::<u8>().is_ok_and(|n| (1..=8).contains(&n)) => LogLevel::Trace,
        _ => return None,
    })
}
