//! What balancer.rs and attacks_bal.rs share: which backend answered, a
//! tally of many answers, and the balancer-manager's nonce and POSTs.

use std::collections::HashMap;

use crate::common::{parse_response, read_to_close, Resp, Server};

/// Which backend answered an `/echo` request: its port, from the Host it got.
pub fn port_of(r: &Resp) -> u16 {
    let text = r.text();
    let host = text.lines().find_map(|l| l.strip_prefix("Host: 127.0.0.1:")).unwrap_or_else(|| panic!("no backend Host in {text}"));
    host.trim().parse().unwrap()
}

pub fn counts(s: &Server, n: usize, path: &str, headers: &str) -> HashMap<u16, usize> {
    let mut seen = HashMap::new();
    for _ in 0..n {
        let r = s.get_with(path, headers);
        assert_eq!(r.status, 200, "{}", r.text());
        *seen.entry(port_of(&r)).or_insert(0) += 1;
    }
    seen
}

/// The nonce the balancer-manager page at `path` gives its forms.
pub fn manager_nonce(s: &Server, path: &str) -> String {
    let page = s.get(path).text();
    let at = page.find("nonce=").unwrap_or_else(|| panic!("no nonce in {page}")) + "nonce=".len();
    page[at..].chars().take_while(|c| c.is_ascii_hexdigit()).collect()
}

/// A POST of `target` with no body, on a connection of its own.
pub fn post(s: &Server, target: &str) -> Resp {
    use std::io::Write;
    let mut c = s.connect();
    c.write_all(format!("POST {target} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    parse_response(&read_to_close(&mut c)).0
}

/// A query value, percent-encoded.
pub fn encoded(v: &str) -> String {
    v.bytes().map(|c| if c.is_ascii_alphanumeric() { (c as char).to_string() } else { format!("%{c:02X}") }).collect()
}
