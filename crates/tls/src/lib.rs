//! TLS for warren.
//!
//! - [`names`]: mod_ssl's names for what a handshake settled (SSL_PROTOCOL,
//!   SSL_CIPHER), as FastCGI applications and logs see them.

pub mod names;

pub use names::{cipher_bits, cipher_name, protocol_name};
