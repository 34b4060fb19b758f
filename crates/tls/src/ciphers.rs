//! `SSLCipherSuite`: OpenSSL cipher strings mapped onto the suites rustls
//! has, and mod_ssl's names for them.
//!
//! A TLS 1.2 string is read as OpenSSL reads one: elements separated by
//! `:` (or `,`, spaces), each a cipher name or an alias (`HIGH`, `ECDHE`,
//! `aRSA`, `AESGCM`...) or several joined by `+` (all of them must hold);
//! a plain element appends what it matches, `-` removes it (later elements
//! may add it back), `!` removes it for good, `+` moves it to the end;
//! `@STRENGTH` sorts by key size. Names and aliases of ciphers rustls does
//! not have (DHE, CBC, CAMELLIA...) match nothing; only words that are no
//! OpenSSL cipher or alias at all are warned about.
//!
//! A TLS 1.3 string (`SSLCipherSuite TLSv1.3 ...`) is OpenSSL's
//! `-ciphersuites`: a list of names, in order.

use rustls::crypto::aws_lc_rs::cipher_suite as cs;
use rustls::{CipherSuite, SupportedCipherSuite};

/// What an OpenSSL alias can ask of one of rustls' TLS 1.2 suites.
struct Suite12 {
    suite: SupportedCipherSuite,
    ecdsa: bool,
    /// 128 (AES-128-GCM), 256 (AES-256-GCM), 0 for ChaCha20 (256 bits).
    aes: u16,
}

/// rustls' TLS 1.2 suites, in OpenSSL's order of preference (the order its
/// aliases expand to).
fn suites12() -> [Suite12; 6] {
    [
        Suite12 { suite: cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, ecdsa: true, aes: 256 },
        Suite12 { suite: cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, ecdsa: false, aes: 256 },
        Suite12 { suite: cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, ecdsa: true, aes: 0 },
        Suite12 { suite: cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, ecdsa: false, aes: 0 },
        Suite12 { suite: cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, ecdsa: true, aes: 128 },
        Suite12 { suite: cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ecdsa: false, aes: 128 },
    ]
}

/// rustls' TLS 1.3 suites, in OpenSSL's default order.
pub(crate) fn suites13() -> [SupportedCipherSuite; 3] {
    [cs::TLS13_AES_256_GCM_SHA384, cs::TLS13_CHACHA20_POLY1305_SHA256, cs::TLS13_AES_128_GCM_SHA256]
}

/// warren's TLS 1.3 suites when SSLCipherSuite TLSv1.3 is not set, in the
/// order the server picks by default (SSLHonorCipherOrder On): AES-128-GCM
/// first, as Mozilla's recommended configurations have it: as strong as
/// anyone needs and the cheapest per byte with AES instructions, which
/// OpenSSL's order (AES-256 first) would give up on every connection.
pub(crate) fn default13() -> [SupportedCipherSuite; 3] {
    [cs::TLS13_AES_128_GCM_SHA256, cs::TLS13_AES_256_GCM_SHA384, cs::TLS13_CHACHA20_POLY1305_SHA256]
}

/// The TLS 1.2 counterpart of [`default13`], as an OpenSSL cipher string.
pub(crate) const DEFAULT12: &str = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

/// mod_ssl's (OpenSSL's) name of a suite, as `SSL_CIPHER` gives it.
pub fn cipher_name(s: SupportedCipherSuite) -> &'static str {
    match s.suite() {
        CipherSuite::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
        CipherSuite::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => "ECDHE-ECDSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => "ECDHE-ECDSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-ECDSA-CHACHA20-POLY1305",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => "ECDHE-RSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => "ECDHE-RSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-RSA-CHACHA20-POLY1305",
        other => other.as_str().unwrap_or("UNKNOWN"),
    }
}

/// The suite's symmetric key size in bits (`SSL_CIPHER_USEKEYSIZE`).
pub fn cipher_bits(s: SupportedCipherSuite) -> u16 {
    match s.suite() {
        CipherSuite::TLS13_AES_128_GCM_SHA256 | CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 | CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 128,
        _ => 256,
    }
}

/// Whether `alias` (one OpenSSL word) holds for `s`: None if it is no
/// OpenSSL word at all.
fn alias_holds(s: &Suite12, alias: &str) -> Option<bool> {
    let name = cipher_name(s.suite);
    if alias == name {
        return Some(true);
    }
    Some(match alias {
        "ALL" | "DEFAULT" | "HIGH" | "TLSv1.2" | "kECDHE" | "kEECDH" | "ECDHE" | "EECDH" | "AEAD" | "FIPS" | "SUITEB128" => true,
        "aECDSA" | "ECDSA" => s.ecdsa,
        "aRSA" => !s.ecdsa,
        "AESGCM" | "AES" => s.aes != 0,
        "AES128" => s.aes == 128,
        "AES256" => s.aes == 256,
        "CHACHA20" => s.aes == 0,
        "SUITEB192" | "SUITEB128ONLY" => s.ecdsa && s.aes == 256,
        _ if is_openssl_word(alias) => false,
        _ => return None,
    })
}

/// OpenSSL's aliases that match no suite rustls has, and the parts of its
/// cipher names: a word made of these is OpenSSL's, just not here.
fn is_openssl_word(w: &str) -> bool {
    const ALIASES: &[&str] = &[
        "COMPLEMENTOFDEFAULT", "COMPLEMENTOFALL", "MEDIUM", "LOW", "EXP", "EXPORT", "EXPORT40", "EXPORT56", "eNULL", "NULL", "aNULL", "kRSA", "RSA", "kDHr", "kDHd",
        "kDH", "kDHE", "kEDH", "DH", "DHE", "EDH", "ADH", "kECDHr", "kECDHe", "kECDH", "AECDH", "aDSS", "DSS", "aDH", "aECDH", "aGOST", "aGOST01", "kGOST", "GOST94",
        "GOST89MAC", "kPSK", "kECDHEPSK", "kDHEPSK", "kRSAPSK", "aPSK", "PSK", "kSRP", "aSRP", "SRP", "SSLv3", "SSLv2", "TLSv1", "TLSv1.0", "AESCCM", "AESCCM8", "ARIA",
        "ARIA128", "ARIA256", "ARIAGCM", "CAMELLIA", "CAMELLIA128", "CAMELLIA256", "3DES", "DES", "RC4", "RC2", "IDEA", "SEED", "MD5", "SHA1", "SHA", "SHA256",
        "SHA384", "KRB5", "kKRB5", "aKRB5", "CBC", "CHACHA20-POLY1305", "ECCDHE", "UNKNOWN",
    ];
    const PARTS: &[&str] = &[
        "ECDHE", "ECDH", "DHE", "EDH", "DH", "ADH", "AECDH", "EXP", "EXP1024", "RSA", "ECDSA", "DSS", "PSK", "SRP", "AES", "AES128", "AES256", "GCM", "CCM", "CCM8",
        "CHACHA20", "POLY1305", "CBC", "CBC3", "DES", "RC4", "RC2", "IDEA", "SEED", "MD5", "SHA", "SHA256", "SHA384", "NULL", "CAMELLIA128", "CAMELLIA256",
        "ARIA128", "ARIA256", "KRB5", "GOST94", "GOST89", "GOST2001", "GOST2012", "ANON", "anon", "40", "56", "3DES", "EDE", "TLS", "WITH",
    ];
    ALIASES.contains(&w) || (w.contains('-') && w.split('-').all(|p| PARTS.contains(&p)))
}

/// What a TLS 1.2 cipher string selects, in order, and the words it has
/// that are no OpenSSL cipher or alias.
pub(crate) fn select12(spec: &str) -> (Vec<SupportedCipherSuite>, Vec<String>) {
    let all = suites12();
    let mut list: Vec<usize> = Vec::new();
    let mut killed = [false; 6];
    let mut unknown = Vec::new();
    for element in spec.split([':', ',', ' ', ';']).filter(|e| !e.is_empty()) {
        if let Some(command) = element.strip_prefix('@') {
            if command == "STRENGTH" {
                // Stable: equal strengths keep their order.
                list.sort_by_key(|&i| std::cmp::Reverse(cipher_bits(all[i].suite)));
            } else if !command.starts_with("SECLEVEL=") {
                unknown.push(element.to_string());
            }
            continue;
        }
        let (op, words) = match element.as_bytes()[0] {
            b'!' => ('!', &element[1..]),
            b'-' => ('-', &element[1..]),
            b'+' => ('+', &element[1..]),
            _ => (' ', element),
        };
        let mut matched = [true; 6];
        let mut known = true;
        for word in words.split('+') {
            for (i, s) in all.iter().enumerate() {
                match alias_holds(s, word) {
                    Some(holds) => matched[i] &= holds,
                    None => known = false,
                }
            }
        }
        if !known {
            unknown.push(words.to_string());
            continue;
        }
        let matching: Vec<usize> = (0..all.len()).filter(|&i| matched[i]).collect();
        match op {
            '!' => {
                for &i in &matching {
                    killed[i] = true;
                }
                list.retain(|i| !matched[*i]);
            }
            '-' => list.retain(|i| !matched[*i]),
            '+' => {
                let (moved, kept): (Vec<usize>, Vec<usize>) = list.iter().partition(|i| matched[**i]);
                list = kept;
                list.extend(moved);
            }
            _ => {
                for i in matching {
                    if !killed[i] && !list.contains(&i) {
                        list.push(i);
                    }
                }
            }
        }
    }
    (list.into_iter().map(|i| all[i].suite).collect(), unknown)
}

/// What a TLS 1.3 suite list selects, and its unknown names.
pub(crate) fn select13(spec: &str) -> (Vec<SupportedCipherSuite>, Vec<String>) {
    let mut list = Vec::new();
    let mut unknown = Vec::new();
    for name in spec.split([':', ',', ' ']).filter(|e| !e.is_empty()) {
        match suites13().into_iter().find(|s| cipher_name(*s) == name) {
            Some(s) if !list.iter().any(|l: &SupportedCipherSuite| l.suite() == s.suite()) => list.push(s),
            Some(_) => {}
            // OpenSSL's CCM suites, which rustls does not have.
            None if name == "TLS_AES_128_CCM_SHA256" || name == "TLS_AES_128_CCM_8_SHA256" => {}
            None => unknown.push(name.to_string()),
        }
    }
    (list, unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(spec: &str) -> Vec<&'static str> {
        let (list, unknown) = select12(spec);
        assert!(unknown.is_empty(), "{spec}: {unknown:?}");
        list.into_iter().map(cipher_name).collect()
    }

    /// What the `openssl` command makes of a string, restricted to the
    /// suites rustls has.
    fn openssl(spec: &str) -> Option<Vec<String>> {
        let out = std::process::Command::new("openssl").args(["ciphers", "-tls1_2", "-ciphersuites", "", spec]).output().ok()?;
        let ours: Vec<&str> = suites12().iter().map(|s| cipher_name(s.suite)).collect();
        Some(String::from_utf8_lossy(&out.stdout).trim().split(':').filter(|n| ours.contains(n)).map(String::from).collect())
    }

    const DEBIAN: &str = "HIGH:!aNULL";
    /// certbot's options-ssl-apache.conf (Mozilla intermediate).
    const MOZILLA: &str = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305";

    #[test]
    fn debian_and_mozilla_strings() {
        assert_eq!(names(DEBIAN).len(), 6);
        assert_eq!(
            names(MOZILLA),
            [
                "ECDHE-ECDSA-AES128-GCM-SHA256",
                "ECDHE-RSA-AES128-GCM-SHA256",
                "ECDHE-ECDSA-AES256-GCM-SHA384",
                "ECDHE-RSA-AES256-GCM-SHA384",
                "ECDHE-ECDSA-CHACHA20-POLY1305",
                "ECDHE-RSA-CHACHA20-POLY1305"
            ]
        );
        assert_eq!(names("ECDHE+AESGCM:!ECDSA"), ["ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-AES128-GCM-SHA256"]);
        assert_eq!(names("HIGH:!CHACHA20:-AES256:AES256"), [
            "ECDHE-ECDSA-AES128-GCM-SHA256",
            "ECDHE-RSA-AES128-GCM-SHA256",
            "ECDHE-ECDSA-AES256-GCM-SHA384",
            "ECDHE-RSA-AES256-GCM-SHA384"
        ]);
        assert!(names("MEDIUM:RC4:3DES:aNULL").is_empty());
    }

    #[test]
    fn as_the_openssl_command_orders_them() {
        for spec in [
            DEBIAN,
            MOZILLA,
            "ECDHE+AESGCM",
            "EECDH+AESGCM:EDH+AESGCM",
            "AES128+EECDH:AES128+EDH",
            "ALL:+CHACHA20",
            "HIGH:@STRENGTH",
            "DEFAULT:!aRSA",
            "AES256:CHACHA20:AES128",
            "HIGH:-ECDSA:+AES128:ECDSA",
            "TLSv1.2:!aNULL:!eNULL",
        ] {
            let Some(expected) = openssl(spec) else { return };
            assert_eq!(names(spec), expected, "{spec}");
        }
    }

    #[test]
    fn unknown_words_are_said() {
        let (list, unknown) = select12("HIGH:FROB:ECDHE-RSA-AES128-GCM-SHA999:DHE-RSA-AES128-SHA");
        assert_eq!(list.len(), 6);
        assert_eq!(unknown, ["FROB", "ECDHE-RSA-AES128-GCM-SHA999"]);
        let (list, unknown) = select13("TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_CCM_SHA256:TLS_NOPE");
        assert_eq!(list.into_iter().map(cipher_name).collect::<Vec<_>>(), ["TLS_CHACHA20_POLY1305_SHA256"]);
        assert_eq!(unknown, ["TLS_NOPE"]);
    }
}
