//! mod_md's http-01 answers: `GET /.well-known/acme-challenge/TOKEN` is
//! answered from MDStoreDir's `challenges/` directory, where the ACME
//! helper (warren-acme) writes one key authorization per token, before any
//! rewrite rule, Redirect or `.htaccess` file of the host is consulted, so
//! a site's own rules can neither shadow nor redirect the CA's request.
//! Taken only when the configuration has an MDomain; any other path under
//! the prefix (an unknown token, a name that is not a token) is 404.

use crate::request::Request;
use crate::{Body, Outcome, Response, Site};

const PREFIX: &[u8] = b"/.well-known/acme-challenge/";

/// RFC 8555 §8.3: a token is base64url, no padding; 128 bits at least,
/// and no CA sends more than a few hundred characters.
fn is_token(t: &[u8]) -> bool {
    (16..=256).contains(&t.len()) && t.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_')
}

impl Site {
    /// The answer to an http-01 challenge request on the normalised `url`,
    /// if it is one.
    pub(crate) fn acme_challenge(&self, req: Request, url: &[u8]) -> Option<Outcome> {
        if self.settings.md.domains.is_empty() {
            return None;
        }
        let token = url.strip_prefix(PREFIX)?;
        let found = is_token(token)
            .then(|| std::str::from_utf8(token).ok())
            .flatten()
            .and_then(|t| std::fs::read(warren_config::md::challenges_dir(&self.settings.md.store_dir).join(t)).ok());
        Some(Outcome::Ready(match found {
            Some(key_authorization) => {
                let mut r = Response::new(200, req.host).header("Content-Type", "text/plain");
                r.body = Body::Bytes(key_authorization);
                r
            }
            None => self.error(req, 404, &format!("ACME challenge: no key authorization for {}", String::from_utf8_lossy(url))),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::is_token;

    #[test]
    fn tokens_are_base64url_only() {
        assert!(is_token(b"LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0"));
        for bad in [&b"../../etc/passwd"[..], b"a%2e%2e%2fb-0123456789ab", b"abc", b"token\0with-a-nul-0000", b"back\\slash-00000000000"] {
            assert!(!is_token(bad), "{}", String::from_utf8_lossy(bad));
        }
    }
}
