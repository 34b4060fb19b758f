//! Reading a host's certificates and keys (PEM), with every problem an
//! error naming the directive's line: what Apache checks at start, and
//! what rustls would otherwise find only at the first handshake.

use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rustls::crypto::CryptoProvider;
use rustls::sign::CertifiedKey;
use rustls::{Error as TlsError, InconsistentKeys, SignatureAlgorithm};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use warren_config::tls::{CertPair, TlsHost};
use warren_config::Origin;

use crate::loaded::Loaded;

/// A certificate warns this long before it expires.
const EXPIRY_WARNING_DAYS: i64 = 30;

fn at(origin: &Origin, message: impl std::fmt::Display) -> String {
    format!("{origin}: {message}")
}

/// The certificates in a PEM file, in order.
/// A file under `store` (MDStoreDir) is read as [`crate::store_file`] says.
fn read_certs(path: &Path, store: Option<&Path>, origin: &Origin, directive: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let text = crate::store_file::read(path, store).map_err(|e| at(origin, format!("{directive}: cannot read {}: {e}", path.display())))?;
    let certs: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(&text).collect();
    let certs = certs.map_err(|e| at(origin, format!("{directive}: {} is not valid PEM: {}", path.display(), pem_error(e))))?;
    if certs.is_empty() {
        return Err(at(origin, format!("{directive}: no certificate in {} (a PEM file with a CERTIFICATE block is expected)", path.display())));
    }
    Ok(certs)
}

fn pem_error(e: rustls_pki_types::pem::Error) -> String {
    match e {
        rustls_pki_types::pem::Error::Io(io) => io.to_string(),
        other => format!("{other:?}"),
    }
}

fn read_key(path: &Path, store: Option<&Path>, origin: &Origin, directive: &str) -> Result<PrivateKeyDer<'static>, String> {
    let text = crate::store_file::read(path, store).map_err(|e| at(origin, format!("{directive}: cannot read {}: {e}", path.display())))?;
    if text.windows(9).any(|w| w == b"ENCRYPTED") || text.windows(15).any(|w| w == b"Proc-Type: 4,EN") {
        return Err(at(origin, format!("{directive}: the private key in {} is encrypted: warren reads only unencrypted keys (openssl pkey -in KEY -out PLAIN)", path.display())));
    }
    PrivateKeyDer::from_pem_slice(&text).map_err(|e| match e {
        rustls_pki_types::pem::Error::NoItemsFound => {
            at(origin, format!("{directive}: no private key in {} (PKCS#8, RSA or EC PRIVATE KEY)", path.display()))
        }
        other => at(origin, format!("{directive}: {} has no readable private key: {}", path.display(), pem_error(other))),
    })
}

/// Validity of a DER certificate: (not before, not after), Unix seconds.
pub(crate) fn validity(der: &[u8]) -> Option<(i64, i64)> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let v = cert.validity();
    Some((v.not_before.timestamp(), v.not_after.timestamp()))
}

/// Reads one certificate and its key (and the host's chain file), checks
/// them, and staples the OCSP response the ACME helper keeps for it in
/// the store `staple_from` (MDStoreDir) when it is to be stapled. Files
/// in `md_store` (the helper's) are read as [`crate::store_file`] says.
pub(crate) fn load(pair: &CertPair, host: &TlsHost, md_store: &Path, staple_from: Option<&Path>, provider: &CryptoProvider, warnings: &mut Vec<String>) -> Result<Loaded, Vec<String>> {
    let store = Some(md_store);
    let (cert_path, cert_origin) = &pair.cert;
    if let Some(names) = host.managed.as_ref().filter(|_| !cert_path.exists()) {
        return crate::managed::temporary(names, host, provider, warnings);
    }
    let mut errors = Vec::new();
    let certs = read_certs(cert_path, store, cert_origin, "SSLCertificateFile");
    let key = match &pair.key {
        Some((path, origin)) => read_key(path, store, origin, "SSLCertificateKeyFile"),
        None => read_key(cert_path, store, cert_origin, "SSLCertificateFile (no SSLCertificateKeyFile: the key is looked for in the certificate's file)"),
    };
    let key_origin = pair.key.as_ref().map_or(cert_origin, |(_, o)| o);
    let (mut certs, key) = match (certs, key) {
        (Ok(c), Ok(k)) => (c, k),
        (c, k) => {
            errors.extend(c.err());
            errors.extend(k.err());
            return Err(errors);
        }
    };
    if let Some((chain_path, chain_origin)) = &host.chain_file {
        match read_certs(chain_path, store, chain_origin, "SSLCertificateChainFile") {
            Ok(chain) => certs.extend(chain),
            Err(e) => errors.push(e),
        }
    }
    match validity(&certs[0]) {
        None => errors.push(at(cert_origin, format!("SSLCertificateFile: the first certificate of {} cannot be read as X.509", cert_path.display()))),
        Some((not_before, not_after)) => {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
            if now > not_after {
                errors.push(at(cert_origin, format!("SSLCertificateFile: the certificate in {} has expired ({})", cert_path.display(), date(not_after))));
            } else if now < not_before {
                errors.push(at(cert_origin, format!("SSLCertificateFile: the certificate in {} is not valid yet (from {})", cert_path.display(), date(not_before))));
            } else if not_after - now < EXPIRY_WARNING_DAYS * 86400 {
                warnings.push(at(cert_origin, format!("SSLCertificateFile: the certificate in {} expires in {} days ({})", cert_path.display(), (not_after - now) / 86400, date(not_after))));
            }
        }
    }
    let signing = match provider.key_provider.load_private_key(key) {
        Ok(k) => k,
        Err(e) => {
            errors.push(at(key_origin, format!("unsupported private key ({e}): RSA (2048 bits or more), ECDSA P-256/P-384 or Ed25519 are")));
            return Err(errors);
        }
    };
    let ecdsa = signing.algorithm() == SignatureAlgorithm::ECDSA;
    let mut certified = CertifiedKey::new(certs, signing);
    match certified.keys_match() {
        Ok(()) | Err(TlsError::InconsistentKeys(InconsistentKeys::Unknown)) => {}
        Err(TlsError::InconsistentKeys(InconsistentKeys::KeyMismatch)) => {
            errors.push(at(key_origin, format!("the private key does not match the certificate in {}", cert_path.display())));
        }
        Err(e) => errors.push(at(cert_origin, format!("SSLCertificateFile: {}: {e}", cert_path.display()))),
    }
    if let Some(store) = staple_from {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        match crate::stapling::response_for(store, &certified.cert[0], now) {
            Some(der) => certified.ocsp = Some(der),
            None => warnings.push(at(&host.origin, format!("OCSP stapling: no current response for {} yet: the ACME helper fetches it into {}/ocsp and a graceful restart staples it", cert_path.display(), store.display()))),
        }
    }
    if errors.is_empty() {
        Ok(Loaded { key: Arc::new(certified), ecdsa })
    } else {
        Err(errors)
    }
}

/// `2026-11-25` for Unix seconds.
fn date(secs: i64) -> String {
    // Days to civil date (Howard Hinnant's algorithm).
    let z = secs.div_euclid(86400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates() {
        assert_eq!(super::date(0), "1970-01-01");
        assert_eq!(super::date(1_795_000_000), "2026-11-18");
    }
}
