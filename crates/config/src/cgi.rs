//! mod_cgi's and mod_cgid's settings: what `ScriptLog`, `ScriptLogLength`
//! and `ScriptLogBuffer` set (server-wide, [`CgiSettings`]); `CGIPassAuth`
//! and `CGIVar` are per directory, in [`DirConfig`](crate::DirConfig). The
//! directives are in `directives/cgi.rs`. Which
//! files are CGI programs is said by `ScriptAlias` ([`crate::alias`]) and
//! `AddHandler`/`SetHandler cgi-script` ([`crate::scripts`]), whether any
//! are named by [`Settings::uses_cgi`](crate::Settings::uses_cgi); the
//! handler's `cgi` module runs them.

use std::path::PathBuf;

/// The server's CGI settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgiSettings {
    /// `ScriptLog`: where a program's failed runs are written down (its
    /// request, output and standard error), for debugging.
    pub script_log: Option<PathBuf>,
    /// `ScriptLogLength`: the log grows no larger than this (bytes).
    pub script_log_length: u64,
    /// `ScriptLogBuffer`: at most this much of a request body is written
    /// to the log.
    pub script_log_buffer: usize,
    /// `LoadModule cgi_module` or `cgid_module` was read: programs may be
    /// named later (by `.htaccess`, or a graceful restart), so the spawner
    /// is started even when the configuration names none yet.
    pub module_loaded: bool,
}

impl Default for CgiSettings {
    /// mod_cgi's defaults.
    fn default() -> CgiSettings {
        CgiSettings { script_log: None, script_log_length: 10_385_760, script_log_buffer: 1024, module_loaded: false }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::load_text;

    #[test]
    fn directives_are_read() {
        let (l, _d) = load_text("cgi-directives", "Listen 8080\nScriptLog logs/cgi.log\nScriptLogLength 4096\nScriptLogBuffer 10\n<Directory /srv>\nCGIPassAuth On\nCGIVar REQUEST_URI current-uri\n</Directory>\n", &[]);
        assert!(l.errors.is_empty(), "{:?}", l.errors);
        let s = l.settings.unwrap();
        assert!(s.cgi.script_log.as_ref().is_some_and(|p| p.ends_with("logs/cgi.log") && p.is_absolute()));
        assert_eq!((s.cgi.script_log_length, s.cgi.script_log_buffer), (4096, 10));
        assert!(!s.uses_cgi());
        let dir = &s.main.sections[0].config;
        assert_eq!((dir.cgi_pass_auth, dir.cgi_current_uri), (Some(true), Some(true)));
        for uses in ["ScriptAlias /cgi-bin/ /usr/lib/cgi-bin/\n", "<Directory /srv>\nAddHandler cgi-script .cgi\n</Directory>\n", "<VirtualHost *:8080>\nSetHandler cgi-script\n</VirtualHost>\n"] {
            let (l, _d) = load_text("cgi-uses", &format!("Listen 8080\n{uses}"), &[]);
            assert!(l.settings.unwrap().uses_cgi(), "{uses}");
        }
        let (l, _d) = load_text("cgi-bad", "Listen 8080\nCGIVar PATH_INFO current-uri\nCGIPassAuth maybe\n", &[]);
        let errors: Vec<String> = l.errors.iter().map(ToString::to_string).collect();
        assert!(errors.len() == 2 && errors[0].contains(":3: CGIVar takes") && errors[1].contains(":4: CGIPassAuth must be On or Off"), "{errors:?}");
    }
}
