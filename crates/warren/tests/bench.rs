//! `warren bench` against a small server in this test whose delays and
//! failures are known, and against warren itself.

mod common;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Answers by path: /fast 200, /slow 200 after 100 ms, /err 500, /chunked a
/// chunked 200, /drop closes without answering, /hang never answers.
fn test_server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || serve(s));
        }
    });
    port
}

fn serve(mut s: TcpStream) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match read_some(&mut s, &mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        }
        let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end);
        let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
        let close = head.to_ascii_lowercase().contains("connection: close");
        let conn = if close { "close" } else { "keep-alive" };
        let answer = match path.as_str() {
            "/slow" => {
                std::thread::sleep(Duration::from_millis(100));
                format!("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: {conn}\r\n\r\nslow")
            }
            "/err" => format!("HTTP/1.1 500 Oops\r\nContent-Length: 0\r\nConnection: {conn}\r\n\r\n"),
            "/chunked" => format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: {conn}\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
            "/drop" => return,
            "/hang" => {
                std::thread::sleep(Duration::from_secs(30));
                return;
            }
            _ => format!("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: {conn}\r\n\r\nok"),
        };
        if s.write_all(answer.as_bytes()).is_err() || close {
            return;
        }
    }
}

fn bench(args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = Command::new(BIN).arg("bench").args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), json, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn figures_match_known_delays_and_failures() {
    let port = test_server();
    let url = |p: &str| format!("http://127.0.0.1:{port}{p}");
    // 40 requests of 100 ms, 4 at a time: about 1 s on an idle machine,
    // every percentile near 100 ms. The bounds below are what the server
    // guarantees (no answer before 100 ms, 40 of them 4 at a time take 1 s,
    // one at a time 4 s) and what the tool's arithmetic must give; a loaded
    // machine only makes responses slower, which they allow.
    let (code, j, _) = bench(&["-n", "40", "-c", "4", "--json", &url("/slow")]);
    assert_eq!(code, 0);
    assert_eq!(j["transactions"], 40);
    assert_eq!(j["availability"], 100.0);
    for p in ["50", "99", "100"] {
        let v = j["percentiles_ms"][p].as_f64().unwrap();
        // Milliseconds (not µs or s), and not below the server's 100 ms.
        assert!((100.0..1000.0).contains(&v), "p{p} = {v}");
    }
    let elapsed = j["elapsed_time"].as_f64().unwrap();
    // Four at a time: under the 4 s that one at a time would take.
    assert!((0.95..3.9).contains(&elapsed), "elapsed {elapsed}");
    let conc = j["concurrency"].as_f64().unwrap();
    assert!((2.0..4.1).contains(&conc), "concurrency {conc}");
    // Concurrency is the total response time over the elapsed time, and the rate transactions over it.
    let (mean, rate) = (j["response_time"].as_f64().unwrap(), j["transaction_rate"].as_f64().unwrap());
    assert!((conc - mean * 40.0 / elapsed).abs() < 0.01 * conc, "concurrency {conc}, mean {mean}, elapsed {elapsed}");
    assert!((rate - 40.0 / elapsed).abs() < 0.01 * rate, "rate {rate}, elapsed {elapsed}");
    assert_eq!(j["data_transferred"].as_f64().unwrap() * 1024.0 * 1024.0, 160.0);
    // Keep-alive, chunked bodies.
    let (_, j, _) = bench(&["-n", "100", "-c", "5", "-k", "--json", &url("/chunked")]);
    assert_eq!((j["transactions"].as_u64(), j["failed_transactions"].as_u64()), (Some(100), Some(0)));
    assert_eq!(j["data_transferred"].as_f64().unwrap() * 1024.0 * 1024.0, 1100.0);
    // 500s are transactions but not successful ones; closed connections are read errors.
    let (_, j, _) = bench(&["-n", "20", "-c", "2", "--json", &url("/err")]);
    assert_eq!((j["transactions"].as_u64(), j["successful_transactions"].as_u64()), (Some(20), Some(0)));
    assert_eq!(j["errors"]["non_2xx"]["500"], 20);
    let (_, j, _) = bench(&["-n", "10", "-c", "2", "--json", &url("/drop")]);
    assert_eq!((j["transactions"].as_u64(), j["errors"]["read"].as_u64(), j["availability"].as_f64()), (Some(0), Some(10), Some(0.0)));
    // A server that never answers (it closes after 30 s): timeouts, and the
    // tool stops in time, long before the server would have let it go.
    let t = Instant::now();
    let (_, j, _) = bench(&["-n", "2", "-c", "2", "--timeout", "1", "--json", &url("/hang")]);
    assert_eq!(j["errors"]["timeout"], 2);
    assert!(t.elapsed() < Duration::from_secs(15), "took {:?}", t.elapsed());
    // A duration bounds the run even against a server that never answers.
    let t = Instant::now();
    let (_, j, _) = bench(&["-t", "1", "-c", "2", "--json", &url("/hang")]);
    assert_eq!(j["transactions"], 0);
    assert!(t.elapsed() < Duration::from_secs(15), "took {:?}", t.elapsed());
}

/// Like a lone prefork child: serves one connection to its end before it
/// accepts the next.
#[test]
fn a_connection_with_no_requests_left_is_closed_at_once() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            serve(s);
        }
    });
    // Both connections on one client thread: the first takes every request it
    // can; the second waits at the listener until the first is closed, which
    // must not wait for the run's (or the thread's) end.
    // Were it kept open, the second connection would time out (--timeout 15)
    // and the server would hold the first for its 20 s read timeout.
    let t = Instant::now();
    let (_, j, _) = bench(&["-n", "20", "-c", "2", "--threads", "1", "-k", "--timeout", "15", "--json", &format!("http://127.0.0.1:{port}/fast")]);
    assert_eq!((j["transactions"].as_u64(), j["failed_transactions"].as_u64()), (Some(20), Some(0)), "{j}");
    assert!(t.elapsed() < Duration::from_secs(12), "took {:?}", t.elapsed());
}

#[test]
fn fixed_rate_and_ramp() {
    let port = test_server();
    let url = |p: &str| format!("http://127.0.0.1:{port}{p}");
    // 100 requests due at 100 per second: about a second, whatever -c allows
    // (at once, unpaced, they take a few ms). Never faster than the rate; a
    // loaded machine may be slower.
    let (_, j, _) = bench(&["--rate", "100", "-n", "100", "-c", "10", "--json", &url("/fast")]);
    let (elapsed, rate) = (j["elapsed_time"].as_f64().unwrap(), j["transaction_rate"].as_f64().unwrap());
    assert!((0.95..5.0).contains(&elapsed) && (20.0..106.0).contains(&rate), "elapsed {elapsed}, rate {rate}");
    // Due every 20 ms, served every 100 ms by one connection: the queue shows in the
    // response times, counted from when each request was due (no coordinated omission).
    let (_, j, _) = bench(&["--rate", "50", "-n", "20", "-c", "1", "--json", &url("/slow")]);
    let (p50, p100) = (j["percentiles_ms"]["50"].as_f64().unwrap(), j["percentiles_ms"]["100"].as_f64().unwrap());
    assert!(p50 > 500.0 && p100 > 1400.0, "p50 {p50}, p100 {p100}: the queue must count");
    // Users rising from 1 to 4 over 2 s, each at ~10 requests a second: more in the second second.
    let (_, j, _) = bench(&["--ramp", "1-4:2", "--json", &url("/slow")]);
    let series = j["series"].as_array().unwrap();
    let per = |i: usize| series.get(i).and_then(|s| s["responses"].as_u64()).unwrap_or(0);
    assert!(per(1) > per(0) + 5, "series {series:?}");
    // The ramp's 2 s, plus the answers in flight at its end (and a loaded
    // machine's delays); a run that ignored the duration would go on.
    let elapsed = j["elapsed_time"].as_f64().unwrap();
    assert!((1.9..6.0).contains(&elapsed), "elapsed {elapsed}");
    // On average about 2.5 users: neither the 1 nor the 4 of a ramp that did not move.
    let conc = j["concurrency"].as_f64().unwrap();
    assert!((1.2..3.8).contains(&conc), "concurrency {conc}");
}

#[test]
fn refused_connections_and_bad_input() {
    let port = free_port();
    let (code, j, _) = bench(&["-n", "5", "-c", "1", "--json", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(code, 0);
    assert_eq!(j["errors"]["connect"], 5);
    // For a duration, refused again and again: counted, bounded, no crash.
    let t = Instant::now();
    let (code, j, _) = bench(&["-t", "1", "-c", "2", "--json", &format!("http://127.0.0.1:{port}/")]);
    assert_eq!(code, 0);
    // Bounded by its 1 s (a run that ignored it would not end).
    assert!(j["errors"]["connect"].as_u64().unwrap() > 2 && t.elapsed() < Duration::from_secs(10), "{j} after {:?}", t.elapsed());
    for bad in ["not a url", "ftp://127.0.0.1/"] {
        let (code, _, err) = bench(&[bad]);
        assert_eq!(code, 2);
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
    let (code, _, err) = bench(&["-t", "soon", "http://127.0.0.1:1/"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = bench(&["--server-pid", "4000000000", "http://127.0.0.1:1/"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn siege_url_file() {
    let port = test_server();
    let dir = TempDir::new("urls");
    let file = dir.write("urls.txt", format!("# two URLs, taken in turn\nhttp://127.0.0.1:{port}/fast\n\nhttp://127.0.0.1:{port}/err POST a=1&b=2\n"));
    let (code, j, err) = bench(&["-f", file.to_str().unwrap(), "-n", "10", "-c", "1", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["transactions"], 10);
    assert_eq!(j["errors"]["non_2xx"]["500"], 5);
    let bad = dir.write("bad.txt", "http://127.0.0.1:1/ DELETE\n");
    let (code, _, err) = bench(&["-f", bad.to_str().unwrap()]);
    assert_eq!((code, err.lines().count()), (2, 1), "{err}");
}

#[test]
fn against_warren_with_the_siege_report() {
    let s = Server::start("event", "");
    let out = Command::new(BIN).args(["bench", "-n", "500", "-c", "10", "-k", "--server-pid", &s.pid().to_string(), &s.url("/a.txt")]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for field in ["Transactions:", "Availability:", "Elapsed time:", "Data transferred:", "Response time:", "Transaction rate:", "Throughput:", "Concurrency:", "Successful transactions:", "Failed transactions:", "Longest transaction:", "Shortest transaction:", "  99%", "(longest request)", "Per second", "Server memory (peak):"] {
        assert!(text.contains(field), "{field} missing in\n{text}");
    }
    assert!(text.contains("500 hits") && text.contains("100.00 %"), "{text}");
}

/// `--suite`: warren under each MPM (with php-fpm and with its own pool)
/// and nginx when it is installed, started by the suite itself; the report
/// holds every figure, and no server is left running.
#[test]
fn suite_runs_each_setup_and_writes_the_report() {
    let dir = TempDir::new("suite");
    let port = free_port();
    let suite = dir.write(
        "mini.suite",
        format!(
            "Port {port}\nWarmup 0s\nDuration 1s\nBaseline warren-event\n\
             <Server warren-event>\n Software warren\n MPM event\n</Server>\n\
             <Server warren-worker>\n Software warren\n MPM worker\n</Server>\n\
             <Server warren-prefork-pool>\n Software warren\n MPM prefork\n PHP pool\n</Server>\n\
             <Server nginx>\n Software nginx\n</Server>\n\
             <Scenario static-ka>\n URL /index.html\n Concurrency 8\n KeepAlive On\n</Scenario>\n\
             <Scenario php>\n URL /hello.php\n Concurrency 4\n Requests 200\n Repeat 2\n</Scenario>\n\
             <Scenario page-240>\n Page /page-240.html\n Concurrency 4\n KeepAlive On\n</Scenario>\n\
             <Scenario idle-50>\n Idle 50\n URL /index.html\n Samples 3\n</Scenario>\n\
             <Scenario ramp>\n URL /app.php\n Ramp 1-8:2\n KeepAlive On\n</Scenario>\n"
        ),
    );
    let out_dir = dir.0.join("report");
    let bench = Command::new(BIN).args(["bench", "--suite", suite.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Its servers' files are under a directory named after it.
    let scratch = format!("warren-suite\\.{}([/ ]|$)", bench.id());
    let out = bench.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    let nginx = std::path::Path::new("/usr/sbin/nginx").exists();

    let results: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join("results.json")).unwrap()).unwrap();
    let results = results["results"].as_array().unwrap();
    assert_eq!(results.len(), 4 * 5);
    for r in results {
        let (server, scenario) = (r["server"].as_str().unwrap(), r["scenario"].as_str().unwrap());
        if server == "nginx" && !nginx {
            assert!(r["error"].as_str().unwrap().contains("nginx is not installed"), "{r}");
            continue;
        }
        assert!(r["server_memory"]["peak_mb"].as_f64().unwrap() > 0.5, "{server} {scenario}: {r}");
        assert!(r["php_memory"]["peak_mb"].as_f64().unwrap() > 1.0, "{server} {scenario}: {r}");
        if scenario == "idle-50" {
            // prefork's children grow by the maintenance pass, a few a
            // second: the first connections may reach their KeepAliveTimeout
            // before the last are accepted, as under Apache's prefork.
            let held = r["idle_connections"].as_u64().unwrap();
            if server.contains("prefork") {
                assert!(held > 0 && held <= 50 && r["failed_connections"] == 0, "{server}: {r}");
            } else {
                assert_eq!(held, 50, "{server}: {r}");
            }
            assert!(r["fresh_request_ms"].as_f64().unwrap() > 0.0, "{server}: {r}");
            continue;
        }
        assert_eq!(r["failed_transactions"], 0, "{server} {scenario}: {r}");
        assert_eq!(r["availability"], 100.0, "{server} {scenario}: {r}");
        assert!(r["transaction_rate"].as_f64().unwrap() > 10.0, "{server} {scenario}: {r}");
        match scenario {
            // A count of requests, run twice: the median run is kept.
            "php" => {
                assert_eq!(r["transactions"], 200, "{server}: {r}");
                assert_eq!(r["runs_transaction_rate"].as_array().unwrap().len(), 2);
            }
            // The page's 240 images are requested, not only the page.
            "page-240" => assert!(r["data_transferred"].as_f64().unwrap() * 1048576.0 / r["transactions"].as_f64().unwrap() < 200.0, "{server}: {r}"),
            // Each app.php takes 20 ms: eight users at most make ~400 a second.
            "ramp" => {
                let series = r["series"].as_array().unwrap();
                assert!(series.len() >= 2 && r["transaction_rate"].as_f64().unwrap() < 500.0, "{server}: {r}");
                assert!(series[1]["responses"].as_u64() > series[0]["responses"].as_u64(), "users rise: {r}");
            }
            _ => {}
        }
        assert!(out_dir.join("json").join(format!("{server}--{scenario}.json")).exists());
    }

    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    for part in ["## Requests per second", "| scenario | warren-event | warren-worker | warren-prefork-pool | nginx |", "| static-ka | ", "(1.00x)", "## Response times", "## Memory", "## Idle connections", "![ramp.svg](ramp.svg)"] {
        assert!(md.contains(part), "{part} missing in\n{md}");
    }
    if !nginx {
        assert!(md.contains("## Not measured") && md.contains("nginx is not installed"), "{md}");
    }
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 5, "throughput, latency, memory, idle, ramp");
    assert!(html.contains("<table>") && html.ends_with("</html>\n"));
    for chart in ["throughput", "latency", "memory", "idle", "ramp"] {
        let svg = std::fs::read_to_string(out_dir.join(format!("{chart}.svg"))).unwrap();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"") && svg.trim_end().ends_with("</svg>"), "{chart}");
        assert!(svg.contains("warren-prefork-pool"), "{chart}");
    }
    // Every server it started stops (a child of one killed after its 10 s
    // may still be finishing on a loaded machine).
    let running = || Command::new("pgrep").args(["-f", &scratch]).output().unwrap().stdout;
    settle(|| running().is_empty());
    let left = running();
    assert!(left.is_empty(), "left running: {}", String::from_utf8_lossy(&left));

    // A mistake in the suite file: one line naming file and line, nothing started.
    let bad = dir.write("bad.suite", "<Server w>\n Software lighttpd\n</Server>\n");
    let out = Command::new(BIN).args(["bench", "--suite", bad.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(err.trim(), format!("warren bench: {}:2: Software: 'lighttpd' is not warren, nginx or apache", bad.display()));
}
