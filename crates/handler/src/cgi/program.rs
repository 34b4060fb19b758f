//! What makes a gateway plan a CGI program's: kept apart from the rest of
//! mod_cgi so that the plan every backend protocol shares
//! ([`Gateway`](crate::gateway::Gateway)) can hold it without mod_cgi's
//! routing, which makes that plan, being imported back.

use std::path::PathBuf;

use super::suexec;

/// What makes a gateway plan a CGI program's.
pub struct Program {
    /// The program's path, as bytes: its name need not be UTF-8 (the
    /// gateway's `script`, for log lines, is its text).
    pub(super) path: Vec<u8>,
    /// The tree the program must be in (suexec's check).
    pub(super) root: PathBuf,
    /// Whether that tree is a ScriptAlias's (the administrator's).
    pub(super) tree: suexec::Tree,
    /// `nph-`: its output is the whole HTTP answer, status line first.
    pub(super) nph: bool,
    /// `SuexecUserGroup` of the host.
    pub(super) user_group: Option<(String, String)>,
}
