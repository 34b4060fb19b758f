//! `SetHandler metrics`: after requests to two virtual hosts, the scrape
//! counts each by host and status class, the duration histogram counts
//! every request, `promtool check metrics` (Prometheus's own checker)
//! accepts the text, OpenMetrics is answered when asked for, and Require
//! keeps strangers out; a real Prometheus (Debian's) scrapes it, in
//! OpenMetrics as it asks. Under every MPM: prefork's counts are those of
//! many processes.

mod common;
use common::*;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const VHOSTS: &str = "<VirtualHost *>\nServerName one.example\nDocumentRoot htdocs\n</VirtualHost>\n\
<VirtualHost *>\nServerName two.example\nDocumentRoot htdocs\n</VirtualHost>\n\
<VirtualHost *>\nServerName metrics.example\nDocumentRoot htdocs\n\
<Location \"/metrics\">\nSetHandler metrics\nRequire ip 127.0.0.1\n</Location>\n\
<Location \"/metrics-private\">\nSetHandler metrics\nRequire ip 192.0.2.1\n</Location>\n</VirtualHost>\n";

each_mpm!(requests_are_counted_by_host_and_class, promtool_accepts_both_formats, strangers_are_refused, a_real_prometheus_scrapes_it, pools_have_their_figures, tls_handshakes_and_h2_streams);

/// A keep-alive connection to the metrics host: each scrape is recorded
/// before the next one is read, so a scrape sees every one before it.
struct Scraper {
    conn: TcpStream,
}

impl Scraper {
    fn new(s: &Server) -> Scraper {
        Scraper { conn: s.connect() }
    }

    fn get(&mut self, path: &str, headers: &str) -> Resp {
        let req = format!("GET {path} HTTP/1.1\r\nHost: metrics.example\r\n{headers}\r\n");
        self.conn.write_all(req.as_bytes()).unwrap();
        let mut data = Vec::new();
        let mut buf = [0u8; 65536];
        while !response_complete(&data) {
            let n = self.conn.read(&mut buf).unwrap();
            assert!(n > 0, "the server closed the scrape's connection: {:?}", String::from_utf8_lossy(&data));
            data.extend_from_slice(&buf[..n]);
        }
        parse_response(&data).0
    }

    /// The samples of a text-format scrape: `name{labels}` -> value.
    fn samples(&mut self) -> HashMap<String, f64> {
        let r = self.get("/metrics", "");
        assert_eq!(r.status, 200, "{}", r.text());
        r.text()
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| {
                let (k, v) = l.rsplit_once(' ').unwrap_or_else(|| panic!("bad sample line {l:?}"));
                (k.to_string(), v.parse().unwrap_or_else(|_| panic!("bad value in {l:?}")))
            })
            .collect()
    }
}

fn requests(m: &HashMap<String, f64>, vhost: &str, class: &str) -> f64 {
    m.get(&format!("warren_requests_total{{vhost=\"{vhost}\",class=\"{class}\"}}")).copied().unwrap_or(0.0)
}

fn requests_are_counted_by_host_and_class(mpm: &str) {
    let s = Server::start(mpm, VHOSTS);
    let mut scraper = Scraper::new(&s);
    let before = scraper.samples();
    assert_eq!(requests(&before, "one.example", "2xx"), 0.0, "{before:?}");
    for _ in 0..7 {
        assert_eq!(s.get_from("one.example", "/a.txt").status, 200);
    }
    for _ in 0..3 {
        assert_eq!(s.get_from("two.example", "/missing").status, 404);
    }
    for _ in 0..2 {
        assert_eq!(s.get_from("two.example", "/a.txt").status, 200);
    }
    // A request is counted just after its answer is sent: wait for the last.
    let deadline = Instant::now() + Duration::from_secs(20);
    let m = loop {
        let m = scraper.samples();
        if requests(&m, "one.example", "2xx") >= 7.0 && requests(&m, "two.example", "4xx") >= 3.0 && requests(&m, "two.example", "2xx") >= 2.0 {
            break m;
        }
        assert!(Instant::now() < deadline, "the counts never reached the requests made: {m:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(requests(&m, "one.example", "2xx"), 7.0);
    assert_eq!(requests(&m, "two.example", "4xx"), 3.0);
    assert_eq!(requests(&m, "two.example", "2xx"), 2.0);
    for class in ["1xx", "3xx", "4xx", "5xx", "none"] {
        assert_eq!(requests(&m, "one.example", class), 0.0, "{class}");
    }
    // Nine 20-byte bodies and their heads, at least.
    let sent = m["warren_sent_bytes_total{vhost=\"one.example\"}"];
    assert!(sent >= 7.0 * 20.0, "{sent}");
    // Every request is in the histogram: those above, and the scrapes so far.
    let counted: f64 = m.iter().filter(|(k, _)| k.starts_with("warren_requests_total{")).map(|(_, v)| v).sum();
    assert_eq!(m["warren_request_duration_seconds_count"], counted, "{m:?}");
    assert_eq!(m["warren_request_duration_seconds_bucket{le=\"+Inf\"}"], counted);
    assert!(counted >= 13.0, "12 requests and a scrape at least: {counted}");
    assert!(m["warren_children"] >= 1.0);
    assert!(m.keys().any(|k| k.starts_with("warren_workers{state=")), "{m:?}");
    assert_eq!(m[&format!("warren_info{{mpm=\"{mpm}\"}}")], 1.0);
}

/// Runs `promtool check metrics` on `text`; its complaints, if any.
fn promtool(text: &[u8]) -> Result<(), String> {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus; test.sh installs it)");
    child.stdin.take().unwrap().write_all(text).unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }
}

fn promtool_accepts_both_formats(mpm: &str) {
    let s = Server::start(mpm, VHOSTS);
    for _ in 0..3 {
        assert_eq!(s.get_from("one.example", "/a.txt").status, 200);
    }
    assert_eq!(s.get_from("two.example", "/missing").status, 404);
    let mut scraper = Scraper::new(&s);
    let text = scraper.get("/metrics", "");
    assert_eq!(text.header("Content-Type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    promtool(&text.body).unwrap_or_else(|e| panic!("promtool refused the text format: {e}\n{}", text.text()));
    let om = scraper.get("/metrics", "Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n");
    assert_eq!(om.header("Content-Type"), Some("application/openmetrics-text; version=1.0.0; charset=utf-8"));
    let body = om.text();
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert!(body.contains("# TYPE warren_requests counter\n") && body.contains("warren_requests_total{vhost=\"one.example\",class=\"2xx\"} 3\n"), "{body}");
    // promtool reads only the text format; OpenMetrics's rules checked
    // here: each sample after its family's TYPE, a counter's samples named
    // with `_total` (the real Prometheus test parses it too).
    let mut families: HashMap<String, String> = HashMap::new();
    for line in body.lines().filter(|l| *l != "# EOF") {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (family, kind) = rest.split_once(' ').unwrap();
            assert!(families.insert(family.to_string(), kind.to_string()).is_none(), "family {family} declared twice");
        } else if !line.starts_with("# HELP ") {
            let name = line.split(['{', ' ']).next().unwrap();
            let family = ["_total", "_bucket", "_sum", "_count"].iter().find_map(|suffix| name.strip_suffix(suffix).filter(|f| families.contains_key(*f))).unwrap_or(name);
            let kind = families.get(family).unwrap_or_else(|| panic!("{line:?} before its family's TYPE"));
            assert_eq!(kind == "counter", name.ends_with("_total"), "{line:?} of a {kind}");
        }
    }
}

fn strangers_are_refused(mpm: &str) {
    let s = Server::start(mpm, VHOSTS);
    let mut scraper = Scraper::new(&s);
    let r = scraper.get("/metrics-private", "");
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(!r.text().contains("warren_requests_total"));
    // The other hosts have no metrics handler.
    let r = s.get_from("one.example", "/metrics");
    assert_eq!(r.status, 404);
}

/// A Prometheus server of the test's own, killed when dropped.
struct Prometheus {
    child: std::process::Child,
    port: u16,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// Scrapes `target` (host:port) at `/metrics` every second.
    fn start(dir: &TempDir, target: &str) -> Prometheus {
        let conf = dir.write(
            "prometheus.yml",
            format!("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: warren\n    metrics_path: /metrics\n    static_configs:\n      - targets: ['{target}']\n"),
        );
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", conf.display()))
            .arg(format!("--storage.tsdb.path={}", dir.0.join("tsdb").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.0.join("prometheus.log")).unwrap())
            .spawn()
            .expect("prometheus (Debian package prometheus; test.sh installs it)");
        Prometheus { child, port }
    }

    /// The API's answer to `query`, as text.
    fn query(&self, query: &str) -> String {
        let url = format!("http://127.0.0.1:{}/api/v1/query", self.port);
        let (_, out) = curl(&["-G", &url, "--data-urlencode", &format!("query={query}")]);
        String::from_utf8_lossy(&out).into_owned()
    }
}

fn a_real_prometheus_scrapes_it(mpm: &str) {
    let s = Server::start(mpm, "<Location \"/metrics\">\nSetHandler metrics\nRequire ip 127.0.0.1\n</Location>\nCustomLog scrapes.log \"%U %>s %{Content-Type}o\"\n");
    for _ in 0..5 {
        assert_eq!(s.get("/a.txt").status, 200);
    }
    let prom = Prometheus::start(&s.dir, &format!("127.0.0.1:{}", s.port));
    // Prometheus starts, then scrapes every second: wait for a scrape that
    // holds the five requests (the scrapes add their own).
    let deadline = Instant::now() + Duration::from_secs(60);
    let query = "warren_requests_total{job=\"warren\",vhost=\"localhost\",class=\"2xx\"} >= 5";
    loop {
        let answer = prom.query(query);
        if answer.contains("\"__name__\":\"warren_requests_total\"") {
            break;
        }
        assert!(Instant::now() < deadline, "Prometheus never had the counts: {answer}\ntargets: {}\nlog: {}", prom.query("up"), s.dir.0.join("prometheus.log").display());
        std::thread::sleep(Duration::from_millis(200));
    }
    // The scrape was healthy, in OpenMetrics (what Prometheus asks for first).
    let up = prom.query("up{job=\"warren\"}");
    assert!(up.contains("\"1\"]"), "{up}");
    // (A scrape's log line is written once its answer is sent: waited for.)
    let om = "/metrics 200 application/openmetrics-text; version=1.0.0";
    let log = s.wait_log("scrapes.log", om);
    assert!(log.contains(om), "{log}");
    let histogram = prom.query("warren_request_duration_seconds_count{job=\"warren\"} >= 5");
    assert!(histogram.contains("warren_request_duration_seconds_count"), "{histogram}");
}

fn pools_have_their_figures(mpm: &str) {
    let conf = "<Pool www>\n  Command /usr/bin/php-cgi\n  User nobody\n  Group nogroup\n  pm static\n  pm.max_children 2\n</Pool>\n\
<FilesMatch \\.php$>\n  SetHandler pool:www\n</FilesMatch>\n\
<Location \"/metrics\">\n  SetHandler metrics\n  Require ip 127.0.0.1\n</Location>\n";
    let dir = TempDir::new(&format!("metrics-pool-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/hi.php", "<?php echo 'hi';");
    let s = Server::start_in(dir, mpm, conf);
    for _ in 0..3 {
        let r = s.get("/hi.php");
        assert_eq!((r.status, r.text().as_str()), (200, "hi"));
    }
    let text = s.get("/metrics").text();
    let sample = |name: &str| -> f64 {
        let line = text.lines().find(|l| l.starts_with(&format!("{name}{{pool=\"www\"}} "))).unwrap_or_else(|| panic!("no {name}: {text}"));
        line.rsplit_once(' ').unwrap().1.parse().unwrap()
    };
    assert_eq!(sample("warren_pool_max_children"), 2.0);
    assert_eq!(sample("warren_pool_max_children_auto"), 0.0);
    assert_eq!(sample("warren_pool_accepted_total"), 3.0, "{text}");
    assert_eq!(sample("warren_pool_children_idle") + sample("warren_pool_children_active"), 2.0, "pm static 2: {text}");
    promtool(text.as_bytes()).unwrap_or_else(|e| panic!("promtool: {e}\n{text}"));
}

/// The main server speaks TLS (and h2 over it); the metrics are scraped
/// on a plain listener.
fn tls_handshakes_and_h2_streams(mpm: &str) {
    let dir = TempDir::new(&format!("metrics-tls-{mpm}"));
    standard_site(&dir);
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "30", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost", "-keyout"])
        .arg(dir.0.join("key.pem"))
        .arg("-out")
        .arg(dir.0.join("cert.pem"))
        .output()
        .expect("run openssl");
    assert!(made.status.success(), "openssl made the certificate");
    let plain = free_port();
    let conf = format!(
        "LoadModule http2_module modules/mod_http2.so\nProtocols h2 http/1.1\nListen 127.0.0.1:{plain} http\nSSLEngine on\nSSLCertificateFile cert.pem\nSSLCertificateKeyFile key.pem\n\
<VirtualHost *:{plain}>\nSSLEngine off\nDocumentRoot htdocs\n<Location \"/metrics\">\nSetHandler metrics\nRequire ip 127.0.0.1\n</Location>\n</VirtualHost>\n"
    );
    let s = Server::start_in(dir, mpm, &conf);
    let cacert = s.dir.0.join("cert.pem");
    let resolve = format!("localhost:{}:127.0.0.1", s.port);
    let url = format!("https://localhost:{}/a.txt", s.port);
    let https = |more: &[&str]| {
        let mut args = vec!["--cacert", cacert.to_str().unwrap(), "--resolve", &resolve];
        args.extend_from_slice(more);
        let (code, _) = curl(&args);
        assert_eq!(code, 0, "curl {more:?}");
    };
    for _ in 0..3 {
        https(&["--http1.1", "-o", "/dev/null", &url]);
    }
    // One connection, two streams.
    https(&["--http2", "-o", "/dev/null", &url, "-o", "/dev/null", &url]);
    let scrape = || {
        let (code, out) = curl(&[&format!("http://127.0.0.1:{plain}/metrics")]);
        assert_eq!(code, 0);
        String::from_utf8_lossy(&out).into_owned()
    };
    let value = |text: &str, sample: &str| -> f64 { text.lines().find_map(|l| l.strip_prefix(sample)?.strip_prefix(' ')?.parse().ok()).unwrap_or_else(|| panic!("no {sample}: {text}")) };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = scrape();
        let handshakes = value(&text, "warren_tls_handshakes_total{resumed=\"false\"}") + value(&text, "warren_tls_handshakes_total{resumed=\"true\"}");
        let streams = value(&text, "warren_http2_streams_total");
        if handshakes >= 4.0 && streams >= 2.0 {
            assert_eq!((handshakes, streams), (4.0, 2.0), "{text}");
            break;
        }
        assert!(Instant::now() < deadline, "never counted: {text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
