//! mod_authz_core's evaluation of `Require` rules: each line grants or
//! denies, and `<RequireAll>`, `<RequireAny>` and `<RequireNone>` combine
//! them as Apache does, a block that decides nothing being neutral. The
//! request's credentials are checked at most once, and only when a rule
//! about users is reached. [`Effective::access`] is the entry: what the
//! rules in force, with SSLRequireSSL and mod_access_compat's lines, make
//! of a request.

use warren_config::{Combine, Require};
use warren_http::RequestHead;

use crate::auth;
use crate::conn::ConnInfo;
use crate::dir_config::{Access, Effective};
use crate::sections::ip_in;

impl Effective<'_> {
    /// What the `Require` rules in force (several lines: any grants) make
    /// of this request. A user's rule authenticates the request's Basic
    /// credentials; `may_hash` false: a password not already known to
    /// match is [`Access::MustHash`] rather than hashed here.
    pub fn access(&self, head: &RequestHead, conn: &ConnInfo, may_hash: bool) -> Access {
        if conn.tls.is_none() && self.last(|l| l.ssl_require_ssl.as_ref()) == Some(&true) {
            return Access::Denied;
        }
        // mod_access_compat's lines with the Require rules: under Satisfy
        // All (the default) both must let the client in, under Any either.
        if let Some(compat) = self.last(|l| l.access_compat.as_ref()) {
            let passes = compat.allows(conn.useragent.ip());
            if passes && compat.satisfy_any {
                return Access::Granted;
            }
            // Satisfy Any lets credentials stand in for the address only
            // where the rules ask for a user (Apache: when the access check
            // fails and no authentication is required, its failure stands).
            let credentials_stand_in = compat.satisfy_any && self.require().is_some_and(|rules| rules.iter().any(Require::wants_user));
            if !passes && !credentials_stand_in {
                return Access::Denied;
            }
        }
        self.access_by_require(head, conn, may_hash)
    }

    fn access_by_require(&self, head: &RequestHead, conn: &ConnInfo, may_hash: bool) -> Access {
        let Some(rules) = self.require() else { return Access::Granted };
        let mut authz = Authz { dir: self, head, conn, may_hash, user: None };
        match authz.any(rules) {
            Err(a) => a,
            Ok(Verdict::Granted) => Access::Granted,
            Ok(_) if rules.iter().any(Require::wants_user) => Access::Unauthorized(self.last(|l| l.auth.name.as_deref()).unwrap_or("").to_owned()),
            Ok(_) => Access::Denied,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Granted,
    Denied,
    /// Neither (a `<RequireNone>` none of whose rules matched).
    Neutral,
}

pub(crate) struct Authz<'e, 'a> {
    pub dir: &'e Effective<'a>,
    pub head: &'e RequestHead,
    pub conn: &'e ConnInfo,
    pub may_hash: bool,
    /// The user the credentials proved, once checked.
    pub user: Option<Option<String>>,
}

impl Authz<'_, '_> {
    /// Several lines, or `<RequireAny>`: one granting grants.
    pub fn any(&mut self, rules: &[Require]) -> Result<Verdict, Access> {
        let mut all_neutral = true;
        for r in rules {
            match self.rule(r)? {
                Verdict::Granted => return Ok(Verdict::Granted),
                Verdict::Denied => all_neutral = false,
                Verdict::Neutral => {}
            }
        }
        Ok(if all_neutral { Verdict::Neutral } else { Verdict::Denied })
    }

    fn rule(&mut self, r: &Require) -> Result<Verdict, Access> {
        let (peer, local) = (self.conn.useragent.ip(), self.conn.local.ip());
        let granted = match r {
            Require::All(g) => *g,
            Require::Local => peer.is_loopback() || peer == local,
            // Apache counts HEAD as GET (M_GET).
            Require::Method(names) => {
                let m = self.head.method();
                names.iter().any(|n| n == m || (n == "GET" && m == "HEAD"))
            }
            Require::Ip(nets) => nets.iter().any(|(net, len)| ip_in(peer, *net, *len)),
            // Settled with the request's facts when the `<If>` sections were.
            Require::Expr(e) => self.dir.expr_granted.contains(&(e as *const _ as usize)),
            Require::ValidUser => self.user()?.is_some(),
            Require::User(names) => self.user()?.is_some_and(|u| names.contains(&u)),
            Require::Group(groups) => match self.user()? {
                None => false,
                Some(user) => {
                    let Some(file) = self.dir.group_file() else { return Err(Access::Error("Require group without an AuthGroupFile".into())) };
                    auth::in_group(file, &user, groups).map_err(Access::Error)?
                }
            },
            Require::Block(Combine::Any, rules) => return self.any(rules),
            Require::Block(Combine::All, rules) => {
                let mut verdict = Verdict::Neutral;
                for r in rules {
                    match self.rule(r)? {
                        Verdict::Denied => return Ok(Verdict::Denied),
                        Verdict::Granted => verdict = Verdict::Granted,
                        Verdict::Neutral => {}
                    }
                }
                return Ok(verdict);
            }
            Require::Block(Combine::None, rules) => {
                for r in rules {
                    if self.rule(r)? == Verdict::Granted {
                        return Ok(Verdict::Denied);
                    }
                }
                return Ok(Verdict::Neutral);
            }
        };
        Ok(if granted { Verdict::Granted } else { Verdict::Denied })
    }

    fn user(&mut self) -> Result<Option<String>, Access> {
        if self.user.is_none() {
            self.user = Some(self.dir.authenticated(self.head, self.may_hash)?);
        }
        Ok(self.user.clone().flatten())
    }
}
