use super::*;
use crate::rules::RuleSet;
use std::collections::HashMap;

#[derive(Default)]
struct Fake {
    vars: HashMap<String, String>,
    headers: HashMap<String, String>,
    env: HashMap<String, String>,
}

impl Request for Fake {
    fn variable(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }
    fn variable_bytes(&self, name: &str) -> Option<Vec<u8>> {
        match name {
            "REQUEST_URI" if self.vars.contains_key("BYTES") => Some(b"/c/caf\xe9".to_vec()),
            _ => self.variable(name).map(String::into_bytes),
        }
    }
    fn header(&self, name: &str) -> Option<String> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone())
    }
    fn env(&self, name: &str) -> Option<String> {
        self.env.get(name).cloned()
    }
    fn set_env(&mut self, name: &str, value: Option<String>, _: &Rule) {
        match value {
            Some(v) => self.env.insert(name.to_string(), v),
            None => self.env.remove(name),
        };
    }
    fn map(&self, _: &str) -> Option<&RewriteMap> {
        None
    }
    fn file_lookup(&self, _: &str) -> bool {
        false
    }
    fn url_lookup(&self, _: &str) -> bool {
        false
    }
    fn pick(&self, _: usize) -> usize {
        0
    }
    fn qualify(&self, path: &[u8]) -> Vec<u8> {
        [&b"http://test"[..], path].concat()
    }
}

fn set(lines: &[&str]) -> RuleSet {
    let mut s = RuleSet::default();
    for (n, l) in lines.iter().enumerate() {
        let mut words: Vec<String> = l.split_whitespace().map(str::to_string).collect();
        let name = words.remove(0);
        let origin = format!("t:{}", n + 1);
        match name.as_str() {
            "RewriteCond" => s.add_cond(&words, &origin),
            "RewriteRule" => s.add_rule(&words, &origin),
            _ => panic!("{name}"),
        }
        .unwrap();
    }
    s
}

fn txt(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap()
}

fn run(s: &RuleSet, perdir: Option<&str>, filename: &str, query: Option<&str>, req: &mut Fake) -> (Applied, State) {
    let rules: Vec<&Rule> = s.rules.iter().map(|r| &**r).collect();
    let mut st = State { filename: filename.into(), query: query.map(|q| q.as_bytes().to_vec()), ..State::default() };
    let a = apply(&rules, perdir.map(str::as_bytes), &mut st, req, Bounds { max_len: 16384, deadline: None });
    (a, st)
}

#[test]
fn server_context_rewrite_with_query_append() {
    let s = set(&["RewriteRule ^/old/(.*)$ /new.php?p=$1 [QSA,L]", "RewriteRule ^ /never"]);
    let (a, st) = run(&s, None, "/old/x", Some("a=1"), &mut Fake::default());
    assert_eq!(a, Applied::Changed { noescape: false, passthrough: false });
    assert_eq!((txt(&st.filename), st.query.as_deref().map(txt)), ("/new.php", Some("p=x&a=1")));
}

#[test]
fn per_directory_prefix_is_stripped_and_added_back() {
    let s = set(&["RewriteCond %{REQUEST_FILENAME} !-f", "RewriteRule ^(.*)$ index.php [L]"]);
    let (_, st) = run(&s, Some("/nonexistent-root/"), "/nonexistent-root/a/b", None, &mut Fake::default());
    assert_eq!(txt(&st.filename), "/nonexistent-root/index.php");
}

#[test]
fn per_directory_path_info_is_matched_but_not_the_filename() {
    // REQUEST_FILENAME is the file (here one that exists), the pattern sees the path info too.
    let dir = std::env::temp_dir().join(format!("rewrite-pi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("xmlrpc.php"), "x").unwrap();
    let perdir = format!("{}/", dir.display());
    let file = format!("{perdir}xmlrpc.php");
    let s = set(&["RewriteCond %{REQUEST_FILENAME} !-f", "RewriteRule . index.php [L]"]);
    let mut st = State { filename: file.clone().into_bytes(), path_info: "/extra/path".into(), ..State::default() };
    let rules: Vec<&Rule> = s.rules.iter().map(|r| &**r).collect();
    assert_eq!(apply(&rules, Some(perdir.as_bytes()), &mut st, &mut Fake::default(), Bounds { max_len: 16384, deadline: None }), Applied::Unchanged);
    let s = set(&["RewriteRule ^xmlrpc\\.php/extra/(.*)$ got-$1 [DPI]", "RewriteRule ^got-path$ done [L]"]);
    let rules: Vec<&Rule> = s.rules.iter().map(|r| &**r).collect();
    let mut st = State { filename: file.into_bytes(), path_info: "/extra/path".into(), ..State::default() };
    apply(&rules, Some(perdir.as_bytes()), &mut st, &mut Fake::default(), Bounds { max_len: 16384, deadline: None });
    assert_eq!((txt(&st.filename).to_string(), txt(&st.path_info)), (format!("{perdir}done"), ""));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn conditions_or_and_back_references() {
    let s = set(&["RewriteCond %{HTTP_HOST} ^www\\.(.+)$ [NC,OR]", "RewriteCond %{HTTP:X-Alt} ^(alt)$", "RewriteRule ^/(.*) http://%1/$1 [R=301,L]"]);
    let mut req = Fake::default();
    req.headers.insert("Host".into(), "WWW.example.org".into());
    let (a, st) = run(&s, None, "/p", None, &mut req);
    assert_eq!(a, Applied::Changed { noescape: false, passthrough: false });
    assert_eq!((txt(&st.filename), st.status), ("http://example.org/p", Some(301)));
    let s2 = set(&["RewriteRule ^/q/(.*)$ /x/$1", "RewriteRule ^/r$ /a [R]", "RewriteRule ^/a$ /b"]);
    assert_eq!(run(&s2, None, "/q/a?b", None, &mut Fake::default()).0, Applied::Status(403), "a ? from a back-reference");
    let (_, st) = run(&s2, None, "/r", None, &mut Fake::default());
    assert_eq!(txt(&st.filename), "http://test/a", "[R] qualifies at once: later rules see the URL");
    assert!(st.vary.is_empty(), "Host is never in Vary");
    let mut req = Fake::default();
    req.headers.insert("X-Alt".into(), "alt".into());
    let (_, st) = run(&s, None, "/p", None, &mut req);
    assert_eq!((txt(&st.filename), st.vary.clone()), ("http://alt/p", vec!["X-Alt".to_string()]));
}

#[test]
fn env_status_skip_chain_and_end() {
    let s = set(&["RewriteRule ^/a - [E=SEEN:$0,S=1]", "RewriteRule ^ /skipped", "RewriteRule ^/a/(x)$ /chained-$1 [C]", "RewriteRule ^/chained-(x)$ /end-$1 [END]", "RewriteRule ^ /never"]);
    let mut req = Fake::default();
    let (a, st) = run(&s, None, "/a/x", None, &mut req);
    assert_eq!((a, txt(&st.filename), st.end), (Applied::Changed { noescape: false, passthrough: false }, "/end-x", true));
    assert_eq!(req.env.get("SEEN").map(String::as_str), Some("/a"));
    let s = set(&["RewriteRule \\.ini$ - [F]"]);
    assert_eq!(run(&s, None, "/x.ini", None, &mut Fake::default()).0, Applied::Status(403));
}

#[test]
fn rounds_are_bounded() {
    let s = set(&["RewriteRule ^/(.*)$ /x$1 [N]"]);
    assert_eq!(run(&s, None, "/a", None, &mut Fake::default()).0, Applied::Status(500));
    let s = set(&["RewriteRule ^/(a+)$ /$1a"]);
    assert_eq!(apply(&[&s.rules[0]], None, &mut State { filename: "/a".into(), ..State::default() }, &mut Fake::default(), Bounds { max_len: 2, deadline: None }), Applied::Status(500));
}

#[test]
fn escaped_back_references() {
    let s = set(&["RewriteRule ^/s/(.*)$ /search.php?q=$1 [B]"]);
    let (_, st) = run(&s, None, "/s/a b&c", None, &mut Fake::default());
    assert_eq!(st.query.as_deref().map(txt), Some("q=a+b%26c"));
}

/// A URL path that decodes to bytes that are not UTF-8 (`/caf%E9`, a
/// Latin-1 name) is matched and substituted as those bytes, as Apache
/// does: the back-reference carries E9, not U+FFFD's EF BF BD.
#[test]
fn bytes_that_are_not_utf8_go_through_as_bytes() {
    let s = set(&["RewriteRule ^/q/(.*)$ /show.php?p=$1"]);
    let mut st = State { filename: b"/q/caf\xe9".to_vec(), query: Some(b"q=\xff".to_vec()), ..State::default() };
    let rules: Vec<&Rule> = s.rules.iter().map(|r| &**r).collect();
    apply(&rules, None, &mut st, &mut Fake::default(), Bounds { max_len: 16384, deadline: None });
    assert_eq!((&st.filename[..], st.query.as_deref()), (&b"/show.php"[..], Some(&b"p=caf\xe9"[..])));
    // [QSA]: the client's own bytes follow.
    let s = set(&["RewriteRule ^/q/(.*)$ /show.php?p=$1 [QSA]"]);
    let rules: Vec<&Rule> = s.rules.iter().map(|r| &**r).collect();
    let mut st = State { filename: b"/q/a\xffb/c".to_vec(), query: Some(b"q=\xff".to_vec()), ..State::default() };
    apply(&rules, None, &mut st, &mut Fake::default(), Bounds { max_len: 16384, deadline: None });
    assert_eq!(st.query.as_deref(), Some(&b"p=a\xffb/c&q=\xff"[..]));
    // `.` is one byte, and a pattern may name a byte.
    let s = set(&["RewriteRule ^/caf(.)$ /one-$1", "RewriteRule ^/one-\\xE9$ /latin1 [L]"]);
    let rules: Vec<&Rule> = s.rules.iter().map(|r| &**r).collect();
    let mut st = State { filename: "/caf\u{e9}".into(), ..State::default() };
    apply(&rules, None, &mut st, &mut Fake::default(), Bounds { max_len: 16384, deadline: None });
    assert_eq!(st.filename, "/caf\u{e9}".as_bytes(), "two bytes are not one");
    let mut st = State { filename: b"/caf\xe9".to_vec(), ..State::default() };
    apply(&rules, None, &mut st, &mut Fake::default(), Bounds { max_len: 16384, deadline: None });
    assert_eq!(st.filename, b"/latin1");
    // [B] escapes each byte; [R] keeps the bytes for the redirect to escape.
    let s = set(&["RewriteRule ^/b/(.*)$ /show.php?p=$1 [B]", "RewriteRule ^/old/(.*)$ /new/$1 [R=301]"]);
    let rules: Vec<&Rule> = s.rules.iter().map(|r| &**r).collect();
    let mut st = State { filename: b"/b/a\xffb/c".to_vec(), ..State::default() };
    apply(&rules, None, &mut st, &mut Fake::default(), Bounds { max_len: 16384, deadline: None });
    assert_eq!(st.query.as_deref(), Some(&b"p=a%ffb%2fc"[..]));
    let mut st = State { filename: b"/old/caf\xe9".to_vec(), ..State::default() };
    apply(&rules, None, &mut st, &mut Fake::default(), Bounds { max_len: 16384, deadline: None });
    assert_eq!((&st.filename[..], st.status), (&b"http://test/new/caf\xe9"[..], Some(301)));
    // A condition's groups are bytes too, of the state or of a variable.
    let s = set(&["RewriteCond %{REQUEST_FILENAME} ^/c/(.*)$", "RewriteRule ^ /got-%1"]);
    let rules: Vec<&Rule> = s.rules.iter().map(|r| &**r).collect();
    let mut st = State { filename: b"/c/\xe9".to_vec(), ..State::default() };
    apply(&rules, None, &mut st, &mut Fake::default(), Bounds { max_len: 16384, deadline: None });
    assert_eq!(st.filename, b"/got-\xe9");
    let s = set(&["RewriteCond %{REQUEST_URI} ^/c/(.*)$", "RewriteRule ^ /got?p=%1"]);
    let rules: Vec<&Rule> = s.rules.iter().map(|r| &**r).collect();
    let mut req = Fake::default();
    req.vars.insert("BYTES".into(), String::new());
    let mut st = State { filename: b"/x".to_vec(), ..State::default() };
    apply(&rules, None, &mut st, &mut req, Bounds { max_len: 16384, deadline: None });
    assert_eq!(st.query.as_deref(), Some(&b"p=caf\xe9"[..]));
}

/// Spends at least `cpu` of this thread's CPU time.
fn spin(cpu: Duration) {
    let until = thread_cpu_time() + cpu;
    while thread_cpu_time() < until {
        std::hint::black_box(0u64);
    }
}

#[test]
fn the_budget_starts_at_its_first_check() {
    let deadline = CpuDeadline::after(Duration::from_millis(1));
    spin(Duration::from_millis(3));
    assert!(!deadline.passed(), "CPU spent before the first rule does not count");
    spin(Duration::from_millis(3));
    assert!(deadline.passed());
}

#[test]
fn no_rule_nor_condition_is_tried_past_the_deadline() {
    let s = set(&["RewriteRule ^/a$ - [E=seen:1]", "RewriteCond %{HTTP:X-A} ^(a|a?)+$", "RewriteRule ^ /slow"]);
    let rules: Vec<&Rule> = s.rules.iter().map(|r| &**r).collect();
    let mut req = Fake::default();
    req.headers.insert("X-A".into(), "b".into());
    let mut st = State { filename: "/a".into(), ..State::default() };
    let passed = Bounds { max_len: 16384, deadline: Some(&CpuDeadline::after(Duration::ZERO)) };
    assert_eq!(apply(&rules, None, &mut st, &mut req, passed), Applied::OutOfTime { rule: 0 });
    assert!(req.env.is_empty(), "the first rule did not run");
    let ahead = Bounds { max_len: 16384, deadline: Some(&CpuDeadline::after(Duration::from_secs(3600))) };
    assert_eq!(apply(&rules, None, &mut st, &mut req, ahead), Applied::Unchanged);
    assert_eq!(req.env.get("seen").map(String::as_str), Some("1"));
}
