//! Static files: validators and conditional requests, ranges, MIME types,
//! DirectoryIndex, listings, ErrorDocument, containment in DocumentRoot,
//! virtual hosts, sendfile of large files, and curl as a client.

mod common;
use common::*;

use std::process::Command;

each_mpm!(
    get_and_head,
    conditional_requests,
    ranges,
    mime_types,
    directories,
    error_documents,
    containment_and_symlinks,
    access_control,
    virtual_hosts,
    large_file_by_curl,
    file_pieces_in_order,
    access_log_combined,
);

fn get_and_head(mpm: &str) {
    let s = Server::start(mpm, "");
    let r = s.get("/a.txt");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"0123456789abcdefghij");
    assert_eq!(r.header("Content-Length"), Some("20"));
    assert_eq!(r.header("Content-Type"), Some("text/plain"));
    assert_eq!(r.header("Accept-Ranges"), Some("bytes"));
    assert!(r.header("ETag").is_some_and(|e| e.starts_with('"') && e.ends_with('"')));
    assert!(r.header("Last-Modified").is_some_and(|d| d.ends_with("GMT")));
    let out = s.raw(b"HEAD /a.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    let (h, rest) = parse_response_for(&out, true);
    assert_eq!((h.status, h.header("Content-Length")), (200, Some("20")));
    assert!(rest.is_empty(), "HEAD has no body");
    assert_eq!(s.get("/space%20name.txt").body, b"spaced");
    assert_eq!(s.get("/a.txt?query=1").status, 200);
    let r = s.get("/missing.html");
    assert_eq!(r.status, 404);
    assert!(r.text().contains("Not Found"));
    let r = s.get("/a.txt/");
    assert_eq!(r.status, 404, "a file is not a directory");
}

fn conditional_requests(mpm: &str) {
    let s = Server::start(mpm, "");
    let r = s.get("/a.txt");
    let etag = r.header("ETag").unwrap().to_string();
    let lm = r.header("Last-Modified").unwrap().to_string();
    let inm = s.get_with("/a.txt", &format!("If-None-Match: {etag}\r\n"));
    assert_eq!(inm.status, 304);
    assert!(inm.body.is_empty());
    assert_eq!(inm.header("ETag"), Some(etag.as_str()));
    assert_eq!(s.get_with("/a.txt", &format!("If-None-Match: \"other\", W/{etag}\r\n")).status, 304, "weak comparison");
    assert_eq!(s.get_with("/a.txt", "If-None-Match: \"other\"\r\n").status, 200);
    assert_eq!(s.get_with("/a.txt", "If-None-Match: *\r\n").status, 304);
    assert_eq!(s.get_with("/a.txt", &format!("If-Modified-Since: {lm}\r\n")).status, 304);
    assert_eq!(s.get_with("/a.txt", "If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT\r\n").status, 200);
    assert_eq!(s.get_with("/a.txt", "If-Modified-Since: garbage\r\n").status, 200);
    // If-None-Match wins over If-Modified-Since.
    assert_eq!(s.get_with("/a.txt", &format!("If-None-Match: \"x\"\r\nIf-Modified-Since: {lm}\r\n")).status, 200);
    assert_eq!(s.get_with("/a.txt", "If-Match: \"nope\"\r\n").status, 412);
    assert_eq!(s.get_with("/a.txt", &format!("If-Match: {etag}\r\n")).status, 200);
    assert_eq!(s.get_with("/a.txt", &format!("If-Match: W/{etag}\r\n")).status, 412, "If-Match compares strongly");
    assert_eq!(s.get_with("/a.txt", "If-Unmodified-Since: Sat, 01 Jan 2000 00:00:00 GMT\r\n").status, 412);
    assert_eq!(s.get_with("/a.txt", &format!("If-Unmodified-Since: {lm}\r\n")).status, 200);
}

fn ranges(mpm: &str) {
    let s = Server::start(mpm, "");
    let r = s.get_with("/a.txt", "Range: bytes=0-4\r\n");
    assert_eq!((r.status, r.body.as_slice()), (206, &b"01234"[..]));
    assert_eq!(r.header("Content-Range"), Some("bytes 0-4/20"));
    let r = s.get_with("/a.txt", "Range: bytes=-3\r\n");
    assert_eq!((r.status, r.body.as_slice()), (206, &b"hij"[..]));
    let r = s.get_with("/a.txt", "Range: bytes=15-\r\n");
    assert_eq!(r.body, b"fghij");
    let r = s.get_with("/a.txt", "Range: bytes=0-1,10-11\r\n");
    assert_eq!(r.status, 206);
    let ct = r.header("Content-Type").unwrap();
    let boundary = ct.strip_prefix("multipart/byteranges; boundary=").expect(ct);
    let text = r.text();
    assert_eq!(text.matches(&format!("--{boundary}\r\n")).count(), 2);
    assert!(text.contains("Content-Range: bytes 0-1/20\r\n\r\n01\r\n"), "{text}");
    assert!(text.contains("Content-Range: bytes 10-11/20\r\n\r\nab\r\n"), "{text}");
    assert!(text.ends_with(&format!("--{boundary}--\r\n")));
    assert_eq!(r.header("Content-Length").unwrap().parse::<usize>().unwrap(), r.body.len());
    let r = s.get_with("/a.txt", "Range: bytes=50-60\r\n");
    assert_eq!(r.status, 416);
    assert_eq!(r.header("Content-Range"), Some("bytes */20"));
    assert_eq!(s.get_with("/a.txt", "Range: bytes=5-2\r\n").status, 200, "invalid range is ignored");
    assert_eq!(s.get_with("/a.txt", "Range: lines=1-2\r\n").status, 200);
    let etag = s.get("/a.txt").header("ETag").unwrap().to_string();
    assert_eq!(s.get_with("/a.txt", &format!("Range: bytes=0-1\r\nIf-Range: {etag}\r\n")).status, 206);
    assert_eq!(s.get_with("/a.txt", "Range: bytes=0-1\r\nIf-Range: \"stale\"\r\n").status, 200);
    assert_eq!(s.get_with("/a.txt", "Range: bytes=0-1\r\nIf-Range: Sat, 01 Jan 2000 00:00:00 GMT\r\n").status, 200);
}

fn mime_types(mpm: &str) {
    let dir = TempDir::new("mime");
    standard_site(&dir);
    dir.write("htdocs/x.custom", "c");
    dir.write("htdocs/y.foo", "f");
    dir.write("htdocs/z.unknownext", "u");
    dir.write("my.types", "text/x-foo foo\n");
    let s = Server::start_in(dir, mpm, "TypesConfig my.types\nAddType application/x-custom .custom\nAddDefaultCharset utf-8");
    assert_eq!(s.get("/x.custom").header("Content-Type"), Some("application/x-custom"));
    assert_eq!(s.get("/y.foo").header("Content-Type"), Some("text/x-foo"));
    assert_eq!(s.get("/z.unknownext").header("Content-Type"), None, "no type rather than a guess, as Apache");
    let dir = TempDir::new("mime2");
    standard_site(&dir);
    let s = Server::start_in(dir, mpm, "AddDefaultCharset utf-8");
    assert_eq!(s.get("/index.html").header("Content-Type"), Some("text/html; charset=utf-8"));
}

fn directories(mpm: &str) {
    let s = Server::start(mpm, "DirectoryIndex missing.html index.html\n<Directory htdocs/sub>\nOptions +Indexes\n</Directory>");
    let r = s.get("/");
    assert_eq!((r.status, r.text().as_str()), (200, "<html>hello</html>\n"));
    let r = s.get("/sub?x=1");
    assert_eq!(r.status, 301);
    // Self-referential: https:// over TLS (static_files_tls.rs).
    assert_eq!(r.header("Location"), Some(format!("{}://localhost/sub/?x=1", scheme()).as_str()));
    let r = s.get("/sub/");
    assert_eq!(r.status, 200);
    assert!(r.text().contains("<title>Index of /sub</title>") && r.text().contains("page.html"), "{}", r.text());
    assert_eq!(s.get("/noindex/").status, 403, "no index and no Options Indexes");
    let log = s.wait_log("error.log", "Cannot serve directory");
    assert!(log.contains("No matching DirectoryIndex"));
}

fn error_documents(mpm: &str) {
    let dir = TempDir::new("errdoc");
    standard_site(&dir);
    dir.write("htdocs/errors/404.html", "custom not found page");
    let s = Server::start_in(dir, mpm, "ErrorDocument 404 /errors/404.html\nErrorDocument 403 \"go away\"\nErrorDocument 405 http://example.com/nope");
    let r = s.get("/missing");
    assert_eq!((r.status, r.text().as_str()), (404, "custom not found page"));
    assert_eq!(r.header("Content-Type"), Some("text/html"));
    let r = s.get("/noindex/");
    assert_eq!((r.status, r.text().as_str()), (403, "go away"));
    let out = s.raw(b"DELETE /a.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    let (r, _) = parse_response(&out);
    assert_eq!((r.status, r.header("Location")), (302, Some("http://example.com/nope")));
}

fn containment_and_symlinks(mpm: &str) {
    let dir = TempDir::new("links");
    standard_site(&dir);
    dir.write("secret.txt", "outside the root");
    std::os::unix::fs::symlink(dir.0.join("secret.txt"), dir.0.join("htdocs/out-link")).unwrap();
    std::fs::create_dir_all(dir.0.join("htdocs/nolinks")).unwrap();
    std::os::unix::fs::symlink(dir.0.join("secret.txt"), dir.0.join("htdocs/nolinks/link")).unwrap();
    let s = Server::start_in(dir, mpm, "<Directory htdocs/nolinks>\nOptions -FollowSymLinks\n</Directory>");
    assert_eq!(s.get("/../secret.txt").status, 400);
    assert_eq!(s.get("/%2e%2e/secret.txt").status, 400);
    assert_eq!(s.get("/sub/..%2f..%2fsecret.txt").status, 404);
    assert_eq!(s.get("/out-link").status, 200, "FollowSymLinks is on by default, as in Apache");
    let r = s.get("/nolinks/link");
    assert_eq!(r.status, 403);
    assert!(!r.text().contains("outside the root"));
}

fn access_control(mpm: &str) {
    let s = Server::start(mpm, "<Directory htdocs/sub>\nRequire all denied\n</Directory>\n<Files \"a.txt\">\nRequire ip 10.0.0.0/8\n</Files>\n<Location /noindex>\nRequire local\n</Location>");
    assert_eq!(s.get("/sub/page.html").status, 403);
    assert_eq!(s.get("/a.txt").status, 403);
    assert_eq!(s.get("/noindex/file.txt").status, 200);
    assert_eq!(s.get("/index.html").status, 200);
    let log = s.wait_log("error.log", "client denied");
    assert!(log.contains("client denied by server configuration"));
}

fn virtual_hosts(mpm: &str) {
    let dir = TempDir::new("vhosts");
    standard_site(&dir);
    dir.write("one/index.html", "site one");
    dir.write("two/index.html", "site two");
    let port_marker = "*";
    let s = Server::start_in(
        dir,
        mpm,
        &format!("<VirtualHost {port_marker}>\nServerName one.test\nDocumentRoot one\nCustomLog one.log \"%v %V %>s\"\n</VirtualHost>\n<VirtualHost {port_marker}>\nServerName two.test\nServerAlias *.two.test\nDocumentRoot two\n</VirtualHost>"),
    );
    let host = |h: &str| parse_response(&s.raw(format!("GET / HTTP/1.1\r\nHost: {h}\r\nConnection: close\r\n\r\n").as_bytes())).0.text();
    assert_eq!(host("one.test"), "site one");
    assert_eq!(host("ONE.test:80"), "site one");
    assert_eq!(host("two.test"), "site two");
    assert_eq!(host("www.two.test"), "site two");
    assert_eq!(host("other.test"), "site one", "the first virtual host is the default");
    // The first request's line: under prefork another child's line (the
    // default host's, "other.test") may reach the file before it.
    let log = s.wait_log("one.log", "one.test one.test 200");
    assert!(log.contains("one.test one.test 200"), "{log}");
}

fn large_file_by_curl(mpm: &str) {
    let dir = TempDir::new("large");
    standard_site(&dir);
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    dir.write("htdocs/big.bin", &data);
    let s = Server::start_in(dir, mpm, "");
    let out = Command::new("curl").args(["-s", "--fail", &s.url("/big.bin")]).output().expect("curl");
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), data.len());
    assert!(out.stdout == data, "3 MB body differs");
    let out = Command::new("curl").args(["-s", "-r", "1000000-1000009", &s.url("/big.bin")]).output().unwrap();
    assert_eq!(out.stdout, &data[1_000_000..1_000_010]);
    // Several in one connection, as a browser does.
    let out = Command::new("curl").args(["-s", "-w", "%{http_code} %{num_connects}\n", "-o", "/dev/null", &s.url("/a.txt"), "-o", "/dev/null", &s.url("/big.bin"), "-o", "/dev/null", &s.url("/index.html")]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200 1\n200 0\n200 0\n");
    // A file once large that changes is served as it is now.
    let big = s.dir.0.join("htdocs/big.bin");
    std::fs::write(&big, "tiny now").unwrap();
    assert_eq!(s.get("/big.bin").body, b"tiny now");
    std::fs::write(&big, &data[..200_000]).unwrap();
    assert_eq!(s.get("/big.bin").body.len(), 200_000);
    std::fs::write(&big, &data[..100_000]).unwrap();
    assert!(s.get("/big.bin").body == data[..100_000]);
    // Large files stay open between requests: rewritten in place or replaced
    // under the same name at the same size, the new bytes are served.
    for round in 0..3 {
        assert!(s.get("/big.bin").body == data[..100_000]);
        let other: Vec<u8> = data[..100_000].iter().map(|b| b ^ (round + 1)).collect();
        if round == 1 {
            let tmp = s.dir.0.join("htdocs/big.tmp");
            std::fs::write(&tmp, &other).unwrap();
            std::fs::rename(&tmp, &big).unwrap();
        } else {
            std::fs::write(&big, &other).unwrap();
        }
        assert!(s.get("/big.bin").body == other, "round {round}: stale bytes");
        std::fs::write(&big, &data[..100_000]).unwrap();
    }
    std::fs::remove_file(&big).unwrap();
    assert_eq!(s.get("/big.bin").status, 404);
    std::fs::create_dir(&big).unwrap();
    assert_eq!(s.get("/big.bin").status, 301);
}

/// A file sent in pieces (over TLS, 64 KB read and encrypted at a time,
/// with the head held to leave with the first records): ranges across the
/// pieces' edges, multipart ranges whose separators sit between file
/// pieces, and pipelined requests on one connection, byte for byte.
fn file_pieces_in_order(mpm: &str) {
    let dir = TempDir::new("pieces");
    standard_site(&dir);
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 13 % 251) as u8).collect();
    dir.write("htdocs/big.bin", &data);
    let s = Server::start_in(dir, mpm, "");
    let r = s.get_with("/big.bin", "Range: bytes=65530-65545\r\n");
    assert_eq!((r.status, r.body.as_slice()), (206, &data[65530..65546]));
    let r = s.get_with("/big.bin", "Range: bytes=10-20,65530-200009,299990-\r\n");
    assert_eq!(r.status, 206);
    assert_eq!(r.header("Content-Length").unwrap().parse::<usize>().unwrap(), r.body.len());
    let ct = r.header("Content-Type").unwrap();
    let boundary = format!("--{}", ct.strip_prefix("multipart/byteranges; boundary=").expect(ct));
    let mut parts = Vec::new();
    let mut rest = r.body.as_slice();
    while let Some(at) = rest.windows(boundary.len()).position(|w| w == boundary.as_bytes()) {
        let part = &rest[..at];
        if let Some(start) = part.windows(4).position(|w| w == b"\r\n\r\n") {
            parts.push(part[start + 4..part.len() - 2].to_vec());
        }
        rest = &rest[at + boundary.len()..];
    }
    assert_eq!(parts, [&data[10..21], &data[65530..200010], &data[299990..]]);
    let pipelined = b"HEAD /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\nGET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\nGET /big.bin HTTP/1.1\r\nHost: localhost\r\nRange: bytes=70000-70009\r\nConnection: close\r\n\r\n";
    let out = s.raw(pipelined);
    let (head, rest) = parse_response_for(&out, true);
    assert_eq!((head.status, head.header("Content-Length")), (200, Some("300000")));
    let (whole, rest) = parse_response(rest);
    assert_eq!(whole.status, 200);
    assert!(whole.body == data, "the whole file differs ({} bytes)", whole.body.len());
    let (range, rest) = parse_response(rest);
    assert_eq!((range.status, range.body.as_slice(), rest.len()), (206, &data[70000..70010], 0));
}

fn access_log_combined(mpm: &str) {
    let s = Server::start(mpm, "");
    let out = s.raw(b"GET /a.txt?x=1 HTTP/1.1\r\nHost: localhost\r\nReferer: http://r/\r\nUser-Agent: test-agent\r\nConnection: close\r\n\r\n");
    assert_eq!(status_of(&out), 200);
    let log = s.wait_log("access.log", "test-agent");
    let line = log.lines().find(|l| l.contains("test-agent")).expect("access log line");
    let re_ok = line.starts_with("127.0.0.1 - - [") && line.contains("] \"GET /a.txt?x=1 HTTP/1.1\" 200 20 \"http://r/\" \"test-agent\"");
    assert!(re_ok, "{line}");
}
