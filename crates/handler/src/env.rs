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
    /// REDIRECT_URL's bytes: the URL path an internal redirect left, which
    /// need not be UTF-8 (`/caf%E9` decoded), where the variable holds text.
    url: Vec<u8>,
}

/// The environment of a request before anything set a variable.
pub static EMPTY: RequestEnv = RequestEnv { vars: Vec::new(), url: Vec::new() };

impl RequestEnv {
    /// The environment of the request an internal redirect starts: every
    /// variable renamed `REDIRECT_NAME`, with REDIRECT_STATUS and
    /// REDIRECT_URL (and REDIRECT_QUERY_STRING) of the request it leaves.
    pub fn redirected(&self, status: u16, url: &[u8], query: Option<&str>) -> RequestEnv {
        let mut vars: Vec<(String, String)> = self.vars.iter().map(|(n, v)| (format!("REDIRECT_{n}"), v.clone())).collect();
        vars.retain(|(n, _)| !["REDIRECT_STATUS", "REDIRECT_URL", "REDIRECT_QUERY_STRING"].iter().any(|x| n.eq_ignore_ascii_case(x)));
        vars.push(("REDIRECT_STATUS".into(), status.to_string()));
        vars.push(("REDIRECT_URL".into(), String::from_utf8_lossy(url).into_owned()));
        if let Some(q) = query {
            vars.push(("REDIRECT_QUERY_STRING".into(), q.to_string()));
        }
        RequestEnv { vars, url: url.to_vec() }
    }

    /// The bytes of variable `name` whose text is `value`: REDIRECT_URL's
    /// as the redirect left it (Apache passes r->prev->uri as is), any
    /// other's as its text.
    pub fn bytes_of<'a>(&'a self, name: &str, value: &'a str) -> &'a [u8] {
        if name.eq_ignore_ascii_case("REDIRECT_URL") && String::from_utf8_lossy(&self.url) == value {
            &self.url
        } else {
            value.as_bytes()
        }
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
        let r = e.redirected(200, b"/x", Some("q=1"));
        assert_eq!((r.get("A"), r.get("REDIRECT_A"), r.get("REDIRECT_STATUS"), r.get("REDIRECT_URL"), r.get("REDIRECT_QUERY_STRING")), (None, Some("3"), Some("200"), Some("/x"), Some("q=1")));
        assert_eq!(r.redirected(200, b"/y", None).get("REDIRECT_REDIRECT_A"), Some("3"));
        // REDIRECT_URL's bytes, which need not be UTF-8.
        let r = e.redirected(200, b"/caf\xe9", None);
        assert_eq!(r.get("REDIRECT_URL"), Some("/caf\u{fffd}"));
        assert_eq!(r.bytes_of("REDIRECT_URL", "/caf\u{fffd}"), b"/caf\xe9");
        assert_eq!(r.bytes_of("REDIRECT_URL", "/other"), b"/other", "a value set otherwise is its own");
        assert_eq!(r.bytes_of("A", "3"), b"3");
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
