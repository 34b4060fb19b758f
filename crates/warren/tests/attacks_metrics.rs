//! Attacks on `SetHandler metrics`, under each MPM. The attackers: an
//! anonymous client who wants the figures of a server whose metrics are
//! kept for the monitoring host (`Require ip`), trying the URL in other
//! spellings and over HTTP/2, or who wants to forge lines in the scrape
//! through what it sends; and a site owner with an `.htaccess` who wants
//! the whole server's figures (every host's traffic) for their directory.

mod common;

use common::*;

const CONF: &str = "LoadModule http2_module modules/mod_http2.so\nProtocols h2c http/1.1\n\
<Directory DOCROOT>\n  AllowOverride FileInfo\n</Directory>\n\
<Location \"/metrics\">\n  SetHandler metrics\n  Require ip 192.0.2.1\n</Location>\n\
<Location \"/scrape\">\n  SetHandler metrics\n  Require ip 127.0.0.1\n</Location>\n";

/// A figure only the scrape holds.
const FIGURE: &str = "warren_requests_total";

each_mpm!(strangers_get_no_figures_by_any_spelling, htaccess_cannot_set_metrics, clients_cannot_forge_scrape_lines);

fn server(mpm: &str) -> Server {
    let dir = TempDir::new(&format!("metrics-{mpm}"));
    standard_site(&dir);
    let docroot = dir.0.join("htdocs").to_string_lossy().into_owned();
    Server::start_in(dir, mpm, &CONF.replace("DOCROOT", &docroot))
}

fn strangers_get_no_figures_by_any_spelling(mpm: &str) {
    let s = server(mpm);
    for path in ["/metrics", "/METRICS", "/%6detrics", "/%6Detrics", "//metrics", "/./metrics", "/sub/../metrics", "/metrics/", "/metrics?x=1", "/metrics%2f", "/metrics;x", "/%2e/metrics"] {
        let raw = s.raw(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes());
        let text = String::from_utf8_lossy(&raw);
        assert!(!text.contains(FIGURE), "{path}: {text}");
        assert!(matches!(status_of(&raw), 400 | 403 | 404), "{path}: {text}");
    }
    let (_, out) = curl(&["--http2-prior-knowledge", &s.url("/metrics")]);
    assert!(!String::from_utf8_lossy(&out).contains(FIGURE));
    // The monitoring host's own location answers.
    assert!(s.get("/scrape").text().contains(FIGURE));
}

fn htaccess_cannot_set_metrics(mpm: &str) {
    let s = server(mpm);
    s.dir.write("htdocs/sub/.htaccess", "SetHandler metrics\n");
    s.dir.write("htdocs/st/.htaccess", "<Files figures>\n  SetHandler Metrics\n</Files>\n");
    s.dir.write("htdocs/add/.htaccess", "AddHandler metrics .txt\n");
    s.dir.write("htdocs/add/x.txt", "plain");
    for path in ["/sub/", "/sub/page.html", "/st/figures", "/add/x.txt"] {
        let r = s.get(path);
        assert_eq!(r.status, 500, "{path}: {}", r.text());
        assert!(!r.text().contains(FIGURE), "{path}: {}", r.text());
    }
    let log = s.wait_log("error.log", "htdocs/st/.htaccess:2: SetHandler Metrics");
    assert!(log.contains("htdocs/sub/.htaccess:1: SetHandler metrics: a server-wide handler cannot be set in .htaccess"), "{log}");
    assert!(log.contains("htdocs/st/.htaccess:2: SetHandler Metrics: a server-wide handler"), "{log}");
    assert!(log.contains("htdocs/add/.htaccess:1: AddHandler metrics"), "{log}");
}

/// Nothing a client sends is a label: a Host, path or method made of
/// quotes, braces and line breaks leaves every scrape line well formed.
fn clients_cannot_forge_scrape_lines(mpm: &str) {
    let s = server(mpm);
    for req in [
        "GET /a.txt HTTP/1.1\r\nHost: x\"} 1e9\r\nConnection: close\r\n\r\n",
        "GET /a.txt HTTP/1.1\r\nHost: a%0awarren_requests_total 9\r\nConnection: close\r\n\r\n",
        "GET /%22%7D%0Awarren_requests_total%7B%7D%209 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        "GET /a.txt HTTP/1.1\r\nHost: \\\"\r\nConnection: close\r\n\r\n",
    ] {
        s.raw(req.as_bytes());
    }
    let text = s.get("/scrape").text();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (sample, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line:?}"));
        assert!(value.parse::<f64>().is_ok(), "{line:?}");
        assert!(sample.starts_with("warren_"), "{line:?}");
        assert!(!sample.contains("1e9") && !sample.contains("%0a"), "{line:?}");
    }
    // Every request went to the one host there is (the hosts past the
    // buckets, `(other)`, have none).
    let labelled = |l: &&str| l.starts_with("warren_requests_total{vhost=\"localhost\",") || (l.starts_with("warren_requests_total{vhost=\"(other)\",") && l.ends_with(" 0"));
    assert!(text.lines().filter(|l| l.starts_with("warren_requests_total{")).all(|l| labelled(&l)), "{text}");
}
