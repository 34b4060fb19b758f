//! Writes the fuzz targets' seed inputs into `fuzz/corpus/<target>/`, taken
//! from the tests: the string literals of the test sources that are request
//! heads, chunked bodies, CGI header blocks or configuration files (with
//! `format!` placeholders filled in), `example/warren.conf`, and FastCGI
//! streams built with the record writer around the tests' header blocks.
//!
//! `cargo run -p warren-fuzz-targets --example seed_corpus` (from anywhere in
//! the workspace). It only adds files, named after their content, so running
//! it again changes nothing and never removes what the fuzzer kept.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use warren_fcgi::record::{self, ProtocolStatus, RecordType, Role};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut literals = Vec::new();
    for dir in ["crates/http/src", "crates/fcgi/src", "crates/handler/src", "crates/config/src", "crates/mpm/src", "crates/serve/src", "crates/warren/tests", "crates/warren/tests/common"] {
        for file in rust_files(&root.join(dir)) {
            let src = std::fs::read_to_string(&file).expect("a source file");
            let in_config = file.starts_with(root.join("crates/config")) || file.starts_with(root.join("crates/warren/tests"));
            for lit in string_literals(&src) {
                literals.push((in_config, fill_placeholders(&lit)));
            }
        }
    }

    let mut seeds = Seeds::default();
    for (in_config, lit) in &literals {
        if looks_like_head(lit) {
            seeds.add("head", lit);
            if let Some(body) = body_after_chunked_head(lit) {
                seeds.add("chunked", body);
            }
        } else if looks_like_chunked(lit) {
            seeds.add("chunked", lit);
        } else if looks_like_cgi_headers(lit) {
            for stream in answers(lit) {
                seeds.add("fcgi_response", &stream);
            }
        } else if *in_config && looks_like_config(lit) {
            seeds.add("config", lit);
        }
    }
    seeds.add("config", &std::fs::read(root.join("example/warren.conf")).expect("example/warren.conf"));
    pipelined(&mut seeds);
    for stream in record_streams() {
        seeds.add("fcgi_record", &stream);
    }
    for stream in odd_answers() {
        seeds.add("fcgi_response", &stream);
    }

    let corpus = root.join("fuzz/corpus");
    for (target, data) in &seeds.0 {
        let dir = corpus.join(target);
        std::fs::create_dir_all(&dir).expect("the corpus directory");
        std::fs::write(dir.join(format!("seed-{:016x}", fnv1a(data))), data).expect("a seed file");
    }
    for target in ["head", "chunked", "fcgi_record", "fcgi_response", "config"] {
        let n = seeds.0.iter().filter(|(t, _)| t == target).count();
        println!("{target}: {n} seeds");
    }
}

#[derive(Default)]
struct Seeds(BTreeSet<(String, Vec<u8>)>);

impl Seeds {
    fn add(&mut self, target: &str, data: &[u8]) {
        // The fuzzer's default -max_len: larger seeds would be cut.
        if data.len() <= 4096 && !(target == "config" && warren_fuzz_targets::config::reaches_other_files(&String::from_utf8_lossy(data))) {
            self.0.insert((target.to_string(), data.to_vec()));
        }
    }
}

fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "rs")).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// The contents of the string literals of Rust source (`"..."`, `b"..."`,
/// `r#"..."#`), escapes decoded; comments and char literals skipped.
fn string_literals(src: &str) -> Vec<Vec<u8>> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let ident = |i: usize| i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => i = find(b, i, b"\n").unwrap_or(b.len()),
            b'/' if b.get(i + 1) == Some(&b'*') => i = find(b, i + 2, b"*/").map_or(b.len(), |e| e + 2),
            b'\'' => {
                // A char literal ('x', '\n', '\'', 'é') or a lifetime ('a).
                if b.get(i + 1) == Some(&b'\\') {
                    i = find(b, i + 3, b"'").map_or(b.len(), |e| e + 1);
                } else {
                    let c = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                    i += if b.get(i + 1 + c) == Some(&b'\'') { c + 2 } else { 1 };
                }
            }
            b'r' if !ident(i) && matches!(b.get(i + 1), Some(b'"' | b'#')) => {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                let open = i + 1 + hashes;
                if b.get(open) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = [b"\"".as_slice(), &vec![b'#'; hashes]].concat();
                let end = find(b, open + 1, &close).unwrap_or(b.len());
                out.push(b[open + 1..end].to_vec());
                i = end + close.len();
            }
            b'"' => {
                let (lit, end) = unescape(b, i + 1);
                out.push(lit);
                i = end;
            }
            _ => i += 1,
        }
    }
    out
}

fn find(b: &[u8], from: usize, what: &[u8]) -> Option<usize> {
    b.get(from..)?.windows(what.len()).position(|w| w == what).map(|p| from + p)
}

/// Decodes a string literal's body from `i`; returns it and where it ends.
fn unescape(b: &[u8], mut i: usize) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    while i < b.len() {
        match b[i] {
            b'"' => return (out, i + 1),
            b'\\' => {
                let e = b.get(i + 1).copied().unwrap_or(b'\\');
                i += 2;
                match e {
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'0' => out.push(0),
                    b'x' => {
                        let hex = std::str::from_utf8(&b[i..(i + 2).min(b.len())]).unwrap_or("");
                        out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                        i += 2;
                    }
                    b'u' => {
                        let end = find(b, i, b"}").unwrap_or(i);
                        let hex = std::str::from_utf8(&b[(i + 1).min(end)..end]).unwrap_or("");
                        let c = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32).unwrap_or('?');
                        out.extend_from_slice(c.to_string().as_bytes());
                        i = end + 1;
                    }
                    b'\n' => {
                        while b.get(i).is_some_and(u8::is_ascii_whitespace) {
                            i += 1;
                        }
                    }
                    other => out.push(other),
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    (out, i)
}

/// `format!`'s `{name}`, `{}` and `{:?}` become `1`, `{{` and `}}` braces;
/// `${NAME}` (a configuration variable) stays.
fn fill_placeholders(lit: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lit.len());
    let mut i = 0;
    while i < lit.len() {
        match lit[i] {
            b'{' if lit.get(i + 1) == Some(&b'{') => {
                out.push(b'{');
                i += 2;
            }
            b'}' if lit.get(i + 1) == Some(&b'}') => {
                out.push(b'}');
                i += 2;
            }
            b'{' if i == 0 || lit[i - 1] != b'$' => {
                let end = lit[i..].iter().position(|&c| c == b'}').map(|p| i + p);
                match end {
                    Some(end) if lit[i + 1..end].iter().all(|&c| c.is_ascii_alphanumeric() || b"_:?#.".contains(&c)) => {
                        out.push(b'1');
                        i = end + 1;
                    }
                    _ => {
                        out.push(b'{');
                        i += 1;
                    }
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

fn first_line(lit: &[u8]) -> &[u8] {
    let start = lit.iter().position(|&c| c != b'\r' && c != b'\n').unwrap_or(lit.len());
    let rest = &lit[start..];
    &rest[..rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len())]
}

fn looks_like_head(lit: &[u8]) -> bool {
    let line = first_line(lit);
    let method = line.iter().take_while(|c| c.is_ascii_uppercase()).count();
    method > 0 && line.get(method) == Some(&b' ') && find(line, 0, b" HTTP/").is_some()
}

fn body_after_chunked_head(lit: &[u8]) -> Option<&[u8]> {
    let lower = lit.to_ascii_lowercase();
    find(&lower, 0, b"transfer-encoding: chunked")?;
    let end = find(lit, 0, b"\r\n\r\n")?;
    Some(&lit[end + 4..]).filter(|b| !b.is_empty())
}

fn looks_like_chunked(lit: &[u8]) -> bool {
    let digits = lit.iter().take_while(|c| c.is_ascii_hexdigit()).count();
    digits > 0 && matches!(lit.get(digits), Some(b'\r' | b';'))
}

fn looks_like_cgi_headers(lit: &[u8]) -> bool {
    let line = first_line(lit);
    let name = line.iter().take_while(|&&c| c.is_ascii_alphanumeric() || c == b'-').count();
    name > 0 && line[name..].starts_with(b": ") && lit.contains(&b'\n') && find(lit, 0, b" HTTP/").is_none()
}

fn looks_like_config(lit: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(lit) else { return false };
    let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')) else { return false };
    let word = line.trim_start_matches(['<', '/']).split(|c: char| c.is_whitespace() || c == '>').next().unwrap_or("");
    text.contains('\n') && word.len() > 1 && word.starts_with(|c: char| c.is_ascii_uppercase()) && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
}

/// Heads one after another on a connection, with and without bodies.
fn pipelined(seeds: &mut Seeds) {
    let get = b"GET /a HTTP/1.1\r\nHost: a\r\n\r\n".as_slice();
    let post = b"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello".as_slice();
    let chunked = b"POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;n=v\r\n world\r\n0\r\nX-T: 1\r\n\r\n".as_slice();
    let old = b"\r\nGET http://h.test:81/x?y HTTP/1.0\nConnection: keep-alive\n\n".as_slice();
    seeds.add("head", &[get, get].concat());
    seeds.add("head", &[post, get].concat());
    seeds.add("head", &[chunked, get, post].concat());
    seeds.add("head", &[old, get].concat());
    seeds.add("chunked", b"5\r\nhello\r\n6;name=val\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\nGET /next");
    seeds.add("chunked", b"0\r\n\r\n");
    seeds.add("chunked", b"000\t; ext\r\n\r\n");
    seeds.add("chunked", b"FFFFFFFFFFFFFFFF\r\n");
}

/// A CGI header block as an application sends it: STDOUT records (the
/// block with a body, whole and in small records, after some STDERR), then
/// END_REQUEST.
fn answers(block: &[u8]) -> Vec<Vec<u8>> {
    let mut answer = block.to_vec();
    if find(block, 0, b"\n\n").is_none() && find(block, 0, b"\n\r\n").is_none() {
        answer.extend_from_slice(b"\r\n");
    }
    answer.extend_from_slice(b"body");
    let mut out = Vec::new();
    for size in [answer.len().max(1), 7, 1] {
        let mut s = Vec::new();
        if size == 7 {
            record::write_record(&mut s, RecordType::Stderr, 1, b"PHP Notice: x\n");
        }
        for piece in answer.chunks(size) {
            record::write_record(&mut s, RecordType::Stdout, 1, piece);
        }
        record::write_record(&mut s, RecordType::Stdout, 1, b"");
        record::end_request(&mut s, 1, 0, ProtocolStatus::RequestComplete);
        out.push(s);
    }
    out
}

/// Answers that end badly, or carry records the reader skips.
fn odd_answers() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut s = Vec::new();
    record::end_request(&mut s, 1, 0, ProtocolStatus::Overloaded);
    out.push(s);
    let mut s = Vec::new();
    record::write_record(&mut s, RecordType::Stdout, 1, b"Status: 200\r\n");
    record::end_request(&mut s, 1, 0, ProtocolStatus::RequestComplete);
    out.push(s);
    let mut s = Vec::new();
    record::write_record(&mut s, RecordType::Stdout, 1, b"Location: /next.php\n\n");
    record::write_record(&mut s, RecordType::Data, 1, b"ignored");
    record::unknown_type(&mut s, 42);
    record::end_request(&mut s, 1, 0, ProtocolStatus::RequestComplete);
    out.push(s);
    out.push(vec![2, 6, 0, 1, 0, 0, 0, 0]);
    out
}

/// Both directions of a FastCGI exchange, and the management records.
fn record_streams() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut request = Vec::new();
    record::begin_request(&mut request, 1, Role::Responder, record::FLAG_KEEP_CONN);
    let mut params = Vec::new();
    for (n, v) in [("SCRIPT_FILENAME", "/srv/index.php"), ("QUERY_STRING", "a=1"), ("REQUEST_METHOD", "POST"), ("CONTENT_LENGTH", "3"), ("EMPTY", "")] {
        record::write_pair(&mut params, n.as_bytes(), v.as_bytes());
    }
    record::write_pair(&mut params, &[b'N'; 128], &[b'v'; 300]);
    record::write_stream(&mut request, RecordType::Params, 1, &params);
    record::write_stream(&mut request, RecordType::Params, 1, b"");
    record::write_stream(&mut request, RecordType::Stdin, 1, b"a=1");
    record::write_stream(&mut request, RecordType::Stdin, 1, b"");
    out.push(request);

    let mut answer = Vec::new();
    record::write_record(&mut answer, RecordType::Stderr, 1, b"warning\n");
    record::write_record(&mut answer, RecordType::Stdout, 1, b"Content-Type: text/plain\r\n\r\nhello");
    record::write_record(&mut answer, RecordType::Stdout, 1, b"");
    record::end_request(&mut answer, 1, 255, ProtocolStatus::Overloaded);
    out.push(answer);

    let mut values = Vec::new();
    let mut pairs = Vec::new();
    record::write_pair(&mut pairs, b"FCGI_MPXS_CONNS", b"");
    record::write_record(&mut values, RecordType::GetValues, 0, &pairs);
    let mut result = Vec::new();
    record::write_pair(&mut result, b"FCGI_MPXS_CONNS", b"0");
    record::write_record(&mut values, RecordType::GetValuesResult, 0, &result);
    record::unknown_type(&mut values, 42);
    record::write_record(&mut values, RecordType::AbortRequest, 1, b"");
    out.push(values);

    // Unpadded, padded as far as a header allows, and one record cut short.
    out.push(vec![1, 6, 0, 1, 0, 5, 0, 0, b'h', b'e', b'l', b'l', b'o']);
    let mut padded = vec![1, 7, 0, 2, 0, 1, 255, 0, b'x'];
    padded.extend(std::iter::repeat_n(0, 255));
    out.push(padded);
    out.push(vec![1, 6, 0, 1, 0, 20, 0, 0, b'c', b'u', b't']);
    // Lengths in the 4-byte form though short.
    let mut long_form = vec![1, 4, 0, 1, 0, 10, 6, 0, 0x80, 0, 0, 1, 0x80, 0, 0, 1, b'N', b'V'];
    long_form.extend([0; 6]);
    out.push(long_form);
    out
}
