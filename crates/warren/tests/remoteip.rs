//! mod_remoteip under each MPM: the client behind a proxy, from
//! X-Forwarded-For (believed only from listed proxies, private addresses
//! only from internal ones) or from a PROXY protocol header, as the access
//! log's `%a`, `Require ip` and PHP's REMOTE_ADDR see it; `%{c}a` keeps the
//! connection's peer. Clients connect from 127.0.0.1 (the listed proxy)
//! or from 127.0.0.2 (anyone else) over the loopback.

mod common;

use std::io::Write;
use std::net::Ipv4Addr;

use common::*;

const LOG_FORMAT: &str = "LogFormat \"%a|%{c}a|%>s|%r|%{X-Forwarded-For}i|%{X-Forwarded-By}i\" ip\nCustomLog ip.log ip\n";
const PRIVATE: &str = "<Location /private>\n    Require ip 203.0.113.0/24\n</Location>\n";
const POOL: &str = "<Pool app>\n    Command php-cgi\n    pm static\n    pm.max_children 1\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:app\n</FilesMatch>\n";
const ENV_PHP: &str = "<?php\nforeach (['REMOTE_ADDR', 'REMOTE_PORT', 'HTTP_X_FORWARDED_FOR', 'HTTP_X_FORWARDED_BY'] as $k) {\n    echo $k, '=', $_SERVER[$k] ?? '-', \"\\n\";\n}\n";

fn site(mpm: &str, tag: &str) -> TempDir {
    let dir = TempDir::new(&format!("remoteip-{tag}-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/private/x.txt", "secret");
    dir.write("htdocs/env.php", ENV_PHP);
    dir
}

const PROXY_IP: Ipv4Addr = Ipv4Addr::LOCALHOST;
const STRANGER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// Sends `bytes` from `src`, and reads until the server closes.
fn send_from(src: Ipv4Addr, port: u16, bytes: &[u8]) -> Vec<u8> {
    let mut s = connect_from(src, port);
    s.write_all(bytes).unwrap();
    let _ = s.shutdown(std::net::Shutdown::Write);
    read_to_close(&mut s)
}

fn get(path: &str, headers: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{headers}Connection: close\r\n\r\n").into_bytes()
}

/// The access log line of the request whose request line contains `marker`.
fn logged(s: &Server, marker: &str) -> String {
    let log = s.wait_log("ip.log", marker);
    log.lines().find(|l| l.contains(marker)).unwrap_or_else(|| panic!("no line for {marker} in ip.log:\n{log}")).to_string()
}

/// A PROXY protocol version 2 header.
fn proxy_v2(command: u8, family: u8, addrs: &[u8]) -> Vec<u8> {
    let mut b = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    b.push(0x20 | command);
    b.push(family);
    b.extend_from_slice(&(addrs.len() as u16).to_be_bytes());
    b.extend_from_slice(addrs);
    b
}

fn forwarded_for_from_a_trusted_proxy(mpm: &str) {
    let conf = format!("RemoteIPHeader X-Forwarded-For\nRemoteIPTrustedProxy 127.0.0.1\nRemoteIPProxiesHeader X-Forwarded-By\n{LOG_FORMAT}{PRIVATE}");
    let s = Server::start_in(site(mpm, "trusted"), mpm, &conf);
    let status = |src, path: &str, headers: &str| status_of(&send_from(src, s.port, &get(path, headers)));

    // The proxy's header names the client: the last address, as the next
    // (198.51.100.7) is not a proxy this server believes.
    let xff = "X-Forwarded-For: 198.51.100.7, 203.0.113.9\r\n";
    assert_eq!(status(PROXY_IP, "/a.txt?case=walk", xff), 200);
    assert_eq!(logged(&s, "case=walk"), "203.0.113.9|127.0.0.1|200|GET /a.txt?case=walk HTTP/1.1|198.51.100.7|127.0.0.1");
    assert_eq!(status(PROXY_IP, "/private/x.txt?case=granted", "X-Forwarded-For: 203.0.113.9\r\n"), 200);
    assert_eq!(logged(&s, "case=granted"), "203.0.113.9|127.0.0.1|200|GET /private/x.txt?case=granted HTTP/1.1|-|127.0.0.1");
    assert_eq!(status(PROXY_IP, "/private/x.txt?case=denied", "X-Forwarded-For: 198.51.100.7\r\n"), 403);
    assert_eq!(status(PROXY_IP, "/private/x.txt?case=none", ""), 403);
    // Repeated fields are one list.
    assert_eq!(status(PROXY_IP, "/a.txt?case=twice", "X-Forwarded-For: 198.51.100.7\r\nX-Forwarded-For: 203.0.113.9\r\n"), 200);
    assert!(logged(&s, "case=twice").starts_with("203.0.113.9|127.0.0.1|200|"));

    // A trusted proxy may not name a private address: the proxy stays the client.
    assert_eq!(status(PROXY_IP, "/a.txt?case=private", "X-Forwarded-For: 10.1.2.3\r\n"), 200);
    assert_eq!(logged(&s, "case=private"), "127.0.0.1|127.0.0.1|200|GET /a.txt?case=private HTTP/1.1|10.1.2.3|-");
    // What is not an address ends the walk, and stays in the header.
    assert_eq!(status(PROXY_IP, "/a.txt?case=junk", "X-Forwarded-For: unknown, 203.0.113.9\r\n"), 200);
    assert_eq!(logged(&s, "case=junk"), "203.0.113.9|127.0.0.1|200|GET /a.txt?case=junk HTTP/1.1|unknown|127.0.0.1");

    // Anyone else's header is ignored, whatever it says.
    assert_eq!(status(STRANGER, "/private/x.txt?case=stranger", "X-Forwarded-For: 203.0.113.9\r\n"), 403);
    assert_eq!(logged(&s, "case=stranger"), "127.0.0.2|127.0.0.2|403|GET /private/x.txt?case=stranger HTTP/1.1|203.0.113.9|-");
    // A PROXY protocol header where none is expected is no request.
    let mut bytes = b"PROXY TCP4 203.0.113.9 127.0.0.1 4000 80\r\n".to_vec();
    bytes.extend_from_slice(&get("/private/x.txt?case=smuggled", ""));
    assert_eq!(status_of(&send_from(STRANGER, s.port, &bytes)), 400);

    // Each request of a connection is judged on its own header.
    let mut c = connect_from(PROXY_IP, s.port);
    let mut both = format!("GET /private/x.txt?case=ka1 HTTP/1.1\r\nHost: localhost\r\n{xff}\r\n").into_bytes();
    both.extend_from_slice(&get("/private/x.txt?case=ka2", ""));
    c.write_all(&both).unwrap();
    let answers = parse_all(&read_to_close(&mut c));
    assert_eq!(answers.iter().map(|r| r.status).collect::<Vec<_>>(), [200, 403]);
    assert!(logged(&s, "case=ka2").starts_with("127.0.0.1|127.0.0.1|403|"));
    // The error log names the client found.
    let errors = s.wait_log("error.log", "case=denied");
    assert!(errors.lines().any(|l| l.contains("[client 198.51.100.7:") && l.contains("case=denied")), "{errors}");
}

fn a_chain_of_internal_and_trusted_proxies(mpm: &str) {
    let dir = site(mpm, "chain");
    dir.write("trusted.txt", "# the CDN\n198.51.100.0/24\n");
    let conf = format!(
        "RemoteIPHeader X-Forwarded-For\nRemoteIPInternalProxy 127.0.0.1 10.0.0.0/8\nRemoteIPTrustedProxyList trusted.txt\nRemoteIPProxiesHeader X-Forwarded-By\n{LOG_FORMAT}{PRIVATE}"
    );
    let s = Server::start_in(dir, mpm, &conf);
    let status = |path: &str, headers: &str| status_of(&send_from(PROXY_IP, s.port, &get(path, headers)));

    // Internal proxies (127.0.0.1, then 10.0.0.5) and a trusted one: the
    // trusted one is listed, the internal ones are not.
    assert_eq!(status("/private/x.txt?case=chain", "X-Forwarded-For: 192.168.7.7, 203.0.113.9, 198.51.100.2, 10.0.0.5\r\n"), 200);
    assert_eq!(logged(&s, "case=chain"), "203.0.113.9|127.0.0.1|200|GET /private/x.txt?case=chain HTTP/1.1|192.168.7.7|198.51.100.2");
    // Internal proxies may hand over private addresses; all walked, the header goes.
    assert_eq!(status("/a.txt?case=intranet", "X-Forwarded-For: 192.168.7.7, 10.0.0.5\r\n"), 200);
    assert_eq!(logged(&s, "case=intranet"), "192.168.7.7|127.0.0.1|200|GET /a.txt?case=intranet HTTP/1.1|-|-");
    // A trusted proxy may not.
    assert_eq!(status("/a.txt?case=refused", "X-Forwarded-For: 192.168.7.7, 198.51.100.2\r\n"), 200);
    assert_eq!(logged(&s, "case=refused"), "198.51.100.2|127.0.0.1|200|GET /a.txt?case=refused HTTP/1.1|192.168.7.7|-");
}

fn php_sees_the_client_behind_the_proxy(mpm: &str) {
    let conf = format!("RemoteIPHeader X-Forwarded-For\nRemoteIPTrustedProxy 127.0.0.1\nRemoteIPProxiesHeader X-Forwarded-By\n{POOL}");
    let s = Server::start_in(site(mpm, "php"), mpm, &conf);
    let mut c = connect_from(PROXY_IP, s.port);
    let port = c.local_addr().unwrap().port();
    c.write_all(&get("/env.php", "X-Forwarded-For: 198.51.100.7, 203.0.113.9\r\n")).unwrap();
    let r = parse_response(&read_to_close(&mut c)).0;
    assert_eq!(r.status, 200, "{}", r.text());
    let env = key_values(&r.text());
    assert_eq!(env["REMOTE_ADDR"], "203.0.113.9");
    assert_eq!(env["REMOTE_PORT"], port.to_string());
    assert_eq!(env["HTTP_X_FORWARDED_FOR"], "198.51.100.7");
    assert_eq!(env["HTTP_X_FORWARDED_BY"], "127.0.0.1");

    // From anyone else, the header is passed on as it came and changes nothing.
    let r = parse_response(&send_from(STRANGER, s.port, &get("/env.php", "X-Forwarded-For: 203.0.113.9\r\n"))).0;
    let env = key_values(&r.text());
    assert_eq!((env["REMOTE_ADDR"].as_str(), env["HTTP_X_FORWARDED_FOR"].as_str(), env["HTTP_X_FORWARDED_BY"].as_str()), ("127.0.0.2", "203.0.113.9", "-"));
}

fn proxy_protocol(mpm: &str) {
    let conf = format!("RemoteIPProxyProtocol On\nRemoteIPProxyProtocolExceptions 127.0.0.2\n{LOG_FORMAT}{PRIVATE}{POOL}");
    let s = Server::start_in(site(mpm, "proxyproto"), mpm, &conf);
    let with_header = |header: &[u8], path: &str| {
        let mut b = header.to_vec();
        b.extend_from_slice(&get(path, ""));
        send_from(PROXY_IP, s.port, &b)
    };

    // Version 1: the source is the client for everything, %{c}a included.
    let r = with_header(b"PROXY TCP4 203.0.113.7 127.0.0.1 40000 80\r\n", "/private/x.txt?case=v1");
    assert_eq!(status_of(&r), 200, "{}", String::from_utf8_lossy(&r));
    assert_eq!(logged(&s, "case=v1"), "203.0.113.7|203.0.113.7|200|GET /private/x.txt?case=v1 HTTP/1.1|-|-");
    let r = parse_response(&with_header(b"PROXY TCP6 2001:db8::7 ::1 40001 80\r\n", "/env.php")).0;
    let env = key_values(&r.text());
    assert_eq!((env["REMOTE_ADDR"].as_str(), env["REMOTE_PORT"].as_str()), ("2001:db8::7", "40001"));

    // Version 2, over IPv4 and IPv6, with a TLV after the addresses.
    let mut v4 = vec![198, 51, 100, 9, 127, 0, 0, 1];
    v4.extend_from_slice(&41000u16.to_be_bytes());
    v4.extend_from_slice(&80u16.to_be_bytes());
    v4.extend_from_slice(&[0x04, 0x00, 0x01, 0x00]);
    let r = with_header(&proxy_v2(1, 0x11, &v4), "/private/x.txt?case=v2-tcp4");
    assert_eq!(status_of(&r), 403);
    assert!(logged(&s, "case=v2-tcp4").starts_with("198.51.100.9|198.51.100.9|403|"));
    let mut v6 = "2001:db8::9".parse::<std::net::Ipv6Addr>().unwrap().octets().to_vec();
    v6.extend_from_slice(&std::net::Ipv6Addr::LOCALHOST.octets());
    v6.extend_from_slice(&[0xa0, 0x28, 0x00, 0x50]);
    let r = parse_response(&with_header(&proxy_v2(1, 0x21, &v6), "/env.php")).0;
    let env = key_values(&r.text());
    assert_eq!((env["REMOTE_ADDR"].as_str(), env["REMOTE_PORT"].as_str()), ("2001:db8::9", "41000"));
    // LOCAL (a health check): the connection's own address stands.
    let r = with_header(&proxy_v2(0, 0x00, &[]), "/a.txt?case=v2-local");
    assert_eq!(status_of(&r), 200);
    assert!(logged(&s, "case=v2-local").starts_with("127.0.0.1|127.0.0.1|200|"));

    // The header opens the connection; its requests all come from its source.
    let mut c = connect_from(PROXY_IP, s.port);
    let mut b = b"PROXY TCP4 203.0.113.8 127.0.0.1 40002 80\r\n".to_vec();
    b.extend_from_slice(b"GET /private/x.txt?case=ka1 HTTP/1.1\r\nHost: localhost\r\n\r\n");
    b.extend_from_slice(&get("/private/x.txt?case=ka2", ""));
    c.write_all(&b).unwrap();
    let answers = parse_all(&read_to_close(&mut c));
    assert_eq!(answers.iter().map(|r| r.status).collect::<Vec<_>>(), [200, 200]);
    assert!(logged(&s, "case=ka2").starts_with("203.0.113.8|203.0.113.8|200|"));

    // Without a header, or with a malformed one: closed unanswered, logged
    // with the real peer.
    let r = send_from(PROXY_IP, s.port, &get("/private/x.txt?case=plain", ""));
    assert!(r.is_empty(), "{}", String::from_utf8_lossy(&r));
    for bad in [&b"PROXY TCP4 203.0.113.7 nonsense 1 2\r\n"[..], b"PROXY TCP4 203.0.113.7 127.0.0.1 40000 80\n", &proxy_v2(1, 0x31, &[0; 216])] {
        let r = with_header(bad, "/private/x.txt?case=bad");
        assert!(r.is_empty(), "{:?}: {}", String::from_utf8_lossy(bad), String::from_utf8_lossy(&r));
    }
    let errors = s.wait_log("error.log", "UNIX sockets");
    for why in ["[client 127.0.0.1:", "RemoteIPProxyProtocol: no PROXY protocol header", "RemoteIPProxyProtocol: PROXY v1: 'nonsense' is not a TCP4 address", "not ended by CRLF", "UNIX sockets are not supported"] {
        assert!(errors.contains(why), "{why}:\n{errors}");
    }
    assert!(!s.read_log("ip.log").contains("case=plain") && !s.read_log("ip.log").contains("case=bad"));

    // The exceptions send no header.
    assert_eq!(status_of(&send_from(STRANGER, s.port, &get("/a.txt?case=excepted", ""))), 200);
    assert!(logged(&s, "case=excepted").starts_with("127.0.0.2|127.0.0.2|200|"));
}

/// A PROXY header that never ends has the time a request head has: the
/// connection is then closed unanswered, and logged.
fn an_unfinished_proxy_header_runs_out_of_time(mpm: &str) {
    let s = Server::start_in(site(mpm, "proxyslow"), mpm, "RemoteIPProxyProtocol On\nRequestReadTimeout header=1\n");
    let mut c = connect_from(PROXY_IP, s.port);
    // Not shut for writing: the server must stop waiting on its own.
    c.write_all(b"PROXY TCP4 203.0.113.7 ").unwrap();
    let (answer, how) = read_to_end_of(&mut c);
    assert!(answer.is_empty() && how.starts_with("closed by the server"), "{how}: {}", String::from_utf8_lossy(&answer));
    let errors = s.wait_log("error.log", "timed out reading the PROXY header");
    assert!(errors.contains("[client 127.0.0.1:") && errors.contains("RemoteIPProxyProtocol: timed out reading the PROXY header"), "{errors}");
}

/// In a virtual host, the PROXY protocol is for its address only.
fn proxy_protocol_on_a_virtual_hosts_address(mpm: &str) {
    let other = free_port();
    let conf = format!("Listen 127.0.0.1:{other}\n<VirtualHost 127.0.0.1:{other}>\n    ServerName behind.test\n    DocumentRoot htdocs\n    RemoteIPProxyProtocol On\n</VirtualHost>\n{LOG_FORMAT}");
    let s = Server::start_in(site(mpm, "vhostproto"), mpm, &conf);
    assert_eq!(status_of(&send_from(PROXY_IP, s.port, &get("/a.txt?case=main", ""))), 200);
    assert!(send_from(PROXY_IP, other, &get("/a.txt?case=plain", "")).is_empty());
    let mut b = b"PROXY TCP4 203.0.113.7 127.0.0.1 40000 80\r\n".to_vec();
    b.extend_from_slice(&get("/a.txt?case=proxied", ""));
    assert_eq!(status_of(&send_from(PROXY_IP, other, &b)), 200);
    assert!(logged(&s, "case=proxied").starts_with("203.0.113.7|203.0.113.7|200|"));
}

each_mpm!(
    forwarded_for_from_a_trusted_proxy,
    a_chain_of_internal_and_trusted_proxies,
    php_sees_the_client_behind_the_proxy,
    proxy_protocol,
    an_unfinished_proxy_header_runs_out_of_time,
    proxy_protocol_on_a_virtual_hosts_address,
);
