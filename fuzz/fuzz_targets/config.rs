//! libFuzzer's entry for the `config` target: the body is
//! `warren_fuzz_targets::config::run`, which `cargo test` also runs over the corpus.
#![no_main]

warren_fuzz_targets::refuse_name_lookups!();

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| warren_fuzz_targets::config::run(data));
