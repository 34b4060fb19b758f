//! What `apache2ctl -S`, `-M` and `-V` print, for warren: the virtual
//! hosts by address (with their DocumentRoots and pools, which Apache does
//! not show), the listeners and pools, the modules a configuration has and
//! what warren makes of each, and the build and its paths. The layout is
//! Apache's where Apache has the same line, so that scripts and habits that
//! read apache2ctl's output read warren's.

use std::fmt::Write as _;
use std::path::Path;

use warren_config::modules::{self, Support};
use warren_config::Handler;
use warren_config::{HostConfig, Mpm, Settings, VhostAddr};

/// Where the Debian package puts the configuration (`-V`'s SERVER_CONFIG_FILE).
pub const PACKAGE_CONFIG: &str = "/etc/warren/warren.conf";

/// `warren -S`: Apache's `VirtualHost configuration:` block, then the run
/// configuration (`-D DUMP_RUN_CFG`), then warren's listeners and pools.
pub fn dump_vhosts(s: &Settings, defines: &[String]) -> String {
    let mut out = String::from("VirtualHost configuration:\n");
    // By address, in the order the addresses first appear, as Apache groups them.
    let mut addresses: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, vh) in s.virtual_hosts.iter().enumerate() {
        for a in &vh.addrs {
            let key = address(a);
            match addresses.iter_mut().find(|(k, _)| *k == key) {
                Some((_, hosts)) => hosts.push(i),
                None => addresses.push((key, vec![i])),
            }
        }
    }
    let fallback = s.main.server_name.clone().unwrap_or_else(hostname);
    for (addr, hosts) in &addresses {
        let name = |i: usize| s.virtual_hosts[i].host.server_name.clone().unwrap_or_else(|| fallback.clone());
        if let [only] = hosts[..] {
            let vh = &s.virtual_hosts[only];
            let _ = writeln!(out, "{addr:<22} {} ({})", name(only), vh.origin);
            host_details(&mut out, &vh.host, "         ");
            continue;
        }
        let _ = writeln!(out, "{addr:<22} is a NameVirtualHost");
        let first = &s.virtual_hosts[hosts[0]];
        let _ = writeln!(out, "         default server {} ({})", name(hosts[0]), first.origin);
        let port = addr.rsplit_once(':').map_or("*", |(_, p)| p);
        for &i in hosts {
            let vh = &s.virtual_hosts[i];
            let _ = writeln!(out, "         port {port} namevhost {} ({})", name(i), vh.origin);
            for alias in &vh.host.aliases {
                let _ = writeln!(out, "                 alias {alias}");
            }
            host_details(&mut out, &vh.host, "                 ");
        }
    }
    let _ = writeln!(out, "ServerRoot: \"{}\"", s.server_root.display());
    let _ = writeln!(out, "Main DocumentRoot: \"{}\"", s.main.document_root.display());
    if let Some(log) = s.error_log.as_ref().or(s.main.error_log.as_ref()) {
        let _ = writeln!(out, "Main ErrorLog: \"{}\"", log.display());
    }
    if let Some(pid) = &s.pid_file {
        let _ = writeln!(out, "PidFile: \"{}\"", pid.display());
    }
    for d in defines {
        let _ = writeln!(out, "Define: {d}");
    }
    for (kind, spec) in [("User", &s.user), ("Group", &s.group)] {
        if let Some(spec) = spec {
            let id = account_id(kind, spec).map_or_else(|| "unknown".to_string(), |id| id.to_string());
            let _ = writeln!(out, "{kind}: name=\"{spec}\" id={id}");
        }
    }
    let _ = writeln!(out, "MPM: {}", s.mpm.name());
    out.push_str("Listen:\n");
    for l in &s.listen {
        let scheme = if s.https_listen.contains(l) || s.tls_listener(*l) { "https" } else { "http" };
        let _ = writeln!(out, "         {l} ({scheme})");
    }
    let main_pools = pools_of(&s.main);
    if !main_pools.is_empty() {
        let _ = writeln!(out, "Main pools: {}", main_pools.join(", "));
    }
    if !s.pools.is_empty() {
        out.push_str("Pools:\n");
        for p in &s.pools {
            let user = p.user.as_deref().or(s.user.as_deref()).unwrap_or("(warren's)");
            let max = if p.max_children_auto { format!("auto (up to {})", p.max_children) } else { p.max_children.to_string() };
            let _ = writeln!(out, "         {} ({}): {} as {user}, pm {}, max_children {max}", p.name, p.origin, p.command.join(" "), format!("{:?}", p.pm).to_lowercase());
        }
    }
    out
}

/// A virtual host's DocumentRoot and pools, under its name line.
fn host_details(out: &mut String, host: &HostConfig, indent: &str) {
    let _ = writeln!(out, "{indent}DocumentRoot \"{}\"", host.document_root.display());
    let pools = pools_of(host);
    if !pools.is_empty() {
        let _ = writeln!(out, "{indent}pools: {}", pools.join(", "));
    }
}

/// The pools a host's own lines send scripts to.
fn pools_of(host: &HostConfig) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let handlers = std::iter::once(&host.dir.handler).chain(host.sections.iter().map(|s| &s.config.handler));
    let named = handlers.filter_map(|h| match h {
        Some(Some(Handler::Pool(name))) => Some(name.clone()),
        _ => None,
    });
    for name in named.chain(host.php_pool.iter().map(|p| p.name.clone())).chain(host.fcgid_pool.iter().cloned()) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// `*:80`, `127.0.0.1:8080`, `[::1]:443`, as Apache writes a vhost's address.
fn address(a: &VhostAddr) -> String {
    let ip = match a.ip {
        None => "*".to_string(),
        Some(std::net::IpAddr::V6(v6)) => format!("[{v6}]"),
        Some(ip) => ip.to_string(),
    };
    let port = a.port.map_or_else(|| "*".to_string(), |p| p.to_string());
    format!("{ip}:{port}")
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|h| h.trim().to_string()).filter(|h| !h.is_empty()).unwrap_or_else(|| "localhost".into())
}

/// The numeric id of a `User` or `Group` value (a name or `#id`).
fn account_id(kind: &str, spec: &str) -> Option<u32> {
    if kind == "User" {
        warren_config::accounts::lookup_user(spec).ok().map(|a| a.uid.as_raw())
    } else {
        warren_config::accounts::lookup_group(spec).ok().map(|g| g.as_raw())
    }
}

/// `warren -M`: `Loaded Modules:` as Apache lists them, each with what
/// warren makes of it. `(static)`: always there, as `<IfModule>` sees it;
/// `(shared)`: there because a `LoadModule` line loaded it.
pub fn dump_modules(mpm: Mpm, loaded: &[&str]) -> String {
    let mut out = String::from("Loaded Modules:\n");
    for m in modules::MODULES {
        let always = !modules::LOADED_ONLY.contains(&m.name);
        let present = match m.support {
            Support::Mpm => m.identifier() == mpm.module(),
            Support::Lacks(_) => false,
            _ => always || loaded.contains(&m.name),
        };
        if !present {
            continue;
        }
        let how = if always && !loaded.contains(&m.name) { "static" } else { "shared" };
        let what = match m.support {
            Support::Provides(what) => format!("built in: {what}"),
            Support::Mpm => "built in: the MPM in force".to_string(),
            Support::Inert(why) => format!("accepted, not acted on: {why}"),
            Support::Refuses(why) => format!("its directives {} are refused: {why}", m.refused.join(", ")),
            Support::Lacks(_) => unreachable!("filtered out above"),
        };
        let _ = writeln!(out, " {} ({how}) - {what}", m.identifier());
    }
    out
}

/// `warren -V`: the version, the build, the MPM and the paths, in the
/// shape of `apache2 -V`.
pub fn version_report(settings: Option<&Settings>, config: Option<&Path>) -> String {
    let mut out = version_line();
    let profile = if cfg!(debug_assertions) { "debug" } else { "release" };
    let _ = writeln!(out, "Server built:   {profile} build, Rust edition 2021");
    let _ = writeln!(out, "Architecture:   {}-bit {} {}", usize::BITS, std::env::consts::ARCH, std::env::consts::OS);
    let mpm = settings.map_or(Mpm::Event, |s| s.mpm);
    let _ = writeln!(out, "Server MPM:     {}", mpm.name());
    let (threaded, forked) = match mpm {
        Mpm::Prefork => ("no", "yes (variable process count)"),
        Mpm::Worker | Mpm::Event => ("yes (fixed thread count)", "yes (variable process count)"),
    };
    let _ = writeln!(out, "  threaded:     {threaded}\n    forked:     {forked}");
    let others: Vec<&str> = Mpm::ALL.iter().map(|m| m.name()).collect();
    let _ = writeln!(out, "  built in:     {} (LoadModule mpm_*_module or --mpm chooses)", others.join(", "));
    out.push_str("Server compiled with....\n");
    let config_file = config.map_or_else(|| PACKAGE_CONFIG.to_string(), |c| std::path::absolute(c).unwrap_or_else(|_| c.to_path_buf()).display().to_string());
    let root = settings.map_or_else(|| "/etc/warren".to_string(), |s| s.server_root.display().to_string());
    let _ = writeln!(out, " -D HTTPD_ROOT=\"{root}\"");
    let _ = writeln!(out, " -D SERVER_CONFIG_FILE=\"{config_file}\"");
    if let Some(pid) = settings.and_then(|s| s.pid_file.as_ref()) {
        let _ = writeln!(out, " -D DEFAULT_PIDLOG=\"{}\"", pid.display());
    }
    if let Some(log) = settings.and_then(|s| s.error_log.as_ref().or(s.main.error_log.as_ref())) {
        let _ = writeln!(out, " -D DEFAULT_ERRORLOG=\"{}\"", log.display());
    }
    out
}

/// `Server version: warren/0.1.0 (Debian)`, as `apache2 -v` starts.
pub fn version_line() -> String {
    format!("Server version: warren/{} ({})\n", env!("CARGO_PKG_VERSION"), std::env::consts::OS)
}
