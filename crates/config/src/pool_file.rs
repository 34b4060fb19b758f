//! `PoolFile PATH`: a php-fpm pool file (Debian's
//! `/etc/php/8.2/fpm/pool.d/www.conf`, say) used as it is. Each `[name]`
//! section becomes a `<Pool name>` read by [`parse_pool`], its `key = value`
//! lines as directives at their own file and line; php-fpm's `$pool` stands
//! for the section's name. Its pools run php-fpm where it is installed (the
//! version of the file's directory), else php-cgi. What such a pool does not
//! act on (where php-fpm listens; with php-cgi, its access log, chdir...)
//! is a warning at its line, not an error: the file was written for php-fpm.

use std::path::Path;
use std::sync::Arc;

use crate::parse::{ConfigError, Directive, Node, Origin, Section};
use crate::pool::{find_php_fpm, parse_pool, PoolConfig};

const MAX_POOL_FILE: u64 = 1 << 20;

/// The pools of the php-fpm pool file at `path`, or nothing (with errors).
pub fn read_pool_file(path: &Path, at: &Origin, errors: &mut Vec<ConfigError>, warnings: &mut Vec<ConfigError>) -> Vec<PoolConfig> {
    // A pool file is a few kilobytes: one past this is not one (/dev/zero).
    let mut bytes = Vec::new();
    let read = std::fs::File::open(path).and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, MAX_POOL_FILE + 1), &mut bytes));
    if let Err(e) = read {
        errors.push(ConfigError { origin: at.clone(), message: format!("PoolFile: cannot read {}: {e}", path.display()) });
        return Vec::new();
    }
    if bytes.len() as u64 > MAX_POOL_FILE {
        errors.push(ConfigError { origin: at.clone(), message: format!("PoolFile: {} is larger than {MAX_POOL_FILE} bytes: not a pool file", path.display()) });
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let file = Arc::new(path.to_path_buf());
    let mut sections: Vec<Section> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let origin = Origin { file: file.clone(), line: i + 1 };
        let line = line.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            sections.push(Section { name: "Pool".into(), args: vec![name.trim().to_string()], origin, children: Vec::new() });
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            errors.push(ConfigError { origin, message: format!("'{line}' is neither [pool] nor key = value") });
            continue;
        };
        let key = key.trim();
        match sections.last_mut() {
            Some(sec) if !sec.args[0].eq_ignore_ascii_case("global") => {
                let value = ini_value(value).replace("$pool", &sec.args[0]);
                sec.children.push(Node::Directive(Directive { name: key.to_string(), args: vec![value], origin }));
            }
            _ => warnings.push(ConfigError { origin, message: format!("{key}: a setting of php-fpm's [global] section; warren's pools have none, it is ignored") }),
        }
    }
    sections.retain(|s| !s.args[0].eq_ignore_ascii_case("global"));
    // The file is php-fpm's: its pools run php-fpm where it is installed.
    if let Some(fpm) = php_fpm_for(path) {
        for sec in &mut sections {
            let command = Directive { name: "Command".into(), args: vec![fpm.to_string_lossy().into_owned()], origin: sec.origin.clone() };
            sec.children.insert(0, Node::Directive(command));
        }
    }
    if sections.is_empty() && errors.is_empty() {
        warnings.push(ConfigError { origin: at.clone(), message: format!("PoolFile: {} defines no pool", path.display()) });
    }
    sections.iter().filter_map(|s| parse_pool(s, false, errors, warnings)).collect()
}

/// The php-fpm of the file's directory's version
/// (`/etc/php/8.2/fpm/pool.d/` is php-fpm8.2's) if there is one.
fn php_fpm_for(pool_file: &Path) -> Option<std::path::PathBuf> {
    let version = pool_file.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).skip_while(|c| c != "php").nth(1);
    find_php_fpm(version.as_deref())
}

/// An INI value: a double-quoted string, or the text before a `;` comment.
fn ini_value(raw: &str) -> String {
    let v = raw.trim();
    match v.strip_prefix('"').and_then(|r| r.split_once('"')) {
        Some((quoted, _)) => quoted.to_string(),
        None => v.split(';').next().unwrap_or("").trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ini_values() {
        assert_eq!(ini_value(" dynamic "), "dynamic");
        assert_eq!(ini_value(" 5 ; at most"), "5");
        assert_eq!(ini_value(r#" "a; b" ; c"#), "a; b");
        assert_eq!(ini_value(" /usr/sbin/sendmail -t -i"), "/usr/sbin/sendmail -t -i");
        assert_eq!(ini_value(""), "");
    }
}
