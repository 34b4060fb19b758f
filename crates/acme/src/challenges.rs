//! Answering an authorization's challenge, by the kinds MDCAChallenges
//! lists in order (http-01 by default, dns-01 as well once an
//! MDChallengeDns01 hook is set; a wildcard name only by dns-01, as RFC
//! 8555 says): http-01 through the store's `challenges/` files, which
//! the server's children answer; dns-01 through the hook, called as
//! mod_md calls it: `HOOK setup DOMAIN VALUE`, then `HOOK teardown
//! DOMAIN` when the order is done. [`Answers`] undoes every answer it
//! made, however the order ends.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use instant_acme::ChallengeType;
use warren_config::md::ManagedDomain;

/// How long a dns-01 hook may run.
const HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// The kinds to try for a name, best first.
pub fn preferred(d: &ManagedDomain, wildcard: bool) -> Vec<ChallengeType> {
    let mut kinds: Vec<&str> = d.ca_challenges.iter().map(String::as_str).collect();
    if d.challenge_dns01.is_some() && !kinds.contains(&"dns-01") {
        kinds.push("dns-01");
    }
    kinds
        .into_iter()
        .filter_map(|k| match k {
            "http-01" if !wildcard => Some(ChallengeType::Http01),
            "tls-alpn-01" if !wildcard => Some(ChallengeType::TlsAlpn01),
            "dns-01" if d.challenge_dns01.is_some() => Some(ChallengeType::Dns01),
            _ => None,
        })
        .collect()
}

/// RFC 8737's validation certificate for `name`: self-signed, the name
/// as its only subjectAltName, the key authorization's SHA-256 `digest`
/// in a critical acmeIdentifier extension. Key and certificate, PEM.
pub fn tls_alpn_certificate(name: &str, digest: &[u8]) -> Result<String, String> {
    let fail = |e: rcgen::Error| format!("making the tls-alpn-01 certificate for {name}: {e}");
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(fail)?;
    let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).map_err(fail)?;
    params.custom_extensions = vec![rcgen::CustomExtension::new_acme_identifier(digest)];
    let cert = params.self_signed(&key).map_err(fail)?;
    Ok(format!("{}{}", key.serialize_pem(), cert.pem()))
}

/// Runs the dns-01 hook with `args`; its failure (exit status, or no end
/// within a minute) as a sentence.
pub fn run_hook(hook: &Path, args: &[&str]) -> Result<(), String> {
    let mut child = Command::new(hook).args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().map_err(|e| format!("MDChallengeDns01 {}: cannot run it: {e}", hook.display()))?;
    let deadline = Instant::now() + HOOK_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    use std::io::Read;
                    let _ = e.read_to_string(&mut err);
                }
                return Err(format!("MDChallengeDns01 {} {}: {status}: {}", hook.display(), args.join(" "), err.trim()));
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("MDChallengeDns01 {} {}: no end within {} s; killed", hook.display(), args.join(" "), HOOK_TIMEOUT.as_secs()));
            }
        }
    }
}

/// The answers an order has put in place, undone when dropped.
#[derive(Default)]
pub struct Answers {
    pub files: Vec<PathBuf>,
    /// (hook, domain) to tear down.
    pub dns: Vec<(PathBuf, String)>,
}

impl Drop for Answers {
    fn drop(&mut self) {
        for f in &self.files {
            let _ = std::fs::remove_file(f);
        }
        for (hook, domain) in &self.dns {
            let _ = run_hook(hook, &["teardown", domain]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::domain;

    #[test]
    fn wildcards_only_by_dns_and_only_with_a_hook() {
        assert_eq!(preferred(&domain(&["http-01"], None), false), [ChallengeType::Http01]);
        assert!(preferred(&domain(&["http-01"], None), true).is_empty());
        assert_eq!(preferred(&domain(&["http-01"], Some("/bin/true")), true), [ChallengeType::Dns01]);
        assert_eq!(preferred(&domain(&["dns-01", "http-01"], Some("/bin/true")), false), [ChallengeType::Dns01, ChallengeType::Http01]);
        assert_eq!(preferred(&domain(&["tls-alpn-01", "http-01"], None), false), [ChallengeType::TlsAlpn01, ChallengeType::Http01]);
        assert_eq!(preferred(&domain(&["tls-alpn-01", "http-01"], None), true), []);
    }

    #[test]
    fn hook_failures_say_why() {
        assert!(run_hook(Path::new("/bin/true"), &["setup", "a.test", "x"]).is_ok());
        let e = run_hook(Path::new("/bin/false"), &["setup", "a.test", "x"]).unwrap_err();
        assert!(e.contains("/bin/false setup a.test x") && e.contains("exit status: 1"), "{e}");
        assert!(run_hook(Path::new("/nonexistent/hook"), &["setup"]).unwrap_err().contains("cannot run it"));
    }
}
