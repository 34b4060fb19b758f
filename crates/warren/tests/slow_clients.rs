//! Slow clients never hold a FastCGI application: a request body is read
//! whole by warren before a pool child is given the request, and the
//! child's answer is read at its own pace, however slowly the client takes
//! it. Each test runs a pool of one php-cgi child, under each MPM.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::*;

fn start(mpm: &str, extra: &str) -> Server {
    let dir = TempDir::new(&format!("slow-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/pid.php", "<?php echo getmypid();");
    dir.write("htdocs/input.php", "<?php $in = file_get_contents('php://input'); echo strlen($in), ' ', md5($in), ' ', $_SERVER['CONTENT_LENGTH'] ?? '-';");
    dir.write("htdocs/big.php", "<?php $row = str_repeat('x', 1023) . \"\\n\"; for ($i = 0; $i < (int)($_GET['kb'] ?? 1024); $i++) echo $row;");
    let conf = format!(
        "Timeout 20\n<Pool www>\n    Command /usr/bin/php-cgi\n    User nobody\n    Group nogroup\n    pm static\n    pm.max_children 1\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:www\n</FilesMatch>\n{extra}"
    );
    Server::start_in(dir, mpm, &conf)
}

/// A GET with a 40 s read timeout: what a loaded machine may need, and
/// longer than Timeout (20 s), after which a held child would come free.
fn get_patiently(s: &Server, path: &str) -> Resp {
    let mut c = s.connect();
    c.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    c.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    parse_response(&read_to_close(&mut c)).0
}

/// A client that sends 3 bytes of a 100-byte body and stops holds no
/// child: the pool's only child answers another client meanwhile, and
/// the slow request is answered once its body is whole.
fn slow_body_holds_no_pool_child(mpm: &str) {
    let s = start(mpm, "");
    let mut slow = s.connect();
    slow.write_all(b"POST /input.php HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\nConnection: close\r\n\r\nabc").unwrap();
    wait_server_read(&slow);
    std::thread::sleep(Duration::from_millis(300));
    // Were the child held by the slow body, this request would wait until
    // Timeout (20 s) cut the slow one.
    let started = Instant::now();
    let r = get_patiently(&s, "/pid.php");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(started.elapsed() < Duration::from_secs(15), "waited {:?}", started.elapsed());
    slow.write_all(&[b'd'; 97]).unwrap();
    let (r, _) = parse_response(&read_to_close(&mut slow));
    let body = [b"abc".as_slice(), &[b'd'; 97]].concat();
    assert_eq!(r.text(), format!("100 {:x} 100", md5(&body)));
}

/// Bodies past what is kept in memory (64 KB) go through a temporary file
/// and arrive whole, with their length, sent with Content-Length or chunked.
fn large_bodies_arrive_whole(mpm: &str) {
    let s = start(mpm, "");
    let body: Vec<u8> = (0..300_000u32).map(|i| b"abcdefghijklmnopqrstuvwxyz0123456789"[(i % 36) as usize] ^ (i / 7919) as u8).collect();
    let expected = format!("300000 {:x} 300000", md5(&body));
    let mut req = format!("POST /input.php HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len()).into_bytes();
    req.extend_from_slice(&body);
    let (r, _) = parse_response(&s.raw(&req));
    assert_eq!((r.status, r.text()), (200, expected.clone()));
    let mut req = b"POST /input.php HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    for piece in body.chunks(40_000) {
        req.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        req.extend_from_slice(piece);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let (r, _) = parse_response(&s.raw(&req));
    assert_eq!((r.status, r.text()), (200, expected));
}

fn md5(data: &[u8]) -> u128 {
    let mut child = std::process::Command::new("md5sum").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(data).unwrap();
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    child.wait().unwrap();
    u128::from_str_radix(&out[..32], 16).unwrap()
}


/// A client that asks for a 20 MB answer and reads none of it holds no
/// child: the application's answer is read at its own pace (what the
/// client has not taken waits in a temporary file), so the pool's only
/// child answers another client meanwhile; the slow client then gets the
/// whole answer.
fn slow_reader_holds_no_pool_child(mpm: &str) {
    let s = start(mpm, "");
    let mut slow = s.connect();
    slow.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    slow.write_all(b"GET /big.php?kb=20480 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    wait_server_read(&slow);
    std::thread::sleep(Duration::from_millis(300));
    // Were the child held until the slow client read its answer (which it
    // does only after this), this request would never be answered: 40 s
    // read timeout. The child is free once it has written 20 MB, which a
    // loaded machine takes seconds over.
    let started = Instant::now();
    let r = get_patiently(&s, "/pid.php");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(started.elapsed() < Duration::from_secs(30), "waited {:?}", started.elapsed());
    let answer = read_to_close(&mut slow);
    let (r, _) = parse_response(&answer);
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), 20480 * 1024);
    assert!(r.body.chunks(1024).all(|row| row[..1023].iter().all(|&b| b == b'x') && row[1023] == b'\n'));
}

/// `X-Accel-Buffering: no` from the application (nginx's header): relayed
/// at the client's pace, and the header is the server's, not the client's.
fn application_can_ask_for_streaming(mpm: &str) {
    let s = start(mpm, "");
    s.dir.write("htdocs/stream.php", "<?php header('X-Accel-Buffering: no'); echo str_repeat('y', 300000);");
    let r = s.get("/stream.php");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("X-Accel-Buffering"), None);
    assert_eq!(r.body.len(), 300000);
}

each_mpm!(slow_body_holds_no_pool_child, large_bodies_arrive_whole, slow_reader_holds_no_pool_child, application_can_ask_for_streaming);
