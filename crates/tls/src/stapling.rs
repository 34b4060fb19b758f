//! OCSP stapling (MDStapling, SSLUseStapling): the response the ACME
//! helper fetched, checked and stored for a certificate (warren-acme's
//! `stapling`, in MDStoreDir's `ocsp/`) is stapled to it, read here by
//! the parent at each start and graceful restart (the helper asks for one
//! when a response changes), so a serving child never asks a responder.
//! A response whose nextUpdate has passed is not stapled.

use std::path::Path;

use der::Decode;
use x509_ocsp::{BasicOcspResponse, OcspResponse, OcspResponseStatus};

/// The name the helper keeps a certificate's response under: the first
/// 16 bytes of its SHA-256 in hex (as warren-acme's `certificate_id`).
fn certificate_id(leaf: &[u8]) -> String {
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, leaf).as_ref()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// The stored response for `leaf`, if there is one still current at `now`.
pub(crate) fn response_for(store: &Path, leaf: &[u8], now: i64) -> Option<Vec<u8>> {
    let der = crate::store_file::read(&warren_config::md::ocsp_file(store, &certificate_id(leaf)), Some(store)).ok()?;
    current(&der, now).then_some(der)
}

/// Whether a response is a successful one none of whose statuses has
/// passed its nextUpdate (the helper checked its signature and subject).
fn current(der: &[u8], now: i64) -> bool {
    let Ok(response) = OcspResponse::from_der(der) else { return false };
    let Some(bytes) = response.response_bytes.filter(|_| response.response_status == OcspResponseStatus::Successful) else { return false };
    let Ok(basic) = BasicOcspResponse::from_der(bytes.response.as_bytes()) else { return false };
    let responses = &basic.tbs_response_data.responses;
    !responses.is_empty() && responses.iter().all(|r| r.next_update.as_ref().is_none_or(|n| n.0.to_unix_duration().as_secs() as i64 > now))
}

#[cfg(test)]
mod tests {
    #[test]
    fn garbage_is_never_stapled() {
        assert!(!super::current(b"", 0));
        assert!(!super::current(b"\x30\x03\x0a\x01\x06", 0));
    }
}
