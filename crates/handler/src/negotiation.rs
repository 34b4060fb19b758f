//! mod_negotiation's server-driven algorithm, as Apache 2.4 runs it
//! (`is_variant_better`, not RFC 2296's RVSA): the request's Accept,
//! Accept-Language, Accept-Charset and Accept-Encoding ([`Accepts`]) rate
//! each [`Variant`]; the best is the one with the highest Accept quality
//! times source quality (`qs`), then the better language (quality, then
//! position in Accept-Language or LanguagePriority), then the lower
//! `level` a client did not ask for, the better charset, the better
//! encoding, and last the smaller length. Also the type-map format
//! ([`parse_type_map`]), the Vary of a negotiated answer and the list of
//! variants a 406 shows. multiviews.rs uses them on requests.

use warren_config::mime::ForcePriority;
use warren_http::RequestHead;

use crate::path::html_escape;

/// The type a variant with a handler and no type of its own is given
/// (Apache's CGI_MAGIC_TYPE), which scripts are preferred or avoided by.
pub const SCRIPT_TYPE: &str = "application/x-httpd-cgi";

/// One item of an Accept* field.
#[derive(Clone, Debug, PartialEq)]
struct AcceptItem {
    name: String,
    quality: f32,
    level: f32,
}

/// The Accept* fields of a request, as mod_negotiation reads them.
#[derive(Debug, Default)]
pub struct Accepts {
    accept: Option<Vec<AcceptItem>>,
    /// Some Accept item had an explicit q below 1: wildcards are then
    /// taken at their word (else `*/*` counts 0.01, `type/*` 0.02).
    accept_q: bool,
    encodings: Option<Vec<AcceptItem>>,
    languages: Option<Vec<AcceptItem>>,
    charsets: Option<Vec<AcceptItem>>,
}

/// Apache's atoq: at most three decimals, anything unreadable is 1.
fn quality(v: &str) -> f32 {
    let v = v.trim();
    let Some(rest) = v.strip_prefix('0').or_else(|| v.starts_with('.').then_some(v)) else { return 1.0 };
    let Some(decimals) = rest.strip_prefix('.') else { return 0.0 };
    let mut thousandths = 0u32;
    for (i, c) in decimals.chars().take(3).enumerate() {
        let Some(d) = c.to_digit(10) else { break };
        thousandths += d * [100, 10, 1][i];
    }
    thousandths as f32 / 1000.0
}

/// One item (`name;q=..;level=..;charset=..`), Apache's get_entry;
/// returns the item and its charset parameter.
fn entry(text: &str) -> (AcceptItem, Option<String>) {
    let mut parts = text.split(';');
    let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let mut item = AcceptItem { level: if name == "text/html" { 2.0 } else { 0.0 }, name, quality: 1.0 };
    let mut charset = None;
    for p in parts {
        let Some((k, v)) = p.split_once('=') else { continue };
        let v = v.trim().trim_matches('"').to_ascii_lowercase();
        match k.trim().to_ascii_lowercase().as_str() {
            "q" | "qs" => item.quality = quality(&v),
            "level" => item.level = v.parse::<i32>().unwrap_or(0) as f32,
            "charset" => charset = Some(v),
            _ => {}
        }
    }
    (item, charset)
}

fn items(value: Option<&str>) -> Option<Vec<AcceptItem>> {
    value.map(|v| v.split(',').filter(|i| !i.trim().is_empty()).map(|i| entry(i).0).collect())
}

impl Accepts {
    pub fn of(head: &RequestHead) -> Accepts {
        let field = |name| head.header(name).map(|v| String::from_utf8_lossy(v).into_owned());
        let accept = items(field("accept").as_deref());
        let accept_q = accept.as_ref().is_some_and(|a| a.iter().any(|i| i.quality < 1.0));
        Accepts {
            accept,
            accept_q,
            encodings: items(field("accept-encoding").as_deref()),
            languages: items(field("accept-language").as_deref()),
            charsets: items(field("accept-charset").as_deref()),
        }
    }
}

/// One variant of a negotiated resource.
#[derive(Clone, Debug, Default)]
pub struct Variant {
    /// The file's name beside the resource (MultiViews), or a type map's URI.
    pub name: String,
    /// Lower case, without parameters; empty where unknown.
    pub media_type: String,
    pub level: f32,
    /// `qs` of a type map's Content-Type (1 otherwise).
    pub source_quality: f32,
    pub charset: Option<String>,
    pub languages: Vec<String>,
    pub encoding: Option<String>,
    /// For the last tie-break (smaller wins); None: unknown.
    pub length: Option<u64>,
    /// A type map's inline `Body:`.
    pub body: Option<Vec<u8>>,
    pub description: Option<String>,
    rating: Rating,
}

#[derive(Clone, Copy, Debug, Default)]
struct Rating {
    mime_q: f32,
    mime_stars: u8,
    level_matched: f32,
    lang_q: f32,
    lang_index: Option<usize>,
    charset_q: f32,
    encoding_q: f32,
}

impl Variant {
    /// A variant of `content_type` (parameters and all: `qs`, `level`,
    /// `charset`).
    pub fn of_type(name: String, content_type: &str) -> Variant {
        let (item, charset) = entry(content_type);
        Variant { name, media_type: item.name, level: item.level, source_quality: item.quality, charset, ..Variant::default() }
    }

    fn is_pseudo_html(&self) -> bool {
        self.media_type == "text/html"
    }

    /// The Content-Type to send: the type with its charset.
    pub fn content_type(&self) -> Option<String> {
        if self.media_type.is_empty() {
            return None;
        }
        Some(match &self.charset {
            Some(cs) => format!("{}; charset={cs}", self.media_type),
            None => self.media_type.clone(),
        })
    }
}

/// What the server's configuration adds: LanguagePriority and
/// ForceLanguagePriority; and whether scripts are preferred (a request
/// other than a plain GET: Apache's prefer_scripts).
pub struct Preferences<'a> {
    pub language_priority: &'a [String],
    pub force: ForcePriority,
    pub prefer_scripts: bool,
}

fn mime_match(accept: &AcceptItem, v: &mut Variant) -> bool {
    let a = accept.name.as_str();
    if a == "*" || a == "*/*" {
        v.rating.mime_stars = v.rating.mime_stars.max(1);
        return true;
    }
    if let Some(major) = a.strip_suffix("/*") {
        if v.media_type.strip_prefix(major).is_some_and(|rest| rest.starts_with('/')) {
            v.rating.mime_stars = v.rating.mime_stars.max(2);
            return true;
        }
        return false;
    }
    if a == v.media_type && accept.level >= v.level {
        v.rating.level_matched = v.level;
        v.rating.mime_stars = 3;
        return true;
    }
    false
}

fn set_accept_quality(accepts: &[AcceptItem], accept_q: bool, v: &mut Variant) {
    let mut q = 0.0;
    for a in accepts {
        let before = v.rating.mime_stars;
        if !mime_match(a, v) || before == v.rating.mime_stars {
            continue;
        }
        q = match v.rating.mime_stars {
            1 if !accept_q => 0.01,
            2 if !accept_q => 0.02,
            _ => a.quality,
        };
    }
    v.rating.mime_q = q;
}

fn lang_index(list: &[String], lang: &str) -> Option<usize> {
    // Bytes, not str slices: a tag is any text a type map or .htaccess
    // gives, and a cut inside a character would panic.
    list.iter().position(|l| lang.as_bytes().get(..l.len()).is_some_and(|p| p.eq_ignore_ascii_case(l.as_bytes())))
}

fn set_language_quality(accepts: &Accepts, prefs: &Preferences, default_q: f32, v: &mut Variant) {
    if v.languages.is_empty() {
        v.rating.lang_q = default_q;
        return;
    }
    if let Some(langs) = &accepts.languages {
        let mut best: Option<&AcceptItem> = None;
        let mut star: Option<&AcceptItem> = None;
        let mut fiddle_q = 0.0f32;
        let mut any_on_star = false;
        for lang in &v.languages {
            let lang = lang.to_ascii_lowercase();
            let mut this: Option<&AcceptItem> = None;
            let mut longest = 0;
            for a in langs {
                if a.name == "*" {
                    star.get_or_insert(a);
                    continue;
                }
                let n = a.name.len();
                if lang.as_bytes().get(..n) == Some(a.name.as_bytes()) && (lang.len() == n || lang.as_bytes()[n] == b'-') && n > longest {
                    longest = n;
                    this = Some(a);
                }
                // en-US in Accept-Language still takes en and en-GB, a little.
                if this.is_none() {
                    if let Some((prefix, _)) = a.name.split_once('-') {
                        if lang.starts_with(prefix) {
                            fiddle_q = 0.001;
                        }
                    }
                }
            }
            if best.is_none() || this.is_some_and(|t| t.quality > best.map_or(0.0, |b| b.quality)) {
                best = this;
            }
            if this.is_none() && star.is_some() {
                any_on_star = true;
            }
        }
        if any_on_star {
            if let Some(s) = star {
                if best.is_none_or(|b| s.quality > b.quality) {
                    best = Some(s);
                }
            }
        }
        v.rating.lang_q = best.map_or(fiddle_q, |b| b.quality);
    } else {
        v.rating.lang_q = 1.0;
    }
    // LanguagePriority: its position breaks ties (Prefer), or stands in
    // for a language the client does not accept (Fallback).
    if prefs.force.prefer || (prefs.force.fallback && v.rating.lang_q == 0.0) {
        if let Some(idx) = v.languages.iter().filter_map(|l| lang_index(prefs.language_priority, l)).min() {
            if v.rating.lang_q > 0.0 {
                if prefs.force.prefer {
                    v.rating.lang_index = Some(idx);
                }
            } else if prefs.force.fallback {
                v.rating.lang_index = Some(idx);
                v.rating.lang_q = 0.0001;
            }
        }
    }
}

fn set_charset_quality(accepts: &Accepts, v: &mut Variant) {
    v.rating.charset_q = 1.0;
    let Some(charsets) = &accepts.charsets else { return };
    let charset = match &v.charset {
        Some(c) if !c.is_empty() => c.to_ascii_lowercase(),
        _ if !v.media_type.starts_with("text/") => return,
        _ => "iso-8859-1".to_string(),
    };
    if let Some(a) = charsets.iter().find(|a| a.name == charset) {
        v.rating.charset_q = a.quality;
    } else if let Some(star) = charsets.iter().find(|a| a.name == "*") {
        v.rating.charset_q = star.quality;
    } else {
        v.rating.charset_q = if charset == "iso-8859-1" { 1.0 } else { 0.0 };
    }
}

fn is_identity(enc: Option<&str>) -> bool {
    enc.is_none_or(|e| e.is_empty() || e == "7bit" || e == "8bit" || e == "binary")
}

fn set_encoding_quality(accepts: &Accepts, v: &mut Variant) {
    let Some(encodings) = &accepts.encodings else {
        v.rating.encoding_q = if is_identity(v.encoding.as_deref()) { 1.0 } else { 0.5 };
        return;
    };
    let (enc, if_absent) = if is_identity(v.encoding.as_deref()) { ("identity".to_string(), 0.0001) } else { (v.encoding.clone().unwrap_or_default().to_ascii_lowercase(), 0.0) };
    let enc = enc.strip_prefix("x-").unwrap_or(&enc).to_string();
    let mut star = None;
    for a in encodings {
        let name = a.name.strip_prefix("x-").unwrap_or(&a.name);
        if name == enc {
            v.rating.encoding_q = a.quality;
            return;
        }
        if name == "*" {
            star = Some(a.quality);
        }
    }
    v.rating.encoding_q = star.unwrap_or(if_absent);
}

/// 1 where `a`'s level is better than `b`'s, -1 where worse: among
/// variants of one type, the highest level the client named, else the
/// lowest (the one it is least likely to choke on).
fn level_cmp(a: &Variant, b: &Variant) -> i8 {
    if (a.is_pseudo_html() && !b.is_pseudo_html()) || (!a.is_pseudo_html() && a.media_type != b.media_type) {
        return 0;
    }
    let order = match a.rating.level_matched.partial_cmp(&b.rating.level_matched) {
        Some(std::cmp::Ordering::Equal) => b.level.partial_cmp(&a.level),
        other => other,
    };
    match order {
        Some(std::cmp::Ordering::Greater) => 1,
        Some(std::cmp::Ordering::Less) => -1,
        _ => 0,
    }
}

fn is_latin1(c: &Option<String>) -> bool {
    c.as_deref().is_none_or(|c| c.is_empty() || c.eq_ignore_ascii_case("iso-8859-1"))
}

/// Apache's is_variant_better: whether `v` beats `best` (at `bestq`).
fn is_better(v: &Variant, best: Option<&Variant>, bestq: &mut f32) -> bool {
    let r = v.rating;
    if r.encoding_q == 0.0 || r.lang_q == 0.0 || v.source_quality == 0.0 || r.charset_q == 0.0 || r.mime_q == 0.0 {
        return false;
    }
    let q = r.mime_q * v.source_quality;
    if q == 0.0 || q < *bestq {
        return false;
    }
    let Some(best) = best.filter(|_| q <= *bestq) else {
        *bestq = q;
        return true;
    };
    let b = best.rating;
    let better = 'decide: {
        if r.lang_q != b.lang_q {
            break 'decide r.lang_q > b.lang_q;
        }
        match (r.lang_index, b.lang_index) {
            (Some(x), Some(y)) if x != y => break 'decide x < y,
            (None, Some(_)) => return false,
            (Some(_), None) => break 'decide true,
            _ => {}
        }
        match level_cmp(v, best) {
            1 => break 'decide true,
            -1 => return false,
            _ => {}
        }
        if r.charset_q < b.charset_q {
            return false;
        }
        if r.charset_q > b.charset_q || (!is_latin1(&v.charset) && is_latin1(&best.charset)) {
            break 'decide true;
        }
        if r.encoding_q != b.encoding_q {
            break 'decide r.encoding_q > b.encoding_q;
        }
        v.length.unwrap_or(0) < best.length.unwrap_or(0)
    };
    if better {
        *bestq = q;
    }
    better
}

/// The index of the best variant, None where none is acceptable (406).
/// `variants` keep their ratings for [`vary`].
pub fn best(accepts: &Accepts, variants: &mut [Variant], prefs: &Preferences) -> Option<usize> {
    let default_lang_q = if variants.iter().any(|v| !v.languages.is_empty()) { 0.0001 } else { 1.0 };
    let mut accept = accepts.accept.clone().unwrap_or_else(|| vec![AcceptItem { name: "*/*".into(), quality: 1.0, level: 0.0 }]);
    accept.push(AcceptItem { name: SCRIPT_TYPE.into(), quality: if prefs.prefer_scripts { 2.0 } else { 0.001 }, level: 0.0 });
    let mut best = None;
    let mut bestq = 0.0f32;
    for i in 0..variants.len() {
        let v = &mut variants[i];
        v.rating = Rating::default();
        set_accept_quality(&accept, accepts.accept_q, v);
        set_language_quality(accepts, prefs, default_lang_q, v);
        set_encoding_quality(accepts, v);
        set_charset_quality(accepts, v);
        if is_better(&variants[i], best.map(|b: usize| &variants[b]), &mut bestq) {
            best = Some(i);
        }
    }
    best.filter(|_| bestq > 0.0)
}

/// The Vary tokens of a negotiated answer: the dimensions its variants
/// differ in (and `negotiate` for a transparently negotiable one).
pub fn vary(variants: &[Variant], transparent: bool) -> Vec<&'static str> {
    let mut tokens = Vec::new();
    if transparent {
        tokens.push("negotiate");
    }
    let Some(first) = variants.first() else { return tokens };
    let differ = |f: &dyn Fn(&Variant) -> String| variants.iter().any(|v| f(v) != f(first));
    if differ(&|v| v.media_type.clone()) {
        tokens.push("accept");
    }
    if differ(&|v| v.languages.join(",")) {
        tokens.push("accept-language");
    }
    if differ(&|v| v.charset.clone().unwrap_or_default()) {
        tokens.push("accept-charset");
    }
    if differ(&|v| v.encoding.clone().unwrap_or_default()) {
        tokens.push("accept-encoding");
    }
    tokens
}

/// mod_negotiation's fix_encoding: `x-gzip` is sent as `gzip` to a client
/// whose Accept-Encoding says `gzip` (and the other way round).
pub fn as_client_names(encoding: &str, head: &RequestHead) -> String {
    let bare = encoding.strip_prefix("x-").unwrap_or(encoding);
    let Some(accepted) = head.header("accept-encoding").map(|v| String::from_utf8_lossy(v).into_owned()) else { return encoding.to_string() };
    let accepted = items(Some(&accepted)).unwrap_or_default();
    let found = accepted.iter().find(|a| a.name == bare).or_else(|| accepted.iter().find(|a| a.name.strip_prefix("x-") == Some(bare)));
    found.map_or_else(|| encoding.to_string(), |a| a.name.clone())
}

/// The Alternates field of a list answer (RFC 2295), as Apache writes it.
pub fn alternates(variants: &[Variant]) -> String {
    let described: Vec<String> = variants
        .iter()
        .map(|v| {
            let qs = format!("{:1.3}", v.source_quality);
            let qs = qs.trim_end_matches('0').trim_end_matches('.');
            let mut d = format!("{{\"{}\" {qs}", escape_path_segment(&v.name));
            if !v.media_type.is_empty() {
                d.push_str(&format!(" {{type {}}}", v.media_type));
            }
            if let Some(c) = v.charset.as_deref().filter(|c| !c.is_empty()) {
                d.push_str(&format!(" {{charset {c}}}"));
            }
            if !v.languages.is_empty() {
                d.push_str(&format!(" {{language {}}}", v.languages.join(",")));
            }
            if let Some(e) = &v.encoding {
                d.push_str(&format!(" {{encoding {e}}}"));
            }
            if let Some(n) = v.length {
                d.push_str(&format!(" {{length {n}}}"));
            }
            d.push('}');
            d
        })
        .collect();
    described.join(", ")
}

/// Apache's "Available variants" list, for the 406 page.
pub fn variant_list(variants: &[Variant]) -> String {
    let mut out = String::from("Available variants:\n<ul>\n");
    for v in variants {
        out.push_str(&format!("<li><a href=\"{}\">{}</a> {}", escape_path_segment(&v.name), html_escape(&v.name), v.description.as_deref().unwrap_or("")));
        if !v.media_type.is_empty() {
            out.push_str(&format!(", type {}", v.media_type));
        }
        if !v.languages.is_empty() {
            out.push_str(&format!(", language {}", v.languages.join(",")));
        }
        if let Some(c) = v.charset.as_deref().filter(|c| !c.is_empty()) {
            out.push_str(&format!(", charset {c}"));
        }
        if let Some(e) = &v.encoding {
            out.push_str(&format!(", encoding {e}"));
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ul>\n");
    out
}

/// Apache's ap_escape_path_segment (Content-Location, the list's links).
pub fn escape_path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"$-_.+!*'(),:@&=~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    out
}

/// A type map that cannot be read: the line (1-based) and what is wrong.
#[derive(Debug, PartialEq, Eq)]
pub struct MapError {
    pub line: usize,
    pub why: String,
}

/// Reads a type map (Apache's format: records of `Name: value` lines,
/// `#` comments, continuation lines starting with white space, a blank
/// line between records; `URI:`, `Content-Type:` (with `qs`, `level`,
/// `charset`), `Content-Language:`, `Content-Encoding:`,
/// `Content-Length:`, `Description:`, and `Body:TAG` whose content runs
/// to the line holding TAG). A record counts when it names a URI or has a
/// body, and says something of its content. `map_name` is the file's name,
/// an inline variant's name.
pub fn parse_type_map(text: &[u8], map_name: &str) -> Result<Vec<Variant>, MapError> {
    let mut variants = Vec::new();
    let mut current = Variant { source_quality: 1.0, ..Variant::default() };
    let mut has_content = false;
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    let mut i = 0;
    let finish = |current: &mut Variant, has_content: &mut bool, variants: &mut Vec<Variant>| {
        if !current.name.is_empty() && *has_content {
            variants.push(std::mem::take(current));
        }
        *current = Variant { source_quality: 1.0, ..Variant::default() };
        *has_content = false;
    };
    while i < lines.len() {
        let line_no = i + 1;
        let raw = String::from_utf8_lossy(lines[i]);
        let mut line = raw.trim_end().to_string();
        i += 1;
        if line.trim_start().starts_with('#') {
            continue;
        }
        if line.trim().is_empty() {
            finish(&mut current, &mut has_content, &mut variants);
            continue;
        }
        // Continuation lines belong to this header.
        while i < lines.len() && lines[i].first().is_some_and(|b| *b == b' ' || *b == b'\t') && !String::from_utf8_lossy(lines[i]).trim().is_empty() {
            line.push(' ');
            line.push_str(String::from_utf8_lossy(lines[i]).trim());
            i += 1;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(MapError { line: line_no, why: format!("no ':' in header '{}'", line.trim()) });
        };
        let value = strip_comments(value.trim());
        if value.is_empty() {
            return Err(MapError { line: line_no, why: format!("no value for header '{}'", name.trim()) });
        }
        let first_token = value.split_whitespace().next().unwrap_or("").to_string();
        match name.trim().to_ascii_lowercase().as_str() {
            "uri" => current.name = first_token,
            "content-type" => {
                let typed = Variant::of_type(std::mem::take(&mut current.name), &value);
                current = Variant { languages: std::mem::take(&mut current.languages), encoding: current.encoding.take(), length: current.length, description: current.description.take(), body: current.body.take(), ..typed };
                has_content = true;
            }
            "content-length" => match first_token.parse::<u64>() {
                Ok(n) => {
                    current.length = Some(n);
                    has_content = true;
                }
                Err(_) => return Err(MapError { line: line_no, why: format!("Content-Length '{first_token}' is invalid") }),
            },
            "content-language" => {
                current.languages = value.split(',').map(|l| l.trim().to_ascii_lowercase()).filter(|l| !l.is_empty()).collect();
                has_content = true;
            }
            "content-encoding" => {
                current.encoding = Some(first_token.to_ascii_lowercase());
                has_content = true;
            }
            "description" => current.description = Some(value.clone()),
            "body" => {
                let tag = value.trim();
                let start = i;
                let Some(end) = (start..lines.len()).find(|&k| String::from_utf8_lossy(lines[k]).contains(tag)) else {
                    return Err(MapError { line: line_no, why: format!("no end tag '{tag}' for Body: content") });
                };
                let mut body: Vec<u8> = lines[start..end].concat();
                // The text before the tag on its own line is content too.
                let tag_line = lines[end];
                let at = tag_line.windows(tag.len()).position(|w| w == tag.as_bytes()).unwrap_or(0);
                body.extend_from_slice(&tag_line[..at]);
                current.length = Some(body.len() as u64);
                current.body = Some(body);
                current.name = map_name.to_string();
                i = end + 1;
            }
            _ => {}
        }
    }
    finish(&mut current, &mut has_content, &mut variants);
    Ok(variants)
}

/// Apache's strip_paren_comments: `(...)` outside quotes goes.
fn strip_comments(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let (mut in_quote, mut depth) = (false, 0);
    for c in v.chars() {
        match c {
            '"' if depth == 0 => {
                in_quote = !in_quote;
                out.push(c);
            }
            '(' if !in_quote => depth += 1,
            ')' if !in_quote && depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepts(accept: Option<&str>, lang: Option<&str>, charset: Option<&str>, enc: Option<&str>) -> Accepts {
        let accept_items = items(accept);
        Accepts { accept_q: accept_items.as_ref().is_some_and(|a| a.iter().any(|i| i.quality < 1.0)), accept: accept_items, languages: items(lang), charsets: items(charset), encodings: items(enc) }
    }

    fn variant(name: &str, ty: &str, lang: &[&str], enc: Option<&str>) -> Variant {
        Variant { languages: lang.iter().map(|l| l.to_string()).collect(), encoding: enc.map(str::to_string), ..Variant::of_type(name.into(), ty) }
    }

    const PREFER: Preferences = Preferences { language_priority: &[], force: ForcePriority { prefer: true, fallback: false }, prefer_scripts: false };

    #[test]
    fn qualities_read_as_apache_reads_them() {
        assert_eq!(quality("0.5"), 0.5);
        assert_eq!(quality("1"), 1.0);
        assert_eq!(quality("0"), 0.0);
        assert_eq!(quality(".25"), 0.25);
        assert_eq!(quality("0.1239"), 0.123);
        assert_eq!(quality("x"), 1.0);
    }

    #[test]
    fn languages_then_priority() {
        let mut v = vec![variant("a.html.en", "text/html", &["en"], None), variant("a.html.fr", "text/html", &["fr"], None), variant("a.html.de", "text/html", &["de"], None)];
        let a = accepts(Some("text/html"), Some("fr, en;q=0.5"), None, None);
        assert_eq!(best(&a, &mut v, &PREFER), Some(1));
        let a = accepts(None, Some("de-AT, en;q=0.1"), None, None);
        assert_eq!(best(&a, &mut v, &PREFER).map(|i| v[i].name.as_str()), Some("a.html.en"), "de-AT takes de only at 0.001");
        // Nothing acceptable: 406, unless ForceLanguagePriority Fallback.
        let a = accepts(None, Some("ja"), None, None);
        assert_eq!(best(&a, &mut v, &PREFER), None);
        let priority = ["de".to_string(), "en".to_string()];
        let fallback = Preferences { language_priority: &priority, force: ForcePriority { prefer: true, fallback: true }, prefer_scripts: false };
        assert_eq!(best(&a, &mut v, &fallback), Some(2));
        // No Accept-Language: LanguagePriority decides (Prefer).
        let a = accepts(None, None, None, None);
        assert_eq!(best(&a, &mut v, &Preferences { force: ForcePriority { prefer: true, fallback: false }, ..fallback }), Some(2));
        assert_eq!(vary(&v, true), ["negotiate", "accept-language"]);
    }

    #[test]
    fn tags_that_are_not_ascii_do_not_panic() {
        let mut v = vec![variant("a.html.x", "text/html", &["é"], None), variant("a.html.en", "text/html", &["en"], None)];
        let priority = ["éé".to_string(), "e".to_string()];
        let prefs = Preferences { language_priority: &priority, ..PREFER };
        let a = accepts(None, Some("a, e;q=0.5"), None, None);
        assert_eq!(best(&a, &mut v, &prefs).map(|i| v[i].name.as_str()), None, "neither is acceptable");
        let a = accepts(None, Some("en"), None, None);
        assert_eq!(best(&a, &mut v, &prefs).map(|i| v[i].name.as_str()), Some("a.html.en"));
    }

    #[test]
    fn types_wildcards_encodings_charsets() {
        let mut v = vec![variant("x.png", "image/png", &[], None), variant("x.html", "text/html", &[], None)];
        // Browsers' Accept: an explicit type wins over what */* takes.
        let a = accepts(Some("text/html,application/xhtml+xml,*/*;q=0.8"), None, None, None);
        assert_eq!(best(&a, &mut v, &PREFER), Some(1));
        let a = accepts(Some("image/*"), None, None, None);
        assert_eq!(best(&a, &mut v, &PREFER), Some(0));
        let a = accepts(Some("application/json"), None, None, None);
        assert_eq!(best(&a, &mut v, &PREFER), None);
        // The gzip variant where gzip is accepted (identity, not named,
        // counts 0.0001); without Accept-Encoding the plain one.
        let mut v = vec![variant("t.txt.gz", "text/plain", &[], Some("x-gzip")), variant("t.txt", "text/plain", &[], None)];
        assert_eq!(best(&accepts(None, None, None, Some("gzip")), &mut v, &PREFER), Some(0));
        assert_eq!(best(&accepts(None, None, None, None), &mut v, &PREFER), Some(1));
        assert_eq!(best(&accepts(None, None, None, Some("br")), &mut v, &PREFER), Some(1));
        assert_eq!(vary(&v, false), ["accept-encoding"]);
        let mut v = vec![Variant::of_type("u".into(), "text/plain; charset=utf-8"), Variant::of_type("l".into(), "text/plain")];
        assert_eq!(best(&accepts(None, None, Some("iso-8859-1"), None), &mut v, &PREFER), Some(1));
        assert_eq!(best(&accepts(None, None, None, None), &mut v, &PREFER), Some(0), "a charset other than Latin-1 is preferred");
        // qs of a type map weighs in.
        let mut v = vec![Variant::of_type("a".into(), "text/html; qs=0.5"), Variant::of_type("b".into(), "text/plain")];
        assert_eq!(best(&accepts(Some("text/html, text/plain"), None, None, None), &mut v, &PREFER), Some(1));
    }

    #[test]
    fn type_maps_with_bodies_and_errors() {
        let map = b"# a comment\nURI: page.html.en\nContent-type: text/html; qs=0.9\nContent-Language: en\n\nContent-language: de\nContent-type: text/html;\n charset=UTF-8\nBody:----de--\n<p>Hallo</p>\n----de--\n\nURI: nothing-said\n";
        let v = parse_type_map(map, "x.var").unwrap();
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!((v[0].name.as_str(), v[0].source_quality, v[0].languages.as_slice()), ("page.html.en", 0.9, &["en".to_string()][..]));
        assert_eq!(v[1].body.as_deref(), Some(&b"<p>Hallo</p>\n"[..]));
        assert_eq!((v[1].name.as_str(), v[1].content_type().as_deref()), ("x.var", Some("text/html; charset=utf-8")));
        assert_eq!(parse_type_map(b"URI: a\nno colon here\n", "m").unwrap_err().line, 2);
        assert!(parse_type_map(b"Body:--x--\nnever ends\n", "m").unwrap_err().why.contains("no end tag"));
        assert!(parse_type_map(b"Content-Length: lots\n", "m").is_err());
    }
}
