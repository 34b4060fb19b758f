//! proxy_websocket.rs over TLS: the same tests with the main server on TLS
//! and the tests' connections carried over TLS by the harness's relay
//! (common::over_tls holds in this binary, whose name ends in `_tls`), so
//! that the tunnel's client side is a TLS connection (rustls' buffered
//! records, close_notify) under each MPM.

// The suite's file is a module here, not the crate's root: the harness's
// exported macros are named through the crate.
macro_rules! each_mpm {
    ($($t:tt)*) => { crate::each_mpm!($($t)*); };
}

// Its backpressure test: the relay writes one way at a time (see there).
macro_rules! plain_only {
    ($($item:item)*) => {};
}

#[path = "proxy_websocket.rs"]
mod over_tls;
