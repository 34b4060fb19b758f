//! mod_ssl's (OpenSSL's) names for protocol versions and cipher suites:
//! what SSL_PROTOCOL, SSL_CIPHER and SSL_CIPHER_USEKEYSIZE hold in Apache,
//! so that applications and log formats written for it read the same.

use rustls::{CipherSuite, ProtocolVersion, SupportedCipherSuite};

pub fn protocol_name(v: ProtocolVersion) -> &'static str {
    match v {
        ProtocolVersion::TLSv1_3 => "TLSv1.3",
        ProtocolVersion::TLSv1_2 => "TLSv1.2",
        ProtocolVersion::TLSv1_1 => "TLSv1.1",
        ProtocolVersion::TLSv1_0 => "TLSv1",
        _ => "unknown",
    }
}

pub fn cipher_name(s: SupportedCipherSuite) -> &'static str {
    match s.suite() {
        CipherSuite::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
        CipherSuite::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => "ECDHE-ECDSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => "ECDHE-ECDSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-ECDSA-CHACHA20-POLY1305",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => "ECDHE-RSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => "ECDHE-RSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-RSA-CHACHA20-POLY1305",
        _ => "unknown",
    }
}

/// The symmetric key's size in bits (SSL_CIPHER_USEKEYSIZE).
pub fn cipher_bits(s: SupportedCipherSuite) -> u16 {
    match s.suite() {
        CipherSuite::TLS13_AES_128_GCM_SHA256 | CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 | CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 128,
        _ => 256,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_suite_rustls_offers_has_a_name() {
        for s in rustls::crypto::aws_lc_rs::ALL_CIPHER_SUITES {
            assert_ne!(cipher_name(*s), "unknown", "{:?}", s.suite());
        }
        assert_eq!(protocol_name(ProtocolVersion::TLSv1_3), "TLSv1.3");
    }
}
