//! Which FastCGI applications get our side of a connection shut as soon as
//! the request is out, on the event loop and on a thread alike.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use warren_config::FcgiAddr;

use super::backend::one_request_per_connection;

/// Which applications get our side of the connection shut as soon as the
/// request is sent. PHP (php-fpm, php-cgi) answers, shuts its side, and
/// then waits for ours to end before it takes its next connection; told at
/// once, it does not wait for us to read the answer and close, which on 2
/// cores gave php-fpm's four children a fifth more requests a second on
/// the event loop, and over HTTP/2 (whose exchanges run on threads) half
/// as many again.
/// An application that multiplexes may instead read our end as the end of
/// the conversation, so only one that said FCGI_MPXS_CONNS 0 is told. Each
/// address is asked once per child, on a thread of its own; until it has
/// answered, nothing is shut early.
/// warren's own pools of PHP (php-fpm or php-cgi, which take one request
/// per connection) are known without asking.
#[derive(Clone, Default)]
pub struct HalfClose(Arc<Mutex<HashMap<FcgiAddr, Asked>>>);

impl HalfClose {
    pub fn new(pools: &[warren_config::PoolConfig]) -> HalfClose {
        let php = pools.iter().filter(|p| warren_config::pool::runs_php(&p.command)).map(|p| (FcgiAddr::Pool(p.name.clone()), Asked::Answer(true)));
        HalfClose(Arc::new(Mutex::new(php.collect())))
    }
}

#[derive(Clone, Copy)]
enum Asked {
    Pending,
    Answer(bool),
    /// Could not ask (not listening yet?): again after this.
    RetryAt(Instant),
}

const ASK_TIMEOUT: Duration = Duration::from_secs(2);
const ASK_AGAIN: Duration = Duration::from_secs(10);

impl HalfClose {
    /// Whether requests to `addr` may shut our side early; asks the
    /// application the first time.
    pub fn allowed(&self, addr: &FcgiAddr) -> bool {
        let mut known = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match known.get(addr) {
            Some(Asked::Answer(yes)) => return *yes,
            // Another program of a pool: leased for one request, nothing to ask.
            None if matches!(addr, FcgiAddr::Pool(_)) => return false,
            Some(Asked::Pending) => return false,
            Some(Asked::RetryAt(t)) if Instant::now() < *t => return false,
            _ => {}
        }
        known.insert(addr.clone(), Asked::Pending);
        let (me, target) = (self.clone(), addr.clone());
        let spawned = std::thread::Builder::new().name("fcgi-values".into()).spawn(move || {
            let answer = match one_request_per_connection(&target, ASK_TIMEOUT) {
                Some(yes) => Asked::Answer(yes),
                None => Asked::RetryAt(Instant::now() + ASK_AGAIN),
            };
            me.0.lock().unwrap_or_else(|e| e.into_inner()).insert(target, answer);
        });
        if spawned.is_err() {
            known.insert(addr.clone(), Asked::RetryAt(Instant::now() + ASK_AGAIN));
        }
        false
    }
}
