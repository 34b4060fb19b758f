//! The configuration reading, text to `Settings` or errors: Apache's syntax
//! (continuation lines, quoting, sections, `<IfModule>`, `<IfDefine>`,
//! `Define` and `${VAR}`) and every directive's arguments.
//!
//! The input is a configuration file (read lossily as UTF-8, as files are).
//! It is read as if it were `warren.conf` in a directory of its own holding
//! an empty `htdocs`. A configuration yields settings exactly when it has no
//! error, and every error names the file and a line of it.
//!
//! `Include`, `PoolFile` and `ServerRoot` make the reader open other files, any file: a
//! fuzzer that wrote `Include /` would read the whole machine (and
//! `/dev/zero` without end), which says nothing about the parser. So inputs
//! that could execute either are skipped: those that name them, and, as
//! `${VAR}` could spell them, those where a variable is part of a
//! directive's or section's name (or a line continues, which could move one
//! there). Host names are not looked up either (see
//! [`refuse_name_lookups`](crate::refuse_name_lookups)).

use std::path::PathBuf;
use std::sync::OnceLock;

use warren_config::{load_text, LoadOptions};

pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if reaches_other_files(&text) {
        return;
    }
    let path = config_path();
    let loaded = load_text(&text, path, &LoadOptions::default());
    assert_eq!(loaded.settings.is_some(), loaded.errors.is_empty(), "settings with errors, or neither: {:?}", loaded.errors);
    // Lines as the reader numbers them: a last line without a line end counts.
    let lines = text.split('\n').count();
    for e in loaded.errors.iter().chain(&loaded.warnings) {
        // A warning about a default value the file made wrong names the defaults.
        assert!(e.origin.file.as_path() == path || e.origin.file.as_os_str() == "(defaults)", "{e}");
        assert!(e.origin.line <= lines, "{e}: line {} of {lines}", e.origin.line);
        assert!(!e.to_string().is_empty());
    }
}

/// `warren.conf` in a directory of this process's that holds an empty `htdocs`.
fn config_path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("warren-fuzz-config-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("htdocs")).expect("a directory for the fuzzed configurations");
        dir.join("warren.conf")
    })
}

/// Whether reading `text` could open a file other than itself: it names
/// `Include`, `IncludeOptional`, `PoolFile` or `ServerRoot`, or, when it uses
/// variables, a directive or section name could be made of one.
pub fn reaches_other_files(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    if lower.contains("include") || lower.contains("serverroot") || lower.contains("poolfile") {
        return true;
    }
    if !text.contains("${") {
        return false;
    }
    text.split('\n').any(|line| {
        // A continued line joins the next to it: a name could then span lines.
        if line.trim_end_matches('\r').ends_with('\\') {
            return true;
        }
        // The name: the first word, after `<` or `</`. Cut at ASCII blanks
        // only, so that it is never shorter than the reader's (which also
        // cuts at other whitespace).
        let blanks = [' ', '\t', '\r'];
        let rest = line.trim_start_matches(blanks).trim_start_matches(['<', '/']).trim_start_matches(blanks);
        let name = rest.split(blanks).next().unwrap_or("");
        name.contains('$')
    })
}
