//! mod_md for warren: the certificates of `MDomain`s obtained and renewed
//! from an ACME (RFC 8555) CA by warren itself.
//!
//! - [`helper`]: the process that does it, forked by the parent at start
//!   while warren has one thread and started clean (the binary executed
//!   again, handed its settings on a pipe); it never serves a client. It sleeps
//!   until a domain is due ([`schedule`]), orders its certificate
//!   ([`order`], through instant-acme on a current-thread tokio runtime;
//!   its challenges answered by [`challenges`], its key and request made
//!   by [`csr`]),
//!   writes it to the store and asks the parent for a graceful restart
//!   (SIGHUP), which takes the new certificate into use.
//! - [`privilege`]: who the helper runs as: an account of its own
//!   (MDHelperUser), with a small root relay between it and the parent.
//! - [`store`]: MDStoreDir as mod_md lays it out: `accounts/` and
//!   `domains/NAME/{pubcert,privkey}.pem` 0600 under 0700 directories,
//!   every file written to a temporary name, synced and renamed, and a
//!   domain's pair swapped in as one directory, so a crash or a full disk
//!   never leaves a half-written file or a key beside another's
//!   certificate; `challenges/` holds http-01 key authorizations and
//!   tls-alpn-01 certificates, the part server children read
//!   (warren-handler's `acme_challenge`, warren-tls's `acme_alpn`).
//! - [`stapling`]: MDStapling, OCSP responses ([`ocsp`]) fetched for the
//!   certificates to staple and kept in the store's `ocsp/`; [`crl`]: a
//!   certificate without a responder checked against its CRL instead.
//! - [`status`]: what the helper knows, published for md-status and
//!   server-status.
//!
//! Until a domain has its certificate, warren-tls serves a temporary
//! self-signed one for its names.

pub mod challenges;
pub mod crl;
pub mod csr;
pub mod helper;
pub mod ocsp;
pub mod order;
pub mod privilege;
pub mod schedule;
pub mod stapling;
pub mod status;
pub mod store;

#[cfg(test)]
/// A managed domain for the unit tests.
mod test_support {
    use std::path::PathBuf;
    use std::time::Duration;

    use warren_config::md::ManagedDomain;

    pub fn domain(challenges: &[&str], hook: Option<&str>) -> ManagedDomain {
        ManagedDomain {
            names: vec!["a.test".into()],
            origin: warren_config::Origin { file: std::sync::Arc::new("t.conf".into()), line: 1 },
            auto: true,
            ca_url: String::new(),
            ca_certificate_file: None,
            contact: None,
            agreement: true,
            private_keys: vec![],
            renew_window: warren_config::md::RenewWindow::Percent(33),
            retry_delay: Duration::from_secs(5),
            challenge_dns01: hook.map(PathBuf::from),
            require_https: warren_config::md::RequireHttps::Off,
            stapling: false,
            must_staple: false,
            ca_challenges: challenges.iter().map(|c| c.to_string()).collect(),
            has_certificate: false,
            https_port: None,
        }
    }
}
