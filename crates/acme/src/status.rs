//! What the helper knows of each domain, published for the server's
//! children: `MDStoreDir/md-status.json` (mod_md's md-status JSON, the
//! fields warren has) and `md-status.txt` (the lines server-status shows),
//! both written atomically after every change, readable by the server's
//! Group (0640), as the children run as User/Group and must never read
//! the keys beside them.

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{json, Value};
use warren_config::md::ManagedDomain;

use crate::store;

/// One domain's state as the helper sees it.
pub struct DomainState<'a> {
    pub config: &'a ManagedDomain,
    /// (not before, not after) of the certificate in the store.
    pub validity: Option<(i64, i64)>,
    pub due: i64,
    pub failures: u32,
    pub last_error: Option<&'a str>,
}

/// Unix seconds as an HTTP date, as mod_md's status and log lines write them.
pub fn http_date(secs: i64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs.max(0) as u64))
}

impl DomainState<'_> {
    fn state(&self) -> &'static str {
        match (self.validity, self.failures) {
            (None, 0) => "incomplete",
            (None, _) => "error",
            (Some(_), 0) => "complete",
            (Some(_), _) => "renewal-error",
        }
    }

    fn json(&self) -> Value {
        let d = self.config;
        json!({
            "name": d.names[0],
            "domains": d.names,
            "contacts": d.contact.iter().map(|c| format!("mailto:{c}")).collect::<Vec<_>>(),
            "ca": { "url": d.ca_url, "proto": "ACME" },
            "state-descr": self.state(),
            "renew-mode": if d.auto { "auto" } else { "manual" },
            "renew-window": match d.renew_window {
                warren_config::md::RenewWindow::Percent(p) => format!("{p}%"),
                warren_config::md::RenewWindow::Before(t) => format!("{}s", t.as_secs()),
            },
            "cert": self.validity.map(|(from, until)| json!({ "valid": { "from": http_date(from), "until": http_date(until) } })),
            "renew": self.validity.is_none_or(|_| self.due <= crate::schedule::now()),
            "renewal": {
                "next-run": http_date(self.due),
                "errors": self.failures,
                "last": self.last_error.map(|e| json!({ "problem": "warren:order-failed", "detail": e })),
            },
        })
    }

    fn line(&self) -> String {
        let cert = match self.validity {
            Some((_, until)) => format!("valid until {}", http_date(until)),
            None => "no certificate yet".into(),
        };
        let errors = match (self.failures, self.last_error) {
            (0, _) => String::new(),
            (n, Some(e)) => format!("; {n} failed in a row, last: {e}"),
            (n, None) => format!("; {n} failed in a row"),
        };
        format!("MDomain {} ({}): {}; {cert}; next run {}{errors}\n", self.config.names[0], self.state(), self.config.names.join(" "), http_date(self.due))
    }
}

/// Writes both files; the group that may read them is `group`'s.
pub fn publish(store_dir: &Path, domains: &[DomainState], group: Option<nix::unistd::Gid>) -> std::io::Result<()> {
    let doc = json!({ "version": concat!("warren-md/", env!("CARGO_PKG_VERSION")), "managed-domains": domains.iter().map(DomainState::json).collect::<Vec<_>>() });
    let text: String = domains.iter().map(DomainState::line).collect();
    for (name, bytes) in [("md-status.json", serde_json::to_vec_pretty(&doc).unwrap_or_default()), ("md-status.txt", text.into_bytes())] {
        let path = store_dir.join(name);
        store::write_atomic(&path, &bytes, 0o640)?;
        if let Some(gid) = group {
            std::os::unix::fs::chown(&path, None, Some(gid.as_raw()))?;
        }
    }
    Ok(())
}

/// The files [`publish`] writes, for the handler.
pub fn files(store_dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    (store_dir.join("md-status.json"), store_dir.join("md-status.txt"))
}
