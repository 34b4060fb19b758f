//! A pool's place in the shared table (its counters, its child slots,
//! their sockets), as the parent laid it out and every process knows it.

use std::path::PathBuf;
use std::time::Duration;

/// What a warren process knows of one pool: its place in the table.
#[derive(Clone, Debug)]
pub struct PoolShape {
    pub name: String,
    /// "static", "dynamic" or "ondemand".
    pub pm: &'static str,
    pub max_children: usize,
    pub max_requests: u32,
    pub backlog: u32,
    /// The children's sockets, by slot.
    pub sockets: Vec<PathBuf>,
    /// Index of the pool's counters, and of its first child slot.
    pub counters: usize,
    pub first_slot: usize,
    /// A php-fpm pool: its children take requests from its one socket
    /// (`sockets[0]`), so a request waits for one in the kernel's listen
    /// queue, and php-fpm kills a child past request_terminate_timeout.
    pub php_fpm: Option<PhpFpmShape>,
}

#[derive(Clone, Debug)]
pub struct PhpFpmShape {
    pub terminate_after: Option<Duration>,
    /// `pm.max_children auto`: the master runs at the ceiling, and warren,
    /// the pool's only client, sends it at most `auto_children` requests
    /// at once (`pm = ondemand`: no idle child kept beside those busy),
    /// so the count changes without a new master (whose opcache would
    /// start empty, beside the old family until it exits).
    pub capped: bool,
}
