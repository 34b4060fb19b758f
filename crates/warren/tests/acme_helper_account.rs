//! MDHelperUser's account checked before the server runs: `warren -t`
//! warns, naming the MDomain's file and line, when MDHelperUser is unset
//! and its default account (warren-acme) does not exist (the helper would
//! keep root); an MDHelperUser naming no account is an error for `-t` and
//! stops the start, naming its file, line and directive. The system
//! without warren-acme is made for one command only: its /etc/passwd
//! without that line, bind-mounted in a mount namespace of its own (the
//! other tests need the account).

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{base_config, free_port, TempDir, BIN};

/// A configuration managing a.test, with `extra` before its MDomain line;
/// written to the test's directory. Returns its path and the MDomain line.
fn managed_conf(dir: &TempDir, mpm: &str, extra: &str) -> (std::path::PathBuf, usize) {
    let port = free_port();
    let conf = base_config(mpm, &format!("Listen 127.0.0.1:{port}"), &format!("{extra}MDomain a.test\nMDContactEmail admin@a.test\nMDStoreDir md\n<VirtualHost *:{port}>\nServerName a.test\nSSLEngine on\n</VirtualHost>\n"));
    let line = conf.lines().position(|l| l == "MDomain a.test").unwrap() + 1;
    (dir.write("warren.conf", conf), line)
}

/// `warren ARGS -f CONF` run where /etc/passwd has no warren-acme line.
fn without_warren_acme(dir: &TempDir, args: &[&str], conf: &Path) -> Output {
    let passwd: String = std::fs::read_to_string("/etc/passwd").unwrap().lines().filter(|l| !l.starts_with("warren-acme:")).map(|l| format!("{l}\n")).collect();
    let passwd = dir.write("passwd", passwd);
    Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", r#"mount --bind "$1" /etc/passwd && shift && exec "$@""#, "sh"])
        .arg(&passwd)
        .arg(BIN)
        .args(args)
        .arg("-f")
        .arg(conf)
        .output()
        .expect("run unshare (util-linux)")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Unset MDHelperUser, no warren-acme: `-t` passes and says so, at the
/// MDomain's line; with the account it says nothing of it.
fn config_test_warns_of_the_missing_default_account(mpm: &str) {
    let dir = TempDir::new(&format!("acme-account-{mpm}"));
    common::standard_site(&dir);
    let (conf, line) = managed_conf(&dir, mpm, "");
    let out = without_warren_acme(&dir, &["-t"], &conf);
    let said = text(&out);
    assert!(out.status.success() && said.contains("Syntax OK"), "{said}");
    let warning = format!("{}:{line}: MDomain a.test: no account warren-acme (MDHelperUser's default): the ACME helper would keep root", conf.display());
    assert!(said.lines().any(|l| l.starts_with(&warning) && l.ends_with("(warning)")), "{said}");
    let with_account = Command::new(BIN).arg("-t").arg("-f").arg(&conf).output().unwrap();
    assert!(with_account.status.success() && !text(&with_account).contains("no account"), "{}", text(&with_account));
}

/// MDHelperUser naming no account: an error for `-t`, and the start
/// fails with it.
fn a_missing_named_account_is_an_error(mpm: &str) {
    let dir = TempDir::new(&format!("acme-account-named-{mpm}"));
    common::standard_site(&dir);
    let (conf, line) = managed_conf(&dir, mpm, "MDHelperUser no-such-acme-user\n");
    let error = format!("{}:{}: MDHelperUser no-such-acme-user: no such user", conf.display(), line - 1);
    for args in [&["-t"][..], &[]] {
        let out = Command::new("timeout").arg("20").arg(BIN).args(args).arg("-f").arg(&conf).current_dir(&dir.0).output().unwrap();
        let said = text(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {said}");
        assert!(said.lines().any(|l| l.starts_with(&error)), "{args:?}: {said}");
    }
}

each_mpm!(config_test_warns_of_the_missing_default_account, a_missing_named_account_is_an_error);
