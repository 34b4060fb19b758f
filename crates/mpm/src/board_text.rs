//! Short text (a client's address, a request line, a host's name) kept in
//! the scoreboard's shared memory as little-endian atomic words, so that a
//! reader in another process never sees a torn word; NUL ends the text.

use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) fn store_text(dst: &[AtomicU64], text: &[u8]) {
    let mut bytes = [0u8; 8];
    for (i, word) in dst.iter().enumerate() {
        bytes.fill(0);
        let from = (i * 8).min(text.len());
        let to = (from + 8).min(text.len());
        bytes[..to - from].copy_from_slice(&text[from..to]);
        word.store(u64::from_le_bytes(bytes), Ordering::Relaxed);
    }
}

pub(crate) fn load_text(src: &[AtomicU64]) -> String {
    let mut out = Vec::with_capacity(src.len() * 8);
    for w in src {
        out.extend_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
    }
    let end = out.iter().position(|&b| b == 0).unwrap_or(out.len());
    String::from_utf8_lossy(&out[..end]).into_owned()
}
