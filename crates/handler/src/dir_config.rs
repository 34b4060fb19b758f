//! The per-directory configuration in force for one request
//! ([`Effective`]): the layers of `<Directory>`, `<Files>`, `<Location>`
//! sections and `.htaccess` files that apply, least specific first, and
//! what each directive's value is once they are merged. The request half of
//! `warren_config::dir_config`; dir_walk.rs finds the layers.

use warren_config::expr::Facts;
use warren_config::mime::{ExtAttr, ForcePriority, MultiviewsMatch};
use warren_config::{ConfigError, DirConfig, DirSection, SectionMatch, ErrorDocument, FcgiBackend, FcgiBackendType, Handler, OptionFlags, Require};

use warren_http::RequestHead;

use crate::auth;
use crate::conn::ConnInfo;
use crate::htaccess;

/// Apache's default LimitRequestBody (1 GiB) since 2.4.53.
pub const DEFAULT_LIMIT_REQUEST_BODY: u64 = 1 << 30;

/// What the access rules make of a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Access {
    Granted,
    /// 403.
    Denied,
    /// 401, with the realm to name.
    Unauthorized(String),
    /// A password must be hashed: not on an event loop's thread.
    MustHash,
    /// The configuration or a password file is wrong: 500, and this to log.
    Error(String),
}

/// One layer of per-directory configuration: a section of the server's
/// configuration, or one of an `.htaccess` file's (by index).
pub enum Layer<'a> {
    Site(&'a DirConfig),
    File(htaccess::Read, usize),
}

impl std::ops::Deref for Layer<'_> {
    type Target = DirConfig;
    fn deref(&self) -> &DirConfig {
        match self {
            Layer::Site(c) => c,
            Layer::File(read, i) => match &**read {
                Ok(file) => &file.sections[*i].config,
                Err(_) => unreachable!("only files read without error are layers"),
            },
        }
    }
}

/// The DirConfig layers that apply to one request, least specific first.
pub struct Effective<'a> {
    pub layers: Vec<Layer<'a>>,
    /// An `.htaccess` file on the way that has an error: the request is
    /// answered 500, as in Apache.
    pub htaccess_error: Option<htaccess::Read>,
    /// An `.htaccess` file on the way was not read, on an event loop's
    /// thread: the layers stop short of it, and the request is routed on a
    /// worker thread ([`crate::Outcome::OffLoop`]).
    pub htaccess_deferred: bool,
    /// The `<If>` sections that may apply, in Apache's order: merged last,
    /// once what they test is known ([`Effective::apply_ifs`]).
    pub conditional: Vec<Conditional<'a>>,
    /// The `Require expr` rules in force (by address) that hold for the
    /// request: none until [`Effective::apply_ifs`] is given the request's
    /// facts (denied).
    pub expr_granted: Vec<usize>,
}

/// An `<If>`, `<ElseIf>` or `<Else>` section of the server's configuration
/// or of an `.htaccess` file (by index).
pub enum Conditional<'a> {
    Site(&'a DirSection),
    File(htaccess::Read, usize),
}

impl<'a> Effective<'a> {
    /// The host's own settings alone, outside every section.
    pub fn of_host(dir: &'a warren_config::DirConfig) -> Effective<'a> {
        Effective { layers: vec![Layer::Site(dir)], htaccess_error: None, htaccess_deferred: false, conditional: Vec::new(), expr_granted: Vec::new() }
    }

    /// Merges the `<If>` sections whose conditions hold for the request
    /// `facts` describes, after every other layer (Apache's `ap_if_walk`),
    /// then settles the `Require expr` rules in force for it.
    pub fn apply_ifs(&mut self, facts: &dyn Facts) {
        let holds = |s: &DirSection| matches!(&s.matcher, SectionMatch::If(test) if test.holds(facts));
        for c in std::mem::take(&mut self.conditional) {
            match c {
                Conditional::Site(s) if holds(s) => self.layers.push(Layer::Site(&s.config)),
                Conditional::File(read, i) if read.as_ref().as_ref().is_ok_and(|f| holds(&f.sections[i])) => self.layers.push(Layer::File(read, i)),
                _ => {}
            }
        }
        fn holding(rules: &[Require], facts: &dyn Facts, out: &mut Vec<usize>) {
            for r in rules {
                match r {
                    Require::Expr(e) if e.holds(facts) => out.push(e as *const _ as usize),
                    Require::Block(_, inner) => holding(inner, facts, out),
                    _ => {}
                }
            }
        }
        let mut granted = Vec::new();
        if let Some(rules) = self.require() {
            holding(rules, facts, &mut granted);
        }
        self.expr_granted = granted;
    }
}

impl Effective<'_> {
    /// The error of the `.htaccess` file on the way that has one.
    pub fn htaccess_error(&self) -> Option<&ConfigError> {
        self.htaccess_error.as_deref().and_then(|r| r.as_ref().err())
    }

    /// Whether the `Require` rules in force let the client in, and
    /// SSLRequireSSL, over TLS only.
    pub fn allows(&self, head: &RequestHead, conn: &ConnInfo) -> bool {
        matches!(self.access(head, conn, true), Access::Granted)
    }

    /// The AuthGroupFile in force.
    pub(crate) fn group_file(&self) -> Option<&std::path::Path> {
        self.last(|l| l.auth.group_file.as_deref())
    }

    /// The user the request's credentials prove, under `AuthType Basic`:
    /// Ok(None) for none or wrong ones.
    pub(crate) fn authenticated(&self, head: &RequestHead, may_hash: bool) -> Result<Option<String>, Access> {
        if self.last(|l| l.auth.basic.as_ref()) != Some(&true) {
            return Err(Access::Error("a Require of users without AuthType Basic".into()));
        }
        let Some(file) = self.last(|l| l.auth.user_file.as_ref()) else {
            return Err(Access::Error("AuthType Basic without an AuthUserFile".into()));
        };
        let Some(c) = auth::Credentials::of(head) else { return Ok(None) };
        match auth::check(file, &c, may_hash) {
            Ok(Some(true)) => Ok(Some(c.user)),
            Ok(Some(false)) => Ok(None),
            Ok(None) => Err(Access::MustHash),
            Err(e) => Err(Access::Error(e)),
        }
    }

    /// REMOTE_USER: the user whose password matched, under AuthType Basic.
    pub fn remote_user(&self, head: &RequestHead) -> Option<String> {
        self.authenticated(head, false).ok().flatten()
    }

    pub fn options(&self) -> OptionFlags {
        let mut f = OptionFlags::DEFAULT;
        for l in &self.layers {
            for spec in &l.options {
                f = spec.apply(f);
            }
        }
        f
    }

    /// Whether an `.htaccess` file on the way has regular expressions that
    /// routing runs (rewrite rules, SetEnvIf, RedirectMatch, `<If>`,
    /// `Require expr`): a site owner's patterns, which may be slow to match.
    pub fn runs_htaccess_patterns(&self) -> bool {
        use warren_config::alias::UrlMatch;
        self.layers.iter().any(|l| {
            matches!(l, Layer::File(..))
                && (l.rewrite.as_ref().is_some_and(|r| !r.rules.is_empty())
                    || !l.set_env_if.is_empty()
                    || l.redirects.iter().any(|r| matches!(r.url, UrlMatch::Regex(_)))
                    || l.require.as_ref().is_some_and(|rules| rules.iter().any(|r| matches!(r, Require::Expr(_)))))
        }) || self.conditional.iter().any(|c| matches!(c, Conditional::File(..)))
    }

    pub(crate) fn last<'s, T: ?Sized>(&'s self, get: impl Fn(&'s DirConfig) -> Option<&'s T>) -> Option<&'s T> {
        self.layers.iter().rev().find_map(|l| get(l))
    }

    pub fn require(&self) -> Option<&[Require]> {
        self.last(|l| l.require.as_deref())
    }

    /// IndexIgnore's patterns in force: each level's added to those above
    /// it, unless IndexIgnoreReset On drops those.
    pub fn index_ignore(&self) -> Vec<String> {
        let mut patterns = Vec::new();
        for l in &self.layers {
            if l.index_ignore_reset == Some(true) {
                patterns.clear();
            }
            patterns.extend(l.index_ignore.iter().cloned());
        }
        patterns
    }

    pub fn directory_index(&self) -> &[String] {
        self.last(|l| l.directory_index.as_deref()).unwrap_or(&[])
    }

    pub fn error_document(&self, status: u16) -> Option<&ErrorDocument> {
        self.layers.iter().rev().find_map(|l| l.error_documents.iter().rev().find(|(c, _)| *c == status).map(|(_, d)| d))
    }

    pub fn add_types(&self) -> impl Iterator<Item = &(String, String)> {
        self.layers.iter().rev().flat_map(|l| l.add_types.iter().rev())
    }

    /// What the most specific AddEncoding, AddCharset, AddLanguage or
    /// `AddHandler type-map` says of `ext` (lower case): None where nothing
    /// does, or a Remove* line has the last word.
    pub fn ext_attr(&self, attr: ExtAttr, ext: &str) -> Option<&str> {
        let found = self.layers.iter().rev().flat_map(|l| l.mime.by_ext.iter().rev()).find(|(a, e, _)| *a == attr && e == ext);
        found.map(|(_, _, v)| v.as_str()).filter(|v| !v.is_empty())
    }

    /// Whether any layer types by extension beyond AddType (a site without
    /// AddEncoding, AddLanguage... pays nothing more per file).
    pub fn has_ext_attrs(&self) -> bool {
        self.layers.iter().any(|l| !l.mime.by_ext.is_empty() || l.mime.default_language.is_some() || l.mime.force_type.is_some())
    }

    pub fn force_type(&self) -> Option<&str> {
        self.last(|l| l.mime.force_type.as_ref()).and_then(|t| t.as_deref())
    }

    pub fn default_language(&self) -> Option<&str> {
        self.last(|l| l.mime.default_language.as_deref())
    }

    pub fn language_priority(&self) -> &[String] {
        self.last(|l| l.mime.language_priority.as_deref()).unwrap_or(&[])
    }

    /// ForceLanguagePriority (Prefer unless set, as in Apache).
    pub fn force_language_priority(&self) -> ForcePriority {
        self.layers.iter().rev().find_map(|l| l.mime.force_language_priority).unwrap_or(ForcePriority { prefer: true, fallback: false })
    }

    pub fn multiviews_match(&self) -> MultiviewsMatch {
        self.layers.iter().rev().find_map(|l| l.mime.multiviews_match).unwrap_or_default()
    }

    pub fn default_charset(&self) -> Option<&str> {
        self.last(|l| l.add_default_charset.as_ref()).and_then(|c| c.as_deref())
    }

    /// SetHandler in force: None if never set, Some(None) if reset.
    pub fn handler(&self) -> Option<Option<&Handler>> {
        self.layers.iter().rev().find_map(|l| l.handler.as_ref()).map(|h| h.as_ref())
    }

    /// FallbackResource in force.
    pub fn fallback_resource(&self) -> Option<&str> {
        self.layers.iter().rev().find_map(|l| l.fallback_resource.as_ref()).and_then(|f| f.as_deref())
    }

    /// DirectorySlash (On unless set).
    pub fn directory_slash(&self) -> bool {
        self.layers.iter().rev().find_map(|l| l.directory_slash).unwrap_or(true)
    }

    /// AcceptPathInfo: None for Default.
    pub fn accept_path_info(&self) -> Option<bool> {
        self.layers.iter().rev().find_map(|l| l.accept_path_info).flatten()
    }

    pub fn fcgi_backend_type(&self) -> FcgiBackendType {
        self.layers.iter().rev().find_map(|l| l.fcgi_backend_type).unwrap_or(FcgiBackendType::Fpm)
    }

    /// LimitRequestBody in force, as a bound (`0`, no limit, is `u64::MAX`).
    pub fn limit_request_body(&self) -> u64 {
        match self.layers.iter().rev().find_map(|l| l.limit_request_body).unwrap_or(DEFAULT_LIMIT_REQUEST_BODY) {
            0 => u64::MAX,
            limit => limit,
        }
    }
}

/// The backend a FastCGI handler names.
pub fn backend_of(h: &Handler) -> FcgiBackend {
    match h {
        Handler::FastCgi(b) => b.clone(),
        Handler::Pool(name) => FcgiBackend { addr: warren_config::FcgiAddr::Pool(name.clone()), reuse: false, timeout: None, flush_packets: false },
        Handler::ServerStatus | Handler::Metrics | Handler::BalancerManager | Handler::MdStatus | Handler::TypeMap | Handler::Refused { .. } => unreachable!("not a FastCGI handler"),
    }
}
