//! mod_access_compat's directives: `Order`, `Allow from`, `Deny from` and
//! `Satisfy`, read into the section's
//! [`AccessCompat`](crate::access_compat::AccessCompat). The request half is
//! the handler's `authz` module.

use crate::access_compat::{HostMatch, Order};
use crate::builder::Builder;
use crate::dir_config::DirConfig;
use crate::parse::Directive;

pub(crate) fn order(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    let order = match d.args.as_slice() {
        [o] => match o.to_ascii_lowercase().as_str() {
            "deny,allow" => Order::DenyAllow,
            "allow,deny" => Order::AllowDeny,
            "mutual-failure" => Order::MutualFailure,
            _ => return b.error(&d.origin, format!("Order {o}: write `Deny,Allow`, `Allow,Deny` or `Mutual-failure` (no spaces)")),
        },
        _ => return b.error(&d.origin, "Order takes one argument: `Deny,Allow`, `Allow,Deny` or `Mutual-failure` (no spaces)"),
    };
    dir.access_compat.get_or_insert_with(Default::default).order = order;
}

fn from_list(b: &mut Builder, d: &Directive) -> Option<Vec<HostMatch>> {
    match d.args.split_first() {
        Some((from, hosts)) if from.eq_ignore_ascii_case("from") && !hosts.is_empty() => {
            let mut list = Vec::new();
            for h in hosts {
                if h.len() > 4 && h[..4].eq_ignore_ascii_case("env=") {
                    b.error(&d.origin, format!("{} from {h}: `env=` is not supported: write `Require env` or a RewriteRule", d.name));
                    return None;
                }
                match HostMatch::parse(h) {
                    Ok(m) => list.extend(m),
                    Err(e) => {
                        b.error(&d.origin, format!("{} from: {e}", d.name));
                        return None;
                    }
                }
            }
            Some(list)
        }
        _ => {
            b.error(&d.origin, format!("{} takes `from` and one or more hosts", d.name));
            None
        }
    }
}

pub(crate) fn allow(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if let Some(list) = from_list(b, d) {
        dir.access_compat.get_or_insert_with(Default::default).allow.extend(list);
    }
}

pub(crate) fn deny(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if let Some(list) = from_list(b, d) {
        dir.access_compat.get_or_insert_with(Default::default).deny.extend(list);
    }
}

pub(crate) fn satisfy(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    let any = match d.args.as_slice() {
        [s] if s.eq_ignore_ascii_case("any") => true,
        [s] if s.eq_ignore_ascii_case("all") => false,
        _ => return b.error(&d.origin, "Satisfy takes `Any` or `All`"),
    };
    dir.access_compat.get_or_insert_with(Default::default).satisfy_any = any;
}
