//! A certificate's key and signing request: a key of one MDPrivateKeys
//! type (one certificate is ordered per type, as mod_md), the domain's
//! names, and with MDMustStaple the TLS
//! Feature extension asking clients to require a stapled OCSP response
//! (RFC 7633).

use rcgen::{CertificateParams, CustomExtension, DistinguishedName, KeyPair, RsaKeySize};
use warren_config::md::{KeySpec, ManagedDomain};

/// id-pe-tlsfeature (1.3.6.1.5.5.7.1.24).
const TLS_FEATURE: &[u64] = &[1, 3, 6, 1, 5, 5, 7, 1, 24];
/// Features ::= SEQUENCE OF INTEGER { status_request (5) }.
const STATUS_REQUEST: &[u8] = &[0x30, 0x03, 0x02, 0x01, 0x05];

fn key_for(spec: KeySpec) -> Result<KeyPair, rcgen::Error> {
    match spec {
        KeySpec::P256 => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256),
        KeySpec::P384 => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384),
        KeySpec::Rsa(bits) => {
            let size = match bits {
                ..=2048 => RsaKeySize::_2048,
                2049..=3072 => RsaKeySize::_3072,
                _ => RsaKeySize::_4096,
            };
            KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, size)
        }
    }
}

/// (CSR in DER, private key in PEM) for `d`, with a key of type `spec`.
pub fn make(d: &ManagedDomain, spec: KeySpec) -> Result<(Vec<u8>, String), String> {
    let fail = |e: rcgen::Error| format!("making the {spec:?} key and CSR for {}: {e}", d.names[0]);
    let key = key_for(spec).map_err(fail)?;
    let mut params = CertificateParams::new(d.names.clone()).map_err(fail)?;
    params.distinguished_name = DistinguishedName::new();
    if d.must_staple {
        let mut ext = CustomExtension::from_oid_content(TLS_FEATURE, STATUS_REQUEST.to_vec());
        ext.set_criticality(false);
        params.custom_extensions.push(ext);
    }
    let csr = params.serialize_request(&key).map_err(fail)?;
    Ok((csr.der().to_vec(), key.serialize_pem()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_each_type() {
        for (spec, alg) in [(KeySpec::P256, &rcgen::PKCS_ECDSA_P256_SHA256), (KeySpec::P384, &rcgen::PKCS_ECDSA_P384_SHA384), (KeySpec::Rsa(2048), &rcgen::PKCS_RSA_SHA256)] {
            assert_eq!(key_for(spec).unwrap().algorithm(), alg, "{spec:?}");
        }
    }

    #[test]
    fn must_staple_is_in_the_request() {
        let csr_der = |must: bool| make(&ManagedDomain { must_staple: must, ..crate::test_support::domain(&["http-01"], None) }, KeySpec::P256).unwrap().0;
        let with = csr_der(true);
        let without = csr_der(false);
        let oid = [0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x01, 0x18];
        assert!(with.windows(oid.len()).any(|w| w == oid) && with.windows(5).any(|w| w == STATUS_REQUEST));
        assert!(!without.windows(oid.len()).any(|w| w == oid));
    }
}
