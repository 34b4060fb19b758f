//! Which hosts' users get pools made while warren runs (mod_userdir with
//! scripts run as the user, for accounts made after start), read from the
//! whole configuration: [`RuntimeUsers::of`]. The rest of
//! [`RuntimeUsers`] is in [`mass`](crate::mass); warren-fpm's
//! `manager::user_pools` makes the pools when a request asks.

use crate::accounts::server_account;
use crate::mass::{RuntimeUsers, UserDir};
use crate::parse::Origin;
use crate::settings::Settings;

impl RuntimeUsers {
    /// None when no host's users get pools.
    pub fn of(settings: &Settings) -> Option<RuntimeUsers> {
        let hosts: Vec<(UserDir, Origin)> = std::iter::once(&settings.main)
            .chain(settings.virtual_hosts.iter().map(|vh| &vh.host))
            .filter_map(|h| h.user_dir.as_ref())
            .filter(|ud| ud.runtime_pools)
            .filter_map(|ud| Some((ud.clone(), ud.origin.clone()?)))
            .collect();
        let server_uid = server_account(settings.user.as_deref(), settings.group.as_deref()).ok().flatten().map(|a| a.uid.as_raw());
        (!hosts.is_empty()).then_some(RuntimeUsers { hosts, server_uid })
    }
}
