//! Debian's /etc/apache2, as the apache2 package installs it, checked by
//! `warren -t` unchanged: its default modules, plus those a PHP site turns
//! on (a2enmod rewrite headers expires deflate remoteip proxy_fcgi setenvif
//! ssl, a2enconf php8.2-fpm, a2ensite default-ssl). Only the environment
//! changes, as /etc/apache2/envvars would set it, to point the pid file,
//! logs and run directory into a temporary directory.
//!
//! Every line must be taken or said as not acted on; a failure lists the
//! lines that are not. default-ssl's certificate is Debian's snakeoil one
//! (package ssl-cert: `make-ssl-cert generate-default-snakeoil`), read and
//! checked by `warren -t` as at start. Without TLS the tree must also
//! serve, its `Listen 80` moved to a free loopback port.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// What `a2enmod` leaves enabled after the package's installation.
const DEBIAN_DEFAULT_MODS: &[&str] = &[
    "access_compat", "alias", "auth_basic", "authn_core", "authn_file", "authz_core", "authz_host", "authz_user", "autoindex", "deflate", "dir", "env",
    "filter", "mime", "mpm_event", "negotiation", "reqtimeout", "setenvif", "status",
];
/// What a PHP site adds.
const SITE_MODS: &[&str] = &["rewrite", "headers", "expires", "remoteip", "proxy", "proxy_fcgi"];
/// And for TLS (ssl pulls in socache_shmcb, as a2enmod does).
const TLS_MODS: &[&str] = &["ssl", "socache_shmcb"];
/// `a2enconf`'s defaults.
const DEBIAN_DEFAULT_CONFS: &[&str] = &["charset", "localized-error-pages", "other-vhosts-access-log", "security", "serve-cgi-bin"];

struct Tree {
    dir: TempDir,
    conf: PathBuf,
}

/// A copy of /etc/apache2 with exactly the modules, confs and sites above
/// enabled (TLS's if `tls`), by relative links as a2enmod makes them
/// (whatever else this machine's other packages enabled is left out).
fn debian_tree(tls: bool) -> Tree {
    debian_tree_with(tls, &[])
}

/// [`debian_tree`] with more modules enabled (`a2enmod http2`).
fn debian_tree_with(tls: bool, more_mods: &[&str]) -> Tree {
    let etc = Path::new("/etc/apache2");
    assert!(etc.join("apache2.conf").is_file(), "/etc/apache2 is missing: install the apache2 package (test.sh does)");
    let dir = TempDir::new("apache-tree");
    let root = dir.0.join("apache2");
    let ok = Command::new("cp").arg("-a").arg(etc).arg(&root).status().expect("cp");
    assert!(ok.success(), "cp -a /etc/apache2 failed");
    for sub in ["run", "lock", "log"] {
        std::fs::create_dir_all(dir.0.join(sub)).unwrap();
    }
    let enable = |kind: &str, names: &[&str], exts: &[&str]| {
        let enabled = root.join(format!("{kind}-enabled"));
        let _ = std::fs::remove_dir_all(&enabled);
        std::fs::create_dir_all(&enabled).unwrap();
        for name in names {
            let mut any = false;
            for ext in exts {
                let file = format!("{name}.{ext}");
                if root.join(format!("{kind}-available")).join(&file).is_file() {
                    std::os::unix::fs::symlink(format!("../{kind}-available/{file}"), enabled.join(&file)).unwrap();
                    any = true;
                }
            }
            assert!(any, "{kind}-available has no {name}");
        }
    };
    let tls_mods: &[&str] = if tls { TLS_MODS } else { &[] };
    enable("mods", &[DEBIAN_DEFAULT_MODS, SITE_MODS, tls_mods, more_mods].concat(), &["load", "conf"]);
    // php-fpm drops its conf in conf-available when apache2 is installed;
    // its name carries PHP's version.
    let php_conf = std::fs::read_dir(root.join("conf-available"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("php") && n.ends_with("-fpm.conf"))
        .expect("conf-available has no php*-fpm.conf: install php-fpm after apache2 (test.sh does), or dpkg-reconfigure it");
    let php_conf = php_conf.trim_end_matches(".conf").to_string();
    enable("conf", &[DEBIAN_DEFAULT_CONFS, &[php_conf.as_str()]].concat(), &["conf"]);
    enable("sites", if tls { &["000-default", "default-ssl"] } else { &["000-default"] }, &["conf"]);
    Tree { conf: root.join("apache2.conf"), dir }
}

/// warren on the tree, with the variables /etc/apache2/envvars sets
/// pointed into the temporary directory.
fn warren(tree: &Tree) -> Command {
    let d = &tree.dir.0;
    let mut cmd = Command::new(BIN);
    cmd.arg("-f")
        .arg(&tree.conf)
        .env("APACHE_RUN_USER", "www-data")
        .env("APACHE_RUN_GROUP", "www-data")
        .env("APACHE_PID_FILE", d.join("run/apache2.pid"))
        .env("APACHE_RUN_DIR", d.join("run"))
        .env("APACHE_LOCK_DIR", d.join("lock"))
        .env("APACHE_LOG_DIR", d.join("log"))
        .env("LANG", "C");
    cmd
}

/// `warren -t` on the tree: (exit code, stderr lines).
fn check(tree: &Tree) -> (Option<i32>, Vec<String>) {
    let d = &tree.dir.0;
    let out = warren(tree).arg("-t").output().expect("run warren -t");
    let stderr = String::from_utf8_lossy(&out.stderr).replace(&format!("{}/", d.join("apache2").display()), "");
    (out.status.code(), stderr.lines().map(str::to_string).collect())
}

fn errors(lines: &[String]) -> Vec<&String> {
    lines.iter().filter(|l| !l.ends_with("(warning)") && !l.contains(": skipped ")).collect()
}

/// Every module Debian and the site enable loads, ssl too; what warren does
/// not act on is said, once per directive; the `<IfModule>` blocks it
/// skips are listed.
#[test]
fn debian_tree_loads_its_modules_and_says_what_warren_does_not_do() {
    let tree = debian_tree(true);
    let (_, lines) = check(&tree);
    let all = lines.join("\n");
    let refused_modules: Vec<&String> = errors(&lines).into_iter().filter(|l| l.contains("is not built into warren")).collect();
    assert!(refused_modules.is_empty(), "LoadModule refused modules:\n{}", refused_modules.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("\n"));
    // Said once per directive, at its first line, with the count.
    let said = |needle: &str| lines.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(said(": AddIcon (here and on "), 1, "{all}");
    for directive in ["SSLRandomSeed", "SSLPassPhraseDialog", "IndexOptions", "ReadmeName", "HeaderName", "DefaultIcon", "DefaultRuntimeDir", "ProxyStatus"] {
        assert!(lines.iter().any(|l| l.contains(&format!(": {directive}")) && l.contains("accepted, not acted on") && l.ends_with("(warning)")), "{directive} is not said:\n{all}");
    }
    // mod_mime's and mod_negotiation's lines are acted on: nothing said.
    for directive in ["AddLanguage", "AddCharset", "LanguagePriority", "ForceLanguagePriority", "RemoveType", "type-map"] {
        assert_eq!(said(directive), 0, "{all}");
    }
    assert!(lines.iter().any(|l| l.starts_with("mods-enabled/auth_basic.load:") && l.contains("refuses directives of it") && l.ends_with("(warning)")), "{all}");
    // Provided: loaded without a word.
    assert!(!lines.iter().any(|l| l.starts_with("mods-enabled/access_compat.load:") || l.starts_with("mods-enabled/authn_file.load:")), "{all}");
    // TraceEnable Off and the rest of security.conf, and IndexIgnore, are
    // taken as they are.
    assert!(!all.contains("IndexIgnore") && !all.contains("TraceEnable") && !all.contains("ServerTokens") && !all.contains("ServerSignature"), "{all}");
    // The blocks skipped: GnuTLS's, server-side includes'; not mod_ssl's,
    // which is loaded, nor CGI's, which warren has (false until a2enmod cgid).
    assert!(!lines.iter().any(|l| l.contains(": skipped ") && l.contains("ssl_module")), "{all}");
    for (at, module) in [("ports.conf:", "gnutls_module"), ("mods-enabled/mime.conf:", "include_module")] {
        assert!(lines.iter().any(|l| l.starts_with(at) && l.contains(": skipped ") && l.contains(module)), "no skipped block of {module} in {at}:\n{all}");
    }
    // Blocks for another MPM and for modules warren has are not.
    assert!(!lines.iter().any(|l| l.contains("skipped") && (l.contains("mpm_") || l.contains("mod_authz_core") || l.contains("cgi_module"))), "{all}");
}

/// The whole tree is accepted, default-ssl's certificate and key too.
#[test]
fn debian_tree_with_tls_has_no_errors() {
    assert!(
        Path::new("/etc/ssl/certs/ssl-cert-snakeoil.pem").is_file(),
        "no snakeoil certificate: install ssl-cert and run make-ssl-cert generate-default-snakeoil (test.sh does)"
    );
    let tree = debian_tree(true);
    let (code, lines) = check(&tree);
    let left = errors(&lines);
    assert!(left.is_empty(), "warren -t refuses {} lines of Debian's tree:\n{}", left.len(), left.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("\n"));
    assert_eq!(code, Some(0), "{lines:?}");
}

/// `a2enmod http2` (its http2.conf: `Protocols h2 h2c http/1.1` for every
/// host) is taken without an error or a word: h2 over TLS on default-ssl's
/// port, h2c on 000-default's, each host of a listener agreeing.
#[test]
fn debian_tree_with_http2_has_no_errors() {
    let tree = debian_tree_with(true, &["http2"]);
    let (code, lines) = check(&tree);
    let left = errors(&lines);
    assert!(left.is_empty(), "warren -t refuses {} lines of Debian's tree with http2:\n{}", left.len(), left.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("\n"));
    assert_eq!(code, Some(0), "{lines:?}");
    let said: Vec<&String> = lines.iter().filter(|l| l.contains("http2") || l.contains("HTTP/2") || l.contains("Protocols") || l.contains("h2c")).collect();
    assert!(said.is_empty(), "{said:#?}");
}

/// A mistake in default-ssl, a key that is not the certificate's, is an
/// error naming the line.
#[test]
fn debian_tree_with_a_wrong_key_names_the_line() {
    let tree = debian_tree(true);
    let key = tree.dir.0.join("other.key");
    let ok = Command::new("openssl").args(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out"]).arg(&key).status().expect("openssl");
    assert!(ok.success());
    let site = tree.dir.0.join("apache2/sites-available/default-ssl.conf");
    let text = std::fs::read_to_string(&site).unwrap();
    let text = text.replace("/etc/ssl/private/ssl-cert-snakeoil.key", &key.display().to_string());
    std::fs::write(&site, &text).unwrap();
    let line = text.lines().position(|l| l.contains("other.key")).unwrap() + 1;
    let (code, lines) = check(&tree);
    assert_eq!(code, Some(1), "{lines:?}");
    let expected = format!("sites-enabled/default-ssl.conf:{line}: the private key does not match the certificate in /etc/ssl/certs/ssl-cert-snakeoil.pem");
    assert!(errors(&lines).iter().any(|l| **l == expected), "no {expected:?} in {lines:#?}");
}

/// Without TLS, the tree runs as it is, its `Listen 80` moved to a free
/// loopback port: Debian's default page, /icons/ (mod_alias),
/// /server-status from the machine itself (status.conf's Require local),
/// TraceEnable Off (security.conf), and the skipped blocks in the error log.
#[test]
fn debian_tree_serves() {
    let tree = debian_tree(false);
    let port = free_port();
    let ports = tree.dir.0.join("apache2/ports.conf");
    let text = std::fs::read_to_string(&ports).unwrap();
    assert!(text.contains("\nListen 80\n"), "{text}");
    std::fs::write(&ports, text.replace("\nListen 80\n", &format!("\nListen 127.0.0.1:{port}\n"))).unwrap();
    let (_, lines) = check(&tree);
    let errors = errors(&lines);
    assert!(errors.is_empty(), "warren -t refuses {} lines of Debian's tree without TLS:\n{}", errors.len(), errors.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("\n"));
    let child = warren(&tree).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().expect("start warren");
    let conf = tree.conf.clone();
    let s = Server { child: Some(child), port, dir: tree.dir, conf, relay: None };
    let pid_file = s.dir.0.join("run/apache2.pid");
    settle(|| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() && pid_file.exists());
    let page = s.get("/");
    assert_eq!(page.status, 200);
    assert_eq!(page.body, std::fs::read("/var/www/html/index.html").unwrap());
    assert_eq!(s.get("/icons/apache_pb.png").status, 200);
    assert!(s.get("/server-status?auto").text().contains("Scoreboard:"));
    let (resp, _) = s.exchange(b"TRACE / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(status_of(&resp), 405);
    let log = s.wait_log("log/error.log", "skipped");
    assert!(log.contains("ports.conf:") && log.contains("<IfModule mod_gnutls.c>: gnutls_module is not built into warren"), "{log}");
}
