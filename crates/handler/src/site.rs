//! The site: what is built once from the settings (hosts, MIME table,
//! logs), beside the runtime caches (caches.rs) and the hooks the MPM
//! sets; the access log writers of each thread; and the choice of a host
//! for a request.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use warren_config::{DirConfig, FcgiBackend, Handler, HostConfig, LogItem, LogLevel, SectionMatch, ServerTokens, Settings, VhostAddr};
use warren_config::log_target::LogSink;

use warren_pool_api::PoolDispatch;

use crate::caches::Caches;
use crate::fastcgi::half_close::HalfClose;
use crate::logs::{AccessLogFile, AccessLogWriter, ErrorLog, LogRecord};
use crate::mime::MimeTypes;
use crate::sections::{ancestors, directories_overlap, wildcard_match};
use crate::status::StatusSource;

pub struct Host {
    pub config: HostConfig,
    /// None for the main server.
    pub(crate) addrs: Option<Vec<VhostAddr>>,
    /// Indexes into `Site::access_logs`.
    logs: Vec<usize>,
    pub error_log: Arc<ErrorLog>,
    pub name: String,
    /// Whether any section hands files to a FastCGI application, so that
    /// `/script.php/path/info` URLs are looked for.
    pub(crate) has_fastcgi: bool,
    /// The pools (`pool:NAME`) this host sends requests to: their status
    /// pages are answered here and on no other host.
    pub(crate) pools: Vec<String>,
    /// Whether any ScriptAlias is configured.
    pub(crate) has_script_alias: bool,
    /// Whether any `<Directory>` lets `.htaccess` files in.
    pub(crate) reads_htaccess: bool,
    /// AccessFileName.
    pub access_file_names: Vec<String>,
}

/// One access log: its format, its file, and CustomLog's `env=[!]VAR`.
type AccessLog = (Arc<Vec<LogItem>>, Arc<AccessLogFile>, Option<(String, bool)>);

/// The server as its configuration made it, with what it learns while it
/// serves kept apart: everything but `caches` and the two hooks is built
/// once by [`Site::new`] and never changes; requests go through it as
/// pipeline.rs describes.
pub struct Site {
    pub settings: Settings,
    /// `hosts[0]` is the main server; the virtual hosts follow in config order.
    pub hosts: Vec<Host>,
    pub mime: MimeTypes,
    pub server_header: String,
    pub error_log: Arc<ErrorLog>,
    access_logs: Vec<AccessLog>,
    /// Whether any host has a RemoteIPHeader: without one, finding a
    /// request's client costs nothing.
    pub(crate) uses_remote_ip: bool,
    /// Whether any host has RemoteIPProxyProtocol On.
    pub(crate) uses_proxy_protocol: bool,
    /// Whether any compression directive may apply (in the configuration,
    /// or in `.htaccess` files it lets in): else a FastCGI request routed
    /// without its per-directory configuration (ProxyPass) does not look
    /// for them.
    pub(crate) compresses: bool,
    /// Whether any host has a CacheEnable line: else no request looks at
    /// the response cache (response_cache.rs).
    pub(crate) caches_responses: bool,

    /// What this process learns while serving (caches.rs).
    pub caches: Caches,
    /// `balancer://` and its members' state, shared by every child.
    pub balancers: crate::balancer::Balancers,
    /// The WebSocket tunnels open by client, shared by every child
    /// (ProxyWebsocketMaxPerClient).
    pub tunnel_clients: Arc<crate::proxy_http::tunnel_clients::ClientTunnels>,
    /// Which FastCGI applications have our side shut once a request is out
    /// (learnt by asking each, once per child).
    pub half_close: HalfClose,
    /// Where server-status reads the scoreboard; set by the MPM.
    pub status: OnceLock<Arc<dyn StatusSource>>,
    /// Where `SetHandler metrics` reads its figures; set by the MPM.
    pub metrics: OnceLock<Arc<dyn crate::metrics::MetricsSource>>,
    /// warren's own pools (`SetHandler pool:NAME`); set by the parent.
    pub pools: OnceLock<Arc<dyn PoolDispatch>>,
}

pub fn server_header(tokens: ServerTokens) -> String {
    let v = env!("CARGO_PKG_VERSION");
    let mut parts = v.split('.');
    let major = parts.next().unwrap_or("0");
    let minor = parts.next().unwrap_or("0");
    match tokens {
        ServerTokens::Full | ServerTokens::Os => format!("warren/{v} (Unix)"),
        ServerTokens::Minimal => format!("warren/{v}"),
        ServerTokens::Minor => format!("warren/{major}.{minor}"),
        ServerTokens::Major => format!("warren/{major}"),
        ServerTokens::Prod => "warren".to_string(),
    }
}

impl Site {
    /// Opens logs and reads the MIME table: everything that can fail is done
    /// here, before any child starts. Any file root may not open is an
    /// error: at a graceful restart the running configuration, with the
    /// files it has open, stays.
    pub fn new(settings: Settings) -> Result<Site, String> {
        Site::build(settings, false).map(|(site, _)| site)
    }

    /// [`Site::new`] at a cold start, where no running configuration could
    /// stay: a virtual host's log that root may not open (a link its site's
    /// owner planted) does not keep every site down. That host's errors go
    /// to the main error log and its access log is not written; the
    /// refusals are returned, for the main error log.
    pub fn new_at_start(settings: Settings) -> Result<(Site, Vec<String>), String> {
        Site::build(settings, true)
    }

    fn build(settings: Settings, hosts_may_fall_back: bool) -> Result<(Site, Vec<String>), String> {
        // Every file root writes by a configured path, the pools' slow logs
        // (opened at each entry) and the PidFile (by the MPM) too.
        let tenants = if hosts_may_fall_back { crate::root_files::virtual_host_logs(&settings) } else { Vec::new() };
        let mut refused_logs: Vec<PathBuf> = Vec::new();
        let mut fallbacks = Vec::new();
        for (directive, origin, path) in crate::root_files::named_files(&settings) {
            let Err(e) = crate::root_files::check(path) else { continue };
            let refusal = crate::root_files::describe(directive, origin, path, &e);
            if !tenants.contains(&path) {
                return Err(refusal);
            }
            let instead = if directive == "ErrorLog" { "the virtual host's errors go to the main error log" } else { "this access log is not written" };
            fallbacks.push(format!("{refusal}; {instead} until a restart finds the file in order"));
            refused_logs.push(path.to_path_buf());
        }
        let error_log_format = settings.error_log_format.clone().map(Arc::new);
        let error_log = Arc::new(match &settings.error_log_sink {
            Some(sink) => ErrorLog::open_sink(sink, settings.main.error_log_origin.as_ref(), settings.log_level, &settings)?,
            None => ErrorLog::open(settings.error_log.as_deref(), settings.main.error_log_origin.as_ref(), settings.log_level)?,
        }.with_format(error_log_format.clone()));
        crate::piped_log::report_losses_to(&error_log);
        // Piped-log programs run as User, as Apache's.
        let log_account = if settings.virtual_hosts.iter().map(|v| &v.host).chain([&settings.main]).any(|h| h.custom_logs.iter().any(|l| l.pipe.is_some())) {
            warren_config::accounts::server_account(settings.user.as_deref(), settings.group.as_deref())?
        } else {
            None
        };
        // A pattern that gives up on a match is the server's to hear of (its
        // origin names the file and line), whichever request ran it.
        let regex_log = error_log.clone();
        warren_regex::set_reporter(move |message| regex_log.log(LogLevel::Error, None, message));
        let mime = MimeTypes::load(settings.types_config.as_deref()).map_err(|e| format!("cannot read TypesConfig: {e}"))?;
        let mut access_logs: Vec<AccessLog> = Vec::new();
        let mut error_logs: Vec<(PathBuf, Arc<ErrorLog>)> = Vec::new();
        let mut sink_logs: Vec<(LogSink, Arc<ErrorLog>)> = Vec::new();
        let mut hosts = Vec::new();
        let configs = std::iter::once((settings.main.clone(), None))
            .chain(settings.virtual_hosts.iter().map(|v| (v.host.clone(), Some(v.addrs.clone()))));
        for (config, addrs) in configs {
            let mut logs = Vec::new();
            for cl in config.custom_logs.iter().filter(|cl| !refused_logs.contains(&cl.path)) {
                let file = match access_logs.iter().find(|(_, f, _)| f.path == cl.path) {
                    Some((_, f, _)) => f.clone(),
                    None => match &cl.pipe {
                        Some(program) => AccessLogFile::piped(cl, program, log_account.as_ref(), error_log.file())?,
                        None => AccessLogFile::open(&cl.path, cl.directive, cl.origin.as_ref())?,
                    },
                };
                let format = Arc::new(cl.format.clone());
                let idx = match access_logs.iter().position(|(fm, f, c)| **fm == *format && Arc::ptr_eq(f, &file) && *c == cl.env_condition) {
                    Some(i) => i,
                    None => {
                        access_logs.push((format, file, cl.env_condition.clone()));
                        access_logs.len() - 1
                    }
                };
                logs.push(idx);
            }
            let host_error_log = match (&config.error_log_sink, &config.error_log) {
                (Some(sink), _) if Some(sink) != settings.error_log_sink.as_ref() => match sink_logs.iter().find(|(s, _)| s == sink) {
                    Some((_, l)) => l.clone(),
                    None => {
                        let l = Arc::new(ErrorLog::open_sink(sink, config.error_log_origin.as_ref(), settings.log_level, &settings)?.with_format(error_log_format.clone()));
                        sink_logs.push((sink.clone(), l.clone()));
                        l
                    }
                },
                (Some(_), _) => error_log.clone(),
                (None, error_log_path) => match error_log_path {
                Some(p) if Some(p) != settings.error_log.as_ref() && !refused_logs.contains(p) => match error_logs.iter().find(|(q, _)| q == p) {
                    Some((_, l)) => l.clone(),
                    None => {
                        let l = Arc::new(ErrorLog::open(Some(p), config.error_log_origin.as_ref(), settings.log_level)?.with_format(error_log_format.clone()));
                        error_logs.push((p.clone(), l.clone()));
                        l
                    }
                },
                _ => error_log.clone(),
                },
            };
            let name = config.server_name.clone().unwrap_or_else(|| "localhost".to_string());
            let is_fcgi = |d: &DirConfig| matches!(d.handler, Some(Some(Handler::FastCgi(_) | Handler::Pool(_))));
            let has_fastcgi = is_fcgi(&config.dir) || config.sections.iter().any(|s| is_fcgi(&s.config));
            let pools = pools_used(&config);
            let reads_htaccess = crate::htaccess::host_reads_files(&config);
            let has_script_alias = config.url_aliases.iter().any(|a| a.script);
            let access_file_names = config.access_file_names.clone().unwrap_or_else(|| vec![".htaccess".to_string()]);
            hosts.push(Host { config, addrs, logs, error_log: host_error_log, name, has_fastcgi, pools, has_script_alias, reads_htaccess, access_file_names });
        }
        let uses_remote_ip = hosts.iter().any(|h| h.config.remote_ip.header.is_some());
        let uses_proxy_protocol = hosts.iter().any(|h| h.config.remote_ip.proxy_protocol == Some(true));
        let compresses = hosts.iter().any(|h: &Host| {
            h.reads_htaccess || h.config.dir.output_filters.is_some() || h.config.sections.iter().any(|s| s.config.output_filters.is_some())
        });
        let balancers = crate::balancer::Balancers::new(settings.balancers.clone()).map_err(|e| format!("cannot map the balancers' shared memory: {e}"))?;
        let caches_responses = hosts.iter().any(|h| !h.config.cache.enable.is_empty());
        let tunnel_clients = Arc::new(crate::proxy_http::tunnel_clients::ClientTunnels::new().map_err(|e| format!("cannot map the WebSocket tunnels' shared memory: {e}"))?);
        let site = Site {
            balancers,
            tunnel_clients,
            caches_responses,
            uses_remote_ip,
            uses_proxy_protocol,
            server_header: server_header(settings.server_tokens),
            half_close: HalfClose::new(&settings.pools),
            settings,
            hosts,
            mime,
            error_log,
            access_logs,
            status: OnceLock::new(),
            metrics: OnceLock::new(),
            pools: OnceLock::new(),
            caches: Caches::default(),
            compresses,
        };
        site.reserve_cache_memory();
        Ok((site, fallbacks))
    }

    /// Fresh buffered writers for this thread's access logging.
    pub fn log_writers(&self) -> LogWriters {
        LogWriters {
            writers: self.access_logs.iter().map(|(fmt, f, c)| AccessLogWriter::new(fmt.clone(), f.clone(), c.clone(), self.settings.buffered_logs)).collect(),
            host_logs: self.hosts.iter().map(|h| h.logs.clone()).collect(),
        }
    }

    /// Reopens every log file (SIGUSR1). One that cannot be reopened
    /// (refused, see [`crate::root_files`]) keeps its file, and the error
    /// log says why.
    pub fn reopen_logs(&self) {
        // Hosts share a log they name alike: each file is reopened once.
        let error_logs = distinct(std::iter::once(&self.error_log).chain(self.hosts.iter().map(|h| &h.error_log)));
        let access_logs = distinct(self.access_logs.iter().map(|(_, f, _)| f));
        let errors = error_logs.into_iter().filter_map(|l| l.reopen().err());
        let failures: Vec<String> = errors.chain(access_logs.into_iter().filter_map(|f| f.reopen().err())).collect();
        for e in failures {
            self.error_log.error(None, &format!("reopening the logs: {e}; still writing to the file it had"));
        }
    }

    /// Name-based virtual hosting: among the hosts whose address matches
    /// the connection's local end, the one whose ServerName or ServerAlias is
    /// the Host, else the first of them; the main server if none matches.
    pub fn select_host(&self, host: Option<&[u8]>, local: SocketAddr) -> usize {
        if self.hosts.len() == 1 {
            return 0;
        }
        // The name in lower case, made once a virtual host serves the
        // address (often none does: those on other ports).
        let mut wanted: Option<Option<String>> = None;
        let mut first = None;
        for (i, h) in self.hosts.iter().enumerate().skip(1) {
            if !h.serves_address(local) {
                continue;
            }
            first.get_or_insert(i);
            let wanted = wanted.get_or_insert_with(|| {
                host.map(|h| {
                    let h = crate::logs::strip_port(h);
                    let h = h.strip_suffix(b".").unwrap_or(h);
                    String::from_utf8_lossy(h).to_ascii_lowercase()
                })
            });
            if let Some(w) = wanted.as_deref() {
                let c = &h.config;
                if c.server_name.as_deref() == Some(w) || c.aliases.iter().any(|a| wildcard_match(a, w)) {
                    return i;
                }
            }
        }
        first.unwrap_or(0)
    }


}

impl Host {
    /// Whether a virtual host's addresses take connections to `local`.
    pub(crate) fn serves_address(&self, local: SocketAddr) -> bool {
        let addrs = self.addrs.as_deref().unwrap_or(&[]);
        addrs.iter().any(|a| a.takes(local))
    }
}

/// Each of `items` once, the first of those that are the same.
fn distinct<'a, T>(items: impl Iterator<Item = &'a Arc<T>>) -> Vec<&'a Arc<T>> {
    let mut seen: Vec<&Arc<T>> = Vec::new();
    for item in items {
        if !seen.iter().any(|s| Arc::ptr_eq(s, item)) {
            seen.push(item);
        }
    }
    seen
}

/// Per-thread access log writers and which of them each host uses.
pub struct LogWriters {
    writers: Vec<AccessLogWriter>,
    host_logs: Vec<Vec<usize>>,
}

impl LogWriters {
    pub fn write(&mut self, host: usize, record: &LogRecord) {
        if let Some(idx) = self.host_logs.get(host) {
            for &i in idx {
                self.writers[i].write(record);
            }
        }
    }

    pub fn flush(&mut self) {
        for w in &mut self.writers {
            w.flush();
        }
    }

    pub fn is_empty(&self) -> bool {
        self.writers.is_empty()
    }
}

/// The names of the pools a host's handlers and ProxyPass routes use.
/// Virtual hosts inherit the main server's sections, where each site's
/// `<Directory>` names its own pool: a section counts for a host only if it
/// can apply to files under the host's DocumentRoot.
fn pools_used(config: &HostConfig) -> Vec<String> {
    let root = config.document_root.to_string_lossy();
    let applies = |m: &SectionMatch| match m {
        SectionMatch::Directory(d) => directories_overlap(d, &root),
        // Which directories a pattern names cannot be told; those above the
        // root can, and only they count (a pool used only through a
        // `<DirectoryMatch>` below the root has no status page).
        SectionMatch::DirectoryMatch(re) => ancestors(&root).any(|a| re.is_match(a)),
        _ => true,
    };
    let pool_of = |h: &Option<Option<Handler>>| match h {
        Some(Some(Handler::Pool(name))) => Some(name.clone()),
        Some(Some(Handler::FastCgi(FcgiBackend { addr: warren_config::FcgiAddr::Pool(name), .. }))) => Some(name.clone()),
        _ => None,
    };
    let sections = config.sections.iter().filter(|s| applies(&s.matcher) && s.within.as_deref().is_none_or(&applies)).map(|s| &s.config);
    let handlers = std::iter::once(&config.dir).chain(sections).filter_map(|d| pool_of(&d.handler));
    let routes = config.proxy_routes.iter().filter_map(|r| match r.target.as_ref().map(|t| &t.backend.addr) {
        Some(warren_config::FcgiAddr::Pool(name)) => Some(name.clone()),
        _ => None,
    });
    let mut names: Vec<String> = handlers.chain(routes).collect();
    names.sort();
    names.dedup();
    names
}
