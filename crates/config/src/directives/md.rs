//! mod_md's directives: `MDomain`, `<MDomainSet>`, the `MD*` options
//! (server-wide or per domain), MDStoreDir and MDHelperUser, read into the
//! server's [`MdGlobal`](crate::md::MdGlobal), and the checks once every
//! host is read (each managed domain served by a host with SSLEngine on).
//! The request half is the crate warren-acme (the ACME helper) and
//! warren-tls (serving the certificates).

use std::time::Duration;

use crate::builder::Builder;
use crate::md::{covers, pair_names, store_files, LETS_ENCRYPT, DomainLines, KeySpec, ManagedDomain, MdOptions, RenewWindow, RequireHttps, DEFAULT_HELPER_USER};
use crate::parse::{Directive, Node, Origin, Section};
use crate::settings::{HostConfig, Settings};

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

fn valid_name(name: &str) -> bool {
    let bare = name.strip_prefix("*.").unwrap_or(name);
    !bare.is_empty()
        && bare.len() <= 253
        && bare.split('.').all(|label| !label.is_empty() && label.len() <= 63 && label.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-') && !label.starts_with('-'))
}
