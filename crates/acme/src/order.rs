//! One certificate ordered from the CA (RFC 8555 through instant-acme):
//! the account loaded from the store or created (and stored), the order,
//! its http-01 challenges answered through the store's `challenges/`, the
//! key and CSR made, the chain fetched. Every failure comes back as a
//! sentence saying at which step and why, for the error log.

use std::path::Path;
use std::time::Duration;

use instant_acme::{Account, AccountCredentials, AuthorizationStatus, ChallengeType, Identifier, NewAccount, NewOrder, OrderStatus, RetryPolicy};
use base64::Engine as _;
use warren_config::md::{KeySpec, ManagedDomain};
use warren_config::LogLevel;

use crate::challenges::{self, Answers};
use crate::csr;
use crate::store;

/// How long the CA may take to validate and to issue.
const ORDER_TIMEOUT: Duration = Duration::from_secs(90);

/// A certificate chain and its private key, PEM.
pub struct Issued {
    pub chain_pem: String,
    pub key_pem: String,
}

async fn account(d: &ManagedDomain, store_dir: &Path) -> Result<Account, String> {
    let builder = || match &d.ca_certificate_file {
        Some(roots) => Account::builder_with_root(roots).map_err(|e| format!("MDCACertificateFile {}: {e}", roots.display())),
        None => Account::builder().map_err(|e| format!("cannot make an HTTPS client: {e}")),
    };
    let file = store::account_file(store_dir, &d.ca_url);
    if let Ok(text) = std::fs::read(&file) {
        match serde_json::from_slice::<AccountCredentials>(&text) {
            Ok(credentials) => return builder()?.from_credentials(credentials).await.map_err(|e| format!("reaching the CA at {} (account {}): {e}", d.ca_url, file.display())),
            Err(e) => return Err(format!("account {} is not readable ({e}); move it away to register a new account", file.display())),
        }
    }
    let contact = d.contact.as_ref().map(|c| format!("mailto:{c}"));
    let contacts: Vec<&str> = contact.iter().map(String::as_str).collect();
    let new = NewAccount { contact: &contacts, terms_of_service_agreed: d.agreement, only_return_existing: false };
    let (account, credentials) = builder()?.create(&new, d.ca_url.clone(), None).await.map_err(|e| format!("registering an account at {}: {e}", d.ca_url))?;
    let json = serde_json::to_vec(&credentials).map_err(|e| format!("account credentials: {e}"))?;
    store::write_atomic(&file, &json, 0o600).map_err(|e| format!("writing {}: {e}", file.display()))?;
    Ok(account)
}

fn kind_name(kind: &ChallengeType) -> &'static str {
    match kind {
        ChallengeType::Http01 => "http-01",
        ChallengeType::Dns01 => "dns-01",
        ChallengeType::TlsAlpn01 => "tls-alpn-01",
        _ => "other",
    }
}

/// The name of `d` an authorization is for, as the configuration spells
/// it: what reaches the dns-01 hook (run as root), the challenge files
/// and the log is the admin's name, never what a hostile or broken CA
/// wrote (`$(reboot)`, a newline), and an authorization for a name not
/// ordered fails the order.
fn ordered(d: &ManagedDomain, identifier: &str) -> Result<String, String> {
    d.names.iter().find(|n| n.eq_ignore_ascii_case(identifier)).cloned().ok_or_else(|| format!("the CA asks to validate {identifier:?}, a name not in the order ({})", d.names.join(", ")))
}

/// Orders a certificate for `d`'s names with a key of type `spec`; `log`
/// hears each step.
pub async fn obtain(d: &ManagedDomain, spec: KeySpec, store_dir: &Path, log: &dyn Fn(LogLevel, &str)) -> Result<Issued, String> {
    let account = account(d, store_dir).await?;
    let identifiers: Vec<Identifier> = d.names.iter().map(|n| Identifier::Dns(n.clone())).collect();
    let mut order = account.new_order(&NewOrder::new(&identifiers)).await.map_err(|e| format!("new order at {}: {e}", d.ca_url))?;
    log(LogLevel::Info, &format!("order {} for {}", order.url(), d.names.join(", ")));
    let challenges = store::challenges_dir(store_dir);
    let mut answers = Answers::default();
    let mut authorizations = order.authorizations();
    while let Some(authz) = authorizations.next().await {
        let mut authz = authz.map_err(|e| format!("reading an authorization: {e}"))?;
        match authz.status {
            AuthorizationStatus::Pending => {}
            AuthorizationStatus::Valid => continue,
            other => return Err(format!("authorization for {} is {other:?}", authz.identifier())),
        }
        let name = ordered(d, &authz.identifier().to_string())?;
        let wildcard = authz.identifier().wildcard;
        let offered: Vec<ChallengeType> = authz.challenges.iter().map(|c| c.r#type.clone()).collect();
        let Some(kind) = challenges::preferred(d, wildcard).into_iter().find(|k| offered.contains(k)) else {
            let need = if wildcard { " (a wildcard needs dns-01: set MDChallengeDns01)" } else { "" };
            return Err(format!("no challenge for {name} that warren can answer: the CA offers {offered:?}, MDCAChallenges allows {:?}{need}", d.ca_challenges));
        };
        let mut challenge = authz.challenge(kind.clone()).ok_or_else(|| format!("the CA's {kind:?} challenge for {name} went away"))?;
        match kind {
            ChallengeType::Dns01 => {
                let hook = d.challenge_dns01.clone().ok_or("dns-01 without MDChallengeDns01")?;
                let domain = name.trim_start_matches("*.").to_string();
                challenges::run_hook(&hook, &["setup", &domain, &challenge.key_authorization().dns_value()])?;
                answers.dns.push((hook, domain));
            }
            ChallengeType::TlsAlpn01 => {
                let Some(file) = warren_config::md::tls_alpn_challenge_file(store_dir, &name) else {
                    return Err(format!("the CA asks tls-alpn-01 for {name}, which is not a DNS name warren serves"));
                };
                let pem = challenges::tls_alpn_certificate(&name, challenge.key_authorization().digest().as_ref())?;
                store::write_atomic(&file, pem.as_bytes(), 0o644).map_err(|e| format!("writing the tls-alpn-01 certificate {}: {e}", file.display()))?;
                answers.files.push(file);
            }
            _ => {
                if challenge.token.is_empty() || !challenge.token.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_') {
                    return Err(format!("the CA sent a malformed http-01 token for {name}"));
                }
                let file = challenges.join(&challenge.token);
                store::write_atomic(&file, challenge.key_authorization().as_str().as_bytes(), 0o644).map_err(|e| format!("writing the http-01 answer {}: {e}", file.display()))?;
                answers.files.push(file);
            }
        }
        log(LogLevel::Info, &format!("{} challenge for {name} ready", kind_name(&kind)));
        challenge.set_ready().await.map_err(|e| format!("{} challenge for {name}: {e}", kind_name(&kind)))?;
    }
    let retries = RetryPolicy::new().initial_delay(Duration::from_millis(200)).backoff(1.5).timeout(ORDER_TIMEOUT);
    let status = order.poll_ready(&retries).await.map_err(|e| format!("waiting for validation: {e}"))?;
    if status != OrderStatus::Ready {
        let why = order.state().error.as_ref().map(|p| p.to_string()).unwrap_or_else(|| "no reason given".into());
        return Err(format!("order is {status:?} after the challenges: {why}"));
    }
    let (csr, key_pem) = csr::make(d, spec)?;
    // What the CA is asked for, as sent (`openssl req -text` reads it back):
    // the one way to see that a CA dropped an extension (MDMustStaple).
    log(LogLevel::Debug, &format!("certificate request for the {spec:?} key (DER, base64): {}", base64::engine::general_purpose::STANDARD.encode(&csr)));
    order.finalize_csr(&csr).await.map_err(|e| format!("finalizing the order: {e}"))?;
    let chain_pem = order.poll_certificate(&retries).await.map_err(|e| format!("fetching the certificate: {e}"))?;
    if !chain_pem.contains("-----BEGIN CERTIFICATE-----") {
        return Err("the CA's certificate is not PEM".into());
    }
    Ok(Issued { chain_pem, key_pem })
}

#[cfg(test)]
mod tests {
    use super::ordered;
    use crate::test_support::domain;

    #[test]
    fn only_the_names_ordered_are_validated() {
        let mut d = domain(&["http-01"], None);
        d.names.push("*.a.test".into());
        assert_eq!(ordered(&d, "A.Test").unwrap(), "a.test");
        assert_eq!(ordered(&d, "*.a.test").unwrap(), "*.a.test");
        for hostile in ["$(reboot)", "a.test\nMDomain evil", "b.test", "a.test.", ""] {
            let e = ordered(&d, hostile).unwrap_err();
            assert!(e.contains("not in the order") && !e.contains('\n'), "{e}");
        }
    }
}
