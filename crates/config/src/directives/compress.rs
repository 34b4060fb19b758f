//! mod_deflate's, mod_brotli's and mod_filter's directives, read into a
//! section's [`OutputFilters`](crate::compress::OutputFilters). The request
//! half is the handler's `compress` module.

use crate::builder::Builder;
use crate::compress::{AlterETag, Encoders, OutputFilters};
use crate::parse::Directive;

/// `DEFLATE;BROTLI_COMPRESS`: the encoders a filter chain names.
fn encoders(chain: &str) -> Result<Encoders, String> {
    let mut e = Encoders::NONE;
    for name in chain.split(';').filter(|n| !n.is_empty()) {
        if name.eq_ignore_ascii_case("DEFLATE") {
            e.gzip = true;
        } else if name.eq_ignore_ascii_case("BROTLI_COMPRESS") {
            e.brotli = true;
        } else {
            return Err(format!("output filter '{name}' is not one warren has (DEFLATE, BROTLI_COMPRESS)"));
        }
    }
    if e.any() {
        Ok(e)
    } else {
        Err("no output filter named".to_string())
    }
}

pub(crate) fn add_output_filter_by_type(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    let [chain, types @ ..] = d.args.as_slice() else {
        return b.error(&d.origin, "AddOutputFilterByType takes filter[;filter...] and one or more media types");
    };
    if types.is_empty() {
        return b.error(&d.origin, "AddOutputFilterByType takes filter[;filter...] and one or more media types");
    }
    match encoders(chain) {
        Ok(e) => {
            for t in types {
                if !t.contains('/') {
                    return b.error(&d.origin, format!("AddOutputFilterByType: '{t}' is not a media type"));
                }
            }
            filters.by_type.extend(types.iter().map(|t| (t.to_ascii_lowercase(), e)));
        }
        Err(m) => b.error(&d.origin, format!("AddOutputFilterByType: {m}")),
    }
}

pub(crate) fn set_output_filter(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    match d.args.as_slice() {
        [chain] => match encoders(chain) {
            Ok(e) => filters.set = Some(e),
            Err(m) => b.error(&d.origin, format!("SetOutputFilter: {m}")),
        },
        _ => b.error(&d.origin, "SetOutputFilter takes one argument, filter[;filter...]"),
    }
}

pub(crate) fn add_output_filter(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    let [chain, exts @ ..] = d.args.as_slice() else {
        return b.error(&d.origin, "AddOutputFilter takes filter[;filter...] and one or more extensions");
    };
    if exts.is_empty() {
        return b.error(&d.origin, "AddOutputFilter takes filter[;filter...] and one or more extensions");
    }
    match encoders(chain) {
        Ok(e) => filters.by_extension.extend(exts.iter().map(|x| (extension(x), Some(e)))),
        Err(m) => b.error(&d.origin, format!("AddOutputFilter: {m}")),
    }
}

pub(crate) fn remove_output_filter(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    if d.args.is_empty() {
        return b.error(&d.origin, "RemoveOutputFilter takes one or more extensions");
    }
    filters.by_extension.extend(d.args.iter().map(|x| (extension(x), None)));
}

fn extension(x: &str) -> String {
    x.trim_start_matches('.').to_ascii_lowercase()
}

fn bounded(b: &mut Builder, d: &Directive, low: u32, high: u32) -> Option<u32> {
    match d.args.as_slice() {
        [v] => match v.parse::<u32>() {
            Ok(n) if (low..=high).contains(&n) => return Some(n),
            _ => b.error(&d.origin, format!("{}: '{v}' is not a whole number from {low} to {high}", d.name)),
        },
        _ => b.error(&d.origin, format!("{} takes one argument, a whole number from {low} to {high}", d.name)),
    }
    None
}

pub(crate) fn deflate_compression_level(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    if let Some(n) = bounded(b, d, 1, 9) {
        filters.deflate_level = Some(n);
    }
}

pub(crate) fn brotli_compression_quality(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    if let Some(n) = bounded(b, d, 0, 11) {
        filters.brotli_quality = Some(n);
    }
}

pub(crate) fn brotli_window_size(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    if let Some(n) = bounded(b, d, 10, 24) {
        filters.brotli_window = Some(n);
    }
}

fn alter_etag(b: &mut Builder, d: &Directive) -> Option<AlterETag> {
    match d.args.as_slice() {
        [v] if v.eq_ignore_ascii_case("addsuffix") => Some(AlterETag::AddSuffix),
        [v] if v.eq_ignore_ascii_case("nochange") => Some(AlterETag::NoChange),
        [v] if v.eq_ignore_ascii_case("remove") => Some(AlterETag::Remove),
        _ => {
            b.error(&d.origin, format!("{} takes AddSuffix, NoChange or Remove", d.name));
            None
        }
    }
}

pub(crate) fn deflate_alter_etag(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    if let Some(a) = alter_etag(b, d) {
        filters.deflate_alter_etag = Some(a);
    }
}

pub(crate) fn brotli_alter_etag(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    if let Some(a) = alter_etag(b, d) {
        filters.brotli_alter_etag = Some(a);
    }
}

pub(crate) fn precompressed_files(b: &mut Builder, d: &Directive, filters: &mut OutputFilters) {
    match d.args.as_slice() {
        [v] if v.eq_ignore_ascii_case("on") => filters.precompressed = Some(true),
        [v] if v.eq_ignore_ascii_case("off") => filters.precompressed = Some(false),
        _ => b.error(&d.origin, "PrecompressedFiles takes On or Off"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_chains() {
        assert_eq!(encoders("DEFLATE").unwrap(), Encoders { gzip: true, brotli: false });
        assert_eq!(encoders("brotli_compress;deflate").unwrap(), Encoders { gzip: true, brotli: true });
        assert!(encoders("INCLUDES").unwrap_err().contains("INCLUDES"));
        assert!(encoders(";").is_err());
    }
}
