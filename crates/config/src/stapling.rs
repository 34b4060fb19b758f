//! Which certificates are stapled, found once the whole configuration is
//! read: mod_md's `MDStapling` (and its MDStapleOthers behaviour) and
//! mod_ssl's `SSLUseStapling`. The ACME helper (warren-acme) fetches their
//! OCSP responses and warren-tls staples them; mod_md's settings are in
//! [`md`](crate::md).

use std::path::PathBuf;

use crate::settings::Settings;

/// A certificate whose OCSP response the ACME helper fetches and warren
/// staples (see [`stapled_certificates`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StapledCertificate {
    /// The PEM file: the certificate first, then its chain.
    pub cert: PathBuf,
    /// SSLCertificateChainFile, where the issuer may be instead.
    pub chain: Option<PathBuf>,
    /// The managed domain it is the certificate of (a revoked one is renewed).
    pub domain: Option<String>,
    /// MDCACertificateFile (the domain's, else the server's): whom an
    /// https:// responder or CRL server is trusted through, as mod_md's
    /// connections; None: the system's roots.
    pub roots: Option<PathBuf>,
}

/// The certificates to staple: a managed domain's with MDStapling on (its
/// own or the server's), and, as mod_md's MDStapleOthers, every other
/// certificate of the server when MDStapling is on server-wide; a host's
/// with `SSLUseStapling on` too (mod_ssl's stapling, served the same way).
pub fn stapled_certificates(s: &Settings) -> Vec<StapledCertificate> {
    let others = s.md.options.stapling == Some(true);
    let mut list: Vec<StapledCertificate> = Vec::new();
    for tls in std::iter::once(&s.main).chain(s.virtual_hosts.iter().map(|vh| &vh.host)).filter_map(|h| h.tls.as_ref()) {
        let domain = tls.managed.as_ref().and_then(|names| s.md.domains.iter().find(|d| d.names[0] == names[0]));
        let wanted = match domain {
            Some(d) => d.stapling || tls.use_stapling,
            None => others || tls.use_stapling,
        };
        if !wanted {
            continue;
        }
        for pair in &tls.certificates {
            let roots = domain.map_or(s.md.options.ca_certificate_file.clone(), |d| d.ca_certificate_file.clone());
            let c = StapledCertificate { cert: pair.cert.0.clone(), chain: tls.chain_file.as_ref().map(|(p, _)| p.clone()), domain: domain.map(|d| d.names[0].clone()), roots };
            if !list.iter().any(|l| l.cert == c.cert) {
                list.push(c);
            }
        }
    }
    list
}
