//! OCSP (RFC 6960) for MDStapling: the request for one certificate, the
//! responder asked over HTTP, and its answer checked before it is kept:
//! a successful basic response about this very certificate (issuer's name
//! and key hashes, serial), signed by the issuer or by a responder the
//! issuer certified for OCSP signing, current (thisUpdate not ahead,
//! nextUpdate not past). Only the helper process runs this; a serving
//! child only reads the response the helper stored (warren-tls).

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use der::asn1::{Null, OctetString};
use der::oid::ObjectIdentifier;
use der::{Decode, Encode};
use http_body_util::{BodyExt, Full, Limited};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, UnixTime};
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::AuthorityInfoAccessSyntax;
use x509_cert::spki::AlgorithmIdentifierOwned;
use x509_cert::Certificate;
use x509_ocsp::{BasicOcspResponse, CertId, CertStatus, OcspRequest, OcspResponse, OcspResponseStatus, Request, TbsRequest};

const AUTHORITY_INFO_ACCESS: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.1.1");
const ACCESS_OCSP: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.48.1");
const BASIC_RESPONSE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.48.1.1");
const SHA1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.14.3.2.26");
/// id-kp-OCSPSigning (1.3.6.1.5.5.7.3.9), as DER contents for webpki.
const OCSP_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x09];

/// The most of a responder's answer read (real ones are 1-4 KB).
const MAX_ANSWER: usize = 64 * 1024;
/// How long a responder may take to answer.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// What a responder says of a certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Good,
    /// Revoked at (Unix seconds), with the reason if given.
    Revoked(i64, Option<String>),
    Unknown,
}

/// A checked response: its status and the time it is good for.
#[derive(Debug, Clone)]
pub struct Checked {
    pub status: Status,
    pub this_update: i64,
    /// None: the responder gives no nextUpdate (newer information may be
    /// had at any time); the helper then keeps it a fixed while.
    pub next_update: Option<i64>,
}

fn parse(der: &[u8], what: &str) -> Result<Certificate, String> {
    Certificate::from_der(der).map_err(|e| format!("{what} cannot be read: {e}"))
}

/// The OCSP responder URL of a certificate (its Authority Information
/// Access), if it names one with http:// (else https://).
pub fn responder_url(leaf: &[u8]) -> Result<Option<String>, String> {
    let cert = parse(leaf, "the certificate")?;
    let Some(ext) = cert.tbs_certificate.extensions.iter().flatten().find(|e| e.extn_id == AUTHORITY_INFO_ACCESS) else { return Ok(None) };
    let aia = AuthorityInfoAccessSyntax::from_der(ext.extn_value.as_bytes()).map_err(|e| format!("its Authority Information Access cannot be read: {e}"))?;
    Ok(first_web_url(aia.0.iter().filter(|a| a.access_method == ACCESS_OCSP).map(|a| &a.access_location)))
}

/// The first http:// URI among `names`, else the first https:// one.
pub(crate) fn first_web_url<'a>(names: impl Iterator<Item = &'a GeneralName> + Clone) -> Option<String> {
    let with = |scheme: &str| {
        names.clone().find_map(|n| match n {
            GeneralName::UniformResourceIdentifier(uri) if uri.as_str().starts_with(scheme) => Some(uri.as_str().to_string()),
            _ => None,
        })
    };
    with("http://").or_else(|| with("https://"))
}

fn sha1(bytes: &[u8]) -> Result<OctetString, String> {
    OctetString::new(aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA1_FOR_LEGACY_USE_ONLY, bytes).as_ref()).map_err(|e| e.to_string())
}

/// The CertID of `leaf` issued by `issuer` (SHA-1, as responders expect).
fn cert_id(leaf: &Certificate, issuer: &Certificate) -> Result<CertId, String> {
    let name = leaf.tbs_certificate.issuer.to_der().map_err(|e| e.to_string())?;
    let key = issuer.tbs_certificate.subject_public_key_info.subject_public_key.raw_bytes();
    Ok(CertId {
        hash_algorithm: AlgorithmIdentifierOwned { oid: SHA1, parameters: Some(Null.into()) },
        issuer_name_hash: sha1(&name)?,
        issuer_key_hash: sha1(key)?,
        serial_number: leaf.tbs_certificate.serial_number.clone(),
    })
}

/// The DER OCSP request for `leaf` (issued by `issuer`).
pub fn request(leaf: &[u8], issuer: &[u8]) -> Result<Vec<u8>, String> {
    let (leaf, issuer) = (parse(leaf, "the certificate")?, parse(issuer, "its issuer")?);
    let req = OcspRequest {
        tbs_request: TbsRequest { version: Default::default(), requestor_name: None, request_list: vec![Request { req_cert: cert_id(&leaf, &issuer)?, single_request_extensions: None }], request_extensions: None },
        optional_signature: None,
    };
    req.to_der().map_err(|e| e.to_string())
}

/// POSTs `request` to the responder at `url` (http:// only) and returns
/// its answer's body, at most [`MAX_ANSWER`] bytes, within [`TIMEOUT`].
pub async fn fetch(url: &str, request: Vec<u8>, roots: Option<&Path>) -> Result<Vec<u8>, String> {
    let req = hyper::Request::post(url).header("content-type", "application/ocsp-request").body(Full::new(Bytes::from(request))).map_err(|e| format!("{url}: {e}"))?;
    exchange(url, req, MAX_ANSWER, roots).await
}

/// The roots an https:// responder or CRL server is checked against:
/// `file`'s certificates (MDCACertificateFile) only, else the system's.
fn tls_config(file: Option<&Path>) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    match file {
        Some(f) => {
            for c in CertificateDer::pem_file_iter(f).map_err(|e| format!("MDCACertificateFile {}: {e:?}", f.display()))? {
                roots.add(c.map_err(|e| format!("MDCACertificateFile {}: {e:?}", f.display()))?).map_err(|e| format!("MDCACertificateFile {}: {e}", f.display()))?;
            }
        }
        None => {
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider).with_safe_default_protocol_versions().map_err(|e| e.to_string())?.with_root_certificates(roots).with_no_client_auth())
}

/// Sends `req` to `url` (http://, or https:// checked against `roots`,
/// see [`tls_config`]) and returns the body of a 2xx answer, at most
/// `max` bytes, within [`TIMEOUT`] (OCSP here, CRLs in [`crate::crl`]).
pub(crate) async fn exchange(url: &str, req: hyper::Request<Full<Bytes>>, max: usize, roots: Option<&Path>) -> Result<Vec<u8>, String> {
    let connector = hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(tls_config(roots)?).https_or_http().enable_http1().build();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build::<_, Full<Bytes>>(connector);
    let exchange = async {
        let answer = client.request(req).await.map_err(|e| format!("{url}: {e}{}", std::error::Error::source(&e).map(|s| format!(" ({s})")).unwrap_or_default()))?;
        if !answer.status().is_success() {
            return Err(format!("{url} answered {}", answer.status()));
        }
        let body = Limited::new(answer.into_body(), max).collect().await.map_err(|e| format!("{url}: reading the answer: {e}"))?;
        Ok(body.to_bytes().to_vec())
    };
    tokio::time::timeout(TIMEOUT, exchange).await.map_err(|_| format!("{url} did not answer within {} s", TIMEOUT.as_secs()))?
}

fn unix(t: &x509_ocsp::OcspGeneralizedTime) -> i64 {
    t.0.to_unix_duration().as_secs() as i64
}

/// How far a responder's clock may be ahead of ours.
const CLOCK_SKEW: i64 = 300;

/// Checks a responder's answer about `leaf` (issued by `issuer`) at `now`.
pub fn check(answer: &[u8], leaf: &[u8], issuer: &[u8], now: i64) -> Result<Checked, String> {
    let response = OcspResponse::from_der(answer).map_err(|e| format!("not an OCSP response: {e}"))?;
    if response.response_status != OcspResponseStatus::Successful {
        return Err(format!("the responder answered {:?}", response.response_status));
    }
    let bytes = response.response_bytes.ok_or("a successful response without content")?;
    if bytes.response_type != BASIC_RESPONSE {
        return Err(format!("a response of type {} (not a basic OCSP response)", bytes.response_type));
    }
    let basic = BasicOcspResponse::from_der(bytes.response.as_bytes()).map_err(|e| format!("the basic response cannot be read: {e}"))?;
    verify_signature(&basic, issuer, now)?;
    let (leaf_cert, issuer_cert) = (parse(leaf, "the certificate")?, parse(issuer, "its issuer")?);
    let wanted = cert_id(&leaf_cert, &issuer_cert)?;
    let single = basic
        .tbs_response_data
        .responses
        .iter()
        .find(|s| s.cert_id.serial_number == wanted.serial_number && s.cert_id.issuer_key_hash == wanted.issuer_key_hash && s.cert_id.issuer_name_hash == wanted.issuer_name_hash)
        .ok_or("the response is not about this certificate")?;
    let this_update = unix(&single.this_update);
    let next_update = single.next_update.as_ref().map(unix);
    if this_update > now + CLOCK_SKEW {
        return Err("the response's thisUpdate is in the future".into());
    }
    if next_update.is_some_and(|n| n < now) {
        return Err("the response has expired (nextUpdate passed)".into());
    }
    let status = match &single.cert_status {
        CertStatus::Good(_) => Status::Good,
        CertStatus::Unknown(_) => Status::Unknown,
        CertStatus::Revoked(info) => Status::Revoked(unix(&info.revocation_time), info.revocation_reason.map(|r| format!("{r:?}"))),
    };
    Ok(Checked { status, this_update, next_update })
}

/// The response is signed by the issuer itself, or by a certificate in
/// the response that the issuer signed for OCSP signing (RFC 6960 4.2.2.2).
fn verify_signature(basic: &BasicOcspResponse, issuer: &[u8], now: i64) -> Result<(), String> {
    let signed = basic.tbs_response_data.to_der().map_err(|e| e.to_string())?;
    let signature = basic.signature.as_bytes().ok_or("the signature is not whole bytes")?;
    let algorithm = basic.signature_algorithm.to_der().map_err(|e| e.to_string())?;
    let signed_by = |cert: &CertificateDer<'_>| signed_by(cert, &algorithm, &signed, signature);
    let issuer = CertificateDer::from(issuer);
    if signed_by(&issuer) {
        return Ok(());
    }
    let anchor = webpki::anchor_from_trusted_cert(&issuer).map_err(|e| format!("the issuer cannot be read: {e:?}"))?;
    let time = UnixTime::since_unix_epoch(Duration::from_secs(now.max(0) as u64));
    for responder in basic.certs.iter().flatten() {
        let Ok(der) = responder.to_der() else { continue };
        let der = CertificateDer::from(der);
        let Ok(cert) = webpki::EndEntityCert::try_from(&der) else { continue };
        let delegated = cert.verify_for_usage(webpki::ALL_VERIFICATION_ALGS, std::slice::from_ref(&anchor), &[], time, webpki::KeyUsage::required(OCSP_SIGNING), None, None).is_ok();
        if delegated && signed_by(&der) {
            return Ok(());
        }
    }
    Err("the response's signature is neither the issuer's nor that of a responder the issuer certified".into())
}

/// Whether `signature` over `signed` (with the DER AlgorithmIdentifier
/// `algorithm`) is `cert`'s key's (OCSP responses here, CRLs in
/// [`crate::crl`]).
pub(crate) fn signed_by(cert: &CertificateDer<'_>, algorithm: &[u8], signed: &[u8], signature: &[u8]) -> bool {
    let algorithm = der_contents(algorithm);
    let Ok(signer) = webpki::EndEntityCert::try_from(cert) else { return false };
    webpki::ALL_VERIFICATION_ALGS.iter().filter(|a| a.signature_alg_id().as_ref() == algorithm).any(|a| signer.verify_signature(*a, signed, signature).is_ok())
}

/// The contents of a DER TLV (what webpki's algorithm identifiers hold).
fn der_contents(tlv: &[u8]) -> &[u8] {
    match tlv.get(1) {
        Some(&len) if len < 0x80 => &tlv[2.min(tlv.len())..],
        Some(&len) => &tlv[(2 + usize::from(len & 0x7f)).min(tlv.len())..],
        None => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CA and a certificate it issued naming an OCSP responder (rcgen).
    fn issued(url: Option<&str>) -> (Vec<u8>, Vec<u8>) {
        let ca_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut ca = rcgen::CertificateParams::new(vec![]).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name.push(rcgen::DnType::CommonName, "test CA");
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut leaf = rcgen::CertificateParams::new(vec!["a.test".into()]).unwrap();
        leaf.serial_number = Some(rcgen::SerialNumber::from(vec![0x12, 0x34]));
        if let Some(url) = url {
            // AuthorityInfoAccess { accessMethod ocsp, accessLocation [6] url }.
            let mut access = vec![0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x86, url.len() as u8];
            access.extend(url.as_bytes());
            let mut desc = vec![0x30, access.len() as u8];
            desc.extend(access);
            let mut aia = vec![0x30, desc.len() as u8];
            aia.extend(desc);
            leaf.custom_extensions.push(rcgen::CustomExtension::from_oid_content(&[1, 3, 6, 1, 5, 5, 7, 1, 1], aia));
        }
        let leaf_cert = leaf.signed_by(&key, &ca_cert, &ca_key).unwrap();
        (leaf_cert.der().to_vec(), ca_cert.der().to_vec())
    }

    #[test]
    fn the_responder_is_read_from_the_certificate() {
        let (leaf, _) = issued(Some("http://127.0.0.1:9/ocsp"));
        assert_eq!(responder_url(&leaf).unwrap().as_deref(), Some("http://127.0.0.1:9/ocsp"));
        assert_eq!(responder_url(&issued(None).0).unwrap(), None);
        assert!(responder_url(b"garbage").is_err());
    }

    #[test]
    fn the_request_names_the_certificate_by_issuer_hashes_and_serial() {
        let (leaf, ca) = issued(None);
        let der = request(&leaf, &ca).unwrap();
        let req = OcspRequest::from_der(&der).unwrap();
        let id = &req.tbs_request.request_list[0].req_cert;
        assert_eq!(id.serial_number.as_bytes(), [0x12, 0x34]);
        assert_eq!(id.hash_algorithm.oid, SHA1);
        assert_eq!(id.issuer_key_hash.as_bytes().len(), 20);
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        let (leaf, ca) = issued(None);
        assert!(check(b"\x30\x03\x0a\x01\x06", &leaf, &ca, 0).unwrap_err().contains("Unauthorized"));
        assert!(check(b"<html>", &leaf, &ca, 0).unwrap_err().starts_with("not an OCSP response"));
    }
}
