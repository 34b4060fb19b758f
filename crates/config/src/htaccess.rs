//! `.htaccess` files, as Apache reads them: the reading of one file into
//! the sections it adds for its directory ([`read`]), each directive
//! checked against what the `<Directory>` lets in ([`Overrides`], in
//! overrides.rs, re-exported here). The handler finds,
//! caches and re-validates the files; this module only reads one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::builder::Builder;
use crate::dir_config::{DirConfig, DirSection, Handler, SectionMatch};
use crate::mpm::Mpm;
use crate::parse::{ConfigError, Directive, Node, Origin, Reader, Section};
use crate::table::{self, Apply, Context};

pub use crate::overrides::{class_of, Class, Overrides};
#[cfg(test)]
use crate::overrides::{parse_allow_override, parse_allow_override_list, CLASSES};

/// What reading an `.htaccess` file needs from the server's configuration.
#[derive(Clone, Debug)]
pub struct Env {
    pub server_root: PathBuf,
    pub mpm: Mpm,
    /// The FastCGI handlers the server's configuration gives this directory
    /// or anything under it: the only ones its `.htaccess` may name. Else a
    /// user who can write one could run their scripts in another user's
    /// pool, as that user.
    pub handlers: Vec<Handler>,
    /// The host's own PHP pool, if it has one (see [`crate::mod_php`]):
    /// `<IfModule mod_php.c>` is true here, so that its `php_value` lines
    /// apply (where the pool reads them: php-fpm).
    pub php_pool: Option<crate::mod_php::PhpPool>,
}

/// One `.htaccess` file read: the sections it adds for its directory
/// (its own directives as a `<Directory>` of it, then its `<Files>`).
#[derive(Clone, Debug)]
pub struct Htaccess {
    pub sections: Vec<DirSection>,
    /// What it holds and warren does not act on (directives accepted and
    /// inert, `<IfModule>` blocks of modules warren lacks): for the error
    /// log, each time the file is read.
    pub notes: Vec<ConfigError>,
}

/// Reads `text`, the `.htaccess` file at `path` in directory `dir`, as
/// Apache would with `overrides` in force there. The first error (an
/// unknown directive, one its AllowOverride does not let in, a bad value)
/// makes the whole file an error: Apache answers 500 for it.
pub fn read(path: &Path, text: &str, dir: &Path, overrides: &Overrides, env: &Env) -> Result<Htaccess, ConfigError> {
    let mut reader = Reader::new(env.server_root.clone());
    reader.in_htaccess = true;
    if env.php_pool.is_some() {
        reader.loaded_modules.extend(["php", "php7", "php5"]);
    }
    let file = Arc::new(path.to_path_buf());
    let nodes = reader.read_text(text, file.clone());
    if let Some(e) = reader.errors.into_iter().next() {
        return Err(e);
    }
    let skipped = reader.skipped;
    let mut builder = builder_for(env, path);
    let dir_text = dir.to_string_lossy().trim_end_matches('/').to_string();
    let matcher = SectionMatch::Directory(dir_text.clone());
    let mut config = DirConfig::default();
    let mut files = Vec::new();
    for node in &nodes {
        match node {
            Node::Directive(d) => {
                check(d, overrides)?;
                builder.dir_directive(d, Context::Directory, &mut config, ".htaccess");
            }
            Node::Section(sec) if crate::directives::values::require_block_kind(&sec.name).is_some() => {
                check_require_block(sec, overrides)?;
                builder.require_block(sec, &mut config);
            }
            Node::Section(sec) => {
                let lname = sec.name.to_ascii_lowercase();
                if !matches!(lname.as_str(), "files" | "filesmatch" | "if" | "elseif" | "else") {
                    return Err(ConfigError { origin: sec.origin.clone(), message: format!("<{}> not allowed here", sec.name) });
                }
                check_section(sec, overrides)?;
                files.extend(builder.nested_section(sec, &matcher));
            }
            Node::Skipped(sec) => files.extend(builder.skipped_block(sec, Context::Directory, &mut config, Some(&matcher))),
        }
        if let Some(e) = builder.first_error() {
            return Err(e);
        }
    }
    if let Some(set) = &mut config.rewrite {
        set.directory = Some(dir_text.clone());
    }
    let own = DirSection { matcher, within: None, config, origin: Origin { file, line: 1 } };
    let mut sections = vec![own];
    sections.append(&mut files);
    for s in &sections {
        if let Some(Some(h)) = &s.config.handler {
            check_handler(h, env, &nodes, dir)?;
        }
    }
    for (origin, message) in crate::directives::h2::in_sections(sections.iter()) {
        builder.warn(&origin, message);
    }
    if let Some(pool) = env.php_pool.as_ref().filter(|p| !p.per_request) {
        for s in &mut sections {
            for line in std::mem::take(&mut s.config.php) {
                builder.warn(&line.origin, format!("{} is not applied: the pool {} runs php-cgi, which reads no settings per request (php-fpm does)", line.name, pool.name));
            }
        }
    }
    builder.say_inert();
    let mut notes = builder.take_warnings();
    notes.extend(builder.take_script_notices());
    notes.extend(skipped);
    Ok(Htaccess { sections, notes })
}

/// The directives of a section of an `.htaccess` file, and of the `<If>`
/// chains in it, each against what AllowOverride lets in.
fn check_section(sec: &crate::parse::Section, overrides: &Overrides) -> Result<(), ConfigError> {
    let is_if = |name: &str| ["if", "elseif", "else"].iter().any(|n| name.eq_ignore_ascii_case(n));
    for child in &sec.children {
        match child {
            Node::Directive(d) => check(d, overrides)?,
            Node::Section(inner) if is_if(&inner.name) => check_section(inner, overrides)?,
            Node::Section(inner) => return Err(ConfigError { origin: inner.origin.clone(), message: format!("<{}> not allowed here", inner.name) }),
            Node::Skipped(_) => {}
        }
    }
    Ok(())
}

/// A builder for one `.htaccess` file: a tenant's lines, under the
/// server's ServerRoot and MPM.
fn builder_for(env: &Env, path: &Path) -> Builder {
    let mut b = Builder::new(&Reader::new(env.server_root.clone()), env.mpm, path);
    b.in_htaccess = true;
    b
}

/// A FastCGI handler set by `.htaccess` must be one the server's
/// configuration already gives the directory.
fn check_handler(h: &Handler, env: &Env, nodes: &[Node], dir: &Path) -> Result<(), ConfigError> {
    let addr = |h: &Handler| match h {
        Handler::FastCgi(b) => Some(b.addr.clone()),
        Handler::Pool(name) => Some(crate::backend::FcgiAddr::Pool(name.clone())),
        Handler::ServerStatus | Handler::Metrics | Handler::BalancerManager | Handler::MdStatus | Handler::TypeMap | Handler::Refused { .. } => None,
    };
    let Some(wanted) = addr(h) else { return Ok(()) };
    if env.handlers.iter().any(|known| addr(known).as_ref() == Some(&wanted)) {
        return Ok(());
    }
    // Named at the SetHandler line that set it.
    let line = find_set_handler(nodes).unwrap_or(Origin { file: Arc::new(dir.join(".htaccess")), line: 0 });
    Err(ConfigError { origin: line, message: format!("SetHandler: {} is not a handler the server configuration gives {}; .htaccess may only choose among those", describe(&wanted), dir.display()) })
}

fn describe(a: &crate::backend::FcgiAddr) -> String {
    use crate::backend::FcgiAddr;
    match a {
        FcgiAddr::Unix(p) => format!("proxy:unix:{}", p.display()),
        FcgiAddr::Tcp { host, port } => format!("proxy:fcgi://{host}:{port}"),
        FcgiAddr::Pool(name) => format!("pool:{name}"),
    }
}

fn find_set_handler(nodes: &[Node]) -> Option<Origin> {
    nodes.iter().rev().find_map(|n| match n {
        Node::Directive(d) if d.name.eq_ignore_ascii_case("SetHandler") => Some(d.origin.clone()),
        Node::Section(s) => find_set_handler(&s.children),
        _ => None,
    })
}

/// Whether `.htaccess` may hold `d` where `overrides` are in force.
/// A Require block's lines are AuthConfig's, as `Require` is.
fn check_require_block(sec: &Section, overrides: &Overrides) -> Result<(), ConfigError> {
    for node in &sec.children {
        match node {
            Node::Directive(d) => check(d, overrides)?,
            Node::Section(inner) => check_require_block(inner, overrides)?,
            Node::Skipped(_) => {}
        }
    }
    Ok(())
}

fn check(d: &Directive, overrides: &Overrides) -> Result<(), ConfigError> {
    let fail = |message: String| ConfigError { origin: d.origin.clone(), message };
    let Some(spec) = table::find(&d.name) else {
        if let Some(m) = crate::modules::refusing(&d.name) {
            if let crate::modules::Support::Refuses(why) = m.support {
                return Err(fail(format!("{} (mod_{}) is not supported: {why}", d.name, m.name)));
            }
        }
        return Err(fail(format!("Invalid command '{}', perhaps misspelled or defined by a module not included in the server configuration", d.name)));
    };
    if matches!(spec.apply, Apply::WhileReading) {
        return Err(fail(format!("{} not allowed here", d.name)));
    }
    overrides.allows(spec.canonical_name()).map_err(fail)?;
    if spec.canonical_name() == "Options" {
        overrides.allows_options(d).map_err(fail)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env { server_root: PathBuf::from("/"), mpm: Mpm::Event, handlers: vec![Handler::Pool("www".into())], php_pool: None }
    }

    fn overrides(args: &[&str]) -> Overrides {
        let mut o = Overrides::default();
        parse_allow_override(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>(), &mut o).unwrap();
        o
    }

    fn read_text(text: &str, o: &Overrides) -> Result<Htaccess, ConfigError> {
        read(Path::new("/srv/site/.htaccess"), text, Path::new("/srv/site"), o, &env())
    }

    /// mod_php's lines where the host runs PHP in its own pool: its
    /// `<IfModule>` is true, php_value and php_flag need Options, and
    /// php_admin_* is refused, as Apache refuses it.
    #[test]
    fn mod_php_lines() {
        let pool = |per_request| Some(crate::mod_php::PhpPool { name: "php-main".into(), per_request });
        let fpm = Env { php_pool: pool(true), ..env() };
        let text = "<IfModule mod_php.c>\n  php_value upload_max_filesize 16M\n  php_flag display_errors Off\n</IfModule>\n";
        let read = super::read(Path::new("/srv/site/.htaccess"), text, Path::new("/srv/site"), &overrides(&["Options"]), &fpm).unwrap_or_else(|e| panic!("{e}"));
        let php: Vec<(&str, &str, bool)> = read.sections[0].config.php.iter().map(|s| (s.name.as_str(), s.value.as_str(), s.admin)).collect();
        assert_eq!(php, [("upload_max_filesize", "16M", false), ("display_errors", "0", false)]);
        // A php-cgi pool reads none: said, not applied.
        let cgi = Env { php_pool: pool(false), ..env() };
        let read = super::read(Path::new("/srv/site/.htaccess"), text, Path::new("/srv/site"), &overrides(&["Options"]), &cgi).unwrap_or_else(|e| panic!("{e}"));
        assert!(read.sections[0].config.php.is_empty());
        assert!(read.notes[0].to_string().starts_with("/srv/site/.htaccess:2: upload_max_filesize is not applied: the pool php-main runs php-cgi"), "{:?}", read.notes);
        let e = read_text("php_value memory_limit 1G\n", &overrides(&["FileInfo"])).unwrap_err();
        assert!(e.message.contains("php_value not allowed here (AllowOverride does not include Options)"), "{e}");
        let e = read_text("php_admin_value open_basedir /\n", &overrides(&["All"])).unwrap_err();
        assert_eq!((e.origin.line, e.message.as_str()), (1, "php_admin_value not allowed here"));
        let e = read_text("php_value auto_prepend_file /x\"y\n", &overrides(&["All"])).unwrap_err();
        assert!(e.message.contains("may not hold a double quote"), "{e}");
        let e = read_text("php_flag display_errors maybe\n", &overrides(&["All"])).unwrap_err();
        assert!(e.message.contains("'maybe' is not a boolean"), "{e}");
    }

    #[test]
    fn every_classed_directive_exists_and_may_stand_in_a_directory() {
        for (_, names) in CLASSES {
            for n in *names {
                let spec = table::find(n).unwrap_or_else(|| panic!("{n} is not in the directive table"));
                assert!(spec.contexts.allows(Context::Directory), "{n} cannot stand in <Directory>");
            }
        }
    }

    #[test]
    fn classes_decide_what_a_file_may_hold() {
        let text = "DirectoryIndex app.php\nErrorDocument 404 /nf.html\n";
        assert!(read_text(text, &overrides(&["All"])).is_ok());
        assert!(read_text(text, &overrides(&["Indexes", "FileInfo"])).is_ok());
        let e = read_text(text, &overrides(&["Indexes"])).unwrap_err();
        assert_eq!(e.origin.line, 2);
        assert!(e.message.contains("ErrorDocument not allowed here (AllowOverride does not include FileInfo)"), "{e}");
        assert!(!Overrides::default().reads_files());
        assert!(!overrides(&["None"]).reads_files());
    }

    #[test]
    fn headers_need_file_info_and_expires_indexes() {
        let text = "Header set X-Frame-Options DENY\nSetEnvIf Request_URI x v\nExpiresActive On\nExpiresDefault A60\n";
        assert!(read_text(text, &overrides(&["FileInfo", "Indexes"])).is_ok());
        let e = read_text(text, &overrides(&["FileInfo"])).unwrap_err();
        assert_eq!(e.origin.line, 3);
        assert!(e.message.contains("ExpiresActive not allowed here (AllowOverride does not include Indexes)"), "{e}");
        let e = read_text("Header frob X\n", &overrides(&["FileInfo"])).unwrap_err();
        assert!(e.to_string().contains("/srv/site/.htaccess:1"), "{e}");
    }

    #[test]
    fn allow_override_list_lets_single_directives_in() {
        let mut o = Overrides::default();
        parse_allow_override_list(&["DirectoryIndex".into()], &mut o, |n| table::find(n).is_some()).unwrap();
        assert!(o.reads_files());
        assert!(read_text("DirectoryIndex a.php\n", &o).is_ok());
        assert!(read_text("Options -Indexes\n", &o).is_err());
        assert!(parse_allow_override_list(&["Bogus".into()], &mut o, |n| table::find(n).is_some()).is_err());
    }

    /// The harmless lines PHP applications ship in their `.htaccess`
    /// (front controllers turning MultiViews off inside `<IfModule
    /// mod_negotiation.c>`, SVG types and encodings, mod_php settings,
    /// listing cosmetics) are read; what warren does not act on comes back
    /// as notes with their lines.
    #[test]
    fn application_files_harmless_lines() {
        let text = "<IfModule mod_negotiation.c>\n    Options -MultiViews -Indexes\n</IfModule>\nAddType image/svg+xml svg svgz\nAddEncoding gzip svgz\nAddDefaultCharset utf-8\n<IfModule mod_php.c>\n  php_value upload_max_filesize 16M\n  php_flag output_buffering off\n</IfModule>\nIndexOptions FancyIndexing\nDirectoryIndex index.php index.html\n<IfModule !mod_authz_core.c>\n  Order allow,deny\n</IfModule>\n";
        let read = read_text(text, &overrides(&["All"])).unwrap_or_else(|e| panic!("{e}"));
        let notes: Vec<String> = read.notes.iter().map(ToString::to_string).collect();
        // mod_php's block is skipped where PHP runs in no pool of the host's.
        assert_eq!(notes.len(), 2, "AddEncoding is acted on: {notes:?}");
        assert!(notes[0].starts_with("/srv/site/.htaccess:11: IndexOptions: accepted, not acted on"), "{notes:?}");
        assert!(notes[1].starts_with("/srv/site/.htaccess:7: skipped 2 lines: <IfModule mod_php.c>: php_module is not loaded"), "{notes:?}");
        assert!(read.sections[0].config.php.is_empty());
        // Their classes still apply, and refused directives say why.
        let e = read_text("IndexOptions FancyIndexing\n", &overrides(&["FileInfo"])).unwrap_err();
        assert!(e.message.contains("AllowOverride does not include Indexes"), "{e}");
        // mod_access_compat's lines are in Limit; host names are not looked up.
        let e = read_text("Order deny,allow\nDeny from all\n", &overrides(&["AuthConfig"])).unwrap_err();
        assert!(e.message.contains("AllowOverride does not include Limit"), "{e}");
        assert!(read_text("Order deny,allow\nDeny from all\nAllow from 10.1\n", &overrides(&["Limit"])).is_ok());
        let e = read_text("Deny from evil.example\n", &overrides(&["Limit"])).unwrap_err();
        assert!(e.message.contains("host names are not looked up"), "{e}");
    }

    /// mod_http2's lines an `.htaccess` may hold, by their classes, each
    /// said as not acted on.
    #[test]
    fn http2_lines_are_said() {
        let text = "H2Push on\nH2Upgrade off\nH2CopyFiles on\nH2PushResource /a.css\nH2EarlyHint Link \"</a.css>;rel=preload\"\n";
        let read = read_text(text, &overrides(&["AuthConfig", "FileInfo"])).unwrap_or_else(|e| panic!("{e}"));
        let notes: Vec<String> = read.notes.iter().map(ToString::to_string).collect();
        assert_eq!(notes.len(), 5, "{notes:#?}");
        for (line, what) in [(1, "H2Push on: not acted on"), (2, "H2Upgrade in a section: not acted on"), (3, "H2CopyFiles: accepted, not acted on"), (4, "H2PushResource: accepted"), (5, "H2EarlyHint: accepted")] {
            assert!(notes.iter().any(|n| n.starts_with(&format!("/srv/site/.htaccess:{line}: {what}"))), "{what}: {notes:#?}");
        }
        let e = read_text("H2Upgrade off\n", &overrides(&["FileInfo"])).unwrap_err();
        assert!(e.message.contains("AllowOverride does not include AuthConfig"), "{e}");
        let e = read_text("H2Direct on\n", &overrides(&["All"])).unwrap_err();
        assert!(e.message.contains("H2Direct not allowed here"), "{e}");
    }

    #[test]
    fn options_list_limits_options() {
        let o = overrides(&["Options=Indexes,FollowSymLinks"]);
        assert!(read_text("Options -Indexes +FollowSymLinks\n", &o).is_ok());
        let e = read_text("Options +SymLinksIfOwnerMatch\n", &o).unwrap_err();
        assert!(e.message.contains("Option SymLinksIfOwnerMatch not allowed here"), "{e}");
    }

    #[test]
    fn server_directives_unknown_ones_and_includes_are_errors_with_lines() {
        let all = overrides(&["All"]);
        let e = read_text("# c\nDocumentRoot /tmp\n", &all).unwrap_err();
        assert_eq!((e.origin.line, e.message.as_str()), (2, "DocumentRoot not allowed here"));
        let e = read_text("Bogus on\n", &all).unwrap_err();
        assert!(e.message.starts_with("Invalid command 'Bogus'"), "{e}");
        let e = read_text("Include /etc/passwd\n", &all).unwrap_err();
        assert!(e.message.contains("Include not allowed here"), "{e}");
        let e = read_text("<Directory /x>\n</Directory>\n", &all).unwrap_err();
        assert!(e.message.contains("<Directory> not allowed here"), "{e}");
        let e = read_text("DirectoryIndex\n", &all).unwrap_err();
        assert!(e.to_string().contains("/srv/site/.htaccess:1"), "{e}");
    }

    #[test]
    fn files_sections_are_scoped_to_the_directory() {
        let h = read_text("<Files \"x.ini\">\nRequire all denied\n</Files>\nDirectoryIndex i.php\n", &overrides(&["All"])).unwrap();
        assert_eq!(h.sections.len(), 2);
        assert!(matches!(&h.sections[0].matcher, SectionMatch::Directory(d) if d == "/srv/site"));
        assert_eq!(h.sections[0].config.directory_index.as_deref(), Some(&["i.php".to_string()][..]));
        assert!(matches!(&h.sections[1].matcher, SectionMatch::Files(f) if f == "x.ini"));
        assert!(matches!(h.sections[1].within.as_deref(), Some(SectionMatch::Directory(d)) if d == "/srv/site"));
    }

    #[test]
    fn set_handler_names_only_a_handler_the_server_gives() {
        let all = overrides(&["All"]);
        assert!(read_text("SetHandler pool:www\n", &all).is_ok());
        assert!(read_text("<FilesMatch \\.php$>\nSetHandler pool:www\n</FilesMatch>\n", &all).is_ok());
        let e = read_text("# another user's pool\n<Files x.php>\nSetHandler pool:other\n</Files>\n", &all).unwrap_err();
        assert_eq!(e.origin.line, 3);
        assert!(e.message.contains("may only choose among those"), "{e}");
        let e = read_text("SetHandler proxy:unix:/run/php/other.sock|fcgi://localhost\n", &all).unwrap_err();
        assert!(e.message.contains("may only choose among those"), "{e}");
    }

    /// A server-wide handler is refused where it applies (not the whole
    /// file); a handler warren lacks marks scripts and is said in the notes.
    #[test]
    fn server_wide_handlers_are_refused_and_scripts_marked() {
        let h = read_text("AddHandler php-script .php\n<Files status>\nSetHandler server-status\n</Files>\n<IfModule mod_fcgid.c>\nAddHandler fcgid-script .inc\n</IfModule>\n", &overrides(&["FileInfo"])).unwrap();
        let status = &h.sections[1].config.handler;
        assert!(matches!(status, Some(Some(Handler::Refused { name, origin })) if name == "server-status" && origin.line == 3), "{status:?}");
        assert!(h.sections[0].config.scripts.iter().any(|m| m.covers("a.php")) && h.sections[0].config.scripts.iter().any(|m| m.covers("a.inc")));
        assert!(h.notes.iter().any(|n| n.to_string().starts_with("/srv/site/.htaccess:1: AddHandler php-script .php: files ending in .php are scripts")), "{:?}", h.notes);
    }

    /// A tenant's expressions may not test or read the server's files,
    /// whichever directive holds them; the error names the line.
    #[test]
    fn expressions_that_read_files_are_refused() {
        let all = overrides(&["All"]);
        for (text, line) in [
            ("<If \"-f '/etc/shadow'\">\nHeader set X y\n</If>\n", 1),
            ("RewriteEngine On\nRewriteCond expr \"file('/etc/passwd') =~ /root/\"\nRewriteRule ^ - [F]\n", 2),
            ("Require expr \"-d '/home/other'\"\n", 1),
            ("SetEnvIfExpr \"%{filesize:/etc/passwd} -gt 0\" X\n", 1),
            ("Header set X y \"expr=-e '/root'\"\n", 1),
            ("<If true>\n<If \"osenv('HOME') == ''\">\n</If>\n</If>\n", 2),
        ] {
            let e = read_text(text, &all).unwrap_err();
            assert!(e.origin.line == line && e.message.contains("not allowed in .htaccess"), "{text}: {e}");
        }
        assert!(read_text("RewriteEngine On\nRewriteCond expr \"%{HTTP_HOST} == 'a'\" [OR,NV]\nRewriteCond %{HTTPS} on\nRewriteRule ^ - [F]\n", &all).is_ok());
    }
}
