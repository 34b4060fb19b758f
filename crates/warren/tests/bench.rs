//! `warren bench` against a small server in this test whose delays and
//! failures are known, and against warren itself.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
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
            match s.read(&mut tmp) {
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
                std::thread::sleep(Duration::from_secs(10));
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
    // 40 requests of 100 ms, 4 at a time: about 1 s, every percentile near 100 ms.
    let (code, j, _) = bench(&["-n", "40", "-c", "4", "--json", &url("/slow")]);
    assert_eq!(code, 0);
    assert_eq!(j["transactions"], 40);
    assert_eq!(j["availability"], 100.0);
    for p in ["50", "99", "100"] {
        let v = j["percentiles_ms"][p].as_f64().unwrap();
        assert!((100.0..160.0).contains(&v), "p{p} = {v}");
    }
    let elapsed = j["elapsed_time"].as_f64().unwrap();
    assert!((0.95..2.0).contains(&elapsed), "elapsed {elapsed}");
    let conc = j["concurrency"].as_f64().unwrap();
    assert!((3.0..4.1).contains(&conc), "concurrency {conc}");
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
    // A server that never answers: timeouts, and the tool stops in time.
    let t = Instant::now();
    let (_, j, _) = bench(&["-n", "2", "-c", "2", "--timeout", "1", "--json", &url("/hang")]);
    assert_eq!(j["errors"]["timeout"], 2);
    assert!(t.elapsed() < Duration::from_secs(4), "took {:?}", t.elapsed());
    // A duration bounds the run even against a server that never answers.
    let t = Instant::now();
    let (_, j, _) = bench(&["-t", "1", "-c", "2", "--json", &url("/hang")]);
    assert_eq!(j["transactions"], 0);
    assert!(t.elapsed() < Duration::from_secs(3), "took {:?}", t.elapsed());
}

#[test]
fn fixed_rate_and_ramp() {
    let port = test_server();
    let url = |p: &str| format!("http://127.0.0.1:{port}{p}");
    // 100 requests due at 100 per second: about a second, whatever -c allows.
    let (_, j, _) = bench(&["--rate", "100", "-n", "100", "-c", "10", "--json", &url("/fast")]);
    let (elapsed, rate) = (j["elapsed_time"].as_f64().unwrap(), j["transaction_rate"].as_f64().unwrap());
    assert!((0.95..1.4).contains(&elapsed) && (70.0..106.0).contains(&rate), "elapsed {elapsed}, rate {rate}");
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
    let elapsed = j["elapsed_time"].as_f64().unwrap();
    assert!((1.9..2.6).contains(&elapsed), "elapsed {elapsed}");
    let conc = j["concurrency"].as_f64().unwrap();
    assert!((1.3..3.6).contains(&conc), "concurrency {conc}");
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
    assert!(j["errors"]["connect"].as_u64().unwrap() > 2 && t.elapsed() < Duration::from_secs(3));
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
