//! The home directories of the accounts `/~user/` URLs name, as the
//! system's user database gives them, kept between requests.
//!
//! A lookup (`getpwnam`) reads /etc/passwd, or asks a directory service
//! through NSS, which may block for as long as that service takes; the
//! mapping of `/~user/` runs on the event loop's thread, where a wait
//! stalls every connection of the child. So each name's answer (a home,
//! or "no such account", which is what a client's made-up names get) is
//! kept while /etc/passwd stays at the version it was read at, and at most
//! [`KEPT_FOR`] (accounts from a directory service change without
//! /etc/passwd changing).

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use warren_stat_cache::{FileVersion, StatCache};

/// How long an answer is trusted whatever /etc/passwd's version.
pub const KEPT_FOR: Duration = Duration::from_secs(60);

/// At most this many names are kept (then the cache starts again).
const NAMES_KEPT: usize = 4096;

const PASSWD: &str = "/etc/passwd";

type Answers = HashMap<String, (Instant, Option<String>)>;

pub struct Homes {
    answers: StatCache<Answers>,
}

impl Default for Homes {
    fn default() -> Homes {
        Homes { answers: StatCache::of_entries(1) }
    }
}

impl Homes {
    /// The home directory of `user`, or None when the system has no such
    /// account.
    pub fn home(&self, user: &str) -> Option<String> {
        let version = std::fs::metadata(PASSWD).ok().map(|m| FileVersion::of(&m));
        let Some(version) = version else { return look_up(user) };
        let path = Path::new(PASSWD);
        let kept = self.answers.get_with(path, &version, |a| a.get(user).filter(|(at, _)| at.elapsed() < KEPT_FOR).map(|(_, home)| home.clone()));
        if let Some(Some(home)) = kept {
            return home;
        }
        let home = look_up(user);
        self.answers.update(path, version, |a| {
            if a.len() >= NAMES_KEPT {
                a.clear();
            }
            a.insert(user.to_owned(), (Instant::now(), home.clone()));
        });
        home
    }
}

fn look_up(user: &str) -> Option<String> {
    let account = nix::unistd::User::from_name(user).ok()??;
    Some(account.dir.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::Homes;

    #[test]
    fn known_and_unknown_accounts_are_answered_and_kept() {
        let homes = Homes::default();
        assert_eq!(homes.home("root").as_deref(), Some("/root"));
        assert_eq!(homes.home("root").as_deref(), Some("/root"));
        assert_eq!(homes.home("no-such-account-here"), None);
        assert_eq!(homes.home("no-such-account-here"), None);
    }
}
