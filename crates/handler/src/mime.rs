//! File extension -> MIME type, from TypesConfig (default /etc/mime.types)
//! or, where there is none, a built-in table of the common types; and
//! what every extension of a file's name says of it, as mod_mime's
//! find_ct reads a name ([`MimeTypes::typing`]).

use std::collections::HashMap;
use std::path::Path;

use warren_config::mime::ExtAttr;

use crate::dir_config::Effective;

/// What a file's name (and ForceType, DefaultLanguage) says of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Typing {
    /// The media type, without the charset AddCharset gives.
    pub media_type: Option<String>,
    pub charset: Option<String>,
    /// Content-Encoding: several in the order of the name, joined by `, `.
    pub encoding: Option<String>,
    pub languages: Vec<String>,
    /// An extension makes it a type map (`AddHandler type-map`).
    pub type_map: bool,
    /// The parts of the name no extension mapping claimed, the base name
    /// first (mod_mime's exception list, which MultiViews matches).
    pub unclaimed: Vec<String>,
    /// Some extension said something (mod_mime's found_metadata).
    pub found_metadata: bool,
}

/// The fields of a representation a file's name gives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    pub content_language: Option<String>,
}

impl Fields {
    /// Adds them to `r`, with `content_type` in place of the name's type
    /// (mod_rewrite's `[T=]`), the encoding named as the client names it.
    pub fn add_to(&self, r: &mut crate::Response, content_type: Option<String>, head: &warren_http::RequestHead) {
        if let Some(t) = content_type {
            r.add("Content-Type", t);
        }
        if let Some(e) = &self.content_encoding {
            r.add("Content-Encoding", crate::negotiation::as_client_names(e, head));
        }
        if let Some(l) = &self.content_language {
            r.add("Content-Language", l.clone());
        }
    }
}

impl Typing {
    /// The fields to send, with AddDefaultCharset's charset (`default_charset`)
    /// on text/html and text/plain that have none, as Apache's core adds it.
    pub fn fields(&self, default_charset: Option<&str>) -> Fields {
        let content_type = self.content_type().map(|t| match default_charset {
            Some(cs) if t == "text/html" || t == "text/plain" => format!("{t}; charset={cs}"),
            _ => t,
        });
        Fields { content_type, content_encoding: self.encoding.clone(), content_language: self.content_language() }
    }

    /// The Content-Type field: the media type with AddCharset's charset.
    pub fn content_type(&self) -> Option<String> {
        let t = self.media_type.as_deref()?;
        Some(match &self.charset {
            Some(cs) => {
                // A charset AddCharset gives replaces one the type had.
                let essence = t.split(';').filter(|p| !p.trim().to_ascii_lowercase().starts_with("charset=")).collect::<Vec<_>>().join(";");
                format!("{essence}; charset={cs}")
            }
            None => t.to_string(),
        })
    }

    /// Content-Language, languages joined as Apache joins them.
    pub fn content_language(&self) -> Option<String> {
        (!self.languages.is_empty()).then(|| self.languages.join(", "))
    }
}

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
        self.lookup_ext(ext, overrides)
    }
}

impl MimeTypes {
    /// mod_mime's reading of a name: each extension after the base name
    /// (leading dots are part of it: `.png` is no PNG), in order, may give
    /// the type (the last that has one wins; AddType's before TypesConfig's),
    /// a charset (the last), a language (each adds), an encoding (each
    /// adds, in order) or mark a type map; an extension saying nothing is
    /// kept in `unclaimed` (MultiviewsMatch Any claims every one, Handlers
    /// those a script line names).
    pub fn typing(&self, file_name: &[u8], eff: &Effective) -> Typing {
        let name = String::from_utf8_lossy(file_name);
        let (base, rest) = split_name(&name);
        let mut t = Typing { unclaimed: vec![base.to_string()], ..Typing::default() };
        let matching = eff.multiviews_match();
        let typed_beyond = eff.has_ext_attrs();
        for ext in extensions(rest) {
            let lower = lower_case(ext);
            let lower = lower.as_ref();
            let mut found = false;
            if let Some(ty) = self.lookup_ext(lower, eff.add_types()) {
                t.media_type = Some(ty.to_string());
                found = true;
            }
            if typed_beyond {
                if let Some(cs) = eff.ext_attr(ExtAttr::Charset, lower) {
                    t.charset = Some(cs.to_string());
                    found = true;
                }
                if let Some(lang) = eff.ext_attr(ExtAttr::Language, lower) {
                    t.languages.push(lang.to_string());
                    found = true;
                }
                if let Some(enc) = eff.ext_attr(ExtAttr::Encoding, lower) {
                    t.encoding = Some(match t.encoding.take() {
                        Some(before) => format!("{before}, {enc}"),
                        None => enc.to_string(),
                    });
                    found = true;
                }
                if eff.ext_attr(ExtAttr::TypeMap, lower).is_some() {
                    t.type_map = true;
                    found = matching.handlers;
                }
            }
            if matching.handlers && eff.layers.iter().flat_map(|l| l.scripts.iter()).any(|m| m.extensions.as_ref().is_some_and(|e| e.iter().any(|x| x == lower))) {
                found = true;
            }
            if found || matching.any {
                t.found_metadata = true;
            } else {
                t.unclaimed.push(ext.to_string());
            }
        }
        if typed_beyond {
            if let Some(forced) = eff.force_type() {
                t.media_type = Some(forced.to_string());
            }
            if t.languages.is_empty() {
                if let Some(lang) = eff.default_language() {
                    t.languages.push(lang.to_string());
                }
            }
        }
        t
    }

    /// [`Typing::media_type`] alone, as [`MimeTypes::typing`] finds it,
    /// without building the rest (asked for every static file).
    pub fn media_type<'a>(&'a self, file_name: &[u8], eff: &'a Effective) -> Option<&'a str> {
        if let Some(forced) = eff.force_type() {
            return Some(forced);
        }
        // The last extension that has a type wins: read from the end, on
        // the bytes (this runs for every static file; a name that is not
        // UTF-8 reads as `typing`'s lossy copy of it would).
        let rest = split_name_bytes(file_name).1;
        rest.rsplit(|&b| b == b'.').filter(|e| !e.is_empty()).find_map(|ext| match std::str::from_utf8(ext) {
            Ok(ext) => self.lookup_ext(&lower_case(ext), eff.add_types()),
            Err(_) => self.lookup_ext(&lower_case(&String::from_utf8_lossy(ext)), eff.add_types()),
        })
    }

    /// [`Typing::type_map`] alone, as [`MimeTypes::typing`] finds it: an
    /// extension `AddHandler type-map` names.
    pub fn names_type_map(&self, file_name: &[u8], eff: &Effective) -> bool {
        if !eff.has_ext_attrs() {
            return false;
        }
        let name = String::from_utf8_lossy(file_name);
        let (_, rest) = split_name(&name);
        let named = extensions(rest).any(|ext| eff.ext_attr(ExtAttr::TypeMap, &lower_case(ext)).is_some());
        named
    }

    /// The type of one extension (lower case): that of the most specific
    /// AddType for it (none where that is a RemoveType, empty), else
    /// TypesConfig's.
    fn lookup_ext<'a>(&'a self, ext: &str, mut overrides: impl Iterator<Item = &'a (String, String)>) -> Option<&'a str> {
        match overrides.find(|(e, _)| e == ext) {
            Some((_, t)) => Some(t.as_str()).filter(|t| !t.is_empty()),
            None => self.by_ext.get(ext).map(String::as_str),
        }
    }
}

/// A name's base and what follows its first dot after any leading dots
/// (`.png` is a base name, not an extension).
fn split_name(name: &str) -> (&str, &str) {
    let skip = name.len() - name.trim_start_matches('.').len();
    match name[skip..].find('.') {
        Some(i) => (&name[..skip + i], &name[skip + i + 1..]),
        None => (name, ""),
    }
}

/// [`split_name`] on the bytes of a name.
fn split_name_bytes(name: &[u8]) -> (&[u8], &[u8]) {
    let skip = name.iter().position(|&b| b != b'.').unwrap_or(name.len());
    match name[skip..].iter().position(|&b| b == b'.') {
        Some(i) => (&name[..skip + i], &name[skip + i + 1..]),
        None => (name, b""),
    }
}

/// The extensions after the base name, in order.
fn extensions(rest: &str) -> impl Iterator<Item = &str> {
    rest.split('.').filter(|e| !e.is_empty())
}

/// An extension in lower case, copied only when it has capitals.
fn lower_case(ext: &str) -> std::borrow::Cow<'_, str> {
    if ext.bytes().any(|b| b.is_ascii_uppercase()) {
        std::borrow::Cow::Owned(ext.to_ascii_lowercase())
    } else {
        std::borrow::Cow::Borrowed(ext)
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

    fn site_dir(lines: &[(ExtAttr, &str, &str)], types: &[(&str, &str)]) -> warren_config::DirConfig {
        let mut dir = warren_config::DirConfig::default();
        dir.mime.by_ext = lines.iter().map(|(a, e, v)| (*a, e.to_string(), v.to_string())).collect();
        dir.add_types = types.iter().map(|(e, t)| (e.to_string(), t.to_string())).collect();
        dir
    }

    fn effective(dir: &warren_config::DirConfig) -> Effective<'_> {
        Effective::of_host(dir)
    }

    #[test]
    fn every_extension_counts_as_in_mod_mime() {
        let m = MimeTypes { by_ext: BUILTIN.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect() };
        let dir = site_dir(&[(ExtAttr::Language, "en", "en"), (ExtAttr::Language, "fr", "fr"), (ExtAttr::Encoding, "gz", "x-gzip"), (ExtAttr::Charset, "utf8", "UTF-8"), (ExtAttr::TypeMap, "var", "type-map")], &[]);
        let eff = effective(&dir);
        let t = m.typing(b"page.html.en", &eff);
        assert_eq!((t.media_type.as_deref(), t.languages.as_slice()), (Some("text/html"), &["en".to_string()][..]));
        assert_eq!(t.unclaimed, ["page"]);
        // Any order; the type of the last extension that has one.
        let t = m.typing(b"page.fr.html", &eff);
        assert_eq!((t.media_type.as_deref(), t.content_language().as_deref()), (Some("text/html"), Some("fr")));
        let t = m.typing(b"file.tar.gz", &eff);
        assert_eq!((t.media_type.as_deref(), t.encoding.as_deref()), (Some("application/gzip"), Some("x-gzip")));
        let t = m.typing(b"notes.txt.utf8", &eff);
        assert_eq!(t.fields(Some("iso-8859-1")).content_type.as_deref(), Some("text/plain; charset=UTF-8"));
        // What no mapping claims is kept, in order; leading dots are the base's.
        let t = m.typing(b"index.foo.html.bar", &eff);
        assert_eq!(t.unclaimed, ["index", "foo", "bar"]);
        assert_eq!(m.typing(b".png", &eff).media_type, None);
        let t = m.typing(b"HTTP_NOT_FOUND.html.var", &eff);
        assert!(t.type_map && t.unclaimed == ["HTTP_NOT_FOUND", "var"], "{t:?}");
    }

    #[test]
    fn remove_lines_and_force_type() {
        let m = MimeTypes { by_ext: BUILTIN.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect() };
        let parent = site_dir(&[(ExtAttr::Language, "en", "en"), (ExtAttr::Encoding, "gz", "gzip")], &[("html", "text/x-custom")]);
        let mut child = site_dir(&[(ExtAttr::Language, "en", ""), (ExtAttr::Encoding, "gz", "")], &[("html", "")]);
        child.mime.default_language = Some("de".into());
        let eff = Effective { layers: vec![crate::dir_config::Layer::Site(&parent), crate::dir_config::Layer::Site(&child)], ..effective(&parent) };
        let t = m.typing(b"a.gz.en.html", &eff);
        assert_eq!((t.media_type.as_deref(), t.encoding.as_deref(), t.languages.as_slice()), (Some("application/gzip"), None, &["de".to_string()][..]), "RemoveType .html leaves it no type");
        child.mime.force_type = Some(Some("text/plain".into()));
        let eff = Effective { layers: vec![crate::dir_config::Layer::Site(&parent), crate::dir_config::Layer::Site(&child)], ..effective(&parent) };
        assert_eq!(m.typing(b"a.png", &eff).media_type.as_deref(), Some("text/plain"));
    }

    #[test]
    fn the_type_alone_and_the_type_map_alone_read_the_name_as_typing_does() {
        let m = MimeTypes { by_ext: BUILTIN.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect() };
        let marked = site_dir(&[(ExtAttr::Language, "en", "en"), (ExtAttr::Encoding, "gz", "x-gzip"), (ExtAttr::TypeMap, "var", "type-map")], &[("html", "text/x-custom"), ("css", "")]);
        let plain = site_dir(&[], &[]);
        let mut forced = site_dir(&[], &[]);
        forced.mime.force_type = Some(Some("text/plain".into()));
        let mut unforced = site_dir(&[], &[]);
        unforced.mime.force_type = Some(None);
        let names: [&[u8]; 14] = [b"index.html", b"INDEX.HTML", b"a.tar.gz", b"page.html.en", b"x.var", b"x.VAR.en", b"HTTP_NOT_FOUND.html.var", b".png", b"..a.png", b"noext", b"a..png", b"a.css", b"a.png.css", b"caf\xc3\xa9.\xff.png"];
        let layers = [vec![&marked], vec![&plain], vec![&forced], vec![&forced, &unforced], vec![&marked, &forced]];
        for dirs in layers {
            let eff = Effective { layers: dirs.iter().map(|d| crate::dir_config::Layer::Site(d)).collect(), ..effective(dirs[0]) };
            for name in names {
                let t = m.typing(name, &eff);
                assert_eq!(m.media_type(name, &eff), t.media_type.as_deref(), "{}", String::from_utf8_lossy(name));
                assert_eq!(m.names_type_map(name, &eff), t.type_map, "{}", String::from_utf8_lossy(name));
            }
        }
        let eff = effective(&marked);
        assert!(m.names_type_map(b"x.VAR.en", &eff), "extensions are read in lower case");
        assert_eq!(m.media_type(b"a.png.css", &eff), Some("image/png"), "RemoveType: the type of the last extension that has one");
    }
}
