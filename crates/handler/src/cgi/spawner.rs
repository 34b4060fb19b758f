//! The process that starts CGI programs, as mod_cgid's daemon: forked from
//! warren's parent at start, before any thread, and single-threaded
//! forever, so that a program is never forked from a threaded child (a
//! fork there copies locks other threads held). It keeps the parent's
//! privileges, which it needs to start each program as its user
//! ([`super::suexec`] decides who, and refuses what suexec refuses).
//!
//! A request to start a program is a fresh socket pair: one end is passed
//! over the control socket, and on it the worker writes the [`Launch`] and
//! gets back the program's pid and its stdin, stdout and stderr pipes; it
//! then keeps that socket open while the program runs. A `k` written on it
//! kills the program's process group (Timeout); its closing (the request
//! is over) kills the group too, whatever of it still runs. The program is
//! reaped only then: until its socket closes its pid stays a zombie's, so
//! that a signal to its group never reaches another process that got the
//! pid. The spawner exits once every holder of the control socket (the
//! parent and its children) is gone.

use std::ffi::CString;
use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;
use std::time::Duration;

use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::socket::{recvmsg, sendmsg, socketpair, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::suexec::{self, Identity};

/// The control socket's end in warren's processes, once the spawner runs.
static CONTROL: OnceLock<OwnedFd> = OnceLock::new();

/// The signals that stop, restart or reload warren: the spawner ignores
/// them (sent to the whole process group, they are its parent's to act
/// on; it ends with the parent), and gives each program their defaults.
const SERVER_SIGNALS: [libc::c_int; 6] = [libc::SIGHUP, libc::SIGINT, libc::SIGTERM, libc::SIGUSR1, libc::SIGUSR2, libc::SIGWINCH];

/// Where the program's checked descriptor, and its directory's until the
/// switch of user, sit in the program.
const PROGRAM_FD: libc::c_int = 3;
const DIR_FD: libc::c_int = 4;

/// How long the spawner waits for a worker to write its launch request:
/// it serves one at a time.
const LAUNCH_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// What a worker asks the spawner to start.
pub struct Launch {
    pub program: Vec<u8>,
    /// The tree the program must lie in: the DocumentRoot, or the
    /// ScriptAlias's directory.
    pub root: Vec<u8>,
    /// Whether `root` is a ScriptAlias's, a site's or a user's tree.
    pub tree: suexec::Tree,
    /// `SuexecUserGroup` of the host, if it has one.
    pub user_group: Option<(String, String)>,
    pub argv: Vec<Vec<u8>>,
    /// `NAME=value` each.
    pub env: Vec<Vec<u8>>,
}

/// A program running, seen from the worker.
pub struct Running {
    pub pid: i32,
    pub stdin: Option<std::fs::File>,
    pub stdout: std::fs::File,
    pub stderr: std::fs::File,
    /// Open while the program is ours; see the module's overview.
    control: UnixStream,
    /// Never written: closed (dropped) when the request is over, which
    /// ends the threads that pump the program's standard input and error.
    _done: OwnedFd,
    /// Its other end, which the pumps watch.
    pub(crate) over: std::sync::Arc<OwnedFd>,
}

impl Running {
    /// Has the spawner kill the program's process group (its pid is the
    /// group's: it runs in a session of its own).
    pub fn kill(&mut self) {
        let _ = self.control.write_all(b"k");
    }
}

/// Why a program was not started: the status to answer and the log line.
pub struct NotStarted {
    pub status: u16,
    pub why: String,
}

/// Whether the spawner runs in this server.
pub fn running() -> bool {
    CONTROL.get().is_some()
}

/// Forks the spawner. Call while the process has one thread. The spawner
/// runs as the caller; `server_user` is the account (User) programs owned
/// by root or a system account run as, when the caller is root.
pub fn start(server_user: Option<&str>, server_group: Option<&str>) -> io::Result<()> {
    let (ours, theirs) = socketpair(AddressFamily::Unix, SockType::SeqPacket, None, SockFlag::SOCK_CLOEXEC).map_err(io::Error::from)?;
    let fallback = suexec::server_identity(server_user, server_group);
    // SAFETY: the caller has one thread, so the child may do anything.
    match unsafe { nix::unistd::fork() }.map_err(io::Error::from)? {
        nix::unistd::ForkResult::Child => {
            drop(ours);
            // SAFETY: prctl with constant arguments.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) };
            for sig in SERVER_SIGNALS {
                // SAFETY: setting a disposition to SIG_IGN.
                unsafe { libc::signal(sig, libc::SIG_IGN) };
            }
            serve(theirs, fallback);
            // SAFETY: leaving the child without running the parent's exit handlers.
            unsafe { libc::_exit(0) }
        }
        nix::unistd::ForkResult::Parent { .. } => {
            drop(theirs);
            let _ = CONTROL.set(ours);
            Ok(())
        }
    }
}

/// Starts `launch` through the spawner.
pub fn spawn(launch: &Launch) -> Result<Running, NotStarted> {
    let gone = |e: &dyn std::fmt::Display| NotStarted { status: 503, why: format!("the CGI spawner cannot be reached: {e}") };
    let control = CONTROL.get().ok_or_else(|| NotStarted { status: 503, why: "the CGI spawner is not running (the configuration had no CGI and no LoadModule cgid_module at start: restart warren)".into() })?;
    let (mut mine, theirs) = UnixStream::pair().map_err(|e| gone(&e))?;
    let fds = [theirs.as_raw_fd()];
    sendmsg::<()>(control.as_raw_fd(), &[IoSlice::new(b"r")], &[ControlMessage::ScmRights(&fds)], MsgFlags::MSG_NOSIGNAL, None).map_err(|e| gone(&e))?;
    drop(theirs);
    mine.write_all(&encode(launch)).map_err(|e| gone(&e))?;
    let _ = mine.set_read_timeout(Some(LAUNCH_READ_TIMEOUT * 2));
    let mut buf = [0u8; 4096];
    let mut space = nix::cmsg_space!([RawFd; 3]);
    let (n, received) = {
        let mut iov = [IoSliceMut::new(&mut buf)];
        let msg = recvmsg::<()>(mine.as_raw_fd(), &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC).map_err(|e| gone(&e))?;
        let mut received: Vec<OwnedFd> = Vec::new();
        for c in msg.cmsgs().into_iter().flatten() {
            if let ControlMessageOwned::ScmRights(fds) = c {
                // SAFETY: descriptors just received are ours alone.
                received.extend(fds.into_iter().map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }));
            }
        }
        (msg.bytes, received)
    };
    match (&buf[..n], received.len()) {
        ([0, pid @ ..], 3) if pid.len() == 4 => {
            let mut fds = received.into_iter().map(std::fs::File::from);
            let (stdin, stdout, stderr) = (fds.next(), fds.next().expect("3"), fds.next().expect("3"));
            let _ = mine.set_read_timeout(None);
            let (over, done) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| gone(&e))?;
            Ok(Running { pid: i32::from_le_bytes(pid.try_into().expect("4 bytes")), stdin, stdout, stderr, control: mine, _done: done, over: std::sync::Arc::new(over) })
        }
        ([1, why @ ..], _) => Err(NotStarted { status: 500, why: String::from_utf8_lossy(why).into_owned() }),
        _ => Err(gone(&"a broken answer (did it die?)")),
    }
}

fn encode(l: &Launch) -> Vec<u8> {
    let (user, group) = l.user_group.clone().unwrap_or_default();
    // suexec's own spelling of a user's directory: `~user`.
    let tree = match &l.tree {
        suexec::Tree::ScriptAlias => b"a".to_vec(),
        suexec::Tree::Site => b"s".to_vec(),
        suexec::Tree::UserDir(user) => [b"~", user.as_bytes()].concat(),
    };
    let mut fields: Vec<&[u8]> = vec![&l.program, &l.root, &tree, user.as_bytes(), group.as_bytes()];
    let argc = l.argv.len().to_string();
    fields.push(argc.as_bytes());
    fields.extend(l.argv.iter().map(Vec::as_slice));
    fields.extend(l.env.iter().map(Vec::as_slice));
    let mut out = Vec::new();
    out.extend_from_slice(&(fields.len() as u32).to_le_bytes());
    for f in fields {
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    out
}

/// A launch request as the spawner reads it, bounded so that a broken
/// worker cannot make it allocate without end.
fn decode(r: &mut impl Read) -> io::Result<Vec<Vec<u8>>> {
    const MAX_FIELDS: u32 = 10_000;
    const MAX_TOTAL: usize = 16 << 20;
    let mut word = [0u8; 4];
    r.read_exact(&mut word)?;
    let n = u32::from_le_bytes(word);
    if n > MAX_FIELDS {
        return Err(io::Error::other("too many fields"));
    }
    let mut total = 0;
    let mut fields = Vec::with_capacity(n as usize);
    for _ in 0..n {
        r.read_exact(&mut word)?;
        let len = u32::from_le_bytes(word) as usize;
        total += len;
        if total > MAX_TOTAL {
            return Err(io::Error::other("request too large"));
        }
        let mut f = vec![0u8; len];
        r.read_exact(&mut f)?;
        fields.push(f);
    }
    Ok(fields)
}

/// A program the spawner started.
struct Child {
    /// The worker's socket; None once closed, the group killed, waiting
    /// to reap the program.
    socket: Option<UnixStream>,
    pid: Pid,
}

impl Child {
    /// The request is over: its group is killed (nothing of it outlives
    /// the request to hold its pipes), and the program reaped if it is gone.
    /// Whether it was.
    fn end(&mut self) -> bool {
        self.socket = None;
        let _ = kill(Pid::from_raw(-self.pid.as_raw()), Signal::SIGKILL);
        self.reaped()
    }

    fn reaped(&self) -> bool {
        !matches!(waitpid(self.pid, Some(WaitPidFlag::WNOHANG)), Ok(WaitStatus::StillAlive))
    }
}

/// The spawner's loop.
fn serve(control: OwnedFd, fallback: Option<Identity>) {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut mask = SigSet::empty();
    mask.add(Signal::SIGCHLD);
    let _ = mask.thread_block();
    let Ok(sigchld) = nix::sys::signalfd::SignalFd::with_flags(&mask, nix::sys::signalfd::SfdFlags::SFD_CLOEXEC | nix::sys::signalfd::SfdFlags::SFD_NONBLOCK) else { return };
    let mut children: Vec<Child> = Vec::new();
    loop {
        let (control_ready, chld_ready, ready): (bool, bool, Vec<bool>) = {
            let mut fds = vec![PollFd::new(control.as_fd(), PollFlags::POLLIN), PollFd::new(sigchld.as_fd(), PollFlags::POLLIN)];
            fds.extend(children.iter().filter_map(|c| c.socket.as_ref()).map(|s| PollFd::new(s.as_fd(), PollFlags::POLLIN)));
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return,
            }
            let is = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
            (is(&fds[0]), is(&fds[1]), fds[2..].iter().map(is).collect())
        };
        // The workers' sockets first. A program is reaped only once its
        // socket closed, so its pid, and its group's, are never another's
        // when signalled.
        let mut keep = Vec::with_capacity(children.len());
        let mut ready = ready.into_iter();
        for mut c in children.drain(..) {
            let Some(socket) = c.socket.as_mut() else {
                keep.push(c);
                continue;
            };
            if !ready.next().unwrap_or(false) {
                keep.push(c);
                continue;
            }
            let mut b = [0u8; 1];
            match socket.read(&mut b) {
                Ok(1) if b[0] == b'k' => {
                    let _ = kill(Pid::from_raw(-c.pid.as_raw()), Signal::SIGKILL);
                    keep.push(c);
                }
                Ok(1) => keep.push(c),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => keep.push(c),
                // The worker is done with it.
                _ => {
                    if !c.end() {
                        keep.push(c);
                    }
                }
            }
        }
        children = keep;
        if chld_ready {
            while let Ok(Some(_)) = sigchld.read_signal() {}
            children.retain(|c| c.socket.is_some() || !c.reaped());
        }
        if control_ready {
            let mut buf = [0u8; 8];
            let mut space = nix::cmsg_space!([RawFd; 1]);
            let mut iov = [IoSliceMut::new(&mut buf)];
            let Ok(msg) = recvmsg::<()>(control.as_raw_fd(), &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC) else { return };
            if msg.bytes == 0 {
                // Every process of the server has gone.
                return;
            }
            let mut sockets = Vec::new();
            for c in msg.cmsgs().into_iter().flatten() {
                if let ControlMessageOwned::ScmRights(fds) = c {
                    // SAFETY: descriptors just received are ours alone.
                    sockets.extend(fds.into_iter().map(|fd| UnixStream::from(unsafe { OwnedFd::from_raw_fd(fd) })));
                }
            }
            for socket in sockets {
                if let Some(child) = launch(socket, fallback.as_ref(), &mask) {
                    children.push(child);
                }
            }
        }
    }
}

/// Reads one launch request, checks it, starts the program and answers.
fn launch(mut socket: UnixStream, fallback: Option<&Identity>, mask: &SigSet) -> Option<Child> {
    let _ = socket.set_read_timeout(Some(LAUNCH_READ_TIMEOUT));
    let fields = decode(&mut socket).ok()?;
    let refuse = |socket: &mut UnixStream, why: String| {
        let mut m = vec![1u8];
        m.extend_from_slice(why.as_bytes());
        let _ = socket.write_all(&m);
    };
    let [program, root, tree, user, group, argc, rest @ ..] = fields.as_slice() else {
        refuse(&mut socket, "a malformed launch request".into());
        return None;
    };
    let argc: usize = std::str::from_utf8(argc).ok().and_then(|a| a.parse().ok()).filter(|&a| a <= rest.len() && a > 0)?;
    let user_group = (!user.is_empty()).then(|| (String::from_utf8_lossy(user).into_owned(), String::from_utf8_lossy(group).into_owned()));
    let tree = match tree.as_slice() {
        b"a" => suexec::Tree::ScriptAlias,
        [b'~', user @ ..] => suexec::Tree::UserDir(String::from_utf8_lossy(user).into_owned()),
        _ => suexec::Tree::Site,
    };
    let checked = match suexec::check(program, root, &tree, user_group.as_ref(), fallback) {
        Ok(c) => c,
        Err(why) => {
            refuse(&mut socket, why);
            return None;
        }
    };
    let cstrings = |v: &[Vec<u8>]| v.iter().map(|a| CString::new(a.clone())).collect::<Result<Vec<_>, _>>();
    let (Ok(argv), Ok(env)) = (cstrings(&rest[..argc]), cstrings(&suexec::safe_env(rest[argc..].to_vec()))) else {
        refuse(&mut socket, "a NUL byte in the program's arguments or environment".into());
        return None;
    };
    let pipes = (nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC), nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC), nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC));
    let (Ok(stdin), Ok(stdout), Ok(stderr)) = pipes else {
        refuse(&mut socket, "cannot make pipes for the program".into());
        return None;
    };
    let argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let env_ptrs: Vec<*const libc::c_char> = env.iter().map(|a| a.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let groups = [checked.identity.gid];
    // SAFETY: the spawner has one thread; the child only makes system calls
    // on values prepared above, then execs or _exits.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => unsafe {
            let fail = |what: &[u8]| {
                libc::write(stderr.1.as_raw_fd(), what.as_ptr().cast(), what.len());
                libc::_exit(127)
            };
            libc::setsid();
            if libc::dup2(stdin.0.as_raw_fd(), 0) < 0 || libc::dup2(stdout.1.as_raw_fd(), 1) < 0 || libc::dup2(stderr.1.as_raw_fd(), 2) < 0 {
                fail(b"warren cgi: cannot set up standard input and output\n");
            }
            // The checked program as fd 3 and its directory as 4 (above 10
            // first, so that neither lands on the other), then nothing else
            // of warren's stays open in the program.
            let (program_fd, dir_fd) = (libc::fcntl(checked.program.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10), libc::fcntl(checked.dir.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10));
            if program_fd < 0 || dir_fd < 0 || libc::dup3(program_fd, PROGRAM_FD, libc::O_CLOEXEC) < 0 || libc::dup3(dir_fd, DIR_FD, libc::O_CLOEXEC) < 0 {
                fail(b"warren cgi: cannot hold the program's descriptors\n");
            }
            libc::syscall(libc::SYS_close_range, (DIR_FD + 1) as libc::c_uint, libc::c_uint::MAX, 0 as libc::c_uint);
            if checked.switch && (libc::setgroups(1, groups.as_ptr()) != 0 || libc::setgid(checked.identity.gid) != 0 || libc::setuid(checked.identity.uid) != 0) {
                fail(b"warren cgi: cannot switch to the program's user\n");
            }
            if libc::fchdir(DIR_FD) != 0 {
                fail(b"warren cgi: cannot enter the program's directory\n");
            }
            libc::close(DIR_FD);
            // What warren ignores or blocks is the program's again.
            for sig in SERVER_SIGNALS.into_iter().chain([libc::SIGPIPE]) {
                libc::signal(sig, libc::SIG_DFL);
            }
            let _ = mask.thread_unblock();
            // The descriptor checked is what runs. A `#!` script's
            // interpreter opens it again as /dev/fd/3, which the kernel
            // refuses (ENOENT) while it is close-on-exec: then it is kept open.
            let empty = c"";
            libc::syscall(libc::SYS_execveat, PROGRAM_FD, empty.as_ptr(), argv_ptrs.as_ptr(), env_ptrs.as_ptr(), libc::AT_EMPTY_PATH);
            if *libc::__errno_location() == libc::ENOENT && libc::fcntl(PROGRAM_FD, libc::F_SETFD, 0) == 0 {
                libc::syscall(libc::SYS_execveat, PROGRAM_FD, empty.as_ptr(), argv_ptrs.as_ptr(), env_ptrs.as_ptr(), libc::AT_EMPTY_PATH);
            }
            fail(b"warren cgi: cannot execute the program (is it executable, with a valid #! line?)\n")
        },
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            drop((stdin.0, stdout.1, stderr.1));
            let fds = [stdin.1.as_raw_fd(), stdout.0.as_raw_fd(), stderr.0.as_raw_fd()];
            let mut m = vec![0u8];
            m.extend_from_slice(&child.as_raw().to_le_bytes());
            if sendmsg::<()>(socket.as_raw_fd(), &[IoSlice::new(&m)], &[ControlMessage::ScmRights(&fds)], MsgFlags::MSG_NOSIGNAL, None).is_err() {
                let _ = kill(Pid::from_raw(-child.as_raw()), Signal::SIGKILL);
            }
            let _ = socket.set_read_timeout(None);
            Some(Child { socket: Some(socket), pid: child })
        }
        Err(e) => {
            refuse(&mut socket, format!("cannot fork: {e}"));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_requests_round_trip_and_are_bounded() {
        let l = Launch { program: b"/srv/cgi/a.cgi".to_vec(), root: b"/srv/cgi".to_vec(), tree: suexec::Tree::ScriptAlias, user_group: Some(("u".into(), "g".into())), argv: vec![b"a.cgi".to_vec()], env: vec![b"A=1".to_vec(), b"B=".to_vec()] };
        let fields = decode(&mut &encode(&l)[..]).unwrap();
        assert_eq!(fields, vec![b"/srv/cgi/a.cgi".to_vec(), b"/srv/cgi".to_vec(), b"a".to_vec(), b"u".to_vec(), b"g".to_vec(), b"1".to_vec(), b"a.cgi".to_vec(), b"A=1".to_vec(), b"B=".to_vec()]);
        let mut huge = 5u32.to_le_bytes().to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&mut &huge[..]).is_err());
        assert!(decode(&mut &u32::MAX.to_le_bytes()[..]).is_err());
    }
}
