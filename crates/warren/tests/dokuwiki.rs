//! A real application from Debian, run unchanged behind warren and php-fpm:
//! DokuWiki (package dokuwiki). A page is created through its edit form
//! (session cookie, security token, POST) and read back, under each MPM.
//!
//! The wiki's code is Debian's, copied into the test directory so that it
//! gets its own configuration and pages; the one file replaced is
//! `inc/preload.php`, the hook DokuWiki provides for saying where its
//! configuration lives.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

fn copy_tree(from: &str, to: &Path) {
    let st = Command::new("cp").arg("-rL").arg(from).arg(to).status().expect("cp");
    assert!(st.success(), "cp {from} failed");
}

/// Every `<input type="hidden" name="N" value="V">` of a page.
fn hidden_fields(html: &str) -> Vec<(String, String)> {
    let attr = |tag: &str, name: &str| -> Option<String> {
        let start = tag.find(&format!("{name}=\""))? + name.len() + 2;
        let end = start + tag[start..].find('"')?;
        Some(tag[start..end].replace("&amp;", "&").replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">"))
    };
    html.split("<input").skip(1).filter_map(|rest| {
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        if !tag.contains("type=\"hidden\"") {
            return None;
        }
        Some((attr(tag, "name")?, attr(tag, "value").unwrap_or_default()))
    }).collect()
}

fn dokuwiki(mpm: &str) {
    assert!(Path::new("/usr/share/dokuwiki/doku.php").exists(), "DokuWiki is not installed (test.sh installs it: apt-get install dokuwiki)");
    let dir = TempDir::new(&format!("dokuwiki-{mpm}"));
    let root = dir.0.clone();
    copy_tree("/usr/share/dokuwiki", &root.join("wiki"));
    copy_tree("/etc/dokuwiki", &root.join("conf"));
    copy_tree("/var/lib/dokuwiki/data", &root.join("data"));
    dir.write("wiki/inc/preload.php", format!("<?php\ndefine('DOKU_CONF', '{}/conf/');\n", root.display()));
    dir.write("conf/local.php", format!("<?php\n$conf['title'] = 'warren test wiki';\n$conf['savedir'] = '{}/data';\n$conf['useacl'] = 1;\n$conf['superuser'] = '@admin';\n", root.display()));
    // Anyone may create pages in this wiki.
    dir.write("conf/acl.auth.php", "# <?php exit()?>\n*               @ALL          8\n");
    dir.write("conf/users.auth.php", "# <?php exit()?>\n");
    let fpm = Fpm::start(&dir, "");
    let conf = format!("DocumentRoot wiki\nDirectoryIndex doku.php\n{}", fpm.php_files());
    let s = Server::start_in(dir, mpm, &conf);
    let jar = s.dir.0.join("cookies.txt");
    let jar = jar.to_str().unwrap();

    let (code, home) = curl(&["-c", jar, "-b", jar, &s.url("/")]);
    assert_eq!(code, 0);
    let home = String::from_utf8_lossy(&home);
    assert!(home.contains("warren test wiki"), "front page: {}", &home[..home.len().min(500)]);

    // The edit form: its hidden fields carry the security token.
    let (_, form) = curl(&["-c", jar, "-b", jar, &s.url("/doku.php?id=warren:hello&do=edit")]);
    let form = String::from_utf8_lossy(&form);
    let fields = hidden_fields(&form);
    assert!(fields.iter().any(|(n, _)| n == "sectok"), "no edit form: {}", &form[..form.len().min(800)]);
    let text = "====== Hello from warren ======\n\nThis page was written through **warren** and php-fpm.\n";
    let mut args: Vec<String> = vec!["-c".into(), jar.into(), "-b".into(), jar.into(), "-o".into(), "/dev/null".into(), "-w".into(), "%{http_code}".into()];
    for (n, v) in &fields {
        args.push("--data-urlencode".into());
        args.push(format!("{n}={v}"));
    }
    for (n, v) in [("wikitext", text), ("summary", "created by the test"), ("do[save]", "Save")] {
        args.push("--data-urlencode".into());
        args.push(format!("{n}={v}"));
    }
    args.push(s.url("/doku.php"));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, status) = curl(&refs);
    assert_eq!(code, 0);
    // DokuWiki answers a save with a redirect to the page.
    assert_eq!(String::from_utf8_lossy(&status), "302", "saving the page");

    let (_, page) = curl(&["-b", jar, &s.url("/doku.php?id=warren:hello")]);
    let page = String::from_utf8_lossy(&page);
    assert!(page.contains("Hello from warren") && page.contains("<strong>warren</strong>"), "page: {}", &page[..page.len().min(800)]);
    let (_, raw) = curl(&[&s.url("/doku.php?id=warren:hello&do=export_raw")]);
    assert_eq!(String::from_utf8_lossy(&raw).trim_end(), text.trim_end());
    assert!(s.dir.0.join("data/pages/warren/hello.txt").exists());
    // Its static files come straight from warren.
    let (code, css) = curl(&["-o", "/dev/null", "-w", "%{http_code}", &s.url("/lib/tpl/dokuwiki/images/logo.png")]);
    assert_eq!((code, String::from_utf8_lossy(&css).into_owned()), (0, "200".to_string()));
    drop(fpm);
}

each_mpm!(dokuwiki);
