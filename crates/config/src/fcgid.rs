//! The per-user set-ups of Apache's shared hosting, mapped onto warren's own
//! pools: mpm-itk's `AssignUserID user group` (and `MaxClientsVHost`),
//! suexec's `SuexecUserGroup user group`, and mod_fcgid's directives.
//!
//! mpm-itk forks a child per request to change user; mod_fcgid and suexec
//! run the site's PHP (through `FcgidWrapper`, php-cgi) as the site's user.
//! warren does neither: a host whose configuration says any of these gets
//! one pool of php-cgi children, started as that user and kept, whose
//! command is the wrapper and whose pm settings are mod_fcgid's limits; the
//! files `AddHandler fcgid-script .ext` (or `FcgidWrapper CMD .ext`) names
//! go to that pool, through a `<FilesMatch "\.(ext)$">` section of its own
//! placed before the configuration's (so that its `SetHandler` lines win,
//! as `SetHandler` beats `AddHandler` in Apache). Each mapping is said once
//! at start, at notice level, with its figures.
//!
//! Here is what one host's lines say ([`PerUser`]); the directives and the
//! mapping are in `directives/fcgid.rs`.

use crate::parse::{Directive, Origin};

/// What one host's lines of these modules say (a virtual host starts from
/// the main server's).
#[derive(Clone, Debug, Default)]
pub struct PerUser {
    /// `AssignUserID` or `SuexecUserGroup`: user, group, and the line.
    pub account: Option<(String, String, Origin)>,
    /// `FcgidWrapper`'s command, split into words.
    pub wrapper: Option<Vec<String>>,
    pub max_processes: Option<u32>,
    pub max_per_class: Option<u32>,
    pub min_per_class: Option<u32>,
    pub max_clients_vhost: Option<u32>,
    pub max_requests: Option<u32>,
    pub idle_timeout: Option<u64>,
    pub busy_timeout: Option<u64>,
    pub max_request_len: Option<u64>,
    pub env: Vec<(String, String)>,
    /// Set by a line of the host's own (not only inherited).
    pub own: bool,
    /// The first line of these, where the pool is said to come from.
    pub origin: Option<Origin>,
}

impl PerUser {
    pub(crate) fn said(&mut self, d: &Directive) {
        self.own = true;
        self.origin.get_or_insert_with(|| d.origin.clone());
    }
}
