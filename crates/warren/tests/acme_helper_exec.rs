//! The ACME helper starts clean: forked by a parent that already serves
//! TLS (the first MDomain added by a graceful restart), it is a fresh
//! `warren acme-helper` process, not a copy of the parent, so the private
//! keys of the server's other hosts are nowhere in its memory (nor in the
//! ACME client it forks and which drops to warren-acme). The test plays an
//! attacker who has taken over the ACME client (it parses what the
//! Internet sends) and reads its own memory: it reads both processes'
//! memory as root through /proc/PID/mem. No CA is needed (the one named
//! does not answer; the helper only has to run).

mod common;

use std::io::{Read, Seek, SeekFrom};
use std::process::Command;

use common::tls::Certs;
use common::{free_port, Server, TempDir};

/// The pid the error log gives after `prefix` ("ACME helper (pid ").
fn logged_pid(log: &str, prefix: &str) -> u32 {
    log.split(prefix).nth(1).and_then(|r| r.split(')').next()).and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("no {prefix:?} in the log: {log}"))
}

/// The pieces of a private key that would betray it in a process's
/// memory: a line of its PEM text (base64), and 32 bytes from inside its
/// DER form (the private exponent), as read and as a big number keeps them.
fn key_markers(key_file: &std::path::Path) -> Vec<Vec<u8>> {
    let pem = std::fs::read_to_string(key_file).unwrap();
    let line = pem.lines().filter(|l| !l.starts_with("-----")).nth(3).expect("a PEM body of several lines").as_bytes().to_vec();
    let der = Command::new("openssl").args(["pkey", "-outform", "DER", "-in"]).arg(key_file).output().unwrap();
    assert!(der.status.success() && der.stdout.len() > 200, "{der:?}");
    // RSA 2048's DER: the modulus (public) comes first; its private
    // exponent starts past byte 280.
    let private = der.stdout[300..332].to_vec();
    // aws-lc keeps it as a number in little-endian words: reversed.
    let reversed = private.iter().rev().copied().collect();
    vec![line, private, reversed]
}

/// Whether any of `markers` is in the writable memory of process `pid`
/// (its heap, stack, anonymous and data mappings: where a copy of a key
/// read at run time could be), read through /proc/PID/mem, at most 1 GiB.
fn memory_holds(pid: u32, markers: &[Vec<u8>]) -> Result<bool, String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).map_err(|e| format!("maps of {pid}: {e}"))?;
    let mut mem = std::fs::File::open(format!("/proc/{pid}/mem")).map_err(|e| format!("mem of {pid}: {e}"))?;
    let (mut read, mut regions) = (0u64, 0);
    for line in maps.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let (Some(range), Some(perms)) = (cols.first(), cols.get(1)) else { continue };
        if !perms.starts_with("rw") {
            continue;
        }
        let (start, end) = range.split_once('-').ok_or_else(|| format!("maps line {line}"))?;
        let (start, end) = (u64::from_str_radix(start, 16).unwrap(), u64::from_str_radix(end, 16).unwrap());
        read += end - start;
        if read > 1 << 30 {
            return Err(format!("process {pid} has more than 1 GiB of writable memory"));
        }
        let mut region = vec![0u8; (end - start) as usize];
        // Parts of a mapping may be unreadable (guard pages): skipped.
        if mem.seek(SeekFrom::Start(start)).is_err() || mem.read_exact(&mut region).is_err() {
            continue;
        }
        regions += 1;
        if markers.iter().any(|m| region.windows(m.len()).any(|w| w == m.as_slice())) {
            return Ok(true);
        }
    }
    if regions == 0 {
        return Err(format!("no memory of process {pid} could be read"));
    }
    Ok(false)
}

/// After the graceful restart that adds the first MDomain, the helper
/// (root relay) and its ACME client are `warren acme-helper` processes
/// whose memory does not hold b.test's key, which the parent serves with.
fn helper_forked_at_a_graceful_restart_holds_no_key(mpm: &str) {
    let dir = TempDir::new(&format!("acme-exec-{mpm}"));
    common::standard_site(&dir);
    let (https, closed) = (free_port(), free_port());
    let certs = Certs::make(&dir.0);
    let s = Server::start_in(dir, mpm, &format!("Listen 127.0.0.1:{https}\n<VirtualHost *:{https}>\nServerName b.test\n{}</VirtualHost>\n", certs.directives("b")));
    let markers = key_markers(&certs.key("b"));
    // The parent holds the key (the scan finds what it looks for).
    assert_eq!(memory_holds(s.pid(), &markers), Ok(true), "the parent's memory should hold b.test's key");
    let conf = std::fs::read_to_string(&s.conf).unwrap();
    std::fs::write(&s.conf, format!("{conf}MDomain a.test\nMDCertificateAuthority https://127.0.0.1:{closed}/dir\nMDContactEmail admin@a.test\nMDStoreDir md\n<VirtualHost *:{https}>\nServerName a.test\nSSLEngine on\n</VirtualHost>\n")).unwrap();
    common::unsafe_kill(s.pid(), 1);
    let log = s.wait_log("error.log", "managing a.test");
    let relay = logged_pid(&log, "ACME helper (pid ");
    let client = logged_pid(&log, "the ACME client (pid ");
    let warren = std::fs::canonicalize(env!("CARGO_BIN_EXE_warren")).unwrap();
    for pid in [relay, client] {
        assert_eq!(std::fs::read_link(format!("/proc/{pid}/exe")).ok().as_ref(), Some(&warren), "pid {pid}\n{log}");
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        let args: Vec<String> = cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        assert!(args.iter().any(|a| a == "acme-helper"), "pid {pid}: {args:?}");
        assert_eq!(memory_holds(pid, &markers), Ok(false), "pid {pid} holds b.test's key\n{log}");
    }
}

each_mpm!(helper_forked_at_a_graceful_restart_holds_no_key);
