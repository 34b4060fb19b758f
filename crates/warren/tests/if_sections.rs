//! `<If>`, `<ElseIf>`, `<Else>`, `Require expr`, `Header ... expr=`,
//! `SetEnvIfExpr` and `RewriteCond expr` under each MPM: in an
//! `.htaccess` file as Nextcloud writes it (an `<If>` chain inside
//! `<FilesMatch>`), in `<Directory>`, and a malformed or file-reading
//! expression in an `.htaccess` file answered 500 with file and line logged.

mod common;

use common::*;

fn start(mpm: &str) -> Server {
    let dir = TempDir::new(&format!("if-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/nc/app.js", "js");
    dir.write("htdocs/nc/page.html", "page");
    dir.write(
        "htdocs/nc/.htaccess",
        "<IfModule mod_env.c>\n  <FilesMatch \"\\.(css|js|svg)$\">\n    <If \"%{QUERY_STRING} =~ /(^|&)v=/\">\n      Header set Cache-Control \"max-age=15778463, immutable\"\n    </If>\n    <Else>\n      Header set Cache-Control \"max-age=15778463\"\n    </Else>\n  </FilesMatch>\n</IfModule>\n<If \"%{HTTP_USER_AGENT} =~ /badbot/i\">\n  Require all denied\n</If>\n<If \"%{REQUEST_URI} =~ /\\.html$/\">\n  <If \"%{QUERY_STRING} == 'nested'\">\n    Header set X-Nested yes\n  </If>\n</If>\n",
    );
    dir.write("htdocs/chain/x.txt", "x");
    dir.write("htdocs/keyed/x.txt", "keyed");
    dir.write("htdocs/both/x.txt", "both");
    dir.write("htdocs/both/.htaccess", "<RequireAll>\nRequire expr \"%{QUERY_STRING} =~ /a=1/\"\nRequire expr \"%{QUERY_STRING} =~ /b=1/\"\n</RequireAll>\n");
    dir.write("htdocs/bad/x.txt", "x");
    dir.write("htdocs/rw/x.txt", "x");
    dir.write("htdocs/rw/.htaccess", "RewriteEngine On\nRewriteCond expr \"%{HTTP_REFERER} -strmatch '*://evil.example/*' || %{QUERY_STRING} =~ /^block/\" [OR]\nRewriteCond %{HTTP:X-Block} =1\nRewriteRule \\.txt$ - [F]\n");
    dir.write("htdocs/bad/.htaccess", "# a typo\n<If \"%{HTTP_HOST} = = 'a'\">\nRequire all denied\n</If>\n");
    dir.write("htdocs/probe/x.txt", "x");
    dir.write("htdocs/probe/.htaccess", "<If \"-f '/etc/passwd'\">\nHeader set X-Probe yes\n</If>\n");
    let d = dir.0.display();
    let conf = format!(
        "<Directory {d}/htdocs>\n    AllowOverride All\n</Directory>\n\
         <Directory {d}/htdocs/chain>\n  <If \"%{{QUERY_STRING}} == 'a'\">\n    Header set X-Branch if\n  </If>\n  <ElseIf \"tolower(%{{HTTP:X-Pick}}) in {{'b', 'c'}}\">\n    Header set X-Branch elseif-$1\n  </ElseIf>\n  <Else>\n    Header set X-Branch else\n  </Else>\n  SetEnvIfExpr \"%{{HTTP:X-Pick}} =~ /^(\\w)(\\w*)/ && -n $1\" PICKED=$1-$2 !NOPE\n  Header set X-Picked %{{PICKED}}e env=PICKED\n  Header always set X-Missing yes \"expr=%{{REQUEST_STATUS}} -ge 400 && %{{REQUEST_URI}} -strmatch '/chain/*' && resp('Content-Type') =~ m#^text/#\"\n</Directory>\n\
         <Directory {d}/htdocs/keyed>\n    Require expr \"%{{QUERY_STRING}} =~ /^key=open$/ && %{{REMOTE_ADDR}} -ipmatch '127.0.0.0/8'\"\n</Directory>\n\
         <If \"%{{REQUEST_URI}} -strmatch '/sub/*'\">\n    Header set X-Server-If yes\n</If>\n"
    );
    Server::start_in(dir, mpm, &conf)
}

fn nextcloud_htaccess_if_else(mpm: &str) {
    let s = start(mpm);
    let r = s.get("/nc/app.js?v=123");
    assert_eq!((r.status, r.header("Cache-Control")), (200, Some("max-age=15778463, immutable")));
    let r = s.get("/nc/app.js");
    assert_eq!((r.status, r.header("Cache-Control")), (200, Some("max-age=15778463")));
    // The <FilesMatch> around the chain still decides where it applies.
    let r = s.get("/nc/page.html?v=1");
    assert_eq!((r.status, r.header("Cache-Control")), (200, None));
    assert_eq!(s.get_with("/nc/page.html", "User-Agent: BadBot/1.0\r\n").status, 403);
    assert_eq!(s.get_with("/nc/page.html", "User-Agent: curl\r\n").status, 200);
    assert_eq!(s.get("/nc/page.html?nested").header("X-Nested"), Some("yes"));
    assert_eq!(s.get("/nc/app.js?nested").header("X-Nested"), None, "the outer <If> must hold too");
    // Nothing leaks outside the directory.
    assert_eq!(s.get_with("/a.txt", "User-Agent: BadBot\r\n").status, 200);
}

fn directory_if_elseif_else_and_server_if(mpm: &str) {
    let s = start(mpm);
    assert_eq!(s.get("/chain/x.txt?a").header("X-Branch"), Some("if"));
    assert_eq!(s.get_with("/chain/x.txt?a", "X-Pick: B\r\n").header("X-Branch"), Some("if"), "the first that holds wins");
    assert_eq!(s.get_with("/chain/x.txt", "X-Pick: C\r\n").header("X-Branch"), Some("elseif-$1"));
    assert_eq!(s.get_with("/chain/x.txt", "X-Pick: d\r\n").header("X-Branch"), Some("else"));
    assert_eq!(s.get_with("/chain/x.txt", "X-Pick: dog\r\n").header("X-Picked"), Some("d-og"), "SetEnvIfExpr with captures");
    assert_eq!(s.get_with("/chain/x.txt", "X-Pick: -\r\n").header("X-Picked"), None);
    assert_eq!(s.get("/chain/x.txt?%61").header("X-Branch"), Some("else"), "the query is compared as sent");
    assert_eq!(s.get("/a.txt?a").header("X-Branch"), None);
    // Header's expr= takes the whole language, the response's facts too.
    assert_eq!(s.get("/chain/none").header("X-Missing"), Some("yes"));
    assert_eq!(s.get("/chain/x.txt").header("X-Missing"), None);
    assert_eq!(s.get("/sub/page.html").header("X-Server-If"), Some("yes"));
    assert_eq!(s.get("/%73ub/page.html").header("X-Server-If"), Some("yes"), "REQUEST_URI is the decoded path");
    assert_eq!(s.get("/a.txt").header("X-Server-If"), None);
}

fn require_expr(mpm: &str) {
    let s = start(mpm);
    // Each expression of a <RequireAll> is its own: one holding is not both.
    assert_eq!(s.get("/both/x.txt?a=1").status, 403);
    assert_eq!(s.get("/both/x.txt?b=1").status, 403);
    assert_eq!(s.get("/both/x.txt?a=1&b=1").text(), "both");
    assert_eq!(s.get("/keyed/x.txt?key=open").text(), "keyed");
    for denied in ["/keyed/x.txt", "/keyed/x.txt?key=opened", "/keyed/x.txt?key=open%0a", "/keyed/x.txt?x&key=open"] {
        assert_eq!(s.get(denied).status, 403, "{denied}");
    }
}

fn rewrite_cond_expr(mpm: &str) {
    let s = start(mpm);
    assert_eq!(s.get("/rw/x.txt").status, 200);
    assert_eq!(s.get_with("/rw/x.txt", "Referer: https://evil.example/page\r\n").status, 403);
    assert_eq!(s.get_with("/rw/x.txt", "Referer: https://good.example/evil.example/\r\n").status, 200);
    assert_eq!(s.get("/rw/x.txt?blocked").status, 403);
    assert_eq!(s.get_with("/rw/x.txt", "X-Block: 1\r\n").status, 403, "[OR] with the next condition");
}

fn bad_expressions_in_htaccess_are_500_with_file_and_line(mpm: &str) {
    let s = start(mpm);
    assert_eq!(s.get("/bad/x.txt").status, 500);
    let log = s.wait_log("error.log", "bad/.htaccess:2");
    assert!(log.contains("<If>"), "{log}");
    assert_eq!(s.get("/probe/x.txt").status, 500, "a tenant's expression may not test files");
    let log = s.wait_log("error.log", "probe/.htaccess:1");
    assert!(log.contains("not allowed in .htaccess"), "{log}");
    assert_eq!(s.get("/a.txt").status, 200);
}

each_mpm!(nextcloud_htaccess_if_else, directory_if_elseif_else_and_server_if, require_expr, rewrite_cond_expr, bad_expressions_in_htaccess_are_500_with_file_and_line);
