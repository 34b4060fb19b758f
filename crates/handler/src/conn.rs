//! A request's connection as the MPM describes it to the handler: its two
//! ends, the client behind proxies, and what the TLS handshake settled.

use std::net::SocketAddr;

/// The two ends of a connection, and the client of the request at hand.
#[derive(Clone, Copy, Debug)]
pub struct ConnInfo {
    /// The connection's peer: the TCP peer, or the source a PROXY protocol
    /// header gave (Apache's `c->client_addr`, `%{c}a`).
    pub peer: SocketAddr,
    pub local: SocketAddr,
    /// The client of the request at hand (Apache's `r->useragent_addr`):
    /// the peer, unless RemoteIPHeader named another behind it (see
    /// `Site::find_useragent` in remote_ip.rs). Everything about the client uses this:
    /// `Require`, REMOTE_ADDR, `%a`, the error log, server-status.
    pub useragent: SocketAddr,
    /// What the TLS handshake settled (None: plain HTTP).
    pub tls: Option<TlsInfo>,
}

/// mod_ssl's facts about a TLS connection, as FastCGI, logs and rewrite
/// conditions see them.
#[derive(Clone, Copy, Debug)]
pub struct TlsInfo {
    /// SSL_PROTOCOL: `TLSv1.2`, `TLSv1.3`.
    pub protocol: &'static str,
    /// SSL_CIPHER, in OpenSSL's names.
    pub cipher: &'static str,
    /// SSL_CIPHER_USEKEYSIZE.
    pub cipher_bits: u16,
    /// SSL_SESSION_RESUMED.
    pub resumed: bool,
    /// The host the client named by SNI (None: it named none).
    pub sni_host: Option<usize>,
}

impl ConnInfo {
    pub fn new(peer: SocketAddr, local: SocketAddr) -> ConnInfo {
        ConnInfo { peer, local, useragent: peer, tls: None }
    }

    /// `https` over TLS, else `http`: what self-referential URLs start with.
    pub fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// The port a URL of this scheme leaves out.
    pub fn default_port(&self) -> u16 {
        if self.tls.is_some() {
            443
        } else {
            80
        }
    }
}
