//! What `<Directory>`, `<Files>`, `<Location>` and their regex forms can
//! set ([`DirConfig`]), the sections themselves ([`DirSection`]), and how the
//! handler layers them for one request ([`DirConfig::merge`]).

use std::net::IpAddr;

use warren_regex::Regex;

use std::sync::Arc;

use crate::backend::FcgiBackendType;
use crate::env_vars::{EnvAction, SetEnvIf};
use crate::expires::ExpiresRule;
use crate::expr::{Expr, Facts};
use crate::headers::HeaderRule;
use crate::parse::Origin;
pub use crate::scripts::Handler;

/// The `Options` flags warren implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionFlags {
    pub indexes: bool,
    pub follow_symlinks: bool,
    /// Follow a link only when it and its target have the same owner. As in
    /// Apache it wins over `follow_symlinks` when both are on.
    pub symlinks_if_owner_match: bool,
    /// `ExecCGI`: mod_fcgid's scripts (`AddHandler fcgid-script`) run here.
    pub exec_cgi: bool,
    /// `MultiViews`: a request for a name no file has is negotiated among
    /// the files of that name with extensions (see warren_handler's negotiation.rs).
    pub multiviews: bool,
}

impl OptionFlags {
    /// What applies where no `Options` says otherwise (Apache 2.4's default).
    pub const DEFAULT: OptionFlags = OptionFlags { indexes: false, follow_symlinks: true, symlinks_if_owner_match: false, exec_cgi: false, multiviews: false };
    pub(crate) const NONE: OptionFlags = OptionFlags { indexes: false, follow_symlinks: false, symlinks_if_owner_match: false, exec_cgi: false, multiviews: false };

    pub(crate) fn or(self, o: OptionFlags) -> OptionFlags {
        OptionFlags {
            indexes: self.indexes || o.indexes,
            follow_symlinks: self.follow_symlinks || o.follow_symlinks,
            symlinks_if_owner_match: self.symlinks_if_owner_match || o.symlinks_if_owner_match,
            exec_cgi: self.exec_cgi || o.exec_cgi,
            multiviews: self.multiviews || o.multiviews,
        }
    }
    fn minus(self, o: OptionFlags) -> OptionFlags {
        OptionFlags {
            indexes: self.indexes && !o.indexes,
            follow_symlinks: self.follow_symlinks && !o.follow_symlinks,
            symlinks_if_owner_match: self.symlinks_if_owner_match && !o.symlinks_if_owner_match,
            exec_cgi: self.exec_cgi && !o.exec_cgi,
            multiviews: self.multiviews && !o.multiviews,
        }
    }
}

/// `Options A B` replaces what is inherited; `Options +A -B` edits it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionsSpec {
    Set(OptionFlags),
    Edit { add: OptionFlags, remove: OptionFlags },
}

impl OptionsSpec {
    pub fn apply(self, inherited: OptionFlags) -> OptionFlags {
        match self {
            OptionsSpec::Set(f) => f,
            OptionsSpec::Edit { add, remove } => inherited.or(add).minus(remove),
        }
    }
}

/// One `Require` line. Several in one section mean "any of them" (Apache's
/// implicit `<RequireAny>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Require {
    All(bool),
    /// `Require ip` with (network, prefix length) pairs.
    Ip(Vec<(IpAddr, u8)>),
    /// `Require local`: loopback, or the client and server addresses are equal.
    Local,
    /// `Require method GET POST...` (mod_authz_core; GET grants HEAD too).
    Method(Vec<String>),
    /// `Require expr EXPRESSION`.
    Expr(crate::expr::Expr),
    /// `Require valid-user`: anyone the AuthUserFile knows, with the right password.
    ValidUser,
    /// `Require user name...`.
    User(Vec<String>),
    /// `Require group name...` (groups from the AuthGroupFile).
    Group(Vec<String>),
    /// `<RequireAll>`, `<RequireAny>` or `<RequireNone>` and its rules.
    Block(Combine, Vec<Require>),
}

/// How the rules of a `<Require...>` block combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// `<RequireAll>`: none may deny, one must grant.
    All,
    /// `<RequireAny>`: one must grant.
    Any,
    /// `<RequireNone>`: denies when one grants; never grants by itself.
    None,
}

impl Require {
    /// Whether the rule is about who the client is (authentication).
    pub fn wants_user(&self) -> bool {
        match self {
            Require::ValidUser | Require::User(_) | Require::Group(_) => true,
            Require::Block(_, rules) => rules.iter().any(Require::wants_user),
            _ => false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorDocument {
    /// A local URL, served with the original status (an internal redirect).
    Local(String),
    /// A full URL: the client is redirected there.
    Redirect(String),
    /// Literal text sent as the body.
    Text(String),
    /// `ErrorDocument 404 default`: back to the built-in page.
    Default,
}

/// Settings that can be given per directory, file or location. `None` means
/// "not set here, inherit".
#[derive(Clone, Debug, Default)]
pub struct DirConfig {
    pub options: Vec<OptionsSpec>,
    pub require: Option<Vec<Require>>,
    pub directory_index: Option<Vec<String>>,
    pub error_documents: Vec<(u16, ErrorDocument)>,
    /// (extension without dot, lower case; MIME type)
    pub add_types: Vec<(String, String)>,
    pub add_default_charset: Option<Option<String>>,
    /// The rest of mod_mime's settings, and mod_negotiation's.
    pub mime: crate::mime::MimeSettings,
    pub limit_request_body: Option<u64>,
    /// `SetHandler name` (`None` resets to the default file handler).
    pub handler: Option<Option<Handler>>,
    /// The lines here that make files scripts (see [`crate::scripts`]):
    /// added to those above, never reset.
    pub scripts: Vec<crate::scripts::ScriptMark>,
    /// `ProxyFCGIBackendType`.
    pub fcgi_backend_type: Option<FcgiBackendType>,
    /// `AcceptPathInfo`: None for Default (handlers decide).
    pub accept_path_info: Option<Option<bool>>,
    /// `CGIPassAuth`: CGI programs get the Authorization header.
    pub cgi_pass_auth: Option<bool>,
    /// `CGIVar REQUEST_URI current-uri` (true) or `original-uri`.
    pub cgi_current_uri: Option<bool>,
    /// `DirectorySlash`: a directory named without its `/` is redirected
    /// to it (On, the default), or not found (Off, NotFound).
    pub directory_slash: Option<bool>,
    /// `IndexIgnore`: wildcards of entries listings leave out, added to
    /// those inherited (a pattern with a `/` is matched against the entry's
    /// whole path, others against its name).
    pub index_ignore: Vec<String>,
    /// `IndexIgnoreReset On`: the inherited patterns are dropped here.
    pub index_ignore_reset: Option<bool>,
    /// `FallbackResource`: the local URL that answers a request for a file
    /// that does not exist (Some(None): `disabled`).
    pub fallback_resource: Option<Option<String>>,
    /// `AllowOverride` and `AllowOverrideList` (a plain `<Directory>` only).
    pub allow_override: Option<crate::overrides::Overrides>,
    /// Redirect and RedirectMatch, in config order.
    pub redirects: Vec<crate::alias::UrlAlias>,
    /// mod_rewrite's directives here. The host's own (`HostConfig::dir`)
    /// are its server-context rules and maps.
    pub rewrite: Option<warren_rewrite::RuleSet>,
    /// `Header` lines, in order (shared: rules hold compiled patterns).
    pub headers: Vec<Arc<HeaderRule>>,
    /// `RequestHeader` lines, in order.
    pub request_headers: Vec<Arc<HeaderRule>>,
    /// `ExpiresActive`.
    pub expires_active: Option<bool>,
    /// `ExpiresByType`: (type, lower case, or `major/*`; rule), later wins.
    pub expires_by_type: Vec<(String, ExpiresRule)>,
    pub expires_default: Option<ExpiresRule>,
    /// `SetEnv` and `UnsetEnv`, in order.
    pub env: Vec<EnvAction>,
    /// `SetEnvIf` and its kin, in order.
    pub set_env_if: Vec<Arc<SetEnvIf>>,
    /// Compression (mod_deflate, mod_brotli); None where no directive of
    /// theirs stands, so that a site without any pays nothing.
    pub output_filters: Option<crate::compress::OutputFilters>,
    /// `SSLRequireSSL`: a request not over TLS is forbidden (403).
    pub ssl_require_ssl: Option<bool>,
    /// `SSLOptions +StdEnvVars`: mod_ssl's SSL_* variables are given to
    /// applications.
    pub ssl_std_env_vars: Option<bool>,
    /// `H2Upgrade` (mod_http2), with its line: acted on at a host's own
    /// level only (see [`crate::h2`]); in a section it is said as not
    /// acted on.
    pub h2_upgrade: Option<(bool, Origin)>,
    /// `H2StreamTimeout`, with its line, likewise.
    pub h2_stream_timeout: Option<(std::time::Duration, Origin)>,
    /// AuthType, AuthName, AuthUserFile, AuthGroupFile.
    pub auth: crate::auth::AuthSettings,
    /// Order, Allow, Deny, Satisfy: set as a whole by the most specific
    /// section holding any of them.
    pub access_compat: Option<crate::access_compat::AccessCompat>,
    /// `php_value` and its kin, in order (see [`crate::mod_php`]).
    pub php: Vec<crate::mod_php::PhpSetting>,
}

impl DirConfig {
    /// Layers `over` on top of `self` (later sections win).
    pub fn merge(&mut self, over: &DirConfig) {
        self.options.extend(over.options.iter().copied());
        if over.require.is_some() {
            self.require.clone_from(&over.require);
        }
        self.auth.merge(&over.auth);
        if over.access_compat.is_some() {
            self.access_compat.clone_from(&over.access_compat);
        }
        if over.directory_index.is_some() {
            self.directory_index.clone_from(&over.directory_index);
        }
        self.error_documents.extend(over.error_documents.iter().cloned());
        self.add_types.extend(over.add_types.iter().cloned());
        self.mime.merge(&over.mime);
        if over.add_default_charset.is_some() {
            self.add_default_charset.clone_from(&over.add_default_charset);
        }
        if over.limit_request_body.is_some() {
            self.limit_request_body = over.limit_request_body;
        }
        if over.handler.is_some() {
            self.handler.clone_from(&over.handler);
        }
        self.scripts.extend(over.scripts.iter().cloned());
        if over.fcgi_backend_type.is_some() {
            self.fcgi_backend_type = over.fcgi_backend_type;
        }
        if over.fallback_resource.is_some() {
            self.fallback_resource.clone_from(&over.fallback_resource);
        }
        if over.directory_slash.is_some() {
            self.directory_slash = over.directory_slash;
        }
        if over.ssl_require_ssl.is_some() {
            self.ssl_require_ssl = over.ssl_require_ssl;
        }
        if over.ssl_std_env_vars.is_some() {
            self.ssl_std_env_vars = over.ssl_std_env_vars;
        }
        if over.h2_upgrade.is_some() {
            self.h2_upgrade.clone_from(&over.h2_upgrade);
        }
        if over.h2_stream_timeout.is_some() {
            self.h2_stream_timeout.clone_from(&over.h2_stream_timeout);
        }
        if over.index_ignore_reset == Some(true) {
            self.index_ignore.clear();
        }
        self.index_ignore.extend(over.index_ignore.iter().cloned());
        if over.index_ignore_reset.is_some() {
            self.index_ignore_reset = over.index_ignore_reset;
        }
        // The more specific section's redirects are tried first, as in Apache.
        if !over.redirects.is_empty() {
            let base = std::mem::take(&mut self.redirects);
            self.redirects = over.redirects.iter().cloned().chain(base).collect();
        }
        if over.allow_override.is_some() {
            self.allow_override.clone_from(&over.allow_override);
        }
        if over.accept_path_info.is_some() {
            self.accept_path_info = over.accept_path_info;
        }
        if over.cgi_pass_auth.is_some() {
            self.cgi_pass_auth = over.cgi_pass_auth;
        }
        if over.cgi_current_uri.is_some() {
            self.cgi_current_uri = over.cgi_current_uri;
        }
        // Only a virtual host's config is merged over the main server's
        // (sections stay layers): the server-context merge of mod_rewrite.
        if self.rewrite.is_some() || over.rewrite.is_some() {
            let main = self.rewrite.take().unwrap_or_default();
            self.rewrite = Some(warren_rewrite::rules::merge_server(&main, over.rewrite.as_ref().unwrap_or(&Default::default())));
        }
        self.headers.extend(over.headers.iter().cloned());
        self.request_headers.extend(over.request_headers.iter().cloned());
        if over.expires_active.is_some() {
            self.expires_active = over.expires_active;
        }
        self.expires_by_type.extend(over.expires_by_type.iter().cloned());
        if over.expires_default.is_some() {
            self.expires_default = over.expires_default;
        }
        self.env.extend(over.env.iter().cloned());
        self.set_env_if.extend(over.set_env_if.iter().cloned());
        self.php.extend(over.php.iter().cloned());
        if let Some(over) = &over.output_filters {
            self.output_filters.get_or_insert_with(Default::default).merge(over);
        }
    }

    /// Whether this layer has anything for the response filters or the
    /// request environment: checked per request, so that a site without
    /// such directives pays nothing more.
    pub fn has_filters(&self) -> bool {
        !self.headers.is_empty()
            || !self.request_headers.is_empty()
            || self.expires_active.is_some()
            || !self.expires_by_type.is_empty()
            || self.expires_default.is_some()
            || !self.env.is_empty()
            || !self.set_env_if.is_empty()
    }
}

#[derive(Clone, Debug)]
pub enum SectionMatch {
    /// `<Directory /path>` (a glob pattern when it has wildcards).
    Directory(String),
    DirectoryMatch(Regex),
    Files(String),
    FilesMatch(Regex),
    Location(String),
    LocationMatch(Regex),
    /// `<If>`, `<ElseIf>`, `<Else>`.
    If(IfTest),
}

#[derive(Clone, Debug)]
pub struct DirSection {
    pub matcher: SectionMatch,
    /// For `<Files>` nested in a `<Directory>`: that directory.
    pub within: Option<Box<SectionMatch>>,
    pub config: DirConfig,
    pub origin: Origin,
}

/// When an `<If>`, `<ElseIf>` or `<Else>` section applies: its expression
/// (none for `<Else>`) holds and none of those of the sections before it in
/// its chain did.
#[derive(Clone, Debug)]
pub struct IfTest {
    pub expr: Option<Expr>,
    pub unless: Vec<Expr>,
    /// The section around the one the `<If>` stands in (its `within`),
    /// which must apply too: `<Directory>` around `<FilesMatch>`.
    pub around: Option<Box<SectionMatch>>,
    /// The `<If>` this one is nested in, which must hold too.
    pub outer: Option<Box<IfTest>>,
}

impl IfTest {
    pub fn holds(&self, facts: &dyn Facts) -> bool {
        self.outer.as_ref().is_none_or(|o| o.holds(facts)) && !self.unless.iter().any(|e| e.holds(facts)) && self.expr.as_ref().is_none_or(|e| e.holds(facts))
    }
}
