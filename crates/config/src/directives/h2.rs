//! HTTP/2's directives: core's `Protocols` and `ProtocolsHonorOrder`, and
//! mod_http2's `H2*`, read into a host's
//! [`H2Directives`](crate::h2::H2Directives); the merge into each host's
//! [`Protocols`](crate::h2::Protocols) and
//! [`H2Settings`](crate::h2::H2Settings) once everything is read, and what
//! is said of lines that cannot act. The request half is warren-serve's
//! `h2` module (and warren-http's codec).

use std::time::Duration;

use crate::builder::Builder;
use crate::dir_config::{DirConfig, DirSection};
use crate::h2::{Protocol, MAX_FRAME, MAX_WINDOW};
use crate::parse::{Directive, Origin};
use crate::settings::{HostConfig, Settings};
use crate::values::{parse_duration, DurationSyntax};

/// Settles every host's [`Protocols`] and [`H2Settings`] (the virtual
/// hosts' merged with the main server's) and says what each listener
/// cannot do as written: called by the builder once everything is read,
/// after TLS is settled (which listeners speak TLS). `http2_loaded`: a
/// `LoadModule http2_module` was read.
pub(crate) fn settle(b: &mut Builder, s: &mut Settings, http2_loaded: bool) {
    (s.main.protocols, s.main.h2) = s.main.http2.settle(&s.main.dir);
    for vh in &mut s.virtual_hosts {
        let merged = vh.host.http2.over(&s.main.http2);
        (vh.host.protocols, vh.host.h2) = merged.settle(&vh.host.dir);
    }
    // Lines about a host's own Protocols, said once per line.
    let mut notes: Vec<(Origin, String)> = Vec::new();
    for p in std::iter::once(&s.main).chain(s.virtual_hosts.iter().map(|vh| &vh.host)) {
        let Some(origin) = &p.protocols.origin else { continue };
        let http2 = p.protocols.allows(Protocol::H2) || p.protocols.allows(Protocol::H2c);
        if http2 && !http2_loaded {
            notes.push((origin.clone(), "Protocols: HTTP/2 is offered although no LoadModule http2_module is read: warren has it built in (Apache would not offer it without mod_http2)".into()));
        }
        if !p.protocols.allows(Protocol::Http11) {
            notes.push((origin.clone(), "Protocols without http/1.1: warren still answers HTTP/1.1 to clients that do not speak HTTP/2 (ALPN offers http/1.1 too)".into()));
        }
    }
    let sections = s.main.sections.iter().chain(s.virtual_hosts.iter().flat_map(|vh| vh.host.sections.iter()));
    notes.extend(in_sections(sections));
    let mut listeners = s.listen.clone();
    listeners.dedup();
    for addr in listeners {
        notes.extend(s.resolve_h2(addr).1);
    }
    for (i, (origin, message)) in notes.iter().enumerate() {
        if !notes[..i].iter().any(|(o, m)| o == origin && m == message) {
            b.warn(origin, message.clone());
        }
    }
}

/// What is said of `H2Upgrade` and `H2StreamTimeout` in sections (and
/// `.htaccess` files): warren decides both per listener, before any request
/// is mapped to a section.
pub(crate) fn in_sections<'a>(sections: impl Iterator<Item = &'a DirSection>) -> Vec<(Origin, String)> {
    let mut notes = Vec::new();
    for sec in sections {
        if let Some((_, o)) = &sec.config.h2_upgrade {
            notes.push((o.clone(), "H2Upgrade in a section: not acted on: warren decides Upgrade to h2c per listener, in the server config or <VirtualHost>".into()));
        }
        if let Some((_, o)) = &sec.config.h2_stream_timeout {
            notes.push((o.clone(), "H2StreamTimeout in a section: not acted on: warren times streams per connection, as set in the server config or <VirtualHost>".into()));
        }
    }
    notes
}

/// `Protocols protocol...` (core): h2, h2c, http/1.1, in order of preference.
pub(crate) fn protocols(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if d.args.is_empty() {
        b.error(&d.origin, "Protocols takes one or more protocols (h2, h2c, http/1.1)");
        return;
    }
    let mut list = Vec::new();
    for a in &d.args {
        match Protocol::parse(a) {
            Some(p) if !list.contains(&p) => list.push(p),
            // Named twice: the first place decides the order.
            Some(_) => {}
            None => {
                b.error(&d.origin, format!("Protocols: unknown protocol '{a}' (warren speaks h2, h2c and http/1.1)"));
                return;
            }
        }
    }
    h.http2.protocols = Some((list, d.origin.clone()));
}

pub(crate) fn protocols_honor_order(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    h.http2.honor_order = b.on_off(d).or(h.http2.honor_order);
}

/// A whole number from `min` to `max`, else an error naming the range.
fn number(b: &mut Builder, d: &Directive, min: u32, max: u32) -> Option<u32> {
    let n = b.whole_number(d)?;
    match u32::try_from(n) {
        Ok(n) if (min..=max).contains(&n) => Some(n),
        _ => {
            b.error(&d.origin, format!("{} must be from {min} to {max}", d.name));
            None
        }
    }
}

/// `H2MaxSessionStreams n`, and warren's `H2MaxConcurrentStreams n` (the
/// name nginx's `http2_max_concurrent_streams` users look for).
pub(crate) fn max_session_streams(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if let Some(n) = number(b, d, 1, MAX_WINDOW) {
        h.http2.max_session_streams = Some(n);
    }
}

pub(crate) fn window_size(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    // 0 is refused: no request body could ever be sent.
    if let Some(n) = number(b, d, 1, MAX_WINDOW) {
        h.http2.window_size = Some(n);
    }
}

pub(crate) fn max_data_frame_len(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if let Some(n) = number(b, d, 0, MAX_FRAME) {
        h.http2.max_data_frame_len = Some(n);
    }
}

pub(crate) fn early_hints(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if let Some(on) = b.on_off(d) {
        h.http2.early_hints = Some(on);
    }
}

pub(crate) fn websockets(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if let Some(on) = b.on_off(d) {
        h.http2.websockets = Some(on);
    }
}

pub(crate) fn direct(b: &mut Builder, d: &Directive, h: &mut HostConfig) {
    if let Some(on) = b.on_off(d) {
        h.http2.direct = Some((on, d.origin.clone()));
    }
}

pub(crate) fn upgrade(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    if let Some(on) = b.on_off(d) {
        dir.h2_upgrade = Some((on, d.origin.clone()));
    }
}

/// Apache's time intervals (`ap_timeout_parameter_parse`): seconds, or
/// with ms, s, mi or h.
const TIME_INTERVAL: DurationSyntax = DurationSyntax {
    units: &[("ms", Duration::from_millis(1)), ("s", Duration::from_secs(1)), ("mi", Duration::from_secs(60)), ("h", Duration::from_secs(3600))],
    fractions: false,
    plus: false,
};

pub(crate) fn stream_timeout(b: &mut Builder, d: &Directive, dir: &mut DirConfig) {
    let Some(v) = b.one(d) else { return };
    match parse_duration(&v, &TIME_INTERVAL) {
        Some(t) => dir.h2_stream_timeout = Some((t, d.origin.clone())),
        None => b.error(&d.origin, format!("H2StreamTimeout: '{v}' is not a time interval (seconds, or with ms, s, mi, h)")),
    }
}

/// `H2Push on|off`: off is what warren does; on is said.
pub(crate) fn push(b: &mut Builder, d: &Directive, _: &mut DirConfig) {
    if b.on_off(d) == Some(true) {
        b.warn(&d.origin, "H2Push on: not acted on: warren does no HTTP/2 server push (browsers have dropped it; 103 Early Hints or Link preload headers do its work)");
    }
}
