//! The request environment: Apache's `subprocess_env`, the variables a
//! request carries from the configuration to whatever uses them. One type,
//! [`RequestEnv`], with get/set/unset/iter; filled by mod_rewrite's `[E=]`
//! (carried on the request), then mod_setenvif's and mod_env's
//! directives (`RequestEnv::for_request`, env_vars.rs), renamed `REDIRECT_*` by an
//! internal redirect ([`RequestEnv::redirected`]); read by the
//! FastCGI parameters (each variable is one), by `Header ... env=VAR` and
//! `%{VAR}e` in header values, and by the response filters for Apache's
//! special variables (`nokeepalive` closes the connection after the
//! response; `no-gzip` is for a compression filter).

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
