//! The FastCGI proxy against Debian's php-fpm (unix socket and TCP), under
//! each MPM: CGI variables, bodies both ways, headers, redirects, streaming,
//! and the failures (backend down, too slow, dying mid-response).

mod common;

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

/// The scripts the tests run.
fn php_site(dir: &TempDir) {
    dir.write("htdocs/hello.php", "<?php echo 'Hello World';");
    dir.write(
        "htdocs/vars.php",
        r#"<?php
foreach (['SCRIPT_FILENAME','SCRIPT_NAME','PATH_INFO','PATH_TRANSLATED','QUERY_STRING','REQUEST_METHOD',
    'CONTENT_TYPE','CONTENT_LENGTH','REQUEST_URI','DOCUMENT_ROOT','SERVER_NAME','SERVER_ADDR','SERVER_PORT',
    'SERVER_PROTOCOL','SERVER_SOFTWARE','REMOTE_ADDR','REMOTE_PORT','GATEWAY_INTERFACE','REQUEST_SCHEME',
    'HTTPS','REDIRECT_STATUS','HTTP_HOST','HTTP_X_CUSTOM','HTTP_PROXY','HTTP_X_DOUBLE','PHP_SELF'] as $k) {
    echo $k, '=', $_SERVER[$k] ?? '(unset)', "\n";
}
echo 'get=', json_encode($_GET), "\n";
echo 'post=', json_encode($_POST), "\n";
echo 'cookie=', json_encode($_COOKIE), "\n";
echo 'input_md5=', md5(file_get_contents('php://input')), "\n";
"#,
    );
    dir.write(
        "htdocs/upload.php",
        "<?php $f = $_FILES['f'] ?? null; echo $f ? md5_file($f['tmp_name']) . ' ' . $f['size'] . ' ' . $f['error'] : 'no file';",
    );
    dir.write(
        "htdocs/headers.php",
        "<?php header('X-One: 1'); setcookie('a', 'x'); setcookie('b', 'y'); http_response_code(201); echo 'created';",
    );
    dir.write("htdocs/missing.php", "<?php http_response_code(404); echo 'nothing here';");
    dir.write("htdocs/away.php", "<?php header('Location: http://example.org/elsewhere'); echo 'moved';");
    dir.write("htdocs/inside.php", "<?php header('Location: /a.txt', true, 200);");
    dir.write("htdocs/found.php", "<?php header('Location: /a.txt');");
    dir.write("htdocs/big.php", "<?php for ($i = 0; $i < 160; $i++) echo str_repeat(chr(65 + $i % 26), 65536);");
    // Ends once the test creates htdocs/go (or after 20 s).
    dir.write("htdocs/flush.php", "<?php echo str_repeat('first ', 10); flush(); for ($i = 0; $i < 400 && !file_exists(__DIR__ . '/go'); $i++) { usleep(50000); clearstatcache(); } echo 'second';");
    dir.write("htdocs/fatal.php", "<?php undefined_function_here();");
    dir.write("htdocs/slow.php", "<?php sleep(15); echo 'late';");
    dir.write("htdocs/dies.php", "<?php echo str_repeat('x', 100000); flush(); posix_kill(getmypid(), 9); sleep(5); echo 'never';");
    dir.write("htdocs/app/index.php", "<?php echo 'app index ', $_SERVER['REQUEST_METHOD'];");
}

const HANDLER: &str = r#"DirectoryIndex index.php index.html
<FilesMatch "\.php$">
    SetHandler "proxy:unix:SOCKET|fcgi://localhost"
</FilesMatch>
"#;

/// php-fpm, and warren handing `*.php` to its unix socket, plus `extra`.
fn start(mpm: &str, extra: &str) -> (Fpm, Server) {
    let dir = TempDir::new(&format!("fcgi-{mpm}"));
    standard_site(&dir);
    php_site(&dir);
    let fpm = Fpm::start(&dir, "");
    let conf = format!("{}{extra}", HANDLER.replace("SOCKET", &fpm.socket.display().to_string()));
    let server = Server::start_in(dir, mpm, &conf);
    (fpm, server)
}

fn cgi_variables(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let req = "GET /vars.php/some/path?x=1&y=two HTTP/1.1\r\nHost: localhost\r\nX-Custom: yes\r\nProxy: http://evil.example/\r\nX-Double: a\r\nX-Double: b\r\nX_Custom: spoofed\r\nConnection: close\r\n\r\n";
    let r = parse_response(&s.raw(req.as_bytes())).0;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = key_values(&r.text());
    let root = s.dir.0.join("htdocs").canonicalize().unwrap().display().to_string();
    let root_as_configured = s.dir.0.join("htdocs").display().to_string();
    let expect = [
        ("SCRIPT_NAME", "/vars.php".to_string()),
        ("PATH_INFO", "/some/path".to_string()),
        ("QUERY_STRING", "x=1&y=two".to_string()),
        ("REQUEST_METHOD", "GET".to_string()),
        ("REQUEST_URI", "/vars.php/some/path?x=1&y=two".to_string()),
        ("SERVER_NAME", "localhost".to_string()),
        ("SERVER_ADDR", "127.0.0.1".to_string()),
        ("SERVER_PORT", s.port.to_string()),
        ("SERVER_PROTOCOL", "HTTP/1.1".to_string()),
        ("REMOTE_ADDR", "127.0.0.1".to_string()),
        ("GATEWAY_INTERFACE", "CGI/1.1".to_string()),
        ("REQUEST_SCHEME", "http".to_string()),
        ("HTTPS", "(unset)".to_string()),
        // As from mod_proxy_fcgi: only after an internal redirect.
        ("REDIRECT_STATUS", "(unset)".to_string()),
        ("HTTP_HOST", "localhost".to_string()),
        ("HTTP_X_CUSTOM", "yes".to_string()),
        // httpoxy: a Proxy request header never becomes HTTP_PROXY.
        ("HTTP_PROXY", "(unset)".to_string()),
        ("HTTP_X_DOUBLE", "a, b".to_string()),
        ("CONTENT_LENGTH", "(unset)".to_string()),
        ("CONTENT_TYPE", "(unset)".to_string()),
        ("PHP_SELF", "/vars.php/some/path".to_string()),
        ("get", r#"{"x":"1","y":"two"}"#.to_string()),
    ];
    for (k, want) in expect {
        assert_eq!(v.get(k), Some(&want), "{k} in\n{}", r.text());
    }
    for (k, suffix) in [("SCRIPT_FILENAME", "/vars.php"), ("DOCUMENT_ROOT", ""), ("PATH_TRANSLATED", "/some/path")] {
        let got = &v[k];
        assert!(*got == format!("{root}{suffix}") || *got == format!("{root_as_configured}{suffix}"), "{k}={got}");
    }
    assert!(v["SERVER_SOFTWARE"].starts_with("warren/"), "{}", v["SERVER_SOFTWARE"]);
    assert!(v["REMOTE_PORT"].parse::<u16>().is_ok());
}

fn post_form_and_cookies(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let body = "name=warren&n=42";
    let req = format!(
        "POST /vars.php HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nCookie: c1=one\r\nCookie: c2=two\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let r = parse_response(&s.raw(req.as_bytes())).0;
    let v = key_values(&r.text());
    assert_eq!(v["post"], r#"{"name":"warren","n":"42"}"#);
    assert_eq!(v["CONTENT_LENGTH"], body.len().to_string());
    assert_eq!(v["CONTENT_TYPE"], "application/x-www-form-urlencoded");
    assert_eq!(v["cookie"], r#"{"c1":"one","c2":"two"}"#);
    // Cookies out: two Set-Cookie fields stay two.
    let r = s.get("/headers.php");
    assert_eq!(r.status, 201);
    assert_eq!(r.header("x-one"), Some("1"));
    let cookies: Vec<_> = r.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie")).map(|(_, v)| v.clone()).collect();
    assert_eq!(cookies, vec!["a=x".to_string(), "b=y".to_string()]);
    assert_eq!(s.get("/missing.php").status, 404);
}

fn md5sum(path: &std::path::Path) -> String {
    let out = Command::new("md5sum").arg(path).output().expect("md5sum");
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap_or("").to_string()
}

fn uploads_arrive_whole(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    // 10 MB of varied bytes, by multipart form.
    let data: Vec<u8> = (0..10 * 1024 * 1024u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let file = s.dir.write("upload.bin", &data);
    let md5 = md5sum(&file);
    let (code, out) = curl(&["-F", &format!("f=@{}", file.display()), &s.url("/upload.php")]);
    assert_eq!(code, 0);
    assert_eq!(String::from_utf8_lossy(&out), format!("{md5} {} 0", data.len()));
    // The same bytes chunked: spooled, then given with CONTENT_LENGTH.
    let (code, out) = curl(&["-H", "Transfer-Encoding: chunked", "-H", "Content-Type: application/octet-stream", "--data-binary", &format!("@{}", file.display()), &s.url("/vars.php")]);
    assert_eq!(code, 0);
    let v = key_values(&String::from_utf8_lossy(&out));
    assert_eq!(v["input_md5"], md5);
    assert_eq!(v["CONTENT_LENGTH"], data.len().to_string());
    // With Expect: 100-continue (curl sends it for large bodies).
    let (code, out) = curl(&["-H", "Expect: 100-continue", "-H", "Content-Type: application/octet-stream", "--data-binary", &format!("@{}", file.display()), &s.url("/vars.php")]);
    assert_eq!(code, 0);
    assert_eq!(key_values(&String::from_utf8_lossy(&out))["input_md5"], md5);
}

fn keep_alive_after_bodies(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let mut c = s.connect();
    let mut seen = Vec::new();
    for i in 0..3 {
        let body = format!("i={i}");
        let req = format!("POST /vars.php HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}GET /hello.php HTTP/1.1\r\nHost: localhost\r\n\r\n", body.len());
        c.write_all(req.as_bytes()).unwrap();
        seen.push(read_responses(&mut c, 2));
    }
    for (i, rs) in seen.iter().enumerate() {
        assert_eq!(rs.len(), 2);
        assert!(rs[0].text().contains(&format!(r#"post={{"i":"{i}"}}"#)), "{}", rs[0].text());
        assert_eq!(rs[1].text(), "Hello World");
    }
    // HEAD: the head of the answer, no body, and the connection goes on.
    c.write_all(b"HEAD /big.php HTTP/1.1\r\nHost: localhost\r\n\r\nGET /hello.php HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let out = read_to_close(&mut c);
    let (head, rest) = parse_response_for(&out, true);
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(parse_response(rest).0.text(), "Hello World");
}

/// Reads `n` responses (with Content-Length or chunked bodies) from a kept connection.
fn read_responses(c: &mut std::net::TcpStream, n: usize) -> Vec<Resp> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 65536];
    let deadline = Instant::now() + Duration::from_secs(10);
    let complete = |buf: &[u8]| {
        let mut rest = buf;
        let mut count = 0;
        while count < n && response_complete(rest) {
            rest = parse_response(rest).1;
            count += 1;
        }
        count == n
    };
    while !complete(&buf) && Instant::now() < deadline {
        match read_some(c, &mut tmp) {
            Ok(0) | Err(_) => break,
            Ok(k) => buf.extend_from_slice(&tmp[..k]),
        }
    }
    parse_all(&buf)
}

fn redirects(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let r = s.get("/away.php");
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("http://example.org/elsewhere"));
    // PHP makes a Location a 302 of its own accord.
    let r = s.get("/found.php");
    assert_eq!((r.status, r.header("location")), (302, Some("/a.txt")));
    // A local Location with status 200 is served in place (CGI's internal redirect).
    let r = s.get("/inside.php");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "0123456789abcdefghij");
}

fn big_output_streamed(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let r = s.get("/big.php");
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), 160 * 65536);
    assert!(r.body[..65536].iter().all(|&b| b == b'A') && r.body[65536..131072].iter().all(|&b| b == b'B'));
    // HTTP/1.0 has no chunks: the end of the body is the close.
    let out = s.raw(b"GET /big.php HTTP/1.0\r\n\r\n");
    let (r, _) = parse_response(&out);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("transfer-encoding"), None);
    assert_eq!(r.body.len(), 160 * 65536);
}

/// What the script flushes reaches the client while the script is still
/// running: the script waits for the test, which lets it end only once the
/// flushed part has arrived (an output held back until the script ended
/// would never arrive, and the read below would time out after 10 s).
fn flush_reaches_the_client(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let mut c = s.connect();
    c.write_all(b"GET /flush.php HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let mut tmp = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("first first") {
        let n = read_some(&mut c, &mut tmp).unwrap_or_else(|e| panic!("the flushed output did not come while the script ran: {e}; got {:?}", String::from_utf8_lossy(&got)));
        assert!(n > 0, "closed before the flushed output");
        got.extend_from_slice(&tmp[..n]);
    }
    assert!(!String::from_utf8_lossy(&got).contains("second"), "the script cannot have ended yet");
    s.dir.write("htdocs/go", "");
    got.extend(read_to_close(&mut c));
    let r = parse_response(&got).0;
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert!(r.text().ends_with("second"));
}

fn php_errors(mpm: &str) {
    let (_fpm, s) = start(mpm, "");
    let r = s.get("/fatal.php");
    assert_eq!(r.status, 500);
    // PHP's message comes over FCGI_STDERR into the error log, with the script.
    let log = s.wait_log("error.log", "undefined_function_here");
    assert!(log.contains("fatal.php") && log.contains("undefined_function_here"), "{log}");
}

fn path_info_and_directory_index(mpm: &str) {
    let (_fpm, s) = start(mpm, "<Directory \"DOCROOT/app\">\n    AcceptPathInfo Off\n</Directory>\n".replace("DOCROOT", "htdocs").as_str());
    let r = s.get("/app/");
    assert_eq!(r.text(), "app index GET");
    let req = "POST /app/ HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc";
    assert_eq!(parse_response(&s.raw(req.as_bytes())).0.text(), "app index POST");
    assert_eq!(s.get("/vars.php/x/y").status, 200);
    // AcceptPathInfo Off refuses what follows the script.
    assert_eq!(s.get("/app/index.php/x").status, 404);
    assert_eq!(s.get("/nope.php").status, 404);
    // Static files next to scripts are still served, POST too (Apache's default handler).
    assert_eq!(s.get("/a.txt").text(), "0123456789abcdefghij");
    let req = "POST /a.txt HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx";
    assert_eq!(parse_response(&s.raw(req.as_bytes())).0.text(), "0123456789abcdefghij");
}

fn backend_failures(mpm: &str) {
    let extra = "ProxyTimeout 2\n<Files \"down.php\">\n    SetHandler \"proxy:unix:/nonexistent/php.sock|fcgi://localhost\"\n</Files>\n";
    let (_fpm, s) = start(mpm, extra);
    s.dir.write("htdocs/down.php", "<?php echo 1;");
    let r = s.get("/down.php");
    assert_eq!(r.status, 503);
    assert!(s.wait_log("error.log", "failed to make connection").contains("/nonexistent/php.sock"));
    // ProxyTimeout (2 s), not the script's 15 s, ends the wait.
    let t = Instant::now();
    let r = s.get("/slow.php");
    assert_eq!(r.status, 504);
    assert!(t.elapsed() < Duration::from_secs(10), "504 after {:?}", t.elapsed());
    assert!(s.wait_log("error.log", "ProxyTimeout").contains("timeout"));
    // A backend that dies mid-body: the connection closes without the last
    // chunk, so the client cannot take the body as complete.
    let out = s.raw(b"GET /dies.php HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    assert!(out.starts_with(b"HTTP/1.1 200"));
    assert!(!out.ends_with(b"0\r\n\r\n"), "a cut-short body was ended as complete");
    let (code, _) = curl(&[&s.url("/dies.php")]);
    assert_ne!(code, 0, "curl must see the body as incomplete");
    // And the server goes on.
    assert_eq!(s.get("/hello.php").text(), "Hello World");
}

fn tcp_backend_by_proxy_pass(mpm: &str) {
    let dir = TempDir::new(&format!("fcgi-tcp-{mpm}"));
    standard_site(&dir);
    php_site(&dir);
    let fpm = Fpm::start(&dir, "");
    let root = dir.0.join("htdocs").display().to_string();
    let extra = format!(
        "ProxyPassMatch \"^/(.*\\.php(/.*)?)$\" \"fcgi://127.0.0.1:{port}{root}/$1\"\nProxyPass \"/app/\" \"fcgi://127.0.0.1:{port}{root}/app/\" enablereuse=on\n",
        port = fpm.port
    );
    let s = Server::start_in(dir, mpm, &extra);
    let r = s.get("/vars.php/p/i?q=1");
    let v = key_values(&r.text());
    assert_eq!(v["SCRIPT_FILENAME"], format!("{root}/vars.php"));
    assert_eq!(v["SCRIPT_NAME"], "/vars.php");
    assert_eq!(v["PATH_INFO"], "/p/i");
    assert_eq!(v["QUERY_STRING"], "q=1");
    // Kept connections (enablereuse=on) serve request after request.
    for _ in 0..20 {
        assert_eq!(s.get("/app/index.php").text(), "app index GET");
    }
    assert_eq!(s.get("/a.txt").text(), "0123456789abcdefghij");
    drop(fpm);
}

fn limits_and_aborts(mpm: &str) {
    let (_fpm, s) = start(mpm, "LimitRequestBody 1000\n");
    let req = format!("POST /vars.php HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2000\r\nConnection: close\r\n\r\n{}", "x".repeat(2000));
    assert_eq!(status_of(&s.raw(req.as_bytes())), 413);
    let chunked = format!("POST /vars.php HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n7d0\r\n{}\r\n0\r\n\r\n", "x".repeat(2000));
    assert_eq!(status_of(&s.raw(chunked.as_bytes())), 413);
    // Clients that give up half-way through their body: nothing is left behind.
    // Counted in the children there are now: spare maintenance may start
    // another meanwhile, whose descriptors are not left-overs.
    let fds = |pid: u32| std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0);
    let children = s.children();
    // A child may still be starting (on a loaded machine, seconds after the
    // parent): once started and idle, the children hold the same descriptors.
    settle(|| children.iter().map(|&p| fds(p)).collect::<std::collections::BTreeSet<_>>().len() == 1);
    let before: usize = children.iter().map(|&p| fds(p)).sum();
    for _ in 0..20 {
        let mut c = s.connect();
        c.write_all(b"POST /vars.php HTTP/1.1\r\nHost: localhost\r\nContent-Length: 900\r\n\r\nhalf").unwrap();
        drop(c);
    }
    assert_eq!(s.get("/hello.php").text(), "Hello World");
    // The aborted requests are let go as the server notices each client gone,
    // which under load takes a while: what matters is that they all are.
    settle(|| children.iter().map(|&p| fds(p)).sum::<usize>() <= before + 2);
    let after: usize = children.iter().map(|&p| fds(p)).sum();
    assert!(after <= before + 2, "descriptors grew from {before} to {after}");
}

fn php_fpm_restart_under_load(mpm: &str) {
    let (mut fpm, s) = start(mpm, "");
    let port = s.port;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let answered = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let load: Vec<_> = (0..4)
        .map(|_| {
            let stop = stop.clone();
            let answered = answered.clone();
            std::thread::spawn(move || {
                let (mut ok, mut clean_errors, mut other) = (0, 0, Vec::new());
                let until = Instant::now() + Duration::from_secs(30);
                while !stop.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < until {
                    let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    c.write_all(b"GET /hello.php HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
                    let out = read_to_close(&mut c);
                    match status_of(&out) {
                        200 if out.ends_with(b"Hello World") => {
                            ok += 1;
                            answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                        502..=504 => clean_errors += 1,
                        _ => other.push(String::from_utf8_lossy(&out[..out.len().min(80)]).into_owned()),
                    }
                }
                (ok, clean_errors, other)
            })
        })
        .collect();
    // Load before the restart and after it (counted, not slept for: a
    // loaded machine answers fewer requests in a given time).
    let wait_answered = |n: u32| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while answered.load(std::sync::atomic::Ordering::SeqCst) < n {
            assert!(Instant::now() < deadline, "only {} requests answered", answered.load(std::sync::atomic::Ordering::SeqCst));
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_answered(20);
    fpm.restart();
    wait_answered(answered.load(std::sync::atomic::Ordering::SeqCst) + 30);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (mut ok, mut clean) = (0, 0);
    for h in load {
        let (o, c, other) = h.join().unwrap();
        ok += o;
        clean += c;
        assert!(other.is_empty(), "answers other than 200 or a clean 502-504: {other:?}");
    }
    assert!(ok > 50, "only {ok} requests succeeded ({clean} clean errors)");
    // Once php-fpm is back, every request succeeds.
    for _ in 0..20 {
        assert_eq!(s.get("/hello.php").text(), "Hello World");
    }
}

each_mpm!(
    cgi_variables,
    post_form_and_cookies,
    uploads_arrive_whole,
    keep_alive_after_bodies,
    redirects,
    big_output_streamed,
    flush_reaches_the_client,
    php_errors,
    path_info_and_directory_index,
    backend_failures,
    tcp_backend_by_proxy_pass,
    limits_and_aborts,
    php_fpm_restart_under_load,
    stalled_body_to_php_gets_408,
    an_application_gone_mid_answer_is_seen_at_once,
);

/// A FastCGI application in the test on a unix socket that answers each
/// request with its head and "hello" in two records, each its own write,
/// then closes: no end of stdout, no FCGI_END_REQUEST (a crashed child).
fn dying_app(path: std::path::PathBuf) {
    use warren_fcgi::record::{self, RecordType};
    unix_app(path, |rec, conn| {
        if rec.kind == RecordType::Stdin && rec.content.is_empty() {
            for piece in [&b"Content-Type: text/plain\r\n\r\nhel"[..], b"lo"] {
                let mut out = Vec::new();
                record::write_record(&mut out, RecordType::Stdout, rec.request_id, piece);
                let _ = conn.write_all(&out);
            }
            return Some(Vec::new());
        }
        None
    });
}

/// An application gone in the middle of its answer: the client's
/// connection is closed as soon as warren reads the end, without the last
/// chunk, not when ProxyTimeout (here 60 s, past the client's 10 s wait)
/// runs out. Under event the end came with the last bytes in one wake-up,
/// and a short read was taken for "drained": the loop waited for a wake-up
/// that never came.
fn an_application_gone_mid_answer_is_seen_at_once(mpm: &str) {
    let dir = TempDir::new(&format!("fcgi-dying-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/dying.fcgi", "");
    let socket = dir.0.join("dying.sock");
    dying_app(socket.clone());
    let s = Server::start_in(dir, mpm, &format!("ProxyTimeout 60\n<Files \"dying.fcgi\">\n    SetHandler \"proxy:unix:{}|fcgi://localhost\"\n</Files>\n", socket.display()));
    for _ in 0..3 {
        let mut c = s.connect();
        c.write_all(b"GET /dying.fcgi HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        let (out, how) = read_to_end_of(&mut c);
        let text = String::from_utf8_lossy(&out);
        assert!(how.starts_with("closed by the server"), "{how}; got {text:?}");
        assert!(text.starts_with("HTTP/1.1 200") && text.contains("Transfer-Encoding: chunked\r\n"), "{text:?}");
        assert!(!response_complete(&out), "a cut-short answer must not look whole: {text:?}");
        // "hello", in as many chunks as warren read it in.
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        let payload: String = body.split("\r\n").skip(1).step_by(2).collect();
        assert_eq!(payload, "hello", "{text:?}");
    }
    assert_eq!(s.get("/a.txt").text(), "0123456789abcdefghij", "and the server goes on");
}

/// A request body for a script that stops coming is cut by
/// RequestReadTimeout body= (Timeout, 60 s, would wait much longer).
fn stalled_body_to_php_gets_408(mpm: &str) {
    let (_fpm, s) = start(mpm, "RequestReadTimeout body=1,MinRate=500");
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    c.write_all(b"POST /vars.php HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\npartial").unwrap();
    let start = Instant::now();
    let out = read_to_close(&mut c);
    let took = start.elapsed();
    assert_eq!(status_of(&out), 408, "{:?}", String::from_utf8_lossy(&out));
    // Not before body=1; long before Timeout (60 s).
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(20), "cut after {took:?}");
    let why = "request body read timeout (RequestReadTimeout body=1,MinRate=500)";
    let log = s.wait_log("error.log", why);
    assert_eq!(log.lines().filter(|l| l.contains(why) && l.contains("[client 127.0.0.1:")).count(), 1, "{log}");
    // The application is still there for the next request.
    assert_eq!(s.get("/hello.php").text(), "Hello World");
}

/// A FastCGI application in the test on a unix socket: it answers
/// FCGI_GET_VALUES with `multiplexes` for FCGI_MPXS_CONNS, and each request
/// with whether warren had shut its side once the request was out.
fn shut_side_app(path: std::path::PathBuf, multiplexes: &'static [u8]) {
    use warren_fcgi::record::{self, RecordType};
    unix_app(path, move |rec, conn| {
        let mut out = Vec::new();
        match rec.kind {
            RecordType::GetValues => {
                let mut pairs = Vec::new();
                record::write_pair(&mut pairs, b"FCGI_MPXS_CONNS", multiplexes);
                record::write_record(&mut out, RecordType::GetValuesResult, 0, &pairs);
            }
            RecordType::Stdin if rec.content.is_empty() => {
                conn.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
                let shut = matches!(read_some(conn, &mut [0u8; 16]), Ok(0));
                let body = format!("Content-Type: text/plain\r\n\r\nshut={shut}");
                record::write_stream(&mut out, RecordType::Stdout, rec.request_id, body.as_bytes());
                record::write_record(&mut out, RecordType::Stdout, rec.request_id, &[]);
                record::end_request(&mut out, rec.request_id, 0, record::ProtocolStatus::RequestComplete);
            }
            _ => return None,
        }
        Some(out)
    });
}

/// A FastCGI application in the test listening on the unix socket `path`:
/// `answer` sees each record of a connection, and ends it by giving what
/// to write last (None: read on).
fn unix_app(path: std::path::PathBuf, answer: impl Fn(&warren_fcgi::record::Record, &mut std::os::unix::net::UnixStream) -> Option<Vec<u8>> + Send + 'static) {
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    // Open to warren's children, which run as nobody when the tests run as root.
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = warren_fcgi::record::RecordReader::default();
            while let Ok(Some(rec)) = reader.read_record(&mut conn) {
                if let Some(out) = answer(&rec, &mut conn) {
                    let _ = conn.write_all(&out);
                    break;
                }
            }
        }
    });
}

/// Under event, an application that takes one request per connection
/// (FCGI_MPXS_CONNS 0, as php-fpm) has warren's side shut once the request
/// is out, after warren has asked it; one that multiplexes never has.
#[test]
fn event_shuts_its_side_only_for_one_request_apps() {
    let dir = TempDir::new("fcgi-shut");
    standard_site(&dir);
    dir.write("htdocs/one.fcgi", "");
    dir.write("htdocs/many.fcgi", "");
    let (one, many) = (dir.0.join("one.sock"), dir.0.join("many.sock"));
    shut_side_app(one.clone(), b"0");
    shut_side_app(many.clone(), b"1");
    let extra = format!(
        "<Files \"one.fcgi\">\n    SetHandler \"proxy:unix:{}|fcgi://localhost\"\n</Files>\n<Files \"many.fcgi\">\n    SetHandler \"proxy:unix:{}|fcgi://localhost\"\n</Files>\n",
        one.display(),
        many.display()
    );
    let s = Server::start_in(dir, "event", &format!("StartServers 1\n{extra}"));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = s.get("/one.fcgi");
        assert_eq!(r.status, 200);
        if r.text() == "shut=true" {
            break;
        }
        assert_eq!(r.text(), "shut=false");
        assert!(Instant::now() < deadline, "warren never shut its side for a one-request application");
    }
    for _ in 0..4 {
        assert_eq!(s.get("/many.fcgi").text(), "shut=false");
    }
}
