//! `SSLSessionTickets on`: session tickets every child can open.
//!
//! A 32-byte master secret is drawn once per process ([`master`]): the
//! parent draws it when it builds its TLS configuration, before forking, so
//! every child has the same one, and a graceful restart (the same parent)
//! keeps it. Tickets are sealed with AES-256-GCM under a key derived from
//! it for the current period of `lifetime` seconds (HKDF-SHA256 over the
//! period's number): each child derives the same key at the same time, and
//! a ticket of the current or the previous period is accepted.
//!
//! A ticket: period (8 bytes, big-endian) | nonce (12) | sealed state and tag.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use aws_lc_rs::hkdf::{Salt, HKDF_SHA256};

/// This process's master secret (the parent's, in a child).
pub(crate) fn master() -> &'static [u8; 32] {
    static MASTER: OnceLock<[u8; 32]> = OnceLock::new();
    MASTER.get_or_init(|| {
        let mut m = [0u8; 32];
        aws_lc_rs::rand::fill(&mut m).expect("the system's random generator");
        m
    })
}

pub(crate) struct Ticketer {
    master: [u8; 32],
    lifetime: u32,
}

impl std::fmt::Debug for Ticketer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ticketer(lifetime {} s)", self.lifetime)
    }
}

impl Ticketer {
    /// Tickets valid `lifetime` seconds, under this process's master secret.
    pub(crate) fn new(lifetime: u32) -> Ticketer {
        Ticketer::with_master(*master(), lifetime)
    }

    pub(crate) fn with_master(master: [u8; 32], lifetime: u32) -> Ticketer {
        Ticketer { master, lifetime: lifetime.max(1) }
    }

    fn key(&self, period: u64) -> Option<LessSafeKey> {
        let prk = Salt::new(HKDF_SHA256, b"warren session tickets").extract(&self.master);
        let period = period.to_be_bytes();
        let info: [&[u8]; 1] = [&period];
        let okm = prk.expand(&info, &AES_256_GCM).ok()?;
        Some(LessSafeKey::new(UnboundKey::from(okm)))
    }

    fn period(&self, now: u64) -> u64 {
        now / self.lifetime as u64
    }

    pub(crate) fn encrypt_at(&self, now: u64, plain: &[u8]) -> Option<Vec<u8>> {
        let period = self.period(now);
        let key = self.key(period)?;
        let mut nonce = [0u8; NONCE_LEN];
        aws_lc_rs::rand::fill(&mut nonce).ok()?;
        let mut sealed = plain.to_vec();
        let head = period.to_be_bytes();
        key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(head), &mut sealed).ok()?;
        let mut ticket = Vec::with_capacity(8 + NONCE_LEN + sealed.len());
        ticket.extend_from_slice(&head);
        ticket.extend_from_slice(&nonce);
        ticket.extend_from_slice(&sealed);
        Some(ticket)
    }

    pub(crate) fn decrypt_at(&self, now: u64, ticket: &[u8]) -> Option<Vec<u8>> {
        if ticket.len() < 8 + NONCE_LEN + AES_256_GCM.tag_len() {
            return None;
        }
        let head: [u8; 8] = ticket[..8].try_into().ok()?;
        let period = u64::from_be_bytes(head);
        let current = self.period(now);
        if period != current && period.checked_add(1) != Some(current) {
            return None;
        }
        let key = self.key(period)?;
        let nonce = Nonce::try_assume_unique_for_key(&ticket[8..8 + NONCE_LEN]).ok()?;
        let mut sealed = ticket[8 + NONCE_LEN..].to_vec();
        let plain = key.open_in_place(nonce, Aad::from(head), &mut sealed).ok()?;
        Some(plain.to_vec())
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl rustls::server::ProducesTickets for Ticketer {
    fn enabled(&self) -> bool {
        true
    }
    fn lifetime(&self) -> u32 {
        self.lifetime
    }
    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        self.encrypt_at(now(), plain)
    }
    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        self.decrypt_at(now(), cipher)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_opened_and_rotated() {
        let t = Ticketer::with_master([7; 32], 300);
        let ticket = t.encrypt_at(1_000_000, b"state").unwrap();
        assert_eq!(t.decrypt_at(1_000_000, &ticket).as_deref(), Some(&b"state"[..]));
        // The next period still takes it; the one after does not.
        assert!(t.decrypt_at(1_000_000 + 300, &ticket).is_some());
        assert!(t.decrypt_at(1_000_000 + 600, &ticket).is_none());
        // Tampering, truncation and another master fail.
        let mut bad = ticket.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(t.decrypt_at(1_000_000, &bad).is_none());
        assert!(t.decrypt_at(1_000_000, &ticket[..20]).is_none());
        assert!(Ticketer::with_master([8; 32], 300).decrypt_at(1_000_000, &ticket).is_none());
        // A forged period is part of the authenticated data.
        let mut moved = ticket.clone();
        moved[7] ^= 1;
        assert!(t.decrypt_at(1_000_000, &moved).is_none());
    }

    /// A ticket sealed by one forked child opens in another process: the
    /// master secret was drawn before the fork.
    #[test]
    fn children_open_each_others_tickets() {
        use nix::sys::wait::{waitpid, WaitStatus};
        use nix::unistd::{fork, pipe, read, write, ForkResult};
        let parent = Ticketer::new(300);
        let (r, w) = pipe().unwrap();
        // SAFETY: the child seals, writes to the pipe and exits.
        match unsafe { fork() }.unwrap() {
            ForkResult::Child => {
                let ticket = Ticketer::new(300).encrypt_at(now(), b"from the child").unwrap_or_default();
                let _ = write(&w, &ticket);
                extern "C" {
                    fn _exit(code: i32) -> !;
                }
                unsafe { _exit(0) }
            }
            ForkResult::Parent { child } => {
                drop(w);
                let mut buf = [0u8; 256];
                let n = read(&r, &mut buf).unwrap();
                assert_eq!(waitpid(child, None).unwrap(), WaitStatus::Exited(child, 0));
                assert_eq!(parent.decrypt_at(now(), &buf[..n]).as_deref(), Some(&b"from the child"[..]));
            }
        }
    }
}
