//! The Debian package, as packaging/build-deb.sh makes it with cargo-deb
//! from this build's binary: its files, conffiles and relations read back
//! with `dpkg-deb -c` and `-I`, then unpacked with `dpkg --root` into a
//! scratch root (no maintainer script runs: they need the system they
//! configure), and its default configuration served by the unpacked binary,
//! PHP through the php-fpm pool it declares. The full install into a
//! debootstrapped Debian root, maintainer scripts and warren-ctl included,
//! is packaging/test-deb.sh (minutes; not run here).
//!
//! About 7 s on two cores (5 of them cargo-deb packing the 20 MB debug
//! binary, with --fast compression), bounded at 120 s.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

const BOUND: Duration = Duration::from_secs(120);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs a command, panicking with its output if it fails; returns stdout.
fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed: {}\n{}{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The package of this test binary's warren (the debug build: a release
/// build would take minutes).
fn build_deb(out: &Path) -> PathBuf {
    let target = Path::new(BIN).parent().and_then(Path::parent).expect("BIN is TARGET/debug/warren");
    let printed = ok(Command::new(repo().join("packaging/build-deb.sh")).args(["--dev", "--no-build"]).env("CARGO_TARGET_DIR", target).env("WARREN_DEB_OUT", out));
    PathBuf::from(printed.trim())
}

#[test]
fn the_package_holds_the_server_unit_config_docs_and_installs() {
    let began = Instant::now();
    let dir = TempDir::new("deb");
    let deb = build_deb(&dir.0);
    let built = began.elapsed();

    let info = ok(Command::new("dpkg-deb").arg("-I").arg(&deb));
    let field = |name: &str| info.lines().find_map(|l| l.trim_start().strip_prefix(&format!("{name}: "))).unwrap_or_else(|| panic!("no {name} in:\n{info}")).to_string();
    assert_eq!(field("Package"), "warren");
    let depends = field("Depends");
    for d in ["libc6", "adduser", "media-types"] {
        assert!(depends.contains(d), "Depends: {depends}");
    }
    assert!(field("Recommends").split(", ").any(|r| r == "php-fpm"), "{info}");
    assert!(info.contains(" conffiles"), "{info}");
    let control = dir.0.join("control");
    ok(Command::new("dpkg-deb").arg("-e").arg(&deb).arg(&control));
    let conffiles = std::fs::read_to_string(control.join("conffiles")).unwrap();
    assert_eq!(conffiles.lines().collect::<Vec<_>>(), ["/etc/warren/warren.conf", "/etc/logrotate.d/warren"]);
    // The unit is enabled (and started where systemd runs) by the scripts.
    let postinst = std::fs::read_to_string(control.join("postinst")).unwrap();
    assert!(postinst.contains("deb-systemd-helper enable warren.service") && postinst.contains("install -d -m 0750 -o root -g adm /var/log/warren"), "{postinst}");
    assert!(std::fs::read_to_string(control.join("prerm")).unwrap().contains("deb-systemd-invoke stop warren.service"));

    let listing = ok(Command::new("dpkg-deb").arg("-c").arg(&deb));
    let files: Vec<&str> = listing.lines().filter_map(|l| l.split_whitespace().last()).collect();
    for f in [
        "./usr/sbin/warren",
        "./usr/sbin/warren-ctl",
        "./usr/lib/systemd/system/warren.service",
        "./usr/lib/tmpfiles.d/warren.conf",
        "./etc/warren/warren.conf",
        "./etc/logrotate.d/warren",
        "./usr/share/man/man8/warren.8",
        "./usr/share/bash-completion/completions/warren",
        "./usr/share/zsh/vendor-completions/_warren",
        "./usr/share/fish/vendor_completions.d/warren.fish",
        "./usr/share/doc/warren/install.md",
        "./usr/share/doc/warren/copyright",
        "./usr/share/warren/default-site/index.html",
    ] {
        assert!(files.contains(&f), "{f} is not in the package:\n{listing}");
    }
    assert!(listing.lines().any(|l| l.starts_with("-rwxr-xr-x root/root") || l.starts_with("-rwxr-xr-x 0/0")), "{listing}");

    // Unpacked into a scratch root: dpkg registers the files and conffiles.
    let root = dir.0.join("root");
    let admin = root.join("var/lib/dpkg");
    for d in ["info", "updates"] {
        std::fs::create_dir_all(admin.join(d)).unwrap();
    }
    for f in ["status", "available"] {
        std::fs::write(admin.join(f), "").unwrap();
    }
    ok(Command::new("dpkg").arg("--root").arg(&root).arg("--unpack").arg(&deb));
    let status = ok(Command::new("dpkg-query").arg("--admindir").arg(&admin).args(["-W", "-f", "${Status}|${Conffiles}", "warren"]));
    assert!(status.starts_with("install ok unpacked|") && status.contains("/etc/warren/warren.conf "), "{status}");
    let unpacked = root.join("usr/sbin/warren");
    let page = std::fs::read_to_string(root.join("usr/share/man/man8/warren.8")).unwrap();
    assert!(page.contains(".TH warren 8") && page.contains("reopen\\-logs") && page.contains(".SH FILES\n.TP\n/etc/warren/warren.conf"), "{page}");
    let bash = std::fs::read_to_string(root.join("usr/share/bash-completion/completions/warren")).unwrap();
    assert!(bash.contains("complete -F _warren") && bash.contains("graceful-stop"), "{bash}");

    // The unpacked warren reads the unpacked default configuration (a
    // conffile waits as .dpkg-new until dpkg configures the package).
    let conf = root.join("etc/warren/warren.conf.dpkg-new");
    let report = ok(Command::new(&unpacked).arg("-f").arg(&conf).arg("-S"));
    assert!(report.contains("\nMain DocumentRoot: \"/var/www/html\"\n") && report.contains("\nPidFile: \"/run/warren/warren.pid\"\n"), "{report}");
    assert!(report.contains("\nListen:\n         0.0.0.0:80 (http)\n") && report.contains("\nMain pools: www\n"), "{report}");
    // The default configuration names no MPM (event); each serves it.
    for mpm in ["event", "worker", "prefork"] {
        serves_default_site_and_php(&dir, &root, &unpacked, mpm);
    }

    let took = began.elapsed();
    eprintln!("package built in {built:?}, checked and served in {took:?} in all");
    assert!(took < BOUND, "the package test took {took:?}, over its bound of {BOUND:?}");
}

/// The default configuration as it is, with only the paths a test cannot
/// use moved: port 80, /var/www/html, /var/log/warren and /run/warren;
/// under `mpm`.
fn serves_default_site_and_php(dir: &TempDir, root: &Path, warren: &Path, mpm: &str) {
    let site = dir.0.join("html");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::copy(root.join("usr/share/warren/default-site/index.html"), site.join("index.html")).unwrap();
    std::fs::write(site.join("info.php"), "<?php echo 'php says ', 6 * 7, ' from ', PHP_SAPI;\n").unwrap();
    // The children run as www-data: they must reach the site.
    ok(Command::new("chmod").args(["-R", "a+rX"]).arg(&dir.0));
    let port = free_port();
    let default = std::fs::read_to_string(root.join("etc/warren/warren.conf.dpkg-new")).unwrap();
    let conf = default
        .replace("Listen 80\n", &format!("Listen 127.0.0.1:{port}\n"))
        .replace("/var/www/html", &site.display().to_string())
        .replace("/var/www/", &format!("{}/", dir.0.display()))
        .replace("/var/log/warren/", &format!("{}/", dir.0.display()))
        .replace("/run/warren/", &format!("{}/", dir.0.display()));
    assert!(!conf.contains("/var/") && !conf.contains("Listen 80"), "{conf}");
    let conf_path = dir.write("warren.conf", conf);
    let mut child = Command::new(warren).arg("-f").arg(&conf_path).args(["--mpm", mpm]).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let url = format!("http://127.0.0.1:{port}");
    let curl = |path: &str| Command::new("curl").args(["-sS", "-o", "-", "-w", "\n%{http_code}"]).arg(format!("{url}{path}")).output().unwrap();
    while !curl("/").status.success() {
        if let Ok(Some(st)) = child.try_wait() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("warren ({mpm}) with the default configuration exited with {st}: {err}");
        }
        assert!(Instant::now() < deadline, "the default configuration ({mpm}) does not answer on {url}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let body = |path: &str| String::from_utf8_lossy(&curl(path).stdout).into_owned();
    let index = body("/");
    assert!(index.contains("warren: it works") && index.ends_with("\n200"), "{mpm}: {index}");
    let php = body("/info.php");
    assert_eq!(php, "php says 42 from fpm-fcgi\n200", "{mpm}: PHP through the default php-fpm pool");
    let status = body("/server-status?auto");
    assert!(status.contains("BusyWorkers: ") && status.ends_with("\n200"), "{mpm}: {status}");
    terminate(child, STOP_GRACE);
}
