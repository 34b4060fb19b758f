//! MDStapling in the helper: for each certificate to staple
//! (`warren_config::stapling::stapled_certificates`), the OCSP response fetched
//! from the responder its certificate names, checked ([`crate::ocsp`]),
//! and kept in MDStoreDir's `ocsp/` (0600, written atomically), where the
//! parent's TLS setup takes it at the next (graceful) start. A response is
//! fetched again halfway to its nextUpdate; a responder that fails is
//! asked again with backoff, and the response kept meanwhile is served
//! until its nextUpdate, then removed. A revoked certificate is logged
//! and, for a managed domain, renewed at once. A certificate naming no
//! responder but a CRL Distribution Point is checked against its CRL
//! instead ([`check_crl`]).

use std::path::Path;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::CertificateDer;
use warren_config::md::ocsp_file;
use warren_config::stapling::StapledCertificate;

use crate::{crl, ocsp, schedule, store};

/// A response without nextUpdate is fetched again after this long.
const NO_NEXT_UPDATE: i64 = 3600;
/// The first wait after a failure, doubled on each further one.
const RETRY: Duration = Duration::from_secs(5);
/// The soonest a response is fetched again after a good one.
const MIN_REFRESH: i64 = 60;

/// The name a certificate's response is kept under: the first 16 bytes
/// of its SHA-256, in hex (the parent's TLS setup names it alike).
pub fn certificate_id(leaf: &[u8]) -> String {
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, leaf).as_ref()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// One certificate's stapling state.
pub struct Staple {
    pub config: StapledCertificate,
    /// The certificate it was for (a renewed one starts anew).
    id: String,
    pub due: i64,
    failures: u32,
    /// The nextUpdate of the response in the store, if one is there.
    kept_until: Option<i64>,
    /// A reason it cannot be stapled at all (said once).
    unstapleable: Option<String>,
}

/// What a pass over the staples asks of the helper.
#[derive(Default)]
pub struct Outcome {
    /// A response was stored or removed: a graceful restart takes it.
    pub changed: bool,
    /// Managed domains whose certificate was found revoked.
    pub revoked: Vec<String>,
}

impl Staple {
    pub fn new(config: StapledCertificate) -> Staple {
        Staple { config, id: String::new(), due: 0, failures: 0, kept_until: None, unstapleable: None }
    }
}

/// The certificate and its issuer: the PEM file's first two, or the
/// issuer from SSLCertificateChainFile.
fn certificate_and_issuer(c: &StapledCertificate) -> Result<(Vec<u8>, Vec<u8>), String> {
    let read = |p: &Path| -> Result<Vec<Vec<u8>>, String> {
        let certs: Result<Vec<CertificateDer>, _> = CertificateDer::pem_file_iter(p).map_err(|e| format!("{}: {e:?}", p.display()))?.collect();
        Ok(certs.map_err(|e| format!("{}: {e:?}", p.display()))?.into_iter().map(|c| c.to_vec()).collect())
    };
    let mut chain = read(&c.cert)?;
    if let Some(more) = &c.chain {
        chain.extend(read(more)?);
    }
    let mut chain = chain.into_iter();
    let leaf = chain.next().ok_or_else(|| format!("no certificate in {}", c.cert.display()))?;
    let issuer = chain.next().ok_or_else(|| format!("{}: its issuer is not known (no chain after the certificate, no SSLCertificateChainFile)", c.cert.display()))?;
    Ok((leaf, issuer))
}

/// The staples for a configuration, keeping the state of those it had.
pub fn reconfigured(old: Vec<Staple>, list: Vec<StapledCertificate>) -> Vec<Staple> {
    let mut old = old;
    list.into_iter()
        .map(|c| match old.iter().position(|s| s.config == c) {
            Some(i) => old.swap_remove(i),
            None => Staple::new(c),
        })
        .collect()
}

/// Fetches the responses that are due; `log` says what happened.
pub fn run_due(staples: &mut [Staple], store_dir: &Path, runtime: &tokio::runtime::Runtime, log: &dyn Fn(warren_config::LogLevel, &str)) -> Outcome {
    use warren_config::LogLevel;
    let mut outcome = Outcome::default();
    let now = schedule::now();
    for s in staples.iter_mut() {
        let (leaf, issuer) = match certificate_and_issuer(&s.config) {
            Ok(pair) => pair,
            Err(why) => {
                // A managed domain's certificate comes later; then it is read again.
                if s.unstapleable.as_deref() != Some(&why) && s.config.domain.is_none() {
                    log(LogLevel::Warn, &format!("MDStapling: {why}: not stapled"));
                }
                s.unstapleable = Some(why);
                s.due = now + RETRY.as_secs() as i64;
                continue;
            }
        };
        let id = certificate_id(&leaf);
        if id != s.id {
            // A new certificate (or the first look): start from what the store has.
            *s = Staple { config: s.config.clone(), id: id.clone(), due: now, failures: 0, kept_until: None, unstapleable: None };
            if let Ok(der) = std::fs::read(ocsp_file(store_dir, &id)) {
                if let Ok(c) = ocsp::check(&der, &leaf, &issuer, now) {
                    s.kept_until = Some(c.next_update.unwrap_or(now + NO_NEXT_UPDATE));
                    s.due = refresh_at(&c, now);
                }
            }
        }
        if s.due > now {
            continue;
        }
        let name = s.config.cert.display().to_string();
        let url = match ocsp::responder_url(&leaf) {
            Ok(Some(url)) => url,
            Ok(None) | Err(_) => {
                if let Ok(Some(crl_url)) = crl::distribution_point(&leaf) {
                    check_crl(s, &leaf, &issuer, &crl_url, runtime, log, &mut outcome);
                    continue;
                }
                if s.unstapleable.is_none() {
                    log(LogLevel::Warn, &format!("MDStapling: {name} names no OCSP responder nor CRL: not stapled, revocation not checked"));
                    s.unstapleable = Some("no responder".into());
                }
                s.due = i64::MAX;
                continue;
            }
        };
        let answer = ocsp::request(&leaf, &issuer)
            .and_then(|req| runtime.block_on(ocsp::fetch(&url, req, s.config.roots.as_deref())))
            .and_then(|der| ocsp::check(&der, &leaf, &issuer, now).map(|c| (der, c)))
            .and_then(|(der, c)| long_enough(&c, now).map(|()| (der, c)));
        match answer {
            Ok((der, checked)) => {
                if let Err(e) = store::write_atomic(&ocsp_file(store_dir, &id), &der, 0o600) {
                    log(LogLevel::Error, &format!("MDStapling: {name}: cannot store the OCSP response in {}: {e}", store_dir.display()));
                    s.failures += 1;
                    s.due = now + schedule::backoff(RETRY, s.failures).as_secs() as i64;
                    continue;
                }
                s.failures = 0;
                s.kept_until = Some(checked.next_update.unwrap_or(now + NO_NEXT_UPDATE));
                s.due = refresh_at(&checked, now);
                outcome.changed = true;
                match &checked.status {
                    ocsp::Status::Revoked(at, reason) => {
                        let renewal = if s.config.domain.is_some() { "; the managed domain's certificate is renewed now" } else { "" };
                        log(LogLevel::Error, &format!("MDStapling: {name} is REVOKED according to {url} (since {}, reason {}){renewal}", status_date(*at), reason.as_deref().unwrap_or("not given")));
                        outcome.revoked.extend(s.config.domain.clone());
                    }
                    status => log(LogLevel::Info, &format!("MDStapling: {name}: OCSP response from {url} ({status:?}), next fetched {}", status_date(s.due))),
                }
            }
            Err(why) => {
                s.failures += 1;
                let wait = schedule::backoff(RETRY, s.failures).as_secs() as i64;
                s.due = now + wait;
                let kept = match s.kept_until {
                    Some(until) if until > now => format!("the response kept is stapled until {}", status_date(until)),
                    Some(_) => {
                        let _ = std::fs::remove_file(ocsp_file(store_dir, &id));
                        s.kept_until = None;
                        outcome.changed = true;
                        "the response kept has expired: removed, nothing stapled".to_string()
                    }
                    None => "nothing stapled meanwhile".to_string(),
                };
                log(LogLevel::Warn, &format!("MDStapling: {name}: OCSP failed ({} in a row): {why}; {kept}; next try in {wait} s", s.failures));
            }
        }
    }
    // A kept response expires even if its refresh is not due yet.
    for s in staples.iter_mut() {
        if s.kept_until.is_some_and(|u| u <= now) {
            let _ = std::fs::remove_file(ocsp_file(store_dir, &s.id));
            s.kept_until = None;
            s.due = s.due.min(now);
            outcome.changed = true;
        }
    }
    outcome
}

/// A certificate with no OCSP responder but a CRL: the list fetched and
/// checked ([`crl`]), the certificate looked up; revoked, it is logged
/// and a managed domain renewed at once, as by OCSP. Nothing is stapled.
/// Checked again halfway to the list's nextUpdate (an hour without one,
/// never sooner than a minute), a failure with the OCSP backoff.
fn check_crl(s: &mut Staple, leaf: &[u8], issuer: &[u8], url: &str, runtime: &tokio::runtime::Runtime, log: &dyn Fn(warren_config::LogLevel, &str), outcome: &mut Outcome) {
    use warren_config::LogLevel;
    let now = schedule::now();
    let name = s.config.cert.display().to_string();
    match runtime.block_on(crl::fetch(url, s.config.roots.as_deref())).and_then(|der| crl::check(&der, leaf, issuer, now)) {
        Ok(checked) => {
            s.failures = 0;
            let next = checked.next_update.unwrap_or(checked.this_update + NO_NEXT_UPDATE);
            s.due = (checked.this_update + (next - checked.this_update) / 2).max(now + MIN_REFRESH);
            match checked.revoked_at {
                Some(at) => {
                    let renewal = if s.config.domain.is_some() { "; the managed domain's certificate is renewed now" } else { "" };
                    log(LogLevel::Error, &format!("MDStapling: {name} is REVOKED according to the CRL at {url} (since {}){renewal}", status_date(at)));
                    outcome.revoked.extend(s.config.domain.clone());
                }
                None => log(LogLevel::Info, &format!("MDStapling: {name}: not revoked according to the CRL at {url}, checked again {}", status_date(s.due))),
            }
        }
        Err(why) => {
            s.failures += 1;
            let wait = schedule::backoff(RETRY, s.failures).as_secs() as i64;
            s.due = now + wait;
            log(LogLevel::Warn, &format!("MDStapling: {name}: CRL check failed ({} in a row): {why}; next try in {wait} s", s.failures));
        }
    }
}

/// A response is kept only if it stays good for [`MIN_LIFETIME`]: each
/// one stored (and each that expires) costs the server a graceful
/// restart, so a responder whose answers expire within seconds (hostile,
/// or on the path: OCSP goes over plain HTTP) would otherwise restart it
/// every few seconds.
fn long_enough(c: &ocsp::Checked, now: i64) -> Result<(), String> {
    match c.next_update {
        Some(next) if next < now + MIN_LIFETIME => Err(format!("the response is good for {} s only (nextUpdate), less than the {MIN_LIFETIME} s a stapled one must be (each costs a graceful restart)", next - now)),
        _ => Ok(()),
    }
}

/// The least time a response must stay good to be kept: it is fetched
/// again halfway, so no sooner than [`MIN_REFRESH`].
const MIN_LIFETIME: i64 = 2 * MIN_REFRESH;

/// Halfway between the response's thisUpdate and nextUpdate.
fn refresh_at(c: &ocsp::Checked, now: i64) -> i64 {
    let next = c.next_update.unwrap_or(c.this_update + NO_NEXT_UPDATE);
    (c.this_update + (next - c.this_update) / 2).max(now + MIN_REFRESH).min(next.max(now + 1))
}

fn status_date(t: i64) -> String {
    crate::status::http_date(t)
}

/// The soonest a staple is due (or expires).
pub fn next_due(staples: &[Staple]) -> i64 {
    staples.iter().map(|s| s.due.min(s.kept_until.unwrap_or(i64::MAX))).min().unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refreshed_halfway_never_sooner_than_a_minute() {
        let c = |this, next| ocsp::Checked { status: ocsp::Status::Good, this_update: this, next_update: next };
        assert_eq!(refresh_at(&c(1000, Some(1000 + 7 * 86400)), 1000), 1000 + 7 * 86400 / 2);
        assert_eq!(refresh_at(&c(1000, Some(1010)), 1000), 1010);
        assert_eq!(refresh_at(&c(1000, Some(1200)), 1000), 1100);
        assert_eq!(refresh_at(&c(1000, None), 1000), 1000 + NO_NEXT_UPDATE / 2);
    }

    #[test]
    fn a_response_that_expires_within_two_minutes_is_not_kept() {
        let c = |next| ocsp::Checked { status: ocsp::Status::Good, this_update: 1000, next_update: next };
        for next in [1001, 1060, 1119] {
            assert!(long_enough(&c(Some(next)), 1000).unwrap_err().contains("good for"), "{next}");
        }
        assert!(long_enough(&c(Some(1120)), 1000).is_ok());
        assert!(long_enough(&c(None), 1000).is_ok());
    }
}
