//! Unit tests of the pools' table: leases, queues and places held by dead processes.

use super::*;
use crate::shape::PhpFpmShape;

fn table(children: usize, max_requests: u32, backlog: u32) -> Arc<Table> {
    let t = Table::new(None).unwrap();
    let shape = PoolShape {
        name: "www".into(),
        pm: "static",
        max_children: children,
        max_requests,
        backlog,
        sockets: (0..children).map(|i| PathBuf::from(format!("/tmp/www.{i}.sock"))).collect(),
        counters: 0,
        first_slot: 0,
        php_fpm: None,
    };
    let t = Arc::new(t.view(vec![shape]));
    for s in 0..children {
        t.slot(0, s).pid.store(100 + s as i32, Ordering::Relaxed);
        t.slot(0, s).state.store(IDLE, Ordering::Relaxed);
    }
    t
}

#[test]
fn leases_take_idle_children_and_give_them_back() {
    let t = table(2, 0, 1);
    let d = Dispatch::new(t.clone(), PathBuf::new());
    let a = d.lease("www", b"/a.php", Duration::ZERO).unwrap();
    let b = d.try_lease("www", b"/b.php").unwrap();
    assert_ne!(a.socket(), b.socket());
    assert_eq!(t.census(0), (0, 2, 2));
    assert!(d.try_lease("www", b"/c.php").is_none());
    assert_eq!(d.lease("www", b"/c.php", Duration::from_millis(20)).err(), Some(PoolBusy::Timeout));
    drop(a);
    assert_eq!(t.census(0), (1, 1, 2));
    let st = d.status("www").unwrap();
    assert_eq!((st.accepted_conn, st.idle_processes, st.active_processes, st.max_active_processes), (3, 1, 1, 2));
    assert!(st.processes.iter().any(|p| p.request_uri == "/b.php" && p.state == "Running"));
    assert!(d.lease("nope", b"/", Duration::ZERO).is_err());
}

#[test]
fn a_waiting_request_gets_the_child_given_back() {
    let t = table(1, 0, 4);
    let d = Arc::new(Dispatch::new(t.clone(), PathBuf::new()));
    let held = d.lease("www", b"/slow", Duration::ZERO).unwrap();
    let d2 = d.clone();
    let waiter = std::thread::spawn(move || d2.lease("www", b"/next", Duration::from_secs(5)).map(|l| l.socket().to_path_buf()));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(t.counters(0).waiting.load(Ordering::Relaxed), 1);
    let started = Instant::now();
    drop(held);
    assert!(waiter.join().unwrap().is_ok());
    assert!(started.elapsed() < Duration::from_millis(40), "the futex woke the waiter");
    assert_eq!(t.counters(0).waiting.load(Ordering::Relaxed), 0);
}

#[test]
fn a_capped_php_fpm_pool_gets_its_count_at_once() {
    let t = Table::new(None).unwrap();
    let shape = PoolShape { name: "wp".into(), pm: "dynamic", max_children: 1, max_requests: 0, backlog: 8, sockets: vec![PathBuf::from("/tmp/wp.0.sock")], counters: 0, first_slot: 0, php_fpm: Some(PhpFpmShape { terminate_after: None, capped: true }) };
    let t = Arc::new(t.view(vec![shape]));
    t.slot(0, 0).pid.store(100, Ordering::Relaxed);
    t.counters(0).auto_children.store(2, Ordering::Relaxed);
    let d = Arc::new(Dispatch::new(t.clone(), PathBuf::new()));
    let a = d.try_lease("wp", b"/a").unwrap();
    let b = d.lease("wp", b"/b", Duration::ZERO).unwrap();
    assert!(d.try_lease("wp", b"/c").is_none(), "2 children, 2 busy (the master keeps no idle child)");
    assert_eq!(d.lease("wp", b"/c", Duration::from_millis(20)).err(), Some(PoolBusy::Timeout));
    let d2 = d.clone();
    let waiter = std::thread::spawn(move || d2.lease("wp", b"/next", Duration::from_secs(30)).is_ok());
    drop(a);
    assert!(waiter.join().unwrap(), "a place given back goes to the waiting request");
    assert_eq!(t.counters(0).in_flight.load(Ordering::Relaxed), 1, "the waiter's lease was dropped with its thread");
    // A count lowered while requests run: none more until they are done.
    t.counters(0).auto_children.store(1, Ordering::Relaxed);
    assert!(d.try_lease("wp", b"/d").is_none());
    drop(b);
    let c = d.try_lease("wp", b"/d").expect("a count of 1 still lets one request in");
    assert!(d.try_lease("wp", b"/e").is_none());
    drop(c);
    assert_eq!(t.counters(0).in_flight.load(Ordering::Relaxed), 0);
}

#[test]
fn a_place_held_by_a_killed_process_is_given_back() {
    let t = Table::new(None).unwrap();
    let shape = PoolShape { name: "wp".into(), pm: "dynamic", max_children: 1, max_requests: 0, backlog: 8, sockets: vec![PathBuf::from("/tmp/wp.0.sock")], counters: 0, first_slot: 0, php_fpm: Some(PhpFpmShape { terminate_after: None, capped: true }) };
    let t = Arc::new(t.view(vec![shape]));
    t.slot(0, 0).pid.store(100, Ordering::Relaxed);
    // A count of 1: one request at once.
    t.counters(0).auto_children.store(1, Ordering::Relaxed);
    let d = Dispatch::new(t.clone(), PathBuf::new());
    // A server process takes the place and is killed with its request
    // under way: its lease is never dropped.
    // SAFETY: the child only takes a lease in the shared table and exits.
    match unsafe { nix::unistd::fork() }.unwrap() {
        nix::unistd::ForkResult::Child => {
            let held = d.try_lease("wp", b"/slow.php");
            std::mem::forget(held);
            // SAFETY: _exit, as a killed process: nothing runs.
            unsafe { libc::_exit(0) };
        }
        nix::unistd::ForkResult::Parent { child } => {
            nix::sys::wait::waitpid(child, None).unwrap();
        }
    }
    assert_eq!(t.counters(0).in_flight.load(Ordering::Relaxed), 1, "the killed process took the place");
    assert!(d.try_lease("wp", b"/a").is_none());
    // The parent's once-a-second pass gives it back; a live holder's stays.
    let mine = d.try_lease("wp", b"/a");
    t.reclaim_places();
    let a = d.try_lease("wp", b"/a").expect("the place of a process gone is given back");
    t.reclaim_places();
    assert!(d.try_lease("wp", b"/b").is_none(), "a live process keeps its place");
    drop((a, mine));
    assert_eq!(t.counters(0).in_flight.load(Ordering::Relaxed), 0);
    assert!(t.counters(0).holders.iter().all(|h| h.load(Ordering::Relaxed) == 0));
}

#[test]
fn a_child_busy_for_a_killed_process_is_retired() {
    let t = table(2, 0, 4);
    let d = Dispatch::new(t.clone(), PathBuf::new());
    // A server process takes a child and is killed with its request
    // under way: its lease is never dropped.
    // SAFETY: the child only takes a lease in the shared table and exits.
    let killed = match unsafe { nix::unistd::fork() }.unwrap() {
        nix::unistd::ForkResult::Child => {
            std::mem::forget(d.try_lease("www", b"/slow.php"));
            // SAFETY: _exit, as a killed process: nothing runs.
            unsafe { libc::_exit(0) };
        }
        nix::unistd::ForkResult::Parent { child } => {
            nix::sys::wait::waitpid(child, None).unwrap();
            child.as_raw()
        }
    };
    // Leases take the first idle child: the killed process had the first.
    let mine = d.try_lease("www", b"/a").expect("the other child");
    let (theirs, live) = (0, 1);
    assert_eq!(t.slot(0, theirs).holder.load(Ordering::Relaxed), killed);
    assert_eq!(t.orphaned(0, live), None, "a live holder keeps its child");
    assert_eq!(t.orphaned(0, theirs), Some(killed));
    assert_eq!(t.slot(0, theirs).state.load(Ordering::Relaxed), RETIRING, "never handed out again");
    assert_eq!(t.orphaned(0, theirs), None, "once");
    drop(mine);
    assert_eq!(t.slot(0, live).state.load(Ordering::Relaxed), IDLE);
    assert!((0..2).all(|s| t.slot(0, s).holder.load(Ordering::Relaxed) == 0), "no holder left recorded");
}

#[test]
fn the_queue_is_bounded_and_max_requests_retires() {
    let t = table(1, 2, 0);
    let d = Dispatch::new(t.clone(), PathBuf::new());
    let l = d.lease("www", b"/", Duration::ZERO).unwrap();
    assert_eq!(d.lease("www", b"/", Duration::from_secs(1)).err(), Some(PoolBusy::QueueFull));
    drop(l);
    drop(d.lease("www", b"/", Duration::ZERO).unwrap());
    // Two requests served: the child is never handed out again.
    assert_eq!(t.slot(0, 0).state.load(Ordering::Relaxed), RETIRING);
    assert!(d.try_lease("www", b"/").is_none());
}
