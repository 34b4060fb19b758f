//! Tests of the whole reading: files on disk -> `Settings` or errors.

use super::*;
use crate::pool::PmStyle;
use std::path::PathBuf;

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("warren-cfg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(p.join("htdocs")).unwrap();
        Dir(p)
    }
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn load(dir: &Dir, text: &str) -> Loaded {
    let f = dir.write("warren.conf", text);
    load_file(&f, &LoadOptions::default())
}

#[test]
fn minimal_config_gets_apache_defaults() {
    let d = Dir::new("min");
    let l = load(&d, "Listen 127.0.0.1:8080\nDocumentRoot htdocs\n");
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let s = l.settings.unwrap();
    assert_eq!(s.mpm, Mpm::Event);
    assert_eq!(s.limits, Limits { request_line: 8190, field_size: 8190, fields: 100, head: 65536 });
    assert_eq!(s.timeout.as_secs(), 60);
    assert_eq!(s.keep_alive_timeout.as_secs(), 5);
    assert_eq!(s.max_keep_alive_requests, 100);
    assert_eq!(s.main.document_root, d.0.join("htdocs"));
    assert_eq!(s.tuning.threads_per_child, 25);
    assert_eq!(s.tuning.max_request_workers, 400);
    assert_eq!(s.main.dir.directory_index.as_deref(), Some(&["index.html".to_string()][..]), "Apache's default DirectoryIndex");
}

#[test]
fn every_error_is_reported_with_its_line() {
    let d = Dir::new("errs");
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nBogusDirective 1\nTimeout soon\n<VirtualHost *:8080>\nListen 9090\n</VirtualHost>\nOptions +Indexes FollowSymLinks\n");
    assert!(l.settings.is_none());
    let lines: Vec<usize> = l.errors.iter().map(|e| e.origin.line).collect();
    assert_eq!(lines, vec![3, 4, 6, 8], "{:?}", l.errors);
    assert!(l.errors[0].to_string().contains("warren.conf:3: unknown or unsupported directive 'BogusDirective'"));
}

#[test]
fn virtual_hosts_inherit_and_sections_nest() {
    let d = Dir::new("vh");
    std::fs::create_dir_all(d.0.join("site")).unwrap();
    let l = load(
        &d,
        r#"Listen 8080
DocumentRoot htdocs
DirectoryIndex index.html index.htm
<Directory htdocs/private>
  Require all denied
  <Files "*.txt">
    Require all granted
  </Files>
</Directory>
<VirtualHost *:8080>
  ServerName Example.COM:8080
  ServerAlias www.example.com *.example.org
  DocumentRoot site
  <FilesMatch "\.bak$">
    Require all denied
  </FilesMatch>
</VirtualHost>
"#,
    );
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let s = l.settings.unwrap();
    assert_eq!(s.main.sections.len(), 2);
    assert!(s.main.sections[1].within.is_some());
    let vh = &s.virtual_hosts[0];
    assert_eq!(vh.host.server_name.as_deref(), Some("example.com"));
    assert_eq!(vh.host.aliases, vec!["www.example.com", "*.example.org"]);
    assert_eq!(vh.host.dir.directory_index.as_ref().unwrap().len(), 2);
    assert_eq!(vh.host.sections.len(), 3, "main sections first, then the vhost's");
    assert_eq!(vh.addrs, vec![VhostAddr { ip: None, port: Some(8080) }]);
}

#[test]
fn options_as_apache() {
    let d = Dir::new("opts");
    let l = load(
        &d,
        "Listen 8080\nDocumentRoot htdocs\nOptions All\n<Directory htdocs/a>\nOptions +SymLinksIfOwnerMatch -FollowSymLinks\n</Directory>\n<Directory htdocs/b>\nOptions None\n</Directory>\n<Directory htdocs/c>\nOptions Indexes SymLinksIfOwnerMatch\n</Directory>\n",
    );
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let s = l.settings.unwrap();
    let all = s.main.dir.options.iter().fold(OptionFlags::DEFAULT, |f, o| o.apply(f));
    assert_eq!(all, OptionFlags { indexes: true, follow_symlinks: true, symlinks_if_owner_match: false, exec_cgi: true, multiviews: false }, "All leaves out SymLinksIfOwnerMatch");
    let under = |i: usize| s.main.sections[i].config.options.iter().fold(all, |f, o| o.apply(f));
    assert_eq!(under(0), OptionFlags { indexes: true, follow_symlinks: false, symlinks_if_owner_match: true, exec_cgi: true, multiviews: false });
    assert_eq!(under(1), OptionFlags { indexes: false, follow_symlinks: false, symlinks_if_owner_match: false, exec_cgi: false, multiviews: false });
    assert_eq!(under(2), OptionFlags { indexes: true, follow_symlinks: false, symlinks_if_owner_match: true, exec_cgi: false, multiviews: false });
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nOptions +Indexes SymLinksIfOwnerMatch\nOptions MultiViews\n");
    let msgs: Vec<String> = l.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(msgs[0].contains(":3: ") && msgs[0].contains("Either all Options must start with + or -"), "{msgs:?}");
    assert!(l.warnings.is_empty(), "MultiViews is acted on: {:?}", l.warnings);
}

/// Options Apache has and warren does not do are accepted: turned off
/// silently (warren never does them), turned on with a warning; a bare
/// `Options MultiViews` turns the others off, as in Apache.
#[test]
fn options_warren_does_not_do() {
    let d = Dir::new("options-inert");
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nOptions -MultiViews -Indexes -ExecCGI\n<Directory /srv>\nOptions +ExecCGI +Includes\n</Directory>\n<Directory /x>\nOptions MultiViews\n</Directory>\n");
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let warnings: Vec<String> = l.warnings.iter().map(|e| e.to_string()).collect();
    // ExecCGI is acted on: mod_fcgid's scripts need it (see fcgid.rs).
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains(":5: Options +Includes"), "{warnings:?}");
    let s = l.settings.unwrap();
    let main = s.main.dir.options.iter().fold(OptionFlags::DEFAULT, |f, o| o.apply(f));
    assert!(!main.indexes && main.follow_symlinks);
    let bare = s.main.sections[1].config.options.iter().fold(main, |f, o| o.apply(f));
    assert_eq!(bare, OptionFlags { multiviews: true, ..OptionFlags::NONE });
}

/// Lines warren accepts and does not act on are said once per directive,
/// at the first, with how many more there are.
#[test]
fn inert_directives_are_said_once_each() {
    let d = Dir::new("inert");
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nIndexOptions FancyIndexing\nAddLanguage ca .ca\nIndexOptions +Charset=UTF-8\nIndexOptions HTMLTable\n<Directory /srv>\nIndexOrderDefault Ascending Name\n</Directory>\nMutex file:/run default\n");
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let warnings: Vec<String> = l.warnings.iter().map(|e| e.to_string()).collect();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(warnings[0].contains(":3: IndexOptions (here and on 2 more lines): accepted, not acted on: warren's directory listings"), "{warnings:?}");
    assert!(warnings[1].contains(":8: IndexOrderDefault: "), "{warnings:?}");
    assert!(warnings[2].contains(":10: Mutex: "), "{warnings:?}");
    // Where they stand is checked as for any directive.
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\n<Directory /srv>\nMutex default\n</Directory>\n");
    assert!(l.errors.len() == 1 && l.errors[0].to_string().contains("Mutex is not allowed in <Directory>"), "{:?}", l.errors);
}

#[test]
fn add_handler_trace_enable_and_canonical_names() {
    let d = Dir::new("handlers");
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nAddHandler type-map var\nAddHandler php-script .cgi .pl\nTraceEnable Off\nUseCanonicalName Off\nUseCanonicalName On\n");
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let warnings: Vec<String> = l.warnings.iter().map(|e| e.to_string()).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    // A type map is data, not a program, which mod_negotiation reads.
    assert!(warnings[0].contains(":7: UseCanonicalName On"), "{warnings:?}");
    let typed = &l.settings.as_ref().unwrap().main.dir.mime.by_ext;
    assert_eq!(typed, &[(crate::mime::ExtAttr::TypeMap, "var".to_string(), "type-map".to_string())]);
    // A handler warren lacks makes its files scripts: said, not an error.
    let scripts: Vec<String> = l.scripts.iter().map(|e| e.to_string()).collect();
    assert_eq!(scripts.len(), 1, "{scripts:?}");
    assert!(scripts[0].contains(":4: AddHandler php-script .cgi .pl: files ending in .cgi .pl are scripts") && scripts[0].contains("never sent as text"), "{scripts:?}");
    let s = l.settings.unwrap();
    assert!(!s.trace_enable);
    assert_eq!(s.main.dir.scripts.len(), 1);
    assert!(s.main.dir.scripts[0].covers("x.pl") && s.main.dir.scripts[0].origin.line == 4);
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nAddHandler \"proxy:unix:/run/php.sock|fcgi://localhost\" .php\nTraceEnable extended\n");
    assert_eq!(l.errors.len(), 1, "{:?}", l.errors);
    assert!(l.errors[0].to_string().contains(":3: AddHandler proxy:unix:/run/php.sock|fcgi://localhost: warren sets handlers with SetHandler only"), "{:?}", l.errors);
    assert!(l.warnings.len() == 1 && l.warnings[0].to_string().contains(":4: TraceEnable extended: warren does not echo"), "{:?}", l.warnings);
}

/// A mod_fcgid configuration in the <IfModule> of a module warren lacks: skipped,
/// but what it names as scripts stays so, in the section it stands in; a
/// SetHandler of a handler warren lacks leaves a FastCGI one in force.
#[test]
fn scripts_named_in_skipped_blocks_and_sections_are_marked() {
    let d = Dir::new("fcgid");
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\n<Directory /srv/a>\n  Options +ExecCGI\n  <IfModule mod_php7.c>\n    AddHandler fcgid-script .php\n    FcgidWrapper /usr/bin/php-cgi .php\n    <Files *.phtml>\n      SetHandler None\n      SetHandler fcgid-script\n    </Files>\n    Frobnicate (\n  </IfModule>\n</Directory>\n<FilesMatch \\.php$>\n  SetHandler proxy:fcgi://127.0.0.1:9000\n  SetHandler application/x-httpd-php\n</FilesMatch>\nAddType application/x-httpd-php-source .phps\n");
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let scripts: Vec<String> = l.scripts.iter().map(|e| e.to_string()).collect();
    // Line 17's mod_php handler is routed to the host's PHP pool (a
    // section before the configuration's, so its proxy: stays in force).
    assert_eq!(scripts.len(), 4, "{scripts:?}");
    assert!(l.mapped.iter().any(|m| m.origin.line == 17 && m.message.contains("run in warren's pool php-main")), "{:?}", l.mapped);
    for (i, line) in [6, 7, 10, 19].into_iter().enumerate() {
        assert!(scripts[i].contains(&format!(":{line}: ")), "{scripts:?}");
    }
    let s = l.settings.unwrap();
    let sections = &s.main.sections;
    let dir = sections.iter().find(|x| matches!(&x.matcher, SectionMatch::Directory(p) if p == "/srv/a")).unwrap();
    assert_eq!(dir.config.scripts.len(), 2);
    assert!(dir.config.scripts.iter().all(|m| m.covers("index.php")));
    let files = sections.iter().find(|x| matches!(&x.matcher, SectionMatch::Files(p) if p == "*.phtml")).unwrap();
    assert!(files.within.is_some() && files.config.handler.is_none(), "nothing but marks is taken from a skipped block");
    assert_eq!(files.config.scripts[0].extensions, None);
    // The pool's section first, the configuration's after it (its proxy: wins).
    let php: Vec<_> = sections.iter().filter(|x| matches!(&x.matcher, SectionMatch::FilesMatch(_))).collect();
    assert!(matches!(&php[0].config.handler, Some(Some(Handler::Pool(p))) if p == "php-main"));
    assert!(matches!(php[1].config.handler, Some(Some(Handler::FastCgi(_)))));
    assert!(s.main.dir.scripts[0].covers("x.phps"));
}

/// Modules warren accepts without doing what they do are said at their
/// LoadModule; the directives of those whose directives it refuses are
/// errors with a hint, not "unknown".
#[test]
fn load_module_of_accepted_and_refused_modules() {
    let d = Dir::new("refused");
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nLoadModule auth_basic_module m.so\nLoadModule negotiation_module n.so\nLoadModule rewrite_module r.so\n<Directory /srv>\nAuthBasicFake admin\n</Directory>\n");
    let warnings: Vec<String> = l.warnings.iter().map(|e| e.to_string()).collect();
    assert_eq!(warnings.len(), 1, "mod_negotiation is provided: {warnings:?}");
    assert!(warnings[0].contains(":3: LoadModule auth_basic_module: accepted, but warren refuses directives of it"), "{warnings:?}");
    assert_eq!(l.errors.len(), 1, "{:?}", l.errors);
    assert!(l.errors[0].to_string().contains(":7: AuthBasicFake (mod_auth_basic) is not supported: warren does AuthType Basic"), "{:?}", l.errors);
}

#[test]
fn seeds_event_block_with_corrections() {
    let d = Dir::new("mpm");
    let l = load(
        &d,
        "Listen 8080\nDocumentRoot htdocs\n<IfModule mpm_event_module>\nStartServers 2\nMinSpareThreads 25\nMaxSpareThreads 75\nThreadLimit 64\nThreadsPerChild 25\nMaxRequestWorkers 160\nMaxConnectionsPerChild 0\n</IfModule>\n<IfModule mpm_prefork_module>\nMinSpareServers 5\n</IfModule>\n",
    );
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let s = l.settings.unwrap();
    assert_eq!(s.tuning.start_servers, 2);
    assert_eq!(s.tuning.max_request_workers, 150, "rounded down to a multiple of ThreadsPerChild");
    assert_eq!(l.warnings.len(), 1);
    assert_eq!(l.warnings[0].origin.line, 9);
}

#[test]
fn prefork_directive_under_event_is_an_error() {
    let d = Dir::new("wrongmpm");
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nMinSpareServers 5\n");
    assert_eq!(l.errors.len(), 1);
    assert!(l.errors[0].message.contains("prefork"), "{}", l.errors[0]);
}

#[test]
fn log_formats_and_custom_logs() {
    let d = Dir::new("logs");
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nLogFormat \"%h %>s %D\" timing\nCustomLog access.log timing\nCustomLog other.log combined\nCustomLog x.log nosuch\n");
    assert_eq!(l.errors.len(), 1);
    assert_eq!(l.errors[0].origin.line, 6);
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nCustomLog access.log \"%h %{X-Test}i\"\n");
    let s = l.settings.unwrap();
    assert_eq!(s.main.custom_logs[0].path, d.0.join("access.log"));
    assert_eq!(s.main.custom_logs[0].format[2], LogItem::RequestHeader("x-test".into()));
}

#[test]
fn fastcgi_directives() {
    let d = Dir::new("fcgi");
    let text = r#"LoadModule proxy_module modules/mod_proxy.so
LoadModule proxy_fcgi_module modules/mod_proxy_fcgi.so
Listen 8080
DocumentRoot htdocs
ProxyTimeout 7
<IfModule proxy_fcgi_module>
<FilesMatch "\.php$">
    SetHandler "proxy:unix:/run/php/php8.2-fpm.sock|fcgi://localhost"
    AcceptPathInfo Off
</FilesMatch>
</IfModule>
ProxyPassMatch "^/(.*\.php(/.*)?)$" "fcgi://127.0.0.1:9000/var/www/html/$1" enablereuse=on timeout=3
ProxyPass "/static/" !
ProxyPass "/app/" "unix:/run/app.sock|fcgi://localhost/srv/app/"
<Directory /srv>
    ProxyFCGIBackendType GENERIC
</Directory>
"#;
    let l = load(&d, text);
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let s = l.settings.unwrap();
    assert_eq!(s.main.proxy_timeout, Some(std::time::Duration::from_secs(7)));
    let php = &s.main.sections[0].config;
    let want = FcgiBackend { addr: FcgiAddr::Unix("/run/php/php8.2-fpm.sock".into()), reuse: false, timeout: None, flush_packets: false };
    assert_eq!(php.handler, Some(Some(Handler::FastCgi(want))));
    assert_eq!(php.accept_path_info, Some(Some(false)));
    assert_eq!(s.main.sections[1].config.fcgi_backend_type, Some(FcgiBackendType::Generic));
    let routes = &s.main.proxy_routes;
    assert_eq!(routes.len(), 3);
    let t = routes[0].target.as_ref().unwrap();
    assert_eq!(t.backend, FcgiBackend { addr: FcgiAddr::Tcp { host: "127.0.0.1".into(), port: 9000 }, reuse: true, timeout: Some(std::time::Duration::from_secs(3)), flush_packets: false });
    assert_eq!(t.path, "/var/www/html/$1");
    assert!(routes[1].target.is_none());
    assert_eq!(routes[2].target.as_ref().unwrap().path, "/srv/app/");

    let bad = "Listen 8080\nDocumentRoot htdocs\nSetHandler proxy:http://x/\nProxyPass /a fcgi://h:notaport/\nProxyPassMatch \"(\" fcgi://h:1/\nProxyPass /b fcgi://h:1/ frobnicate=1\nProxyTimeout -1\nAcceptPathInfo maybe\nSetHandler \"proxy:unix:relative.sock|fcgi://localhost\"\n";
    let l = load(&d, bad);
    let lines: Vec<usize> = l.errors.iter().map(|e| e.origin.line).collect();
    assert_eq!(lines, vec![3, 4, 5, 6, 7, 8, 9], "{:?}", l.errors);
}

#[test]
fn php_fpm_pools_catch_no_output_unless_asked() {
    let d = Dir::new("pools-catch");
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\n<Pool cgi>\n    Command /usr/bin/php-cgi\n</Pool>\n<Pool fpm>\n    Command /usr/sbin/php-fpm8.2\n</Pool>\n<Pool asked>\n    Command /usr/sbin/php-fpm8.2\n    catch_workers_output yes\n</Pool>\n");
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let s = l.settings.unwrap();
    let caught: Vec<(&str, bool)> = s.pools.iter().map(|p| (p.name.as_str(), p.catch_output)).collect();
    assert_eq!(caught, vec![("cgi", true), ("fpm", false), ("asked", true)]);
}

#[test]
fn pools_with_php_fpm_names_and_defaults() {
    let d = Dir::new("pools");
    let text = r#"Listen 8080
DocumentRoot htdocs
<Pool www>
    Command /usr/bin/php-cgi -d display_errors=0
    User www-data
    Group www-data
    pm dynamic
    pm.max_children 5
    pm.start_servers 2
    pm.min_spare_servers 1
    pm.max_spare_servers 3
    pm.max_spawn_rate 32
    pm.process_idle_timeout 10s
    pm.max_requests 500
    request_terminate_timeout 30s
    listen.backlog 511
    env[APP_ENV] production
    pm.status_path /fpm-status
</Pool>
<VirtualHost *:8080>
    ServerName b.test
    <Pool site-b>
        pm ondemand
    </Pool>
    <FilesMatch "\.php$">
        SetHandler pool:site-b
    </FilesMatch>
</VirtualHost>
<FilesMatch "\.php$">
    SetHandler "pool:www"
</FilesMatch>
"#;
    let l = load(&d, text);
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let s = l.settings.unwrap();
    let www = &s.pools[0];
    assert_eq!(www.command, vec!["/usr/bin/php-cgi", "-d", "display_errors=0"]);
    assert_eq!((www.pm, www.max_children, www.start_servers, www.max_requests), (PmStyle::Dynamic, 5, 2, 500));
    assert_eq!(www.request_terminate_timeout, Some(std::time::Duration::from_secs(30)));
    assert_eq!(www.env, vec![("APP_ENV".to_string(), "production".to_string())]);
    assert_eq!(www.status_path.as_deref(), Some("/fpm-status"));
    // php-fpm's defaults for what is left out.
    let b = &s.pools[1];
    assert_eq!((b.name.as_str(), b.pm, b.max_children, b.process_idle_timeout.as_secs(), b.listen_backlog), ("site-b", PmStyle::Ondemand, 5, 10, 511));
    assert_eq!(s.virtual_hosts[0].host.sections.last().unwrap().config.handler, Some(Some(Handler::Pool("site-b".into()))));

    let bad = "Listen 8080\nDocumentRoot htdocs\n<Pool a>\n    pm sometimes\n    pm.max_children none\n    bogus 1\n    request_terminate_timeout 3 weeks\n</Pool>\n<Pool a>\n</Pool>\n<Pool b>\n    pm.max_spare_servers 9\n</Pool>\nSetHandler pool:nowhere\n";
    let l = load(&d, bad);
    let lines: Vec<usize> = l.errors.iter().map(|e| e.origin.line).collect();
    assert_eq!(lines, vec![4, 5, 6, 7, 11, 14], "{:?}", l.errors);
    assert!(l.errors[4].message.contains("pm.max_spare_servers(9) must be a positive value and not greater than pm.max_children(5)"), "{}", l.errors[4]);
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\n<Pool a>\n</Pool>\n<Pool a>\n</Pool>\n");
    assert_eq!(l.errors.len(), 1);
    assert!(l.errors[0].to_string().contains("warren.conf:5: <Pool a> is already defined at"), "{}", l.errors[0]);
}

/// `pm.max_children auto` and MemoryBudget; a budget that is not a size,
/// or too small, is an error at its line.
#[test]
fn pools_sized_by_a_memory_budget() {
    let d = Dir::new("pools-auto");
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nMemoryBudget 512M\n<Pool www>\n    pm.max_children = auto\n    pm.max_spare_servers = 8\n</Pool>\n");
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let s = l.settings.unwrap();
    assert_eq!(s.memory_budget, Some(512 << 20));
    let www = &s.pools[0];
    assert!(www.max_children_auto && www.max_children == crate::pool::AUTO_CEILING, "{www:?}");
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nMaxRequestWorkers auto\n");
    let t = l.settings.unwrap().tuning;
    assert!(t.max_request_workers_auto && t.max_request_workers == t.server_limit * t.threads_per_child, "{t:?}");
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nMaxRequestWorkers auto\nMaxRequestWorkers 50\n");
    assert!(!l.settings.unwrap().tuning.max_request_workers_auto);
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nMemoryBudget 8M\nMemoryBudget lots\nMemoryBudget\n");
    let lines: Vec<usize> = l.errors.iter().map(|e| e.origin.line).collect();
    assert_eq!(lines, vec![3, 4, 5], "{:?}", l.errors);
    assert!(l.errors[0].message.contains("less than 16M") && l.errors[1].message.contains("'lots' is not a size"), "{:?}", l.errors);
}

/// Inside `<Pool>`, php-fpm's own `key = value` lines (pasted from a pool
/// file, `;` comments and all) read as the Apache form does.
#[test]
fn pools_read_php_fpm_key_value_lines() {
    let d = Dir::new("pools-ini");
    let text = "Listen 8080\nDocumentRoot htdocs\n<Pool www>\n; Debian's www.conf, in part\npm = static\npm.max_children=7\npm.max_requests =300 ; recycle\nrequest_terminate_timeout= 20s\nenv[PATH] = /usr/bin:/bin\nenv[Q]=a=b\npm.status_path = \"/status\"\n</Pool>\n";
    let l = load(&d, text);
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let www = &l.settings.unwrap().pools[0];
    assert_eq!((www.pm, www.max_children, www.max_requests), (PmStyle::Static, 7, 300));
    assert_eq!(www.request_terminate_timeout, Some(std::time::Duration::from_secs(20)));
    assert_eq!(www.env, vec![("PATH".to_string(), "/usr/bin:/bin".to_string()), ("Q".to_string(), "a=b".to_string())]);
    assert_eq!(www.status_path.as_deref(), Some("/status"));

    // PHP's settings, in either form; php-cgi cannot lock an admin value.
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\n<Pool www>\nphp_value[memory_limit] = 64M\nphp_flag[display_errors] off\nphp_admin_value[open_basedir] /srv\n</Pool>\n");
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let ini = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
    let www = &l.settings.as_ref().unwrap().pools[0];
    assert_eq!(www.php_ini, ini(&[("memory_limit", "64M"), ("display_errors", "0")]));
    assert_eq!(www.php_admin_ini, ini(&[("open_basedir", "/srv")]));
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    assert!(l.warnings[0].to_string().contains("warren.conf:6: php_admin_value[open_basedir]: php-cgi cannot lock a setting"), "{}", l.warnings[0]);
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\n<Pool app>\nCommand /srv/app.fcgi\nphp_value[memory_limit] 64M\nphp_value[] 1\nphp_flag[html_errors] maybe\n</Pool>\n");
    let lines: Vec<usize> = l.errors.iter().map(|e| e.origin.line).collect();
    assert_eq!(lines, vec![6, 7, 3], "{:?}", l.errors);
    assert!(l.errors[2].message.contains("php_value and php_flag need a PHP program (php-cgi), not /srv/app.fcgi"), "{}", l.errors[1]);

    // The same errors, at the same lines, as in Apache's form.
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\n<Pool www>\npm = sometimes\npm.max_children =\nbogus = 1\n</Pool>\n");
    let lines: Vec<usize> = l.errors.iter().map(|e| e.origin.line).collect();
    assert_eq!(lines, vec![4, 5, 6], "{:?}", l.errors);
    assert!(l.errors[1].message.contains("pm.max_children takes one value"), "{}", l.errors[1]);
    assert!(l.errors[2].message.contains("unknown or unsupported directive 'bogus' in <Pool>"), "{}", l.errors[2]);
}

/// `PoolFile`: a php-fpm pool file as it is, each `[name]` a pool; what
/// warren does not apply is a warning at the file's line, chroot an error.
#[test]
fn pool_files_of_php_fpm() {
    let d = Dir::new("poolfile");
    d.write(
        "www.conf",
        "; Debian's, in part\n[www]\nuser = www-data\ngroup = www-data\nlisten = /run/php/$pool.sock\npm = dynamic\npm.max_children = 5 ; enough\nphp_admin_value[sendmail_path] = /usr/sbin/sendmail -t -i\nphp_value[error_log] = \"/var/log/$pool; php.log\"\ncatch_workers_output = no\nbogus.key = 1\ncommand = /usr/bin/php-cgi\n\n[api]\npm = static\nchdir = /srv\n",
    );
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nPoolFile www.conf\n");
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let warned: Vec<String> = l.warnings.iter().map(|w| w.to_string()).collect();
    // [www] runs php-cgi (its command line): what only php-fpm does is said.
    assert!(warned[0].contains("www.conf:5: listen is not applied"), "{}", warned[0]);
    assert!(warned[1].contains("www.conf:8: php_admin_value[sendmail_path]: php-cgi cannot lock"), "{}", warned[1]);
    assert!(warned[2].contains("www.conf:11: bogus.key: not a setting warren's pools know"), "{}", warned[2]);
    // [api] runs php-fpm where it is installed (Debian's, as test.sh
    // installs it), which takes chdir as it is; else php-cgi, which warns.
    let php_fpm = std::fs::read_dir("/usr/sbin").unwrap().flatten().any(|e| e.file_name().to_string_lossy().starts_with("php-fpm"));
    let api_warned: Vec<&String> = warned[3..].iter().collect();
    assert_eq!(api_warned.len(), usize::from(!php_fpm), "{api_warned:?}");
    let s = l.settings.unwrap();
    let (www, api) = (&s.pools[0], &s.pools[1]);
    assert_eq!((www.name.as_str(), www.user.as_deref(), www.pm, www.max_children, www.catch_output), ("www", Some("www-data"), PmStyle::Dynamic, 5, false));
    assert_eq!(www.php_admin_ini[0], ("sendmail_path".to_string(), "/usr/sbin/sendmail -t -i".to_string()));
    assert_eq!(www.php_ini[0], ("error_log".to_string(), "/var/log/www; php.log".to_string()));
    assert_eq!(www.origin.line, 2);
    assert_eq!((api.name.as_str(), api.pm), ("api", PmStyle::Static));
    assert_eq!(api.runs_php_fpm(), php_fpm, "{:?}", api.command);
    if php_fpm {
        assert_eq!(api.php_fpm_settings, vec![("chdir".to_string(), "/srv".to_string())]);
    } else {
        assert!(api_warned[0].contains("www.conf:16: chdir is not applied"), "{}", api_warned[0]);
    }

    d.write("bad.conf", "[www]\nchroot = /srv\npm = sometimes\nnot a setting\n");
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\n<Pool www>\n</Pool>\nPoolFile bad.conf\nPoolFile missing.conf\n");
    let at: Vec<String> = l.errors.iter().map(|e| format!("{}:{}", e.origin.file.file_name().unwrap().to_string_lossy(), e.origin.line)).collect();
    assert_eq!(at, ["bad.conf:4", "bad.conf:2", "bad.conf:3", "warren.conf:6"], "{:?}", l.errors);
    assert!(l.errors[1].message.contains("chroot: warren's pools cannot chroot"), "{}", l.errors[1]);
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nPoolFile /dev/zero\n");
    assert!(l.errors[0].message.contains("PoolFile: /dev/zero is larger than 1048576 bytes"), "{:?}", l.errors);
}

#[test]
fn request_read_timeout_as_mod_reqtimeout() {
    let d = Dir::new("rrt");
    let s = load(&d, "Listen 8080\nDocumentRoot htdocs\n").settings.unwrap();
    assert_eq!(s.request_read_timeout.header, ReadStage { initial: 20, max: 40, min_rate: 500 }, "Apache's default");
    assert_eq!(s.request_read_timeout.body, ReadStage { initial: 20, max: 0, min_rate: 500 });

    // Each line sets the stages it names, wholly; the others keep theirs.
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\n<IfModule reqtimeout_module>\nRequestReadTimeout header=5-10,minrate=100\n</IfModule>\nRequestReadTimeout body=0\n");
    assert!(l.errors.is_empty() && l.warnings.is_empty(), "{:?} {:?}", l.errors, l.warnings);
    let s = l.settings.unwrap();
    assert_eq!(s.request_read_timeout.header, ReadStage { initial: 5, max: 10, min_rate: 100 });
    assert_eq!(s.request_read_timeout.body, ReadStage { initial: 0, max: 0, min_rate: 0 });
    let s = load(&d, "Listen 8080\nDocumentRoot htdocs\nRequestReadTimeout Header=7 BODY=30,MinRate=1000\n").settings.unwrap();
    assert_eq!(s.request_read_timeout.header, ReadStage { initial: 7, max: 0, min_rate: 0 });
    assert_eq!(s.request_read_timeout.body, ReadStage { initial: 30, max: 0, min_rate: 1000 });

    // handshake= is read, and said to be ignored.
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\nRequestReadTimeout handshake=5 header=10-20,MinRate=500\n");
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    assert!(l.warnings[0].to_string().contains("warren.conf:3: RequestReadTimeout: handshake=5 is ignored"), "{}", l.warnings[0]);
    assert!(load(&d, "Listen 8080\nDocumentRoot htdocs\nRequestReadTimeout handshake=0\n").warnings.is_empty());

    for bad in [
        "header=abc",
        "header",
        "headers=10",
        "header=10-20",
        "header=20-10,MinRate=500",
        "header=20-20,MinRate=500",
        "body=10,MinRate=0",
        "body=10,MinRate=x",
        "body=-5",
        "body=10,MinRate=500 handshake=x",
        "",
    ] {
        let l = load(&d, &format!("Listen 8080\nDocumentRoot htdocs\nRequestReadTimeout {bad}\n"));
        assert!(l.settings.is_none(), "{bad} accepted");
        assert_eq!(l.errors.len(), 1, "{bad}: {:?}", l.errors);
        assert!(l.errors[0].to_string().contains("warren.conf:3: RequestReadTimeout"), "{bad}: {}", l.errors[0]);
    }
    // Server-wide, as the connection's own limit.
    let l = load(&d, "Listen 8080\nDocumentRoot htdocs\n<VirtualHost *:8080>\nRequestReadTimeout header=5\n</VirtualHost>\n");
    assert!(l.errors.iter().any(|e| e.origin.line == 4 && e.to_string().contains("server-wide")), "{:?}", l.errors);
}

#[test]
fn text_in_memory_loads_as_the_same_file() {
    let d = Dir::new("text");
    let text = "Listen 127.0.0.1:8080\nDocumentRoot htdocs\nTimeout soon\n";
    let from_file = load(&d, text);
    let from_text = load_text(text, &d.0.join("warren.conf"), &LoadOptions::default());
    assert_eq!(from_text.errors, from_file.errors);
    assert_eq!(from_text.errors.len(), 1, "{:?}", from_text.errors);
    let ok = "Listen 127.0.0.1:8080\nDocumentRoot htdocs\n";
    let s = load_text(ok, &d.0.join("warren.conf"), &LoadOptions::default()).settings.unwrap();
    assert_eq!(s.main.document_root, d.0.join("htdocs"));
}

#[test]
fn remoteip_settings_are_read_in_ifmodule_and_inherited_by_virtual_hosts() {
    let d = Dir::new("remoteip");
    d.write("proxies.txt", "# the CDN\n198.51.100.0/24 203.0.113.1\n\n10.1 # intranet\n");
    let l = load(
        &d,
        "Listen 127.0.0.1:8080\nDocumentRoot htdocs\n<IfModule mod_remoteip.c>\nRemoteIPHeader X-Forwarded-For\nRemoteIPInternalProxy 127.0.0.1 10.0.0.0/255.0.0.0\nRemoteIPTrustedProxyList proxies.txt\nRemoteIPProxyProtocol On\n</IfModule>\n\
         <VirtualHost *:8080>\nServerName a\nRemoteIPHeader X-Real-IP\nRemoteIPProxyProtocolExceptions 192.0.2.1\n</VirtualHost>\n",
    );
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let s = l.settings.unwrap();
    let r = &s.main.remote_ip;
    assert_eq!(r.header.as_deref(), Some("X-Forwarded-For"));
    let nets: Vec<(String, u8, bool)> = r.proxies.as_ref().unwrap().iter().map(|p| (p.net.to_string(), p.len, p.internal)).collect();
    let want = [("127.0.0.1", 32, true), ("10.0.0.0", 8, true), ("198.51.100.0", 24, false), ("203.0.113.1", 32, false), ("10.1.0.0", 16, false)];
    assert_eq!(nets, want.map(|(n, l, i)| (n.to_string(), l, i)));
    assert_eq!(r.proxy_protocol, Some(true));
    let v = &s.virtual_hosts[0].host.remote_ip;
    assert_eq!(v.header.as_deref(), Some("X-Real-IP"));
    assert_eq!(v.proxies, r.proxies);
    assert_eq!(v.proxy_protocol, Some(true));
    assert_eq!(v.proxy_protocol_exceptions.as_deref(), Some(&[("192.0.2.1".parse().unwrap(), 32)][..]));
}

#[test]
fn remoteip_mistakes_name_file_and_line() {
    let d = Dir::new("remoteip-bad");
    d.write("bad-list.txt", "198.51.100.0/24\nproxy.example.com\n");
    d.write("empty-list.txt", "# nothing yet\n");
    let l = load(
        &d,
        "Listen 127.0.0.1:8080\nDocumentRoot htdocs\nRemoteIPTrustedProxy proxy.example.com\nRemoteIPInternalProxy\nRemoteIPTrustedProxyList bad-list.txt\nRemoteIPInternalProxyList empty-list.txt\nRemoteIPHeader \"X Forwarded\"\nRemoteIPProxyProtocol maybe\nRemoteIPProxyProtocolExceptions 10.0.0.0/40\nRemoteIPTrustedProxyList missing.txt\nRemoteIPProxiesHeader content-length\n<Directory htdocs>\nRemoteIPHeader X-Forwarded-For\n</Directory>\n",
    );
    let errors: Vec<String> = l.errors.iter().map(|e| e.to_string()).collect();
    let expect = [
        "warren.conf:3: RemoteIPTrustedProxy: 'proxy.example.com' is not an IP address",
        "warren.conf:4: RemoteIPInternalProxy names no address",
        "warren.conf:5: RemoteIPTrustedProxyList: 'proxy.example.com' is not an IP address or network (host names are not resolved), at line 2 of",
        "warren.conf:6: RemoteIPInternalProxyList names no address",
        "warren.conf:7: RemoteIPHeader: 'X Forwarded' is not a header field name",
        "warren.conf:8: RemoteIPProxyProtocol must be On or Off",
        "warren.conf:9: RemoteIPProxyProtocolExceptions: '10.0.0.0/40'",
        "warren.conf:10: RemoteIPTrustedProxyList: cannot read",
        "warren.conf:11: RemoteIPProxiesHeader: content-length cannot be rewritten",
        "warren.conf:13: RemoteIPHeader",
    ];
    assert_eq!(errors.len(), expect.len(), "{errors:#?}");
    for (e, want) in errors.iter().zip(expect) {
        assert!(e.contains(want), "{e} does not say {want}");
    }
    assert!(l.settings.is_none());
}

#[test]
fn headers_expires_and_environment_are_read_in_if_module_and_mistakes_named_by_line() {
    let d = Dir::new("hdrs");
    let text = "Listen 127.0.0.1:8080\nDocumentRoot htdocs\n<IfModule mod_headers.c>\nHeader always set X-Content-Type-Options nosniff\n</IfModule>\n\
        <IfModule mod_expires.c>\nExpiresActive On\nExpiresByType text/css \"access plus 1 month\"\n</IfModule>\n\
        <IfModule setenvif_module>\nSetEnvIf Request_URI \\.png$ image\n</IfModule>\n<IfModule env_module>\nSetEnv A b\n</IfModule>\n";
    let l = load(&d, text);
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let s = l.settings.unwrap();
    assert_eq!(s.main.dir.headers.len(), 1);
    assert_eq!(s.main.dir.expires_active, Some(true));
    assert_eq!(s.main.dir.expires_by_type.len(), 1);
    assert_eq!(s.main.dir.set_env_if.len(), 1);
    assert_eq!(s.main.dir.env.len(), 1);

    let l = load(&d, "Listen 127.0.0.1:8080\nDocumentRoot htdocs\nHeader unset Server\nHeader always set content-length 5\nHeader echo ^X-\n");
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    assert_eq!(l.warnings.iter().map(|w| w.origin.line).collect::<Vec<_>>(), vec![3, 4], "{:?}", l.warnings);
    assert!(l.warnings[0].message.contains("ServerTokens"), "{}", l.warnings[0]);
    assert_eq!(l.settings.unwrap().main.dir.headers.len(), 1, "only echo is kept");

    let bad = "Listen 127.0.0.1:8080\nDocumentRoot htdocs\nHeader set X\nHeader set X y \"expr=%{REQUEST_URI} -strmatch md5('/a*')\"\n\
        ExpiresByType text/css \"access plus 1 fortnight\"\nExpiresDefault\nSetEnvIf Request_URI (\nBrowserMatch MSIE\nRequestHeader echo X\n";
    let l = load(&d, bad);
    let lines: Vec<usize> = l.errors.iter().map(|e| e.origin.line).collect();
    assert_eq!(lines, vec![3, 4, 5, 6, 7, 8, 9], "{:?}", l.errors);
    assert!(l.errors.iter().all(|e| e.to_string().contains("warren.conf:")), "{:?}", l.errors);
}

#[test]
fn debians_deflate_conf_is_read_and_mistakes_name_their_line() {
    let d = Dir::new("deflate");
    // Debian's mods-available/deflate.conf, as shipped.
    let debian = "<IfModule mod_deflate.c>\n\t<IfModule mod_filter.c>\n\t\tAddOutputFilterByType DEFLATE text/html text/plain text/xml text/css text/javascript\n\t\tAddOutputFilterByType DEFLATE application/x-javascript application/javascript application/ecmascript\n\t\tAddOutputFilterByType DEFLATE application/rss+xml\n\t\tAddOutputFilterByType DEFLATE application/wasm\n\t\tAddOutputFilterByType DEFLATE application/xml\n\t</IfModule>\n</IfModule>\n";
    let l = load(&d, &format!("Listen 127.0.0.1:8080\nDocumentRoot htdocs\n{debian}DeflateCompressionLevel 4\n"));
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let f = l.settings.unwrap().main.dir.output_filters.unwrap();
    assert_eq!(f.by_type.len(), 11);
    assert!(f.by_type.iter().all(|(_, e)| e.gzip && !e.brotli));
    assert_eq!(f.deflate_level, Some(4));
    let l = load(&d, "Listen 127.0.0.1:8080\nDocumentRoot htdocs\nAddOutputFilterByType INCLUDES;DEFLATE text/html\nBrotliCompressionQuality 12\n<Directory /srv>\n    DeflateCompressionLevel 5\n</Directory>\n");
    let messages: Vec<String> = l.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(messages[0].contains("warren.conf:3") && messages[0].contains("'INCLUDES'"), "{}", messages[0]);
    assert!(messages[1].contains("warren.conf:4") && messages[1].contains("0 to 11"), "{}", messages[1]);
    assert!(messages[2].contains("warren.conf:6") && messages[2].contains("DeflateCompressionLevel"), "{}", messages[2]);
}

#[test]
fn a_virtual_host_without_document_root_serves_the_main_servers() {
    let d = Dir::new("vhost-docroot");
    std::fs::create_dir_all(d.0.join("other")).unwrap();
    let l = load(&d, "Listen 80\n<VirtualHost *:80>\nServerName a.test\n</VirtualHost>\n<VirtualHost *:80>\nServerName b.test\nDocumentRoot other\n</VirtualHost>\nDocumentRoot htdocs\n");
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let s = l.settings.expect("settings");
    assert_eq!(s.virtual_hosts[0].host.document_root, d.0.join("htdocs"));
    assert_eq!(s.virtual_hosts[1].host.document_root, d.0.join("other"));
}

/// A line that would set, replace or unset a variable the server gives the
/// application itself is said with its line and has no effect; the rest
/// of the line, and other variables, are kept.
#[test]
fn server_variables_are_not_the_configurations() {
    use crate::env_vars::{EnvAction, EnvSet};
    let d = Dir::new("servervars");
    let text = "Listen 8080\nDocumentRoot htdocs\n\
        SetEnv DOCUMENT_ROOT /elsewhere\n\
        SetEnv APP_ENV prod\n\
        UnsetEnv Remote_Addr kept\n\
        SetEnvIf X-Forwarded-Proto https HTTPS=on proto=https\n\
        BrowserMatch x SCRIPT_FILENAME=/x\n\
        RequestHeader set Content-Type text/plain\n\
        RequestHeader set X-A b\n\
        RewriteRule ^ - [E=SCRIPT_FILENAME:/other.php,E=!REDIRECT_STATUS,E=ok:1,E=%{HTTP:X-Name}:v,E=SERVER_%1:v]\n";
    let l = load(&d, text);
    assert!(l.errors.is_empty(), "{:?}", l.errors);
    let warnings: Vec<String> = l.warnings.iter().map(|e| e.to_string()).collect();
    let expected = [
        (":3:", "SetEnv: DOCUMENT_ROOT is a variable warren gives the application itself"),
        (":5:", "UnsetEnv: Remote_Addr is"),
        (":6:", "SetEnvIf: HTTPS is"),
        (":7:", "BrowserMatch: SCRIPT_FILENAME is"),
        (":8:", "RequestHeader Content-Type: CONTENT_TYPE is"),
        (":10:", "RewriteRule [E=SCRIPT_FILENAME]: SCRIPT_FILENAME is"),
        (":10:", "RewriteRule [E=!REDIRECT_STATUS]: REDIRECT_STATUS is"),
    ];
    assert_eq!(warnings.len(), expected.len(), "{warnings:?}");
    for (w, (line, text)) in warnings.iter().zip(expected) {
        assert!(w.contains(line) && w.contains(text) && w.contains("has no effect"), "{w} should say {line} {text}");
    }
    let s = l.settings.unwrap();
    let dir = &s.main.dir;
    assert_eq!(dir.env, vec![EnvAction::Set("APP_ENV".into(), "prod".into()), EnvAction::Unset("kept".into())]);
    assert_eq!(dir.set_env_if.len(), 1, "the BrowserMatch line has nothing left to set");
    assert_eq!(dir.set_env_if[0].sets, vec![EnvSet::Set("proto".into(), "https".into())]);
    assert_eq!(dir.request_headers.len(), 1);
    let rules = &dir.rewrite.as_ref().unwrap().rules;
    // What the request names is refused when it is set, by the handler.
    assert_eq!(rules[0].flags.env.len(), 3);
}
