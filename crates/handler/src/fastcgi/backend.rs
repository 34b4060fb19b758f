//! The idle connections to FastCGI applications kept for `enablereuse=on`,
//! and asking an application whether it takes more than one request per
//! connection. The connection itself, which HTTP backends use too, is
//! [`BackendStream`] (gateway/stream.rs).

use std::sync::Mutex;
use std::time::Duration;

use warren_config::FcgiAddr;

use crate::gateway::stream::BackendStream;

/// Idle kept-alive backend connections kept per site (`enablereuse=on`).
const MAX_IDLE_BACKENDS: usize = 64;

/// Whether the application at `addr` said it takes one request per
/// connection (FCGI_MPXS_CONNS 0, as PHP does); None when it could not be
/// asked or gave no answer.
pub fn one_request_per_connection(addr: &FcgiAddr, timeout: Duration) -> Option<bool> {
    let mut s = BackendStream::connect(addr, timeout).ok()?;
    warren_fcgi::client::multiplexes(&mut s).ok().flatten().map(|many| !many)
}

/// Kept-alive connections to backends, for `enablereuse=on`.
#[derive(Default)]
pub struct BackendPool {
    idle: Mutex<Vec<(FcgiAddr, BackendStream)>>,
}

impl BackendPool {
    pub(super) fn take(&self, addr: &FcgiAddr) -> Option<BackendStream> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(i) = idle.iter().rposition(|(a, _)| a == addr) {
            let (_, s) = idle.swap_remove(i);
            if s.idle_and_open() {
                return Some(s);
            }
        }
        None
    }

    pub(super) fn put(&self, addr: &FcgiAddr, s: BackendStream) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE_BACKENDS {
            idle.push((addr.clone(), s));
        }
    }
}
