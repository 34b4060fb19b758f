//! HTTP/2 with curl under each MPM, `Protocols h2 h2c http/1.1`: the same
//! site over h2c with prior knowledge (cleartext port) and h2 by ALPN (TLS
//! port): pages and a 1 MB file byte-exact (past the 65535-byte initial
//! window), HEAD, ranges, conditional requests, error pages, redirects,
//! mod_rewrite and server-status; PHP through php-fpm (a query, bodies
//! sent as DATA frames with and without a length) and the ways a FastCGI
//! exchange ends other than with a whole answer (a local redirect, a
//! pool's child killed mid-request, ProxyTimeout, the application gone);
//! mod_headers' fields lower-cased on the wire, gzip; h2c by `Upgrade`
//! (101, then HTTP/2 on the same connection), and what H2Direct /
//! H2Upgrade Off turn off, and that without `Protocols` there is no
//! HTTP/2 at all; the access log's `%H` and `%r`; a listener whose
//! `Protocols` is h2c alone refuses HTTP/1.1 as HTTP/2 does (GOAWAY).
//! h2_clients.rs has nghttp, h2load, a graceful restart and Chromium.

mod common;
use common::h2::*;
use common::*;
use std::time::{Duration, Instant};

each_mpm!(
    pages_head_and_a_large_file,
    ranges_and_conditional_requests,
    error_pages_and_redirects,
    php_query_and_request_bodies,
    php_redirects_lost_children_and_failures,
    header_fields_and_gzip,
    upgrade_from_http11,
    direct_and_upgrade_turned_off,
    off_without_protocols,
    access_log_says_http2,
    h2c_alone_speaks_only_http2,
);

const WAYS: [Way; 2] = [Way::PriorKnowledge, Way::Tls];

/// The 1 MB file: 16 times the 65535-byte window a stream starts with, so
/// it goes only as curl returns credit.
fn big() -> Vec<u8> {
    pattern(1 << 20, 1)
}

/// Asserts curl agreed HTTP/2 and got `status`, showing curl's account if not.
fn assert_h2(g: &Got, status: u16, what: &str) {
    assert_eq!((g.code, g.version.as_str(), g.status), (0, "2", status), "{what}: curl -v said:\n{}", g.verbose);
}

fn pages_head_and_a_large_file(mpm: &str) {
    let h = H2Server::start(mpm, "pages", &[("htdocs/big.bin", big())], "");
    for way in WAYS {
        let g = h.curl(way, "/index.html", &[]);
        assert_h2(&g, 200, &format!("{way:?} /index.html"));
        assert_eq!(g.body, b"<html>hello</html>\n", "{way:?}");
        assert_eq!(g.field("content-length"), Some("19"), "{way:?}: {:?}", g.headers);
        assert!(g.field("content-type").is_some_and(|t| t.starts_with("text/html")), "{way:?}: {:?}", g.headers);

        // HEAD: the GET's fields, content-length included, and no body
        // (curl -I would print a body's bytes as well, had any come: it
        // reads to END_STREAM).
        let g = h.curl(way, "/index.html", &["-I"]);
        assert_h2(&g, 200, &format!("{way:?} HEAD"));
        assert_eq!(g.field("content-length"), Some("19"), "{way:?}: {:?}", g.headers);
        assert!(!String::from_utf8_lossy(&g.body).contains("<html>"), "{way:?}: HEAD got a body: {:?}", String::from_utf8_lossy(&g.body));

        let g = h.curl(way, "/big.bin", &[]);
        assert_h2(&g, 200, &format!("{way:?} /big.bin"));
        assert_eq!(g.field("content-length"), Some("1048576"));
        assert!(g.body == big(), "{way:?}: 1 MB byte-exact ({} bytes came)", g.body.len());

        // A name with a space, percent-encoded in :path.
        let g = h.curl(way, "/space%20name.txt", &[]);
        assert_h2(&g, 200, &format!("{way:?} /space%20name.txt"));
        assert_eq!(g.body, b"spaced");
    }
}

fn ranges_and_conditional_requests(mpm: &str) {
    let h = H2Server::start(mpm, "cond", &[("htdocs/big.bin", big())], "");
    let want = big();
    for way in WAYS {
        let g = h.curl(way, "/big.bin", &["-r", "100000-199999"]);
        assert_h2(&g, 206, &format!("{way:?} range"));
        assert_eq!(g.field("content-range"), Some("bytes 100000-199999/1048576"), "{way:?}: {:?}", g.headers);
        assert_eq!(g.field("content-length"), Some("100000"));
        assert!(g.body == want[100_000..200_000], "{way:?}: the range byte-exact ({} bytes came)", g.body.len());
        // The last bytes, by a suffix range.
        let g = h.curl(way, "/big.bin", &["-r", "-10"]);
        assert_h2(&g, 206, &format!("{way:?} suffix range"));
        assert_eq!(g.body, &want[want.len() - 10..]);

        let first = h.curl(way, "/index.html", &[]);
        assert_h2(&first, 200, &format!("{way:?} first"));
        let etag = first.field("etag").unwrap_or_else(|| panic!("{way:?}: no etag in {:?}", first.headers)).to_string();
        let g = h.curl(way, "/index.html", &["-H", &format!("If-None-Match: {etag}")]);
        assert_h2(&g, 304, &format!("{way:?} If-None-Match"));
        assert!(g.body.is_empty(), "{way:?}: a 304 has no body");
        assert_eq!(g.field("etag"), Some(etag.as_str()));
        // Another tag: the page itself.
        let g = h.curl(way, "/index.html", &["-H", "If-None-Match: \"other\""]);
        assert_h2(&g, 200, &format!("{way:?} other tag"));
        assert_eq!(g.body, b"<html>hello</html>\n");
        let modified = first.field("last-modified").expect("last-modified").to_string();
        let g = h.curl(way, "/index.html", &["-H", &format!("If-Modified-Since: {modified}")]);
        assert_h2(&g, 304, &format!("{way:?} If-Modified-Since"));
    }
}

fn error_pages_and_redirects(mpm: &str) {
    let files = [("htdocs/errors/404.html", b"<h1>not here</h1>\n".to_vec())];
    let conf = "ErrorDocument 404 /errors/404.html\nRewriteEngine On\nRewriteOptions InheritDown\nRewriteRule ^/old$ /a.txt [L]\nRewriteRule ^/away$ https://example.com/x [R=302,L]\n\
                <Location \"/server-status\">\n    SetHandler server-status\n</Location>\n";
    let h = H2Server::start(mpm, "errors", &files, conf);
    for way in WAYS {
        // mod_rewrite: an internal rewrite and an external redirect.
        let g = h.curl(way, "/old", &[]);
        assert_h2(&g, 200, &format!("{way:?} rewritten"));
        assert_eq!(g.body, b"0123456789abcdefghij", "{way:?}");
        let g = h.curl(way, "/away", &[]);
        assert_h2(&g, 302, &format!("{way:?} R=302"));
        assert_eq!(g.field("location"), Some("https://example.com/x"), "{way:?}");
        // server-status, itself asked over HTTP/2.
        let g = h.curl(way, "/server-status?auto", &[]);
        assert_h2(&g, 200, &format!("{way:?} server-status"));
        assert!(String::from_utf8_lossy(&g.body).contains("Total Accesses:"), "{way:?}: {}", String::from_utf8_lossy(&g.body));

        let g = h.curl(way, "/no/such/page.html", &[]);
        assert_h2(&g, 404, &format!("{way:?} 404"));
        assert_eq!(g.body, b"<h1>not here</h1>\n", "{way:?}: the ErrorDocument");
        // The built-in page of an error without an ErrorDocument: a
        // directory without an index nor Options Indexes.
        let g = h.curl(way, "/noindex/", &[]);
        assert_h2(&g, 403, &format!("{way:?} 403"));
        assert!(String::from_utf8_lossy(&g.body).contains("Forbidden"), "{way:?}: {}", String::from_utf8_lossy(&g.body));
        assert_eq!(g.field("content-length").map(|n| n.parse::<usize>().unwrap()), Some(g.body.len()));

        // DirectorySlash: the Location names the scheme and the
        // :authority the client used.
        let scheme = if way == Way::Tls { "https" } else { "http" };
        let g = h.curl(way, "/sub?x=1", &[]);
        assert_h2(&g, 301, &format!("{way:?} /sub"));
        assert_eq!(g.field("location"), Some(format!("{scheme}://localhost:{}/sub/?x=1", h.port(way)).as_str()), "{way:?}: {:?}", g.headers);
    }
}

/// PHP through Debian's php-fpm, as fastcgi.rs runs it.
fn php_query_and_request_bodies(mpm: &str) {
    let dir = TempDir::new(&format!("h2-php-{mpm}"));
    standard_site(&dir);
    dir.write(
        "htdocs/vars.php",
        r#"<?php
foreach (['SERVER_PROTOCOL','REQUEST_METHOD','QUERY_STRING','HTTPS','CONTENT_LENGTH','CONTENT_TYPE','HTTP_HOST','HTTP_X_SENT','HTTP_COOKIE'] as $k) {
    echo $k, '=', $_SERVER[$k] ?? '(unset)', "\n";
}
$in = file_get_contents('php://input');
echo 'get=', json_encode($_GET), "\n";
echo 'post=', json_encode($_POST), "\n";
echo 'cookie=', json_encode($_COOKIE), "\n";
echo 'input_len=', strlen($in), "\n";
echo 'input_md5=', md5($in), "\n";
"#,
    );
    dir.write("htdocs/big.php", "<?php for ($i = 0; $i < 160; $i++) { echo str_repeat(chr(65 + $i % 26), 65536); flush(); }");
    let fpm = Fpm::start(&dir, "");
    let handler = fpm.php_files();
    let h = H2Server::start_in(dir, mpm, &handler);
    let body = pattern(200 * 1024, 7);
    let body_md5 = md5_of(&body);
    std::fs::write(h.path("post.bin"), &body).unwrap();
    let post_arg = format!("@{}", h.path("post.bin").display());
    for way in WAYS {
        let g = h.curl(way, "/vars.php?x=1&y=two%20words", &["-H", "X-Sent: yes"]);
        assert_h2(&g, 200, &format!("{way:?} GET vars.php"));
        let v = key_values(&String::from_utf8_lossy(&g.body));
        assert_eq!(v["SERVER_PROTOCOL"], "HTTP/2.0", "{way:?}: {v:?}");
        assert_eq!(v["REQUEST_METHOD"], "GET");
        assert_eq!(v["QUERY_STRING"], "x=1&y=two%20words");
        assert_eq!(v["get"], r#"{"x":"1","y":"two words"}"#);
        assert_eq!(v["HTTP_HOST"], format!("localhost:{}", h.port(way)), ":authority is the host");
        assert_eq!(v["HTTP_X_SENT"], "yes");
        assert_eq!(v["HTTPS"], if way == Way::Tls { "on" } else { "(unset)" }, "{way:?}");

        // 200 KB, three times the stream's initial window: the server
        // must return credit as it takes the DATA frames in.
        let g = h.curl(way, "/vars.php", &["--data-binary", &post_arg, "-H", "Content-Type: application/octet-stream"]);
        assert_h2(&g, 200, &format!("{way:?} POST 200 KB"));
        let v = key_values(&String::from_utf8_lossy(&g.body));
        assert_eq!((v["REQUEST_METHOD"].as_str(), v["CONTENT_LENGTH"].as_str()), ("POST", "204800"), "{way:?}: {v:?}");
        assert_eq!((v["input_len"].as_str(), v["input_md5"].as_str()), ("204800", body_md5.as_str()), "{way:?}: the body whole");

        // The same body without a content-length (curl -T - sends none):
        // its end is END_STREAM; php-fpm still gets CONTENT_LENGTH.
        let g = h.curl_with(way, "/vars.php", &["-X", "POST", "-T", "-", "-H", "Content-Type: application/octet-stream"], Some(&body));
        assert_h2(&g, 200, &format!("{way:?} POST without a length"));
        assert!(!g.verbose.to_ascii_lowercase().contains("> content-length"), "{way:?}: curl sent a length after all:\n{}", g.verbose);
        let v = key_values(&String::from_utf8_lossy(&g.body));
        assert_eq!((v["input_len"].as_str(), v["input_md5"].as_str()), ("204800", body_md5.as_str()), "{way:?}: {v:?}");
        assert_eq!(v["CONTENT_LENGTH"], "204800", "{way:?}");

        // A 10 MB answer PHP writes as it goes (flushed in 64 KB pieces):
        // under the event MPM the loop feeds it to the stream as it reads it.
        let g = h.curl(way, "/big.php", &[]);
        assert_h2(&g, 200, &format!("{way:?} big.php"));
        assert_eq!(g.body.len(), 160 * 65536, "{way:?}");
        assert!(g.body.chunks(65536).enumerate().all(|(i, c)| c.iter().all(|&b| b == b'A' + (i % 26) as u8)), "{way:?}: the pieces in order");
        // The same read at 4 MB/s, slower than PHP writes it: the server
        // reads no further ahead than the client takes (under the event MPM
        // the loop stops reading the application), and nothing is lost.
        let g = h.curl(way, "/big.php", &["--limit-rate", "4M"]);
        assert_h2(&g, 200, &format!("{way:?} big.php read slowly"));
        assert_eq!(g.body.len(), 160 * 65536, "{way:?}");
        assert!(g.body.chunks(65536).enumerate().all(|(i, c)| c.iter().all(|&b| b == b'A' + (i % 26) as u8)), "{way:?}: the pieces in order");

        // Several PHP requests at once on one connection (prefork and
        // worker answer them in turn on the connection's thread).
        let base = if way == Way::Tls { format!("https://127.0.0.1:{}", h.tls_port) } else { format!("http://127.0.0.1:{}", h.s.port) };
        let urls: Vec<String> = (0..8).map(|i| format!("{base}/vars.php?n={i}")).collect();
        let mut args = vec!["-n", "-s"];
        args.extend(urls.iter().map(String::as_str));
        let (ok, out, err) = h.nghttp(&args);
        let rows = nghttp_stats(&String::from_utf8_lossy(&out));
        assert!(ok && rows.len() == 8 && rows.iter().all(|(code, _)| *code == 200), "{way:?}: {rows:?} {err}");

        // Cookies in separate fields, as HTTP/2 clients may send them
        // (RFC 9113 §8.2.3): PHP gets them joined with "; ".
        let (ok, out, err) = h.nghttp(&["-H", "cookie: a=1", "-H", "cookie: b=two", &format!("{base}/vars.php")]);
        let v = key_values(&String::from_utf8_lossy(&out));
        assert!(ok, "{way:?}: {err}");
        assert_eq!((v["HTTP_COOKIE"].as_str(), v["cookie"].as_str()), ("a=1; b=two", r#"{"a":"1","b":"two"}"#), "{way:?}: {v:?}");

        // A form.
        let g = h.curl(way, "/vars.php?q=1", &["-d", "a=1&b=two"]);
        assert_h2(&g, 200, &format!("{way:?} form"));
        let v = key_values(&String::from_utf8_lossy(&g.body));
        assert_eq!((v["post"].as_str(), v["get"].as_str()), (r#"{"a":"1","b":"two"}"#, r#"{"q":"1"}"#), "{way:?}");
    }
    drop(fpm);
}

/// The ways a FastCGI exchange ends other than with a whole answer, over
/// both ways in: a local `Location:` (served again for it), a pool's child
/// killed while it runs a GET (sent once more, to its replacement),
/// ProxyTimeout (504), the application gone (503).
fn php_redirects_lost_children_and_failures(mpm: &str) {
    let dir = TempDir::new(&format!("h2-php-ends-{mpm}"));
    standard_site(&dir);
    // Where php-cgi, running as nobody, may write.
    let marker = std::env::temp_dir().join(format!("warren-h2-lost-{}-{mpm}", std::process::id()));
    dir.write("htdocs/local.php", "<?php header('Location: /a.txt', true, 200);");
    dir.write("htdocs/mark.php", format!("<?php if (!file_exists('{0}')) {{ touch('{0}'); sleep(30); }} echo 'second try';", marker.display()));
    dir.write("htdocs/fpm/slow.php", "<?php sleep(5); echo 'late';");
    dir.write("htdocs/fpm/hello.php", "<?php echo 'fpm';");
    let fpm = Fpm::start(&dir, "");
    let conf = format!(
        "ProxyTimeout 2\n<Pool www>\n    Command /usr/bin/php-cgi\n    User nobody\n    Group nogroup\n    pm static\n    pm.max_children 1\n</Pool>\n\
         <FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n\
         <Directory \"{}/htdocs/fpm\">\n    <FilesMatch \"\\.php$\">\n        SetHandler \"proxy:unix:{}|fcgi://localhost\"\n    </FilesMatch>\n</Directory>\n",
        dir.0.display(),
        fpm.socket.display()
    );
    let h = H2Server::start_in(dir, mpm, &conf);
    for way in WAYS {
        let g = h.curl(way, "/local.php", &[]);
        assert_h2(&g, 200, &format!("{way:?} local Location"));
        assert_eq!(g.body, b"0123456789abcdefghij", "{way:?}");
        let g = h.curl(way, "/fpm/hello.php", &[]);
        assert_h2(&g, 200, &format!("{way:?} php-fpm"));
        assert_eq!(g.body, b"fpm");

        let _ = std::fs::remove_file(&marker);
        h.s.wait_php_children(1);
        let g = std::thread::scope(|scope| {
            let client = scope.spawn(|| h.curl(way, "/mark.php", &[]));
            let deadline = Instant::now() + Duration::from_secs(20);
            while !marker.exists() {
                assert!(Instant::now() < deadline, "{way:?}: mark.php never started");
                std::thread::sleep(Duration::from_millis(20));
            }
            for pid in h.s.php_cgi_children() {
                unsafe_kill(pid, 9);
            }
            client.join().unwrap()
        });
        assert_h2(&g, 200, &format!("{way:?} GET whose child was killed"));
        assert_eq!(g.body, b"second try", "{way:?}");

        let g = h.curl(way, "/fpm/slow.php", &[]);
        assert_h2(&g, 504, &format!("{way:?} past ProxyTimeout"));
    }
    assert!(h.s.wait_log("error.log", "sending the request to another child").contains("sending the request to another child"));
    drop(fpm);
    for way in WAYS {
        let g = h.curl(way, "/fpm/hello.php", &[]);
        assert_h2(&g, 503, &format!("{way:?} php-fpm gone"));
    }
    let _ = std::fs::remove_file(&marker);
}

fn md5_of(data: &[u8]) -> String {
    let mut child = std::process::Command::new("md5sum").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().expect("md5sum");
    use std::io::Write;
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap().to_string()
}

fn css() -> Vec<u8> {
    (0..400).map(|i| format!(".rule-{i} {{ color: #{:06x}; margin: {}px }}\n", i * 7919 % 0xffffff, i % 17)).collect::<String>().into_bytes()
}

fn header_fields_and_gzip(mpm: &str) {
    let conf = "Header set X-Test \"Mixed Case Value\"\nHeader always set X-Always-There yes\nAddOutputFilterByType DEFLATE text/css\n";
    let h = H2Server::start(mpm, "headers", &[("htdocs/style.css", css())], conf);
    for way in WAYS {
        let g = h.curl(way, "/a.txt", &[]);
        assert_h2(&g, 200, &format!("{way:?} /a.txt"));
        // The configured name arrives lower-cased; its value as written.
        assert_eq!(g.field("x-test"), Some("Mixed Case Value"), "{way:?}: {:?}", g.headers);
        assert_eq!(g.field("x-always-there"), Some("yes"));
        let upper: Vec<_> = g.headers.iter().filter(|(n, _)| n.bytes().any(|b| b.is_ascii_uppercase())).collect();
        assert!(upper.is_empty(), "{way:?}: upper-case names on the wire: {upper:?}");
        // No HTTP/1.1 connection fields in HTTP/2 (RFC 9113 §8.2.2).
        for name in ["connection", "keep-alive", "transfer-encoding", "upgrade"] {
            assert_eq!(g.field(name), None, "{way:?}: {name} sent: {:?}", g.headers);
        }
        // Header always: on an error too.
        let g = h.curl(way, "/missing", &[]);
        assert_h2(&g, 404, &format!("{way:?} /missing"));
        assert_eq!(g.field("x-always-there"), Some("yes"), "{way:?}: {:?}", g.headers);

        let g = h.curl(way, "/style.css", &["--compressed"]);
        assert_h2(&g, 200, &format!("{way:?} gzip"));
        assert_eq!(g.field("content-encoding"), Some("gzip"), "{way:?}: {:?}", g.headers);
        assert!(g.field("vary").is_some_and(|v| v.to_ascii_lowercase().contains("accept-encoding")), "{way:?}: {:?}", g.headers);
        assert!(g.body == css(), "{way:?}: decoded, the file ({} bytes)", g.body.len());
        let sent: usize = g.field("content-length").map_or(0, |n| n.parse().unwrap());
        assert!(sent > 0 && sent < css().len() / 3, "{way:?}: {sent} bytes sent for {}", css().len());
        let g = h.curl(way, "/style.css", &[]);
        assert_h2(&g, 200, &format!("{way:?} identity"));
        assert_eq!(g.field("content-encoding"), None);
        assert!(g.body == css());
    }
}

fn upgrade_from_http11(mpm: &str) {
    let h = H2Server::start(mpm, "upgrade", &[("htdocs/big.bin", big())], "");
    let g = h.curl(Way::Upgrade, "/index.html", &[]);
    // curl -v shows the 101 and then the HTTP/2 answer.
    let switched = g.verbose.find("< HTTP/1.1 101");
    let answered = g.verbose.find("< HTTP/2 200");
    assert!(switched.is_some() && answered.is_some() && switched < answered, "101 then HTTP/2 200 expected; curl -v said:\n{}", g.verbose);
    assert_h2(&g, 200, "Upgrade /index.html");
    assert_eq!(g.body, b"<html>hello</html>\n");
    // The upgraded request's stream (1) has its own flow control too.
    let g = h.curl(Way::Upgrade, "/big.bin", &[]);
    assert_h2(&g, 200, "Upgrade /big.bin");
    assert!(g.verbose.contains("< HTTP/1.1 101"), "{}", g.verbose);
    assert!(g.body == big(), "1 MB after the upgrade, byte-exact ({} bytes came)", g.body.len());
    // A second request on the upgraded connection is a stream of its
    // own there (curl upgrades once, then reuses the connection).
    let resolve = format!("localhost:{}:127.0.0.1", h.s.port);
    let out = std::process::Command::new("curl")
        .args(["-sS", "-v", "--max-time", "60", "--http2", "--resolve", &resolve, "-o", "/dev/null", &h.url(Way::Upgrade, "/index.html")])
        .args(["--next", "--http2", "--resolve", &resolve, "-o", "/dev/null", &h.url(Way::Upgrade, "/a.txt")])
        .output()
        .unwrap();
    let verbose = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{verbose}");
    assert_eq!((verbose.matches("< HTTP/1.1 101").count(), verbose.matches("< HTTP/2 200").count()), (1, 2), "{verbose}");
    assert!(verbose.contains("Re-using existing connection") || verbose.contains("Reusing existing connection"), "{verbose}");

    // A request with a body is answered in HTTP/1.1, without switching
    // (as mod_http2 does: the body would have to be carried over).
    let g = h.curl(Way::Upgrade, "/index.html", &["-d", "a=1"]);
    assert!(!g.verbose.contains("101 Switching"), "{}", g.verbose);
    assert_eq!((g.code, g.version.as_str()), (0, "1.1"), "{}", g.verbose);
    // POST to a static file is answered with the file, as Apache's default handler does.
    assert_eq!(g.status, 200, "POST to a static file; curl -v said:\n{}", g.verbose);
    // Over TLS, Upgrade: h2c is never taken up (RFC 9113 §3.2): ALPN is
    // the only way there. curl would use ALPN itself, so a raw request.
    let out = tls::s_client(h.tls_port, &["-servername", "localhost", "-alpn", "http/1.1", "-quiet"], "GET /a.txt HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n");
    assert!(out.contains("HTTP/1.1 200") && !out.contains("101"), "{out}");
}

/// `H2Direct Off` and `H2Upgrade Off`: each way to h2c in cleartext is
/// turned off alone; TLS keeps h2.
fn direct_and_upgrade_turned_off(mpm: &str) {
    let h = H2Server::start(mpm, "nodirect", &[], "H2Direct Off");
    let g = h.curl(Way::PriorKnowledge, "/a.txt", &[]);
    assert!(g.code != 0 || g.version != "2", "H2Direct Off, yet prior knowledge was answered in HTTP/2:\n{}", g.verbose);
    let g = h.curl(Way::Upgrade, "/a.txt", &[]);
    assert_h2(&g, 200, "H2Direct Off: Upgrade still");
    assert_eq!(g.body, b"0123456789abcdefghij");
    assert_h2(&h.curl(Way::Tls, "/a.txt", &[]), 200, "H2Direct Off: TLS");

    let h = H2Server::start(mpm, "noupgrade", &[], "H2Upgrade Off");
    let g = h.curl(Way::Upgrade, "/a.txt", &[]);
    assert!(!g.verbose.contains("101 Switching"), "H2Upgrade Off, yet 101:\n{}", g.verbose);
    assert_eq!((g.code, g.version.as_str(), g.status), (0, "1.1", 200), "{}", g.verbose);
    assert_eq!(g.body, b"0123456789abcdefghij");
    assert_h2(&h.curl(Way::PriorKnowledge, "/a.txt", &[]), 200, "H2Upgrade Off: prior knowledge still");
}

/// Without `Protocols`, HTTP/2 is off, as in Apache: the preface is not
/// taken, Upgrade is ignored, ALPN agrees http/1.1.
fn off_without_protocols(mpm: &str) {
    let h = H2Server::start_without_protocols(mpm, "off");
    let g = h.curl(Way::PriorKnowledge, "/a.txt", &[]);
    assert!(g.code != 0 || g.version != "2", "no Protocols, yet prior knowledge was answered in HTTP/2:\n{}", g.verbose);
    let g = h.curl(Way::Upgrade, "/a.txt", &[]);
    assert!(!g.verbose.contains("101 Switching"), "no Protocols, yet 101:\n{}", g.verbose);
    assert_eq!((g.code, g.version.as_str(), g.status, g.body.as_slice()), (0, "1.1", 200, &b"0123456789abcdefghij"[..]), "{}", g.verbose);
    let g = h.curl(Way::Tls, "/a.txt", &[]);
    assert_eq!((g.code, g.version.as_str(), g.status, g.body.as_slice()), (0, "1.1", 200, &b"0123456789abcdefghij"[..]), "{}", g.verbose);
    // The server is still there for HTTP/1.1 after the preface it refused.
    assert_eq!(h.s.get("/a.txt").text(), "0123456789abcdefghij");
}

fn access_log_says_http2(mpm: &str) {
    let conf = "LogFormat \"%H|%>s|%b|%r\" protocols\nCustomLog h2.log protocols\n";
    let h = H2Server::start(mpm, "log", &[], conf);
    assert_h2(&h.curl(Way::PriorKnowledge, "/a.txt?via=pk", &[]), 200, "prior knowledge");
    assert_h2(&h.curl(Way::Tls, "/a.txt?via=tls", &[]), 200, "TLS");
    assert_h2(&h.curl(Way::PriorKnowledge, "/a.txt?via=head", &["-I"]), 200, "HEAD");
    assert_h2(&h.curl(Way::Upgrade, "/a.txt?via=upgrade", &[]), 200, "Upgrade");
    let (code, _) = curl(&["--http1.1", "-o", "/dev/null", &h.s.url("/a.txt?via=h1")]);
    assert_eq!(code, 0);
    // Each request's line is written by the thread or child that served
    // it, when its buffer is flushed: each is waited for.
    for want in ["HTTP/2.0|200|20|GET /a.txt?via=pk HTTP/2.0", "HTTP/2.0|200|20|GET /a.txt?via=tls HTTP/2.0", "HTTP/2.0|200|-|HEAD /a.txt?via=head HTTP/2.0", "HTTP/1.1|200|20|GET /a.txt?via=h1 HTTP/1.1"] {
        let log = h.s.wait_log("h2.log", want);
        assert!(log.lines().any(|l| l == want), "{want:?} not in the log:\n{log}");
    }
    let log = h.s.wait_log("h2.log", "via=upgrade");
    let lines: Vec<&str> = log.lines().collect();
    // The upgraded request was an HTTP/1.1 request answered in HTTP/2:
    // logged once, answered whole; its version is not asserted here.
    let upgraded: Vec<_> = lines.iter().filter(|l| l.contains("via=upgrade")).collect();
    assert!(upgraded.len() == 1 && upgraded[0].contains("|200|20|GET /a.txt?via=upgrade HTTP/"), "{log}");
}

/// The error code of the last GOAWAY among the HTTP/2 frames in `got`.
fn goaway_code(got: &[u8]) -> Option<u32> {
    let mut frames = got;
    let mut goaway = None;
    while frames.len() >= 9 {
        let len = (frames[0] as usize) << 16 | (frames[1] as usize) << 8 | frames[2] as usize;
        let Some(payload) = frames.get(9..9 + len) else { break };
        if frames[3] == GOAWAY && payload.len() >= 8 {
            goaway = Some(u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]));
        }
        frames = &frames[9 + len..];
    }
    goaway
}

/// `Protocols h2c` alone: the cleartext listener speaks only HTTP/2, so an
/// HTTP/1.1 request is a wrong connection preface, refused with GOAWAY
/// PROTOCOL_ERROR as nginx's h2c port does (h2spec http2/3.5/2), not
/// answered 400; prior knowledge is served.
fn h2c_alone_speaks_only_http2(mpm: &str) {
    let s = Server::start(mpm, "Protocols h2c\n");
    for attempt in [&b"GET /a.txt HTTP/1.1\r\nHost: localhost\r\n\r\n"[..], b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n", b"\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n"] {
        let got = s.raw(attempt);
        assert!(!got.starts_with(b"HTTP/"), "{:?} was answered in HTTP/1.x: {:?}", String::from_utf8_lossy(attempt), String::from_utf8_lossy(&got));
        assert_eq!(goaway_code(&got), Some(0x1), "{:?}: no GOAWAY PROTOCOL_ERROR in {got:?}", String::from_utf8_lossy(attempt));
    }
    // A wrong start shorter than the preface, the client still there: the
    // first bytes that differ settle it, without waiting for 24 or a close.
    let mut c = s.connect();
    std::io::Write::write_all(&mut c, b"GET / HTTP/1.1\r\n").unwrap();
    let (got, how) = read_to_end_of(&mut c);
    assert_eq!(goaway_code(&got), Some(0x1), "a short wrong preface: no GOAWAY PROTOCOL_ERROR in {got:?}, {how}");
    assert!(how.starts_with("closed by the server"), "{how}");
    let (code, body) = curl(&["-s", "--http2-prior-knowledge", &s.url("/a.txt")]);
    assert_eq!((code, body.as_slice()), (0, &b"0123456789abcdefghij"[..]));
}
