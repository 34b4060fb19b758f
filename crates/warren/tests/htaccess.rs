//! `.htaccess` files under each MPM: read only where AllowOverride lets them
//! in, with only the directives of the classes it names; a change takes
//! effect on the next request; an error in one answers 500 below it and is
//! logged with file and line; a file cannot hand scripts to a pool the
//! server's configuration does not give its directory.

mod common;

use common::*;

fn start(mpm: &str) -> Server {
    let dir = TempDir::new(&format!("htaccess-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/open/index.html", "open index");
    dir.write("htdocs/open/app.html", "app page");
    dir.write("htdocs/open/secret.ini", "password=1");
    dir.write("htdocs/open/sub/x.txt", "x");
    dir.write("htdocs/open/.htaccess", "# as a user writes it\nDirectoryIndex app.html\n<Files \"*.ini\">\n    Require all denied\n</Files>\nRedirect 301 /open/old /open/app.html\nErrorDocument 404 \"not here\"\n");
    dir.write("htdocs/closed/.htaccess", "Require all denied\n");
    dir.write("htdocs/closed/file.txt", "closed is open: AllowOverride None");
    dir.write("htdocs/limited/.htaccess", "ErrorDocument 404 /nf.html\n");
    dir.write("htdocs/limited/file.txt", "limited");
    dir.write("htdocs/custom/.config", "DirectoryIndex page.html\n");
    dir.write("htdocs/custom/page.html", "custom page");
    dir.write("htdocs/php/t.php", "<?php echo 'ran as pool www';");
    dir.write("htdocs/other/t.php", "<?php echo 'ran';");
    dir.write("htdocs/other/.htaccess", "<Files t.php>\nSetHandler pool:other\n</Files>\n");
    let d = dir.0.display();
    let conf = format!(
        "<Directory {d}/htdocs>\n    AllowOverride All\n</Directory>\n<Directory {d}/htdocs/closed>\n    AllowOverride None\n</Directory>\n\
         <Directory {d}/htdocs/limited>\n    AllowOverride Indexes\n</Directory>\n\
         <Pool www>\n    Command php-cgi\n    pm static\n    pm.max_children 1\n</Pool>\n<Pool other>\n    Command php-cgi\n    pm static\n    pm.max_children 1\n</Pool>\n\
         <Directory {d}/htdocs/php>\n    SetHandler pool:www\n</Directory>\n<Directory {d}/elsewhere>\n    SetHandler pool:other\n</Directory>\n"
    );
    Server::start_in(dir, mpm, &conf)
}

fn htaccess_changes_what_its_classes_allow(mpm: &str) {
    let s = start(mpm);
    assert_eq!(s.get("/open/").text(), "app page");
    assert_eq!(s.get("/open/secret.ini").status, 403);
    let r = s.get("/open/old?q=1");
    assert_eq!(r.status, 301);
    assert!(r.header("Location").is_some_and(|l| l.ends_with("/open/app.html?q=1")), "{:?}", r.header("Location"));
    let r = s.get("/open/missing");
    assert_eq!((r.status, r.text()), (404, "not here".to_string()));
    // Below it, the file still applies.
    assert_eq!(s.get("/open/sub/x.txt").text(), "x");
    assert_eq!(s.get("/open/sub/none").text(), "not here");
    // The files themselves are never sent.
    assert_eq!(s.get("/open/.htaccess").status, 403);
    assert_eq!(s.get("/closed/.htaccess").status, 403);
    // AllowOverride None: not even looked at.
    assert_eq!(s.get("/closed/file.txt").status, 200);
    // Elsewhere the site is as before.
    assert_eq!(s.get("/a.txt").text(), "0123456789abcdefghij");
}

fn a_directive_not_allowed_is_a_500_with_file_and_line(mpm: &str) {
    let s = start(mpm);
    assert_eq!(s.get("/limited/file.txt").status, 500);
    let log = s.wait_log("error.log", "limited/.htaccess:1");
    assert!(log.contains("limited/.htaccess:1: ErrorDocument not allowed here (AllowOverride does not include FileInfo)"), "{log}");
}

fn a_changed_file_takes_effect_on_the_next_request(mpm: &str) {
    let s = start(mpm);
    assert_eq!(s.get("/open/").text(), "app page");
    // The same size, so only the time and inode can tell (rename replaces the inode).
    let tmp = s.dir.write("htdocs/open/.htaccess.new", "DirectoryIndex index.html\n");
    std::fs::rename(&tmp, s.dir.0.join("htdocs/open/.htaccess")).unwrap();
    assert_eq!(s.get("/open/").text(), "open index");
    assert_eq!(s.get("/open/secret.ini").text(), "password=1");
    s.dir.write("htdocs/open/.htaccess", "Bogus directive\n");
    assert_eq!(s.get("/open/").status, 500);
    let log = s.wait_log("error.log", "Invalid command 'Bogus'");
    assert!(log.contains("open/.htaccess:1: Invalid command 'Bogus'"), "{log}");
    std::fs::remove_file(s.dir.0.join("htdocs/open/.htaccess")).unwrap();
    assert_eq!(s.get("/open/").text(), "open index");
}

fn access_file_name_names_the_files(mpm: &str) {
    let dir = TempDir::new(&format!("accessfilename-{mpm}"));
    standard_site(&dir);
    dir.write("htdocs/custom/.config", "DirectoryIndex page.html\n");
    dir.write("htdocs/custom/.htaccess", "Require all denied\n");
    dir.write("htdocs/custom/page.html", "custom page");
    let conf = format!("AccessFileName .config\n<Directory {}/htdocs>\n    AllowOverride Indexes\n</Directory>\n", dir.0.display());
    let s = Server::start_in(dir, mpm, &conf);
    assert_eq!(s.get("/custom/").text(), "custom page");
    assert_eq!(s.get("/custom/.config").status, 403);
}

/// An attacker who can write an `.htaccess` file cannot run their script in
/// another user's pool: only handlers the server gives the directory count.
fn htaccess_cannot_reach_another_pool(mpm: &str) {
    let s = start(mpm);
    assert_eq!(s.get("/php/t.php").text(), "ran as pool www");
    let r = s.get("/other/t.php");
    assert_eq!(r.status, 500);
    assert!(!r.text().contains("ran"));
    let log = s.wait_log("error.log", "may only choose among those");
    assert!(log.contains("other/.htaccess:2: SetHandler: pool:other is not a handler"), "{log}");
}

each_mpm!(
    htaccess_changes_what_its_classes_allow,
    a_directive_not_allowed_is_a_500_with_file_and_line,
    a_changed_file_takes_effect_on_the_next_request,
    access_file_name_names_the_files,
    htaccess_cannot_reach_another_pool
);
