//! File extension -> MIME type, from TypesConfig (default /etc/mime.types)
//! or, where there is none, a built-in table of the common types.

use std::collections::HashMap;
use std::path::Path;

const BUILTIN: &[(&str, &str)] = &[
    ("html", "text/html"),
    ("htm", "text/html"),
    ("css", "text/css"),
    ("js", "text/javascript"),
    ("mjs", "text/javascript"),
    ("json", "application/json"),
    ("txt", "text/plain"),
    ("xml", "application/xml"),
    ("svg", "image/svg+xml"),
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
    ("avif", "image/avif"),
    ("ico", "image/vnd.microsoft.icon"),
    ("woff", "font/woff"),
    ("woff2", "font/woff2"),
    ("ttf", "font/ttf"),
    ("otf", "font/otf"),
    ("pdf", "application/pdf"),
    ("zip", "application/zip"),
    ("gz", "application/gzip"),
    ("tar", "application/x-tar"),
    ("wasm", "application/wasm"),
    ("mp4", "video/mp4"),
    ("webm", "video/webm"),
    ("mp3", "audio/mpeg"),
    ("ogg", "audio/ogg"),
    ("wav", "audio/wav"),
    ("csv", "text/csv"),
    ("md", "text/markdown"),
];

pub struct MimeTypes {
    by_ext: HashMap<String, String>,
}

impl MimeTypes {
    /// Reads `path` in mime.types format: `type ext1 ext2 ...`, `#` comments.
    pub fn load(path: Option<&Path>) -> std::io::Result<MimeTypes> {
        let default = Path::new("/etc/mime.types");
        let path = match path {
            Some(p) => Some(p),
            None if default.is_file() => Some(default),
            None => None,
        };
        let mut by_ext = HashMap::new();
        match path {
            Some(p) => {
                let text = std::fs::read_to_string(p)?;
                for line in text.lines() {
                    let line = line.split('#').next().unwrap_or("");
                    let mut words = line.split_whitespace();
                    let Some(mime) = words.next() else { continue };
                    for ext in words {
                        by_ext.insert(ext.to_ascii_lowercase(), mime.to_string());
                    }
                }
            }
            None => {
                for (ext, mime) in BUILTIN {
                    by_ext.insert(ext.to_string(), mime.to_string());
                }
            }
        }
        Ok(MimeTypes { by_ext })
    }

    /// The type for a file name's last extension, checking `overrides`
    /// (AddType, in priority order: the first match wins) first.
    pub fn lookup<'a>(&'a self, file_name: &[u8], overrides: impl Iterator<Item = &'a (String, String)>) -> Option<&'a str> {
        let dot = file_name.iter().rposition(|&b| b == b'.')?;
        let ext = &file_name[dot + 1..];
        if ext.is_empty() || ext.len() > 32 {
            return None;
        }
        let mut lower = [0u8; 32];
        lower[..ext.len()].copy_from_slice(ext);
        lower[..ext.len()].make_ascii_lowercase();
        let ext = std::str::from_utf8(&lower[..ext.len()]).ok()?;
        for (e, t) in overrides {
            if e == ext {
                return Some(t);
            }
        }
        self.by_ext.get(ext).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_and_overrides() {
        let m = MimeTypes { by_ext: BUILTIN.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect() };
        assert_eq!(m.lookup(b"a.HTML", [].iter()), Some("text/html"));
        assert_eq!(m.lookup(b"archive.tar.gz", [].iter()), Some("application/gzip"));
        assert_eq!(m.lookup(b"noext", [].iter()), None);
        let o = [("html".to_string(), "text/x-custom".to_string())];
        assert_eq!(m.lookup(b"a.html", o.iter()), Some("text/x-custom"));
    }

    #[test]
    fn mime_types_file_format() {
        let p = std::env::temp_dir().join(format!("warren-mime-{}", std::process::id()));
        std::fs::write(&p, "# comment\ntext/x-foo foo bar\n\napplication/x-empty\n").unwrap();
        let m = MimeTypes::load(Some(&p)).unwrap();
        assert_eq!(m.lookup(b"x.bar", [].iter()), Some("text/x-foo"));
        assert_eq!(m.lookup(b"x.html", [].iter()), None);
        std::fs::remove_file(p).unwrap();
    }
}
