//! The directives of mpm-itk (`AssignUserID`, `MaxClientsVHost`), suexec
//! (`SuexecUserGroup`) and mod_fcgid, read into the builder's
//! [`PerUser`](crate::fcgid::PerUser), and their mapping onto one pool of
//! the host's once it is read ([`pool_of`], [`route_marks`]); see
//! [`fcgid`](crate::fcgid) for the whole story. The request half is the
//! handler's FastCGI gateway to warren's pools (warren-fpm runs them).

use std::time::Duration;

use crate::builder::Builder;
use crate::dir_config::{DirConfig, DirSection, SectionMatch};
use crate::fcgid::PerUser;
use crate::parse::{ConfigError, Directive, Origin};
use crate::pool::{PmStyle, PoolConfig};
use crate::scripts::{Handler, ScriptMark};
use crate::settings::HostConfig;

/// mod_fcgid's defaults, for what a configuration leaves out.
const MAX_PROCESSES: u32 = 1000;

const MAX_PROCESSES_PER_CLASS: u32 = 100;

const MIN_PROCESSES_PER_CLASS: u32 = 3;

const IDLE_TIMEOUT: u64 = 300;

const BUSY_TIMEOUT: u64 = 300;

pub const MAX_REQUEST_LEN: u64 = 131_072;

fn number(b: &mut Builder, d: &Directive) -> Option<u64> {
    match d.args.as_slice() {
        [n] => match n.parse::<u64>() {
            Ok(v) => Some(v),
            Err(_) => {
                b.error(&d.origin, format!("{} takes a whole number, not '{n}'", d.name));
                None
            }
        },
        _ => {
            b.error(&d.origin, format!("{} takes one number", d.name));
            None
        }
    }
}

/// `AssignUserID user group` and `SuexecUserGroup user group`.
pub(crate) fn assign_user(b: &mut Builder, d: &Directive, _: &mut DirConfig) {
    let [user, group] = d.args.as_slice() else {
        return b.error(&d.origin, format!("{} takes a user and a group", d.name));
    };
    b.per_user.said(d);
    b.per_user.account = Some((user.clone(), group.clone(), d.origin.clone()));
}

/// mod_fcgid's and mpm-itk's limits, by directive.
pub(crate) fn limit(b: &mut Builder, d: &Directive, _: &mut DirConfig) {
    let Some(n) = number(b, d) else { return };
    let small = n.min(u32::MAX as u64) as u32;
    let p = &mut b.per_user;
    match d.name.to_ascii_lowercase().as_str() {
        "fcgidmaxprocesses" => p.max_processes = Some(small),
        "fcgidmaxprocessesperclass" => p.max_per_class = Some(small),
        "fcgidminprocessesperclass" => p.min_per_class = Some(small),
        "maxclientsvhost" => p.max_clients_vhost = Some(small),
        "fcgidmaxrequestsperprocess" => p.max_requests = Some(small),
        "fcgididletimeout" => p.idle_timeout = Some(n),
        "fcgidbusytimeout" => p.busy_timeout = Some(n),
        "fcgidmaxrequestlen" => p.max_request_len = Some(n),
        _ => {}
    }
    p.said(d);
}

/// `FcgidWrapper CMD [.suffix] [virtual]`: the pool's command; a suffix
/// marks those files as scripts, as `AddHandler fcgid-script` does.
pub(crate) fn wrapper(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    let Some(command) = d.args.first() else {
        return b.error(&d.origin, "FcgidWrapper takes a command, and optionally a suffix and `virtual`");
    };
    let words: Vec<String> = command.split_whitespace().map(str::to_string).collect();
    if words.is_empty() {
        return b.error(&d.origin, "FcgidWrapper: the command is empty");
    }
    b.per_user.said(d);
    b.per_user.wrapper = Some(words);
    b.mark_script(d, &mut dir.scripts);
}

/// `FcgidInitialEnv NAME [VALUE]`: in the children's environment.
pub(crate) fn initial_env(b: &mut Builder, d: &Directive, _: &mut DirConfig) {
    let (name, value) = match d.args.as_slice() {
        [n] => (n.clone(), String::new()),
        [n, v] => (n.clone(), v.clone()),
        _ => return b.error(&d.origin, "FcgidInitialEnv takes a name and optionally a value"),
    };
    b.per_user.said(d);
    b.per_user.env.push((name, value));
}

/// The extensions of `mark` that the host's pool runs: a wrapper's own
/// suffix, and of `AddHandler fcgid-script`, PHP's alone. mod_fcgid runs
/// other files (Debian's `.fcgi`) as programs of their own; php-cgi would
/// print their text, so they stay scripts answered 500.
fn pool_extensions(mark: &ScriptMark) -> Vec<String> {
    let line = mark.directive.to_ascii_lowercase();
    let exts = mark.extensions.clone().unwrap_or_default();
    if line.starts_with("fcgidwrapper ") {
        return exts;
    }
    if !line.starts_with("addhandler fcgid-script ") {
        return Vec::new();
    }
    let is_php = |e: &str| e == "phtml" || e.strip_prefix("php").is_some_and(|v| v.chars().all(|c| c.is_ascii_digit()));
    exts.into_iter().filter(|e| is_php(e)).collect()
}

/// The name of a virtual host's pool: `prefix` (`fcgid`, `php`), `-` and
/// its ServerName (in the characters a pool's name may have), or its line.
pub fn pool_name(prefix: &str, server_name: Option<&str>, line: usize) -> String {
    match server_name {
        Some(n) => format!("{prefix}-{}", n.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c.to_ascii_lowercase() } else { '_' }).collect::<String>()),
        None => format!("{prefix}-vhost-{line}"),
    }
}

/// The pool for a host's lines, named `name`, and the notice saying how
/// they were mapped.
pub fn pool_of(per_user: &PerUser, name: &str, origin: Origin) -> (PoolConfig, String) {
    let mut p = PoolConfig::new(name, per_user.wrapper.clone().unwrap_or_else(|| vec!["php-cgi".to_string()]), origin);
    if let Some((user, group, _)) = &per_user.account {
        p.user = Some(user.clone());
        p.group = Some(group.clone());
    }
    let max = per_user.max_per_class.unwrap_or(MAX_PROCESSES_PER_CLASS).min(per_user.max_processes.unwrap_or(MAX_PROCESSES));
    p.max_children = per_user.max_clients_vhost.map_or(max, |c| c.min(max)).max(1);
    let min = per_user.min_per_class.unwrap_or(MIN_PROCESSES_PER_CLASS).min(p.max_children);
    // mod_fcgid starts children as requests come and keeps `min` of them
    // once started: php-fpm's ondemand, or dynamic keeping `min` spare.
    if min == 0 {
        p.pm = PmStyle::Ondemand;
        p.start_servers = 0;
    } else {
        p.pm = PmStyle::Dynamic;
        (p.start_servers, p.min_spare_servers, p.max_spare_servers) = (min, min, min);
    }
    p.process_idle_timeout = Duration::from_secs(per_user.idle_timeout.unwrap_or(IDLE_TIMEOUT));
    p.max_requests = per_user.max_requests.unwrap_or(0);
    p.request_terminate_timeout = Some(Duration::from_secs(per_user.busy_timeout.unwrap_or(BUSY_TIMEOUT)));
    p.env.clone_from(&per_user.env);
    let who = match &per_user.account {
        Some((user, group, at)) => format!("as {user}:{group} ({at})"),
        None => "as the pools' default user".to_string(),
    };
    let pm = match p.pm {
        PmStyle::Ondemand => "ondemand".to_string(),
        _ => format!("dynamic, {min} kept"),
    };
    let notice = format!(
        "mpm-itk/suexec/mod_fcgid lines mapped to warren's pool {name}: `{}` {who}, pm {pm}, pm.max_children {}, pm.max_requests {}, idle timeout {}s, request_terminate_timeout {}s, request bodies up to {} bytes, {} environment variable(s); one pool of kept children, no fork per request",
        p.command.join(" "),
        p.max_children,
        p.max_requests,
        p.process_idle_timeout.as_secs(),
        per_user.busy_timeout.unwrap_or(BUSY_TIMEOUT),
        per_user.max_request_len.unwrap_or(MAX_REQUEST_LEN),
        p.env.len(),
    );
    (p, notice)
}

/// The sections that send the files `host`'s fcgid marks name to `pool`,
/// put before its own; the marks' lines are said as mapped, not as 500s.
pub fn route_marks(host: &mut HostConfig, pool: &str, max_request_len: u64, notices: &mut Vec<ConfigError>, scripts: &mut Vec<ConfigError>) {
    let mut partly = Vec::new();
    let mut section_for = |mark: &ScriptMark, within: Option<Box<SectionMatch>>| -> Option<DirSection> {
        let exts = pool_extensions(mark);
        if exts.is_empty() {
            return None;
        }
        if mark.extensions.as_ref().is_some_and(|all| all.len() > exts.len()) {
            partly.push(mark.origin.clone());
        }
        let re = files_ending_in(&exts)?;
        let config = DirConfig { handler: Some(Some(Handler::Pool(pool.to_string()))), limit_request_body: Some(max_request_len), ..DirConfig::default() };
        Some(DirSection { matcher: SectionMatch::FilesMatch(re), within, config, origin: mark.origin.clone() })
    };
    let mut added = Vec::new();
    for mark in &host.dir.scripts {
        added.extend(section_for(mark, None));
    }
    for s in &host.sections {
        if matches!(s.matcher, SectionMatch::Directory(_) | SectionMatch::DirectoryMatch(_)) && s.within.is_none() {
            for mark in &s.config.scripts {
                added.extend(section_for(mark, Some(Box::new(s.matcher.clone()))));
            }
        }
    }
    for a in &added {
        let ends = match &a.matcher {
            SectionMatch::FilesMatch(re) => re.as_str().to_string(),
            _ => String::new(),
        };
        if !partly.contains(&a.origin) {
            scripts.retain(|e| e.origin != a.origin);
        }
        notices.push(ConfigError { origin: a.origin.clone(), message: format!("the files matching {ends} run in warren's pool {pool}") });
    }
    host.sections.splice(0..0, added);
    host.fcgid_pool = Some(pool.to_string());
}

/// `(?i)\.(php|phtml)$`: the files ending in one of `exts`, for a
/// `<FilesMatch>` of a pool's.
pub(crate) fn files_ending_in(exts: &[String]) -> Option<warren_regex::Regex> {
    let pattern = format!("(?i)\\.({})$", exts.iter().map(|e| regex_escape(e)).collect::<Vec<_>>().join("|"));
    warren_regex::Regex::new(&pattern).ok()
}

fn regex_escape(s: &str) -> String {
    s.chars().flat_map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { vec![c] } else { vec!['\\', c] }).collect()
}

#[cfg(test)]
mod tests {
    use crate::dir_config::SectionMatch;
    use crate::pool::PmStyle;
    use crate::scripts::Handler;
    use crate::test_support::load_text;

    /// The :80 and :443 hosts of one site with its mpm-itk and mod_fcgid
    /// lines: one pool as its user, with mod_fcgid's limits, said once; a
    /// host without such lines has none.
    #[test]
    fn hosts_map_to_one_pool_with_the_limits() {
        let host = "  ServerName Site.example\n  AssignUserID alice alice\n  MaxClientsVHost 7\n  Options +ExecCGI\n  AddHandler fcgid-script .php .phtml\n  FcgidWrapper \"/usr/bin/php-cgi -d x=1\"\n  FcgidMinProcessesPerClass 0\n  FcgidMaxRequestsPerProcess 500\n  FcgidIdleTimeout 60\n  FcgidBusyTimeout 90\n  FcgidInitialEnv PHPRC /etc/site\n";
        let text = format!("Listen 8080\nListen 8443\n<VirtualHost *:8080>\n{host}</VirtualHost>\n<VirtualHost *:8443>\n{host}</VirtualHost>\n<VirtualHost *:8080>\n  ServerName other.example\n</VirtualHost>\n");
        let (l, _d) = load_text("fcgid-map", &text, &[]);
        assert!(l.errors.is_empty(), "{:?}", l.errors);
        let s = l.settings.unwrap();
        assert_eq!(s.pools.len(), 1, "{:?}", s.pools);
        let p = &s.pools[0];
        assert_eq!((p.name.as_str(), p.user.as_deref(), p.group.as_deref()), ("fcgid-site.example", Some("alice"), Some("alice")));
        assert_eq!(p.command, ["/usr/bin/php-cgi", "-d", "x=1"]);
        assert_eq!((p.pm, p.max_children, p.max_requests, p.process_idle_timeout.as_secs()), (PmStyle::Ondemand, 7, 500, 60));
        assert_eq!(p.request_terminate_timeout.map(|t| t.as_secs()), Some(90));
        assert_eq!(p.env, [("PHPRC".to_string(), "/etc/site".to_string())]);
        let said: Vec<String> = l.mapped.iter().map(ToString::to_string).collect();
        assert_eq!(said.iter().filter(|m| m.contains("mapped to warren's pool")).count(), 1, "{said:?}");
        for vh in &s.virtual_hosts[..2] {
            assert_eq!(vh.host.fcgid_pool.as_deref(), Some("fcgid-site.example"));
            let SectionMatch::FilesMatch(re) = &vh.host.sections[0].matcher else { panic!("{:?}", vh.host.sections[0].matcher) };
            assert!(re.is_match("a.PHTML") && re.is_match("x.php") && !re.is_match("x.php.txt") && !re.is_match("xphp"));
            assert!(matches!(&vh.host.sections[0].config.handler, Some(Some(Handler::Pool(n))) if n == "fcgid-site.example"));
            assert_eq!(vh.host.sections[0].config.limit_request_body, Some(super::MAX_REQUEST_LEN));
        }
        assert_eq!(s.virtual_hosts[2].host.fcgid_pool, None);
        assert!(l.scripts.is_empty(), "the mapped lines are not said as 500s: {:?}", l.scripts);
        // Debian's fcgid.conf: .fcgi files stay scripts warren does not run.
        let (l, _d) = load_text("fcgid-debian", "Listen 8080\nFcgidConnectTimeout 20\nAddHandler fcgid-script .fcgi .php\nFcgidIdleTimeout 10\n", &[]);
        let said: Vec<String> = l.mapped.iter().chain(&l.scripts).map(ToString::to_string).collect();
        assert!(said.iter().any(|m| m.contains(":4: the files matching (?i)\\.(php)$ run in warren's pool fcgid-main")), "{said:?}");
        assert!(l.scripts.iter().any(|m| m.to_string().contains(":4: AddHandler fcgid-script .fcgi .php: files ending in .fcgi .php are scripts")), "{said:?}");
    }

    /// mod_fcgid's defaults where its lines say nothing, and bad numbers.
    #[test]
    fn defaults_and_bad_lines() {
        let (l, _d) = load_text("fcgid-defaults", "Listen 8080\nSuexecUserGroup bob bob\n", &[]);
        let p = &l.settings.unwrap().pools[0];
        assert_eq!((p.pm, p.max_children, p.start_servers, p.min_spare_servers, p.max_spare_servers), (PmStyle::Dynamic, 100, 3, 3, 3));
        let (l, _d) = load_text("fcgid-bad", "Listen 8080\nFcgidMaxProcesses many\nAssignUserID bob\nFcgidWrapper\n<Directory /x>\nAssignUserID a b\n</Directory>\n", &[]);
        let errors: Vec<String> = l.errors.iter().map(ToString::to_string).collect();
        assert!(errors[0].contains(":3: FcgidMaxProcesses takes a whole number, not 'many'"), "{errors:?}");
        assert!(errors[1].contains(":4: AssignUserID takes a user and a group"), "{errors:?}");
        assert!(errors[2].contains(":5: FcgidWrapper takes a command"), "{errors:?}");
        assert!(errors[3].contains(":7: AssignUserID is not allowed in <Directory>"), "{errors:?}");
    }
}
