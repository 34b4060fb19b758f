//! Every fuzz target over every file of its corpus (`fuzz/corpus/<target>/`:
//! the seeds taken from the tests, and what the fuzzer kept as covering
//! something new), on stable Rust, as part of `cargo test`. A crash the
//! fuzzer found stays fixed once its input is added there.

use std::path::{Path, PathBuf};

warren_fuzz_targets::refuse_name_lookups!();

fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target)
}

#[test]
fn every_target_over_its_corpus() {
    let mut failed = Vec::new();
    for (name, target) in warren_fuzz_targets::TARGETS {
        let dir = corpus(name);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("a corpus entry").path())
            .collect();
        files.sort();
        assert!(files.len() >= 5, "{}: {} inputs; the seeds are missing", dir.display(), files.len());
        for file in files {
            let data = std::fs::read(&file).expect("a corpus file");
            if std::panic::catch_unwind(|| target(&data)).is_err() {
                failed.push(file.display().to_string());
            }
        }
    }
    assert!(failed.is_empty(), "targets panicked on {failed:?}");
}

#[test]
fn host_names_are_not_looked_up() {
    use std::net::ToSocketAddrs;
    // localhost is in every /etc/hosts: it fails only if the resolver is not asked.
    assert!("localhost:80".to_socket_addrs().is_err(), "getaddrinfo was not replaced");
    assert!("127.0.0.1:80".to_socket_addrs().is_ok(), "numeric addresses need no lookup");
}
