//! RewriteMap: `txt:` (a file of `key value` lines, read again when it
//! changes, as Apache's map cache does), `rnd:` (the same, a value chosen
//! at random among `a|b|c`) and `int:` (tolower, toupper, escape,
//! unescape). Maps that run programs or query databases (`prg:`, `dbm:`,
//! `dbd:`) are refused when the configuration is read.

use std::collections::HashMap;
use std::path::PathBuf;

use warren_stat_cache::{FileVersion, StatCache};

use crate::escape;

#[derive(Debug)]
pub enum RewriteMap {
    Txt(FileMap),
    Rnd(FileMap),
    Int(Internal),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Internal {
    ToLower,
    ToUpper,
    Escape,
    Unescape,
}

/// A map file, parsed once per version.
#[derive(Debug)]
pub struct FileMap {
    pub path: PathBuf,
    /// Its one entry: the file's pairs as last read.
    parsed: StatCache<HashMap<String, String>>,
}

/// Larger map files are refused rather than read into memory.
const MAX_MAP_FILE: u64 = 16 << 20;

impl RewriteMap {
    /// `type:source` as RewriteMap's second argument.
    pub fn parse(source: &str, resolve: impl Fn(&str) -> PathBuf) -> Result<RewriteMap, String> {
        let (kind, arg) = source.split_once(':').ok_or_else(|| format!("RewriteMap: bad map type:source '{source}'"))?;
        let file = |arg: &str| -> Result<FileMap, String> {
            let path = resolve(arg);
            if !path.is_file() {
                return Err(format!("RewriteMap: file for map not found: {}", path.display()));
            }
            Ok(FileMap { path, parsed: StatCache::of_entries(1) })
        };
        match kind.to_ascii_lowercase().as_str() {
            "txt" => Ok(RewriteMap::Txt(file(arg)?)),
            "rnd" => Ok(RewriteMap::Rnd(file(arg)?)),
            "int" => Ok(RewriteMap::Int(match arg {
                "tolower" => Internal::ToLower,
                "toupper" => Internal::ToUpper,
                "escape" => Internal::Escape,
                "unescape" => Internal::Unescape,
                _ => return Err(format!("RewriteMap: internal map not found: {arg} (warren has tolower, toupper, escape, unescape)")),
            })),
            "prg" | "dbm" | "dbd" | "fastdbd" => Err(format!("RewriteMap: {kind}: maps are not supported by warren (txt:, rnd: and int: are)")),
            _ => Err(format!("RewriteMap: unknown map type '{kind}'")),
        }
    }

    /// The value for `key`, None when the map has none. `pick` chooses
    /// among a `rnd:` value's alternatives (given how many there are).
    pub fn lookup(&self, key: &str, pick: impl FnOnce(usize) -> usize) -> Option<String> {
        match self {
            RewriteMap::Int(f) => Some(match f {
                Internal::ToLower => key.to_ascii_lowercase(),
                Internal::ToUpper => key.to_ascii_uppercase(),
                Internal::Escape => escape::escape_uri(key),
                Internal::Unescape => escape::unescape(key),
            }),
            RewriteMap::Txt(m) => m.get(key),
            RewriteMap::Rnd(m) => {
                let v = m.get(key)?;
                let parts: Vec<&str> = v.split('|').collect();
                let i = pick(parts.len()).min(parts.len() - 1);
                Some(parts[i].to_string())
            }
        }
    }
}

impl FileMap {
    fn get(&self, key: &str) -> Option<String> {
        let meta = std::fs::metadata(&self.path).ok()?;
        let version = FileVersion::of(&meta);
        if let Some(found) = self.parsed.get_with(&self.path, &version, |pairs| pairs.get(key).cloned()) {
            return found;
        }
        if meta.len() > MAX_MAP_FILE {
            return None;
        }
        let text = std::fs::read(&self.path).ok()?;
        let pairs = parse_map_text(&String::from_utf8_lossy(&text));
        let found = pairs.get(key).cloned();
        self.parsed.insert(self.path.clone(), version, pairs);
        found
    }
}

/// `key value` lines; `#` starts a comment; the first of a repeated key wins
/// (Apache scans the file and stops at the first match).
fn parse_map_text(text: &str) -> HashMap<String, String> {
    let mut m = HashMap::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        if let (Some(k), Some(v)) = (words.next(), words.next()) {
            m.entry(k.to_string()).or_insert_with(|| v.to_string());
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_maps_are_read_again_when_they_change() {
        let dir = std::env::temp_dir().join(format!("warren-rewrite-map-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("m.txt");
        std::fs::write(&file, "# comment\nalpha /a\nbeta /b # trailing\nalpha /dup\n").unwrap();
        let m = RewriteMap::parse(&format!("txt:{}", file.display()), |s: &str| PathBuf::from(s)).unwrap();
        assert_eq!(m.lookup("alpha", |_| 0).as_deref(), Some("/a"));
        assert_eq!(m.lookup("beta", |_| 0).as_deref(), Some("/b"));
        assert_eq!(m.lookup("gamma", |_| 0), None);
        std::fs::write(&file, "alpha /changed-and-longer\n").unwrap();
        assert_eq!(m.lookup("alpha", |_| 0).as_deref(), Some("/changed-and-longer"));
        std::fs::write(&file, "k a|b|c\n").unwrap();
        let r = RewriteMap::parse(&format!("rnd:{}", file.display()), |s: &str| PathBuf::from(s)).unwrap();
        assert_eq!(r.lookup("k", |n| n - 1).as_deref(), Some("c"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn internal_maps_and_refusals() {
        let m = RewriteMap::parse("int:tolower", |s: &str| PathBuf::from(s)).unwrap();
        assert_eq!(m.lookup("WwW.Example", |_| 0).as_deref(), Some("www.example"));
        let m = RewriteMap::parse("int:unescape", |s: &str| PathBuf::from(s)).unwrap();
        assert_eq!(m.lookup("a%20b", |_| 0).as_deref(), Some("a b"));
        assert!(RewriteMap::parse("int:nope", |s: &str| PathBuf::from(s)).unwrap_err().contains("internal map not found"));
        assert!(RewriteMap::parse("prg:/bin/cat", |s: &str| PathBuf::from(s)).unwrap_err().contains("not supported"));
        assert!(RewriteMap::parse("txt:/nonexistent/map", |s: &str| PathBuf::from(s)).unwrap_err().contains("not found"));
    }
}
