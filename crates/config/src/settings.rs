//! Raw directives -> validated, typed settings.
//!
//! `Settings` is the whole server; `HostConfig` is the main server or one
//! `<VirtualHost>`; `DirConfig` is what `<Directory>`, `<Files>`,
//! `<Location>` and their regex forms can set, merged per request by the
//! handler. Every directive is checked for its context, its arguments and its
//! values; all problems are collected, each with file and line.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;

use crate::log_format::{self, LogItem};
use crate::parse::{ConfigError, Directive, Node, Origin, Reader, Section};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mpm {
    Event,
    Worker,
    Prefork,
}

impl Mpm {
    pub fn from_module(name: &str) -> Option<Mpm> {
        match name {
            "mpm_event_module" => Some(Mpm::Event),
            "mpm_worker_module" => Some(Mpm::Worker),
            "mpm_prefork_module" => Some(Mpm::Prefork),
            _ => None,
        }
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
                min_spare_threads: 75,
                max_spare_threads: 250,
                min_spare_servers: 0,
                max_spare_servers: 0,
                max_connections_per_child: 0,
                max_child_connections: 4096,
            },
        }
    }
}

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerTokens {
    Full,
    Os,
    Minimal,
    Minor,
    Major,
    Prod,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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

    fn parse(s: &str) -> Option<LogLevel> {
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
}

/// The `Options` flags warren implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionFlags {
    pub indexes: bool,
    pub follow_symlinks: bool,
    /// Follow a link only when it and its target have the same owner. As in
    /// Apache it wins over `follow_symlinks` when both are on.
    pub symlinks_if_owner_match: bool,
}

impl OptionFlags {
    /// What applies where no `Options` says otherwise (Apache 2.4's default).
    pub const DEFAULT: OptionFlags = OptionFlags { indexes: false, follow_symlinks: true, symlinks_if_owner_match: false };
    const NONE: OptionFlags = OptionFlags { indexes: false, follow_symlinks: false, symlinks_if_owner_match: false };

    fn or(self, o: OptionFlags) -> OptionFlags {
        OptionFlags {
            indexes: self.indexes || o.indexes,
            follow_symlinks: self.follow_symlinks || o.follow_symlinks,
            symlinks_if_owner_match: self.symlinks_if_owner_match || o.symlinks_if_owner_match,
        }
    }
    fn minus(self, o: OptionFlags) -> OptionFlags {
        OptionFlags {
            indexes: self.indexes && !o.indexes,
            follow_symlinks: self.follow_symlinks && !o.follow_symlinks,
            symlinks_if_owner_match: self.symlinks_if_owner_match && !o.symlinks_if_owner_match,
        }
    }
}

/// `Options A B` replaces what is inherited; `Options +A -B` edits it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionsSpec {
    Set(OptionFlags),
    Edit { add: OptionFlags, remove: OptionFlags },
}

impl OptionsSpec {
    pub fn apply(self, inherited: OptionFlags) -> OptionFlags {
        match self {
            OptionsSpec::Set(f) => f,
            OptionsSpec::Edit { add, remove } => inherited.or(add).minus(remove),
        }
    }
}

/// One `Require` line. Several in one section mean "any of them" (Apache's
/// implicit `<RequireAny>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Require {
    All(bool),
    /// `Require ip` with (network, prefix length) pairs.
    Ip(Vec<(IpAddr, u8)>),
    /// `Require local`: loopback, or the client and server addresses are equal.
    Local,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorDocument {
    /// A local URL, served with the original status (an internal redirect).
    Local(String),
    /// A full URL: the client is redirected there.
    Redirect(String),
    /// Literal text sent as the body.
    Text(String),
    /// `ErrorDocument 404 default`: back to the built-in page.
    Default,
}

/// Settings that can be given per directory, file or location. `None` means
/// "not set here, inherit".
#[derive(Clone, Debug, Default)]
pub struct DirConfig {
    pub options: Vec<OptionsSpec>,
    pub require: Option<Vec<Require>>,
    pub directory_index: Option<Vec<String>>,
    pub error_documents: Vec<(u16, ErrorDocument)>,
    /// (extension without dot, lower case; MIME type)
    pub add_types: Vec<(String, String)>,
    pub add_default_charset: Option<Option<String>>,
    pub limit_request_body: Option<u64>,
    /// `SetHandler name` (`None` resets to the default file handler).
    pub handler: Option<Option<Handler>>,
    /// `ProxyFCGIBackendType`.
    pub fcgi_backend_type: Option<FcgiBackendType>,
    /// `AcceptPathInfo`: None for Default (handlers decide).
    pub accept_path_info: Option<Option<bool>>,
}

/// What `SetHandler` can name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Handler {
    ServerStatus,
    /// `proxy:unix:/path|fcgi://localhost` or `proxy:fcgi://host:port`:
    /// the file the request maps to is the script, run by this backend.
    FastCgi(FcgiBackend),
    /// `pool:NAME`: the script runs in one of warren's own pools.
    Pool(String),
}

/// Where a FastCGI application listens.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FcgiAddr {
    Unix(PathBuf),
    Tcp { host: String, port: u16 },
    /// One of warren's own `<Pool>`s: a child is leased for each request.
    Pool(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FcgiBackend {
    pub addr: FcgiAddr,
    /// `enablereuse=on`: keep connections open between requests
    /// (FCGI_KEEP_CONN). Off by default as in Apache: a php-fpm child stays
    /// tied to a kept connection, so more kept connections than children
    /// would starve the pool.
    pub reuse: bool,
    /// `timeout=N` on the ProxyPass line; else ProxyTimeout.
    pub timeout: Option<Duration>,
    /// `flushpackets=on` (or `auto`): the answer goes to the client as the
    /// application writes it, at the client's pace. Off by default: the
    /// answer is read at the application's pace, whatever does not fit the
    /// client's socket held in memory and then a temporary file, so that a
    /// slow client never holds the application.
    pub flush_packets: bool,
}

/// `ProxyFCGIBackendType`: FPM (php-fpm splits PATH_INFO off a
/// SCRIPT_FILENAME it cannot find) or GENERIC (the script path is sent
/// exactly as mapped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FcgiBackendType {
    Fpm,
    Generic,
}

/// A `ProxyPass` or `ProxyPassMatch` line.
#[derive(Clone, Debug)]
pub struct ProxyRoute {
    pub pattern: ProxyPattern,
    /// None for `ProxyPass /path !` (not proxied).
    pub target: Option<ProxyTarget>,
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub enum ProxyPattern {
    Prefix(String),
    Regex(Regex),
}

#[derive(Clone, Debug)]
pub struct ProxyTarget {
    pub backend: FcgiBackend,
    /// The path part of the `fcgi://` URL: the script's path on the backend,
    /// with `$1`..`$9` for ProxyPassMatch's groups.
    pub path: String,
}

impl DirConfig {
    /// Layers `over` on top of `self` (later sections win).
    pub fn merge(&mut self, over: &DirConfig) {
        self.options.extend(over.options.iter().copied());
        if over.require.is_some() {
            self.require.clone_from(&over.require);
        }
        if over.directory_index.is_some() {
            self.directory_index.clone_from(&over.directory_index);
        }
        self.error_documents.extend(over.error_documents.iter().cloned());
        self.add_types.extend(over.add_types.iter().cloned());
        if over.add_default_charset.is_some() {
            self.add_default_charset.clone_from(&over.add_default_charset);
        }
        if over.limit_request_body.is_some() {
            self.limit_request_body = over.limit_request_body;
        }
        if over.handler.is_some() {
            self.handler.clone_from(&over.handler);
        }
        if over.fcgi_backend_type.is_some() {
            self.fcgi_backend_type = over.fcgi_backend_type;
        }
        if over.accept_path_info.is_some() {
            self.accept_path_info = over.accept_path_info;
        }
    }
}

#[derive(Clone, Debug)]
pub enum SectionMatch {
    /// `<Directory /path>` (a glob pattern when it has wildcards).
    Directory(String),
    DirectoryMatch(Regex),
    Files(String),
    FilesMatch(Regex),
    Location(String),
    LocationMatch(Regex),
}

#[derive(Clone, Debug)]
pub struct DirSection {
    pub matcher: SectionMatch,
    /// For `<Files>` nested in a `<Directory>`: that directory.
    pub within: Option<Box<SectionMatch>>,
    pub config: DirConfig,
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub struct CustomLog {
    pub path: PathBuf,
    pub format: Vec<LogItem>,
}

/// The main server or one virtual host.
#[derive(Clone, Debug, Default)]
pub struct HostConfig {
    pub server_name: Option<String>,
    pub aliases: Vec<String>,
    pub document_root: PathBuf,
    pub custom_logs: Vec<CustomLog>,
    pub error_log: Option<PathBuf>,
    pub server_admin: Option<String>,
    pub dir: DirConfig,
    pub sections: Vec<DirSection>,
    /// ProxyPass and ProxyPassMatch, in config order (the first match wins).
    pub proxy_routes: Vec<ProxyRoute>,
    /// ProxyTimeout (None: Timeout).
    pub proxy_timeout: Option<Duration>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VhostAddr {
    /// None for `*` / `_default_`.
    pub ip: Option<IpAddr>,
    /// None for `*` or no port.
    pub port: Option<u16>,
}

#[derive(Clone, Debug)]
pub struct VirtualHost {
    pub addrs: Vec<VhostAddr>,
    pub host: HostConfig,
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub struct Settings {
    pub server_root: PathBuf,
    pub mpm: Mpm,
    pub tuning: MpmTuning,
    pub listen: Vec<SocketAddr>,
    pub pid_file: Option<PathBuf>,
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
    pub log_level: LogLevel,
    /// None: standard error.
    pub error_log: Option<PathBuf>,
    pub types_config: Option<PathBuf>,
    /// ExtendedStatus: per-worker details on the server-status page.
    pub extended_status: bool,
    /// GracefulShutdownTimeout: how long a graceful stop waits (None: no limit).
    pub graceful_shutdown_timeout: Option<Duration>,
    /// ListenBacklog: the length of each listening socket's queue.
    pub listen_backlog: u32,
    /// Every `<Pool>`, of the main server and the virtual hosts (names are global).
    pub pools: Vec<crate::pool::PoolConfig>,
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
            pid_file: Some(server_root.join("warren.pid")),
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
            log_level: LogLevel::Warn,
            error_log: None,
            types_config: None,
            extended_status: false,
            graceful_shutdown_timeout: None,
            // Apache's default is 511. Ours is larger because listeners use
            // TCP_DEFER_ACCEPT: a connection waiting for its first bytes
            // holds a place too, and a burst of a thousand clients (ab -c
            // 1000) overflows 511 and costs the overflowed a retransmission.
            listen_backlog: 4096,
            pools: Vec::new(),
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
    /// `warren serve`'s PHP: a pool "php" running `php_cgi` (php-fpm's
    /// defaults: dynamic, at most 5 children) for `*.php`, and `index.php`
    /// first among the directory indexes.
    pub fn add_builtin_php_pool(&mut self, php_cgi: &Path) {
        let origin = Origin { file: std::sync::Arc::new(PathBuf::from("(warren serve)")), line: 0 };
        self.pools.push(crate::pool::PoolConfig::new("php", vec![php_cgi.to_string_lossy().into_owned()], origin.clone()));
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
}

/// Options for reading a config file, from the command line.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    pub defines: Vec<String>,
    pub mpm_override: Option<Mpm>,
}

/// Warnings are corrections Apache would also make (and log); errors stop the
/// server from starting.
#[derive(Debug, Default)]
pub struct Loaded {
    pub settings: Option<Settings>,
    pub warnings: Vec<ConfigError>,
    pub errors: Vec<ConfigError>,
}

pub fn load_file(path: &Path, opts: &LoadOptions) -> Loaded {
    load(path, opts, |reader, path| reader.read_file(path, None))
}

/// [`load_file`] for text already in memory, as if read from `path` (which
/// names it in errors and whose directory is the ServerRoot): the fuzz
/// targets parse configurations without writing each to a file.
pub fn load_text(text: &str, path: &Path, opts: &LoadOptions) -> Loaded {
    load(path, opts, |reader, path| reader.read_text(text, std::sync::Arc::new(path.to_path_buf())))
}

fn load(path: &Path, opts: &LoadOptions, read: impl FnOnce(&mut Reader, &Path) -> Vec<Node>) -> Loaded {
    let path = match std::path::absolute(path) {
        Ok(p) => p,
        Err(_) => path.to_path_buf(),
    };
    let root = path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("/"));
    let mut reader = Reader::new(root);
    for d in &opts.defines {
        reader.defines.insert(d.clone(), None);
    }
    reader.mpm_override = opts.mpm_override.map(|m| m.module().to_string());
    let nodes = read(&mut reader, &path);
    let mpm = Mpm::from_module(reader.mpm()).unwrap_or(Mpm::Event);
    let mut builder = Builder::new(&reader, mpm, &path);
    builder.errors.append(&mut reader.errors);
    builder.build(&nodes)
}

/// Where a directive appears, for context checks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ctx {
    Server,
    VirtualHost,
    Directory,
    Files,
    Location,
}

struct Builder {
    server_root: PathBuf,
    mpm: Mpm,
    errors: Vec<ConfigError>,
    warnings: Vec<ConfigError>,
    log_formats: HashMap<String, Vec<LogItem>>,
    default_format: Vec<LogItem>,
    config_file: PathBuf,
    pools: Vec<crate::pool::PoolConfig>,
    /// `SetHandler pool:NAME` lines, checked once every pool is known.
    pool_refs: Vec<(String, Origin)>,
}

fn err(errors: &mut Vec<ConfigError>, origin: &Origin, message: impl Into<String>) {
    errors.push(ConfigError { origin: origin.clone(), message: message.into() });
}

impl Builder {
    fn new(reader: &Reader, mpm: Mpm, config_file: &Path) -> Builder {
        let mut log_formats = HashMap::new();
        for (name, fmt) in log_format::PREDEFINED {
            log_formats.insert(name.to_string(), log_format::compile(fmt).expect("built-in log format"));
        }
        Builder {
            server_root: reader.server_root.clone(),
            mpm,
            errors: Vec::new(),
            warnings: Vec::new(),
            log_formats,
            default_format: log_format::compile(log_format::COMMON).expect("built-in log format"),
            config_file: config_file.to_path_buf(),
            pools: Vec::new(),
            pool_refs: Vec::new(),
        }
    }

    fn error(&mut self, origin: &Origin, message: impl Into<String>) {
        err(&mut self.errors, origin, message);
    }

    fn warn(&mut self, origin: &Origin, message: impl Into<String>) {
        err(&mut self.warnings, origin, message);
    }

    fn resolve(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.server_root.join(p)
        }
    }

    fn build(mut self, nodes: &[Node]) -> Loaded {
        // LogFormat nicknames are global and may be used before they appear.
        self.collect_log_formats(nodes);

        let mut s = Settings::apache_defaults(&self.server_root, self.mpm);
        s.config_origin = Some(Origin { file: std::sync::Arc::new(self.config_file.clone()), line: 0 });
        let mut tuning_set: Vec<(&'static str, Origin)> = Vec::new();
        let mut document_root_origin = None;

        for node in nodes {
            match node {
                Node::Section(sec) if sec.name.eq_ignore_ascii_case("VirtualHost") => {
                    if let Some(vh) = self.virtual_host(sec) {
                        s.virtual_hosts.push(vh);
                    }
                }
                Node::Section(sec) if sec.name.eq_ignore_ascii_case("Pool") => self.pool(sec),
                Node::Section(sec) => {
                    let sections = self.dir_section(sec, Ctx::Server, None);
                    s.main.sections.extend(sections);
                }
                Node::Directive(d) => {
                    if d.name.eq_ignore_ascii_case("DocumentRoot") {
                        document_root_origin = Some(d.origin.clone());
                    }
                    if self.host_directive(d, &mut s.main, Ctx::Server) {
                        continue;
                    }
                    self.server_directive(d, &mut s, &mut tuning_set);
                }
            }
        }

        if s.listen.is_empty() {
            let origin = Origin { file: std::sync::Arc::new(self.config_file.clone()), line: 0 };
            self.error(&origin, "no Listen directive: warren would not listen anywhere (add e.g. `Listen 80`)");
        }
        self.check_document_root(&s.main.document_root, document_root_origin.as_ref());
        self.correct_tuning(&mut s.tuning, &tuning_set);

        // Virtual hosts inherit what the main server sets and they don't.
        for vh in &mut s.virtual_hosts {
            let mut dir = s.main.dir.clone();
            dir.merge(&vh.host.dir);
            vh.host.dir = dir;
            let mut sections = s.main.sections.clone();
            sections.append(&mut vh.host.sections);
            vh.host.sections = sections;
            if vh.host.custom_logs.is_empty() {
                vh.host.custom_logs = s.main.custom_logs.clone();
            }
            if vh.host.error_log.is_none() {
                vh.host.error_log = s.main.error_log.clone();
            }
            if vh.host.server_admin.is_none() {
                vh.host.server_admin = s.main.server_admin.clone();
            }
            vh.host.proxy_routes.extend(s.main.proxy_routes.iter().cloned());
            if vh.host.proxy_timeout.is_none() {
                vh.host.proxy_timeout = s.main.proxy_timeout;
            }
        }
        s.error_log = s.main.error_log.clone();
        for (name, origin) in std::mem::take(&mut self.pool_refs) {
            if !self.pools.iter().any(|p| p.name == name) {
                self.error(&origin, format!("SetHandler pool:{name}: no <Pool {name}> is defined"));
            }
        }
        s.pools = std::mem::take(&mut self.pools);

        Loaded {
            settings: if self.errors.is_empty() { Some(s) } else { None },
            warnings: self.warnings,
            errors: self.errors,
        }
    }

    fn check_document_root(&mut self, root: &Path, origin: Option<&Origin>) {
        if !root.is_dir() {
            let origin = origin.cloned().unwrap_or(Origin { file: std::sync::Arc::new(self.config_file.clone()), line: 0 });
            self.error(&origin, format!("DocumentRoot {} is not a directory", root.display()));
        }
    }

    fn collect_log_formats(&mut self, nodes: &[Node]) {
        for node in nodes {
            match node {
                Node::Directive(d) if d.name.eq_ignore_ascii_case("LogFormat") => match d.args.as_slice() {
                    [fmt] => match log_format::compile(fmt) {
                        Ok(items) => self.default_format = items,
                        Err(m) => self.error(&d.origin, m),
                    },
                    [fmt, nick] => match log_format::compile(fmt) {
                        Ok(items) => {
                            self.log_formats.insert(nick.clone(), items);
                        }
                        Err(m) => self.error(&d.origin, m),
                    },
                    _ => self.error(&d.origin, "LogFormat takes a format string and an optional nickname"),
                },
                Node::Section(sec) if sec.name.eq_ignore_ascii_case("VirtualHost") => self.collect_log_formats(&sec.children),
                _ => {}
            }
        }
    }

    fn virtual_host(&mut self, sec: &Section) -> Option<VirtualHost> {
        if sec.args.is_empty() {
            self.error(&sec.origin, "<VirtualHost> needs at least one address, e.g. <VirtualHost *:80>");
            return None;
        }
        let mut addrs = Vec::new();
        for a in &sec.args {
            match parse_vhost_addr(a) {
                Ok(addr) => addrs.push(addr),
                Err(m) => self.error(&sec.origin, m),
            }
        }
        let mut host = HostConfig::default();
        let mut docroot_origin = None;
        for node in &sec.children {
            match node {
                Node::Directive(d) => {
                    if d.name.eq_ignore_ascii_case("DocumentRoot") {
                        docroot_origin = Some(d.origin.clone());
                    }
                    if !self.host_directive(d, &mut host, Ctx::VirtualHost) {
                        self.server_only(d, Ctx::VirtualHost);
                    }
                }
                Node::Section(inner) if inner.name.eq_ignore_ascii_case("VirtualHost") => {
                    self.error(&inner.origin, "<VirtualHost> cannot be nested");
                }
                Node::Section(inner) if inner.name.eq_ignore_ascii_case("Pool") => self.pool(inner),
                Node::Section(inner) => {
                    let sections = self.dir_section(inner, Ctx::VirtualHost, None);
                    host.sections.extend(sections);
                }
            }
        }
        if docroot_origin.is_some() {
            self.check_document_root(&host.document_root, docroot_origin.as_ref());
        }
        Some(VirtualHost { addrs, host, origin: sec.origin.clone() })
    }

    fn pool(&mut self, sec: &Section) {
        let Some(p) = crate::pool::parse_pool(sec, &mut self.errors) else { return };
        if let Some(first) = self.pools.iter().find(|q| q.name == p.name) {
            let at = format!("{}:{}", first.origin.file.display(), first.origin.line);
            self.error(&sec.origin, format!("<Pool {}> is already defined at {at}", p.name));
            return;
        }
        self.pools.push(p);
    }

    /// A directive that only makes sense server-wide, found elsewhere.
    fn server_only(&mut self, d: &Directive, ctx: Ctx) {
        if is_server_directive(&d.name, self.mpm) {
            self.error(&d.origin, format!("{} is not allowed in {}; it is a server-wide directive", d.name, ctx_name(ctx)));
        } else if !self.dir_directive_known(&d.name) {
            self.unknown(d);
        }
    }

    fn unknown(&mut self, d: &Directive) {
        let lname = d.name.to_ascii_lowercase();
        let hint = if ["minspareservers", "maxspareservers"].contains(&lname.as_str()) {
            format!(" with the {} MPM (it belongs to prefork; put it in <IfModule mpm_prefork_module>)", self.mpm.name())
        } else if ["threadsperchild", "threadlimit", "minsparethreads", "maxsparethreads"].contains(&lname.as_str()) {
            " with the prefork MPM (it belongs to worker and event)".to_string()
        } else {
            String::new()
        };
        self.error(&d.origin, format!("unknown or unsupported directive '{}'{hint}", d.name));
    }

    fn dir_directive_known(&self, name: &str) -> bool {
        DIR_DIRECTIVES.iter().any(|n| n.eq_ignore_ascii_case(name))
    }

    /// Directives valid in the main server and in virtual hosts. Returns false
    /// if `d` is none of them.
    fn host_directive(&mut self, d: &Directive, host: &mut HostConfig, ctx: Ctx) -> bool {
        let a = &d.args;
        match d.name.to_ascii_lowercase().as_str() {
            "servername" => match a.as_slice() {
                [n] => {
                    let name = n.split("://").last().unwrap_or(n);
                    let name = name.rsplit_once(':').map_or(name, |(h, p)| if p.parse::<u16>().is_ok() { h } else { name });
                    host.server_name = Some(name.to_ascii_lowercase());
                }
                _ => self.error(&d.origin, "ServerName takes one argument: [scheme://]name[:port]"),
            },
            "serveralias" => {
                if ctx != Ctx::VirtualHost {
                    self.error(&d.origin, "ServerAlias is only allowed in <VirtualHost>");
                } else if a.is_empty() {
                    self.error(&d.origin, "ServerAlias needs at least one name");
                }
                host.aliases.extend(a.iter().map(|s| s.to_ascii_lowercase()));
            }
            "serveradmin" => match a.as_slice() {
                [n] => host.server_admin = Some(n.clone()),
                _ => self.error(&d.origin, "ServerAdmin takes one argument"),
            },
            "documentroot" => match a.as_slice() {
                [p] => host.document_root = self.resolve(p),
                _ => self.error(&d.origin, "DocumentRoot takes one argument, a directory"),
            },
            "proxypass" | "proxypassmatch" => match parse_proxy_route(d) {
                Ok(route) => host.proxy_routes.push(route),
                Err(m) => self.error(&d.origin, m),
            },
            "proxytimeout" => match a.as_slice() {
                [v] => match v.parse::<u64>() {
                    Ok(n) if n > 0 => host.proxy_timeout = Some(Duration::from_secs(n)),
                    _ => self.error(&d.origin, format!("ProxyTimeout: '{v}' is not a positive number of seconds")),
                },
                _ => self.error(&d.origin, "ProxyTimeout takes one argument, seconds"),
            },
            "customlog" | "transferlog" => {
                let (path, fmt) = match (d.name.eq_ignore_ascii_case("transferlog"), a.as_slice()) {
                    (true, [p]) => (p, None),
                    (false, [p, f]) => (p, Some(f)),
                    (false, [_, _, cond]) => {
                        self.error(&d.origin, format!("CustomLog conditions ({cond}) are not supported"));
                        return true;
                    }
                    _ => {
                        self.error(&d.origin, format!("{} takes a file and a format or nickname", d.name));
                        return true;
                    }
                };
                if path.starts_with('|') {
                    self.error(&d.origin, "piped logs are not supported; log to a file");
                    return true;
                }
                let format = match fmt {
                    None => self.default_format.clone(),
                    Some(f) if f.contains('%') => match log_format::compile(f) {
                        Ok(items) => items,
                        Err(m) => {
                            self.error(&d.origin, m);
                            return true;
                        }
                    },
                    Some(nick) => match self.log_formats.get(nick) {
                        Some(items) => items.clone(),
                        None => {
                            self.error(&d.origin, format!("unknown log format nickname '{nick}' (define it with LogFormat \"...\" {nick})"));
                            return true;
                        }
                    },
                };
                host.custom_logs.push(CustomLog { path: self.resolve(path), format });
            }
            "logformat" => {} // collected before the main pass
            "errorlog" => match a.as_slice() {
                [p] if p.starts_with('|') || p.starts_with("syslog") => {
                    self.error(&d.origin, "ErrorLog to a pipe or syslog is not supported; log to a file")
                }
                [p] => host.error_log = Some(self.resolve(p)),
                _ => self.error(&d.origin, "ErrorLog takes one argument, a file"),
            },
            _ => {
                return self.dir_directive(d, &mut host.dir, ctx);
            }
        }
        true
    }

    /// Directives valid per directory (and at host level). Returns false if
    /// `d` is none of them.
    fn dir_directive(&mut self, d: &Directive, dir: &mut DirConfig, _ctx: Ctx) -> bool {
        let a = &d.args;
        match d.name.to_ascii_lowercase().as_str() {
            "options" => match parse_options(a) {
                Ok(spec) => dir.options.push(spec),
                Err(m) => self.error(&d.origin, m),
            },
            "require" => match parse_require(a) {
                Ok(r) => dir.require.get_or_insert_with(Vec::new).push(r),
                Err(m) => self.error(&d.origin, m),
            },
            "directoryindex" => {
                if a.is_empty() {
                    self.error(&d.origin, "DirectoryIndex needs at least one file name (or `disabled`)");
                } else if a.len() == 1 && a[0].eq_ignore_ascii_case("disabled") {
                    dir.directory_index = Some(Vec::new());
                } else {
                    dir.directory_index = Some(a.clone());
                }
            }
            "errordocument" => match a.as_slice() {
                [code, doc] => match code.parse::<u16>() {
                    Ok(c) if (400..=599).contains(&c) => {
                        let doc = if doc == "default" {
                            ErrorDocument::Default
                        } else if doc.starts_with('/') {
                            ErrorDocument::Local(doc.clone())
                        } else if doc.contains("://") {
                            ErrorDocument::Redirect(doc.clone())
                        } else {
                            ErrorDocument::Text(doc.clone())
                        };
                        dir.error_documents.push((c, doc));
                    }
                    _ => self.error(&d.origin, format!("ErrorDocument: {code} is not an error status (400-599)")),
                },
                _ => self.error(&d.origin, "ErrorDocument takes a status code and a document: a local URL, a full URL or \"text\""),
            },
            "addtype" => {
                if a.len() < 2 || !a[0].contains('/') {
                    self.error(&d.origin, "AddType takes a MIME type and one or more extensions");
                } else {
                    for ext in &a[1..] {
                        dir.add_types.push((ext.trim_start_matches('.').to_ascii_lowercase(), a[0].clone()));
                    }
                }
            }
            "adddefaultcharset" => match a.as_slice() {
                [v] if v.eq_ignore_ascii_case("off") => dir.add_default_charset = Some(None),
                [v] if v.eq_ignore_ascii_case("on") => dir.add_default_charset = Some(Some("iso-8859-1".into())),
                [v] => dir.add_default_charset = Some(Some(v.clone())),
                _ => self.error(&d.origin, "AddDefaultCharset takes On, Off or a charset"),
            },
            "limitrequestbody" => match a.as_slice() {
                [v] => match v.parse::<u64>() {
                    Ok(n) => dir.limit_request_body = Some(n),
                    Err(_) => self.error(&d.origin, format!("LimitRequestBody: '{v}' is not a number of bytes")),
                },
                _ => self.error(&d.origin, "LimitRequestBody takes one argument, a number of bytes (0 = unlimited)"),
            },
            "sethandler" => match a.as_slice() {
                [h] if h.eq_ignore_ascii_case("none") => dir.handler = Some(None),
                [h] if h.eq_ignore_ascii_case("server-status") => dir.handler = Some(Some(Handler::ServerStatus)),
                [h, opts @ ..] if h.starts_with("pool:") && h.len() > 5 => match flush_packets_option(opts) {
                    Ok(flush) => {
                        self.pool_refs.push((h[5..].to_string(), d.origin.clone()));
                        let name = h[5..].to_string();
                        dir.handler = Some(Some(match flush {
                            false => Handler::Pool(name),
                            true => Handler::FastCgi(FcgiBackend { addr: FcgiAddr::Pool(name), reuse: false, timeout: None, flush_packets: true }),
                        }));
                    }
                    Err(m) => self.error(&d.origin, format!("SetHandler {h}: {m}")),
                },
                [h, opts @ ..] if h.starts_with("proxy:") => match (parse_fcgi_url(&h["proxy:".len()..]), flush_packets_option(opts)) {
                    (Ok((addr, _)), Ok(flush_packets)) => dir.handler = Some(Some(Handler::FastCgi(FcgiBackend { addr, reuse: false, timeout: None, flush_packets }))),
                    (Err(m), _) | (_, Err(m)) => self.error(&d.origin, format!("SetHandler {h}: {m}")),
                },
                [h] => self.error(&d.origin, format!("SetHandler {h}: unknown handler (known: server-status, proxy:unix:/path|fcgi://localhost, proxy:fcgi://host:port, pool:NAME, None)")),
                _ => self.error(&d.origin, "SetHandler takes one handler name"),
            },
            "proxyfcgibackendtype" => match a.as_slice() {
                [t] if t.eq_ignore_ascii_case("fpm") => dir.fcgi_backend_type = Some(FcgiBackendType::Fpm),
                [t] if t.eq_ignore_ascii_case("generic") => dir.fcgi_backend_type = Some(FcgiBackendType::Generic),
                _ => self.error(&d.origin, "ProxyFCGIBackendType takes FPM or GENERIC"),
            },
            "acceptpathinfo" => match a.as_slice() {
                [v] if v.eq_ignore_ascii_case("on") => dir.accept_path_info = Some(Some(true)),
                [v] if v.eq_ignore_ascii_case("off") => dir.accept_path_info = Some(Some(false)),
                [v] if v.eq_ignore_ascii_case("default") => dir.accept_path_info = Some(None),
                _ => self.error(&d.origin, "AcceptPathInfo takes On, Off or Default"),
            },
            "allowoverride" | "allowoverridelist" => {
                if !(a.len() == 1 && a[0].eq_ignore_ascii_case("none")) {
                    self.error(&d.origin, format!("{} {}: warren does not read .htaccess files; only `None` is accepted", d.name, a.join(" ")));
                }
            }
            _ => return false,
        }
        true
    }

    /// A container section, followed by the `<Files>` sections nested in it
    /// (scoped to it by `within`).
    fn dir_section(&mut self, sec: &Section, ctx: Ctx, within: Option<&SectionMatch>) -> Vec<DirSection> {
        let lname = sec.name.to_ascii_lowercase();
        let (regex_form, arg) = match sec.args.as_slice() {
            [a] => (false, a.clone()),
            [t, a] if t == "~" => (true, a.clone()),
            _ => {
                self.error(&sec.origin, format!("<{}> takes one argument (or ~ and a regular expression)", sec.name));
                return Vec::new();
            }
        };
        let compile = |b: &mut Builder, re: &str| match Regex::new(re) {
            Ok(r) => Some(r),
            Err(e) => {
                b.error(&sec.origin, format!("bad regular expression in <{}>: {e}", sec.name));
                None
            }
        };
        let parsed = match (lname.as_str(), regex_form) {
            ("directory", false) => {
                let path = self.resolve(&arg).to_string_lossy().trim_end_matches('/').to_string();
                Some((SectionMatch::Directory(path), Ctx::Directory))
            }
            ("directory", true) | ("directorymatch", false) => compile(self, &arg).map(|r| (SectionMatch::DirectoryMatch(r), Ctx::Directory)),
            ("files", false) => Some((SectionMatch::Files(arg), Ctx::Files)),
            ("files", true) | ("filesmatch", false) => compile(self, &arg).map(|r| (SectionMatch::FilesMatch(r), Ctx::Files)),
            ("location", false) => Some((SectionMatch::Location(arg), Ctx::Location)),
            ("location", true) | ("locationmatch", false) => compile(self, &arg).map(|r| (SectionMatch::LocationMatch(r), Ctx::Location)),
            _ => {
                self.error(&sec.origin, format!("unknown or unsupported section <{}>", sec.name));
                None
            }
        };
        let Some((matcher, inner_ctx)) = parsed else { return Vec::new() };
        let allowed = match inner_ctx {
            Ctx::Directory | Ctx::Location => matches!(ctx, Ctx::Server | Ctx::VirtualHost),
            _ => matches!(ctx, Ctx::Server | Ctx::VirtualHost | Ctx::Directory),
        };
        if !allowed {
            self.error(&sec.origin, format!("<{}> is not allowed in {}", sec.name, ctx_name(ctx)));
            return Vec::new();
        }
        let mut config = DirConfig::default();
        let mut nested = Vec::new();
        for node in &sec.children {
            match node {
                Node::Directive(d) => {
                    if !self.dir_directive(d, &mut config, inner_ctx) {
                        if is_server_directive(&d.name, self.mpm) || HOST_DIRECTIVES.iter().any(|n| n.eq_ignore_ascii_case(&d.name)) {
                            self.error(&d.origin, format!("{} is not allowed in <{}>", d.name, sec.name));
                        } else {
                            self.unknown(d);
                        }
                    }
                }
                Node::Section(inner) => {
                    let sections = self.dir_section(inner, inner_ctx, Some(&matcher));
                    nested.extend(sections);
                }
            }
        }
        let section = DirSection { matcher, within: within.map(|w| Box::new(w.clone())), config, origin: sec.origin.clone() };
        let mut out = vec![section];
        out.append(&mut nested);
        out
    }

    fn server_directive(&mut self, d: &Directive, s: &mut Settings, tuning_set: &mut Vec<(&'static str, Origin)>) {
        let a = &d.args;
        let lname = d.name.to_ascii_lowercase();
        let one = |b: &mut Builder| -> Option<String> {
            match a.as_slice() {
                [v] => Some(v.clone()),
                _ => {
                    b.error(&d.origin, format!("{} takes one argument", d.name));
                    None
                }
            }
        };
        let number = |b: &mut Builder| -> Option<u64> {
            let v = one(b)?;
            match v.parse::<u64>() {
                Ok(n) => Some(n),
                Err(_) => {
                    b.error(&d.origin, format!("{}: '{v}' is not a non-negative whole number", d.name));
                    None
                }
            }
        };
        let on_off = |b: &mut Builder| -> Option<bool> {
            let v = one(b)?;
            match v.to_ascii_lowercase().as_str() {
                "on" => Some(true),
                "off" => Some(false),
                _ => {
                    b.error(&d.origin, format!("{} must be On or Off", d.name));
                    None
                }
            }
        };
        match lname.as_str() {
            "listen" => match a.as_slice() {
                [addr] | [addr, _] => {
                    if let [_, proto] = a.as_slice() {
                        if !proto.eq_ignore_ascii_case("http") {
                            self.error(&d.origin, format!("Listen protocol '{proto}' is not supported (only http)"));
                            return;
                        }
                    }
                    match parse_listen(addr) {
                        Ok(sa) => {
                            if s.listen.contains(&sa) {
                                self.error(&d.origin, format!("Listen {addr} appears twice"));
                            } else {
                                s.listen.push(sa);
                            }
                        }
                        Err(m) => self.error(&d.origin, m),
                    }
                }
                _ => self.error(&d.origin, "Listen takes [address:]port and an optional protocol"),
            },
            "pidfile" => {
                if let Some(v) = one(self) {
                    s.pid_file = Some(self.resolve(&v));
                }
            }
            "user" => {
                s.user = one(self);
                s.user_origin = Some(d.origin.clone());
            }
            "group" => {
                s.group = one(self);
                s.group_origin = Some(d.origin.clone());
            }
            "timeout" => {
                if let Some(n) = number(self) {
                    s.timeout = Duration::from_secs(n.max(1));
                }
            }
            "keepalive" => {
                if let Some(b) = on_off(self) {
                    s.keep_alive = b;
                }
            }
            "keepalivetimeout" => {
                if let Some(v) = one(self) {
                    let parsed = match v.strip_suffix("ms") {
                        Some(ms) => ms.parse::<u64>().map(Duration::from_millis),
                        None => v.parse::<u64>().map(Duration::from_secs),
                    };
                    match parsed {
                        Ok(t) => s.keep_alive_timeout = t,
                        Err(_) => self.error(&d.origin, format!("KeepAliveTimeout: '{v}' is not a number of seconds (or NNNms)")),
                    }
                }
            }
            "maxkeepaliverequests" => {
                if let Some(n) = number(self) {
                    s.max_keep_alive_requests = n.min(u32::MAX as u64) as u32;
                }
            }
            "limitrequestline" | "limitrequestfieldsize" | "limitrequestfields" | "limitrequestheadsize" => {
                if let Some(n) = number(self) {
                    let n = n as usize;
                    match lname.as_str() {
                        "limitrequestline" => s.limits.request_line = n.max(16),
                        "limitrequestfieldsize" => s.limits.field_size = n.max(16),
                        "limitrequestheadsize" => s.limits.head = n.max(64),
                        _ => s.limits.fields = if n == 0 { 10_000 } else { n },
                    }
                }
            }
            "requestreadtimeout" => {
                if a.is_empty() {
                    self.error(&d.origin, "RequestReadTimeout takes header=, body= or handshake= values");
                }
                for arg in a {
                    let Some((key, value)) = arg.split_once('=') else {
                        self.error(&d.origin, format!("RequestReadTimeout: '{arg}' is not in the form key=value (header=, body=, handshake=)"));
                        continue;
                    };
                    let lkey = key.to_ascii_lowercase();
                    if !["header", "body", "handshake"].contains(&lkey.as_str()) {
                        self.error(&d.origin, format!("RequestReadTimeout: {arg}: unknown parameter '{key}' (header, body or handshake)"));
                        continue;
                    }
                    match parse_read_stage(value) {
                        Ok(stage) => match lkey.as_str() {
                            "header" => s.request_read_timeout.header = stage,
                            "body" => s.request_read_timeout.body = stage,
                            _ if stage.initial > 0 => self.warn(&d.origin, format!("RequestReadTimeout: {arg} is ignored: warren has no TLS, so no handshake to time")),
                            _ => {}
                        },
                        Err(m) => self.error(&d.origin, format!("RequestReadTimeout: {arg}: {m}")),
                    }
                }
            }
            "servertokens" => {
                if let Some(v) = one(self) {
                    s.server_tokens = match v.to_ascii_lowercase().as_str() {
                        "full" => ServerTokens::Full,
                        "os" => ServerTokens::Os,
                        "min" | "minimal" => ServerTokens::Minimal,
                        "minor" => ServerTokens::Minor,
                        "major" => ServerTokens::Major,
                        "prod" | "productonly" => ServerTokens::Prod,
                        _ => {
                            self.error(&d.origin, "ServerTokens must be one of Full, OS, Minimal, Minor, Major, Prod");
                            return;
                        }
                    };
                }
            }
            "serversignature" => {
                if let Some(v) = one(self) {
                    s.server_signature = match v.to_ascii_lowercase().as_str() {
                        "on" | "email" => true,
                        "off" => false,
                        _ => {
                            self.error(&d.origin, "ServerSignature must be On, Off or EMail");
                            return;
                        }
                    };
                }
            }
            "extendedstatus" => {
                if let Some(b) = on_off(self) {
                    s.extended_status = b;
                }
            }
            "listenbacklog" => {
                if let Some(n) = number(self) {
                    if n == 0 || n > i32::MAX as u64 {
                        self.error(&d.origin, "ListenBacklog must be a positive number");
                    } else {
                        s.listen_backlog = n as u32;
                    }
                }
            }
            "gracefulshutdowntimeout" => {
                if let Some(n) = number(self) {
                    s.graceful_shutdown_timeout = (n > 0).then(|| Duration::from_secs(n));
                }
            }
            "hostnamelookups" => {
                if on_off(self) == Some(true) {
                    self.error(&d.origin, "HostnameLookups On is not supported (it slows every request); use Off");
                }
            }
            "loglevel" => match a.as_slice() {
                [v] => match LogLevel::parse(v) {
                    Some(l) => s.log_level = l,
                    None => self.error(&d.origin, format!("LogLevel: unknown level '{v}' (emerg alert crit error warn notice info debug trace1-8)")),
                },
                _ => self.error(&d.origin, "LogLevel takes one level; per-module levels are not supported"),
            },
            "typesconfig" => {
                if let Some(v) = one(self) {
                    let p = self.resolve(&v);
                    if !p.is_file() {
                        self.error(&d.origin, format!("TypesConfig: cannot read {}", p.display()));
                    }
                    s.types_config = Some(p);
                }
            }
            "startservers" | "serverlimit" | "threadsperchild" | "threadlimit" | "maxrequestworkers" | "maxclients"
            | "minsparethreads" | "maxsparethreads" | "minspareservers" | "maxspareservers" | "maxconnectionsperchild"
            | "maxrequestsperchild" | "maxchildconnections" => {
                if !is_server_directive(&lname, self.mpm) {
                    self.unknown(d);
                    return;
                }
                let Some(n) = number(self) else { return };
                let n = n.min(u32::MAX as u64) as u32;
                let t = &mut s.tuning;
                let field: &'static str = match lname.as_str() {
                    "startservers" => { t.start_servers = n; "StartServers" }
                    "serverlimit" => { t.server_limit = n; "ServerLimit" }
                    "threadsperchild" => { t.threads_per_child = n; "ThreadsPerChild" }
                    "threadlimit" => { t.thread_limit = n; "ThreadLimit" }
                    "maxrequestworkers" | "maxclients" => { t.max_request_workers = n; "MaxRequestWorkers" }
                    "minsparethreads" => { t.min_spare_threads = n; "MinSpareThreads" }
                    "maxsparethreads" => { t.max_spare_threads = n; "MaxSpareThreads" }
                    "minspareservers" => { t.min_spare_servers = n; "MinSpareServers" }
                    "maxspareservers" => { t.max_spare_servers = n; "MaxSpareServers" }
                    "maxchildconnections" => { t.max_child_connections = n; "MaxChildConnections" }
                    _ => { t.max_connections_per_child = n; "MaxConnectionsPerChild" }
                };
                tuning_set.push((field, d.origin.clone()));
            }
            _ => self.unknown(d),
        }
    }

    /// Apache's corrections of impossible MPM values, each with a warning
    /// naming the directive's line (see event.c / prefork.c check_config).
    fn correct_tuning(&mut self, t: &mut MpmTuning, set: &[(&'static str, Origin)]) {
        let origin_of = |name: &str| -> Origin {
            set.iter()
                .rev()
                .find(|(n, _)| *n == name)
                .map(|(_, o)| o.clone())
                .unwrap_or(Origin { file: std::sync::Arc::new(PathBuf::from("(defaults)")), line: 0 })
        };
        let was_set = |name: &str| set.iter().any(|(n, _)| *n == name);
        if self.mpm.threaded() {
            if t.thread_limit < 1 {
                self.warn(&origin_of("ThreadLimit"), "ThreadLimit of 0 not allowed, increasing to 1");
                t.thread_limit = 1;
            }
            if t.threads_per_child > t.thread_limit {
                let (tpc, tl) = (t.threads_per_child, t.thread_limit);
                self.warn(&origin_of("ThreadsPerChild"), format!("ThreadsPerChild of {tpc} exceeds ThreadLimit of {tl}, decreasing to match"));
                t.threads_per_child = t.thread_limit;
            } else if t.threads_per_child < 1 {
                self.warn(&origin_of("ThreadsPerChild"), "ThreadsPerChild of 0 not allowed, increasing to 1");
                t.threads_per_child = 1;
            }
        }
        if t.server_limit < 1 {
            self.warn(&origin_of("ServerLimit"), "ServerLimit of 0 not allowed, increasing to 1");
            t.server_limit = 1;
        }
        let per_child = t.threads_per_child.max(1);
        if !was_set("MaxRequestWorkers") && self.mpm.threaded() {
            t.max_request_workers = t.server_limit * per_child;
        }
        if t.max_request_workers < per_child {
            let m = t.max_request_workers;
            self.warn(&origin_of("MaxRequestWorkers"), format!("MaxRequestWorkers of {m} is less than ThreadsPerChild of {per_child}, increasing to {per_child}; it must be at least as large as the number of threads in a single server"));
            t.max_request_workers = per_child;
        }
        if t.max_request_workers > t.server_limit * per_child {
            let (m, cap) = (t.max_request_workers, t.server_limit * per_child);
            self.warn(&origin_of("MaxRequestWorkers"), format!("MaxRequestWorkers of {m} would require {} servers and would exceed ServerLimit of {}, decreasing to {cap}; to increase, raise ServerLimit", m.div_ceil(per_child), t.server_limit));
            t.max_request_workers = cap;
        }
        if self.mpm.threaded() && !t.max_request_workers.is_multiple_of(per_child) {
            let m = t.max_request_workers;
            let fixed = m - m % per_child;
            self.warn(&origin_of("MaxRequestWorkers"), format!("MaxRequestWorkers of {m} is not an integer multiple of ThreadsPerChild of {per_child}, decreasing to nearest multiple {fixed}"));
            t.max_request_workers = fixed;
        }
        if t.start_servers > t.server_limit {
            let (ss, sl) = (t.start_servers, t.server_limit);
            self.warn(&origin_of("StartServers"), format!("StartServers of {ss} exceeds ServerLimit of {sl}, decreasing to match"));
            t.start_servers = t.server_limit;
        } else if t.start_servers < 1 {
            self.warn(&origin_of("StartServers"), "StartServers of 0 not allowed, increasing to 1");
            t.start_servers = 1;
        }
        if self.mpm.threaded() {
            if t.min_spare_threads < 1 {
                t.min_spare_threads = 1;
            }
            if t.max_spare_threads < t.min_spare_threads + per_child {
                t.max_spare_threads = t.min_spare_threads + per_child;
            }
        } else {
            if t.min_spare_servers < 1 {
                self.warn(&origin_of("MinSpareServers"), "MinSpareServers of 0 not allowed, increasing to 1");
                t.min_spare_servers = 1;
            }
            if t.max_spare_servers < t.min_spare_servers + 1 {
                t.max_spare_servers = t.min_spare_servers + 1;
            }
        }
    }
}

const HOST_DIRECTIVES: &[&str] = &[
    "ServerName",
    "ServerAlias",
    "ServerAdmin",
    "DocumentRoot",
    "CustomLog",
    "TransferLog",
    "ErrorLog",
    "LogFormat",
    "ProxyPass",
    "ProxyPassMatch",
    "ProxyTimeout",
];
const DIR_DIRECTIVES: &[&str] = &[
    "Options",
    "Require",
    "DirectoryIndex",
    "ErrorDocument",
    "AddType",
    "AddDefaultCharset",
    "LimitRequestBody",
    "AllowOverride",
    "AllowOverrideList",
    "SetHandler",
    "ProxyFCGIBackendType",
    "AcceptPathInfo",
];

fn is_server_directive(name: &str, mpm: Mpm) -> bool {
    let l = name.to_ascii_lowercase();
    let common = [
        "listen", "pidfile", "user", "group", "timeout", "keepalive", "keepalivetimeout", "maxkeepaliverequests",
        "limitrequestline", "limitrequestfieldsize", "limitrequestfields", "limitrequestheadsize", "requestreadtimeout", "servertokens", "serversignature",
        "hostnamelookups", "loglevel", "typesconfig", "extendedstatus", "gracefulshutdowntimeout", "listenbacklog", "startservers", "serverlimit", "maxrequestworkers", "maxclients",
        "maxconnectionsperchild", "maxrequestsperchild",
    ];
    if common.contains(&l.as_str()) {
        return true;
    }
    match mpm {
        Mpm::Prefork => ["minspareservers", "maxspareservers"].contains(&l.as_str()),
        _ => ["threadsperchild", "threadlimit", "minsparethreads", "maxsparethreads"].contains(&l.as_str()) || (mpm == Mpm::Event && l == "maxchildconnections"),
    }
}

fn ctx_name(ctx: Ctx) -> &'static str {
    match ctx {
        Ctx::Server => "the server config",
        Ctx::VirtualHost => "<VirtualHost>",
        Ctx::Directory => "<Directory>",
        Ctx::Files => "<Files>",
        Ctx::Location => "<Location>",
    }
}

/// `unix:/path|fcgi://name/rest` or `fcgi://host:port/rest`: the backend and
/// the path part (`/rest`, possibly empty).
pub fn parse_fcgi_url(url: &str) -> Result<(FcgiAddr, String), String> {
    if let Some(rest) = url.strip_prefix("unix:") {
        let (sock, fcgi) = rest.split_once('|').ok_or("a unix socket needs `|fcgi://localhost` after its path")?;
        let after = fcgi.strip_prefix("fcgi://").ok_or("only fcgi:// backends are supported")?;
        if !sock.starts_with('/') {
            return Err(format!("unix socket path {sock} must be absolute"));
        }
        let path = after.find('/').map_or("", |i| &after[i..]);
        return Ok((FcgiAddr::Unix(PathBuf::from(sock)), path.to_string()));
    }
    let after = url.strip_prefix("fcgi://").ok_or("only fcgi:// and unix:...|fcgi:// backends are supported")?;
    let (authority, path) = match after.find('/') {
        Some(i) => (&after[..i], &after[i..]),
        None => (after, ""),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
            (h.trim_start_matches('[').trim_end_matches(']'), p.parse::<u16>().map_err(|_| format!("bad port in {authority}"))?)
        }
        _ => (authority, 8000),
    };
    if host.is_empty() {
        return Err(format!("no host in fcgi://{after}"));
    }
    Ok((FcgiAddr::Tcp { host: host.to_string(), port }, path.to_string()))
}

fn parse_proxy_route(d: &Directive) -> Result<ProxyRoute, String> {
    let regex = d.name.eq_ignore_ascii_case("ProxyPassMatch");
    let (pattern, target, keys) = match d.args.as_slice() {
        [p, t, keys @ ..] => (p, t, keys),
        _ => return Err(format!("{} takes a {} and a backend URL (or !), then key=value options", d.name, if regex { "regular expression" } else { "URL path" })),
    };
    let pattern = if regex {
        ProxyPattern::Regex(Regex::new(pattern).map_err(|e| format!("{}: bad regular expression: {e}", d.name))?)
    } else {
        if !pattern.starts_with('/') {
            return Err(format!("ProxyPass: the path {pattern} must start with /"));
        }
        ProxyPattern::Prefix(pattern.clone())
    };
    if target == "!" {
        return Ok(ProxyRoute { pattern, target: None, origin: d.origin.clone() });
    }
    let (addr, path) = parse_fcgi_url(target).map_err(|m| format!("{} {target}: {m}", d.name))?;
    let mut backend = FcgiBackend { addr, reuse: false, timeout: None, flush_packets: false };
    for kv in keys {
        match kv.split_once('=').map(|(k, v)| (k.to_ascii_lowercase(), v)) {
            Some((k, v)) if k == "enablereuse" || k == "disablereuse" => {
                let on = match v.to_ascii_lowercase().as_str() {
                    "on" => true,
                    "off" => false,
                    _ => return Err(format!("{}: {k} takes on or off", d.name)),
                };
                backend.reuse = if k == "enablereuse" { on } else { !on };
            }
            Some((k, v)) if k == "timeout" => match v.parse::<u64>() {
                Ok(n) if n > 0 => backend.timeout = Some(Duration::from_secs(n)),
                _ => return Err(format!("{}: timeout={v} is not a positive number of seconds", d.name)),
            },
            Some((k, v)) if k == "flushpackets" => backend.flush_packets = flush_packets_value(v).map_err(|m| format!("{}: {m}", d.name))?,
            _ => return Err(format!("{}: unsupported option {kv} (supported: enablereuse, disablereuse, timeout, flushpackets)", d.name)),
        }
    }
    Ok(ProxyRoute { pattern, target: Some(ProxyTarget { backend, path }), origin: d.origin.clone() })
}

/// `flushpackets=on|auto|off`, as mod_proxy's key.
fn flush_packets_value(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "on" | "auto" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("flushpackets={v}: takes on, auto or off")),
    }
}

/// What may follow a FastCGI handler on a SetHandler line: `flushpackets=`
/// (warren's; Apache sets it with ProxyPass or ProxySet).
fn flush_packets_option(opts: &[String]) -> Result<bool, String> {
    match opts {
        [] => Ok(false),
        [kv] => match kv.split_once('=') {
            Some((k, v)) if k.eq_ignore_ascii_case("flushpackets") => flush_packets_value(v),
            _ => Err(format!("unsupported option {kv} (supported: flushpackets)")),
        },
        _ => Err("takes one handler name and at most flushpackets=on|off".to_string()),
    }
}

fn parse_listen(addr: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = addr.parse::<u16>() {
        return Ok(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    if let Ok(sa) = addr.parse::<SocketAddr>() {
        return Ok(sa);
    }
    match addr.to_socket_addrs() {
        Ok(mut it) => it.next().ok_or_else(|| format!("Listen: {addr} resolves to no address")),
        Err(_) => Err(format!("Listen: '{addr}' is not [address:]port")),
    }
}

fn parse_vhost_addr(a: &str) -> Result<VhostAddr, String> {
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

fn parse_options(args: &[String]) -> Result<OptionsSpec, String> {
    let mut add = OptionFlags::NONE;
    let mut remove = OptionFlags::NONE;
    let mut set = OptionFlags::NONE;
    let (mut relative, mut absolute) = (false, false);
    for arg in args {
        let (sign, name) = match arg.as_bytes().first() {
            Some(b'+') => (Some(true), &arg[1..]),
            Some(b'-') => (Some(false), &arg[1..]),
            _ => (None, arg.as_str()),
        };
        let flags = match name.to_ascii_lowercase().as_str() {
            "indexes" => OptionFlags { indexes: true, ..OptionFlags::NONE },
            "followsymlinks" => OptionFlags { follow_symlinks: true, ..OptionFlags::NONE },
            "symlinksifownermatch" => OptionFlags { symlinks_if_owner_match: true, ..OptionFlags::NONE },
            // Apache's All leaves out SymLinksIfOwnerMatch (and MultiViews).
            "all" => OptionFlags { indexes: true, follow_symlinks: true, symlinks_if_owner_match: false },
            "none" => OptionFlags::NONE,
            "execcgi" | "includes" | "includesnoexec" | "multiviews" => {
                return Err(format!(
                    "Options {name} is not supported by warren (supported: Indexes, FollowSymLinks, SymLinksIfOwnerMatch, All, None)"
                ))
            }
            _ => return Err(format!("Illegal option {name}")),
        };
        match sign {
            Some(true) => {
                relative = true;
                add = add.or(flags);
            }
            Some(false) => {
                relative = true;
                remove = remove.or(flags);
            }
            None => {
                absolute = true;
                set = set.or(flags);
            }
        }
    }
    if relative && absolute {
        return Err("Either all Options must start with + or -, or no Option may".into());
    }
    Ok(if relative { OptionsSpec::Edit { add, remove } } else { OptionsSpec::Set(set) })
}

fn parse_require(args: &[String]) -> Result<Require, String> {
    match args.first().map(|s| s.to_ascii_lowercase()).as_deref() {
        Some("all") => match args.get(1).map(|s| s.to_ascii_lowercase()).as_deref() {
            Some("granted") if args.len() == 2 => Ok(Require::All(true)),
            Some("denied") if args.len() == 2 => Ok(Require::All(false)),
            _ => Err("Require all takes `granted` or `denied`".into()),
        },
        Some("local") if args.len() == 1 => Ok(Require::Local),
        Some("ip") if args.len() > 1 => {
            let mut nets = Vec::new();
            for a in &args[1..] {
                let (ip, len) = match a.split_once('/') {
                    Some((ip, len)) => (ip, Some(len)),
                    None => (a.as_str(), None),
                };
                let ip: IpAddr = ip.parse().map_err(|_| format!("Require ip: '{a}' is not an address or network"))?;
                let max = if ip.is_ipv4() { 32 } else { 128 };
                let len = match len {
                    None => max,
                    Some(l) => l.parse::<u8>().ok().filter(|l| *l <= max).ok_or_else(|| format!("Require ip: bad prefix length in '{a}'"))?,
                };
                nets.push((ip, len));
            }
            Ok(Require::Ip(nets))
        }
        _ => Err(format!("Require {}: supported forms are `all granted`, `all denied`, `ip ADDR[/LEN]...` and `local`", args.join(" "))),
    }
}
