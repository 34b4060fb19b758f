//! Revocation through CRLs (RFC 5280), for a certificate that names no
//! OCSP responder but a CRL Distribution Point (Let's Encrypt's since May
//! 2025, when it ended OCSP): the list fetched over http:// (or https://),
//! at most
//! [`MAX_CRL`] bytes within the OCSP timeout, and checked before it is
//! believed: issued by the certificate's issuer (name) and signed by its
//! key, thisUpdate not ahead of the clock, nextUpdate not past. Then the
//! certificate's serial is looked up in it. Only the helper runs this;
//! nothing is stapled from a CRL.

use std::path::Path;

use bytes::Bytes;
use der::oid::ObjectIdentifier;
use der::{Decode, Encode};
use http_body_util::Full;
use rustls_pki_types::CertificateDer;
use x509_cert::crl::CertificateList;
use x509_cert::ext::pkix::name::DistributionPointName;
use x509_cert::ext::pkix::CrlDistributionPoints;
use x509_cert::time::Time;
use x509_cert::Certificate;

const CRL_DISTRIBUTION_POINTS: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.31");

/// The most of a CRL read: Let's Encrypt shards its lists to keep each
/// well under a megabyte; a bigger answer is refused, not read on.
pub const MAX_CRL: usize = 4 * 1024 * 1024;

/// What a checked CRL says of a certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// Revoked at (Unix seconds), if the list has its serial.
    pub revoked_at: Option<i64>,
    pub this_update: i64,
    pub next_update: Option<i64>,
}

/// The first http:// CRL Distribution Point of a certificate (else the
/// first https:// one).
pub fn distribution_point(leaf: &[u8]) -> Result<Option<String>, String> {
    let cert = Certificate::from_der(leaf).map_err(|e| format!("the certificate cannot be read: {e}"))?;
    let Some(ext) = cert.tbs_certificate.extensions.iter().flatten().find(|e| e.extn_id == CRL_DISTRIBUTION_POINTS) else { return Ok(None) };
    let points = CrlDistributionPoints::from_der(ext.extn_value.as_bytes()).map_err(|e| format!("its CRL Distribution Points cannot be read: {e}"))?;
    let names = points.0.iter().filter_map(|p| match &p.distribution_point {
        Some(DistributionPointName::FullName(names)) => Some(names),
        _ => None,
    });
    Ok(crate::ocsp::first_web_url(names.flatten()))
}

/// GETs the CRL at `url` (https:// trusting `roots`, as OCSP's).
pub async fn fetch(url: &str, roots: Option<&Path>) -> Result<Vec<u8>, String> {
    let req = hyper::Request::get(url).body(Full::new(Bytes::new())).map_err(|e| format!("{url}: {e}"))?;
    crate::ocsp::exchange(url, req, MAX_CRL, roots).await
}

fn unix(t: &Time) -> i64 {
    t.to_unix_duration().as_secs() as i64
}

/// Checks `crl` (DER) as the module says and looks `leaf` up in it.
pub fn check(crl: &[u8], leaf: &[u8], issuer: &[u8], now: i64) -> Result<Checked, String> {
    let list = CertificateList::from_der(crl).map_err(|e| format!("not a CRL: {e}"))?;
    let (leaf_cert, issuer_cert) = (Certificate::from_der(leaf).map_err(|e| format!("the certificate cannot be read: {e}"))?, Certificate::from_der(issuer).map_err(|e| format!("its issuer cannot be read: {e}"))?);
    let tbs = &list.tbs_cert_list;
    if tbs.issuer != leaf_cert.tbs_certificate.issuer || tbs.issuer != issuer_cert.tbs_certificate.subject {
        return Err(format!("the CRL is issued by {}, not by the certificate's issuer {}", tbs.issuer, leaf_cert.tbs_certificate.issuer));
    }
    let signed = tbs.to_der().map_err(|e| e.to_string())?;
    let algorithm = list.signature_algorithm.to_der().map_err(|e| e.to_string())?;
    let signature = list.signature.as_bytes().ok_or("the CRL's signature is not whole bytes")?;
    if !crate::ocsp::signed_by(&CertificateDer::from(issuer), &algorithm, &signed, signature) {
        return Err("the CRL's signature is not the issuer's".into());
    }
    let (this_update, next_update) = (unix(&tbs.this_update), tbs.next_update.as_ref().map(unix));
    if this_update > now + 60 {
        return Err(format!("the CRL's thisUpdate is {} s ahead of this clock", this_update - now));
    }
    if let Some(next) = next_update.filter(|n| *n <= now) {
        return Err(format!("the CRL expired {} s ago (nextUpdate)", now - next));
    }
    let serial = &leaf_cert.tbs_certificate.serial_number;
    let revoked_at = tbs.revoked_certificates.iter().flatten().find(|r| &r.serial_number == serial).map(|r| unix(&r.revocation_date));
    Ok(Checked { revoked_at, this_update, next_update })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CA, a certificate it issued with a CRL Distribution Point, and
    /// CRLs signed by the CA (or another key) listing serials.
    struct Ca {
        key: rcgen::KeyPair,
        cert: rcgen::Certificate,
        params: rcgen::CertificateParams,
    }

    fn ca(name: &str) -> Ca {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::new(vec![]).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        let cert = params.clone().self_signed(&key).unwrap();
        Ca { key, cert, params }
    }

    fn leaf(ca: &Ca, url: Option<&str>) -> Vec<u8> {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut p = rcgen::CertificateParams::new(vec!["a.test".into()]).unwrap();
        p.serial_number = Some(rcgen::SerialNumber::from(vec![0x5e, 0xed]));
        p.crl_distribution_points = url.map(|u| vec![rcgen::CrlDistributionPoint { uris: vec![u.into()] }]).unwrap_or_default();
        p.signed_by(&key, &ca.cert, &ca.key).unwrap().der().to_vec()
    }

    fn crl(signer: &Ca, issuer_name_of: &Ca, serials: &[&[u8]], next_update_in: i64) -> Vec<u8> {
        let now = time::OffsetDateTime::now_utc();
        let params = rcgen::CertificateRevocationListParams {
            this_update: now - time::Duration::seconds(10),
            next_update: now + time::Duration::seconds(next_update_in),
            crl_number: rcgen::SerialNumber::from(1u64),
            issuing_distribution_point: None,
            revoked_certs: serials.iter().map(|s| rcgen::RevokedCertParams { serial_number: rcgen::SerialNumber::from(s.to_vec()), revocation_time: now - time::Duration::seconds(5), reason_code: Some(rcgen::RevocationReason::KeyCompromise), invalidity_date: None }).collect(),
            key_identifier_method: rcgen::KeyIdMethod::Sha256,
        };
        // The issuer named is `issuer_name_of`'s; the signature `signer`'s.
        let named = issuer_name_of.params.clone().self_signed(&signer.key).unwrap();
        params.signed_by(&named, &signer.key).unwrap().der().to_vec()
    }

    fn now() -> i64 {
        crate::schedule::now()
    }

    #[test]
    fn the_distribution_point_is_read_from_the_certificate() {
        let ca = ca("test CA");
        assert_eq!(distribution_point(&leaf(&ca, Some("http://127.0.0.1:9/ca.crl"))).unwrap().as_deref(), Some("http://127.0.0.1:9/ca.crl"));
        assert_eq!(distribution_point(&leaf(&ca, None)).unwrap(), None);
        assert!(distribution_point(b"garbage").is_err());
    }

    #[test]
    fn a_listed_serial_is_revoked_and_others_are_not() {
        let ca = ca("test CA");
        let (leaf, issuer) = (leaf(&ca, None), ca.cert.der().to_vec());
        let listed = check(&crl(&ca, &ca, &[&[0x5e, 0xed]], 3600), &leaf, &issuer, now()).unwrap();
        assert!(listed.revoked_at.is_some() && listed.next_update.is_some());
        assert_eq!(check(&crl(&ca, &ca, &[&[0x01]], 3600), &leaf, &issuer, now()).unwrap().revoked_at, None);
    }

    #[test]
    fn a_forged_expired_or_foreign_list_is_refused() {
        let (ca, other) = (ca("test CA"), ca("other CA"));
        let (leaf, issuer) = (leaf(&ca, None), ca.cert.der().to_vec());
        // The issuer's name, another key's signature.
        assert!(check(&crl(&other, &ca, &[&[0x5e, 0xed]], 3600), &leaf, &issuer, now()).unwrap_err().contains("signature is not the issuer's"));
        // Another CA's own list.
        assert!(check(&crl(&other, &other, &[&[0x5e, 0xed]], 3600), &leaf, &issuer, now()).unwrap_err().contains("not by the certificate's issuer"));
        assert!(check(&crl(&ca, &ca, &[], -1), &leaf, &issuer, now()).unwrap_err().contains("expired"));
        assert!(check(b"<html>", &leaf, &issuer, now()).unwrap_err().starts_with("not a CRL"));
    }
}
