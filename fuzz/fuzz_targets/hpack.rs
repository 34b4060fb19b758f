//! libFuzzer's entry for the `hpack` target: the body is
//! `warren_fuzz_targets::hpack::run`, which `cargo test` also runs over the corpus.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| warren_fuzz_targets::hpack::run(data));
