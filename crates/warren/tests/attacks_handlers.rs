//! Attacks on the server-wide handlers (server-status, metrics,
//! balancer-manager, md-status), kept by the administrator for one
//! monitoring address, played by a site owner with an `.htaccess` file
//! (AllowOverride All) and an anonymous client: the owner routes URLs of
//! their own to the handlers' URLs with a RewriteRule `[PT]`, a plain
//! per-directory rewrite (an internal redirect), an ErrorDocument, a
//! FallbackResource and a DirectoryIndex, and the client asks for them,
//! also spelled `/x/..%2f` and `/./` and in absolute form. The handlers'
//! `<Location>` rules must apply on every one of those paths.

mod common;

use common::*;

const HANDLERS: [&str; 4] = ["server-status", "metrics", "balancer-manager", "md-status"];

fn start(mpm: &str) -> Server {
    let dir = TempDir::new(&format!("attacks-handlers-{mpm}"));
    standard_site(&dir);
    let mut rules = String::from("RewriteEngine On\n");
    for h in HANDLERS {
        rules.push_str(&format!("RewriteRule ^pt-{h}$ /{h} [PT]\nRewriteRule ^internal-{h}$ /{h}\n"));
        dir.write(&format!("htdocs/tenant/err-{h}/.htaccess"), format!("ErrorDocument 404 /{h}\n"));
        dir.write(&format!("htdocs/tenant/fallback-{h}/.htaccess"), format!("FallbackResource /{h}\n"));
        dir.write(&format!("htdocs/tenant/index-{h}/.htaccess"), format!("DirectoryIndex /{h}\n"));
    }
    dir.write("htdocs/tenant/.htaccess", rules);
    let d = dir.0.display();
    let locations: String = HANDLERS.iter().map(|h| format!("<Location /{h}>\n  SetHandler {h}\n  Require ip 192.0.2.10\n</Location>\n")).collect();
    let conf = format!("ExtendedStatus On\n<Directory {d}/htdocs>\n  AllowOverride All\n</Directory>\n{locations}");
    Server::start_in(dir, mpm, &conf)
}

fn every_path_to_a_handler_meets_its_rules(mpm: &str) {
    let s = start(mpm);
    for h in HANDLERS {
        let paths = [
            format!("/{h}"),
            format!("/tenant/pt-{h}"),
            format!("/tenant/internal-{h}"),
            format!("/tenant/err-{h}/missing"),
            format!("/tenant/fallback-{h}/missing"),
            format!("/tenant/index-{h}/"),
            format!("/tenant/..%2f{h}"),
            format!("/./{h}"),
            format!("//{h}"),
        ];
        for path in &paths {
            let r = s.get(path);
            assert!(matches!(r.status, 403 | 404), "{path}: {} {}", r.status, r.text());
            // The built-in error pages only: no figure, no scoreboard, no nonce.
            let text = r.text();
            assert!(text.contains("<title>40"), "{path}: {text}");
        }
        let r = parse_response(&s.raw(format!("GET http://localhost/tenant/pt-{h} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes())).0;
        assert_eq!(r.status, 403, "absolute form to {h}: {}", r.text());
    }
    let log = s.wait_log("error.log", "client denied by server configuration: /md-status");
    for h in HANDLERS {
        assert!(log.contains(&format!("client denied by server configuration: /{h}")), "{h}: {log}");
    }
}

each_mpm!(every_path_to_a_handler_meets_its_rules);
