//! `<If>`, `<ElseIf>` and `<Else>`: sections whose directives apply to a
//! request when an expression ([`crate::expr`]) holds for it. Read here
//! into a [`DirSection`] matched by an [`IfTest`] (beside the other
//! matchers in [`dir_config`](crate::dir_config), which it nests); the
//! handler merges those that hold after every other section, as Apache's
//! `ap_if_walk` does.

use crate::builder::Builder;
use crate::dir_config::{DirSection, IfTest, SectionMatch};
use crate::expr::Expr;
use crate::parse::{Node, Section};
use crate::table::Context;

impl Builder {
    /// An `<If>`, `<ElseIf>` or `<Else>` section standing in `ctx`
    /// (`within` the section around it, if any).
    pub(crate) fn if_section(&mut self, sec: &Section, ctx: Context, within: Option<&SectionMatch>) -> Vec<DirSection> {
        let lname = sec.name.to_ascii_lowercase();
        let before = self.if_chain.take();
        let text = sec.args.join(" ");
        let parse = |b: &mut Builder| match Expr::parse(&text, b.in_htaccess) {
            Ok(e) => Some(e),
            Err(e) => {
                b.error(&sec.origin, format!("<{}>: {e}", sec.name));
                None
            }
        };
        let (expr, unless) = match (lname.as_str(), before) {
            ("if", _) => (parse(self), Vec::new()),
            (_, None) => {
                self.error(&sec.origin, format!("<{}> without an <If> or <ElseIf> just before it in the same section", sec.name));
                return Vec::new();
            }
            ("else", Some(before)) if text.is_empty() => (None, before),
            ("else", Some(_)) => {
                self.error(&sec.origin, "<Else> takes no expression");
                return Vec::new();
            }
            (_, Some(before)) => (parse(self), before),
        };
        let is_else = lname == "else";
        if expr.is_none() && !is_else {
            return Vec::new();
        }
        let is_if = |name: &str| ["if", "elseif", "else"].iter().any(|n| name.eq_ignore_ascii_case(n));
        if let Some(inner) = sec.children.iter().find_map(|n| if let Node::Section(s) = n { (!is_if(&s.name)).then_some(s) } else { None }) {
            self.error(&inner.origin, format!("<{}> inside <{}>: only <If>, <ElseIf> and <Else> may be nested in it", inner.name, sec.name));
            return Vec::new();
        }
        // Nested in another <If>: that one must hold too, and this one
        // stands where it does (`self.around` is then what it is within).
        let (outer, within, around) = match within {
            Some(SectionMatch::If(outer)) => (Some(Box::new(outer.clone())), self.around.clone(), outer.around.clone()),
            _ => (None, within.cloned(), self.around.clone().map(Box::new)),
        };
        let inner_ctx = match ctx {
            Context::Server | Context::VirtualHost => Context::Directory,
            other => other,
        };
        let chain = (!is_else).then(|| unless.iter().cloned().chain(expr.clone()).collect());
        let test = IfTest { expr, unless, around, outer };
        let sections = self.section_body(sec, SectionMatch::If(test), inner_ctx, within.as_ref());
        self.if_chain = chain;
        sections
    }
}

#[cfg(test)]
mod tests {
    use crate::dir_config::SectionMatch;
    use crate::test_support::load_text;

    #[test]
    fn chains_read_and_bad_ones_named() {
        let (l, _dir) = load_text(
            "if_chain",
            "Listen 80\n<Directory /srv>\n<If \"%{HTTP_HOST} == 'a'\">\nHeader set X a\n</If>\n<ElseIf \"%{HTTP_HOST} =~ /^b/\">\nRequire all denied\n</ElseIf>\n<Else>\nHeader set X c\n</Else>\n</Directory>\n<If \"-z %{HTTP_HOST}\">\nRequire all denied\n</If>\n",
            &[],
        );
        assert!(l.errors.is_empty(), "{:?}", l.errors);
        let s = l.settings.expect("loaded");
        let ifs: Vec<_> = s.main.sections.iter().filter_map(|s| if let SectionMatch::If(t) = &s.matcher { Some((t, &s.within)) } else { None }).collect();
        assert_eq!(ifs.len(), 4);
        assert_eq!((ifs[0].0.unless.len(), ifs[1].0.unless.len(), ifs[2].0.unless.len()), (0, 1, 2));
        assert!(ifs[2].0.expr.is_none() && ifs[3].1.is_none());
        assert!(matches!(ifs[0].1.as_deref(), Some(SectionMatch::Directory(d)) if d == "/srv"));
        // Nested: within the outer one's section, the outer one holding too.
        let (l, _dir) = load_text("if_nested", "Listen 80\n<Directory /srv>\n<Files x>\n<If true>\n<If false>\nHeader set X a\n</If>\n<Else>\nHeader set X b\n</Else>\n</If>\n<Else>\n</Else>\n</Files>\n</Directory>\n", &[]);
        assert!(l.errors.is_empty(), "{:?}", l.errors);
        let s = l.settings.expect("loaded");
        let ifs: Vec<_> = s.main.sections.iter().filter_map(|s| if let SectionMatch::If(t) = &s.matcher { Some((t, &s.within)) } else { None }).collect();
        assert_eq!(ifs.len(), 4);
        for (t, within) in &ifs {
            assert!(matches!(within.as_deref(), Some(SectionMatch::Files(f)) if f == "x"), "{within:?}");
            assert!(matches!(t.around.as_deref(), Some(SectionMatch::Directory(d)) if d == "/srv"), "{:?}", t.around);
        }
        assert!(ifs[0].0.outer.is_none() && ifs[1].0.outer.is_some() && ifs[2].0.outer.is_some() && ifs[3].0.outer.is_none());
        assert_eq!((ifs[2].0.unless.len(), ifs[3].0.unless.len()), (1, 1), "the chains are apart");
        for (text, line, what) in [
            ("<If \"%{HTTP_HOST} == \">\n</If>\n", 3, "<If>: "),
            ("<Else>\n</Else>\n", 3, "without an <If>"),
            ("<If true>\n</If>\n<Else false>\n</Else>\n", 5, "no expression"),
            ("<If true>\n<Files x>\n</Files>\n</If>\n", 4, "may be nested in it"),
        ] {
            let (l, _dir) = load_text("if_bad", &format!("Listen 80\n{text}"), &[]);
            assert!(l.errors.iter().any(|e| e.origin.line == line && e.message.contains(what)), "{text}: {:?}", l.errors);
        }
    }
}
