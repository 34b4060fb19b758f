//! A suite file: the server set-ups to compare and the scenarios to run on
//! each, in blocks like Apache's:
//!
//! ```text
//! Port 18080                 # where each server listens, one at a time
//! <Server warren-event>
//!     Software warren        # warren | nginx | apache
//!     MPM event              # event | worker | prefork (not for nginx)
//!     PHP fpm                # fpm: the shared php-fpm pool; pool: warren's own
//!     Compression On         # gzip for text/css (each server's own way)
//! </Server>
//! <Scenario static-ka>
//!     URL /index.html        # repeatable; requested in turn
//!     Header Accept-Encoding: gzip   # repeatable; sent with each request
//!     Concurrency 50
//!     KeepAlive On
//!     Duration 5s
//! </Scenario>
//! ```
//!
//! [`parse`] turns the text into a [`Suite`]; every mistake is an error
//! naming the file, the line and the directive.

use std::fmt;
use std::time::Duration;

pub use warren_config::Mpm;

use crate::{parse_duration, parse_ramp};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Software {
    Warren(Mpm),
    Nginx,
    Apache(Mpm),
}

/// Where a server sends `*.php`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Php {
    /// The one php-fpm pool (pm static, 4 children) all servers share.
    Fpm,
    /// warren's built-in pool of php-cgi (pm static, 4 children).
    Pool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ServerSpec {
    pub name: String,
    pub software: Software,
    pub php: Php,
    /// gzip for text/css: warren's and Apache's `AddOutputFilterByType
    /// DEFLATE text/css`, nginx's `gzip on; gzip_types text/css`.
    pub compress: bool,
}

/// What a scenario's clients request.
#[derive(Clone, Debug, PartialEq)]
pub enum Urls {
    /// These paths, in turn.
    Paths(Vec<String>),
    /// A page and then each image it links, as a browser loads it.
    Page(String),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Load {
    /// Requests from `concurrency` clients, for a count or a duration.
    Requests {
        urls: Urls,
        concurrency: usize,
        requests: Option<u64>,
        duration: Option<Duration>,
        keep_alive: bool,
        ramp: Option<(usize, usize, Duration)>,
        rate: Option<f64>,
    },
    /// `connections` idle keep-alive connections, then `samples` requests
    /// for `path`, each on a fresh connection.
    Idle { connections: usize, path: String, samples: usize },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub load: Load,
    /// Runs of it; the report keeps the median by transaction rate.
    pub repeat: usize,
    pub timeout: Duration,
    /// Request header lines (`Name: value`) sent with each request.
    pub headers: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    pub port: u16,
    /// Unmeasured keep-alive load before a server's first scenario, so that
    /// the MPMs have grown their children.
    pub warmup: Duration,
    /// Client threads (wrk -t).
    pub threads: usize,
    /// The server the others are compared with (the first by default).
    pub baseline: String,
    pub servers: Vec<ServerSpec>,
    pub scenarios: Vec<Scenario>,
}

#[derive(Debug, PartialEq)]
pub struct SuiteError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// The directives of one block, with their line numbers.
struct Block {
    kind: String,
    name: String,
    line: usize,
    directives: Vec<(usize, String, Vec<String>)>,
}

pub fn parse(text: &str, file: &str) -> Result<Suite, SuiteError> {
    let err = |line: usize, message: String| SuiteError { file: file.to_string(), line, message };
    let mut top = Vec::new();
    let mut blocks: Vec<Block> = Vec::new();
    let mut open: Option<Block> = None;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.split_once('#').map_or(raw, |(l, _)| l).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(tag) = line.strip_prefix("</") {
            let kind = tag.trim_end_matches('>').trim();
            match open.take() {
                Some(b) if b.kind.eq_ignore_ascii_case(kind) => blocks.push(b),
                Some(b) => return Err(err(n, format!("</{kind}> closes <{}> of line {}", b.kind, b.line))),
                None => return Err(err(n, format!("</{kind}> without <{kind}>"))),
            }
        } else if let Some(tag) = line.strip_prefix('<') {
            let tag = tag.strip_suffix('>').ok_or_else(|| err(n, format!("'{line}': a block opens as <Kind name>")))?;
            let (kind, name) = tag.split_once(char::is_whitespace).ok_or_else(|| err(n, format!("<{tag}> needs a name")))?;
            if !kind.eq_ignore_ascii_case("Server") && !kind.eq_ignore_ascii_case("Scenario") {
                return Err(err(n, format!("<{kind}>: the blocks are <Server name> and <Scenario name>")));
            }
            if let Some(b) = &open {
                return Err(err(n, format!("<{kind}> inside <{}> of line {}", b.kind, b.line)));
            }
            let name = name.trim().to_string();
            if blocks.iter().any(|b| b.kind.eq_ignore_ascii_case(kind) && b.name == name) {
                return Err(err(n, format!("<{kind} {name}> is defined twice")));
            }
            open = Some(Block { kind: kind.to_string(), name, line: n, directives: Vec::new() });
        } else {
            let mut words = line.split_whitespace().map(str::to_string);
            let key = words.next().unwrap_or_default();
            let entry = (n, key, words.collect());
            match &mut open {
                Some(b) => b.directives.push(entry),
                None => top.push(entry),
            }
        }
    }
    if let Some(b) = open {
        return Err(err(b.line, format!("<{} {}> is not closed", b.kind, b.name)));
    }

    let mut suite = Suite { port: 18080, warmup: Duration::from_secs(2), threads: 1, baseline: String::new(), servers: Vec::new(), scenarios: Vec::new() };
    let mut duration = Duration::from_secs(5);
    for (n, key, args) in &top {
        let one = one_arg(key, args).map_err(|m| err(*n, m))?;
        match key.to_ascii_lowercase().as_str() {
            "port" => suite.port = one.parse().ok().filter(|p| *p > 0).ok_or_else(|| err(*n, format!("Port: '{one}' is not a port")))?,
            "warmup" => suite.warmup = parse_duration(one).map_err(|m| err(*n, format!("Warmup: {m}")))?,
            "duration" => duration = parse_duration(one).map_err(|m| err(*n, format!("Duration: {m}")))?,
            "threads" => suite.threads = positive(key, one).map_err(|m| err(*n, m))?,
            "baseline" => suite.baseline = one.to_string(),
            _ => return Err(err(*n, format!("unknown directive '{key}' (Port, Warmup, Duration, Threads, Baseline, <Server>, <Scenario>)"))),
        }
    }
    for b in &blocks {
        if b.kind.eq_ignore_ascii_case("Server") {
            suite.servers.push(server(b).map_err(|(l, m)| err(l, m))?);
        } else {
            suite.scenarios.push(scenario(b, duration).map_err(|(l, m)| err(l, m))?);
        }
    }
    if suite.servers.is_empty() || suite.scenarios.is_empty() {
        return Err(err(text.lines().count().max(1), "a suite needs at least one <Server> and one <Scenario>".into()));
    }
    if suite.baseline.is_empty() {
        suite.baseline = suite.servers[0].name.clone();
    } else if !suite.servers.iter().any(|s| s.name == suite.baseline) {
        let n = top.iter().find(|(_, k, _)| k.eq_ignore_ascii_case("baseline")).map_or(1, |(n, _, _)| *n);
        return Err(err(n, format!("Baseline: no <Server {}>", suite.baseline)));
    }
    Ok(suite)
}

fn one_arg<'a>(key: &str, args: &'a [String]) -> Result<&'a str, String> {
    match args {
        [one] => Ok(one),
        _ => Err(format!("{key} takes one value")),
    }
}

fn positive(key: &str, v: &str) -> Result<usize, String> {
    v.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| format!("{key}: '{v}' is not a positive number"))
}

fn on_off(key: &str, v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("{key}: '{v}' is not On or Off")),
    }
}

fn server(b: &Block) -> Result<ServerSpec, (usize, String)> {
    let (mut software, mut mpm, mut php, mut compress) = (None, None, Php::Fpm, false);
    for (n, key, args) in &b.directives {
        let one = one_arg(key, args).map_err(|m| (*n, m))?;
        match key.to_ascii_lowercase().as_str() {
            "software" => software = Some((*n, one.to_ascii_lowercase())),
            "mpm" => {
                let m = Mpm::from_name(&one.to_ascii_lowercase()).ok_or_else(|| (*n, format!("MPM: '{one}' is not event, worker or prefork")))?;
                mpm = Some((*n, m));
            }
            "php" => {
                php = match one.to_ascii_lowercase().as_str() {
                    "fpm" => Php::Fpm,
                    "pool" => Php::Pool,
                    _ => return Err((*n, format!("PHP: '{one}' is not fpm or pool"))),
                }
            }
            "compression" => compress = on_off(key, one).map_err(|m| (*n, m))?,
            _ => return Err((*n, format!("unknown directive '{key}' in <Server> (Software, MPM, PHP, Compression)"))),
        }
    }
    let (n, software) = software.ok_or((b.line, format!("<Server {}> needs Software warren|nginx|apache", b.name)))?;
    let software = match (software.as_str(), mpm) {
        ("warren", m) => Software::Warren(m.map_or(Mpm::Event, |m| m.1)),
        ("apache", m) => Software::Apache(m.map_or(Mpm::Event, |m| m.1)),
        ("nginx", None) => Software::Nginx,
        ("nginx", Some((line, _))) => return Err((line, "nginx has no MPM".into())),
        (other, _) => return Err((n, format!("Software: '{other}' is not warren, nginx or apache"))),
    };
    if php == Php::Pool && !matches!(software, Software::Warren(_)) {
        return Err((b.line, format!("<Server {}>: only warren has a built-in pool (PHP pool)", b.name)));
    }
    Ok(ServerSpec { name: b.name.clone(), software, php, compress })
}

fn scenario(b: &Block, default_duration: Duration) -> Result<Scenario, (usize, String)> {
    let mut paths = Vec::new();
    let (mut page, mut idle, mut samples) = (None, None, 5);
    let (mut concurrency, mut requests, mut duration, mut keep_alive, mut ramp, mut rate) = (10, None, None, false, None, None);
    let (mut repeat, mut timeout) = (1, Duration::from_secs(30));
    let mut headers = Vec::new();
    for (n, key, args) in &b.directives {
        if key.eq_ignore_ascii_case("header") {
            let line = args.join(" ");
            if !line.contains(':') {
                return Err((*n, format!("Header: '{line}' is not Name: value")));
            }
            headers.push(line);
            continue;
        }
        let one = one_arg(key, args).map_err(|m| (*n, m))?;
        match key.to_ascii_lowercase().as_str() {
            "url" => paths.push(at(*n, path(key, one))?),
            "page" => page = Some(at(*n, path(key, one))?),
            "idle" => idle = Some(at(*n, positive(key, one))?),
            "samples" => samples = at(*n, positive(key, one))?,
            "concurrency" => concurrency = at(*n, positive(key, one))?,
            "requests" => requests = Some(at(*n, positive(key, one))? as u64),
            "duration" => duration = Some(at(*n, parse_duration(one).map_err(|m| format!("Duration: {m}")))?),
            "keepalive" => keep_alive = at(*n, on_off(key, one))?,
            "ramp" => ramp = Some(at(*n, parse_ramp(one).map_err(|m| format!("Ramp: {m}")))?),
            "rate" => rate = Some(at(*n, one.parse::<f64>().ok().filter(|r| *r > 0.0).ok_or(format!("Rate: '{one}' is not a positive number")))?),
            "repeat" => repeat = at(*n, positive(key, one))?,
            "timeout" => timeout = at(*n, parse_duration(one).map_err(|m| format!("Timeout: {m}")))?,
            _ => {
                return Err((
                    *n,
                    format!("unknown directive '{key}' in <Scenario> (URL, Page, Idle, Samples, Concurrency, Requests, Duration, KeepAlive, Ramp, Rate, Repeat, Timeout, Header)"),
                ))
            }
        }
    }
    let load = match (idle, page, paths.len()) {
        (Some(connections), None, 1) => Load::Idle { connections, path: paths.remove(0), samples },
        (Some(_), _, _) => return Err((b.line, format!("<Scenario {}>: Idle takes exactly one URL and no Page", b.name))),
        (None, Some(_), n) if n > 0 => return Err((b.line, format!("<Scenario {}>: URL or Page, not both", b.name))),
        (None, None, 0) => return Err((b.line, format!("<Scenario {}> needs a URL or a Page", b.name))),
        (None, page, _) => {
            let urls = page.map_or(Urls::Paths(paths), Urls::Page);
            let duration = ramp.map(|r: (usize, usize, Duration)| r.2).or(duration).or(if requests.is_some() { None } else { Some(default_duration) });
            Load::Requests { urls, concurrency: ramp.map_or(concurrency, |r| r.1), requests, duration, keep_alive, ramp, rate }
        }
    };
    Ok(Scenario { name: b.name.clone(), load, repeat, timeout, headers })
}

/// A directive's error, at its line.
fn at<T>(line: usize, r: Result<T, String>) -> Result<T, (usize, String)> {
    r.map_err(|m| (line, m))
}

fn path(key: &str, v: &str) -> Result<String, String> {
    if v.starts_with('/') {
        Ok(v.to_string())
    } else {
        Err(format!("{key}: '{v}' is not a path on the server (/...)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUITE: &str = "Port 18090   # loopback\nDuration 3s\nBaseline nginx\n\
        <Server warren-prefork>\n Software warren\n MPM prefork\n PHP pool\n</Server>\n\
        <Server nginx>\n Software nginx\n</Server>\n\
        <Scenario static-ka>\n URL /index.html\n Concurrency 50\n KeepAlive On\n</Scenario>\n\
        <Scenario php-1000>\n URL /hello.php\n Concurrency 1000\n Requests 5000\n Repeat 3\n</Scenario>\n\
        <Scenario page-240>\n Page /page-240.html\n Concurrency 30\n KeepAlive on\n</Scenario>\n\
        <Scenario idle-1000>\n Idle 1000\n URL /index.html\n</Scenario>\n\
        <Scenario ramp>\n URL /hello.php\n Ramp 1-150:60\n</Scenario>\n";

    #[test]
    fn a_suite_and_its_defaults() {
        let s = parse(SUITE, "t.suite").unwrap();
        assert_eq!((s.port, s.threads, s.baseline.as_str()), (18090, 1, "nginx"));
        assert_eq!(s.servers[0], ServerSpec { name: "warren-prefork".into(), software: Software::Warren(Mpm::Prefork), php: Php::Pool, compress: false });
        assert_eq!(s.servers[1].software, Software::Nginx);
        let load = |i: usize| s.scenarios[i].load.clone();
        assert_eq!(
            load(0),
            Load::Requests { urls: Urls::Paths(vec!["/index.html".into()]), concurrency: 50, requests: None, duration: Some(Duration::from_secs(3)), keep_alive: true, ramp: None, rate: None }
        );
        assert!(matches!(load(1), Load::Requests { requests: Some(5000), duration: None, keep_alive: false, .. }));
        assert_eq!(s.scenarios[1].repeat, 3);
        assert!(matches!(load(2), Load::Requests { urls: Urls::Page(_), concurrency: 30, .. }));
        assert_eq!(load(3), Load::Idle { connections: 1000, path: "/index.html".into(), samples: 5 });
        assert!(matches!(load(4), Load::Requests { concurrency: 150, duration: Some(d), ramp: Some((1, 150, _)), .. } if d == Duration::from_secs(60)));
    }

    #[test]
    fn compression_and_request_headers() {
        let s = parse("<Server n>\nSoftware nginx\nCompression On\n</Server>\n<Scenario s>\nURL /style.css\nHeader Accept-Encoding: gzip, br\n</Scenario>\n", "t.suite").unwrap();
        assert!(s.servers[0].compress);
        assert_eq!(s.scenarios[0].headers, ["Accept-Encoding: gzip, br"]);
        let e = parse("<Server n>\nSoftware nginx\n</Server>\n<Scenario s>\nURL /\nHeader nonsense\n</Scenario>\n", "t.suite").unwrap_err();
        assert_eq!(e.to_string(), "t.suite:6: Header: 'nonsense' is not Name: value");
    }

    #[test]
    fn mistakes_name_file_and_line() {
        let bad = |text: &str| parse(text, "t.suite").unwrap_err().to_string();
        let ok_tail = "<Server w>\nSoftware warren\n</Server>\n<Scenario s>\nURL /\n</Scenario>\n";
        assert_eq!(bad(&format!("Port x\n{ok_tail}")), "t.suite:1: Port: 'x' is not a port");
        assert_eq!(bad(&format!("Speed 11\n{ok_tail}")).split(" (").next().unwrap(), "t.suite:1: unknown directive 'Speed'");
        assert_eq!(bad("<Server n>\nSoftware nginx\nMPM event\n</Server>\n"), "t.suite:3: nginx has no MPM");
        assert_eq!(bad("<Server a>\nSoftware apache\nPHP pool\n</Server>\n"), "t.suite:1: <Server a>: only warren has a built-in pool (PHP pool)");
        assert_eq!(bad("<Server a>\nSoftware warren\n"), "t.suite:1: <Server a> is not closed");
        assert_eq!(bad("<Scenario s>\nURL index.html\n</Scenario>\n"), "t.suite:2: URL: 'index.html' is not a path on the server (/...)");
        assert_eq!(bad("<Scenario s>\nKeepAlive yes\n</Scenario>\n"), "t.suite:2: KeepAlive: 'yes' is not On or Off");
        assert_eq!(bad("<Scenario s>\nConcurrency 5\n</Scenario>\n"), "t.suite:1: <Scenario s> needs a URL or a Page");
        assert_eq!(bad(&format!("{ok_tail}<Server w>\nSoftware nginx\n</Server>\n")), "t.suite:7: <Server w> is defined twice");
        assert_eq!(bad(&format!("Baseline x\n{ok_tail}")), "t.suite:1: Baseline: no <Server x>");
        assert_eq!(bad("<Scenario s>\n</Server>\n"), "t.suite:2: </Server> closes <Scenario> of line 1");
        assert_eq!(bad("Port 1\n"), "t.suite:1: a suite needs at least one <Server> and one <Scenario>");
    }
}
