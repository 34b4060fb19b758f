//! Budgets for what a client may make us do for nothing (RFC 9113 §10.5):
//! a leaky bucket per kind of abuse, filled one unit per suspicious
//! frame, drained at a steady rate by the clock `feed` is given. A client
//! within the rate never notices; a flood overflows the bucket quickly
//! and the connection ends with ENHANCE_YOUR_CALM.

use std::time::Instant;

#[derive(Clone, Copy, Debug, Default)]
pub struct Leaky {
    level: u32,
    /// When the level last drained; None before the first unit.
    since: Option<Instant>,
}

impl Leaky {
    /// Adds one unit after draining `per_sec` for each second since the
    /// last drain. False when the level is over `burst`.
    pub fn take(&mut self, now: Instant, per_sec: u32, burst: u32) -> bool {
        match self.since {
            Some(since) => {
                let elapsed = now.saturating_duration_since(since).as_millis();
                let drained = elapsed.saturating_mul(u128::from(per_sec)) / 1000;
                // A fraction of a unit stays owed: `since` moves only with
                // whole units, so frequent calls still drain.
                if drained > 0 {
                    self.level = self.level.saturating_sub(u32::try_from(drained).unwrap_or(u32::MAX));
                    self.since = Some(now);
                }
            }
            None => self.since = Some(now),
        }
        self.level = self.level.saturating_add(1);
        self.level <= burst
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_burst_then_the_rate() {
        let t0 = Instant::now();
        let mut b = Leaky::default();
        for _ in 0..10 {
            assert!(b.take(t0, 5, 10));
        }
        assert!(!b.take(t0, 5, 10));
        // 1 s later 5 have drained: the level was 11, now 6.
        let t1 = t0 + Duration::from_secs(1);
        for _ in 0..4 {
            assert!(b.take(t1, 5, 10));
        }
        assert!(!b.take(t1, 5, 10));
        // Calls every 100 ms still drain at 5 a second.
        let mut b = Leaky::default();
        let mut t = t0;
        for _ in 0..100 {
            assert!(b.take(t, 5, 10));
            t += Duration::from_millis(200);
        }
    }
}
