//! Debian's WordPress package under each MPM, as a site owner runs it:
//! Debian's example virtual host (its `Alias /wp-content`), WordPress's
//! own rewrite rules in `.htaccess` as its permalink settings page gives
//! them, and the site's pages through curl: a pretty permalink, a page,
//! the feed, `/wp-json/`, WordPress's own 404 page, wp-login and wp-admin.
//!
//! A private MariaDB (Debian's) holds the blog; WordPress's installer runs
//! from php-cli; the site is the package's files in /usr/share/wordpress,
//! unchanged. Their `.htaccess` links to /etc/wordpress/htaccess, which the
//! test lets the pool's user write while it runs (so that WordPress writes
//! its rules there, as it would on a site whose owner allows it) and puts
//! back as it was afterwards.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const WORDPRESS: &str = "/usr/share/wordpress";

/// Debian's mariadbd on a socket in a directory of the test's, stopped on drop.
struct MariaDb {
    child: Child,
    socket: PathBuf,
}

impl MariaDb {
    fn start(dir: &Path) -> MariaDb {
        let data = dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        let chown = |p: &Path| assert!(Command::new("chown").args(["-R", "mysql:mysql"]).arg(p).status().unwrap().success());
        chown(dir);
        let install = Command::new("mariadb-install-db")
            .args(["--user=mysql", "--auth-root-authentication-method=socket", "--skip-test-db"])
            .arg(format!("--datadir={}", data.display()))
            .output()
            .expect("run mariadb-install-db (test.sh installs mariadb-server)");
        assert!(install.status.success(), "mariadb-install-db: {}", String::from_utf8_lossy(&install.stderr));
        let socket = dir.join("mysqld.sock");
        let child = Command::new("/usr/sbin/mariadbd")
            .args(["--no-defaults", "--user=mysql", "--skip-networking", "--innodb-buffer-pool-size=16M", "--performance-schema=off"])
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", dir.join("mariadbd.pid").display()))
            .arg(format!("--log-error={}", dir.join("error.log").display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start mariadbd");
        let db = MariaDb { child, socket };
        // Up once it answers; a minute is far more than it needs.
        let deadline = Instant::now() + Duration::from_secs(60);
        while !db.sql_ok("SELECT 1") {
            assert!(Instant::now() < deadline, "mariadbd did not answer: {}", std::fs::read_to_string(dir.join("error.log")).unwrap_or_default());
            std::thread::sleep(Duration::from_millis(100));
        }
        db
    }

    fn sql_ok(&self, sql: &str) -> bool {
        Command::new("mariadb").arg(format!("--socket={}", self.socket.display())).args(["-u", "root", "-e", sql]).output().is_ok_and(|o| o.status.success())
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        unsafe_kill(self.child.id(), libc::SIGTERM);
        let _ = self.child.wait();
    }
}

/// `/etc/wordpress/config-HOST.php`, where Debian's wp-config.php looks
/// for a host's settings; removed on drop.
struct WpConfig(PathBuf);

impl Drop for WpConfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// curl against the test's host name on 127.0.0.1, with a cookie jar.
struct Browser {
    host: String,
    port: u16,
    jar: PathBuf,
}

struct Page {
    status: u16,
    headers: String,
    body: String,
}

impl Browser {
    fn url(&self, path: &str) -> String {
        format!("http://{}:{}{path}", self.host, self.port)
    }

    fn request(&self, path: &str, extra: &[&str]) -> Page {
        let resolve = format!("{}:{}:127.0.0.1", self.host, self.port);
        let jar = self.jar.to_string_lossy();
        let mut args = vec!["-i", "--resolve", &resolve, "-b", &jar, "-c", &jar];
        args.extend_from_slice(extra);
        let url = self.url(path);
        args.push(&url);
        let (code, out) = curl(&args);
        assert_eq!(code, 0, "curl {path}");
        let text = String::from_utf8_lossy(&out).into_owned();
        let (headers, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = headers.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        Page { status, headers: headers.to_string(), body: body.to_string() }
    }

    fn get(&self, path: &str) -> Page {
        self.request(path, &[])
    }

    fn post(&self, path: &str, form: &[(&str, &str)]) -> Page {
        let fields: Vec<String> = form.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut args = Vec::new();
        for f in &fields {
            args.push("--data-urlencode");
            args.push(f.as_str());
        }
        self.request(path, &args)
    }
}

impl Page {
    fn location(&self) -> Option<&str> {
        self.headers.lines().find_map(|l| l.strip_prefix("Location: ").or_else(|| l.strip_prefix("location: ")))
    }
}

/// The value of the form field `name` in `html`.
fn field<'a>(html: &'a str, name: &str) -> &'a str {
    let at = html.find(&format!("name=\"{name}\"")).unwrap_or_else(|| panic!("no field {name}"));
    let tag = &html[html[..at].rfind('<').unwrap()..];
    let tag = &tag[..tag.find('>').unwrap()];
    let v = tag.split("value=\"").nth(1).unwrap_or("");
    &v[..v.find('"').unwrap_or(0)]
}

fn html_unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#039;", "'").replace("&#038;", "&").replace("&amp;", "&")
}

/// Every link of `html` to the site itself, as paths.
fn same_site_links(html: &str, base: &str) -> Vec<String> {
    let mut links: Vec<String> = html
        .split("href=\"")
        .skip(1)
        .filter_map(|s| s[..s.find('"')?].strip_prefix(base).map(|p| html_unescape(if p.is_empty() { "/" } else { p })))
        .filter(|p| p.starts_with('/'))
        // The admin bar's log-out link would end the session the rest uses.
        .filter(|p| !p.contains("action=logout"))
        .collect();
    links.sort();
    links.dedup();
    links
}

fn wordpress_site(mpm: &str, db: &MariaDb, host: &str) {
    let dir = TempDir::new(&format!("wp-site-{mpm}"));
    standard_site(&dir);
    // Debian's example vhost (/usr/share/doc/wordpress/examples/apache.conf)
    // as it stands, with AllowOverride from its "/blog" example so that the
    // package's .htaccess (a link to /etc/wordpress/htaccess) is read.
    let conf = format!(
        "<VirtualHost *>\nServerName {host}\nDocumentRoot {WORDPRESS}/\nDirectoryIndex index.php index.html\n\
         Alias /wp-content /var/lib/wordpress/wp-content\n\
         <Directory {WORDPRESS}>\n    Options FollowSymLinks\n    AllowOverride Limit Options FileInfo\n    Require all granted\n</Directory>\n\
         <Directory /var/lib/wordpress/wp-content>\n    Options FollowSymLinks\n    Require all granted\n</Directory>\n</VirtualHost>\n\
         <Pool wp>\n    Command php-cgi\n    pm static\n    pm.max_children 2\n</Pool>\n<FilesMatch \"\\.php$\">\n    SetHandler pool:wp\n</FilesMatch>\n"
    );
    let htaccess = PathBuf::from(HTACCESS);
    let s = Server::start_in(dir, mpm, &conf);
    let b = Browser { host: host.to_string(), port: s.port, jar: s.dir.0.join("cookies.txt") };
    let _ = db;
    // Plain permalinks to start with, whatever an earlier MPM's run set.
    let front = b.get("/");
    assert_eq!(front.status, 200, "{mpm}: front page: {}\nerror log:\n{}", front.body, s.read_log("error.log"));
    assert!(front.body.contains("Warren Test Blog"), "{mpm}");

    // wp-login, then wp-admin.
    assert_eq!(b.get("/wp-login.php").status, 200, "{mpm}: wp-login");
    let login = b.request("/wp-login.php", &["-b", "wordpress_test_cookie=WP%20Cookie%20check", "--data-urlencode", "log=admin", "--data-urlencode", "pwd=warren-test-admin", "--data-urlencode", "testcookie=1"]);
    assert_eq!(login.status, 302, "{mpm}: login: {}", login.body);
    assert!(login.location().is_some_and(|l| l.contains("/wp-admin/")), "{mpm}: {:?}", login.location());
    let admin = b.get("/wp-admin/");
    assert_eq!(admin.status, 200, "{mpm}: wp-admin");
    assert!(admin.body.contains("Dashboard"), "{mpm}");

    // The permalink settings page: WordPress must believe it has
    // mod_rewrite, or it offers structures behind /index.php/ and writes no
    // rules.
    let settings = b.get("/wp-admin/options-permalink.php");
    assert_eq!(settings.status, 200, "{mpm}");
    assert!(!settings.body.contains("/index.php/%year%"), "{mpm}: WordPress does not believe the server rewrites URLs");
    let nonce = field(&settings.body, "_wpnonce").to_string();
    let saved = b.post(
        "/wp-admin/options-permalink.php",
        &[("_wpnonce", &nonce), ("_wp_http_referer", "/wp-admin/options-permalink.php"), ("selection", "/%year%/%monthnum%/%postname%/"), ("permalink_structure", "/%year%/%monthnum%/%postname%/"), ("category_base", ""), ("tag_base", ""), ("submit", "Save Changes")],
    );
    assert_eq!(saved.status, 302, "{mpm}: saving permalinks: {}", saved.body);
    assert!(saved.location().is_some_and(|l| l.contains("settings-updated=true")), "{mpm}: saving permalinks went to {:?}", saved.location());
    let after = b.get("/wp-admin/options-permalink.php?settings-updated=true");
    assert!(after.body.contains("Permalink structure updated."), "{mpm}: the structure was not saved");
    // WordPress wrote its rules to .htaccess itself.
    let rules = std::fs::read_to_string(&htaccess).unwrap();
    assert!(rules.contains("# BEGIN WordPress") && rules.contains("RewriteRule . /index.php [L]"), "{mpm}: WordPress wrote no rules: {rules:?}");

    // Every same-site link of the front page answers.
    let base = b.url("");
    let front = b.get("/");
    let links = same_site_links(&front.body, &base);
    assert!(links.iter().any(|l| l == "/2024/03/burrows-and-warrens/"), "{mpm}: {links:?}");
    for link in &links {
        let p = b.get(link);
        assert!(p.status == 200 || (p.status == 301 && link.ends_with("/feed/")), "{mpm}: {link} answered {}", p.status);
    }
    let post = b.get("/2024/03/burrows-and-warrens/");
    assert!(post.status == 200 && post.body.contains("A post about rabbits."), "{mpm}: the post: {}", post.status);
    let page = b.get("/about-the-warren/");
    assert!(page.status == 200 && page.body.contains("A page."), "{mpm}: the page: {}", page.status);
    let feed = b.get("/feed/");
    assert_eq!(feed.status, 200, "{mpm}: feed");
    assert!(feed.headers.to_ascii_lowercase().contains("content-type: application/rss+xml"), "{mpm}: {}", feed.headers);
    assert!(feed.body.contains("Burrows and Warrens"), "{mpm}");
    let api = b.get("/wp-json/");
    assert_eq!(api.status, 200, "{mpm}: /wp-json/");
    assert!(api.body.starts_with('{') && api.body.contains("\"name\":\"Warren Test Blog\""), "{mpm}: {}", &api.body[..api.body.len().min(200)]);
    // A missing post: WordPress's own 404 page, through the front controller.
    let missing = b.get("/2024/03/no-such-post/");
    assert_eq!(missing.status, 404, "{mpm}");
    assert!(missing.body.contains("Warren Test Blog"), "{mpm}: the 404 is not WordPress's");
    // Static files beside the rules are still files.
    let css = b.get("/wp-includes/css/dashicons.min.css");
    assert_eq!(css.status, 200, "{mpm}: a static file");

    // Back to plain permalinks for the next MPM's run.
    let settings = b.get("/wp-admin/options-permalink.php");
    let nonce = field(&settings.body, "_wpnonce").to_string();
    b.post("/wp-admin/options-permalink.php", &[("_wpnonce", &nonce), ("_wp_http_referer", "/wp-admin/options-permalink.php"), ("selection", ""), ("permalink_structure", ""), ("submit", "Save Changes")]);
}

/// Debian's site-wide .htaccess, which /usr/share/wordpress/.htaccess links to.
const HTACCESS: &str = "/etc/wordpress/htaccess";

/// A system file the test lets the pool's user (the server's User,
/// nobody, when the tests run as root) write, as a site owner does so that
/// WordPress writes its rules itself: its content, owner and mode are put
/// back on drop.
struct LentFile {
    path: PathBuf,
    content: Vec<u8>,
    meta: std::fs::Metadata,
}

impl LentFile {
    fn lend(path: &str, user: &str) -> LentFile {
        let path = PathBuf::from(path);
        let meta = std::fs::metadata(&path).unwrap();
        let content = std::fs::read(&path).unwrap();
        if unsafe { libc::geteuid() } == 0 {
            assert!(Command::new("chown").arg(user).arg(&path).status().unwrap().success());
        }
        LentFile { path, content, meta }
    }
}

impl Drop for LentFile {
    fn drop(&mut self) {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let _ = std::fs::write(&self.path, &self.content);
        let _ = std::os::unix::fs::chown(&self.path, Some(self.meta.uid()), Some(self.meta.gid()));
        let _ = std::fs::set_permissions(&self.path, std::fs::Permissions::from_mode(self.meta.mode() & 0o7777));
    }
}

#[test]
fn debian_wordpress_under_each_mpm() {
    let _htaccess = LentFile::lend(HTACCESS, "nobody");
    let dir = TempDir::new("wp-db");
    let db = MariaDb::start(&dir.0);
    assert!(db.sql_ok("CREATE DATABASE wp; CREATE USER 'wp'@'localhost' IDENTIFIED BY 'warren-test'; GRANT ALL ON wp.* TO 'wp'@'localhost'"));
    let host = format!("warren-wp-test-{}.localhost", std::process::id());
    let config = WpConfig(PathBuf::from(format!("/etc/wordpress/config-{host}.php")));
    std::fs::write(
        &config.0,
        format!(
            "<?php\ndefine('DB_NAME', 'wp');\ndefine('DB_USER', 'wp');\ndefine('DB_PASSWORD', 'warren-test');\ndefine('DB_HOST', 'localhost:{}');\n\
             define('WP_CONTENT_DIR', '/var/lib/wordpress/wp-content');\n\
             define('WP_HOME', 'http://' . $_SERVER['HTTP_HOST']);\ndefine('WP_SITEURL', 'http://' . $_SERVER['HTTP_HOST']);\n\
             define('DISABLE_WP_CRON', true);\ndefine('WP_HTTP_BLOCK_EXTERNAL', true);\ndefine('AUTOMATIC_UPDATER_DISABLED', true);\n$table_prefix = 'wp_';\n",
            db.socket.display()
        ),
    )
    .unwrap();
    let install = Command::new("php").arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/wordpress/install.php")).arg(&host).output().expect("run php");
    assert!(String::from_utf8_lossy(&install.stdout).contains("installed"), "WordPress's installer: {}{}", String::from_utf8_lossy(&install.stdout), String::from_utf8_lossy(&install.stderr));
    for mpm in ["event", "worker", "prefork"] {
        wordpress_site(mpm, &db, &host);
    }
    drop(config);
}
