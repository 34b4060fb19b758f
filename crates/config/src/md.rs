//! mod_md's configuration: the domains whose certificates warren obtains
//! and renews from an ACME CA itself (`MDomain`, `<MDomainSet>`), and the
//! `MD*` settings, server-wide or per domain inside `<MDomainSet>`.
//!
//! These are the types and the store's layout ([`store_files`],
//! [`ocsp_file`], ...). The directives are in
//! `directives/md.rs`, whose `settle` gives every
//! `SSLEngine on` host that names no certificate and serves a managed
//! domain that domain's files in MDStoreDir; `warren-tls` serves a
//! temporary self-signed certificate until the ACME helper (`warren-acme`)
//! has written them. The checks `warren -t` makes are there too: a managed
//! name no virtual host serves, a CA that needs a contact without one.
//! Which certificates are stapled is [`stapling`](crate::stapling).

use std::path::PathBuf;
use std::time::Duration;

use crate::parse::Origin;

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

/// A managed domain as written, before `directives/md.rs`'s `settle` merges its options.
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
    /// `MDStoreDir` (mod_md: `ServerRoot/md`); set by `directives/md.rs`'s `settle`.
    pub store_dir: PathBuf,
    pub store_dir_line: Option<PathBuf>,
    /// `MDHelperUser` (warren's own): the account the ACME helper drops
    /// to, and where it was set; unset, `warren-acme` if it exists.
    pub helper_user: Option<(String, Origin)>,
    /// The settled domains.
    pub domains: Vec<ManagedDomain>,
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

/// The account the ACME helper runs as when MDHelperUser is not set, if
/// the system has it (a package makes it with `adduser --system`).
pub const DEFAULT_HELPER_USER: &str = "warren-acme";

/// Whether `name` (a host's ServerName or ServerAlias) is one of a
/// domain's names, wildcards matching one label as in certificates.
pub(crate) fn covers(domain: &ManagedDomain, name: &str) -> bool {
    domain.names.iter().any(|n| match n.strip_prefix("*.") {
        Some(base) => name.split_once('.').is_some_and(|(first, rest)| !first.is_empty() && rest.eq_ignore_ascii_case(base)),
        None => n.eq_ignore_ascii_case(name),
    })
}

#[cfg(test)]
mod tests {
    use crate::directives::md::parse_duration;
    use crate::stapling::stapled_certificates;
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
