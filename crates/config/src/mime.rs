//! mod_mime's and mod_negotiation's per-directory settings (their
//! directives are in `directives/mime.rs`): what each extension of a file's name says of it
//! (AddEncoding, AddCharset, AddLanguage, `AddHandler type-map` and their
//! Remove* forms; AddType and RemoveType stay in `DirConfig::add_types`),
//! ForceType, DefaultLanguage, LanguagePriority, ForceLanguagePriority and
//! MultiviewsMatch. The handler types files and negotiates with them
//! (warren_handler's mime.rs and negotiation.rs).

/// What an extension can say of a file besides its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtAttr {
    Encoding,
    Charset,
    Language,
    /// `AddHandler type-map .var`: the file is a type map.
    TypeMap,
}

/// `ForceLanguagePriority`: what LanguagePriority decides.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ForcePriority {
    /// Prefer: among variants the client rates alike, the first in LanguagePriority.
    pub prefer: bool,
    /// Fallback: where no language is acceptable, the first in LanguagePriority.
    pub fallback: bool,
}

/// `MultiviewsMatch`: which extensions MultiViews may add to a name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MultiviewsMatch {
    /// Any extension at all.
    pub any: bool,
    /// Extensions that name a handler (a script's) count as negotiated.
    pub handlers: bool,
}

#[derive(Clone, Debug, Default)]
pub struct MimeSettings {
    /// (what, extension lower case without the dot, value), in config
    /// order; an empty value is a Remove* line.
    pub by_ext: Vec<(ExtAttr, String, String)>,
    /// `ForceType type` (Some(None): `ForceType None`).
    pub force_type: Option<Option<String>>,
    pub default_language: Option<String>,
    pub language_priority: Option<Vec<String>>,
    pub force_language_priority: Option<ForcePriority>,
    pub multiviews_match: Option<MultiviewsMatch>,
}

impl MimeSettings {
    /// Layers `over` (a more specific section) on top.
    pub fn merge(&mut self, over: &MimeSettings) {
        self.by_ext.extend(over.by_ext.iter().cloned());
        if over.force_type.is_some() {
            self.force_type.clone_from(&over.force_type);
        }
        if over.default_language.is_some() {
            self.default_language.clone_from(&over.default_language);
        }
        if over.language_priority.is_some() {
            self.language_priority.clone_from(&over.language_priority);
        }
        if over.force_language_priority.is_some() {
            self.force_language_priority = over.force_language_priority;
        }
        if over.multiviews_match.is_some() {
            self.multiviews_match = over.multiviews_match;
        }
    }
}
