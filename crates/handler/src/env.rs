//! The request environment: Apache's `subprocess_env`, the variables a
//! request carries from the configuration to whatever uses them. One type,
//! [`RequestEnv`], with get/set/unset/iter; filled by mod_rewrite's `[E=]`
//! (carried on the [`Request`]), then mod_setenvif's and mod_env's
//! directives ([`RequestEnv::for_request`]), renamed `REDIRECT_*` by an
//! internal redirect ([`RequestEnv::redirected`]); read by the
//! FastCGI parameters (each variable is one), by `Header ... env=VAR` and
//! `%{VAR}e` in header values, and by the response filters for Apache's
//! special variables (`nokeepalive` closes the connection after the
//! response; `no-gzip` is for a compression filter).

use warren_config::env_vars::{Attribute, EnvAction, EnvSet};

use crate::route::{Effective, Request};

/// Variables by name; names compare without regard to case, as in Apache's
/// tables. Few per request, so a list.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestEnv {
    vars: Vec<(String, String)>,
}

/// The environment of a request before anything set a variable.
pub static EMPTY: RequestEnv = RequestEnv { vars: Vec::new() };

impl RequestEnv {
    /// The environment of the request an internal redirect starts: every
    /// variable renamed `REDIRECT_NAME`, with REDIRECT_STATUS and
    /// REDIRECT_URL (and REDIRECT_QUERY_STRING) of the request it leaves.
    pub fn redirected(&self, status: u16, url: &str, query: Option<&str>) -> RequestEnv {
        let mut vars: Vec<(String, String)> = self.vars.iter().map(|(n, v)| (format!("REDIRECT_{n}"), v.clone())).collect();
        vars.retain(|(n, _)| !["REDIRECT_STATUS", "REDIRECT_URL", "REDIRECT_QUERY_STRING"].iter().any(|x| n.eq_ignore_ascii_case(x)));
        vars.push(("REDIRECT_STATUS".into(), status.to_string()));
        vars.push(("REDIRECT_URL".into(), url.to_string()));
        if let Some(q) = query {
            vars.push(("REDIRECT_QUERY_STRING".into(), q.to_string()));
        }
        RequestEnv { vars }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let (name, value) = (name.into(), value.into());
        match self.vars.iter_mut().find(|(n, _)| n.eq_ignore_ascii_case(&name)) {
            Some((_, v)) => *v = value,
            None => self.vars.push((name, value)),
        }
    }

    pub fn unset(&mut self, name: &str) {
        self.vars.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
    }

    /// In the order they were first set.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// The environment of a request whose URL path is `url`: each layer's
    /// SetEnvIf lines (the server's first, as Apache runs them before the
    /// URL is mapped), then SetEnv and UnsetEnv (Apache's fixups).
    pub fn for_request(req: Request, url: &[u8], dir: &Effective) -> RequestEnv {
        let mut env = Self::set_env_if(req, url, dir);
        for layer in &dir.layers {
            for action in &layer.env {
                match action {
                    EnvAction::Set(n, v) => env.set(n.clone(), v.clone()),
                    EnvAction::Unset(n) => env.unset(n),
                }
            }
        }
        env
    }

    /// The request's environment with the SetEnvIf lines of `dir` run: what
    /// mod_rewrite's rules can read (SetEnv comes later, as in Apache).
    pub fn set_env_if(req: Request, url: &[u8], dir: &Effective) -> RequestEnv {
        // What mod_rewrite's rules set (and an internal redirect carried) comes first.
        let mut env = req.env.clone();
        for layer in &dir.layers {
            for rule in &layer.set_env_if {
                let Some(subject) = attribute(req, url, &rule.attribute, &env) else { continue };
                let Some(caps) = rule.pattern.captures(&subject) else { continue };
                for set in &rule.sets {
                    match set {
                        EnvSet::Set(name, value) => {
                            let mut v = String::new();
                            warren_regex::expand(value, &caps, &mut v);
                            env.set(name.clone(), v);
                        }
                        EnvSet::Unset(name) => env.unset(name),
                    }
                }
            }
        }
        env
    }
}

/// What a SetEnvIf line tests, for this request (None: nothing to test).
fn attribute(req: Request, url: &[u8], a: &Attribute, env: &RequestEnv) -> Option<String> {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Some(match a {
        Attribute::RemoteHost | Attribute::RemoteAddr => req.conn.useragent.ip().to_string(),
        Attribute::ServerAddr => req.conn.local.ip().to_string(),
        Attribute::RequestMethod => req.head.method().to_string(),
        Attribute::RequestProtocol => req.head.version.as_str().to_string(),
        Attribute::RequestUri => text(url),
        Attribute::Header(name) => match req.head.header(name) {
            Some(v) => text(v),
            None => env.get(name)?.to_string(),
        },
        Attribute::HeaderPattern(re) => {
            let (_, v) = req.head.headers().find(|(n, _)| re.is_match(&String::from_utf8_lossy(n)))?;
            text(v)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_internal_redirect_renames_the_variables() {
        let mut e = RequestEnv::default();
        e.set("A", "3");
        let r = e.redirected(200, "/x", Some("q=1"));
        assert_eq!((r.get("A"), r.get("REDIRECT_A"), r.get("REDIRECT_STATUS"), r.get("REDIRECT_URL"), r.get("REDIRECT_QUERY_STRING")), (None, Some("3"), Some("200"), Some("/x"), Some("q=1")));
        assert_eq!(r.redirected(200, "/y", None).get("REDIRECT_REDIRECT_A"), Some("3"));
    }

    #[test]
    fn set_env_if_then_set_env_in_layer_order() {
        use std::sync::Arc;
        use warren_config::env_vars::{parse_set_env, SetEnvIf};
        use warren_config::DirConfig;
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (head, _) = warren_http::parse_head(
            b"POST /img/x.png HTTP/1.1\r\nHost: h\r\nX-Forwarded-Proto: https\r\n\r\n",
            &warren_http::HeadLimits { request_line: 100, field_size: 100, fields: 10, head: 1000 },
        )
        .unwrap()
        .unwrap();
        let conn = crate::ConnInfo::new("192.0.2.7:4000".parse().unwrap(), "127.0.0.1:80".parse().unwrap());
        let req = Request::new(&head, &conn, 0);
        let mut server = DirConfig::default();
        for (a, nocase) in [(&["X-Forwarded-Proto", "^HTTPS$", "HTTPS=on"][..], true), (&["Request_URI", "\\.(png|gif)$", "kind=$1", "static"][..], false)] {
            server.set_env_if.push(Arc::new(SetEnvIf::parse(&args(a), nocase, false).unwrap()));
        }
        server.env.push(parse_set_env(&args(&["static", "overridden"])).unwrap());
        let mut section = DirConfig::default();
        // An attribute that is no header: the variable set above.
        section.set_env_if.push(Arc::new(SetEnvIf::parse(&args(&["kind", "png", "!HTTPS", "remote=ok"]), false, false).unwrap()));
        section.set_env_if.push(Arc::new(SetEnvIf::parse(&args(&["Remote_Addr", "^192\\.0\\.2\\.", "net=test"]), false, false).unwrap()));
        section.set_env_if.push(Arc::new(SetEnvIf::parse(&args(&["Request_Method", "GET", "never"]), false, false).unwrap()));
        section.env.push(warren_config::env_vars::EnvAction::Unset("remote".into()));
        let eff = Effective { layers: vec![crate::route::Layer::Site(&server), crate::route::Layer::Site(&section)], htaccess_error: None, htaccess_deferred: false };
        let env = RequestEnv::for_request(req, b"/img/x.png", &eff);
        assert_eq!(env.iter().collect::<Vec<_>>(), vec![("kind", "png"), ("static", "overridden"), ("net", "test")]);
    }

    #[test]
    fn names_ignore_case_and_set_replaces() {
        let mut e = RequestEnv::default();
        e.set("HTTPS", "on");
        e.set("https", "off");
        assert_eq!(e.get("Https"), Some("off"));
        assert_eq!(e.iter().count(), 1);
        e.set("b", "");
        e.unset("HTTPS");
        assert_eq!(e.iter().collect::<Vec<_>>(), vec![("b", "")]);
        assert!(!e.is_empty());
    }
}
