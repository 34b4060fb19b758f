//! Compression as mod_deflate and mod_brotli: encoded bodies decode to the
//! file, negotiation, what is never encoded (ranges, small bodies, other
//! types), HEAD, 304 with the suffixed ETag, Vary, precompressed copies,
//! a changed file encoded afresh, and PHP answers encoded as they stream.

mod common;
use common::*;

use std::io::{Read, Write};
use std::process::Command;

each_mpm!(
    gzip_and_brotli_bodies,
    what_is_not_encoded,
    head_and_not_modified,
    precompressed_copies,
    changed_file_is_encoded_afresh,
    filters_by_extension_and_directory,
    php_answers_are_encoded,
    php_flushes_reach_the_client_encoded,
    no_gzip_from_the_environment,
);

const FILTERS: &str = "AddOutputFilterByType DEFLATE;BROTLI_COMPRESS text/css text/html\n";

fn css() -> Vec<u8> {
    (0..400).map(|i| format!(".rule-{i} {{ color: #{:06x}; margin: {}px }}\n", i * 7919 % 0xffffff, i % 17)).collect::<String>().into_bytes()
}

fn gunzip(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(b).read_to_end(&mut out).expect("a gzip body");
    out
}

fn unbrotli(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(b, 4096).read_to_end(&mut out).expect("a brotli body");
    out
}

fn site(mpm: &str, extra: &str) -> Server {
    let dir = TempDir::new(&format!("compress-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/style.css", css());
    dir.write("htdocs/tiny.css", "a{b:c}");
    dir.write("htdocs/logo.png", vec![7u8; 3000]);
    Server::start_in(dir, mpm, extra)
}

fn gzip_and_brotli_bodies(mpm: &str) {
    let s = site(mpm, FILTERS);
    let r = s.get_with("/style.css", "Accept-Encoding: gzip, deflate\r\n");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Encoding"), Some("gzip"));
    assert_eq!(r.header("Vary"), Some("Accept-Encoding"));
    assert!(r.header("Content-Length").is_some(), "a cached static body has a length: {:?}", r.headers);
    assert!(r.header("Accept-Ranges").is_none());
    assert!(r.header("ETag").unwrap().ends_with("-gzip\""), "{:?}", r.header("ETag"));
    assert!(r.body.len() < css().len() / 3);
    assert_eq!(gunzip(&r.body), css());

    let r = s.get_with("/style.css", "Accept-Encoding: gzip, deflate, br\r\n");
    assert_eq!(r.header("Content-Encoding"), Some("br"), "br preferred when both are accepted");
    assert!(r.header("ETag").unwrap().ends_with("-br\""));
    assert_eq!(unbrotli(&r.body), css());

    let r = s.get_with("/style.css", "Accept-Encoding: br;q=0.5, gzip\r\n");
    assert_eq!(r.header("Content-Encoding"), Some("gzip"), "q-values count");

    // Not accepted: the file as it is, saying it depends on Accept-Encoding.
    for accept in ["", "Accept-Encoding: identity\r\n", "Accept-Encoding: gzip;q=0, br;q=0\r\n", "Accept-Encoding: compress\r\n"] {
        let r = s.get_with("/style.css", accept);
        assert_eq!(r.header("Content-Encoding"), None, "{accept:?}");
        assert_eq!(r.header("Vary"), Some("Accept-Encoding"), "{accept:?}");
        assert_eq!(r.body, css());
        assert!(!r.header("ETag").unwrap().contains("-gzip"));
    }

    // Keep-alive: the same coded answer twice on one connection (the
    // second from the cache), then a plain one.
    let mut c = s.connect();
    let req = "GET /style.css HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\n\r\n";
    c.write_all(format!("{req}{req}GET /style.css HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    let all = parse_all(&read_to_close(&mut c));
    assert_eq!(all.len(), 3);
    assert_eq!(gunzip(&all[0].body), css());
    assert_eq!(all[0].body, all[1].body);
    assert_eq!(all[2].body, css());
}

fn what_is_not_encoded(mpm: &str) {
    let s = site(mpm, FILTERS);
    // A range is of the file as it is.
    let r = s.get_with("/style.css", "Accept-Encoding: gzip\r\nRange: bytes=0-9\r\n");
    assert_eq!(r.status, 206);
    assert_eq!(r.header("Content-Encoding"), None);
    assert_eq!(r.body, &css()[..10]);
    // Too small to gain.
    let r = s.get_with("/tiny.css", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("Content-Encoding"), None);
    assert_eq!(r.body, b"a{b:c}");
    // A type no filter names: not encoded, nor varied.
    let r = s.get_with("/logo.png", "Accept-Encoding: gzip, br\r\n");
    assert_eq!(r.header("Content-Encoding"), None);
    assert_eq!(r.header("Vary"), None);
    assert_eq!(r.body.len(), 3000);
    // Errors are not.
    let r = s.get_with("/missing.css", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.status, 404);
    assert_eq!(r.header("Content-Encoding"), None);
    // Without any compression directive nothing changes.
    let plain = site(mpm, "");
    let r = plain.get_with("/style.css", "Accept-Encoding: gzip, br\r\n");
    assert_eq!(r.header("Content-Encoding"), None);
    assert_eq!(r.header("Vary"), None);
}

fn head_and_not_modified(mpm: &str) {
    let s = site(mpm, FILTERS);
    let get = s.get_with("/style.css", "Accept-Encoding: gzip\r\n");
    let head_req = "HEAD /style.css HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n";
    let head = parse_response_for(&s.raw(head_req.as_bytes()), true).0;
    for h in ["Content-Encoding", "Content-Length", "ETag", "Vary", "Content-Type"] {
        assert_eq!(head.header(h), get.header(h), "{h}");
    }
    let tag = get.header("ETag").unwrap().to_string();
    // The tag of the encoded answer: 304, with that tag.
    let r = s.get_with("/style.css", &format!("Accept-Encoding: gzip\r\nIf-None-Match: {tag}\r\n"));
    assert_eq!(r.status, 304);
    assert_eq!(r.header("ETag"), Some(tag.as_str()));
    assert_eq!(r.header("Vary"), Some("Accept-Encoding"));
    // The same version, asked for by a client that now takes brotli: 304
    // with the brotli tag.
    let r = s.get_with("/style.css", &format!("Accept-Encoding: br\r\nIf-None-Match: {tag}\r\n"));
    assert_eq!(r.status, 304);
    assert!(r.header("ETag").unwrap().ends_with("-br\""));
    // Another tag: the whole answer.
    let r = s.get_with("/style.css", "Accept-Encoding: gzip\r\nIf-None-Match: \"other-gzip\"\r\n");
    assert_eq!(r.status, 200);
    assert_eq!(gunzip(&r.body), css());

    // DeflateAlterETag NoChange: the identity answer's tag, and 304 for it.
    let s = site(mpm, &format!("{FILTERS}DeflateAlterETag NoChange\n"));
    let plain = s.get_with("/style.css", "").header("ETag").unwrap().to_string();
    let r = s.get_with("/style.css", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("Content-Encoding"), Some("gzip"));
    assert_eq!(r.header("ETag"), Some(plain.as_str()));
    let r = s.get_with("/style.css", &format!("Accept-Encoding: gzip\r\nIf-None-Match: {plain}\r\n"));
    assert_eq!(r.status, 304);
}

fn precompressed_copies(mpm: &str) {
    let dir = TempDir::new(&format!("precompressed-{mpm}"));
    standard_site(&dir);
    let js = b"function hello() { return 'precompressed'; }\n".repeat(50);
    dir.write("htdocs/app.js", &js);
    // Marked so that the test can tell the copies from warren's own encoding.
    let mut gz = flate2::GzBuilder::new().comment("made by the test").write(Vec::new(), flate2::Compression::best());
    gz.write_all(&js).unwrap();
    let gz = gz.finish().unwrap();
    dir.write("htdocs/app.js.gz", &gz);
    let mut br = brotli::CompressorWriter::new(Vec::new(), 4096, 11, 22);
    br.write_all(&js).unwrap();
    let br = br.into_inner();
    dir.write("htdocs/app.js.br", &br);
    // A copy older than its file is stale and never served.
    dir.write("htdocs/old.js", &js);
    dir.write("htdocs/old.js.gz", &gz);
    let old = dir.0.join("htdocs/old.js.gz");
    assert!(Command::new("touch").args(["-d", "2001-01-01"]).arg(&old).status().unwrap().success());
    let s = Server::start_in(dir, mpm, "PrecompressedFiles On\n");

    let r = s.get_with("/app.js", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("Content-Encoding"), Some("gzip"));
    assert_eq!(r.body, gz, "the .gz copy itself");
    assert_eq!(r.header("Vary"), Some("Accept-Encoding"));
    assert!(r.header("Content-Type").unwrap().contains("javascript"));
    let r = s.get_with("/app.js", "Accept-Encoding: gzip, br\r\n");
    assert_eq!(r.header("Content-Encoding"), Some("br"));
    assert_eq!(r.body, br);
    assert_eq!(unbrotli(&r.body), js);
    let r = s.get_with("/app.js", "");
    assert_eq!(r.header("Content-Encoding"), None);
    assert_eq!(r.body, js);
    let r = s.get_with("/app.js", "Accept-Encoding: gzip\r\nRange: bytes=0-4\r\n");
    assert_eq!(r.status, 206);
    assert_eq!(r.body, &js[..5], "ranges are of the file, never of a copy");
    let r = s.get_with("/old.js", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("Content-Encoding"), None);
    assert_eq!(r.body, js);
}

fn changed_file_is_encoded_afresh(mpm: &str) {
    let s = site(mpm, FILTERS);
    let r = s.get_with("/style.css", "Accept-Encoding: gzip\r\n");
    assert_eq!(gunzip(&r.body), css());
    let r = s.get_with("/style.css", "Accept-Encoding: br\r\n");
    assert_eq!(unbrotli(&r.body), css());
    let mut edited = css();
    edited.extend_from_slice(b".added { display: none }\n");
    s.dir.write("htdocs/style.css", &edited);
    let r = s.get_with("/style.css", "Accept-Encoding: gzip\r\n");
    assert_eq!(gunzip(&r.body), edited);
    let r = s.get_with("/style.css", "Accept-Encoding: br\r\n");
    assert_eq!(unbrotli(&r.body), edited);
}

fn filters_by_extension_and_directory(mpm: &str) {
    let dir = TempDir::new(&format!("compress-dirs-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/data/report.txt", css());
    dir.write("htdocs/data/keep.log", css());
    dir.write("htdocs/all/x.png", css());
    dir.write("htdocs/ht/table.csv", css());
    dir.write("htdocs/ht/.htaccess", "AddOutputFilterByType BROTLI_COMPRESS text/csv\n");
    dir.write("htdocs/data/table.csv", css());
    let root = dir.0.join("htdocs").display().to_string();
    let conf = format!(
        "DeflateCompressionLevel 9\nAddOutputFilter DEFLATE txt log\n<Directory {root}/data>\n    RemoveOutputFilter log\n</Directory>\n<Directory {root}/all>\n    SetOutputFilter BROTLI_COMPRESS\n</Directory>\n<Directory {root}/ht>\n    AllowOverride FileInfo\n</Directory>\n"
    );
    let s = Server::start_in(dir, mpm, &conf);
    let r = s.get_with("/data/report.txt", "Accept-Encoding: gzip, br\r\n");
    assert_eq!(r.header("Content-Encoding"), Some("gzip"), "only gzip is configured for .txt");
    assert_eq!(gunzip(&r.body), css());
    let r = s.get_with("/data/keep.log", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("Content-Encoding"), None);
    let r = s.get_with("/all/x.png", "Accept-Encoding: gzip, br\r\n");
    assert_eq!(r.header("Content-Encoding"), Some("br"));
    assert_eq!(unbrotli(&r.body), css());
    // From an .htaccess file, where AllowOverride FileInfo lets it in.
    let r = s.get_with("/ht/table.csv", "Accept-Encoding: gzip, br\r\n");
    assert_eq!(r.header("Content-Encoding"), Some("br"));
    assert_eq!(unbrotli(&r.body), css());
    let r = s.get_with("/data/table.csv", "Accept-Encoding: gzip, br\r\n");
    assert_eq!(r.header("Content-Encoding"), None);
}

fn php_answers_are_encoded(mpm: &str) {
    let dir = TempDir::new(&format!("compress-php-{mpm}"));
    standard_site(&dir);
    let page: String = (0..300).map(|i| format!("<p>post {i}: lorem ipsum dolor sit amet</p>\n")).collect();
    dir.write("htdocs/page.php", format!("<?php echo str_repeat('<p>post: lorem ipsum dolor sit amet</p>', 1); flush(); ?>{page}"));
    dir.write("htdocs/json.php", "<?php header('Content-Type: application/json'); echo json_encode(array_fill(0, 200, 'value'));");
    dir.write("htdocs/self.php", "<?php header('Content-Encoding: gzip'); echo gzencode(str_repeat('already ', 100));");
    let fpm = Fpm::start(&dir, "");
    let conf = format!("{}{FILTERS}", fpm.php_files());
    let s = Server::start_in(dir, mpm, &conf);
    let expected = format!("<p>post: lorem ipsum dolor sit amet</p>{page}");
    for (accept, decode) in [("gzip", gunzip as fn(&[u8]) -> Vec<u8>), ("br", unbrotli)] {
        let r = s.get_with("/page.php", &format!("Accept-Encoding: {accept}\r\n"));
        assert_eq!(r.status, 200);
        assert_eq!(r.header("Content-Encoding"), Some(accept));
        assert_eq!(r.header("Vary"), Some("Accept-Encoding"));
        assert_eq!(String::from_utf8(decode(&r.body)).unwrap(), expected);
    }
    let r = s.get_with("/page.php", "");
    assert_eq!(r.header("Content-Encoding"), None);
    assert_eq!(r.text(), expected);
    // A type no filter names.
    let r = s.get_with("/json.php", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("Content-Encoding"), None);
    assert!(r.text().starts_with("[\"value\""));
    // Encoded by the script itself: left alone.
    let r = s.get_with("/self.php", "Accept-Encoding: gzip\r\n");
    assert_eq!(r.header("Content-Encoding"), Some("gzip"));
    assert_eq!(gunzip(&r.body), b"already ".repeat(100));
    drop(fpm);
}

/// A script's flush() reaches the client through the encoder at once: the
/// first part decodes before the script has written the rest (it waits
/// for the test to create a file).
fn php_flushes_reach_the_client_encoded(mpm: &str) {
    let dir = TempDir::new(&format!("compress-flush-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/flush.php", "<?php echo str_repeat('first ', 10); flush(); for ($i = 0; $i < 400 && !file_exists(__DIR__ . '/go'); $i++) { usleep(50000); clearstatcache(); } echo 'second';");
    let fpm = Fpm::start(&dir, "");
    let conf = format!("{}{FILTERS}", fpm.php_files());
    let s = Server::start_in(dir, mpm, &conf);
    let mut c = s.connect();
    c.write_all(b"GET /flush.php HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let first = "first ".repeat(10);
    loop {
        let n = c.read(&mut buf).expect("the first part, before the script ends");
        assert!(n > 0, "closed before the first part: {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
        let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
        let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
        assert!(head.contains("content-encoding: gzip") && head.contains("transfer-encoding: chunked"), "{head}");
        let mut decoder = flate2::write::GzDecoder::new(Vec::new());
        decoder.write_all(&complete_chunks(&got[end + 4..])).unwrap();
        decoder.flush().unwrap();
        if decoder.get_ref().len() >= first.len() {
            assert_eq!(String::from_utf8_lossy(decoder.get_ref()), first);
            break;
        }
    }
    s.dir.write("htdocs/go", "");
    got.extend_from_slice(&read_to_close(&mut c));
    let r = parse_response(&got).0;
    assert_eq!(String::from_utf8(gunzip(&r.body)).unwrap(), format!("{first}second"));
    drop(fpm);
}

/// The payload of the whole chunks at the start of a chunked body.
fn complete_chunks(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line) = data.windows(2).position(|w| w == b"\r\n") {
        let Some(size) = std::str::from_utf8(&data[..line]).ok().and_then(|t| usize::from_str_radix(t, 16).ok()) else { break };
        if size == 0 || data.len() < line + 2 + size + 2 {
            break;
        }
        out.extend_from_slice(&data[line + 2..line + 2 + size]);
        data = &data[line + 2 + size + 2..];
    }
    out
}

/// Debian's setenvif.conf marks old browsers `no-gzip`: they get the file as it is.
fn no_gzip_from_the_environment(mpm: &str) {
    let s = site(mpm, &format!("{FILTERS}BrowserMatch ^OldBrowser no-gzip\n"));
    let r = s.get_with("/style.css", "Accept-Encoding: gzip\r\nUser-Agent: OldBrowser/1.0\r\n");
    assert_eq!((r.status, r.header("Content-Encoding")), (200, None));
    assert_eq!(r.body, css());
    let r = s.get_with("/style.css", "Accept-Encoding: gzip\r\nUser-Agent: NewBrowser/2.0\r\n");
    assert_eq!(r.header("Content-Encoding"), Some("gzip"));
}
