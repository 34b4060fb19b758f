//! When a domain is due: its certificate's renewal window (MDRenewWindow)
//! from the certificate in the store, and after a failure MDRetryDelay
//! doubled on each further failure, up to a day.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use warren_config::md::RenewWindow;

/// The longest wait between two tries after failures, as mod_md.
pub const MAX_BACKOFF: Duration = Duration::from_secs(24 * 3600);

pub fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// (not before, not after) of the first certificate of a PEM file, Unix seconds.
pub fn validity(pem: &Path) -> Option<(i64, i64)> {
    let der = CertificateDer::from_pem_file(pem).ok()?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der).ok()?;
    let v = cert.validity();
    Some((v.not_before.timestamp(), v.not_after.timestamp()))
}

/// When the certificate in `pem` is to be renewed (Unix seconds): now if
/// there is none or it cannot be read.
pub fn renewal_due(pem: &Path, window: RenewWindow) -> i64 {
    match validity(pem) {
        Some((from, until)) => until - window.lead(from, until),
        None => 0,
    }
}

/// The wait before the next try after `failures` failures in a row.
pub fn backoff(retry_delay: Duration, failures: u32) -> Duration {
    let factor = 1u32.checked_shl(failures.saturating_sub(1).min(31)).unwrap_or(u32::MAX);
    retry_delay.checked_mul(factor).unwrap_or(MAX_BACKOFF).min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_a_day() {
        let d = Duration::from_secs(5);
        assert_eq!(backoff(d, 1), Duration::from_secs(5));
        assert_eq!(backoff(d, 2), Duration::from_secs(10));
        assert_eq!(backoff(d, 4), Duration::from_secs(40));
        assert_eq!(backoff(d, 40), MAX_BACKOFF);
    }

    #[test]
    fn no_certificate_is_due_now() {
        assert_eq!(renewal_due(Path::new("/nonexistent/pubcert.pem"), RenewWindow::Percent(33)), 0);
    }
}
