//! A request's environment variables (Apache's `subprocess_env`), as
//! mod_rewrite's `[E=VAR:VAL]` sets them and `%{ENV:VAR}` reads them. They
//! go to FastCGI applications with the CGI variables, and an internal
//! redirect passes them on renamed `REDIRECT_VAR`, as Apache does.

/// Names and values in the order they were set; few per request, so a
/// list beats a map.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestEnv {
    vars: Vec<(String, String)>,
}

/// The environment of a request before anything set a variable.
pub static EMPTY: RequestEnv = RequestEnv { vars: Vec::new() };

impl RequestEnv {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn set(&mut self, name: &str, value: String) {
        match self.vars.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v = value,
            None => self.vars.push((name.to_string(), value)),
        }
    }

    pub fn unset(&mut self, name: &str) {
        self.vars.retain(|(n, _)| n != name);
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// The environment of the request an internal redirect starts: every
    /// variable renamed `REDIRECT_NAME`, with REDIRECT_STATUS and
    /// REDIRECT_URL (and REDIRECT_QUERY_STRING) of the request it leaves.
    pub fn redirected(&self, status: u16, url: &str, query: Option<&str>) -> RequestEnv {
        let mut vars: Vec<(String, String)> = self.vars.iter().map(|(n, v)| (format!("REDIRECT_{n}"), v.clone())).collect();
        vars.retain(|(n, _)| n != "REDIRECT_STATUS" && n != "REDIRECT_URL" && n != "REDIRECT_QUERY_STRING");
        vars.push(("REDIRECT_STATUS".into(), status.to_string()));
        vars.push(("REDIRECT_URL".into(), url.to_string()));
        if let Some(q) = query {
            vars.push(("REDIRECT_QUERY_STRING".into(), q.to_string()));
        }
        RequestEnv { vars }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_unset_and_redirect_renaming() {
        let mut e = RequestEnv::default();
        e.set("A", "1".into());
        e.set("B", "2".into());
        e.set("A", "3".into());
        e.unset("B");
        assert_eq!(e.iter().collect::<Vec<_>>(), [("A", "3")]);
        let r = e.redirected(200, "/x", Some("q=1"));
        assert_eq!(r.get("REDIRECT_A"), Some("3"));
        assert_eq!((r.get("A"), r.get("REDIRECT_STATUS"), r.get("REDIRECT_URL"), r.get("REDIRECT_QUERY_STRING")), (None, Some("200"), Some("/x"), Some("q=1")));
        assert_eq!(r.redirected(200, "/y", None).get("REDIRECT_REDIRECT_A"), Some("3"));
    }
}
