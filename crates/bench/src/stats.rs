//! What a run measured: response times (an HDR histogram in microseconds),
//! outcomes by class, bytes, and a per-second series. Each client thread
//! keeps its own [`Stats`]; they are merged at the end.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

/// Why a request got no response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorClass {
    Connect,
    Timeout,
    Read,
    Write,
    /// The response could not be parsed.
    Malformed,
    /// The TLS handshake failed, or a TLS record was bad.
    Tls,
}

impl ErrorClass {
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Read => "read",
            ErrorClass::Write => "write",
            ErrorClass::Malformed => "malformed",
            ErrorClass::Tls => "tls",
        }
    }
}

/// One second of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Second {
    pub responses: u64,
    pub errors: u64,
}

pub struct Stats {
    /// Response times of every response, in microseconds.
    pub times: Histogram<u64>,
    pub statuses: BTreeMap<u16, u64>,
    pub errors: BTreeMap<ErrorClass, u64>,
    /// Body bytes received.
    pub bytes: u64,
    pub series: Vec<Second>,
    /// TLS handshakes (https:// targets): their times in microseconds, from
    /// the TCP connection's establishment to the handshake's end...
    pub handshakes: Histogram<u64>,
    /// ...and how many were full and how many resumed a session.
    pub full_handshakes: u64,
    pub resumed_handshakes: u64,
    /// Why the first TLS failure happened (a handshake refused, a bad record).
    pub tls_error: Option<String>,
}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            times: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds"),
            statuses: BTreeMap::new(),
            errors: BTreeMap::new(),
            bytes: 0,
            series: Vec::new(),
            handshakes: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds"),
            full_handshakes: 0,
            resumed_handshakes: 0,
            tls_error: None,
        }
    }
}

impl Stats {
    fn second(&mut self, at: Duration) -> &mut Second {
        let i = at.as_secs() as usize;
        if self.series.len() <= i {
            self.series.resize(i + 1, Second::default());
        }
        &mut self.series[i]
    }

    /// A response with `status` and `bytes` of body took `took`, ending `at` into the run.
    pub fn response(&mut self, status: u16, bytes: u64, took: Duration, at: Duration) {
        let _ = self.times.record((took.as_micros() as u64).max(1));
        *self.statuses.entry(status).or_default() += 1;
        self.bytes += bytes;
        self.second(at).responses += 1;
    }

    /// A TLS handshake took `took`; `resumed` if it resumed a session.
    pub fn handshake(&mut self, took: Duration, resumed: bool) {
        let _ = self.handshakes.record((took.as_micros() as u64).max(1));
        if resumed {
            self.resumed_handshakes += 1;
        } else {
            self.full_handshakes += 1;
        }
    }

    /// The handshake time under which `p` percent of handshakes ended, in ms.
    pub fn handshake_ms(&self, p: f64) -> f64 {
        if self.handshakes.is_empty() {
            return 0.0;
        }
        self.handshakes.value_at_quantile(p / 100.0) as f64 / 1000.0
    }

    pub fn error(&mut self, class: ErrorClass, at: Duration) {
        *self.errors.entry(class).or_default() += 1;
        self.second(at).errors += 1;
    }

    pub fn merge(&mut self, other: &Stats) {
        let _ = self.times.add(&other.times);
        for (s, n) in &other.statuses {
            *self.statuses.entry(*s).or_default() += n;
        }
        for (e, n) in &other.errors {
            *self.errors.entry(*e).or_default() += n;
        }
        self.bytes += other.bytes;
        let _ = self.handshakes.add(&other.handshakes);
        self.full_handshakes += other.full_handshakes;
        self.resumed_handshakes += other.resumed_handshakes;
        if self.tls_error.is_none() {
            self.tls_error.clone_from(&other.tls_error);
        }
        if self.series.len() < other.series.len() {
            self.series.resize(other.series.len(), Second::default());
        }
        for (i, s) in other.series.iter().enumerate() {
            self.series[i].responses += s.responses;
            self.series[i].errors += s.errors;
        }
    }

    pub fn responses(&self) -> u64 {
        self.statuses.values().sum()
    }

    pub fn failed(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Responses with a status below 400, as siege counts them.
    pub fn successful(&self) -> u64 {
        self.statuses.iter().filter(|(s, _)| **s < 400).map(|(_, n)| n).sum()
    }

    /// The response time under which `p` percent of responses came, in ms.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        if self.times.is_empty() {
            return 0.0;
        }
        self.times.value_at_quantile(p / 100.0) as f64 / 1000.0
    }
}

/// The figures of a run, in siege's and ab's terms.
pub struct Summary<'a> {
    pub stats: &'a Stats,
    pub elapsed: Duration,
    /// The server's memory, when it was watched.
    pub memory: Option<crate::memory::Memory>,
}

/// ab's percentile table.
pub const PERCENTILES: [f64; 9] = [50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 100.0];
/// Those of the TLS handshake times.
pub const HANDSHAKE_PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 100.0];

impl Summary<'_> {
    pub fn transactions(&self) -> u64 {
        self.stats.responses()
    }
    /// Responses among all attempts, in percent (siege's Availability).
    pub fn availability(&self) -> f64 {
        let all = self.stats.responses() + self.stats.failed();
        if all == 0 {
            0.0
        } else {
            100.0 * self.stats.responses() as f64 / all as f64
        }
    }
    pub fn elapsed_secs(&self) -> f64 {
        self.elapsed.as_secs_f64()
    }
    pub fn data_mb(&self) -> f64 {
        self.stats.bytes as f64 / (1024.0 * 1024.0)
    }
    /// Mean response time in seconds.
    pub fn response_time(&self) -> f64 {
        self.stats.times.mean() / 1_000_000.0
    }
    pub fn transaction_rate(&self) -> f64 {
        self.transactions() as f64 / self.elapsed_secs().max(1e-9)
    }
    pub fn throughput_mb(&self) -> f64 {
        self.data_mb() / self.elapsed_secs().max(1e-9)
    }
    /// Mean number of requests in flight: total response time over elapsed time.
    pub fn concurrency(&self) -> f64 {
        self.stats.times.mean() * self.transactions() as f64 / 1_000_000.0 / self.elapsed_secs().max(1e-9)
    }
    pub fn longest(&self) -> f64 {
        if self.stats.times.is_empty() { 0.0 } else { self.stats.times.max() as f64 / 1_000_000.0 }
    }
    /// TLS handshakes per second.
    pub fn handshake_rate(&self) -> f64 {
        self.stats.handshakes.len() as f64 / self.elapsed_secs().max(1e-9)
    }
    pub fn shortest(&self) -> f64 {
        if self.stats.times.is_empty() { 0.0 } else { self.stats.times.min() as f64 / 1_000_000.0 }
    }

    /// siege's report, ab's percentile table, errors by class, the series.
    pub fn text(&self) -> String {
        let s = self.stats;
        let mut out = String::new();
        let mut line = |k: &str, v: String| out.push_str(&format!("{:<25}{v:>12}\n", format!("{k}:")));
        line("Transactions", format!("{} hits", self.transactions()));
        line("Availability", format!("{:.2} %", self.availability()));
        line("Elapsed time", format!("{:.2} secs", self.elapsed_secs()));
        line("Data transferred", format!("{:.2} MB", self.data_mb()));
        line("Response time", format!("{:.4} secs", self.response_time()));
        line("Transaction rate", format!("{:.2} trans/sec", self.transaction_rate()));
        line("Throughput", format!("{:.2} MB/sec", self.throughput_mb()));
        line("Concurrency", format!("{:.2}", self.concurrency()));
        line("Successful transactions", s.successful().to_string());
        line("Failed transactions", s.failed().to_string());
        line("Longest transaction", format!("{:.4}", self.longest()));
        line("Shortest transaction", format!("{:.4}", self.shortest()));
        if let Some(m) = &self.memory {
            let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
            line("Server memory (peak)", format!("{:.1} MB", mb(m.peak)));
            line("Server memory (mean)", format!("{:.1} MB", mb(m.mean)));
        }
        out.push_str("\nPercentage of the requests served within a certain time (ms)\n");
        for p in PERCENTILES {
            out.push_str(&format!("  {:>3}%  {:>10.2}{}\n", p as u32, self.stats.percentile_ms(p), if p == 100.0 { " (longest request)" } else { "" }));
        }
        if !s.handshakes.is_empty() {
            out.push_str(&format!(
                "\nTLS handshakes: {} ({} full, {} resumed), {:.2} per sec\nHandshake time (ms, TCP established to handshake done)\n",
                s.handshakes.len(),
                s.full_handshakes,
                s.resumed_handshakes,
                self.handshake_rate()
            ));
            for p in HANDSHAKE_PERCENTILES {
                out.push_str(&format!("  {:>3}%  {:>10.2}\n", p as u32, s.handshake_ms(p)));
            }
        }
        out.push_str("\nErrors:\n");
        for class in [ErrorClass::Connect, ErrorClass::Timeout, ErrorClass::Read, ErrorClass::Write, ErrorClass::Malformed, ErrorClass::Tls] {
            out.push_str(&format!("  {:<10}{:>10}\n", class.name(), s.errors.get(&class).copied().unwrap_or(0)));
        }
        for (status, n) in s.statuses.iter().filter(|(st, _)| !(200..300).contains(*st)) {
            out.push_str(&format!("  non-2xx {status}{n:>10}\n"));
        }
        if let Some(why) = &s.tls_error {
            out.push_str(&format!("  first TLS error: {why}\n"));
        }
        out.push_str("\nPer second (responses/errors): ");
        let series: Vec<String> = s.series.iter().map(|x| format!("{}/{}", x.responses, x.errors)).collect();
        out.push_str(&series.join(" "));
        out.push('\n');
        out
    }

    pub fn json(&self) -> serde_json::Value {
        let s = self.stats;
        let percentiles: serde_json::Map<String, serde_json::Value> =
            PERCENTILES.iter().map(|p| (format!("{}", *p as u32), serde_json::json!(s.percentile_ms(*p)))).collect();
        let mut errors: serde_json::Map<String, serde_json::Value> =
            s.errors.iter().map(|(c, n)| (c.name().to_string(), serde_json::json!(n))).collect();
        let non2xx: serde_json::Map<String, serde_json::Value> =
            s.statuses.iter().filter(|(st, _)| !(200..300).contains(*st)).map(|(st, n)| (st.to_string(), serde_json::json!(n))).collect();
        errors.insert("non_2xx".into(), serde_json::Value::Object(non2xx));
        let memory = self.memory.as_ref().map(|m| {
            let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
            serde_json::json!({"peak_mb": mb(m.peak), "mean_mb": mb(m.mean), "samples": m.samples})
        });
        let tls = (!s.handshakes.is_empty()).then(|| {
            let ms: serde_json::Map<String, serde_json::Value> =
                HANDSHAKE_PERCENTILES.iter().map(|p| (format!("{}", *p as u32), serde_json::json!(s.handshake_ms(*p)))).collect();
            serde_json::json!({"handshakes": s.handshakes.len(), "full": s.full_handshakes, "resumed": s.resumed_handshakes, "handshake_rate": self.handshake_rate(), "handshake_ms": ms})
        });
        serde_json::json!({
            "tls": tls,
            "tls_error": s.tls_error,
            "server_memory": memory,
            "transactions": self.transactions(),
            "availability": self.availability(),
            "elapsed_time": self.elapsed_secs(),
            "data_transferred": self.data_mb(),
            "response_time": self.response_time(),
            "transaction_rate": self.transaction_rate(),
            "throughput": self.throughput_mb(),
            "concurrency": self.concurrency(),
            "successful_transactions": s.successful(),
            "failed_transactions": s.failed(),
            "longest_transaction": self.longest(),
            "shortest_transaction": self.shortest(),
            "percentiles_ms": percentiles,
            "errors": errors,
            "series": s.series.iter().map(|x| serde_json::json!({"responses": x.responses, "errors": x.errors})).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn siege_figures_and_percentiles() {
        let mut a = Stats::default();
        let mut b = Stats::default();
        for i in 1..=100u64 {
            let s = if i % 2 == 0 { &mut a } else { &mut b };
            s.response(if i <= 90 { 200 } else { 500 }, 1000, Duration::from_millis(i), Duration::from_millis(i * 10));
        }
        b.error(ErrorClass::Timeout, Duration::from_millis(1500));
        a.merge(&b);
        let sum = Summary { stats: &a, elapsed: Duration::from_secs(2), memory: None };
        assert_eq!((sum.transactions(), a.successful(), a.failed()), (100, 90, 1));
        assert!((sum.availability() - 100.0 * 100.0 / 101.0).abs() < 1e-9);
        assert!((a.percentile_ms(50.0) - 50.0).abs() < 0.1, "{}", a.percentile_ms(50.0));
        assert!((a.percentile_ms(99.0) - 99.0).abs() < 0.1);
        assert!((a.percentile_ms(100.0) - 100.0).abs() < 0.1);
        assert!((sum.transaction_rate() - 50.0).abs() < 1e-9);
        // Mean 50.5 ms x 100 responses over 2 s: 2.525 in flight on average.
        assert!((sum.concurrency() - 2.525).abs() < 0.01, "{}", sum.concurrency());
        assert_eq!(a.series[0], Second { responses: 99, errors: 0 });
        assert_eq!(a.series[1], Second { responses: 1, errors: 1 });
        let j = sum.json();
        assert_eq!(j["failed_transactions"], 1);
        assert_eq!(j["errors"]["timeout"], 1);
        assert_eq!(j["errors"]["non_2xx"]["500"], 10);
        assert!(sum.text().contains("Transactions:                100 hits"), "{}", sum.text());
        assert!(j["tls"].is_null() && !sum.text().contains("TLS"));
    }

    #[test]
    fn handshake_figures() {
        let (mut a, mut b) = (Stats::default(), Stats::default());
        for i in 1..=100u64 {
            let s = if i % 2 == 0 { &mut a } else { &mut b };
            // 1..=100 ms; the first 10 full, the rest resumed.
            s.handshake(Duration::from_millis(i), i > 10);
        }
        a.merge(&b);
        assert_eq!((a.handshakes.len(), a.full_handshakes, a.resumed_handshakes), (100, 10, 90));
        assert!((a.handshake_ms(50.0) - 50.0).abs() < 0.1, "{}", a.handshake_ms(50.0));
        assert!((a.handshake_ms(90.0) - 90.0).abs() < 0.1);
        assert!((a.handshake_ms(99.0) - 99.0).abs() < 0.1);
        let sum = Summary { stats: &a, elapsed: Duration::from_secs(4), memory: None };
        assert!((sum.handshake_rate() - 25.0).abs() < 1e-9);
        let j = sum.json();
        assert_eq!((j["tls"]["handshakes"].as_u64(), j["tls"]["full"].as_u64(), j["tls"]["resumed"].as_u64()), (Some(100), Some(10), Some(90)));
        assert!((j["tls"]["handshake_rate"].as_f64().unwrap() - 25.0).abs() < 1e-9);
        assert!((j["tls"]["handshake_ms"]["99"].as_f64().unwrap() - 99.0).abs() < 0.1);
        let text = sum.text();
        assert!(text.contains("TLS handshakes: 100 (10 full, 90 resumed), 25.00 per sec"), "{text}");
    }
}
