//! mod_authz_core's evaluation of `Require` rules: each line grants or
//! denies, and `<RequireAll>`, `<RequireAny>` and `<RequireNone>` combine
//! them as Apache does, a block that decides nothing being neutral. The
//! request's credentials are checked at most once, and only when a rule
//! about users is reached.

use warren_config::{Combine, Require};
use warren_http::RequestHead;

use crate::auth;
use crate::conn::ConnInfo;
use crate::dir_config::{Access, Effective};
use crate::sections::ip_in;

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
