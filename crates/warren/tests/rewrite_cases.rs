//! mod_rewrite against Apache itself: the cases of
//! `crates/rewrite/tests/apache/cases.txt` (rules in a virtual host, the
//! main server, a `<Directory>` or an `.htaccess` file, and one request
//! each) served by warren under each MPM, and its answers compared with
//! what Debian's Apache 2.4 answered to the same cases
//! (`expected.txt`, written by `generate.sh` there): the status, the
//! Location of a redirect, the file a 200 served (each file of the tree
//! holds its own name), its Content-Type, and Vary. A case Apache refuses
//! to start with must make `warren -t` fail too.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::*;

const CASES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../rewrite/tests/apache/cases.txt");
const EXPECTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../rewrite/tests/apache/expected.txt");

/// Cases whose configuration warren refuses on purpose, and why.
const KNOWN_REFUSALS: &[(&str, &str)] = &[
    ("cond-expr", "RewriteCond expr (ap_expr) is refused with file:line: warren has no ap_expr"),
    ("cond-expr-ipmatch", "RewriteCond expr (ap_expr): as above"),
    ("cond-expr-strmatch", "RewriteCond expr (ap_expr): as above"),
    ("flag-cookie", "RewriteRule [CO=] is refused with file:line: warren sets no cookies from rules"),
    ("flag-cookie-on-redirect", "[CO=], as above"),
    ("cond-the-request-escaped-space", "`\\ ` inside an unquoted word: warren's config reader splits words as Apache's ap_getword_conf, not as mod_rewrite's own parser; a quoted argument works"),
];

/// Cases where warren answers otherwise on purpose, and why: not compared.
const KNOWN_DIFFERENCES: &[(&str, &str)] = &[
    ("redir-200", "[R=200]: Apache serves the unmapped URL as a file name; warren answers the status"),
    ("ht-next", "[N] in .htaccess: Apache appends PATH_INFO again on each round, so the rule loops into a 500; warren matches the path once"),
    ("srv-subrequest-rewritten", "DirectoryIndex: Apache runs the rewrite rules on the index sub-request; warren looks the index file up directly"),
    ("ht-index-subrequest", "DirectoryIndex sub-request, as above"),
];

/// Where a case's rules stand.
#[derive(Clone, PartialEq)]
enum Where {
    Server,
    Main,
    Htaccess(String),
    Directory(String),
}

#[derive(Default)]
struct Case {
    name: String,
    rules: Vec<(Where, String)>,
    method: String,
    target: String,
    headers: Vec<String>,
    /// Response headers compared as they were received.
    resp: Vec<String>,
    config_error: bool,
}

impl Case {
    /// Cases that need a server of their own: rules in the main server,
    /// or a Host header of their own (the shared server picks the case's
    /// virtual host by name).
    fn solo(&self) -> bool {
        self.rules.iter().any(|(w, _)| *w == Where::Main) || self.headers.iter().any(|h| h.to_ascii_lowercase().starts_with("host:"))
    }
}

enum TreeEntry {
    File(String),
    Dir(String),
    Empty(String),
    Link(String, String),
    MapFile(String, Vec<String>),
}

/// Strips a comment (`#` at the start or after a blank) and blanks.
fn strip(line: &str) -> &str {
    let mut cut = line.len();
    let b = line.as_bytes();
    for i in 0..b.len() {
        if b[i] == b'#' && (i == 0 || b[i - 1].is_ascii_whitespace()) {
            cut = i;
            break;
        }
    }
    line[..cut].trim()
}

fn parse_cases(text: &str) -> (Vec<TreeEntry>, Vec<Case>) {
    let (mut tree, mut cases) = (Vec::new(), Vec::new());
    let mut in_tree = false;
    let mut case: Option<(Case, Where)> = None;
    for raw in text.lines() {
        let line = strip(raw);
        if line.is_empty() {
            continue;
        }
        let (kw, rest) = line.split_once(char::is_whitespace).map_or((line, ""), |(k, r)| (k, r.trim()));
        if in_tree {
            match kw {
                "end" => in_tree = false,
                "file" => tree.push(TreeEntry::File(rest.into())),
                "dir" => tree.push(TreeEntry::Dir(rest.into())),
                "empty" => tree.push(TreeEntry::Empty(rest.into())),
                "link" => {
                    let (a, b) = rest.split_once("->").expect("link A -> B");
                    tree.push(TreeEntry::Link(a.trim().into(), b.trim().into()));
                }
                "mapfile" => tree.push(TreeEntry::MapFile(rest.into(), Vec::new())),
                "line" => match tree.last_mut() {
                    Some(TreeEntry::MapFile(_, lines)) => lines.push(rest.into()),
                    _ => panic!("'line' outside a mapfile"),
                },
                other => panic!("unknown tree entry {other}"),
            }
            continue;
        }
        match (&mut case, kw) {
            (None, "tree") => in_tree = true,
            (None, "case") => case = Some((Case { name: rest.into(), method: "GET".into(), ..Case::default() }, Where::Server)),
            (Some(_), "end") => cases.push(case.take().unwrap().0),
            (Some((_, w)), "where") => {
                let dir = |d: &str| {
                    let d = d.trim();
                    if d == "\"\"" || d == "." { String::new() } else { d.trim_end_matches('/').to_string() }
                };
                *w = match rest.split_once(char::is_whitespace).map_or((rest, ""), |(a, b)| (a, b)) {
                    ("server", _) => Where::Server,
                    ("main", _) => Where::Main,
                    ("htaccess", d) => Where::Htaccess(dir(d)),
                    ("directory", d) => Where::Directory(dir(d)),
                    other => panic!("where {other:?}"),
                };
            }
            (Some((c, w)), "rule") => c.rules.push((w.clone(), rest.into())),
            (Some((c, _)), "request") => {
                let (m, t) = rest.split_once(char::is_whitespace).expect("request METHOD TARGET");
                c.method = m.into();
                c.target = t.trim().into();
            }
            (Some((c, _)), "header") => c.headers.push(rest.into()),
            (Some(_), "env") => {}
            (Some((c, _)), "resp") => c.resp.push(rest.into()),
            (Some((c, _)), "expect-config-error") => c.config_error = true,
            (_, other) => panic!("unexpected '{other}' in cases.txt"),
        }
    }
    (tree, cases)
}

fn parse_expected(text: &str) -> HashMap<String, HashMap<String, String>> {
    let mut out = HashMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let mut fields = line.split('\t');
        let name = fields.next().unwrap().to_string();
        let mut m = HashMap::new();
        for f in fields {
            match f.split_once('=') {
                Some((k, v)) => m.insert(k.to_string(), v.to_string()),
                None => m.insert(f.to_string(), String::new()),
            };
        }
        out.insert(name, m);
    }
    out
}

fn build_tree(root: &Path, tree: &[TreeEntry]) {
    std::fs::create_dir_all(root).unwrap();
    for e in tree {
        let mk = |rel: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            p
        };
        match e {
            TreeEntry::File(rel) => std::fs::write(mk(rel), format!("file:{rel}\n")).unwrap(),
            TreeEntry::Dir(rel) => std::fs::create_dir_all(root.join(rel)).unwrap(),
            TreeEntry::Empty(rel) => std::fs::write(mk(rel), "").unwrap(),
            TreeEntry::Link(rel, to) => std::os::unix::fs::symlink(to, mk(rel)).unwrap(),
            TreeEntry::MapFile(rel, lines) => std::fs::write(mk(rel), lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap(),
        }
    }
}

/// A case's document root (its own copy of the tree, with its
/// `.htaccess` files) and its virtual host, in warren's config.
fn case_site(dir: &TempDir, tree: &[TreeEntry], c: &Case) -> (String, String) {
    let root = dir.0.join("d").join(&c.name);
    build_tree(&root, tree);
    let r = root.display().to_string();
    let sub = |s: &str| s.replace("@DOCROOT@", &r);
    let mut htaccess: HashMap<String, String> = HashMap::new();
    let mut directories: Vec<(String, String)> = Vec::new();
    let (mut server, mut main) = (String::new(), String::new());
    for (w, rule) in &c.rules {
        let line = format!("{}\n", sub(rule));
        match w {
            Where::Server => server.push_str(&line),
            Where::Main => main.push_str(&line),
            Where::Htaccess(d) => htaccess.entry(d.clone()).or_default().push_str(&line),
            Where::Directory(d) => match directories.iter_mut().find(|(x, _)| x == d) {
                Some((_, text)) => text.push_str(&line),
                None => directories.push((d.clone(), line)),
            },
        }
    }
    for (d, text) in &htaccess {
        let p = if d.is_empty() { root.clone() } else { root.join(d) };
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join(".htaccess"), text).unwrap();
    }
    let mut vhost = format!("<VirtualHost *>\nServerName {}.case:80\nDocumentRoot {r}\n{server}", c.name);
    for (d, text) in &directories {
        let path = if d.is_empty() { r.clone() } else { format!("{r}/{d}") };
        vhost.push_str(&format!("<Directory {path}>\n{text}</Directory>\n"));
    }
    vhost.push_str("</VirtualHost>\n");
    (vhost, main)
}

/// The server-wide part of every case's config, as generate.sh gives Apache.
fn common_config(dir: &TempDir) -> String {
    let d = dir.0.join("d").display().to_string();
    format!(
        "DirectoryIndex index.html index.php\n<Directory {d}>\n    Options FollowSymLinks\n    AllowOverride All\n    Require all granted\n</Directory>\n"
    )
}

/// What warren answered, in expected.txt's terms.
fn observe(s: &Server, c: &Case) -> HashMap<String, String> {
    let mut head = format!("{} {} HTTP/1.1\r\n", c.method, c.target);
    if !c.headers.iter().any(|h| h.to_ascii_lowercase().starts_with("host:")) {
        head.push_str(&format!("Host: {}.case\r\n", c.name));
    }
    for h in &c.headers {
        head.push_str(&format!("{h}\r\n"));
    }
    head.push_str("Connection: close\r\n\r\n");
    let raw = s.raw(head.as_bytes());
    let (r, _) = parse_response_for(&raw, c.method == "HEAD");
    let mut o = HashMap::new();
    o.insert("status".to_string(), r.status.to_string());
    o.insert("location".to_string(), r.header("Location").unwrap_or("-").to_string());
    o.insert("vary".to_string(), r.header("Vary").unwrap_or("-").to_string());
    o.insert("ctype".to_string(), r.header("Content-Type").unwrap_or("-").to_string());
    let body = r.text();
    o.insert("file".to_string(), body.strip_prefix("file:").map_or("-".to_string(), |f| f.trim_end().to_string()));
    for name in &c.resp {
        let values: Vec<&str> = r.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).collect();
        o.insert(format!("resp.{name}"), if values.is_empty() { "-".to_string() } else { values.join(", ") });
    }
    o
}

/// What of a case is compared: the status always; the Location of a
/// redirect; the file, type and Vary of a file served.
fn differences(c: &Case, want: &HashMap<String, String>, got: &HashMap<String, String>) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut check = |k: &str, expected: &str| {
        if got[k] != expected {
            diffs.push(format!("{}: {k} Apache {expected:?}, warren {:?}", c.name, got[k]));
        }
    };
    for name in &c.resp {
        let k = format!("resp.{name}");
        check(&k, &want[&k]);
    }
    let status = want["status"].as_str();
    check("status", status);
    if status.starts_with('3') {
        check("location", &want["location"]);
    }
    if status == "200" && c.method != "HEAD" {
        check("file", &want["file"]);
        check("vary", &want["vary"]);
        if want["file"].ends_with(".html") || want["file"].ends_with(".css") || want["file"].ends_with(".txt") {
            check("ctype", &want["ctype"]);
        }
    }
    diffs
}

fn known_difference(c: &Case) -> bool {
    KNOWN_DIFFERENCES.iter().any(|(n, _)| *n == c.name)
}

/// Apache's results with the case's document root in place of `@DOCROOT@`.
fn with_root(want: &HashMap<String, String>, root: &str) -> HashMap<String, String> {
    want.iter().map(|(k, v)| (k.clone(), v.replace("@DOCROOT@", root))).collect()
}

fn apache_cases(mpm: &str) {
    let (tree, cases) = parse_cases(&std::fs::read_to_string(CASES).unwrap());
    let expected = parse_expected(&std::fs::read_to_string(EXPECTED).unwrap());
    let missing: Vec<&str> = cases.iter().filter(|c| !expected.contains_key(&c.name)).map(|c| c.name.as_str()).collect();
    assert!(missing.is_empty(), "expected.txt lacks {missing:?}: run generate.sh");
    let mut diffs = Vec::new();

    // Each case's config checked alone: those Apache refuses to start with
    // must be refused, and the others accepted unless warren says why not.
    let mut refused = Vec::new();
    for c in &cases {
        let dir = TempDir::new(&format!("rwc-t-{}-{mpm}", c.name));
        let (vhost, main) = case_site(&dir, &tree, c);
        let conf = dir.0.join("t.conf");
        std::fs::write(&conf, format!("Listen 127.0.0.1:{}\nUser nobody\nGroup nogroup\nServerRoot {}\nDocumentRoot {}\n{}{main}{vhost}", free_port(), dir.0.display(), dir.0.join("htdocs").display(), common_config(&dir))).unwrap();
        let out = Command::new(BIN).args(["-t", "-f"]).arg(&conf).output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
        let htaccess_only = c.rules.iter().all(|(w, _)| matches!(w, Where::Htaccess(_)));
        match (c.config_error, out.status.success()) {
            (true, true) if !htaccess_only => diffs.push(format!("{}: Apache refuses the config, warren -t accepts it", c.name)),
            (false, false) => {
                refused.push(c.name.clone());
                if !KNOWN_REFUSALS.iter().any(|(n, _)| *n == c.name) {
                    diffs.push(format!("{}: Apache accepts the config, warren -t refuses it: {}", c.name, said.trim()));
                }
            }
            _ => {}
        }
    }

    // Cases that share a server, each on its virtual host.
    let runs = |c: &&Case| !c.config_error && !refused.contains(&c.name);
    let shared: Vec<&Case> = cases.iter().filter(|c| !c.solo()).filter(runs).collect();
    let dir = TempDir::new(&format!("rwc-{mpm}"));
    let mut conf = common_config(&dir);
    for c in &shared {
        conf.push_str(&case_site(&dir, &tree, c).0);
    }
    let s = Server::start_in(dir, mpm, &conf);
    let root_of = |c: &Case| s.dir.0.join("d").join(&c.name).display().to_string();
    for c in shared.iter().filter(|c| !known_difference(c)) {
        diffs.extend(differences(c, &with_root(&expected[&c.name], &root_of(c)), &observe(&s, c)));
    }
    drop(s);

    for c in cases.iter().filter(|c| c.solo()).filter(runs).filter(|c| !known_difference(c)) {
        let dir = TempDir::new(&format!("rwc-{}-{mpm}", c.name));
        let (vhost, main) = case_site(&dir, &tree, c);
        let root = dir.0.join("d").join(&c.name).display().to_string();
        let conf = format!("{}{main}{vhost}", common_config(&dir));
        let s = Server::start_in(dir, mpm, &conf);
        diffs.extend(differences(c, &with_root(&expected[&c.name], &root), &observe(&s, c)));
    }
    assert!(diffs.is_empty(), "{mpm}: {} of {} cases differ from Apache:\n{}", diffs.len(), cases.len(), diffs.join("\n"));
}

each_mpm!(apache_cases);
