//! The servers a suite compares, started and stopped by the suite itself,
//! one at a time on the same loopback port, with equivalent
//! configurations and access logs off.
//!
//! A [`Stack`] owns a scratch directory with the test site (the scenarios'
//! files), the php-fpm pool every server shares (pm static, 4 children, as
//! DESIGN.md's figures) and each server's configuration; [`Stack::start`]
//! writes one server's configuration, starts it and checks that it answers
//! as it should, giving a [`Running`] server that stops when dropped.

use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::probe;
use crate::suite::{Mpm, Php, ServerSpec, Software};

/// The 45-byte page of the static scenarios.
pub const INDEX_HTML: &str = "<html><body><h1>It works!</h1></body></html>\n";
/// What the PHP scenarios run.
pub const HELLO_PHP: &str = "<?php echo \"Hello World\";";
/// A stand-in for an application's page (the ramp): 20 ms in PHP, 10 KB out.
pub const APP_PHP: &str = "<?php usleep(20000); echo str_repeat(\"<p>A paragraph of an application's page.</p>\\n\", 240);";
/// page-240: the page and its images.
pub const PAGE_IMAGES: usize = 240;

/// style.css (about 20 KB), for the compression scenarios: rules as a
/// theme's stylesheet has them, repetitive in shape, varied in values.
pub fn style_css() -> String {
    let props = ["color", "margin", "padding", "border-width", "font-size", "line-height"];
    (0..300)
        .map(|i| format!(".block-{i} .item-{} > a:hover {{ {}: {}px; {}: #{:06x}; }}\n", i % 13, props[i % props.len()], i % 37, props[(i + 1) % props.len()], (i * 2_654_435) % 0xff_ffff))
        .collect()
}
/// A 1x1 PNG, the same for every image of the page.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00,
    0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99,
    0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

const NGINX: &str = "/usr/sbin/nginx";
const APACHE: &str = "/usr/sbin/apache2";
const APACHE_MODULES: &str = "/usr/lib/apache2/modules";

pub struct Stack {
    dir: PathBuf,
    pub port: u16,
    warren: PathBuf,
    fpm: Option<Child>,
}

/// A server started by the stack; stopped (TERM, then KILL) when dropped.
pub struct Running {
    pub name: String,
    child: Child,
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        stop(&mut self.child);
    }
}

/// Starts `cmd` detached from warren bench (see [`detach`]).
fn spawn(cmd: &mut Command) -> std::io::Result<Child> {
    detach(cmd).spawn()
}

/// Makes `cmd` start in a session of its own, without warren bench's
/// terminal as its controlling terminal (bench is often run as root from
/// one, and the servers' workers run other users' code), and without
/// descriptors above standard error that bench inherited or opened: the
/// servers get only what the command sets up. Each is told to stop
/// (SIGTERM) if warren bench dies first, interrupted or killed, rather than
/// keep the port and the CPUs; Ctrl-C on the terminal reaches bench alone,
/// which stops them.
pub(crate) fn detach(cmd: &mut Command) -> &mut Command {
    let highest_fd = highest_open_fd();
    // SAFETY: the closure makes only async-signal-safe system calls on
    // numbers prepared before the fork, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let check = |r: libc::c_int| if r < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) };
            check(libc::setsid())?;
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM))?;
            // Close-on-exec rather than closed: spawn reports a failed exec
            // through a close-on-exec pipe that must stay open until then.
            if libc::syscall(libc::SYS_close_range, 3 as libc::c_uint, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC) != 0 {
                // Kernels before 5.11: each descriptor bench had open.
                for fd in 3..=highest_fd {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                }
            }
            Ok(())
        })
    }
}

/// The highest descriptor open in this process (what a child forked now
/// can have inherited without close-on-exec).
fn highest_open_fd() -> libc::c_int {
    let from_proc = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.flatten().filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<libc::c_int>().ok())).max().unwrap_or(2));
    from_proc.unwrap_or(65535)
}

fn stop(child: &mut Child) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl Drop for Stack {
    fn drop(&mut self) {
        if let Some(fpm) = &mut self.fpm {
            stop(fpm);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The newest php-fpm binary Debian installed (php-fpm8.2, ...).
fn php_fpm_binary() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/sbin").ok()?.flatten().map(|e| e.path()).filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("php-fpm"))).collect();
    found.sort();
    found.pop()
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

/// Why `spec` cannot run on this machine, if it cannot.
pub fn missing(spec: &ServerSpec) -> Option<String> {
    match spec.software {
        Software::Nginx if !Path::new(NGINX).exists() => return Some("nginx is not installed (apt-get install nginx)".into()),
        Software::Apache(_) if !Path::new(APACHE).exists() => return Some("Apache is not installed (apt-get install apache2)".into()),
        _ => {}
    }
    match spec.php {
        Php::Fpm if php_fpm_binary().is_none() => Some("php-fpm is not installed (apt-get install php-fpm)".into()),
        Php::Pool if !on_path("php-cgi") => Some("php-cgi is not on PATH (apt-get install php-cgi)".into()),
        _ => None,
    }
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

impl Stack {
    /// Makes the scratch directory and the site; starts php-fpm if `fpm`.
    pub fn new(port: u16, warren: PathBuf, fpm: bool) -> Result<Stack, String> {
        let dir = std::env::temp_dir().join(format!("warren-suite.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let site = dir.join("htdocs");
        std::fs::create_dir_all(site.join("img")).map_err(|e| format!("{}: {e}", site.display()))?;
        // nginx's and Apache's workers run unprivileged: they must read the site.
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755));
        let mut stack = Stack { dir, port, warren, fpm: None };
        write(&site.join("index.html"), INDEX_HTML)?;
        write(&site.join("style.css"), style_css())?;
        write(&site.join("hello.php"), HELLO_PHP)?;
        write(&site.join("app.php"), APP_PHP)?;
        write(&site.join("file100k.bin"), (0..102_400u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect::<Vec<u8>>())?;
        let mut page = String::from("<!DOCTYPE html>\n<html><head><title>240 images</title></head><body>\n");
        for i in 0..PAGE_IMAGES {
            write(&site.join(format!("img/{i:03}.png")), PNG)?;
            page.push_str(&format!("<img src=\"/img/{i:03}.png\" width=\"16\" height=\"16\" alt=\"\">\n"));
        }
        page.push_str("</body></html>\n");
        write(&site.join("page-240.html"), page)?;
        if fpm {
            stack.start_fpm()?;
        }
        Ok(stack)
    }

    fn site(&self) -> PathBuf {
        self.dir.join("htdocs")
    }

    fn fpm_socket(&self) -> PathBuf {
        self.dir.join("php-fpm.sock")
    }

    pub fn fpm_pid(&self) -> Option<u32> {
        self.fpm.as_ref().map(Child::id)
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn start_fpm(&mut self) -> Result<(), String> {
        let bin = php_fpm_binary().ok_or("php-fpm is not installed (apt-get install php-fpm)")?;
        let conf = self.dir.join("php-fpm.conf");
        let sock = self.fpm_socket();
        write(
            &conf,
            format!(
                "[global]\nerror_log = {dir}/php-fpm.log\ndaemonize = no\n[bench]\nlisten = {sock}\nlisten.mode = 0666\nlisten.backlog = 4096\n\
                 user = www-data\ngroup = www-data\npm = static\npm.max_children = 4\n",
                dir = self.dir.display(),
                sock = sock.display()
            ),
        )?;
        let child = spawn(Command::new(&bin).args(["-R", "-F", "-y"]).arg(&conf).stdout(Stdio::null()).stderr(Stdio::null())).map_err(|e| format!("{}: {e}", bin.display()))?;
        self.fpm = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !sock.exists() {
            if Instant::now() > deadline {
                return Err(format!("php-fpm did not open {} (see {}/php-fpm.log)", sock.display(), self.dir.display()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Writes `spec`'s configuration, starts it and waits until it serves
    /// the site's files whole.
    pub fn start(&self, spec: &ServerSpec) -> Result<Running, String> {
        if std::net::TcpListener::bind(self.addr()).is_err() {
            return Err(format!("127.0.0.1:{} is in use by another program", self.port));
        }
        let conf = self.dir.join(format!("{}.conf", spec.name));
        let log = std::fs::File::create(self.dir.join(format!("{}.out", spec.name))).map_err(|e| e.to_string())?;
        let mut cmd = match spec.software {
            Software::Warren(mpm) => {
                let compress = if spec.compress { "AddOutputFilterByType DEFLATE text/css\n" } else { "" };
                write(&conf, self.warren_conf(mpm, spec.php) + compress)?;
                let mut c = Command::new(&self.warren);
                c.arg("-f").arg(&conf);
                c
            }
            Software::Nginx => {
                let conf_text = self.nginx_conf();
                // nginx's own defaults otherwise (gzip_comp_level 1, the
                // cheapest): it compresses each answer anew.
                let conf_text = if spec.compress { conf_text.replace("    access_log off;\n", "    access_log off;\n    gzip on;\n    gzip_types text/css;\n    gzip_vary on;\n") } else { conf_text };
                write(&conf, conf_text)?;
                let mut c = Command::new(NGINX);
                c.arg("-c").arg(&conf).args(["-g", "daemon off;"]);
                c
            }
            Software::Apache(mpm) => {
                let compress = if spec.compress {
                    format!("LoadModule filter_module {APACHE_MODULES}/mod_filter.so\nLoadModule deflate_module {APACHE_MODULES}/mod_deflate.so\nAddOutputFilterByType DEFLATE text/css\n")
                } else {
                    String::new()
                };
                write(&conf, self.apache_conf(mpm) + &compress)?;
                let mut c = Command::new(APACHE);
                // Apache prefork answers TERM by signalling its whole process
                // group: the session `detach` gives it is a group of its own.
                c.arg("-f").arg(&conf).arg("-DFOREGROUND");
                c
            }
        };
        let err_log = log.try_clone().map_err(|e| e.to_string())?;
        let child = spawn(cmd.stdin(Stdio::null()).stdout(log).stderr(err_log)).map_err(|e| format!("{}: cannot start: {e}", spec.name))?;
        let running = Running { name: spec.name.clone(), child };
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            match probe::fetch(self.addr(), "/index.html", Duration::from_secs(2)) {
                Ok((200, _)) => break,
                _ if Instant::now() > deadline => {
                    return Err(format!("{} did not answer on 127.0.0.1:{} within 15 s (its output: {}/{}.out)", spec.name, self.port, self.dir.display(), spec.name))
                }
                _ => std::thread::sleep(Duration::from_millis(100)),
            }
        }
        // It must answer 200 with the whole file, or its figures mean nothing.
        let expect: [(&str, &[u8]); 3] = [("/index.html", INDEX_HTML.as_bytes()), ("/hello.php", b"Hello World"), ("/img/000.png", PNG)];
        for (path, body) in expect {
            match probe::fetch(self.addr(), path, Duration::from_secs(10)) {
                Ok((200, got)) if got == body => {}
                Ok((status, got)) => return Err(format!("{} answered {status} with {} bytes for {path}; expected 200 with {}", spec.name, got.len(), body.len())),
                Err(e) => return Err(format!("{}: {path}: {e}", spec.name)),
            }
        }
        if spec.compress {
            // The comparison means something only if each server compresses.
            let plain = style_css();
            match probe::fetch_with(self.addr(), "/style.css", "Accept-Encoding: gzip\r\n", Duration::from_secs(10)) {
                Ok((200, got)) if got.starts_with(&[0x1f, 0x8b]) && got.len() < plain.len() / 2 => {}
                Ok((status, got)) => return Err(format!("{} answered {status} with {} bytes for /style.css with Accept-Encoding: gzip; expected a gzip body", spec.name, got.len())),
                Err(e) => return Err(format!("{}: /style.css: {e}", spec.name)),
            }
        }
        Ok(running)
    }

    /// The MPM block as the seeds give it (Apache's and Debian's defaults).
    fn mpm_block(mpm: Mpm) -> &'static str {
        match mpm {
            Mpm::Event => {
                "<IfModule mpm_event_module>\n    StartServers 2\n    MinSpareThreads 25\n    MaxSpareThreads 75\n    ThreadLimit 64\n    ThreadsPerChild 25\n    \
                 MaxRequestWorkers 150\n    MaxConnectionsPerChild 0\n</IfModule>\n"
            }
            Mpm::Worker => {
                "<IfModule mpm_worker_module>\n    StartServers 2\n    MaxClients 150\n    MinSpareThreads 25\n    MaxSpareThreads 75\n    ThreadsPerChild 25\n    \
                 MaxRequestsPerChild 0\n</IfModule>\n"
            }
            Mpm::Prefork => {
                "<IfModule mpm_prefork_module>\n    StartServers 5\n    MinSpareServers 5\n    MaxSpareServers 10\n    MaxClients 150\n    MaxRequestsPerChild 0\n</IfModule>\n"
            }
        }
    }

    /// What Apache and warren share: listener, site, keep-alive as Debian's.
    fn httpd_common(&self, mpm: Mpm, name: &str) -> String {
        format!(
            "LoadModule mpm_{m}_module modules/mod_mpm_{m}.so\nListen 127.0.0.1:{port}\nServerName localhost\nDocumentRoot {site}\nPidFile {dir}/{name}.pid\n\
             ErrorLog {dir}/{name}-error.log\nKeepAlive On\nMaxKeepAliveRequests 100\nKeepAliveTimeout 5\n{block}",
            m = mpm.name(),
            port = self.port,
            site = self.site().display(),
            dir = self.dir.display(),
            block = Self::mpm_block(mpm)
        )
    }

    fn warren_conf(&self, mpm: Mpm, php: Php) -> String {
        let handler = match php {
            Php::Fpm => format!("\"proxy:unix:{}|fcgi://localhost\"", self.fpm_socket().display()),
            Php::Pool => "pool:bench".into(),
        };
        let pool = match php {
            Php::Fpm => "",
            // The same queue as php-fpm's listen.backlog above.
            Php::Pool => "<Pool bench>\n    Command php-cgi\n    pm static\n    pm.max_children 4\n    listen.backlog 4096\n</Pool>\n",
        };
        // As php-fpm's pool above; ignored when the suite is not run as
        // root, and when it is, warren refuses to run its children or a pool
        // as root (without -R, which the suite does not pass).
        let user = "User www-data\nGroup www-data\n";
        format!("{}{user}{pool}<FilesMatch \"\\.php$\">\n    SetHandler {handler}\n</FilesMatch>\n", self.httpd_common(mpm, "warren"))
    }

    fn apache_conf(&self, mpm: Mpm) -> String {
        let common = self.httpd_common(mpm, "apache").replace("modules/mod_mpm", &format!("{APACHE_MODULES}/mod_mpm"));
        let mut modules = String::new();
        for m in ["authz_core", "mime", "dir", "proxy", "proxy_fcgi"] {
            modules.push_str(&format!("LoadModule {m}_module {APACHE_MODULES}/mod_{m}.so\n"));
        }
        format!(
            "ServerRoot /etc/apache2\n{common}{modules}Mutex file:{dir} default\nTypesConfig /etc/mime.types\nDirectoryIndex index.html\n\
             <Directory {site}>\n    Require all granted\n</Directory>\n<FilesMatch \"\\.php$\">\n    SetHandler \"proxy:unix:{sock}|fcgi://localhost\"\n</FilesMatch>\n",
            dir = self.dir.display(),
            site = self.site().display(),
            sock = self.fpm_socket().display()
        )
    }

    fn nginx_conf(&self) -> String {
        format!(
            "worker_processes auto;\npid {dir}/nginx.pid;\nerror_log {dir}/nginx-error.log;\nevents {{ worker_connections 4096; }}\nhttp {{\n    \
             include /etc/nginx/mime.types;\n    default_type application/octet-stream;\n    sendfile on;\n    tcp_nopush on;\n    access_log off;\n    \
             server {{\n        listen 127.0.0.1:{port};\n        root {site};\n        index index.html;\n        location ~ \\.php$ {{\n            \
             include /etc/nginx/fastcgi_params;\n            fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;\n            \
             fastcgi_pass unix:{sock};\n        }}\n    }}\n}}\n",
            dir = self.dir.display(),
            port = self.port,
            site = self.site().display(),
            sock = self.fpm_socket().display()
        )
    }
}
