//! mod_md's configuration: the domains whose certificates warren obtains
//! and renews from an ACME CA itself (`MDomain`, `<MDomainSet>`), and the
//! `MD*` settings, server-wide or per domain inside `<MDomainSet>`.
//!
//! [`settle`] gives every `SSLEngine on` host that names no certificate
//! and serves a managed domain that domain's files in MDStoreDir (see
//! [`store_files`]); `warren-tls` serves a temporary self-signed
//! certificate until the ACME helper (`warren-acme`) has written them.
//! The checks `warren -t` makes are here too: a managed name no virtual
//! host serves, a CA that needs a contact without one.

use std::path::PathBuf;
use std::time::Duration;

use crate::builder::Builder;
use crate::parse::{Directive, Node, Origin, Section};
use crate::settings::{HostConfig, Settings};

/// Let's Encrypt's directory, mod_md's default CA.
pub const LETS_ENCRYPT: &str = "https://acme-v02.api.letsencrypt.org/directory";

/// A key type of `MDPrivateKeys`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum KeySpec {
    Rsa(u32),
    P256,
    P384,
}

/// `MDRenewWindow`: how long before expiry a certificate is renewed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RenewWindow {
    /// Percent of the certificate's lifetime left (mod_md's default: 33%).
    Percent(u8),
    /// A fixed time before expiry.
    Before(Duration),
}

impl RenewWindow {
    /// Seconds before `not_after` at which renewal starts, for a
    /// certificate valid from `not_before` to `not_after`.
    pub fn lead(self, not_before: i64, not_after: i64) -> i64 {
        match self {
            RenewWindow::Percent(p) => (not_after - not_before).max(0) * i64::from(p) / 100,
            RenewWindow::Before(d) => d.as_secs() as i64,
        }
    }
}

/// `MDRequireHttps`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum RequireHttps {
    Off,
    Temporary,
    Permanent,
}

/// The `MD*` settings that may stand server-wide or in `<MDomainSet>`:
/// None where the level does not say.
#[derive(Clone, Debug, Default)]
pub struct MdOptions {
    pub ca_url: Option<String>,
    pub ca_certificate_file: Option<PathBuf>,
    pub contact: Option<String>,
    pub agreement: Option<bool>,
    pub private_keys: Option<Vec<KeySpec>>,
    pub renew_window: Option<RenewWindow>,
    pub retry_delay: Option<Duration>,
    pub challenge_dns01: Option<PathBuf>,
    pub require_https: Option<RequireHttps>,
    pub stapling: Option<bool>,
    pub must_staple: Option<bool>,
    pub ca_challenges: Option<Vec<String>>,
}

/// One managed domain's settings, its own over the server's.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ManagedDomain {
    /// The first name is the domain's name (its directory in the store).
    pub names: Vec<String>,
    pub origin: Origin,
    /// `manual`: never renewed by warren (mod_md's drive mode).
    pub auto: bool,
    pub ca_url: String,
    pub ca_certificate_file: Option<PathBuf>,
    /// `MDContactEmail`, else the host's or server's `ServerAdmin`.
    pub contact: Option<String>,
    pub agreement: bool,
    pub private_keys: Vec<KeySpec>,
    pub renew_window: RenewWindow,
    pub retry_delay: Duration,
    pub challenge_dns01: Option<PathBuf>,
    pub require_https: RequireHttps,
    pub stapling: bool,
    pub must_staple: bool,
    pub ca_challenges: Vec<String>,
    /// Whether the store had the domain's certificate when the
    /// configuration was read (by the parent, at start or a graceful
    /// restart): MDRequireHttps redirects only then, as mod_md.
    pub has_certificate: bool,
    /// The port of a TLS virtual host serving the domain, for
    /// MDRequireHttps' redirects.
    pub https_port: Option<u16>,
}

impl ManagedDomain {
    /// Whether `name` (a host's name, or a request's Host without its
    /// port) is one of the domain's names, wildcards matching one label.
    pub fn covers(&self, name: &str) -> bool {
        covers(self, name)
    }
}

/// A managed domain as written, before [`settle`] merges its options.
#[derive(Clone, Debug)]
pub struct DomainLines {
    pub names: Vec<String>,
    pub origin: Origin,
    pub auto: bool,
    pub options: MdOptions,
}

/// mod_md's server-wide state.
#[derive(Clone, Debug, Default)]
pub struct MdGlobal {
    pub lines: Vec<DomainLines>,
    pub options: MdOptions,
    /// `MDStoreDir` (mod_md: `ServerRoot/md`); set by [`settle`].
    pub store_dir: PathBuf,
    pub store_dir_line: Option<PathBuf>,
    /// `MDHelperUser` (warren's own): the account the ACME helper drops
    /// to, and where it was set; unset, `warren-acme` if it exists.
    pub helper_user: Option<(String, Origin)>,
    /// The settled domains.
    pub domains: Vec<ManagedDomain>,
}

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

/// Where the helper keeps OCSP responses: `ocsp/ID.der`, ID naming the
/// certificate (see warren-acme's stapling).
pub fn ocsp_file(store: &std::path::Path, id: &str) -> PathBuf {
    store.join("ocsp").join(format!("{id}.der"))
}

/// The certificate and key of a managed domain in the store, as mod_md
/// lays them out: `domains/NAME/pubcert.pem` and `privkey.pem`.
pub fn store_files(store: &std::path::Path, domain: &str) -> (PathBuf, PathBuf) {
    let dir = store.join("domains").join(domain);
    (dir.join("pubcert.pem"), dir.join("privkey.pem"))
}

/// The file names of the pair of the `index`th MDPrivateKeys type, in a
/// domain's directory: the first type's are `pubcert.pem` and
/// `privkey.pem` ([`store_files`]), the others' carry the type, as
/// mod_md's (`pubcert.secp384r1.pem`, `privkey.secp384r1.pem`).
pub fn pair_names(index: usize, spec: KeySpec) -> (String, String) {
    if index == 0 {
        return ("pubcert.pem".into(), "privkey.pem".into());
    }
    let tag = match spec {
        KeySpec::Rsa(bits) => format!("rsa{bits}"),
        KeySpec::P256 => "secp256r1".into(),
        KeySpec::P384 => "secp384r1".into(),
    };
    (format!("pubcert.{tag}.pem"), format!("privkey.{tag}.pem"))
}

/// Where http-01 key authorizations are written, one file per token:
/// the only part of the store server children read.
pub fn challenges_dir(store: &std::path::Path) -> PathBuf {
    store.join("challenges")
}

/// Where the tls-alpn-01 certificate (key and certificate, PEM) of
/// `name` is put while an order runs; None unless `name` is a DNS name
/// (the TLS listener looks it up by the client's SNI).
pub fn tls_alpn_challenge_file(store: &std::path::Path, name: &str) -> Option<PathBuf> {
    let name = name.to_ascii_lowercase();
    let valid = name.len() <= 253 && !name.is_empty() && name.split('.').all(|l| !l.is_empty() && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-'));
    valid.then(|| challenges_dir(store).join("tls-alpn-01").join(format!("{name}.pem")))
}

fn valid_name(name: &str) -> bool {
    let bare = name.strip_prefix("*.").unwrap_or(name);
    !bare.is_empty()
        && bare.len() <= 253
        && bare.split('.').all(|label| !label.is_empty() && label.len() <= 63 && label.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-') && !label.starts_with('-'))
}

/// `MDomain name [name...] [auto|manual]`.
pub(crate) fn domain(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(lines) = domain_lines(b, &d.args, &d.origin, "MDomain") {
        s.md.lines.push(lines);
    }
}

fn domain_lines(b: &mut Builder, args: &[String], origin: &Origin, what: &str) -> Option<DomainLines> {
    let mut names = Vec::new();
    let mut auto = true;
    for a in args {
        match a.to_ascii_lowercase().as_str() {
            "auto" => auto = true,
            "manual" => auto = false,
            name if valid_name(name) => names.push(name.to_string()),
            _ => {
                b.error(origin, format!("{what}: '{a}' is not a domain name (letters, digits, '-' and '.', a wildcard only as '*.' first)"));
                return None;
            }
        }
    }
    if names.is_empty() {
        b.error(origin, format!("{what} takes one or more domain names"));
        return None;
    }
    Some(DomainLines { names, origin: origin.clone(), auto, options: MdOptions::default() })
}

/// `<MDomainSet name...>`: a managed domain with settings of its own.
pub(crate) fn domain_set(b: &mut Builder, sec: &Section, s: &mut Settings) {
    let Some(mut lines) = domain_lines(b, &sec.args, &sec.origin, "<MDomainSet>") else { return };
    for node in &sec.children {
        match node {
            Node::Directive(d) if d.name.eq_ignore_ascii_case("MDMember") => {
                for a in &d.args {
                    if valid_name(a) {
                        lines.names.push(a.to_ascii_lowercase());
                    } else {
                        b.error(&d.origin, format!("MDMember: '{a}' is not a domain name"));
                    }
                }
            }
            Node::Directive(d) => match OPTIONS.iter().find(|(name, _)| name.eq_ignore_ascii_case(&d.name)) {
                Some((_, apply)) => apply(b, d, &mut lines.options),
                None => b.error(&d.origin, format!("{} cannot stand in <MDomainSet> (MDMember and the MD* settings can)", d.name)),
            },
            Node::Section(inner) | Node::Skipped(inner) => b.error(&inner.origin, format!("<{}> cannot stand in <MDomainSet>", inner.name)),
        }
    }
    s.md.lines.push(lines);
}

type OptionFn = fn(&mut Builder, &Directive, &mut MdOptions);

/// The settings `<MDomainSet>` may hold, by name (the table's server-wide
/// entries call the same functions on [`MdGlobal::options`]).
static OPTIONS: &[(&str, OptionFn)] = &[
    ("MDCertificateAuthority", ca),
    ("MDCACertificateFile", ca_certificate_file),
    ("MDContactEmail", contact),
    ("MDCertificateAgreement", agreement),
    ("MDPrivateKeys", private_keys),
    ("MDRenewWindow", renew_window),
    ("MDRetryDelay", retry_delay),
    ("MDChallengeDns01", challenge_dns01),
    ("MDRequireHttps", require_https),
    ("MDStapling", stapling),
    ("MDMustStaple", must_staple),
    ("MDCAChallenges", ca_challenges),
];

pub(crate) fn ca(b: &mut Builder, d: &Directive, o: &mut MdOptions) {
    let Some(v) = b.one(d) else { return };
    let url = match v.to_ascii_lowercase().as_str() {
        "letsencrypt" => LETS_ENCRYPT.to_string(),
        "letsencrypt-test" => "https://acme-staging-v02.api.letsencrypt.org/directory".to_string(),
        _ if v.starts_with("https://") || v.starts_with("http://") => v,
        _ => return b.error(&d.origin, format!("MDCertificateAuthority: '{v}' is not an ACME directory URL (https://...) nor letsencrypt, letsencrypt-test")),
    };
    o.ca_url = Some(url);
}

pub(crate) fn ca_certificate_file(b: &mut Builder, d: &Directive, o: &mut MdOptions) {
    let Some(v) = b.one(d) else { return };
    let p = b.resolve(&v);
    if !p.is_file() {
        return b.error(&d.origin, format!("MDCACertificateFile: file '{}' does not exist", p.display()));
    }
    o.ca_certificate_file = Some(p);
}

pub(crate) fn contact(b: &mut Builder, d: &Directive, o: &mut MdOptions) {
    let Some(v) = b.one(d) else { return };
    if !v.contains('@') || v.contains(char::is_whitespace) {
        return b.error(&d.origin, format!("MDContactEmail: '{v}' is not an email address"));
    }
    o.contact = Some(v.trim_start_matches("mailto:").to_string());
}

pub(crate) fn agreement(b: &mut Builder, d: &Directive, o: &mut MdOptions) {
    match d.args.as_slice() {
        [] => o.agreement = Some(true),
        [v] if v.eq_ignore_ascii_case("accepted") || v.starts_with("http") => o.agreement = Some(true),
        _ => b.error(&d.origin, "MDCertificateAgreement takes 'accepted' (or the terms' URL, as older mod_md)"),
    }
}

pub(crate) fn private_keys(b: &mut Builder, d: &Directive, o: &mut MdOptions) {
    if d.args.is_empty() {
        return b.error(&d.origin, "MDPrivateKeys takes one or more key types (RSA [bits], secp256r1, secp384r1)");
    }
    let mut keys = Vec::new();
    let mut args = d.args.iter().peekable();
    while let Some(a) = args.next() {
        match a.to_ascii_lowercase().as_str() {
            "rsa" => {
                let bits = match args.peek().and_then(|n| n.parse::<u32>().ok()) {
                    Some(n) => {
                        args.next();
                        n
                    }
                    None => 2048,
                };
                if ![2048, 3072, 4096].contains(&bits) {
                    return b.error(&d.origin, format!("MDPrivateKeys: RSA {bits}: warren makes RSA keys of 2048, 3072 or 4096 bits"));
                }
                keys.push(KeySpec::Rsa(bits));
            }
            "secp256r1" | "p-256" | "prime256v1" => keys.push(KeySpec::P256),
            "secp384r1" | "p-384" => keys.push(KeySpec::P384),
            _ => return b.error(&d.origin, format!("MDPrivateKeys: unknown key type '{a}' (RSA [bits], secp256r1, secp384r1)")),
        }
    }
    o.private_keys = Some(keys);
}

/// A duration as mod_md writes them: `30d`, `12h`, `90m`, `45s`, `10ms`,
/// a bare number being days.
pub(crate) fn parse_duration(v: &str) -> Option<Duration> {
    let digits = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let n: u64 = v[..digits].parse().ok()?;
    let secs = match &v[digits..] {
        "" | "d" => n.checked_mul(86_400)?,
        "h" => n.checked_mul(3600)?,
        "mi" | "m" => n.checked_mul(60)?,
        "s" => n,
        "ms" => return Some(Duration::from_millis(n)),
        _ => return None,
    };
    Some(Duration::from_secs(secs))
}

pub(crate) fn renew_window(b: &mut Builder, d: &Directive, o: &mut MdOptions) {
    let Some(v) = b.one(d) else { return };
    let window = match v.strip_suffix('%') {
        Some(p) => p.parse::<u8>().ok().filter(|p| (1..=100).contains(p)).map(RenewWindow::Percent),
        None => parse_duration(&v).map(RenewWindow::Before),
    };
    match window {
        Some(w) => o.renew_window = Some(w),
        None => b.error(&d.origin, format!("MDRenewWindow: '{v}' is not a percentage (1% to 100%) nor a duration (30d, 12h, 90m, 45s)")),
    }
}

pub(crate) fn retry_delay(b: &mut Builder, d: &Directive, o: &mut MdOptions) {
    let Some(v) = b.one(d) else { return };
    match parse_duration(&v).filter(|d| !d.is_zero()) {
        Some(delay) => o.retry_delay = Some(delay),
        None => b.error(&d.origin, format!("MDRetryDelay: '{v}' is not a duration (5s, 10m, 1h, ...)")),
    }
}

pub(crate) fn challenge_dns01(b: &mut Builder, d: &Directive, o: &mut MdOptions) {
    let Some(v) = b.one(d) else { return };
    o.challenge_dns01 = Some(b.resolve(&v));
}

pub(crate) fn require_https(b: &mut Builder, d: &Directive, o: &mut MdOptions) {
    let Some(v) = b.one(d) else { return };
    o.require_https = Some(match v.to_ascii_lowercase().as_str() {
        "off" => RequireHttps::Off,
        "temporary" => RequireHttps::Temporary,
        "permanent" => RequireHttps::Permanent,
        _ => return b.error(&d.origin, "MDRequireHttps must be off, temporary or permanent"),
    });
}

pub(crate) fn stapling(b: &mut Builder, d: &Directive, o: &mut MdOptions) {
    o.stapling = b.on_off(d).or(o.stapling);
}

pub(crate) fn must_staple(b: &mut Builder, d: &Directive, o: &mut MdOptions) {
    o.must_staple = b.on_off(d).or(o.must_staple);
}

pub(crate) fn ca_challenges(b: &mut Builder, d: &Directive, o: &mut MdOptions) {
    if d.args.is_empty() {
        return b.error(&d.origin, "MDCAChallenges takes one or more of http-01, tls-alpn-01, dns-01");
    }
    let mut kinds = Vec::new();
    for a in &d.args {
        let k = a.to_ascii_lowercase();
        if !["http-01", "tls-alpn-01", "dns-01"].contains(&k.as_str()) {
            return b.error(&d.origin, format!("MDCAChallenges: unknown challenge type '{a}' (http-01, tls-alpn-01, dns-01)"));
        }
        kinds.push(k);
    }
    o.ca_challenges = Some(kinds);
}

pub(crate) fn helper_user(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(v) = b.one(d) {
        s.md.helper_user = Some((v, d.origin.clone()));
    }
}

/// The account the ACME helper runs as when MDHelperUser is not set, if
/// the system has it (a package makes it with `adduser --system`).
pub const DEFAULT_HELPER_USER: &str = "warren-acme";

/// MDHelperUser checked: an account of its own, not root's by accident
/// and never the serving children's (whose code, a site's PHP, could then
/// read the keys and answer any domain's challenges).
fn check_helper_user(b: &mut Builder, s: &Settings) {
    let Some((name, origin)) = &s.md.helper_user else {
        // Unset: the default account, which the package makes; without it
        // a root warren's helper keeps root, which `warren -t` says too.
        let first = s.md.lines.iter().find(|l| l.auto);
        if let Some(first) = first.filter(|_| crate::accounts::running_as_root() && crate::accounts::lookup_user(DEFAULT_HELPER_USER).is_err()) {
            b.warn(&first.origin, format!("MDomain {}: no account {DEFAULT_HELPER_USER} (MDHelperUser's default): the ACME helper would keep root; make it with `adduser --system --group {DEFAULT_HELPER_USER}`, or set MDHelperUser", first.names[0]));
        }
        return;
    };
    if name == "root" {
        return;
    }
    match crate::accounts::lookup_user(name) {
        Err(e) => b.error(origin, format!("MDHelperUser {name}: {}", e.trim_start_matches(&format!("User {name}: ")))),
        Ok(helper) => {
            let server = s.user.as_deref().and_then(|u| crate::accounts::lookup_user(u).ok());
            if helper.uid.is_root() {
                b.error(origin, format!("MDHelperUser {name}: uid 0; say MDHelperUser root to keep root"));
            } else if server.is_some_and(|u| u.uid == helper.uid) {
                b.error(origin, format!("MDHelperUser {name}: the serving children's User: their code (a site's PHP) could read the private keys and answer challenges for every domain; make an account of its own (adduser --system {DEFAULT_HELPER_USER})"));
            }
        }
    }
}

pub(crate) fn store_dir(b: &mut Builder, d: &Directive, s: &mut Settings) {
    if let Some(v) = b.one(d) {
        s.md.store_dir_line = Some(b.resolve(&v));
    }
}

/// Whether `name` (a host's ServerName or ServerAlias) is one of a
/// domain's names, wildcards matching one label as in certificates.
fn covers(domain: &ManagedDomain, name: &str) -> bool {
    domain.names.iter().any(|n| match n.strip_prefix("*.") {
        Some(base) => name.split_once('.').is_some_and(|(first, rest)| !first.is_empty() && rest.eq_ignore_ascii_case(base)),
        None => n.eq_ignore_ascii_case(name),
    })
}

fn host_names(h: &HostConfig) -> impl Iterator<Item = &str> {
    h.server_name.iter().map(|n| n.split(':').next().unwrap_or(n)).chain(h.aliases.iter().map(String::as_str))
}

/// Merges each domain's settings over the server's, checks them, and
/// gives the `SSLEngine on` hosts without certificates of their own the
/// store's files of the domain they serve. Called before mod_ssl's settle.
pub(crate) fn settle(b: &mut Builder, s: &mut Settings) {
    s.md.store_dir = s.md.store_dir_line.clone().unwrap_or_else(|| s.server_root.join("md"));
    check_helper_user(b, s);
    let global = s.md.options.clone();
    let mut domains: Vec<ManagedDomain> = Vec::new();
    for l in &s.md.lines {
        let o = &l.options;
        for n in &l.names {
            if let Some(other) = domains.iter().find(|d| d.names.iter().any(|m| m.eq_ignore_ascii_case(n))) {
                b.error(&l.origin, format!("MDomain: {n} is already managed in the domain {} (line {})", other.names[0], other.origin.line));
            }
        }
        let pick = |f: fn(&MdOptions) -> Option<bool>| f(o).or(f(&global));
        domains.push(ManagedDomain {
            names: l.names.clone(),
            origin: l.origin.clone(),
            auto: l.auto,
            ca_url: o.ca_url.clone().or(global.ca_url.clone()).unwrap_or_else(|| LETS_ENCRYPT.to_string()),
            ca_certificate_file: o.ca_certificate_file.clone().or(global.ca_certificate_file.clone()),
            contact: o.contact.clone().or(global.contact.clone()),
            agreement: pick(|o| o.agreement).unwrap_or(false),
            private_keys: o.private_keys.clone().or(global.private_keys.clone()).unwrap_or(vec![KeySpec::P256]),
            renew_window: o.renew_window.or(global.renew_window).unwrap_or(RenewWindow::Percent(33)),
            retry_delay: o.retry_delay.or(global.retry_delay).unwrap_or(Duration::from_secs(5)),
            challenge_dns01: o.challenge_dns01.clone().or(global.challenge_dns01.clone()),
            require_https: o.require_https.or(global.require_https).unwrap_or(RequireHttps::Off),
            stapling: pick(|o| o.stapling).unwrap_or(false),
            must_staple: pick(|o| o.must_staple).unwrap_or(false),
            ca_challenges: o.ca_challenges.clone().or(global.ca_challenges.clone()).unwrap_or_else(|| vec!["http-01".into()]),
            has_certificate: false,
            https_port: None,
        });
    }
    for d in &mut domains {
        // The contact falls back to a serving host's ServerAdmin, then the
        // server's, as mod_md.
        if d.contact.is_none() {
            let admin = s.virtual_hosts.iter().find(|vh| host_names(&vh.host).any(|n| covers(d, n))).and_then(|vh| vh.host.server_admin.clone()).or(s.main.server_admin.clone());
            d.contact = admin.filter(|a| a.contains('@'));
        }
        if d.contact.is_none() && d.ca_url == LETS_ENCRYPT {
            b.error(&d.origin, format!("MDomain {}: no contact for the CA (Let's Encrypt needs one): set MDContactEmail or ServerAdmin", d.names[0]));
        }
        for n in &d.names {
            if !n.starts_with("*.") && !s.virtual_hosts.iter().any(|vh| host_names(&vh.host).any(|h| h.eq_ignore_ascii_case(n))) && !host_names(&s.main).any(|h| h.eq_ignore_ascii_case(n)) {
                b.error(&d.origin, format!("MDomain {}: no virtual host serves {n} (as ServerName or ServerAlias)", d.names[0]));
            }
        }
        if d.challenge_dns01.is_none() {
            if let Some(w) = d.names.iter().find(|n| n.starts_with("*.")) {
                b.error(&d.origin, format!("MDomain {}: {w} can only be validated by dns-01: set MDChallengeDns01", d.names[0]));
            }
        }
        d.has_certificate = store_files(&s.md.store_dir_line.clone().unwrap_or_else(|| s.server_root.join("md")), &d.names[0]).0.exists();
        let tls_host = |vh: &&crate::settings::VirtualHost| vh.host.ssl.engine.as_ref().or(s.main.ssl.engine.as_ref()).is_some_and(|(on, _)| *on) && host_names(&vh.host).any(|n| covers(d, n));
        d.https_port = s.virtual_hosts.iter().find(tls_host).and_then(|vh| vh.addrs.iter().find_map(|a| a.port));
    }
    let store = s.md.store_dir.clone();
    let mut hosts: Vec<&mut HostConfig> = s.virtual_hosts.iter_mut().map(|vh| &mut vh.host).collect();
    let main_ssl = s.main.ssl.clone();
    for h in hosts.iter_mut() {
        let engine_on = h.ssl.engine.as_ref().or(main_ssl.engine.as_ref()).is_some_and(|(on, _)| *on);
        if !engine_on || !h.ssl.cert_files.is_empty() || !main_ssl.cert_files.is_empty() {
            continue;
        }
        let Some(domain) = domains.iter().find(|d| host_names(h).any(|n| covers(d, n))) else { continue };
        let dir = store.join("domains").join(&domain.names[0]);
        for (i, spec) in domain.private_keys.iter().enumerate() {
            let (cert, key) = pair_names(i, *spec);
            h.ssl.cert_files.push((dir.join(cert), domain.origin.clone()));
            h.ssl.key_files.push((dir.join(key), domain.origin.clone()));
        }
        h.ssl.managed = Some(domain.names.clone());
        // mod_md's MDRequireHttps permanent: HSTS on the HTTPS answers,
        // once a real certificate is served (never on the temporary one).
        if domain.require_https == RequireHttps::Permanent && domain.has_certificate {
            let args = ["always", "set", "Strict-Transport-Security", "max-age=15768000"].map(String::from);
            match crate::headers::parse_rule(&args, false, false, &domain.origin) {
                Ok(rule) => h.dir.headers.push(std::sync::Arc::new(rule)),
                Err(e) => b.error(&domain.origin, e),
            }
        }
    }
    s.md.domains = domains;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::load_text;

    fn load(name: &str, text: &str) -> crate::Loaded {
        load_text(&format!("mdcfg-{name}"), text, &["ca.pem"]).0
    }

    fn errors(l: &crate::Loaded) -> Vec<String> {
        l.errors.iter().map(|e| format!("{}: {}", e.origin.line, e.message)).collect()
    }

    #[test]
    fn a_managed_host_takes_the_stores_files() {
        let l = load(
            "managed",
            "Listen 443\nMDomain a.test www.a.test\nMDCertificateAuthority https://127.0.0.1:14000/dir\nMDCACertificateFile ca.pem\nMDContactEmail admin@a.test\nMDRenewWindow 50%\nMDRetryDelay 2s\nMDStoreDir /var/lib/warren/md\n<VirtualHost *:443>\nServerName a.test\nServerAlias www.a.test\nSSLEngine on\n</VirtualHost>\n",
        );
        assert!(l.errors.is_empty(), "{:?}", errors(&l));
        let s = l.settings.unwrap();
        let d = &s.md.domains[0];
        assert_eq!(d.names, ["a.test", "www.a.test"]);
        assert_eq!(d.ca_url, "https://127.0.0.1:14000/dir");
        assert_eq!(d.renew_window, RenewWindow::Percent(50));
        assert_eq!(d.retry_delay, Duration::from_secs(2));
        assert_eq!(d.contact.as_deref(), Some("admin@a.test"));
        let t = s.virtual_hosts[0].host.tls.as_ref().unwrap();
        assert_eq!(t.certificates[0].cert.0, PathBuf::from("/var/lib/warren/md/domains/a.test/pubcert.pem"));
        assert_eq!(t.managed.as_deref(), Some(&["a.test".to_string(), "www.a.test".to_string()][..]));
        assert_eq!(t.certificates.len(), 1);
    }

    #[test]
    fn domain_sets_have_their_own_settings_and_server_admin_is_the_contact() {
        let l = load(
            "set",
            "Listen 443\nServerAdmin root@b.test\nMDCertificateAuthority https://ca.test/dir\n<MDomainSet b.test>\nMDMember www.b.test\nMDRenewWindow 10d\nMDCertificateAuthority letsencrypt\n</MDomainSet>\n<VirtualHost *:443>\nServerName b.test\nServerAlias www.b.test\nSSLEngine on\n</VirtualHost>\n",
        );
        assert!(l.errors.is_empty(), "{:?}", errors(&l));
        let d = &l.settings.as_ref().unwrap().md.domains[0];
        assert_eq!(d.names, ["b.test", "www.b.test"]);
        assert_eq!(d.ca_url, LETS_ENCRYPT);
        assert_eq!(d.renew_window, RenewWindow::Before(Duration::from_secs(10 * 86_400)));
        assert_eq!(d.contact.as_deref(), Some("root@b.test"));
    }

    #[test]
    fn helper_user_is_an_account_of_its_own() {
        let conf = |helper: &str| format!("Listen 443\nUser nobody\nMDomain h.test\nMDContactEmail a@h.test\nMDHelperUser {helper}\n<VirtualHost *:443>\nServerName h.test\nSSLEngine on\n</VirtualHost>\n");
        let e = errors(&load("helper-server", &conf("nobody")));
        assert!(e.iter().any(|e| e.contains("6: MDHelperUser nobody: the serving children's User")), "{e:?}");
        let e = errors(&load("helper-none", &conf("no-such-user-here")));
        assert!(e.iter().any(|e| e.contains("6: MDHelperUser no-such-user-here: no such user")), "{e:?}");
        let l = load("helper-root", &conf("root"));
        assert!(l.errors.is_empty(), "{:?}", errors(&l));
        assert_eq!(l.settings.unwrap().md.helper_user.map(|(n, _)| n).as_deref(), Some("root"));
        let l = load("helper-daemon", &conf("daemon"));
        assert!(l.errors.is_empty(), "{:?}", errors(&l));
    }

    #[test]
    fn checks_as_warren_t_makes_them() {
        let l = load(
            "checks",
            "Listen 443\nMDomain c.test nowhere.test *.c.test\nMDomain bad_name!\nMDRenewWindow 120%\nMDRetryDelay soon\nMDPrivateKeys RSA 1024\nMDCAChallenges smtp-01\n<VirtualHost *:443>\nServerName c.test\nSSLEngine on\n</VirtualHost>\n",
        );
        let e = errors(&l);
        let expect = [
            "4: MDomain: 'bad_name!' is not a domain name",
            "5: MDRenewWindow: '120%' is not a percentage",
            "6: MDRetryDelay: 'soon' is not a duration",
            "7: MDPrivateKeys: RSA 1024: warren makes RSA keys of 2048, 3072 or 4096 bits",
            "8: MDCAChallenges: unknown challenge type 'smtp-01'",
            "3: MDomain c.test: no contact for the CA",
            "3: MDomain c.test: no virtual host serves nowhere.test",
            "3: MDomain c.test: *.c.test can only be validated by dns-01",
        ];
        for x in expect {
            assert!(e.iter().any(|e| e.starts_with(x)), "no error {x:?} in {e:#?}");
        }
        assert_eq!(e.len(), expect.len(), "{e:#?}");
    }

    /// MDStapling: the managed domain's certificate, and (server-wide, as
    /// mod_md's MDStapleOthers) the other hosts' too; SSLUseStapling asks
    /// for its host's alone.
    #[test]
    fn stapled_certificates_are_listed() {
        let conf = |global: &str| {
            format!("Listen 443\nMDomain d.test\nMDContactEmail a@d.test\nMDChallengeDns01 /bin/true\n{global}\n<VirtualHost *:443>\nServerName d.test\nSSLEngine on\n</VirtualHost>\n<VirtualHost *:443>\nServerName o.test\nSSLEngine on\nSSLCertificateFile o.pem\nSSLCertificateKeyFile o.key\n</VirtualHost>\n<VirtualHost *:443>\nServerName u.test\nSSLEngine on\nSSLCertificateFile u.pem\nSSLCertificateKeyFile u.key\nSSLUseStapling on\n</VirtualHost>\n")
        };
        let listed = |global: &str| {
            let l = load_text("mdcfg-stapled", &conf(global), &["o.pem", "o.key", "u.pem", "u.key"]).0;
            assert!(l.errors.is_empty(), "{:?}", errors(&l));
            let s = l.settings.unwrap();
            stapled_certificates(&s).into_iter().map(|c| (c.cert.file_name().unwrap().to_string_lossy().into_owned(), c.domain)).collect::<Vec<_>>()
        };
        assert_eq!(listed(""), [("u.pem".to_string(), None)]);
        assert_eq!(listed("MDStapling on"), [("pubcert.pem".to_string(), Some("d.test".to_string())), ("o.pem".into(), None), ("u.pem".into(), None)]);
        assert_eq!(listed("MDStapling off"), listed(""));
    }

    /// Several MDPrivateKeys types: a certificate and key of each, the
    /// first as pubcert.pem/privkey.pem.
    #[test]
    fn a_pair_per_key_type() {
        let l = load("keys", "Listen 443\nMDomain g.test\nMDContactEmail a@g.test\nMDPrivateKeys secp384r1 RSA 3072\nMDStoreDir /md\n<VirtualHost *:443>\nServerName g.test\nSSLEngine on\n</VirtualHost>\n");
        assert!(l.errors.is_empty() && l.warnings.is_empty(), "{:?} {:?}", errors(&l), l.warnings);
        let s = l.settings.unwrap();
        let t = s.virtual_hosts[0].host.tls.as_ref().unwrap();
        let files: Vec<_> = t.certificates.iter().map(|c| (c.cert.0.display().to_string(), c.key.as_ref().unwrap().0.display().to_string())).collect();
        assert_eq!(files, [("/md/domains/g.test/pubcert.pem".into(), "/md/domains/g.test/privkey.pem".into()), ("/md/domains/g.test/pubcert.rsa3072.pem".into(), "/md/domains/g.test/privkey.rsa3072.pem".into())]);
    }

    /// Debian's `a2enmod md`: `<IfModule md_module>` holds only once loaded.
    #[test]
    fn ifmodule_md_module_needs_its_loadmodule() {
        let site = "<IfModule md_module>\nMDomain e.test\nMDContactEmail a@e.test\n</IfModule>\n<VirtualHost *:443>\nServerName e.test\nSSLEngine on\n</VirtualHost>\n";
        let l = load("ifmodule-off", &format!("Listen 443\nSSLCertificateFile ca.pem\n{site}"));
        assert!(l.settings.unwrap().md.domains.is_empty());
        let l = load("ifmodule-on", &format!("Listen 443\nLoadModule md_module /usr/lib/apache2/modules/mod_md.so\n{site}"));
        assert!(l.errors.is_empty(), "{:?}", errors(&l));
        assert_eq!(l.settings.unwrap().md.domains[0].names, ["e.test"]);
    }

    /// MDRequireHttps permanent: HSTS on the TLS host once the store has
    /// the certificate, not before.
    #[test]
    fn permanent_adds_hsts_once_certified() {
        let text = |store: &str| format!("Listen 443\nMDomain f.test\nMDContactEmail a@f.test\nMDRequireHttps permanent\nMDStoreDir {store}\n<VirtualHost *:443>\nServerName f.test\nSSLEngine on\n</VirtualHost>\n");
        let store = std::env::temp_dir().join(format!("warren-md-hsts-{}", std::process::id()));
        let l = load("hsts-none", &text(&store.display().to_string()));
        let s = l.settings.unwrap();
        assert!(!s.md.domains[0].has_certificate && s.virtual_hosts[0].host.dir.headers.is_empty());
        let (cert, _) = store_files(&store, "f.test");
        std::fs::create_dir_all(cert.parent().unwrap()).unwrap();
        std::fs::write(&cert, "x").unwrap();
        let l = load("hsts-cert", &text(&store.display().to_string()));
        let s = l.settings.unwrap();
        assert!(s.md.domains[0].has_certificate && s.md.domains[0].https_port == Some(443));
        assert_eq!(s.virtual_hosts[0].host.dir.headers[0].name, "Strict-Transport-Security");
        std::fs::remove_dir_all(&store).unwrap();
    }

    #[test]
    fn durations_and_windows() {
        assert_eq!(parse_duration("30d"), Some(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_duration("7"), Some(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_duration("90m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1x"), None);
        assert_eq!(RenewWindow::Percent(33).lead(0, 300), 99);
        assert_eq!(RenewWindow::Before(Duration::from_secs(60)).lead(0, 300), 60);
    }
}
