//! Nodes -> [`Settings`]: walks the main server, its `<VirtualHost>`s, their
//! `<Directory>`/`<Files>`/`<Location>` sections and `<Pool>`s, hands each
//! directive to its entry in the [`table`](crate::table) (or reports it as
//! unknown, of another MPM, or out of place), then applies what is settled
//! only once everything is read: MPM corrections, inheritance by virtual
//! hosts, `SetHandler pool:` references.

use std::path::{Path, PathBuf};

use warren_regex::Regex;

use crate::dir_config::{DirConfig, DirSection, SectionMatch};
use crate::builder::Builder;
use crate::log_format;
use crate::mpm::Mpm;
use crate::parse::{ConfigError, Directive, Node, Origin, Reader, Section};
use crate::pool::PoolConfig;
use crate::settings::{HostConfig, Settings, VirtualHost};
use crate::table::{self, Apply, Context, Contexts};
use crate::settings::parse_vhost_addr;

/// Options for reading a config file, from the command line.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
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
    /// `<IfModule>` blocks skipped because warren lacks their module
    /// (`FILE:LINE: skipped N lines: ...`): said at `-t` and at start.
    pub skipped: Vec<ConfigError>,
    /// The lines that make files scripts warren cannot run (see
    /// [`crate::scripts`]): error-level notices at `-t` and at start, not
    /// errors, as Apache loads such a configuration.
    pub scripts: Vec<ConfigError>,
    /// How mpm-itk's, suexec's and mod_fcgid's lines were mapped onto
    /// pools (see [`crate::fcgid`]): notices at `-t` and at start.
    pub mapped: Vec<ConfigError>,
    /// The modules `LoadModule` loaded (MPMs aside), for `warren -M`.
    pub loaded_modules: Vec<&'static str>,
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
    builder.warnings.append(&mut reader.warnings);
    let mut loaded = builder.build(&nodes);
    loaded.skipped = std::mem::take(&mut reader.skipped);
    loaded.loaded_modules = std::mem::take(&mut reader.loaded_modules);
    if let Some(s) = loaded.settings.as_mut() {
        s.cgi.module_loaded = loaded.loaded_modules.iter().any(|m| matches!(*m, "cgi" | "cgid"));
    }
    loaded
}

/// What a directive sets, by the context it stands in.
enum Target<'a> {
    Server(&'a mut Settings),
    Host(&'a mut HostConfig),
    /// A section's config, with the section's name as written (for errors).
    Dir(&'a mut DirConfig, &'a str),
}

impl Builder {
    /// A skipped `<IfModule>` block standing in `ctx`: the script marks of
    /// its lines go to `dir`, those of its sections into sections of their
    /// own (returned, scoped by `within`). Nothing else in it is acted on,
    /// and nothing in it is an error: Apache never reads it.
    pub(crate) fn skipped_block(&mut self, sec: &Section, ctx: Context, dir: &mut DirConfig, within: Option<&SectionMatch>) -> Vec<DirSection> {
        let (errors, warnings) = (self.errors.len(), self.warnings.len());
        let was = std::mem::replace(&mut self.marks_only, true);
        let mut sections = Vec::new();
        for node in &sec.children {
            match node {
                Node::Directive(d) => self.mark_script(d, &mut dir.scripts),
                Node::Section(inner) if inner.name.eq_ignore_ascii_case("VirtualHost") || inner.name.eq_ignore_ascii_case("Pool") => {}
                Node::Section(inner) => sections.extend(self.dir_section(inner, ctx, within)),
                Node::Skipped(inner) => sections.extend(self.skipped_block(inner, ctx, dir, within)),
            }
        }
        self.marks_only = was;
        self.errors.truncate(errors);
        self.warnings.truncate(warnings);
        sections
    }

    /// Applies `d` to a per-directory config (an `.htaccess` file's).
    pub(crate) fn dir_directive(&mut self, d: &Directive, here: Context, config: &mut DirConfig, section: &str) {
        self.directive(d, here, Target::Dir(config, section));
    }

    /// A `<Files>` section of an `.htaccess` file, scoped to its directory.
    /// A `<RequireAll/Any/None>` block: one more rule of the section's.
    pub(crate) fn require_block(&mut self, sec: &Section, config: &mut DirConfig) {
        match crate::directives::values::parse_require_block(sec, self.in_htaccess) {
            Ok(r) => config.require.get_or_insert_with(Vec::new).push(r),
            Err((origin, m)) => self.error(&origin, m),
        }
    }

    pub(crate) fn nested_section(&mut self, sec: &Section, within: &SectionMatch) -> Vec<DirSection> {
        self.dir_section(sec, Context::Directory, Some(within))
    }

    fn build(mut self, nodes: &[Node]) -> Loaded {
        // LogFormat nicknames are global and may be used before they appear.
        self.collect_log_formats(nodes);

        let mut s = Settings::apache_defaults(&self.server_root, self.mpm);
        let mut pools = Vec::new();
        s.config_origin = Some(Origin { file: std::sync::Arc::new(self.config_file.clone()), line: 0 });

        for node in nodes {
            match node {
                Node::Section(sec) if sec.name.eq_ignore_ascii_case("VirtualHost") => {
                    if let Some(vh) = self.virtual_host(sec, &mut pools) {
                        s.virtual_hosts.push(vh);
                    }
                }
                Node::Section(sec) if sec.name.eq_ignore_ascii_case("Pool") => self.pool(sec, &mut pools),
                Node::Section(sec) if sec.name.eq_ignore_ascii_case("MDomainSet") => crate::directives::md::domain_set(&mut self, sec, &mut s),
                Node::Directive(d) if d.name.eq_ignore_ascii_case("PoolFile") => self.pool_file(d, &mut pools),
                Node::Section(sec) => {
                    let sections = self.dir_section(sec, Context::Server, None);
                    s.main.sections.extend(sections);
                    for d in std::mem::take(&mut self.location_proxy) {
                        self.directive(&d, Context::Server, Target::Server(&mut s));
                    }
                }
                Node::Skipped(sec) => {
                    let sections = self.skipped_block(sec, Context::Server, &mut s.main.dir, None);
                    s.main.sections.extend(sections);
                }
                Node::Directive(d) => self.directive(d, Context::Server, Target::Server(&mut s)),
            }
        }

        if s.listen.is_empty() {
            let origin = Origin { file: std::sync::Arc::new(self.config_file.clone()), line: 0 };
            self.error(&origin, "no Listen directive: warren would not listen anywhere (add e.g. `Listen 80`)");
        }
        let document_root_origin = self.document_root_origin.take();
        self.check_document_root(&s.main.document_root, document_root_origin.as_ref());
        let corrections = s.tuning.correct(self.mpm, &self.tuning_set);
        self.warnings.extend(corrections);

        let main_origin = Origin { file: std::sync::Arc::new(self.config_file.clone()), line: 0 };
        crate::directives::rewrite::check_dangling(&mut self, &s.main.dir, &main_origin);
        for vh in &s.virtual_hosts {
            crate::directives::rewrite::check_dangling(&mut self, &vh.host.dir, &vh.origin);
        }
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
            if vh.host.error_log.is_none() && vh.host.error_log_sink.is_none() {
                vh.host.error_log = s.main.error_log.clone();
                vh.host.error_log_sink = s.main.error_log_sink.clone();
                vh.host.error_log_origin = s.main.error_log_origin.clone();
            }
            if vh.host.server_admin.is_none() {
                vh.host.server_admin = s.main.server_admin.clone();
            }
            // A virtual host without a DocumentRoot serves the main server's, as in Apache.
            if vh.host.document_root.as_os_str().is_empty() {
                vh.host.document_root.clone_from(&s.main.document_root);
            }
            vh.host.proxy_routes.extend(s.main.proxy_routes.iter().cloned());
            vh.host.proxy_http.inherit(&s.main.proxy_http);
            vh.host.url_aliases.extend(s.main.url_aliases.iter().cloned());
            if vh.host.access_file_names.is_none() {
                vh.host.access_file_names.clone_from(&s.main.access_file_names);
            }
            if vh.host.proxy_timeout.is_none() {
                vh.host.proxy_timeout = s.main.proxy_timeout;
            }
            vh.host.remote_ip.inherit(&s.main.remote_ip);
            // mod_vhost_alias and mod_userdir merge a virtual host's lines over the main server's.
            let (va, main_va) = (&mut vh.host.vhost_alias, &s.main.vhost_alias);
            va.document_root = va.document_root.take().or_else(|| main_va.document_root.clone());
            va.script_alias = va.script_alias.take().or_else(|| main_va.script_alias.clone());
            if vh.host.user_dir.is_none() {
                vh.host.user_dir.clone_from(&s.main.user_dir);
            }
            vh.host.cache.inherit(&s.main.cache);
        }
        let https = std::mem::take(&mut self.https_listens);
        crate::directives::md::settle(&mut self, &mut s);
        crate::directives::tls::settle(&mut self, &mut s, &https);
        let mut reported = Vec::new();
        for host in std::iter::once(&s.main).chain(s.virtual_hosts.iter().map(|v| &v.host)) {
            crate::directives::proxy_http::settle(&mut self, host, &mut reported);
            crate::directives::cache::settle(&mut self, host);
        }
        let http2_loaded = self.http2_loaded;
        crate::directives::h2::settle(&mut self, &mut s, http2_loaded);
        s.error_log = s.main.error_log.clone();
        s.error_log_sink = s.main.error_log_sink.clone();
        for (name, origin) in std::mem::take(&mut self.pool_refs) {
            if !pools.iter().any(|p| p.name == name) {
                self.error(&origin, format!("SetHandler pool:{name}: no <Pool {name}> is defined"));
            }
        }
        let hosts: Vec<&crate::settings::HostConfig> = std::iter::once(&s.main).chain(s.virtual_hosts.iter().map(|v| &v.host)).collect();
        crate::directives::balancer::settle(&mut self, &hosts);
        s.balancers = std::mem::take(&mut self.balancers);
        self.map_per_user(&mut s, &mut pools);
        self.map_mod_php(&mut s, &mut pools);
        self.map_user_dirs(&mut s, &mut pools);
        s.pools = pools;
        self.say_inert();

        Loaded {
            settings: if self.errors.is_empty() { Some(s) } else { None },
            warnings: self.warnings,
            errors: self.errors,
            skipped: Vec::new(),
            scripts: self.script_notices,
            mapped: self.mapped,
            loaded_modules: Vec::new(),
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

    fn virtual_host(&mut self, sec: &Section, pools: &mut Vec<PoolConfig>) -> Option<VirtualHost> {
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
        let main_document_root_origin = self.document_root_origin.take();
        let mut per_user = self.per_user.clone();
        per_user.own = false;
        let main_per_user = std::mem::replace(&mut self.per_user, per_user);
        for node in &sec.children {
            match node {
                Node::Directive(d) if d.name.eq_ignore_ascii_case("PoolFile") => self.pool_file(d, pools),
                Node::Directive(d) => self.directive(d, Context::VirtualHost, Target::Host(&mut host)),
                Node::Section(inner) if inner.name.eq_ignore_ascii_case("VirtualHost") => {
                    self.error(&inner.origin, "<VirtualHost> cannot be nested");
                }
                Node::Section(inner) if inner.name.eq_ignore_ascii_case("Pool") => self.pool(inner, pools),
                Node::Section(inner) => {
                    let sections = self.dir_section(inner, Context::VirtualHost, None);
                    host.sections.extend(sections);
                    for d in std::mem::take(&mut self.location_proxy) {
                        self.directive(&d, Context::VirtualHost, Target::Host(&mut host));
                    }
                }
                Node::Skipped(inner) => {
                    let sections = self.skipped_block(inner, Context::VirtualHost, &mut host.dir, None);
                    host.sections.extend(sections);
                }
            }
        }
        let docroot_origin = std::mem::replace(&mut self.document_root_origin, main_document_root_origin);
        if docroot_origin.is_some() {
            self.check_document_root(&host.document_root, docroot_origin.as_ref());
        }
        let per_user = std::mem::replace(&mut self.per_user, main_per_user);
        Some(VirtualHost { addrs, host, origin: sec.origin.clone(), per_user: per_user.own.then_some(per_user) })
    }

    /// Each host with mpm-itk's, suexec's or mod_fcgid's lines (its own,
    /// or the main server's) gets its pool, and its fcgid scripts go there.
    fn map_per_user(&mut self, s: &mut Settings, pools: &mut Vec<PoolConfig>) {
        let main = std::mem::take(&mut self.per_user);
        let mut main_pool: Option<String> = None;
        if main.own {
            let origin = main.origin.clone().unwrap_or_else(|| Origin { file: std::sync::Arc::new(self.config_file.clone()), line: 0 });
            let (pool, notice) = crate::directives::fcgid::pool_of(&main, "fcgid-main", origin.clone());
            self.mapped.push(ConfigError { origin, message: notice });
            main_pool = Some(pool.name.clone());
            self.add_pool(pool, pools);
        }
        let len = |p: &crate::fcgid::PerUser| p.max_request_len.unwrap_or(crate::directives::fcgid::MAX_REQUEST_LEN);
        for vh in &mut s.virtual_hosts {
            let (name, max_len) = match vh.per_user.take() {
                Some(own) => {
                    let named = crate::directives::fcgid::pool_name("fcgid", vh.host.server_name.as_deref(), vh.origin.line);
                    let origin = own.origin.clone().unwrap_or_else(|| vh.origin.clone());
                    let (mut pool, notice) = crate::directives::fcgid::pool_of(&own, &named, origin.clone());
                    // The :80 and :443 hosts of one site share its pool.
                    match pools.iter().find(|p| p.name == named) {
                        Some(same) if same.same_processes(&pool) => {}
                        other => {
                            if other.is_some() {
                                pool.name = format!("{named}-{}", vh.origin.line);
                            }
                            self.mapped.push(ConfigError { origin, message: notice.replace(&named, &pool.name) });
                            pools.push(pool.clone());
                        }
                    }
                    (pool.name, len(&own))
                }
                None => match &main_pool {
                    Some(name) => (name.clone(), len(&main)),
                    None => continue,
                },
            };
            crate::directives::fcgid::route_marks(&mut vh.host, &name, max_len, &mut self.mapped, &mut self.script_notices);
        }
        if let Some(name) = main_pool {
            crate::directives::fcgid::route_marks(&mut s.main, &name, len(&main), &mut self.mapped, &mut self.script_notices);
        }
    }

    /// Each host with UserDir gets its users' pools (see [`crate::mass::pools_for`]).
    /// Not beside a pool of the server's own user (mod_php's, as Debian's
    /// php8.x.conf with userdir.conf makes one): that pool's code could use
    /// the users' sockets (see [`crate::accounts::check_pools_apart`]), so
    /// the users' scripts are refused instead, and the server still starts.
    fn map_user_dirs(&mut self, s: &mut Settings, pools: &mut Vec<PoolConfig>) {
        let (user, group) = (s.user.clone(), s.group.clone());
        let server_users_pool = crate::accounts::running_as_root()
            .then(|| crate::accounts::server_account(user.as_deref(), group.as_deref()).ok().flatten())
            .flatten()
            .filter(|server| !server.uid.is_root())
            .and_then(|server| {
                pools.iter().find(|p| crate::accounts::pool_account(p, user.as_deref(), group.as_deref()).is_ok_and(|a| a.is_some_and(|a| a.uid == server.uid)))
            })
            .map(|p| p.name.clone());
        let hosts = std::iter::once(&mut s.main).chain(s.virtual_hosts.iter_mut().map(|vh| &mut vh.host));
        for host in hosts {
            let Some(ud) = host.user_dir.as_mut() else { continue };
            let Some(origin) = ud.origin.clone() else { continue };
            if let Some(pool) = &server_users_pool {
                let why = format!("UserDir: the users' scripts are refused (503): <Pool {pool}> runs as the server's user, and its code could use a pool of theirs; give it a User of its own to run each user's scripts as that user");
                self.warnings.push(ConfigError { origin, message: why });
                continue;
            }
            ud.runtime_pools = true;
            // Room is kept for accounts made after start.
            let room = (crate::mass::TABLE_POOLS - crate::mass::RUNTIME_POOLS).saturating_sub(pools.len());
            let (made, said) = crate::mass::pools_for(ud, &origin, pools, room);
            let first = pools.is_empty() || !made.is_empty();
            pools.extend(made);
            if first {
                self.mapped.extend(said.into_iter().map(|message| ConfigError { origin: origin.clone(), message }));
            }
        }
    }

    /// Each host whose mod_php lines name files to run gets its PHP pool
    /// (after [`Self::map_per_user`], whose pool it takes when there is one).
    fn map_mod_php(&mut self, s: &mut Settings, pools: &mut Vec<PoolConfig>) {
        let main_origin = Origin { file: std::sync::Arc::new(self.config_file.clone()), line: 0 };
        // The main server's PHP needs a pool only where it answers requests:
        // a pool of the server's user beside the hosts' own would be refused.
        let main_serves = crate::directives::mod_php::main_serves(s);
        let hosts = std::iter::once((&mut s.main, "php-main".to_string(), main_origin)).filter(|_| main_serves).chain(
            s.virtual_hosts.iter_mut().map(|vh| {
                let name = crate::directives::fcgid::pool_name("php", vh.host.server_name.as_deref(), vh.origin.line);
                (&mut vh.host, name, vh.origin.clone())
            }),
        );
        for (host, name, origin) in hosts {
            let own = host.fcgid_pool.clone();
            let routed = crate::directives::mod_php::route_host(host, own.as_deref(), &name, &origin, pools, &mut self.script_notices);
            self.mapped.extend(routed.notices);
            self.warnings.extend(routed.warnings);
        }
    }

    fn pool(&mut self, sec: &Section, pools: &mut Vec<PoolConfig>) {
        if let Some(p) = crate::pool::parse_pool(sec, true, &mut self.errors, &mut self.warnings) {
            self.add_pool(p, pools);
        }
    }

    /// `PoolFile PATH`: the pools of a php-fpm pool file.
    fn pool_file(&mut self, d: &Directive, pools: &mut Vec<PoolConfig>) {
        let Some(path) = self.one(d) else { return };
        let path = self.resolve(&path);
        for p in crate::pool_file::read_pool_file(&path, &d.origin, &mut self.errors, &mut self.warnings) {
            self.add_pool(p, pools);
        }
    }

    fn add_pool(&mut self, mut p: PoolConfig, pools: &mut Vec<PoolConfig>) {
        p.slowlog = p.slowlog.map(|s| self.resolve(&s.to_string_lossy()));
        if let Some(first) = pools.iter().find(|q| q.name == p.name) {
            let at = format!("{}:{}", first.origin.file.display(), first.origin.line);
            self.error(&p.origin, format!("<Pool {}> is already defined at {at}", p.name));
            return;
        }
        pools.push(p);
    }
    /// Hands `d` to its entry in the table if it exists for this MPM and may
    /// stand `here`, else says which of those it fails.
    fn directive(&mut self, d: &Directive, here: Context, target: Target) {
        if self.marks_only {
            if let Target::Dir(dir, _) = target {
                self.mark_script(d, &mut dir.scripts);
            }
            return;
        }
        let Some(spec) = table::find(&d.name).filter(|spec| spec.mpms.contains(&self.mpm)) else {
            self.unknown(d);
            return;
        };
        if !spec.contexts.allows(here) {
            let message = match (&target, here) {
                (_, Context::Server) => format!("{} is only allowed in {}", d.name, spec.contexts.describe()),
                (_, Context::VirtualHost) if spec.contexts == Contexts::SERVER => {
                    format!("{} is not allowed in {}; it is a server-wide directive", d.name, here.describe())
                }
                (Target::Dir(_, section), _) => format!("{} is not allowed in <{section}>", d.name),
                _ => format!("{} is not allowed in {}", d.name, here.describe()),
            };
            self.error(&d.origin, message);
            return;
        }
        if spec.name.starts_with("Rewrite") && !spec.name.eq_ignore_ascii_case("RewriteMap") && matches!(&target, Target::Dir(_, section) if !section.eq_ignore_ascii_case("Directory") && *section != ".htaccess") {
            self.error(&d.origin, format!("{} is not supported in these sections by warren: use <Directory> or .htaccess (Apache's per-directory rules in <Location> and <Files> are unreliable too)", d.name));
            return;
        }
        if spec.name.starts_with("AllowOverride") && !matches!(&target, Target::Dir(_, section) if section.eq_ignore_ascii_case("Directory")) {
            self.error(&d.origin, format!("{} not allowed here: only in <Directory> (not its regex form)", d.name));
            return;
        }
        match (spec.apply, target) {
            (Apply::Server(apply), Target::Server(s)) => apply(self, d, s),
            (Apply::Count(_), Target::Server(s)) if spec.canonical_name() == "MaxRequestWorkers" && d.args.len() == 1 && d.args[0].eq_ignore_ascii_case("auto") => {
                s.tuning.max_request_workers_auto = true;
                self.tuning_set.push((spec.canonical_name(), d.origin.clone()));
            }
            (Apply::Count(field), Target::Server(s)) => {
                if spec.canonical_name() == "MaxRequestWorkers" {
                    s.tuning.max_request_workers_auto = false;
                }
                if let Some(n) = self.whole_number(d) {
                    *field(&mut s.tuning) = n.min(u32::MAX as u64) as u32;
                    self.tuning_set.push((spec.canonical_name(), d.origin.clone()));
                }
            }
            (Apply::Host(apply), Target::Server(s)) => apply(self, d, &mut s.main),
            (Apply::Host(apply), Target::Host(host)) => apply(self, d, host),
            (Apply::Dir(apply), Target::Server(s)) => apply(self, d, &mut s.main.dir),
            (Apply::Dir(apply), Target::Host(host)) => apply(self, d, &mut host.dir),
            (Apply::Dir(apply), Target::Dir(dir, _)) => apply(self, d, dir),
            // The reader acts on these as it reads, wherever they stand.
            (Apply::WhileReading, _) => {}
            (Apply::Inert(why), _) => match self.inert.iter_mut().find(|(name, ..)| *name == spec.name) {
                Some((.., count)) => *count += 1,
                None => self.inert.push((spec.name, why, d.origin.clone(), 1)),
            },
            _ => unreachable!("{}: the table allows it where its function cannot apply (see table::tests)", spec.name),
        }
    }

    /// An error for a directive warren does not have, or has only under
    /// another MPM (saying which).
    fn unknown(&mut self, d: &Directive) {
        if let Some(m) = crate::modules::refusing(&d.name) {
            let why = match m.support {
                crate::modules::Support::Refuses(why) => why,
                _ => "",
            };
            self.error(&d.origin, format!("{} (mod_{}) is not supported: {why}", d.name, m.name));
            return;
        }
        let hint = match table::find(&d.name).map(|spec| spec.mpms) {
            Some([Mpm::Prefork]) => format!(" with the {} MPM (it belongs to prefork; put it in <IfModule mpm_prefork_module>)", self.mpm.name()),
            Some([Mpm::Event, Mpm::Worker]) => " with the prefork MPM (it belongs to worker and event)".to_string(),
            _ => String::new(),
        };
        self.error(&d.origin, format!("unknown or unsupported directive '{}'{hint}", d.name));
    }

    /// A container section, followed by the `<Files>` sections nested in it
    /// (scoped to it by `within`).
    fn dir_section(&mut self, sec: &Section, ctx: Context, within: Option<&SectionMatch>) -> Vec<DirSection> {
        let lname = sec.name.to_ascii_lowercase();
        if matches!(lname.as_str(), "if" | "elseif" | "else") {
            return self.if_section(sec, ctx, within);
        }
        if lname == "proxy" && matches!(ctx, Context::Server | Context::VirtualHost) && within.is_none() {
            crate::directives::balancer::section(self, sec);
            return Vec::new();
        }
        let (regex_form, arg) = match sec.args.as_slice() {
            [a] => (false, a.clone()),
            [t, a] if t == "~" => (true, a.clone()),
            _ => {
                self.error(&sec.origin, format!("<{}> takes one argument (or ~ and a regular expression)", sec.name));
                return Vec::new();
            }
        };
        let compile = |b: &mut Builder, re: &str| match Regex::new(re) {
            Ok(r) => Some(r.at(&sec.origin)),
            Err(e) => {
                b.error(&sec.origin, format!("bad regular expression in <{}>: {e}", sec.name));
                None
            }
        };
        let parsed = match (lname.as_str(), regex_form) {
            ("directory", false) => {
                let path = self.resolve(&arg).to_string_lossy().trim_end_matches('/').to_string();
                Some((SectionMatch::Directory(path), Context::Directory))
            }
            ("directory", true) | ("directorymatch", false) => compile(self, &arg).map(|r| (SectionMatch::DirectoryMatch(r), Context::Directory)),
            ("files", false) => Some((SectionMatch::Files(arg), Context::Files)),
            ("files", true) | ("filesmatch", false) => compile(self, &arg).map(|r| (SectionMatch::FilesMatch(r), Context::Files)),
            ("location", false) => Some((SectionMatch::Location(arg), Context::Location)),
            ("location", true) | ("locationmatch", false) => compile(self, &arg).map(|r| (SectionMatch::LocationMatch(r), Context::Location)),
            _ => {
                self.error(&sec.origin, format!("unknown or unsupported section <{}>", sec.name));
                None
            }
        };
        let Some((matcher, inner_ctx)) = parsed else { return Vec::new() };
        let allowed = match inner_ctx {
            Context::Directory | Context::Location => matches!(ctx, Context::Server | Context::VirtualHost),
            _ => matches!(ctx, Context::Server | Context::VirtualHost | Context::Directory),
        };
        if !allowed {
            self.error(&sec.origin, format!("<{}> is not allowed in {}", sec.name, ctx.describe()));
            return Vec::new();
        }
        self.section_body(sec, matcher, inner_ctx, within)
    }

    /// A section's directives, then the sections nested in it.
    pub(crate) fn section_body(&mut self, sec: &Section, matcher: SectionMatch, inner_ctx: Context, within: Option<&SectionMatch>) -> Vec<DirSection> {
        // An <If> chain does not reach into or out of a section.
        let outer_chain = self.if_chain.take();
        let outer_around = std::mem::replace(&mut self.around, within.cloned());
        let mut config = DirConfig::default();
        let mut nested = Vec::new();
        for node in &sec.children {
            match node {
                // `<Location /api/> ProxyPass http://b/`: the host's route for the section's path.
                Node::Directive(d) if crate::proxy_http::in_location(d) => match &matcher {
                    SectionMatch::Location(path) if within.is_none() => {
                        self.location_proxy.push(crate::parse::Directive { name: d.name.clone(), args: std::iter::once(path.clone()).chain(d.args.iter().cloned()).collect(), origin: d.origin.clone() })
                    }
                    _ => self.error(&d.origin, format!("{} is not allowed in <{}> (only in <Location /path>, with the backend URL alone)", d.name, sec.name)),
                },
                Node::Directive(d) => self.directive(d, inner_ctx, Target::Dir(&mut config, &sec.name)),
                Node::Section(inner) if crate::directives::values::require_block_kind(&inner.name).is_some() => self.require_block(inner, &mut config),
                Node::Section(inner) => {
                    let sections = self.dir_section(inner, inner_ctx, Some(&matcher));
                    nested.extend(sections);
                }
                Node::Skipped(inner) => {
                    let sections = self.skipped_block(inner, inner_ctx, &mut config, Some(&matcher));
                    nested.extend(sections);
                }
            }
        }
        match (&matcher, &mut config.rewrite) {
            (SectionMatch::Directory(path), Some(set)) => set.directory = Some(path.clone()),
            (_, Some(_)) => self.error(&sec.origin, format!("rewrite rules in <{} ~ ...> or <DirectoryMatch> are not supported by warren: use <Directory> or .htaccess", sec.name)),
            _ => {}
        }
        crate::directives::rewrite::check_dangling(self, &config, &sec.origin);
        let section = DirSection { matcher, within: within.map(|w| Box::new(w.clone())), config, origin: sec.origin.clone() };
        let mut out = vec![section];
        out.append(&mut nested);
        self.if_chain = outer_chain;
        self.around = outer_around;
        out
    }
}
