//! Attacks on what an application is told about its request, under each
//! MPM, with a real php-fpm behind two name-based hosts (a.test, b.test).
//! Two attackers: an anonymous client who sends absolute-form targets and
//! HTTP/2 header lists whose Host disagrees with where the request goes,
//! hoping the application (or the logs, or a redirect) believes another
//! host; and a tenant who writes b.test's `.htaccess`, with SetEnv,
//! SetEnvIf, RewriteRule `[E=]` and RequestHeader lines meant to replace
//! the variables warren sets (SCRIPT_FILENAME, to run another script;
//! DOCUMENT_ROOT, REMOTE_ADDR, HTTPS, ...).

mod common;

use common::h2::*;
use common::*;
use std::time::{Duration, Instant};

each_mpm!(
    absolute_form_target_is_the_host,
    bad_authorities_are_refused,
    htaccess_cannot_replace_server_variables,
    server_config_lines_are_said_and_dropped,
    htaccess_cannot_change_the_pools_php_settings,
    h2_hosts_that_disagree_are_refused
);

/// What the application prints of its `$_SERVER`: `name=value` lines.
const INFO: &str = "<?php foreach (['SITE', 'HTTP_HOST', 'SERVER_NAME', 'SCRIPT_FILENAME', 'SCRIPT_NAME', 'DOCUMENT_ROOT', 'REMOTE_ADDR', 'HTTPS', 'PATH_INFO', 'PATH_TRANSLATED', 'CONTENT_TYPE', 'REDIRECT_STATUS', 'REQUEST_URI', 'SERVER_PORT', 'tenant', 'proto'] as $k) echo $k, '=', $_SERVER[$k] ?? '', \"\\n\";";

/// Two hosts, each with `info.php` (also its index) and a marker of its
/// own; a script outside both roots that a tenant would like run; `conf`
/// after the hosts.
fn two_sites(mpm: &str, tag: &str, conf: &str) -> (Server, Fpm) {
    two_sites_with(mpm, tag, conf, |_| String::new())
}

/// [`two_sites`] with lines for php-fpm's pools (given the test's directory).
fn two_sites_with(mpm: &str, tag: &str, conf: &str, pool_lines: impl Fn(&str) -> String) -> (Server, Fpm) {
    let dir = TempDir::new(&format!("attacks-requests-{tag}-{mpm}"));
    standard_site(&dir);
    for site in ["a", "b"] {
        let info = INFO.replacen("<?php ", &format!("<?php $_SERVER['SITE'] = '{site}'; "), 1);
        dir.write(&format!("{site}/info.php"), &info);
        dir.write(&format!("{site}/index.php"), &info);
        dir.write(&format!("{site}/dir/x.txt"), "x");
    }
    dir.write("other/script.php", "<?php echo 'OTHER SCRIPT RAN';");
    let fpm = Fpm::start(&dir, &pool_lines(&dir.0.display().to_string()));
    let root = dir.0.display();
    let hosts: String = ["a", "b"]
        .iter()
        .map(|site| format!("<VirtualHost *>\n    ServerName {site}.test\n    DocumentRoot {root}/{site}\n    CustomLog {site}-access.log \"%v|%V|%{{Host}}i|%r|%>s\"\n</VirtualHost>\n"))
        .collect();
    let conf = format!(
        "DirectoryIndex index.php\n{}<Directory {root}>\n    AllowOverride All\n    Options FollowSymLinks\n</Directory>\n{hosts}{conf}",
        fpm.php_files()
    );
    (Server::start_in(dir, mpm, &conf), fpm)
}

fn vars(r: &Resp) -> std::collections::HashMap<String, String> {
    key_values(&r.text())
}

/// One request, raw, on its own connection.
fn send(s: &Server, request: &str) -> Resp {
    let answer = s.raw(request.as_bytes());
    assert!(!answer.is_empty(), "no answer to {request:?}; error log:\n{}", s.read_log("error.log"));
    parse_response(&answer).0
}

/// Each line of `log` that contains `needle`.
fn count(log: &str, needle: &str) -> usize {
    log.lines().filter(|l| l.contains(needle)).count()
}

fn absolute_form_target_is_the_host(mpm: &str) {
    let (s, _fpm) = two_sites(mpm, "absolute", "");
    let port = s.port;
    // The target's authority wins over Host, whatever the case of the
    // scheme and host, with a port or without, HTTP/1.1 or 1.0.
    let with_port = format!("b.test:{port}");
    let cases = [
        ("GET http://b.test/info.php HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n".to_string(), "b.test"),
        ("GET HTTP://B.TEST/info.php HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n".to_string(), "B.TEST"),
        (format!("GET hTtP://b.test:{port}/info.php?x=1 HTTP/1.1\r\nHost: a.test:{port}\r\nConnection: close\r\n\r\n"), with_port.as_str()),
        ("GET http://b.test/info.php HTTP/1.0\r\n\r\n".to_string(), "b.test"),
        ("GET http://b.test HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n".to_string(), "b.test"),
        ("GET http://b.test?q=1 HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n".to_string(), "b.test"),
    ];
    for (request, host) in &cases {
        let r = send(&s, request);
        assert_eq!(r.status, 200, "{request:?}: {}", r.text());
        let v = vars(&r);
        assert_eq!(v["SITE"], "b", "{request:?} went to the wrong host: {}", r.text());
        assert_eq!(v["HTTP_HOST"], *host, "{request:?}: {}", r.text());
        assert!(v["SERVER_NAME"].eq_ignore_ascii_case("b.test"), "{request:?}: {}", r.text());
        assert!(v["REQUEST_URI"].starts_with('/'), "{request:?}: {}", r.text());
    }
    let r = send(&s, "GET http://b.test?q=1 HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    assert_eq!(vars(&r)["REQUEST_URI"], "/?q=1");

    // A redirect built from the host names the target's, not Host's.
    let r = send(&s, "GET http://b.test/dir HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n");
    assert_eq!(r.status, 301);
    let location = r.header("location").unwrap_or_default();
    assert!(location.starts_with("http://b.test") && location.ends_with("/dir/") && !location.contains("evil"), "{location}");

    // Logs: the host's log, and Host as the request's host.
    let log = s.wait_log("b-access.log", "/dir HTTP/1.1|301");
    assert!(log.contains("b.test|b.test|b.test|GET http://b.test/dir HTTP/1.1|301"), "{log}");
    assert!(log.lines().all(|l| l.split('|').nth(2) != Some("evil.example")), "Host logged as the client sent it: {log}");
}

fn bad_authorities_are_refused(mpm: &str) {
    let (s, _fpm) = two_sites(mpm, "authority", "");
    // Userinfo (RFC 9110 §4.2.4), an empty host, a bad port, and ways of
    // hiding another name in front of the host.
    for target in [
        "http://a.test@b.test/info.php",
        "http://evil@b.test/info.php",
        "http://@b.test/info.php",
        "http://user:pw@b.test/info.php",
        "http:///info.php",
        "http://:80/info.php",
        "http://b.test:80x/info.php",
        "http://b.test\\@evil/info.php",
        "http://b.test%2F@evil/",
        "http://b.test/info.php\\@evil",
    ] {
        let r = send(&s, &format!("GET {target} HTTP/1.1\r\nHost: b.test\r\nConnection: close\r\n\r\n"));
        let ran = r.text().contains("SITE=");
        let bad_path = target.ends_with("@evil") && r.status == 404;
        assert!(r.status == 400 || bad_path, "{target}: {} {}", r.status, r.text());
        assert!(!ran, "{target} ran a script: {}", r.text());
    }
    // A percent-encoded name is no name warren knows: not b's.
    let r = send(&s, "GET http://b.test%2eevil/info.php HTTP/1.1\r\nHost: b.test\r\nConnection: close\r\n\r\n");
    assert!(!r.text().contains("SITE=b"), "{}", r.text());
    let log = s.wait_log("error.log", "bad authority in absolute-form request-target: a.test@b.test");
    assert!(log.lines().any(|l| l.contains("bad authority") && l.contains("127.0.0.1")), "the client is named: {log}");
    // And the server goes on answering.
    assert_eq!(vars(&s.get_from("b.test", "/info.php"))["SITE"], "b");
}

/// The tenant's `.htaccess`: each line tries to set, replace or unset one
/// of the variables warren sets, beside lines that set a variable of the
/// site's own (which must keep working).
const TENANT_HTACCESS: &str = "SetEnv DOCUMENT_ROOT /tmp\n\
SetEnv SCRIPT_NAME /other/script.php\n\
SetEnv tenant yes\n\
SetEnvIf Request_URI . REMOTE_ADDR=6.6.6.6 HTTPS=on proto=https\n\
SetEnvIfNoCase User-Agent . Path_Translated=/etc/passwd\n\
BrowserMatch . SERVER_NAME=a.test\n\
UnsetEnv REDIRECT_STATUS\n\
RequestHeader set Content-Type text/evil\n\
RewriteEngine On\n\
RewriteRule ^info\\.php$ - [E=SCRIPT_FILENAME:OTHER/other/script.php,E=PATH_INFO:/x]\n\
RewriteCond %{HTTP:X-Name} (.+)\n\
RewriteRule ^info\\.php$ - [E=%1:OTHER/other/script.php]\n";

/// What the client names in X-Name for line 12's `[E=%1:...]`: in any case,
/// and one percent-encoded (not decoded: a variable of no meaning).
const NAMES: [&str; 7] = ["SCRIPT_FILENAME", "script_filename", "Document_Root", "REDIRECT_STATUS", "SCRIPT%5fFILENAME", "SCRIPT_FILENAME", "REMOTE_USER"];

fn htaccess_cannot_replace_server_variables(mpm: &str) {
    let (s, _fpm) = two_sites(mpm, "htaccess", "");
    let root = s.dir.0.display().to_string();
    let htaccess = TENANT_HTACCESS.replace("OTHER", &root);
    s.dir.write("b/.htaccess", &htaccess);
    let request = |name: &str| {
        let raw = format!("POST /info.php HTTP/1.1\r\nHost: b.test\r\nX-Name: {name}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 3\r\nConnection: close\r\n\r\na=1");
        send(&s, &raw)
    };
    for name in NAMES {
        let r = request(name);
        assert_eq!(r.status, 200, "{name}: {}", r.text());
        let text = r.text();
        assert!(!text.contains("OTHER SCRIPT RAN"), "[E={name}:...] ran another script");
        let v = vars(&r);
        assert_eq!(v["SITE"], "b", "{text}");
        assert_eq!(v["SCRIPT_FILENAME"], format!("{root}/b/info.php"), "{name}: {text}");
        assert_eq!(v["SCRIPT_NAME"], "/info.php", "{text}");
        assert_eq!(v["DOCUMENT_ROOT"], format!("{root}/b"), "{text}");
        assert_eq!(v["REMOTE_ADDR"], "127.0.0.1", "{text}");
        assert_eq!(v["HTTPS"], "", "{text}");
        assert_eq!(v["PATH_INFO"], "", "{text}");
        assert_eq!(v["PATH_TRANSLATED"], "", "{text}");
        assert_eq!(v["SERVER_NAME"], "b.test", "{text}");
        assert_eq!(v["CONTENT_TYPE"], "application/x-www-form-urlencoded", "{text}");
        // None: php-fpm gets it only after an internal redirect, as from
        // mod_proxy_fcgi, and the tenant's [E=REDIRECT_STATUS:...] sets none.
        assert_eq!(v["REDIRECT_STATUS"], "", "{text}");
        // The site's own variables are the site's.
        assert_eq!((v["tenant"].as_str(), v["proto"].as_str()), ("yes", "https"), "{text}");
    }
    // Each line is said with its file and line, once (the file is read
    // once; the name from the request once per rule, not per request).
    let file = format!("{root}/b/.htaccess");
    let log = s.wait_log("error.log", &format!("{file}:12: RewriteRule [E=SCRIPT_FILENAME]"));
    for (line, what) in [
        (1, "SetEnv: DOCUMENT_ROOT"),
        (2, "SetEnv: SCRIPT_NAME"),
        (4, "SetEnvIf: REMOTE_ADDR"),
        (4, "SetEnvIf: HTTPS"),
        (5, "SetEnvIfNoCase: Path_Translated"),
        (6, "BrowserMatch: SERVER_NAME"),
        (7, "UnsetEnv: REDIRECT_STATUS"),
        (8, "RequestHeader Content-Type: CONTENT_TYPE"),
        (10, "RewriteRule [E=SCRIPT_FILENAME]: SCRIPT_FILENAME"),
        (10, "RewriteRule [E=PATH_INFO]: PATH_INFO"),
    ] {
        let needle = format!("{file}:{line}: {what} is a variable warren gives the application itself");
        assert!((1..NAMES.len()).contains(&count(&log, &needle)), "{needle} once (in each child that read the file) in:\n{log}");
    }
    // Line 12's names come from the request: a refusal is said once per
    // rule in each child that met it (a child reads the file once too),
    // not once per request.
    let said = count(&log, &format!("{file}:12: RewriteRule [E="));
    assert!((1..NAMES.len()).contains(&said), "{said} times:\n{log}");
    assert!(log.lines().filter(|l| l.contains(":12: RewriteRule")).all(|l| l.contains("127.0.0.1")), "the client is named:\n{log}");
}

/// In the server's configuration the same lines are said by `warren -t`
/// (with Syntax OK: the rest of the configuration is fine) and at start,
/// and have no effect.
fn server_config_lines_are_said_and_dropped(mpm: &str) {
    let conf = "<Directory />\n    SetEnv SCRIPT_FILENAME /etc/passwd\n    SetEnvIf X-Forwarded-Proto https HTTPS=on\n    RequestHeader set Content-Length 0\n</Directory>\nRewriteEngine On\nRewriteRule ^/info\\.php$ - [E=DOCUMENT_ROOT:/tmp,E=fine:1]\n";
    let (s, _fpm) = two_sites(mpm, "serverconf", conf);
    let out = std::process::Command::new(BIN).args(["-t", "-f"]).arg(&s.conf).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.contains("Syntax OK"), "{said}");
    let conf_file = s.conf.display().to_string();
    for what in ["SetEnv: SCRIPT_FILENAME", "SetEnvIf: HTTPS", "RequestHeader Content-Length: CONTENT_LENGTH", "RewriteRule [E=DOCUMENT_ROOT]: DOCUMENT_ROOT"] {
        assert!(said.lines().any(|l| l.contains(&conf_file) && l.contains(what) && l.contains("has no effect")), "{what} in:\n{said}");
    }
    let r = send(&s, "GET /info.php HTTP/1.1\r\nHost: b.test\r\nX-Forwarded-Proto: https\r\nConnection: close\r\n\r\n");
    let v = vars(&r);
    assert_eq!(v["SCRIPT_FILENAME"], format!("{}/b/info.php", s.dir.0.display()), "{}", r.text());
    assert_eq!(v["DOCUMENT_ROOT"], format!("{}/b", s.dir.0.display()), "{}", r.text());
    assert_eq!(v["HTTPS"], "", "{}", r.text());
}

/// php-fpm reads PHP_VALUE and PHP_ADMIN_VALUE as php.ini lines over its
/// pool's, php_admin_value included: a tenant's `.htaccess` setting them
/// would lift the open_basedir the admin gave the pool. The server's
/// configuration may still set them (as with Apache's mod_proxy_fcgi).
fn htaccess_cannot_change_the_pools_php_settings(mpm: &str) {
    let (s, _fpm) = two_sites_with(mpm, "phpvalue", "<Directory />\n    SetEnv PHP_VALUE memory_limit=77M\n</Directory>\n", |root| format!("php_admin_value[open_basedir] = {root}\n"));
    let root = s.dir.0.display().to_string();
    s.dir.write("b/ini.php", "<?php echo ini_get('open_basedir'), '|', ini_get('memory_limit'), '|', ini_get('auto_prepend_file');");
    s.dir.write(
        "b/.htaccess",
        "SetEnv PHP_ADMIN_VALUE open_basedir=/\nSetEnvIf Request_URI . php_value=auto_prepend_file=/etc/passwd\nRewriteEngine On\nRewriteRule ^ - [E=PHP_ADMIN_VALUE:open_basedir=/]\nRewriteCond %{HTTP:X-Name} (.+)\nRewriteRule ^ - [E=%1:open_basedir=/]\n",
    );
    for name in ["PHP_ADMIN_VALUE", "php_admin_value", "PHP_VALUE"] {
        let r = send(&s, &format!("GET /ini.php HTTP/1.1\r\nHost: b.test\r\nX-Name: {name}\r\nConnection: close\r\n\r\n"));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.text(), format!("{root}|77M|"), "X-Name: {name}");
    }
    let file = format!("{root}/b/.htaccess");
    let log = s.wait_log("error.log", &format!("{file}:6: RewriteRule [E="));
    for (line, what) in [(1, "SetEnv: PHP_ADMIN_VALUE"), (2, "SetEnvIf: php_value"), (4, "RewriteRule [E=PHP_ADMIN_VALUE]: PHP_ADMIN_VALUE"), (6, "RewriteRule [E=")] {
        let needle = format!("{file}:{line}: {what}");
        assert!(log.lines().any(|l| l.contains(&needle) && l.contains("would change the PHP settings of the pool")), "{needle} in:\n{log}");
    }
}

/// An HPACK literal without indexing, names and values under 127 bytes.
fn literal(block: &mut Vec<u8>, name: &str, value: &str) {
    block.push(0x00);
    block.push(name.len() as u8);
    block.extend_from_slice(name.as_bytes());
    block.push(value.len() as u8);
    block.extend_from_slice(value.as_bytes());
}

/// The status and body of stream `id`.
fn answer(raw: &mut RawH2, id: u32) -> (u16, String) {
    let mut status = 0;
    let mut body = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let f = raw.next_frame(deadline.saturating_duration_since(Instant::now())).unwrap_or_else(|| panic!("stream {id} did not end"));
        assert!(f.kind != GOAWAY && !(f.kind == RST_STREAM && f.stream == id), "stream {id}: {f:?}");
        if f.stream != id {
            continue;
        }
        if f.kind == HEADERS && status == 0 {
            // :status as the static table's (RFC 7541 appendix A): 8 is 200, 12 is 400.
            status = match f.content().first() {
                Some(0x88) => 200,
                Some(0x8c) => 400,
                other => panic!("stream {id}: :status not as expected: {other:?}"),
            };
        }
        if f.kind == DATA {
            body.extend_from_slice(f.content());
        }
        if f.flags & END_STREAM != 0 {
            return (status, String::from_utf8_lossy(&body).into_owned());
        }
    }
}

fn h2_hosts_that_disagree_are_refused(mpm: &str) {
    let (s, _fpm) = two_sites(mpm, "h2hosts", "LoadModule http2_module modules/mod_http2.so\nProtocols h2 h2c http/1.1\n");
    let mut raw = RawH2::connect(s.port);
    let request = |fields: &[(&str, &str)]| {
        let mut block = Vec::new();
        for (n, v) in [(":method", "GET"), (":scheme", "http"), (":path", "/info.php")].iter().chain(fields) {
            literal(&mut block, n, v);
        }
        block
    };
    let cases: [(&[(&str, &str)], u16); 6] = [
        (&[("host", "a.test"), ("host", "b.test")], 400),
        (&[("host", "b.test"), ("host", "b.test")], 400),
        (&[(":authority", "b.test"), ("host", "a.test")], 400),
        (&[(":authority", "b.test"), ("host", "b.test:80")], 400),
        (&[(":authority", "b.test"), ("host", "B.test")], 200),
        (&[("host", "b.test")], 200),
    ];
    for (i, (fields, want)) in cases.iter().enumerate() {
        // :authority is a pseudo-header field: before the regular ones.
        let mut fields = fields.to_vec();
        fields.sort_by_key(|(n, _)| !n.starts_with(':'));
        let id = 1 + 2 * i as u32;
        raw.send(HEADERS, END_STREAM | END_HEADERS, id, &request(&fields));
        let (status, body) = answer(&mut raw, id);
        assert_eq!(status, *want, "{fields:?}: {body}");
        if *want == 200 {
            let v = key_values(&body);
            assert_eq!((v["SITE"].as_str(), v["HTTP_HOST"].as_str()), ("b", "b.test"), "{fields:?}: {body}");
        } else {
            assert!(!body.contains("SITE="), "{fields:?} ran the script: {body}");
        }
    }
    let log = s.wait_log("error.log", "differs from :authority b.test");
    assert!(log.lines().any(|l| l.contains("more than one host header field") && l.contains("127.0.0.1")), "{log}");
    assert!(log.contains("host header field a.test differs from :authority b.test"), "{log}");
}
