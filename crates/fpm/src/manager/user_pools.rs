//! The parent's half of users' pools made while warren runs (see
//! [`crate::asked`]): a request asked for a user's pool; the account is
//! checked as at start ([`RuntimeUsers::pool_for`]), the pool placed in
//! the table's free room and its first child started, at most
//! [`MADE_PER_SECOND`] a second. A refusal stands for
//! [`asked::REFUSED_FOR_MS`], so that a flood of requests for an account
//! that may not have a pool costs one check.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use warren_config::mass::RuntimeUsers;

use super::{credentials, Manager};
use crate::asked::{self, ASKED, READY, REFUSED, RUNTIME_POOLS};

/// The most users' pools made in a second; more asked wait for the next.
pub const MADE_PER_SECOND: u32 = 8;

/// What the manager needs to make users' pools, and how many it made this second.
pub(super) struct UserPools {
    users: RuntimeUsers,
    second: Instant,
    made: u32,
}

impl Manager {
    /// The hosts whose users get pools as their first script asks
    /// (`UserDir`); None: requests' asks are refused.
    pub fn set_user_pools(&mut self, users: Option<RuntimeUsers>) {
        self.user_pools = users.map(|users| UserPools { users, second: Instant::now(), made: 0 });
    }

    /// Answers the users' pools asked for, and frees refusals that are old enough.
    pub(super) fn answer_asked_pools(&mut self) {
        let now = self.table.now_ms();
        // The same memory whatever view of it a pool made here puts in self.table.
        let table = self.table.clone();
        for i in 0..RUNTIME_POOLS {
            let a = table.asked_at(i);
            match a.state.load(Ordering::Acquire) {
                REFUSED if now.saturating_sub(a.since_ms.load(Ordering::Relaxed)) >= asked::REFUSED_FOR_MS => a.free(),
                ASKED if self.may_make() => {
                    let user = a.user();
                    let made = self.make_user_pool(&user);
                    match made {
                        Ok(pool) => {
                            let shape = &self.table.pools[pool];
                            a.counters.store(shape.counters as u32, Ordering::Relaxed);
                            a.first_slot.store(shape.first_slot as u32, Ordering::Relaxed);
                            a.max_children.store(shape.max_children as u32, Ordering::Relaxed);
                            a.max_requests.store(shape.max_requests, Ordering::Relaxed);
                            a.backlog.store(shape.backlog, Ordering::Relaxed);
                            a.state.store(READY, Ordering::Release);
                        }
                        Err(why) => {
                            self.log.warn(&format!("UserDir: no pool for the scripts of ~{user}: {why}"));
                            a.since_ms.store(now, Ordering::Relaxed);
                            a.state.store(REFUSED, Ordering::Release);
                        }
                    }
                    warren_shm::futex::futex_wake(&a.state, i32::MAX);
                }
                _ => {}
            }
        }
    }

    /// Whether one more pool may be made this second.
    fn may_make(&mut self) -> bool {
        let Some(u) = self.user_pools.as_mut() else { return true };
        if u.second.elapsed().as_secs() >= 1 {
            u.second = Instant::now();
            u.made = 0;
        }
        u.made += 1;
        u.made <= MADE_PER_SECOND
    }

    /// Makes `user`'s pool and starts its first child (a request waits for
    /// it); its index in the table.
    fn make_user_pool(&mut self, user: &str) -> Result<usize, String> {
        let users = self.user_pools.as_ref().ok_or("no UserDir runs users' scripts in pools here")?;
        let config = users.users.pool_for(user)?;
        if let Some(i) = self.pools.iter().position(|r| r.config.name == config.name) {
            return Ok(i);
        }
        let creds = credentials(&config, &self.server)?;
        let (run, shape) = self.create_pool(&config, creds)?;
        self.pools.push(run);
        let mut shapes = self.table.pools.clone();
        shapes.push(shape);
        self.table = Arc::new(self.table.view(shapes));
        let i = self.pools.len() - 1;
        self.log.notice(&format!("UserDir: pool {} made for the scripts of ~{user} (an account newer than the pools)", config.name));
        self.spawn(i);
        Ok(i)
    }

    /// A graceful restart: the pools made since start are now the
    /// configuration's (or retired), and refusals are forgotten; asks not
    /// yet answered are answered with the new configuration.
    pub(super) fn forget_answered_asks(&self) {
        for i in 0..RUNTIME_POOLS {
            let a = self.table.asked_at(i);
            if matches!(a.state.load(Ordering::Acquire), READY | REFUSED) {
                a.free();
            }
        }
    }
}
