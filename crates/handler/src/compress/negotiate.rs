//! Which content-coding a client gets: its Accept-Encoding (RFC 9110
//! 12.5.3) read with q-values, `identity` and `*`, against the codings the
//! server offers for the response.

use warren_config::compress::Encoders;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Coding {
    Gzip,
    Brotli,
}

impl Coding {
    /// The Content-Encoding token.
    pub fn token(self) -> &'static str {
        match self {
            Coding::Gzip => "gzip",
            Coding::Brotli => "br",
        }
    }

    /// What Apache appends to the ETag of the compressed representation
    /// (mod_deflate's and mod_brotli's `AlterETag AddSuffix`, their default).
    pub fn etag_suffix(self) -> &'static str {
        match self {
            Coding::Gzip => "-gzip",
            Coding::Brotli => "-br",
        }
    }

    pub fn offered_by(self, e: Encoders) -> bool {
        match self {
            Coding::Gzip => e.gzip,
            Coding::Brotli => e.brotli,
        }
    }
}

/// The codings the client accepts, the one it prefers first (brotli before
/// gzip when it rates them the same, as brotli makes smaller bodies). An
/// absent field accepts none but identity: RFC 9110 lets a server pick any,
/// but mod_deflate and nginx compress only for clients that ask.
pub fn acceptable(field: Option<&[u8]>) -> Acceptable {
    let mut q_gzip: Option<u16> = None;
    let mut q_br: Option<u16> = None;
    let mut q_star: Option<u16> = None;
    let Some(field) = field else { return Acceptable { order: [None, None] } };
    for item in field.split(|&b| b == b',') {
        let mut parts = item.split(|&b| b == b';');
        let name = trim(parts.next().unwrap_or_default());
        if name.is_empty() {
            continue;
        }
        let mut q = 1000;
        for param in parts {
            let param = trim(param);
            if param.len() > 2 && param[..2].eq_ignore_ascii_case(b"q=") {
                // A q-value that does not parse makes the item unusable.
                q = qvalue(trim(&param[2..])).unwrap_or(0);
            }
        }
        let slot = if name.eq_ignore_ascii_case(b"gzip") || name.eq_ignore_ascii_case(b"x-gzip") {
            &mut q_gzip
        } else if name.eq_ignore_ascii_case(b"br") {
            &mut q_br
        } else if name == b"*" {
            &mut q_star
        } else {
            continue;
        };
        // Listed twice: the better rating stands.
        *slot = Some(slot.map_or(q, |old: u16| old.max(q)));
    }
    let gzip = q_gzip.or(q_star).unwrap_or(0);
    let br = q_br.or(q_star).unwrap_or(0);
    let mut order = [None, None];
    let mut n = 0;
    for (c, q) in if br >= gzip { [(Coding::Brotli, br), (Coding::Gzip, gzip)] } else { [(Coding::Gzip, gzip), (Coding::Brotli, br)] } {
        if q > 0 {
            order[n] = Some(c);
            n += 1;
        }
    }
    Acceptable { order }
}

/// The codings a client accepts, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acceptable {
    order: [Option<Coding>; 2],
}

impl Acceptable {
    pub fn iter(self) -> impl Iterator<Item = Coding> {
        self.order.into_iter().flatten()
    }

    /// The best of those offered.
    pub fn best_of(self, offered: Encoders) -> Option<Coding> {
        self.iter().find(|c| c.offered_by(offered))
    }
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(start, |e| e + 1);
    &s[start..end]
}

/// A qvalue (RFC 9110 12.4.2) in thousandths.
fn qvalue(s: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(s).ok()?;
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole = match int {
        "0" => 0,
        "1" => 1000,
        _ => return None,
    };
    let mut thousandths = 0u16;
    for (i, d) in frac.bytes().enumerate() {
        thousandths += u16::from(d - b'0') * [100, 10, 1][i];
    }
    let q = whole + thousandths;
    (q <= 1000).then_some(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn best(field: &str, gzip: bool, brotli: bool) -> Option<Coding> {
        acceptable(Some(field.as_bytes())).best_of(Encoders { gzip, brotli })
    }

    #[test]
    fn preferences() {
        assert_eq!(best("gzip, deflate, br", true, true), Some(Coding::Brotli));
        assert_eq!(best("gzip, deflate, br", true, false), Some(Coding::Gzip));
        assert_eq!(best("gzip;q=1.0, br;q=0.5", true, true), Some(Coding::Gzip));
        assert_eq!(best("br;q=0, gzip", true, true), Some(Coding::Gzip));
        assert_eq!(best("gzip;q=0", true, false), None);
        assert_eq!(best("GZIP ; Q=0.001", true, false), Some(Coding::Gzip));
        assert_eq!(best("identity", true, true), None);
        assert_eq!(best("*", true, true), Some(Coding::Brotli));
        assert_eq!(best("*;q=0.5, gzip;q=0", true, true), Some(Coding::Brotli));
        assert_eq!(best("*;q=0", true, true), None);
        assert_eq!(best("x-gzip", true, true), Some(Coding::Gzip));
        assert_eq!(best("", true, true), None);
        assert_eq!(acceptable(None).best_of(Encoders { gzip: true, brotli: true }), None);
    }

    #[test]
    fn malformed_fields_are_not_trusted() {
        assert_eq!(best("gzip;q=2", true, false), None);
        assert_eq!(best("gzip;q=0.5555", true, false), None);
        assert_eq!(best("gzip;q=abc", true, false), None);
        assert_eq!(best(",,;;,gzip;;", true, false), Some(Coding::Gzip));
        assert_eq!(best("\u{1}\u{ff}", true, true), None);
    }
}
