//! protocol.rs over TLS: its tests, but those about slow clients and
//! timeouts (which the relay's own buffering would blur), with the main
//! server on TLS and the tests' connections carried over TLS by the
//! harness's relay (common::over_tls holds in this binary, whose name ends
//! in `_tls`). protocol.rs lists which tests run here.

// The suite's file is a module here, not the crate's root: the harness's
// exported macros are named through the crate.
macro_rules! each_mpm {
    ($($t:tt)*) => { crate::each_mpm!($($t)*); };
}

macro_rules! plain_only {
    ($($item:item)*) => {};
}
macro_rules! over_tls_only {
    ($($item:item)*) => { $($item)* };
}

#[path = "protocol.rs"]
#[allow(dead_code)]
mod over_tls;
