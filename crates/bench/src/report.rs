//! The report of a suite run, in a directory: `report.md` (tables),
//! `report.html` (the same tables and the charts inline), each chart as
//! its own SVG file (`throughput.svg`, `latency.svg`, `memory.svg`,
//! `ramp.svg`) for a README to show, `results.json` with every figure, and
//! `json/SERVER--SCENARIO.json` as `warren bench --json` prints them.
//!
//! Tables are built once as [`Table`]s and written both ways; charts are
//! plain SVG drawn here (bars per server in one panel per scenario; lines
//! per server over time for the ramp).

use std::fmt::Write as _;
use std::path::Path;

use crate::runner::{Figures, Results};
use crate::suite::Load;

struct Table {
    title: String,
    note: String,
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn markdown(&self) -> String {
        let mut s = format!("## {}\n\n{}\n\n| {} |\n|{}\n", self.title, self.note, self.header.join(" | "), " --- |".repeat(self.header.len()));
        for r in &self.rows {
            let _ = writeln!(s, "| {} |", r.join(" | "));
        }
        s.push('\n');
        s
    }

    fn html(&self) -> String {
        let mut s = format!("<h2>{}</h2>\n<p>{}</p>\n<table>\n<tr>", esc(&self.title), esc(&self.note));
        for h in &self.header {
            let _ = write!(s, "<th>{}</th>", esc(h));
        }
        s.push_str("</tr>\n");
        for r in &self.rows {
            s.push_str("<tr>");
            for (i, c) in r.iter().enumerate() {
                let _ = write!(s, "<{t}>{}</{t}>", esc(c), t = if i == 0 { "th" } else { "td" });
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</table>\n");
        s
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// 141230.4 -> "141,230"
fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn is_idle(r: &Results, scenario: &str) -> bool {
    r.suite.scenarios.iter().any(|s| s.name == scenario && matches!(s.load, Load::Idle { .. }))
}

/// Scenarios with request loads, and idle ones.
fn scenario_names(r: &Results, idle: bool) -> Vec<String> {
    r.suite.scenarios.iter().filter(|s| is_idle(r, &s.name) == idle).map(|s| s.name.clone()).collect()
}

fn servers(r: &Results) -> Vec<String> {
    r.suite.servers.iter().map(|s| s.name.clone()).collect()
}

/// A table with a row per scenario and a column per server.
fn grid(r: &Results, title: &str, note: &str, scenarios: &[String], cell: impl Fn(&Figures, Option<&Figures>) -> String) -> Table {
    let mut header = vec!["scenario".to_string()];
    header.extend(servers(r));
    let rows = scenarios
        .iter()
        .map(|sc| {
            let base = r.get(&r.suite.baseline, sc);
            let mut row = vec![sc.clone()];
            for s in servers(r) {
                row.push(match r.outcomes.iter().find(|o| o.server == s && &o.scenario == sc).map(|o| &o.result) {
                    Some(Ok(f)) => cell(f, base),
                    Some(Err(_)) | None => "-".into(),
                });
            }
            row
        })
        .collect();
    Table { title: title.into(), note: note.into(), header, rows }
}

fn tables(r: &Results) -> Vec<Table> {
    let load = scenario_names(r, false);
    let idle = scenario_names(r, true);
    let base = &r.suite.baseline;
    let mut out = vec![
        grid(r, "Requests per second", &format!("Transactions per second (higher is better); in brackets, the ratio to {base}."), &load, |f, b| match b {
            Some(b) if b.rate > 0.0 => format!("{} ({:.2}x)", thousands(f.rate), f.rate / b.rate),
            _ => thousands(f.rate),
        }),
        grid(r, "Response times", "Median / 99th percentile in ms (lower is better).", &load, |f, _| format!("{} / {}", ms(f.p50_ms), ms(f.p99_ms))),
        grid(r, "Failures and availability", "Requests without a response (connect, timeout, read, write, malformed) + responses of 400 and above; availability as siege counts it.", &load, |f, _| {
            format!("{} + {} ({:.2} %)", f.failed, f.non_2xx, f.availability)
        }),
        grid(r, "Memory", "Peak PSS in MB during the scenario: the server's processes + its PHP workers (php-fpm's or warren's pool).", &load, |f, _| {
            format!("{} + {}", f.server_mb.map_or("-".into(), |m| format!("{m:.1}")), f.php_mb.map_or("-".into(), |m| format!("{m:.1}")))
        }),
    ];
    if !idle.is_empty() {
        out.push(grid(r, "Idle connections", "Median time of a request on a fresh connection while the idle keep-alive connections are open (ms, lower is better); in brackets, how many were held.", &idle, |f, _| {
            format!("{} ({} held)", f.fresh_ms.map_or("failed".into(), ms), f.held.unwrap_or(0))
        }));
    }
    let skipped: Vec<Vec<String>> = r
        .suite
        .servers
        .iter()
        .filter_map(|s| {
            let errs: Vec<&str> = r.outcomes.iter().filter(|o| o.server == s.name).filter_map(|o| o.result.as_ref().err().map(String::as_str)).collect();
            errs.first().map(|e| vec![s.name.clone(), format!("{} of {} scenarios: {e}", errs.len(), r.suite.scenarios.len())])
        })
        .collect();
    if !skipped.is_empty() {
        out.push(Table { title: "Not measured".into(), note: "Set-ups or scenarios that gave no figures, and why.".into(), header: vec!["server".into(), "why".into()], rows: skipped });
    }
    out
}

const PALETTE: [&str; 8] = ["#1b6ca8", "#e07b22", "#3a9e48", "#c93a3a", "#7d57b3", "#8c5a4a", "#d36bb2", "#6f7a82"];
const FONT: &str = "font-family=\"sans-serif\" font-size=\"12\"";

fn color(r: &Results, server: &str) -> &'static str {
    PALETTE[r.suite.servers.iter().position(|s| s.name == server).unwrap_or(0) % PALETTE.len()]
}

/// A colour mixed half-way to white (an explicit colour rather than
/// fill-opacity, which some SVG renderers ignore).
fn tint(hex: &str) -> String {
    let c = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0) as u32;
    format!("#{:02x}{:02x}{:02x}", (c(1) + 255) / 2, (c(3) + 255) / 2, (c(5) + 255) / 2)
}

/// One horizontal bar per server, in panels of two columns, one panel per
/// scenario; `value` gives a bar's length, an optional inner mark (drawn
/// darker from zero), and its label.
fn bar_chart(r: &Results, title: &str, scenarios: &[String], value: impl Fn(&Figures) -> Option<(f64, Option<f64>, String)>) -> String {
    const W: f64 = 440.0;
    const BAR: f64 = 16.0;
    const LABEL: f64 = 120.0;
    let names = servers(r);
    let panel_h = 28.0 + names.len() as f64 * (BAR + 4.0) + 12.0;
    let rows = scenarios.len().div_ceil(2).max(1);
    let (width, height) = (2.0 * W + 30.0, 36.0 + rows as f64 * panel_h);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" {FONT}>\n");
    let _ = writeln!(s, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/><text x=\"10\" y=\"22\" font-size=\"16\" font-weight=\"bold\">{}</text>", esc(title));
    for (i, sc) in scenarios.iter().enumerate() {
        let (x0, y0) = (10.0 + (i % 2) as f64 * (W + 10.0), 36.0 + (i / 2) as f64 * panel_h);
        let _ = writeln!(s, "<text x=\"{x0}\" y=\"{}\" font-weight=\"bold\">{}</text>", y0 + 16.0, esc(sc));
        let values: Vec<Option<(f64, Option<f64>, String)>> = names.iter().map(|n| r.get(n, sc).and_then(&value)).collect();
        let max = values.iter().flatten().map(|v| v.0).fold(0.0, f64::max);
        for (j, (name, v)) in names.iter().zip(&values).enumerate() {
            let y = y0 + 26.0 + j as f64 * (BAR + 4.0);
            let _ = writeln!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", x0 + LABEL - 6.0, y + 12.0, esc(name));
            let span = W - LABEL - 90.0;
            match v {
                Some((len, inner, label)) => {
                    let w = if max > 0.0 { len / max * span } else { 0.0 };
                    let c = color(r, name);
                    let _ = writeln!(s, "<rect x=\"{}\" y=\"{y}\" width=\"{w:.1}\" height=\"{BAR}\" fill=\"{}\"/>", x0 + LABEL, if inner.is_some() { tint(c) } else { c.to_string() });
                    if let Some(inner) = inner {
                        let iw = if max > 0.0 { inner / max * span } else { 0.0 };
                        let _ = writeln!(s, "<rect x=\"{}\" y=\"{y}\" width=\"{iw:.1}\" height=\"{BAR}\" fill=\"{c}\"/>", x0 + LABEL);
                    }
                    let _ = writeln!(s, "<text x=\"{:.1}\" y=\"{}\">{}</text>", x0 + LABEL + w + 4.0, y + 12.0, esc(label));
                }
                None => {
                    let _ = writeln!(s, "<text x=\"{}\" y=\"{}\" fill=\"#888\">not measured</text>", x0 + LABEL, y + 12.0);
                }
            }
        }
    }
    s.push_str("</svg>\n");
    s
}

/// Lines per server over the seconds of each ramp scenario: responses per
/// second, and the share of attempts that got a response.
fn ramp_chart(r: &Results) -> Option<String> {
    let ramps: Vec<String> = r.suite.scenarios.iter().filter(|s| matches!(s.load, Load::Requests { ramp: Some(_), .. })).map(|s| s.name.clone()).collect();
    if ramps.is_empty() {
        return None;
    }
    const W: f64 = 440.0;
    const H: f64 = 220.0;
    let names = servers(r);
    let (width, height) = (2.0 * W + 30.0, 36.0 + ramps.len() as f64 * (H + 40.0) + 20.0 + 18.0 * names.len().div_ceil(4) as f64);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" {FONT}>\n");
    s.push_str("<rect width=\"100%\" height=\"100%\" fill=\"white\"/><text x=\"10\" y=\"22\" font-size=\"16\" font-weight=\"bold\">Ramp: responses per second and availability, second by second</text>\n");
    for (k, sc) in ramps.iter().enumerate() {
        let y0 = 36.0 + k as f64 * (H + 40.0);
        let series: Vec<(&String, &Vec<crate::stats::Second>)> = names.iter().filter_map(|n| r.get(n, sc).map(|f| (n, &f.series))).collect();
        let secs = series.iter().map(|(_, v)| v.len()).max().unwrap_or(0).max(1);
        let max_rate = series.iter().flat_map(|(_, v)| v.iter().map(|x| x.responses)).max().unwrap_or(0).max(1) as f64;
        for (panel, what) in ["responses/s", "availability %"].iter().enumerate() {
            let x0 = 10.0 + panel as f64 * (W + 10.0);
            let (px, py, pw, ph) = (x0 + 50.0, y0 + 24.0, W - 70.0, H - 50.0);
            let top = if panel == 0 { max_rate } else { 100.0 };
            let _ = writeln!(s, "<text x=\"{x0}\" y=\"{}\" font-weight=\"bold\">{} — {}</text>", y0 + 14.0, esc(sc), what);
            let _ = writeln!(s, "<rect x=\"{px}\" y=\"{py}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#bbb\"/>");
            for t in 0..=4 {
                let v = top * t as f64 / 4.0;
                let y = py + ph - ph * t as f64 / 4.0;
                let _ = writeln!(s, "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#555\">{}</text>", px - 4.0, y + 4.0, thousands(v));
            }
            let _ = writeln!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#555\">seconds (0 - {secs})</text>", px + pw / 2.0, py + ph + 16.0);
            for (name, v) in &series {
                // The last second is cut short by the end of the run.
                let whole = v.len().min(elapsed(r, name, sc) as usize);
                let points: Vec<String> = v[..whole]
                    .iter()
                    .enumerate()
                    .map(|(i, x)| {
                        let value = if panel == 0 {
                            x.responses as f64
                        } else if x.responses + x.errors == 0 {
                            100.0
                        } else {
                            100.0 * x.responses as f64 / (x.responses + x.errors) as f64
                        };
                        format!("{:.1},{:.1}", px + pw * (i as f64 + 0.5) / secs as f64, py + ph - ph * value / top)
                    })
                    .collect();
                let _ = writeln!(s, "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"/>", points.join(" "), color(r, name));
            }
        }
    }
    let ly = 36.0 + ramps.len() as f64 * (H + 40.0);
    for (i, n) in names.iter().enumerate() {
        let (x, y) = (60.0 + (i % 4) as f64 * 210.0, ly + (i / 4) as f64 * 18.0);
        let _ = writeln!(s, "<rect x=\"{x}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>", y, color(r, n), x + 16.0, y + 11.0, esc(n));
    }
    s.push_str("</svg>\n");
    Some(s)
}

fn elapsed(r: &Results, server: &str, scenario: &str) -> f64 {
    r.get(server, scenario).map_or(0.0, |f| f.elapsed)
}

/// The charts, by file name.
fn charts(r: &Results) -> Vec<(&'static str, String)> {
    let load = scenario_names(r, false);
    let mut out = vec![
        ("throughput.svg", bar_chart(r, "Requests per second (higher is better)", &load, |f| Some((f.rate, None, thousands(f.rate))))),
        ("latency.svg", bar_chart(r, "Response time, ms: p50 (dark) and p99 (lower is better)", &load, |f| Some((f.p99_ms, Some(f.p50_ms), format!("{} / {}", ms(f.p50_ms), ms(f.p99_ms)))))),
        (
            "memory.svg",
            bar_chart(r, "Peak memory, MB PSS: server (dark) + PHP workers (lower is better)", &load, |f| {
                let server = f.server_mb?;
                let php = f.php_mb.unwrap_or(0.0);
                Some((server + php, Some(server), format!("{server:.1} + {php:.1}")))
            }),
        ),
    ];
    let idle = scenario_names(r, true);
    if !idle.is_empty() {
        out.push(("idle.svg", bar_chart(r, "Fresh request with idle keep-alive connections open, ms (lower is better)", &idle, |f| f.fresh_ms.map(|m| (m, None, ms(m))))));
    }
    if let Some(ramp) = ramp_chart(r) {
        out.push(("ramp.svg", ramp));
    }
    out
}

fn header_lines(r: &Results) -> Vec<String> {
    let mut lines = vec![format!(
        "{} server set-ups, one at a time on 127.0.0.1:{}, {} client thread(s), {} s warm-up; {} CPUs.",
        r.suite.servers.len(),
        r.suite.port,
        r.suite.threads,
        r.suite.warmup.as_secs_f64(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    )];
    for (name, v) in &r.versions {
        lines.push(format!("{name}: {v}"));
    }
    lines
}

/// Writes the report into `dir` (made if missing).
pub fn write(r: &Results, dir: &Path, title: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("json"))?;
    let tables = tables(r);
    let charts = charts(r);
    let mut md = format!("# {}\n\n", title);
    for l in header_lines(r) {
        let _ = writeln!(md, "- {l}");
    }
    md.push('\n');
    for (file, _) in &charts {
        let _ = writeln!(md, "![{file}]({file})\n");
    }
    for t in &tables {
        md.push_str(&t.markdown());
    }
    std::fs::write(dir.join("report.md"), md)?;

    let mut html = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title>\n<style>body{{font-family:sans-serif;max-width:960px;margin:2em auto}}\
         table{{border-collapse:collapse;margin-bottom:1em}}th,td{{border:1px solid #ccc;padding:3px 8px;text-align:right}}tr th:first-child{{text-align:left}}</style>\n\
         </head><body>\n<h1>{t}</h1>\n<ul>\n",
        t = esc(title)
    );
    for l in header_lines(r) {
        let _ = writeln!(html, "<li>{}</li>", esc(&l));
    }
    html.push_str("</ul>\n");
    for (_, svg) in &charts {
        let _ = writeln!(html, "<figure>{svg}</figure>");
    }
    for t in &tables {
        html.push_str(&t.html());
    }
    html.push_str("</body></html>\n");
    std::fs::write(dir.join("report.html"), html)?;
    for (file, svg) in &charts {
        std::fs::write(dir.join(file), svg)?;
    }

    let mut all = Vec::new();
    for o in &r.outcomes {
        let v = match &o.result {
            Ok(f) => {
                let name = format!("{}--{}.json", o.server, o.scenario).replace('/', "_");
                std::fs::write(dir.join("json").join(name), serde_json::to_string_pretty(&f.json).unwrap_or_default())?;
                let mut v = f.json.clone();
                v["runs_transaction_rate"] = serde_json::json!(o.rates);
                v
            }
            Err(e) => serde_json::json!({ "server": o.server, "scenario": o.scenario, "error": e }),
        };
        all.push(v);
    }
    let versions: serde_json::Map<String, serde_json::Value> = r.versions.iter().map(|(k, v)| (k.clone(), v.clone().into())).collect();
    let results = serde_json::json!({ "title": title, "baseline": r.suite.baseline, "versions": versions, "results": all });
    std::fs::write(dir.join("results.json"), serde_json::to_string_pretty(&results).unwrap_or_default())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(thousands(141230.4), "141,230");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!((ms(0.314), ms(12.34), ms(461.2)), ("0.31".to_string(), "12.3".to_string(), "461".to_string()));
        assert_eq!(tint("#1b6ca8"), "#8db5d3");
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
