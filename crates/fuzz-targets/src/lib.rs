//! Fuzz targets for the parsers that read bytes warren does not control:
//! request heads, chunked bodies and HTTP/2 header blocks from clients,
//! FastCGI records and response heads from applications, and configuration
//! files.
//!
//! Each target is a plain `fn(&[u8])` that panics when an invariant breaks,
//! so that the same code runs in two harnesses:
//! - `fuzz/` (cargo-fuzz, nightly): each target wrapped in libFuzzer's
//!   `fuzz_target!`, run for millions of inputs by `fuzz/run.sh`;
//! - `tests/corpus.rs` (stable, `cargo test`): every target over every file
//!   of its corpus in `fuzz/corpus/<target>/`, so the suite replays what the
//!   fuzzer found interesting, and any crash once saved there.
//!
//! Beyond "does not panic", the targets compare each parser with itself fed
//! in different pieces (the MPMs feed them whatever one read returned), and
//! where a parser is small enough with a plain whole-input reading of the
//! same rules.
//!
//! - [`head`]: request heads, as the MPMs read them one after another on a
//!   connection (`parse_head_from` resumed, bodies skipped or decoded);
//! - [`chunked`]: `BodyDecoder` on chunked bodies;
//! - [`fcgi_record`]: `RecordReader`, name-value pairs, BEGIN/END_REQUEST;
//! - [`fcgi_response`]: the handler's `ResponseReader` (an application's
//!   records -> its response head and body);
//! - [`config`]: `load_text`, the whole configuration reading;
//! - [`proxy_protocol`]: the PROXY protocol header before HTTP;
//! - [`hpack`]: HTTP/2 header blocks (the HPACK decoder, and the encoder's
//!   blocks read back).

pub mod chunked;
pub mod config;
pub mod fcgi_record;
pub mod fcgi_response;
pub mod head;
pub mod hpack;
pub mod proxy_protocol;

/// A target's body: panics when the input breaks an invariant.
pub type Target = fn(&[u8]);

/// Every target by the name of its corpus directory and cargo-fuzz binary.
pub const TARGETS: &[(&str, Target)] = &[
    ("head", head::run),
    ("chunked", chunked::run),
    ("fcgi_record", fcgi_record::run),
    ("fcgi_response", fcgi_response::run),
    ("config", config::run),
    ("proxy_protocol", proxy_protocol::run),
    ("hpack", hpack::run),
];

/// Cut points for feeding `len` bytes in pieces: every piece boundary the
/// targets try besides "all at once" and "one byte at a time". Fixed
/// fractions rather than bytes of the input, so that a mutation of the
/// input does not also move where it is cut.
pub fn cuts(len: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = [1, len / 3, len / 2, len * 2 / 3, len.saturating_sub(1)]
        .into_iter()
        .filter(|&c| c > 0 && c < len)
        .map(|c| vec![c])
        .collect();
    if len >= 3 {
        out.push(vec![len / 3, len * 2 / 3]);
    }
    out.dedup();
    out
}

/// `data` split at `cuts` (increasing, inside it).
pub fn pieces<'a>(data: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut from = 0;
    for &c in cuts {
        out.push(&data[from..c]);
        from = c;
    }
    out.push(&data[from..]);
    out
}

/// Makes every host-name lookup of the binary that expands it fail at once
/// ("no such name") without asking a resolver: `Listen name:80` and
/// `<VirtualHost name>` resolve names while the configuration is read, and a
/// fuzzed configuration must neither wait on DNS nor send millions of
/// queries. Defined in the binary itself (the fuzz target and the corpus
/// test), whose definition the linker prefers to the C library's (and to the
/// sanitizer's weak interceptor).
#[macro_export]
macro_rules! refuse_name_lookups {
    () => {
        #[no_mangle]
        pub extern "C" fn getaddrinfo(
            _node: *const $crate::__libc::c_char,
            _service: *const $crate::__libc::c_char,
            _hints: *const $crate::__libc::addrinfo,
            _res: *mut *mut $crate::__libc::addrinfo,
        ) -> $crate::__libc::c_int {
            $crate::__libc::EAI_NONAME
        }
    };
}

#[doc(hidden)]
pub use libc as __libc;
