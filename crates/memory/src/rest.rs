//! The rest: what the budget's charge holds besides the pools, read as the
//! budget's charge less the pools' cgroups' charges. The pools' part moves
//! by tens of megabytes in milliseconds (a PHP child takes a request's
//! memory and gives it back), so the two readings must be of one moment.
//!
//! And in one order: the whole first. Reading a cgroup's memory.stat
//! flushes the kernel's per-CPU counters of that cgroup and those below
//! it; a pool read first is flushed alone, and what its children gave
//! back was seen in the budget's cgroup only at a later flush (seen on
//! Linux 6.18, cgroup v1: a pool at 28 MB, the budget's charge still at
//! 130 MB, so the rest counted at 101 MB where 32 MB were held, and kept
//! for the rest's window). The whole read first flushes both at once.

/// What `whole` holds besides `part` (a cgroup below it): the whole read
/// just before and just after the part, again while the two readings of
/// the whole differ by more than [`AGREE`] (up to [`TRIES`] times), and
/// the mean of the closest pair less the part. Where the part only grew
/// or only shrank meanwhile, the answer is within half their difference
/// of the truth.
pub fn less_part(mut whole: impl FnMut() -> u64, mut part: impl FnMut() -> u64) -> u64 {
    let mut best: Option<(u64, u64)> = None;
    for _ in 0..TRIES {
        let before = whole();
        let inside = part();
        let after = whole();
        let spread = before.abs_diff(after);
        let rest = before.midpoint(after).saturating_sub(inside);
        if best.is_none_or(|(s, _)| spread < s) {
            best = Some((spread, rest));
        }
        if spread <= AGREE {
            break;
        }
    }
    best.map_or(0, |(_, rest)| rest)
}

/// Readings this close are of one moment for the budget's purposes.
pub const AGREE: u64 = 1 << 20;

/// Bounded: under a storm of requests the pools may never stand still.
const TRIES: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    const MB: u64 = 1 << 20;

    /// A part that moves by `steps` between readings, one step a reading
    /// of either, over a rest of 30 MB; and the readings taken, in order
    /// ('w' the whole, 'p' the part).
    fn run(steps: &[u64]) -> (u64, String) {
        let at = Cell::new(0usize);
        let order = std::cell::RefCell::new(String::new());
        let read = |what: char| {
            let v = steps[at.get().min(steps.len() - 1)];
            at.set(at.get() + 1);
            order.borrow_mut().push(what);
            v
        };
        let rest = less_part(|| 30 * MB + read('w'), || read('p'));
        (rest, order.into_inner())
    }

    #[test]
    fn a_still_part_is_read_once_after_the_whole() {
        let (rest, order) = run(&[40 * MB; 10]);
        assert_eq!(rest, 30 * MB);
        assert_eq!(order, "wpw");
    }

    #[test]
    fn a_part_that_moved_between_readings_is_read_again() {
        // The children took 40 MB while the part was read: the first try
        // would count 20 MB of it as the rest's; the second sees them still.
        let (rest, order) = run(&[0, 40 * MB, 40 * MB, 40 * MB, 40 * MB, 40 * MB, 40 * MB]);
        assert_eq!(rest, 30 * MB);
        assert_eq!(order, "wpwwpw");
    }

    #[test]
    fn a_part_that_never_settles_is_read_a_bounded_number_of_times() {
        // Children growing steadily through the whole pass: never two
        // readings of the whole alike, and the mean of each pair is what
        // the part was between them.
        let steps: Vec<u64> = (0..40).map(|i| i * 5 * MB).collect();
        let (rest, order) = run(&steps);
        assert_eq!(order, "wpw".repeat(TRIES));
        assert_eq!(rest, 30 * MB);
    }
}
