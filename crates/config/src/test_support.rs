//! What the configuration's unit tests share: a configuration written to a
//! scratch directory (removed when dropped) and loaded from there.

use std::path::PathBuf;

use crate::{load_file, LoadOptions, Loaded};

pub(crate) struct Dir(pub PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `text` after a `DocumentRoot htdocs` line (so line N of `text` is line
/// N + 1 of the file), loaded from a fresh directory holding an htdocs
/// and each of `files` (with placeholder content).
pub(crate) fn load_text(name: &str, text: &str, files: &[&str]) -> (Loaded, Dir) {
    let d = Dir(std::env::temp_dir().join(format!("warren-cfg-{name}-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&d.0);
    std::fs::create_dir_all(d.0.join("htdocs")).unwrap();
    for f in files {
        std::fs::write(d.0.join(f), "x").unwrap();
    }
    let conf = d.0.join("warren.conf");
    std::fs::write(&conf, format!("DocumentRoot htdocs\n{text}")).unwrap();
    (load_file(&conf, &LoadOptions::default()), d)
}
