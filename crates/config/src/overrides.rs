//! What `AllowOverride` and `AllowOverrideList` let `.htaccess` files in a
//! directory change ([`Overrides`]), and the override class of each
//! directive ([`class_of`], Apache's `req_override` of its `command_rec`).
//! The reading of the files themselves is htaccess.rs.

use crate::parse::Directive;

/// Apache's override classes: what an `.htaccess` file may contain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    AuthConfig,
    FileInfo,
    Indexes,
    Limit,
    Options,
    /// Only `AllowOverride All` lets these in (LimitRequestBody).
    All,
}

impl Class {
    fn bit(self) -> u8 {
        match self {
            Class::AuthConfig => 1,
            Class::FileInfo => 2,
            Class::Indexes => 4,
            Class::Limit => 8,
            Class::Options => 16,
            Class::All => 32,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::AuthConfig => "AuthConfig",
            Class::FileInfo => "FileInfo",
            Class::Indexes => "Indexes",
            Class::Limit => "Limit",
            Class::Options => "Options",
            Class::All => "All",
        }
    }
}

/// Each directive an `.htaccess` file may hold, by its override class (from
/// Apache's documentation of each). A directive not listed is not allowed
/// in `.htaccess` at all, whatever AllowOverride says.
pub(crate) const CLASSES: &[(Class, &[&str])] = &[
    // mod_http2's, as its command table has them (H2Upgrade and H2Push in
    // AuthConfig, oddly): each said as not acted on there.
    (Class::AuthConfig, &["Require", "SSLRequireSSL", "H2Push", "H2Upgrade", "AuthType", "AuthName", "AuthUserFile", "AuthGroupFile", "AuthBasicProvider", "Satisfy", "CGIPassAuth"]),
    (Class::Limit, &["Order", "Allow", "Deny"]),
    (
        Class::FileInfo,
        &[
            "AddHandler",
            "H2CopyFiles",
            "H2PushResource",
            "H2EarlyHint",
            "ForceType",
            "MultiviewsMatch",
            "AddCharset",
            "RemoveCharset",
            "AddLanguage",
            "RemoveLanguage",
            "DefaultLanguage",
            "AddEncoding",
            "RemoveEncoding",
            "RemoveType",
            "RemoveHandler",
            "DefaultType",
            "LanguagePriority",
            "ForceLanguagePriority",
            "EnableSendfile",
            "EnableMMAP",
            "FileETag",
            "ErrorDocument",
            "AddType",
            "AddDefaultCharset",
            "SetHandler",
            "AcceptPathInfo",
            "CGIVar",
            "Redirect",
            "RedirectMatch",
            "RedirectPermanent",
            "RedirectTemp",
            "RewriteEngine",
            "RewriteOptions",
            "RewriteBase",
            "RewriteCond",
            "RewriteRule",
            "Header",
            "RequestHeader",
            "SetEnv",
            "UnsetEnv",
            "SetEnvIf",
            "SetEnvIfNoCase",
            "SetEnvIfExpr",
            "BrowserMatch",
            "BrowserMatchNoCase",
            "AddOutputFilterByType",
            "SetOutputFilter",
            "AddOutputFilter",
            "RemoveOutputFilter",
            "PrecompressedFiles",
        ],
    ),
    (
        Class::Indexes,
        &[
            "DirectoryIndex",
            "FallbackResource",
            "DirectorySlash",
            "ExpiresActive",
            "ExpiresByType",
            "ExpiresDefault",
            // Accepted, not acted on.
            "IndexOptions",
            "IndexOrderDefault",
            "IndexIgnore",
            "IndexIgnoreReset",
            "IndexStyleSheet",
            "IndexHeadInsert",
            "HeaderName",
            "ReadmeName",
            "AddIcon",
            "AddIconByType",
            "AddIconByEncoding",
            "DefaultIcon",
            "AddAlt",
            "AddAltByType",
            "AddAltByEncoding",
            "AddDescription",
        ],
    ),
    (Class::Options, &["Options", "SSLOptions", "php_value", "php_flag"]),
    (Class::All, &["LimitRequestBody"]),
];

/// The override class of the directive `name`, if it may stand in `.htaccess`.
pub fn class_of(name: &str) -> Option<Class> {
    CLASSES.iter().find(|(_, names)| names.iter().any(|n| n.eq_ignore_ascii_case(name))).map(|(c, _)| *c)
}

/// What `AllowOverride` and `AllowOverrideList` let `.htaccess` files in a
/// directory change. The default, as in Apache 2.4, is nothing: the files
/// are not even looked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    classes: u8,
    /// `Options=A,B`: the only options `.htaccess` may set (None: any).
    options: Option<Vec<String>>,
    /// `AllowOverrideList`: directives allowed one by one (lower case).
    listed: Vec<String>,
}

impl Overrides {
    /// Whether `.htaccess` files are read at all.
    pub fn reads_files(&self) -> bool {
        self.classes != 0 || !self.listed.is_empty()
    }

    /// Whether `.htaccess` files may hold the directive `name` here.
    pub fn lets_in(&self, name: &str) -> bool {
        self.allows(name).is_ok()
    }

    pub(crate) fn allows(&self, name: &str) -> Result<(), String> {
        if self.listed.iter().any(|l| l.eq_ignore_ascii_case(name)) {
            return Ok(());
        }
        match class_of(name) {
            None => Err(format!("{name} not allowed here")),
            Some(c) if self.classes & c.bit() != 0 || self.classes & Class::All.bit() != 0 => Ok(()),
            Some(c) => Err(format!("{name} not allowed here (AllowOverride does not include {})", c.name())),
        }
    }

    /// `Options` in `.htaccess`: each option named must be one `Options=`
    /// lets through.
    pub(crate) fn allows_options(&self, d: &Directive) -> Result<(), String> {
        let Some(allowed) = &self.options else { return Ok(()) };
        if self.listed.iter().any(|l| l.eq_ignore_ascii_case("Options")) {
            return Ok(());
        }
        for a in &d.args {
            let name = a.trim_start_matches(['+', '-']);
            if !allowed.iter().any(|o| o.eq_ignore_ascii_case(name)) {
                return Err(format!("Option {name} not allowed here"));
            }
        }
        Ok(())
    }
}

/// `AllowOverride None|All|class[=...]...` into `o` (replacing its classes).
pub(crate) fn parse_allow_override(args: &[String], o: &mut Overrides) -> Result<(), String> {
    o.classes = 0;
    o.options = None;
    if args.is_empty() {
        return Err("AllowOverride takes None, All, or override classes".into());
    }
    for a in args {
        let (name, list) = match a.split_once('=') {
            Some((n, l)) => (n, Some(l)),
            None => (a.as_str(), None),
        };
        let class = match name.to_ascii_lowercase().as_str() {
            "none" if args.len() == 1 => continue,
            "all" => Class::All,
            "authconfig" => Class::AuthConfig,
            "fileinfo" => Class::FileInfo,
            "indexes" => Class::Indexes,
            "limit" => Class::Limit,
            "options" => Class::Options,
            // Nonfatal only changes how Apache treats an error; warren
            // answers 500 for one, as Apache does without it.
            "nonfatal" => return Err("AllowOverride Nonfatal=... is not supported: an error in .htaccess is always a 500".into()),
            _ => return Err(format!("AllowOverride: unknown override class '{a}' (None, All, AuthConfig, FileInfo, Indexes, Limit, Options[=...])")),
        };
        match (class, list) {
            (Class::Options, Some(l)) => {
                o.options = Some(l.split(',').map(str::to_string).collect());
            }
            (_, Some(_)) => return Err(format!("AllowOverride: only Options takes a list ({a})")),
            _ => {}
        }
        o.classes |= class.bit();
    }
    Ok(())
}

/// `AllowOverrideList None|directive...` into `o`; `known` says which
/// names are directives (the table's, which is above this module).
pub(crate) fn parse_allow_override_list(args: &[String], o: &mut Overrides, known: impl Fn(&str) -> bool) -> Result<(), String> {
    o.listed.clear();
    match args {
        [] => Err("AllowOverrideList takes None or directive names".into()),
        [n] if n.eq_ignore_ascii_case("none") => Ok(()),
        names => {
            for n in names {
                if !known(n) {
                    return Err(format!("AllowOverrideList: unknown directive '{n}'"));
                }
                o.listed.push(n.to_ascii_lowercase());
            }
            Ok(())
        }
    }
}
