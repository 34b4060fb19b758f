//! mod_env and mod_setenvif, the request half (the directives are read in
//! `warren_config::env_vars`): the request's environment filled from the
//! SetEnvIf, SetEnv and UnsetEnv lines of the layers that apply.

use warren_config::env_vars::{Attribute, EnvAction, EnvSet};

use crate::dir_config::Effective;
use crate::env::RequestEnv;
use crate::request::Request;

impl RequestEnv {
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
                if let Attribute::Expr(e) = &rule.attribute {
                    let facts = crate::expr_facts::RouteFacts { site: None, req, url, fs: None, env: &env };
                    let Some(caps) = e.captures(&facts) else { continue };
                    for set in &rule.sets {
                        match set {
                            EnvSet::Set(name, value) => env.set(name.clone(), warren_config::expr::Expr::expand(value, &caps)),
                            EnvSet::Unset(name) => env.unset(name),
                        }
                    }
                    continue;
                }
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
        Attribute::Expr(_) => return None,
        Attribute::HeaderPattern(re) => {
            let (_, v) = req.head.headers().find(|(n, _)| re.is_match(&String::from_utf8_lossy(n)))?;
            text(v)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dir_config::Layer;

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
        let eff = Effective { layers: vec![Layer::Site(&server), Layer::Site(&section)], htaccess_error: None, htaccess_deferred: false, conditional: Vec::new(), expr_granted: Vec::new() };
        let env = RequestEnv::for_request(req, b"/img/x.png", &eff);
        assert_eq!(env.iter().collect::<Vec<_>>(), vec![("kind", "png"), ("static", "overridden"), ("net", "test")]);
    }
}
