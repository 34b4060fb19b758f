//! `warren acme-helper --brief-fd N`: mod_md's ACME helper, a mode of the
//! warren binary that warren-acme's `helper::start` executes in the child
//! it forks, so that the helper starts from a clean process rather than a
//! copy of the parent (whose memory holds every host's private keys). All
//! it knows comes in its brief, read from descriptor N; it is not a
//! command for people (a hand-started one finds no brief and exits).

use std::process::ExitCode;

use warren_acme::helper::{Brief, Log, LogPlace, Reload, HELPER_COMMAND};

/// Runs the helper (which never returns) when the command line is the
/// helper mode's; None otherwise.
pub fn run_if_asked() -> Option<ExitCode> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_none_or(|a| a != HELPER_COMMAND) {
        return None;
    }
    let fd = match &args[..] {
        [_, _, flag, n] if flag == "--brief-fd" => n.to_str().and_then(|n| n.parse::<std::os::fd::RawFd>().ok()).filter(|n| *n > 2),
        _ => None,
    };
    let Some(fd) = fd else {
        eprintln!("warren: {HELPER_COMMAND} is warren's own ACME helper, started by the server: not a command to run by hand");
        return Some(ExitCode::from(2));
    };
    let brief = match Brief::read(fd) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("warren: ACME helper: {e}; no certificate will be obtained");
            return Some(ExitCode::FAILURE);
        }
    };
    let log = open_log(&brief.log);
    let reload = brief.reread.clone().map(|r| -> Reload { Box::new(move || crate::load_checked(&r.file, &r.options, r.allow_root).settings) });
    warren_acme::helper::serve(brief, log, reload)
}

/// The server's error log, opened again by the helper (standard error if
/// it cannot be).
fn open_log(place: &LogPlace) -> Log {
    let log = warren_handler::logs::ErrorLog::open(place.file.as_deref(), place.origin.as_ref(), place.level)
        .or_else(|_| warren_handler::logs::ErrorLog::open(None, None, place.level))
        .expect("standard error as a log cannot fail to open");
    Box::new(move |level, message| log.log(level, None, message))
}
