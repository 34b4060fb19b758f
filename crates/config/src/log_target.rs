//! Where a log goes when it is not a file: a piped-log program
//! (`CustomLog "|program"`, `ErrorLog "|program"`) or syslog
//! (`ErrorLog syslog[:facility]`), parsed as Apache reads them.

/// A program the parent starts and whose standard input receives the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipedProgram {
    /// The argument as written (`|/usr/bin/rotatelogs ...`): it names the
    /// log in messages, and two logs naming the same program share it.
    pub spec: String,
    /// What is executed: `/bin/sh -c command` for `|command` and
    /// `|$command`, the words of the command for `||command`.
    pub argv: Vec<String>,
}

/// An ErrorLog that is not a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogSink {
    Pipe(PipedProgram),
    /// A syslog facility's code (RFC 5424 section 6.2.1: local7 is 23).
    Syslog(u8),
}

/// Apache's default facility, local7.
pub const DEFAULT_FACILITY: u8 = 23;

const FACILITIES: [(&str, u8); 20] = [
    ("kern", 0),
    ("user", 1),
    ("mail", 2),
    ("daemon", 3),
    ("auth", 4),
    ("syslog", 5),
    ("lpr", 6),
    ("news", 7),
    ("uucp", 8),
    ("cron", 9),
    ("authpriv", 10),
    ("ftp", 11),
    ("local0", 16),
    ("local1", 17),
    ("local2", 18),
    ("local3", 19),
    ("local4", 20),
    ("local5", 21),
    ("local6", 22),
    ("local7", 23),
];

/// `|command`, `|$command` (through the shell, Apache 2.4's default) or
/// `||command` (executed directly); None when `spec` names a file.
pub fn piped_program(spec: &str) -> Option<Result<PipedProgram, String>> {
    let rest = spec.strip_prefix('|')?;
    let argv = if let Some(direct) = rest.strip_prefix('|') {
        match shlex::split(direct) {
            Some(words) if !words.is_empty() => words,
            _ => return Some(Err(format!("piped log '{spec}': no program, or an unbalanced quote, after ||"))),
        }
    } else {
        let command = rest.strip_prefix('$').unwrap_or(rest).trim();
        if command.is_empty() {
            return Some(Err(format!("piped log '{spec}': no program after |")));
        }
        vec!["/bin/sh".to_string(), "-c".to_string(), command.to_string()]
    };
    Some(Ok(PipedProgram { spec: spec.to_string(), argv }))
}

/// `syslog` or `syslog:facility`; None when `spec` is not syslog.
pub fn syslog_facility(spec: &str) -> Option<Result<u8, String>> {
    let rest = spec.strip_prefix("syslog")?;
    let name = match rest.strip_prefix(':') {
        Some(n) => n,
        None if rest.is_empty() => return Some(Ok(DEFAULT_FACILITY)),
        // `syslogs.log` is a file.
        None => return None,
    };
    Some(match FACILITIES.iter().find(|(f, _)| f.eq_ignore_ascii_case(name)) {
        Some(&(_, code)) => Ok(code),
        None if name.contains(':') => Err(format!("ErrorLog {spec}: syslog:facility:tag (a module's tag) is not supported; write syslog:{}", name.split(':').next().unwrap_or(""))),
        None => Err(format!("ErrorLog {spec}: unknown syslog facility '{name}' (kern user mail daemon auth syslog lpr news uucp cron authpriv ftp local0-local7)")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes() {
        let shell = piped_program("|/usr/bin/rotatelogs /var/log/x.%Y 86400").unwrap().unwrap();
        assert_eq!(shell.argv, ["/bin/sh", "-c", "/usr/bin/rotatelogs /var/log/x.%Y 86400"]);
        assert_eq!(piped_program("|$cat >>/tmp/l").unwrap().unwrap().argv, ["/bin/sh", "-c", "cat >>/tmp/l"]);
        let direct = piped_program("||/usr/bin/logger -t 'my site'").unwrap().unwrap();
        assert_eq!(direct.argv, ["/usr/bin/logger", "-t", "my site"]);
        assert_eq!(direct.spec, "||/usr/bin/logger -t 'my site'");
        assert!(piped_program("/var/log/a|b").is_none());
        assert!(piped_program("|").unwrap().is_err());
        assert!(piped_program("||").unwrap().is_err());
        assert!(piped_program("||a 'b").unwrap().is_err());
    }

    #[test]
    fn facilities() {
        assert_eq!(syslog_facility("syslog"), Some(Ok(23)));
        assert_eq!(syslog_facility("syslog:daemon"), Some(Ok(3)));
        assert_eq!(syslog_facility("syslog:LOCAL0"), Some(Ok(16)));
        assert!(syslog_facility("syslog:nope").unwrap().is_err());
        assert!(syslog_facility("syslog:local1:mod_x").unwrap().is_err());
        assert!(syslog_facility("syslogs.log").is_none());
        assert!(syslog_facility("/var/log/syslog").is_none());
    }
}
