//! HTTP/2 with other clients than curl, under each MPM, `Protocols h2 h2c
//! http/1.1` on a cleartext port and a TLS port: nghttp (the SETTINGS
//! exchange, a HEAD, many streams and several URIs on one connection, a
//! 1 MB file through small windows), the H2* directives as the client sees
//! them, h2load (hundreds of streams, 50 at a time, on one connection), a
//! graceful restart while downloads are under way, a stream cancelled
//! half-way and an idle connection's GOAWAY, and Chromium loading a page of
//! 30 assets over h2.

mod common;
use common::h2::*;
use common::*;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

each_mpm!(
    nghttp_settings_streams_and_windows,
    settings_follow_the_configuration,
    h2load_many_streams_on_one_connection,
    graceful_restart_during_downloads,
    resets_and_idle_connections,
    requests_reset_at_once_run_no_script,
    chromium_loads_a_page_of_30_assets,
);

/// The two ways nghttp and h2load reach the server: cleartext (prior
/// knowledge, which they use for http URLs) and TLS (ALPN h2).
fn bases(h: &H2Server) -> [String; 2] {
    [format!("http://127.0.0.1:{}", h.s.port), format!("https://127.0.0.1:{}", h.tls_port)]
}

fn big() -> Vec<u8> {
    pattern(1 << 20, 1)
}

fn nghttp_settings_streams_and_windows(mpm: &str) {
    let h = H2Server::start(mpm, "nghttp", &[("htdocs/big.bin", big())], "Header set X-Test \"Nghttp Check\"");
    for base in bases(&h) {
        // The SETTINGS exchange: the server's SETTINGS first (with its
        // default stream limit), and its ACK of nghttp's. (nghttp sends
        // its own ACK without printing it, so that is not looked for.)
        let (ok, out, err) = h.nghttp(&["-nv", &format!("{base}/index.html")]);
        let out = String::from_utf8_lossy(&out);
        assert!(ok, "{base}: nghttp failed: {err}\n{out}");
        assert!(out.contains("recv SETTINGS frame <length="), "{base}: no SETTINGS from the server:\n{out}");
        assert!(out.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):100]"), "{base}: H2MaxSessionStreams' default announced:\n{out}");
        assert!(out.contains("recv SETTINGS frame <length=0, flags=0x01, stream_id=0>"), "{base}: the server acknowledged our SETTINGS:\n{out}");
        // The server's preface, SETTINGS, is the first frame it sends.
        let first_recv = out.lines().find(|l| l.contains("] recv ") && l.contains(" frame <")).unwrap_or("");
        assert!(first_recv.contains("recv SETTINGS frame") && first_recv.contains("flags=0x00"), "{base}: the server began with {first_recv:?}:\n{out}");
        assert!(out.contains(") :status: 200"), "{base}:\n{out}");
        // mod_headers' field, lower case on the wire as nghttp decoded it.
        assert!(out.contains(") x-test: Nghttp Check"), "{base}:\n{out}");
        assert!(!out.contains("recv GOAWAY") && !out.contains("recv RST_STREAM"), "{base}:\n{out}");

        // HEAD: HEADERS ends the stream; no DATA at all.
        let (ok, out, err) = h.nghttp(&["-v", "-H", ":method: HEAD", &format!("{base}/index.html")]);
        let out = String::from_utf8_lossy(&out);
        assert!(ok, "{base}: HEAD: {err}\n{out}");
        assert!(out.contains(") content-length: 19"), "{base}: HEAD keeps the length:\n{out}");
        assert!(out.contains("; END_STREAM | END_HEADERS"), "{base}: HEADERS ended the stream:\n{out}");
        assert!(!out.contains("recv DATA frame"), "{base}: DATA for a HEAD:\n{out}");

        // 50 streams of one file on one connection: each body whole.
        let url = format!("{base}/a.txt");
        let (ok, out, err) = h.nghttp(&["-m", "50", &url]);
        assert!(ok, "{base}: {err}");
        assert!(out == b"0123456789abcdefghij".repeat(50), "{base}: 50 bodies of 20 bytes, {} bytes came", out.len());
        let (ok, out, err) = h.nghttp(&["-n", "-s", "-m", "50", &url]);
        let rows = nghttp_stats(&String::from_utf8_lossy(&out));
        assert!(ok && rows.len() == 50 && rows.iter().all(|(code, p)| *code == 200 && p == "/a.txt"), "{base}: {rows:?} {err}");

        // Several URIs at once.
        let urls: Vec<String> = ["/index.html", "/a.txt", "/sub/page.html", "/big.bin", "/space%20name.txt"].iter().map(|p| format!("{base}{p}")).collect();
        let mut args: Vec<&str> = vec!["-n", "-s"];
        args.extend(urls.iter().map(String::as_str));
        let (ok, out, err) = h.nghttp(&args);
        let rows = nghttp_stats(&String::from_utf8_lossy(&out));
        assert!(ok && rows.len() == 5 && rows.iter().all(|(code, _)| *code == 200), "{base}: {rows:?} {err}");
        let (ok, out, err) = h.nghttp(&urls.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(ok, "{base}: {err}");
        assert_eq!(out.len(), 19 + 20 + 8 + (1 << 20) + 6, "{base}: the five bodies' bytes");

        // Small windows: 65535 bytes for the stream and the connection
        // (nghttp's own default is 1 GB), then 1023 for the stream. The
        // file goes whole only as the server honours each WINDOW_UPDATE.
        for w in ["16", "10"] {
            let (ok, out, err) = h.nghttp(&["--no-dep", "-w", w, "-W", "16", &format!("{base}/big.bin")]);
            assert!(ok, "{base} -w {w}: {err}");
            assert!(out == big(), "{base} -w {w}: 1 MB byte-exact, {} bytes came", out.len());
        }
    }
}

/// H2MaxSessionStreams, H2WindowSize and H2MaxDataFrameLen reach the
/// client: in our SETTINGS, and in the DATA frames' sizes.
fn settings_follow_the_configuration(mpm: &str) {
    let files = [("htdocs/k100.bin", pattern(100 * 1024, 5))];
    let h = H2Server::start(mpm, "settings", &files, "H2MaxSessionStreams 32\nH2WindowSize 131072\nH2MaxDataFrameLen 4096");
    for base in bases(&h) {
        let (ok, out, err) = h.nghttp(&["-v", "-n", &format!("{base}/k100.bin")]);
        let out = String::from_utf8_lossy(&out);
        assert!(ok, "{base}: {err}\n{out}");
        assert!(out.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):32]"), "{base}: H2MaxSessionStreams 32:\n{}", settings_part(&out));
        assert!(out.contains("[SETTINGS_INITIAL_WINDOW_SIZE(0x04):131072]"), "{base}: H2WindowSize 131072:\n{}", settings_part(&out));
        let sizes: Vec<usize> = out.lines().filter_map(|l| l.split("recv DATA frame <length=").nth(1)?.split(',').next()?.parse().ok()).collect();
        assert_eq!(sizes.iter().sum::<usize>(), 100 * 1024, "{base}: {sizes:?}");
        assert!(sizes.iter().all(|&n| n <= 4096), "{base}: H2MaxDataFrameLen 4096, frames of {sizes:?}");
        // 32 at a time: all answered.
        let out = h.h2load(&["-n", "200", "-c", "1", "-m", "32", &format!("{base}/a.txt")]);
        assert_eq!(h2load_counts(&out), Some((200, 0, 0, 200)), "{base}:\n{out}");
        // 64 at a time: h2load's first flight goes before our SETTINGS
        // reach it, and the streams past 32 are refused (REFUSED_STREAM,
        // as nghttp2's servers, Apache's among them, do); the connection
        // goes on, and after that h2load keeps to 32.
        let out = h.h2load(&["-n", "200", "-c", "1", "-m", "64", &format!("{base}/a.txt")]);
        let (ok, failed, errored, two) = h2load_counts(&out).unwrap_or_else(|| panic!("{base}:\n{out}"));
        assert!(ok + failed == 200 && failed <= 32 && errored == failed && two == ok, "{base}: at most the 32 past the limit refused:\n{out}");
    }
}

fn settings_part(out: &str) -> String {
    out.lines().skip_while(|l| !l.contains("recv SETTINGS")).take(8).collect::<Vec<_>>().join("\n")
}

fn h2load_many_streams_on_one_connection(mpm: &str) {
    let files = [("htdocs/k100.bin", pattern(100 * 1024, 6))];
    let h = H2Server::start(mpm, "h2load", &files, "LogFormat \"%H %>s %U\" load\nCustomLog load.log load");
    for base in bases(&h) {
        // 200 requests, 50 streams at a time, one connection.
        let out = h.h2load(&["-n", "200", "-c", "1", "-m", "50", &format!("{base}/a.txt")]);
        assert_eq!(h2load_counts(&out), Some((200, 0, 0, 200)), "{base}: (succeeded, failed, errored, 2xx):\n{out}");
        // Larger bodies, each past its window, 20 at a time on each of
        // two connections: all data arrives.
        let out = h.h2load(&["-n", "100", "-c", "2", "-m", "20", &format!("{base}/k100.bin")]);
        assert_eq!(h2load_counts(&out), Some((100, 0, 0, 100)), "{base}:\n{out}");
        // "traffic: 9.78MB (10255386) total, ... 9.77MB (10240000) data"
        let data = out.lines().find(|l| l.starts_with("traffic:")).and_then(|l| l.split(", ").find(|p| p.ends_with(" data"))?.split(['(', ')']).nth(1)?.parse::<u64>().ok());
        assert_eq!(data, Some(100 * 100 * 1024), "{base}: body bytes:\n{out}");
    }
    // Each request logged once, as HTTP/2.
    let deadline = Instant::now() + Duration::from_secs(20);
    let count = |log: &str, line: &str| log.lines().filter(|l| *l == line).count();
    loop {
        let log = h.s.read_log("load.log");
        let (small, large) = (count(&log, "HTTP/2.0 200 /a.txt"), count(&log, "HTTP/2.0 200 /k100.bin"));
        if (small, large) == (400, 200) {
            assert_eq!(log.lines().count(), 600, "nothing else logged:\n{log}");
            break;
        }
        assert!(Instant::now() < deadline, "{small} of 400 and {large} of 200 requests logged as HTTP/2.0 200");
        std::thread::sleep(Duration::from_millis(100));
    }
}

const STATUS: &str = "<Location \"/server-status\">\nSetHandler server-status\n</Location>\n";

/// Waits until the parent is at configuration generation `n`.
fn wait_generation(s: &Server, n: u32) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while status_auto(s).get("ParentServerConfigGeneration").map(String::as_str) != Some(&n.to_string()) {
        assert!(Instant::now() < deadline, "no graceful restart to generation {n}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A graceful restart (`warren -k graceful`) while two downloads are under
/// way over h2c: one a raw client holds at its flow-control window, which
/// makes it certainly in flight when the restart comes, and one curl reads
/// slowly. Each stream completes whole; the held connection is told GOAWAY
/// (no new streams) while its stream still waits, and ends once the stream
/// has; new connections are served by the new generation.
fn graceful_restart_during_downloads(mpm: &str) {
    let two_mb = pattern(2 << 20, 3);
    let sixteen_mb = pattern(16 << 20, 4);
    let h = H2Server::start(mpm, "graceful", &[("htdocs/big.bin", two_mb.clone()), ("htdocs/huge.bin", sixteen_mb.clone())], STATUS);
    h.s.wait_children(2);
    let authority = format!("localhost:{}", h.s.port);

    let mut raw = RawH2::connect(h.s.port);
    raw.get(1, &authority, "/big.bin");
    // The default windows let exactly 65535 bytes come.
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < 65535 {
        let left = deadline.saturating_duration_since(Instant::now());
        let f = raw.next_frame(left).unwrap_or_else(|| panic!("{} bytes of the first window came before the server stopped sending", got.len()));
        match f.kind {
            DATA if f.stream == 1 => got.extend_from_slice(f.content()),
            GOAWAY | RST_STREAM => panic!("before the restart: {f:?}"),
            _ => {}
        }
    }
    assert_eq!(got.len(), 65535, "no more than the window");

    // curl --limit-rate: 16 MB at 4 MB/s, some 4 s, against the restart's
    // few milliseconds; it has begun once bytes are in its file.
    let out_file = h.path("huge.out");
    let resolve = format!("localhost:{}:127.0.0.1", h.s.port);
    let mut slow = Command::new("curl")
        .args(["-sS", "--max-time", "120", "--http2-prior-knowledge", "--limit-rate", "4M", "--resolve", &resolve, "-w", "%{http_version} %{http_code}", "-o"])
        .arg(&out_file)
        .arg(h.url(Way::PriorKnowledge, "/huge.bin"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("curl");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(&out_file).map_or(0, |m| m.len()) == 0 {
        assert!(Instant::now() < deadline, "curl's download did not begin");
        std::thread::sleep(Duration::from_millis(20));
    }

    let out = Command::new(BIN).args(["-k", "graceful", "-f"]).arg(&h.s.conf).output().unwrap();
    assert!(out.status.success(), "-k graceful: {}", String::from_utf8_lossy(&out.stderr));
    wait_generation(&h.s, 2);
    assert!(std::fs::metadata(&out_file).map_or(0, |m| m.len()) < sixteen_mb.len() as u64, "curl's download ended before the restart was done: the test proves nothing");

    // GOAWAY while the stream waits for credit (and no DATA past the
    // window meanwhile).
    let deadline = Instant::now() + Duration::from_secs(20);
    let goaway = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let f = raw.next_frame(left).unwrap_or_else(|| panic!("no GOAWAY within 20 s of the restart (the connection {})", if raw.closed(Duration::ZERO) { "was closed" } else { "is open" }));
        match f.kind {
            GOAWAY => break f,
            DATA => panic!("DATA past the window: {} bytes on stream {}", f.payload.len(), f.stream),
            RST_STREAM => panic!("the held stream was reset: {f:?}"),
            _ => {}
        }
    };
    let last_stream = u32::from_be_bytes(goaway.payload[0..4].try_into().unwrap()) & 0x7fff_ffff;
    let code = u32::from_be_bytes(goaway.payload[4..8].try_into().unwrap());
    assert!(last_stream >= 1 && code == 0, "GOAWAY keeps stream 1 and says NO_ERROR: last stream {last_stream}, code {code}");

    // Credit for the rest: it comes whole, then the connection ends.
    let rest = (two_mb.len() - got.len()) as u32;
    raw.window_update(0, rest);
    raw.window_update(1, rest);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let f = raw.next_frame(left).unwrap_or_else(|| panic!("the stream stopped at {} of {} bytes after the restart", got.len(), two_mb.len()));
        match f.kind {
            DATA if f.stream == 1 => {
                got.extend_from_slice(f.content());
                if f.flags & END_STREAM != 0 {
                    break;
                }
            }
            RST_STREAM => panic!("the stream was reset at {} bytes: {f:?}", got.len()),
            _ => {}
        }
    }
    assert!(got == two_mb, "2 MB byte-exact across the restart ({} bytes came)", got.len());
    assert!(raw.closed(Duration::from_secs(20)), "the old generation's connection did not end after its last stream");

    // curl's download finishes whole.
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(st) = slow.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = slow.kill();
            panic!("curl's slow download did not finish");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = slow.wait_with_output().unwrap();
    assert!(status.success(), "curl: {status}: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2 200");
    assert!(std::fs::read(&out_file).unwrap() == sixteen_mb, "16 MB byte-exact across the restart");

    // The new generation speaks HTTP/2 both ways.
    for way in [Way::PriorKnowledge, Way::Tls] {
        let g = h.curl(way, "/a.txt", &[]);
        assert_eq!((g.code, g.version.as_str(), g.status, g.body.as_slice()), (0, "2", 200, &b"0123456789abcdefghij"[..]), "{way:?} after the restart:\n{}", g.verbose);
    }
}

/// Reads frames until stream `id` ends; returns its DATA. Panics on a
/// reset, a GOAWAY or 20 s without the end.
fn read_stream(raw: &mut RawH2, id: u32) -> Vec<u8> {
    let mut body = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let f = raw.next_frame(left).unwrap_or_else(|| panic!("stream {id} did not end ({} bytes came)", body.len()));
        if f.stream == id && (f.kind == DATA || f.kind == HEADERS) {
            if f.kind == DATA {
                body.extend_from_slice(f.content());
            }
            if f.flags & END_STREAM != 0 {
                return body;
            }
        }
        assert!(f.kind != GOAWAY && !(f.kind == RST_STREAM && f.stream == id), "waiting for stream {id}: {f:?}");
    }
}

/// Rapid reset aimed at PHP: 40 GETs of a script, each reset in the same
/// write as its HEADERS, cost the application nothing (the streams are
/// gone before their work starts); the connection then gets its answer.
fn requests_reset_at_once_run_no_script(mpm: &str) {
    let dir = TempDir::new(&format!("h2-reset-php-{mpm}"));
    standard_site(&dir);
    let runs = dir.0.join("runs.txt");
    dir.write("htdocs/count.php", format!("<?php file_put_contents('{}', 'x', FILE_APPEND); echo 'counted';", runs.display()));
    let fpm = Fpm::start(&dir, "");
    let handler = fpm.php_files();
    let h = H2Server::start_in(dir, mpm, &handler);
    let authority = format!("localhost:{}", h.s.port);
    let mut raw = RawH2::connect(h.s.port);
    let mut burst = Vec::new();
    for i in 0..40u32 {
        let id = 1 + 2 * i;
        burst.extend_from_slice(&get_frame(id, &authority, "/count.php"));
        burst.extend_from_slice(&frame(RST_STREAM, 0, id, &8u32.to_be_bytes()));
    }
    raw.send_raw(&burst);
    raw.get(81, &authority, "/count.php");
    assert_eq!(read_stream(&mut raw, 81), b"counted");
    let ran = std::fs::read(&runs).map(|r| r.len()).unwrap_or(0);
    assert_eq!(ran, 1, "the script ran {ran} times: the 40 reset requests were worked on");
    drop(fpm);
}

/// A client that cancels a download half-way (RST_STREAM) keeps its
/// connection: the next stream is answered, and the one after that, and
/// the access log has the cancelled one. A connection left idle is told
/// GOAWAY after KeepAliveTimeout and closed.
fn resets_and_idle_connections(mpm: &str) {
    let conf = "KeepAliveTimeout 1\nLogFormat \"%H %>s %U %X\" resets\nCustomLog resets.log resets";
    let h = H2Server::start(mpm, "resets", &[("htdocs/big.bin", big())], conf);
    let authority = format!("localhost:{}", h.s.port);
    let mut raw = RawH2::connect(h.s.port);
    raw.get(1, &authority, "/big.bin");
    // Part of the first window, then CANCEL.
    let mut got = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while got < 16384 {
        let f = raw.next_frame(deadline.saturating_duration_since(Instant::now())).expect("DATA for stream 1");
        if f.kind == DATA && f.stream == 1 {
            got += f.content().len();
        }
    }
    raw.send(RST_STREAM, 0, 1, &8u32.to_be_bytes());
    // Credit for the connection, which the cancelled stream's frames used.
    raw.window_update(0, 1 << 20);
    raw.get(3, &authority, "/a.txt");
    assert_eq!(read_stream(&mut raw, 3), b"0123456789abcdefghij", "the stream after a reset");
    raw.get(5, &authority, "/index.html");
    assert_eq!(read_stream(&mut raw, 5), b"<html>hello</html>\n");
    // Idle now: GOAWAY (NO_ERROR) after KeepAliveTimeout, then the close.
    let deadline = Instant::now() + Duration::from_secs(20);
    let goaway = loop {
        let f = raw.next_frame(deadline.saturating_duration_since(Instant::now())).unwrap_or_else(|| panic!("no GOAWAY on an idle connection within 20 s"));
        if f.kind == GOAWAY {
            break f;
        }
        assert!(f.kind != DATA || f.stream == 1, "unexpected {f:?}");
    };
    let last_stream = u32::from_be_bytes(goaway.payload[0..4].try_into().unwrap()) & 0x7fff_ffff;
    let code = u32::from_be_bytes(goaway.payload[4..8].try_into().unwrap());
    assert_eq!((last_stream, code), (5, 0), "GOAWAY names the last stream taken, NO_ERROR");
    assert!(raw.closed(Duration::from_secs(20)), "the idle connection was not closed after its GOAWAY");
    // The cancelled stream is logged as cut short (%X "X"), the others whole.
    let log = h.s.wait_log("resets.log", "/index.html");
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.contains(&"HTTP/2.0 200 /a.txt +") || lines.contains(&"HTTP/2.0 200 /a.txt -"), "{log}");
    assert!(lines.contains(&"HTTP/2.0 200 /big.bin X"), "the cancelled download, aborted:\n{log}");
}

/// One Chromium at a time: each is several processes and much memory.
static CHROMIUM: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Chromium (headless) loads a page that references 30 assets (10 images,
/// 10 style sheets, 10 scripts) over h2 with TLS. The page's own script
/// writes, on the load event (which waits for every image, style sheet
/// and script), how many of each it has: --dump-dom prints the DOM after
/// that. The access log has all 31 requests as HTTP/2.0 200.
fn chromium_loads_a_page_of_30_assets(mpm: &str) {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let mut html = String::from("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>assets</title>\n");
    for i in 0..10 {
        files.push((format!("htdocs/page/css/s{i}.css"), format!(".c{i} {{ color: #{:06x}; }}\n", i * 1_234_567 % 0xffffff).into_bytes()));
        html.push_str(&format!("<link rel=\"stylesheet\" href=\"css/s{i}.css\">\n"));
    }
    html.push_str("</head><body>\n");
    for i in 0..10 {
        let svg = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"8\" height=\"8\"><rect width=\"8\" height=\"8\" fill=\"#{:06x}\"/></svg>\n", i * 7_654_321 % 0xffffff);
        files.push((format!("htdocs/page/img/i{i}.svg"), svg.into_bytes()));
        html.push_str(&format!("<img src=\"img/i{i}.svg\" width=\"8\" height=\"8\" alt=\"\">\n"));
    }
    for i in 0..10 {
        files.push((format!("htdocs/page/js/j{i}.js"), format!("window.ran = (window.ran || 0) + 1; // {i}\n").into_bytes()));
        html.push_str(&format!("<script src=\"js/j{i}.js\"></script>\n"));
    }
    html.push_str(
        r#"<p id="result">not loaded</p>
<script>
window.addEventListener('load', function () {
  var images = 0, sheets = 0;
  for (var i = 0; i < document.images.length; i++) {
    if (document.images[i].complete && document.images[i].naturalWidth > 0) images++;
  }
  for (var j = 0; j < document.styleSheets.length; j++) {
    if (document.styleSheets[j].cssRules.length > 0) sheets++;
  }
  document.getElementById('result').textContent = 'loaded images=' + images + ' sheets=' + sheets + ' scripts=' + (window.ran || 0);
});
</script>
</body></html>
"#,
    );
    files.push(("htdocs/page/index.html".to_string(), html.into_bytes()));
    let files: Vec<(&str, Vec<u8>)> = files.iter().map(|(n, c)| (n.as_str(), c.clone())).collect();
    // The types Chromium insists on for style sheets and SVG images,
    // whatever /etc/mime.types has.
    let conf = "AddType text/css .css\nAddType image/svg+xml .svg\nAddType text/javascript .js\nLogFormat \"%H %>s %U\" pages\nCustomLog pages.log pages\n";
    let h = H2Server::start(mpm, "chromium", &files, conf);

    let _one = CHROMIUM.lock().unwrap_or_else(|e| e.into_inner());
    let profile = h.path("chromium-profile");
    std::fs::create_dir_all(&profile).unwrap();
    let url = format!("https://127.0.0.1:{}/page/index.html", h.tls_port);
    // Bounded by timeout(1): Chromium stops by itself once the DOM is
    // dumped; 120 s is for a loaded machine.
    let out = Command::new("timeout")
        .args(["-k", "5", "120", "chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--ignore-certificate-errors"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", &url])
        .env("HOME", &h.s.dir.0)
        .stdin(Stdio::null())
        .output()
        .expect("run chromium (test.sh installs Debian's chromium)");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "chromium: {}: {}\n{dom}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(dom.contains("loaded images=10 sheets=10 scripts=10"), "the page's own count after its load event:\n{dom}\nstderr: {}", String::from_utf8_lossy(&out.stderr));

    let mut paths = vec!["/page/index.html".to_string()];
    for i in 0..10 {
        paths.push(format!("/page/css/s{i}.css"));
        paths.push(format!("/page/img/i{i}.svg"));
        paths.push(format!("/page/js/j{i}.js"));
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = h.s.read_log("pages.log");
        let missing: Vec<&String> = paths.iter().filter(|p| !log.lines().any(|l| l == format!("HTTP/2.0 200 {p}"))).collect();
        if missing.is_empty() {
            // And nothing of the page over another protocol or twice.
            for p in &paths {
                let n = log.lines().filter(|l| l.ends_with(&format!(" {p}"))).count();
                assert_eq!(n, 1, "{p} logged {n} times:\n{log}");
            }
            break;
        }
        assert!(Instant::now() < deadline, "not logged as HTTP/2.0 200: {missing:?}\n{log}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
