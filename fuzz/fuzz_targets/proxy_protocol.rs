//! libFuzzer's entry for the `proxy_protocol` target: the body is
//! `warren_fuzz_targets::proxy_protocol::run`, which `cargo test` also runs over the corpus.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| warren_fuzz_targets::proxy_protocol::run(data));
