//! What makes a gateway plan an HTTP backend's: kept apart from the
//! exchange so that the plan every backend protocol shares
//! ([`Gateway`](crate::gateway::Gateway)) can hold it without the exchange
//! importing that plan back.

use std::sync::Arc;

use warren_config::proxy_http::HttpOrigin;

use super::tunnel::TunnelSlot;

/// What makes a gateway plan an HTTP backend's.
#[derive(Clone)]
pub struct HttpPlan {
    pub origin: HttpOrigin,
    /// The request line's target on the backend: path (encoded) and query
    /// (the client's bytes as sent, as Apache passes `r->args`).
    pub target: Vec<u8>,
    /// Under the event MPM, the place of an upload whose client waits for
    /// the backend's 100 Continue among those a child's threads may hold.
    pub(super) continue_slot: Option<Arc<TunnelSlot>>,
}
