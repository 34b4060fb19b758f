//! mod_proxy_hcheck: the members with `hcmethod=` checked every
//! `hcinterval` by one child, never by each: every child starts a checker
//! thread with its first balanced request, and only the one holding the
//! lease in the shared state checks (another takes the lease over when the
//! holder has been silent for a few ticks, as when it exited). Results go
//! to the shared state, so every child skips a failed member within
//! hcinterval. A check is a connect (TCP), or a request (`OPTIONS`,
//! `HEAD`, `GET` of the member's URL with hcuri) whose answer must be 2xx
//! or 3xx, or satisfy its `hcexpr` (a ProxyHCExpr over
//! `%{REQUEST_STATUS}` and `resp('Field')`); `hcfails` failures in a row take a member out, `hcpasses`
//! passes bring it back (and end a connect error's retry wait).

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use warren_config::balancer::{Balancer, HcMethod, HealthCheck, Member};
use warren_config::LogLevel;

use super::{Balancers, SharedState};
use crate::gateway::stream::BackendStream;
use crate::logs::ErrorLog;

/// How often the checker thread wakes: the finest hcinterval it keeps.
const TICK: Duration = Duration::from_millis(200);
/// A lease holder silent this long has gone.
const STALE_MS: u64 = 3_000;
/// The longest a check waits for a connect, and then for the answer's head.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

impl Balancers {
    /// Starts this child's checker thread, once, if any member is checked.
    pub(crate) fn start_checks(&self, log: &Arc<ErrorLog>) {
        let Some(state) = &self.state else { return };
        if !self.list.iter().any(|b| b.members.iter().any(|m| m.health_check.is_some())) {
            return;
        }
        self.checker.get_or_init(|| {
            let (list, state, checker_log) = (self.list.clone(), state.clone(), log.clone());
            let spawned = std::thread::Builder::new().name("hcheck".into()).spawn(move || check_forever(&list, &state, &checker_log));
            if let Err(e) = spawned {
                log.error(None, &format!("proxy: hcheck: cannot start the health-check thread: {e}"));
            }
        });
    }
}

fn check_forever(list: &[Balancer], state: &SharedState, log: &ErrorLog) {
    let mut due: Vec<Vec<Instant>> = list.iter().map(|b| vec![Instant::now(); b.members.len()]).collect();
    loop {
        if state.checker_lease(STALE_MS) {
            for (b, bal) in list.iter().enumerate() {
                for (m, member) in bal.members.iter().enumerate() {
                    let Some(hc) = &member.health_check else { continue };
                    if Instant::now() < due[b][m] {
                        continue;
                    }
                    due[b][m] = Instant::now() + hc.interval;
                    let passed = check(member, hc);
                    match state.member(b, m).checked(passed.is_ok(), hc.passes, hc.fails) {
                        Some(true) => log.log(LogLevel::Info, None, &format!("proxy: hcheck: balancer://{}: worker {} passed its health check: back in use", bal.name, member.url)),
                        Some(false) => log.error(None, &format!("proxy: hcheck: balancer://{}: worker {} failed its health check ({}): out of use", bal.name, member.url, passed.err().unwrap_or_default())),
                        None => {}
                    }
                    // Renewed between checks, so that slow ones do not lose the lease.
                    state.checker_lease(STALE_MS);
                }
            }
        }
        std::thread::sleep(TICK);
    }
}

/// One check; Err says why it failed.
fn check(member: &Member, hc: &HealthCheck) -> Result<(), String> {
    let timeout = hc.interval.min(CHECK_TIMEOUT);
    let mut stream = BackendStream::connect(&member.target.backend.addr, timeout).map_err(|e| format!("connect: {e}"))?;
    let method = match hc.method {
        HcMethod::Tcp => return Ok(()),
        HcMethod::Options => "OPTIONS",
        HcMethod::Head => "HEAD",
        HcMethod::Get => "GET",
    };
    let origin = member.target.http.as_ref().ok_or("not an http:// member")?;
    let path = format!("{}{}", member.target.path.trim_end_matches('/'), if hc.uri.is_empty() { "/" } else { hc.uri.as_str() });
    let request = format!("{method} {} HTTP/1.0\r\nHost: {}\r\nUser-Agent: warren-hcheck\r\n\r\n", crate::proxy_http::request::encode_path(path.as_bytes()), origin.authority);
    stream.write_all(request.as_bytes()).map_err(|e| format!("sending: {e}"))?;
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    // The time limit is for the whole answer, not each read: a member
    // sending its head a byte at a time would otherwise hold this thread,
    // and so every other member's checks, for as long as it likes.
    let deadline = Instant::now() + timeout;
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("no whole answer head within {} ms", timeout.as_millis()));
        }
        stream.set_timeouts(left).map_err(|e| format!("reading: {e}"))?;
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("reading: {e}")),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.split("\r\n");
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse::<u16>().ok()).ok_or_else(|| "no status line".to_string())?;
    let answer = Answer { status, fields: lines.take_while(|l| !l.is_empty()).filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_string(), v.trim().to_string())).collect() };
    let passed = match &hc.expr {
        Some(e) => e.holds(&answer),
        None => (200..400).contains(&status),
    };
    match (passed, &hc.expr) {
        (true, _) => Ok(()),
        (false, Some(e)) => Err(format!("answered {status}, and hcexpr {} does not hold", e.text)),
        (false, None) => Err(format!("answered {status}")),
    }
}

/// The most of a check's answer read for its head.
const MAX_HEAD: usize = 16 * 1024;

/// A check's answer, as a ProxyHCExpr sees it: `%{REQUEST_STATUS}` and
/// `resp('Field')`.
struct Answer {
    status: u16,
    fields: Vec<(String, String)>,
}

impl warren_config::expr::Facts for Answer {
    fn variable(&self, name: &str) -> Option<String> {
        (name == "REQUEST_STATUS").then(|| self.status.to_string())
    }

    fn request_header(&self, _: &str) -> Option<String> {
        None
    }

    fn response_header(&self, name: &str) -> Option<String> {
        self.fields.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone())
    }

    fn env(&self, _: &str) -> Option<String> {
        None
    }

    fn remote_ip(&self) -> std::net::IpAddr {
        std::net::IpAddr::from([0, 0, 0, 0])
    }
}
