//! mod_expires' times: `ExpiresByType` and `ExpiresDefault` values, in the
//! long form (`"access plus 1 month 2 days"`, `now` = `access`,
//! `modification`) or the short one (`A3600`, `M3600`), read into an
//! [`ExpiresRule`].

/// What the time is counted from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpiresBase {
    /// The time of the request.
    Access,
    /// The file's modification time (responses without one get nothing).
    Modification,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpiresRule {
    pub base: ExpiresBase,
    pub seconds: u64,
}

impl ExpiresRule {
    pub fn parse(text: &str) -> Result<ExpiresRule, String> {
        let t = text.trim();
        if let Some(code) = t.get(..1).filter(|c| c.eq_ignore_ascii_case("a") || c.eq_ignore_ascii_case("m")) {
            if let Ok(seconds) = t[1..].parse::<u64>() {
                let base = if code.eq_ignore_ascii_case("a") { ExpiresBase::Access } else { ExpiresBase::Modification };
                return Ok(ExpiresRule { base, seconds });
            }
        }
        let mut words = t.split_whitespace();
        let base = match words.next().map(str::to_ascii_lowercase).as_deref() {
            Some("access" | "now") => ExpiresBase::Access,
            Some("modification") => ExpiresBase::Modification,
            _ => return Err(format!("'{text}': expected A<seconds>, M<seconds> or \"access|now|modification [plus] <num> <type>...\"")),
        };
        let mut words = words.peekable();
        words.next_if(|w| w.eq_ignore_ascii_case("plus"));
        let mut seconds: u64 = 0;
        let mut any = false;
        while let Some(n) = words.next() {
            let n: u64 = n.parse().map_err(|_| format!("'{text}': '{n}' is not a number"))?;
            let unit = words.next().ok_or_else(|| format!("'{text}': {n} has no unit"))?;
            let per = match unit.to_ascii_lowercase().trim_end_matches('s') {
                "year" => 365 * 86400,
                "month" => 30 * 86400,
                "week" => 7 * 86400,
                "day" => 86400,
                "hour" => 3600,
                "minute" => 60,
                "second" => 1,
                _ => return Err(format!("'{text}': unknown unit '{unit}' (years, months, weeks, days, hours, minutes, seconds)")),
            };
            seconds = n.checked_mul(per).and_then(|s| seconds.checked_add(s)).ok_or_else(|| format!("'{text}': too far in the future"))?;
            any = true;
        }
        if !any {
            return Err(format!("'{text}': no time given after the base"));
        }
        Ok(ExpiresRule { base, seconds })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_and_short_forms() {
        let a = |s: &str| ExpiresRule::parse(s).unwrap();
        assert_eq!(a("access plus 1 month"), ExpiresRule { base: ExpiresBase::Access, seconds: 30 * 86400 });
        assert_eq!(a("now plus 1 hour 30 minutes"), ExpiresRule { base: ExpiresBase::Access, seconds: 5400 });
        assert_eq!(a("modification 2 days"), ExpiresRule { base: ExpiresBase::Modification, seconds: 172800 });
        assert_eq!(a("A3600"), ExpiresRule { base: ExpiresBase::Access, seconds: 3600 });
        assert_eq!(a("M60"), ExpiresRule { base: ExpiresBase::Modification, seconds: 60 });
        assert_eq!(a("access plus 1 year"), ExpiresRule { base: ExpiresBase::Access, seconds: 365 * 86400 });
    }

    #[test]
    fn mistakes() {
        for bad in ["later", "access plus", "access plus 1", "access plus one day", "access plus 1 fortnight", "X3600"] {
            assert!(ExpiresRule::parse(bad).is_err(), "{bad}");
        }
    }
}
