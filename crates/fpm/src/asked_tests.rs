//! Unit tests of users' pools asked for at run time: the records a child
//! asks with, bounded, refused and found where the parent placed them.

use super::*;

fn asked_records(t: &Table) -> usize {
    (0..RUNTIME_POOLS).filter(|&i| t.asked_at(i).state.load(Ordering::Relaxed) != FREE).count()
}

#[test]
fn a_user_is_asked_for_once_and_the_records_are_bounded() {
    let t = Table::new(None).unwrap();
    assert!(ask(&t, "alice"));
    assert!(ask(&t, "alice"));
    assert_eq!(asked_records(&t), 1);
    assert_eq!(pending(&t, "userdir-alice").map(|a| a.user()), Some("alice".to_string()));
    assert!(!ask(&t, ""));
    assert!(!ask(&t, &"x".repeat(33)));
    for n in 1..RUNTIME_POOLS {
        assert!(ask(&t, &format!("user{n}")));
    }
    assert!(!ask(&t, "one-too-many"), "no record is free");
    assert_eq!(asked_records(&t), RUNTIME_POOLS);
}

#[test]
fn a_refused_user_is_not_asked_for_again_until_freed() {
    let t = Table::new(None).unwrap();
    assert!(ask(&t, "mallory"));
    let (a, _) = find(&t, "mallory").unwrap();
    a.state.store(REFUSED, Ordering::Release);
    assert!(!ask(&t, "mallory"));
    assert!(pending(&t, "userdir-mallory").is_none());
    assert!(ready_shape(&t, "userdir-mallory", Path::new("/s")).is_none());
    a.free();
    assert!(ask(&t, "mallory"));
}

#[test]
fn a_ready_pool_is_found_where_the_parent_placed_it() {
    let t = Table::new(None).unwrap();
    assert!(ask(&t, "bob"));
    let (a, _) = find(&t, "bob").unwrap();
    assert!(ready_shape(&t, "userdir-bob", Path::new("/s")).is_none(), "not made yet");
    a.counters.store(7, Ordering::Relaxed);
    a.first_slot.store(40, Ordering::Relaxed);
    a.max_children.store(2, Ordering::Relaxed);
    a.state.store(READY, Ordering::Release);
    let shape = ready_shape(&t, "userdir-bob", Path::new("/s")).unwrap();
    assert_eq!((shape.counters, shape.first_slot, shape.max_children), (7, 40, 2));
    assert_eq!(shape.sockets, vec![Path::new("/s/userdir-bob.40.sock"), Path::new("/s/userdir-bob.41.sock")]);
    assert!(ready_shape(&t, "userdir-alice", Path::new("/s")).is_none());
    // A place outside the table is never believed.
    a.first_slot.store(crate::table::MAX_SLOTS as u32, Ordering::Relaxed);
    assert!(ready_shape(&t, "userdir-bob", Path::new("/s")).is_none());
}
