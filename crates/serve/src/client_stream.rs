//! The client's connection as the MPMs read and write it: plain TCP, or
//! TLS over it ([`ClientStream`]). TLS is decrypted in user space by rustls,
//! or by the kernel (kTLS, see [`crate::ktls`]) once the handshake is done,
//! which keeps sendfile for static files. Every MPM and the FastCGI relays
//! use the same calls for both, so nothing above this knows which it has.
//!
//! The TLS state sits behind a mutex shared by the stream's clones: the
//! event loop lends a connection to a worker thread by cloning it and
//! holds it meanwhile (only one side uses it at a time, so the lock is
//! never contended).

use std::fs::File;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex, MutexGuard};

use warren_config::h2::H2Listener;
use std::time::Duration;

use rustls::{HandshakeKind, ServerConfig, ServerConnection};

use warren_handler::{ConnInfo, Site, TlsInfo};

use crate::ktls;
use warren_mpm::listen::Listener;
use warren_mpm::scoreboard::ThreadSlot;

/// The first byte of a TLS handshake record. A connection to a TLS port
/// that opens with a letter is speaking HTTP.
const TLS_HANDSHAKE: u8 = 0x16;
/// How much of a file is read and encrypted at a time over user-space TLS:
/// rustls's default buffer limit, four full records, so that one read and
/// one sendmsg carry what took four of each with a record at a time.
const FILE_CHUNK: usize = 64 * 1024;

/// What a held response head may take of rustls's buffer beside a file chunk.
const HEAD_ROOM: usize = 16 * 1024;

thread_local! {
    /// The file's bytes on their way into rustls, one buffer per thread and
    /// reused: a zeroed allocation per chunk cost a memset as long as the
    /// copy itself, and a buffer per connection would stay with idle ones.
    static FILE_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What the handshake settled, for FastCGI (HTTPS, SSL_PROTOCOL, ...), logs
/// and virtual host checks.
struct TlsDetails {
    protocol: &'static str,
    cipher: &'static str,
    cipher_bits: u16,
    server_name: Option<String>,
    resumed: bool,
    /// ALPN agreed `h2`: the connection speaks HTTP/2 (kept here, as the
    /// rustls connection is gone once the kernel has the records).
    alpn_h2: bool,
}

pub struct ClientStream {
    sock: TcpStream,
    tls: Option<Arc<Mutex<TlsState>>>,
    /// What HTTP/2 its listener offers (None: none).
    h2: Option<Arc<H2Listener>>,
}

enum Mode {
    /// rustls encrypts and decrypts (boxed: a connection's state is large,
    /// and a plain connection should not pay for it).
    User(Box<ServerConnection>),
    /// The kernel does the records: the socket is used as plain TCP.
    Kernel,
    /// The client spoke HTTP to the TLS port: it gets a plain 400.
    PlainHttp,
}

struct TlsState {
    mode: Mode,
    /// Whether the first bytes have been looked at.
    started: bool,
    details: Option<TlsDetails>,
    /// rustls holds decrypted bytes a read did not have room for.
    plaintext_left: bool,
    /// The peer's end (close_notify or FIN) came with the last data read:
    /// the next read says so, with no new event from the socket to wait for.
    eof_pending: bool,
    /// A send with more to follow left its records in rustls: the next
    /// file chunk joins them rather than pushing them out alone.
    records_held: bool,
}

/// The error a read returns once for a client speaking HTTP to a TLS port.
pub fn is_plain_http(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::InvalidData && e.get_ref().is_some_and(|inner| inner.is::<PlainHttp>())
}

#[derive(Debug)]
struct PlainHttp;

impl std::fmt::Display for PlainHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("plain HTTP on a TLS port")
    }
}

impl std::error::Error for PlainHttp {}

/// Apache's reason for the 400 a client speaking HTTP to a TLS port gets.
pub const PLAIN_HTTP_REASON: &str = "You're speaking plain HTTP to an SSL-enabled server port. Instead use the HTTPS scheme to access this URL, please.";

impl ClientStream {
    pub fn plain(sock: TcpStream) -> ClientStream {
        ClientStream { sock, tls: None, h2: None }
    }

    /// A connection whose first bytes are a TLS handshake, under `config`.
    pub fn tls(sock: TcpStream, config: Arc<ServerConfig>) -> io::Result<ClientStream> {
        let mut conn = ServerConnection::new(config).map_err(io::Error::other)?;
        // Room for a file chunk beside a response head held for it.
        conn.set_buffer_limit(Some(FILE_CHUNK + HEAD_ROOM));
        let state = TlsState { mode: Mode::User(Box::new(conn)), started: false, details: None, plaintext_left: false, eof_pending: false, records_held: false };
        Ok(ClientStream { sock, tls: Some(Arc::new(Mutex::new(state))), h2: None })
    }

    /// Accepts with a listener's TLS configuration, if it has one.
    pub fn accepted(sock: TcpStream, tls: Option<&Arc<ServerConfig>>) -> io::Result<ClientStream> {
        match tls {
            None => Ok(ClientStream::plain(sock)),
            Some(c) => ClientStream::tls(sock, c.clone()),
        }
    }

    /// The HTTP/2 its listener offers, for a connection accepted there.
    pub fn with_h2(mut self, h2: Option<Arc<H2Listener>>) -> ClientStream {
        self.h2 = h2;
        self
    }

    /// What HTTP/2 the connection's listener offers, if any.
    pub fn h2(&self) -> Option<&H2Listener> {
        self.h2.as_deref()
    }

    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    fn state(&self) -> Option<MutexGuard<'_, TlsState>> {
        self.tls.as_ref().map(|t| t.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Fills in the connection's TLS facts once its handshake is done
    /// (before its first request is handled), and counts the handshake on
    /// `slot`'s metrics.
    pub fn note_tls(&self, site: &Site, info: &mut ConnInfo, slot: &ThreadSlot) {
        if info.tls.is_some() || self.tls.is_none() {
            return;
        }
        let Some(s) = self.state() else { return };
        let Some(d) = &s.details else { return };
        let sni_host = d.server_name.as_deref().map(|name| site.select_host(Some(name.as_bytes()), info.local));
        info.tls = Some(TlsInfo { protocol: d.protocol, cipher: d.cipher, cipher_bits: d.cipher_bits, resumed: d.resumed, sni_host });
        slot.metrics.tls_handshake(d.resumed);
    }

    /// Whether the TLS handshake agreed HTTP/2 by ALPN (`h2`, offered only
    /// where `Protocols` allows it: see `warren_config::Settings::h2_listener`):
    /// the client's first bytes after the handshake are then HTTP/2's
    /// preface. Known once a read has completed the handshake (as the
    /// details [`ClientStream::note_tls`] gives); false before, and for
    /// plain connections.
    pub fn alpn_h2(&self) -> bool {
        self.state().is_some_and(|s| s.details.as_ref().is_some_and(|d| d.alpn_h2))
    }

    pub fn try_clone(&self) -> io::Result<ClientStream> {
        Ok(ClientStream { sock: self.sock.try_clone()?, tls: self.tls.clone(), h2: self.h2.clone() })
    }

    pub fn tcp(&self) -> &TcpStream {
        &self.sock
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    pub fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        self.sock.set_nonblocking(on)
    }

    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.sock.set_read_timeout(t)
    }

    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.sock.set_write_timeout(t)
    }

    /// Whether a read would return data without touching the socket
    /// (decrypted bytes rustls still holds): waiting for the socket to be
    /// readable first could wait for nothing.
    pub fn has_buffered_input(&self) -> bool {
        self.state().is_some_and(|s| s.plaintext_left || s.eof_pending)
    }

    /// Reads what has arrived; WouldBlock when nothing has (on a
    /// non-blocking socket). Over user-space TLS, a read fills `buf` as far
    /// as the socket allows without waiting, so that a short read still
    /// means the socket is drained (the event loop relies on it).
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(mut s) = self.state() else { return (&self.sock).read(buf) };
        let fd = self.sock.as_raw_fd();
        if !s.started {
            match opens_with_plain_http(fd)? {
                // Nothing has come yet: look again at the next read.
                None => {}
                Some(plain) => {
                    s.started = true;
                    if plain {
                        s.mode = Mode::PlainHttp;
                        return Err(io::Error::new(io::ErrorKind::InvalidData, PlainHttp));
                    }
                }
            }
        }
        match &mut s.mode {
            Mode::User(_) => read_user(&mut s, fd, buf),
            Mode::Kernel | Mode::PlainHttp => (&self.sock).read(buf),
        }
    }

    /// Sends bytes, returning how many were taken (WouldBlock if none).
    /// `more`: more follows at once (MSG_MORE for plain TCP; over user-space
    /// TLS the record waits in rustls to leave with what follows, in one
    /// sendmsg: a response head and its file's first records).
    pub fn send(&self, buf: &[u8], more: bool) -> io::Result<usize> {
        if let Some(mut s) = self.state() {
            let s = &mut *s;
            if let Mode::User(conn) = &mut s.mode {
                let n = send_user(conn, self.sock.as_raw_fd(), buf, more)?;
                s.records_held = more && conn.wants_write();
                return Ok(n);
            }
        }
        let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
        // SAFETY: buf is a valid buffer for its length; the fd is open.
        let n = unsafe { libc::send(self.sock.as_raw_fd(), buf.as_ptr().cast(), buf.len(), flags) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Sends up to `count` bytes of `file` from `offset`: sendfile on plain
    /// TCP and kernel TLS, read and encrypt over user-space TLS.
    pub fn send_file(&self, file: &File, offset: &mut u64, count: usize) -> io::Result<usize> {
        if let Some(mut s) = self.state() {
            let s = &mut *s;
            if let Mode::User(conn) = &mut s.mode {
                let held = std::mem::take(&mut s.records_held);
                return send_file_user(conn, self.sock.as_raw_fd(), file, offset, count, held);
            }
        }
        let mut off = *offset as i64;
        loop {
            match nix::sys::sendfile::sendfile64(&self.sock, file.as_fd(), Some(&mut off), count) {
                Ok(n) => {
                    *offset = off as u64;
                    return Ok(n);
                }
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Pushes what TLS has encrypted but not yet sent. Ok(true): nothing
    /// is left; Ok(false): the socket is full.
    pub fn flush_pending(&self) -> io::Result<bool> {
        let Some(mut s) = self.state() else { return Ok(true) };
        s.records_held = false;
        let Mode::User(conn) = &mut s.mode else { return Ok(true) };
        push(conn, self.sock.as_raw_fd())
    }

    /// Ends our side: TLS says close_notify first.
    pub fn shutdown_write(&self) {
        if let Some(mut s) = self.state() {
            if let Mode::User(conn) = &mut s.mode {
                conn.send_close_notify();
                let _ = push(conn, self.sock.as_raw_fd());
            }
        }
        let _ = self.sock.shutdown(Shutdown::Write);
    }
}

/// A listening socket's connections as client streams. The socket is the
/// process model's (`warren-mpm`, bound before the fork); what its
/// connections carry is known here.
pub trait AcceptClient {
    /// Accepts a connection as its client stream (TLS on a TLS listener,
    /// with the HTTP/2 the listener offers), with its peer and local address.
    fn accept(&self) -> io::Result<(ClientStream, SocketAddr, SocketAddr)>;
}

impl AcceptClient for Listener {
    fn accept(&self) -> io::Result<(ClientStream, SocketAddr, SocketAddr)> {
        let (stream, peer, local) = self.accept_tcp()?;
        Ok((ClientStream::accepted(stream, self.tls.as_ref())?.with_h2(self.h2.clone()), peer, local))
    }
}

impl AsFd for ClientStream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

impl AsRawFd for ClientStream {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

impl Read for &ClientStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        ClientStream::read(self, buf)
    }
}

impl Write for &ClientStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.send(buf, false)?;
        // Over TLS the bytes may still be in rustls: push them now (a
        // 100-continue must reach the client before it sends the body).
        self.flush_pending()?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_pending().map(|_| ())
    }
}

/// Looks at the connection's first byte without taking it: a letter where
/// a TLS record should begin is an HTTP request. None: no byte yet.
fn opens_with_plain_http(fd: RawFd) -> io::Result<Option<bool>> {
    let mut first = 0u8;
    // SAFETY: one byte of valid memory; the fd is open.
    let n = unsafe { libc::recv(fd, (&mut first as *mut u8).cast(), 1, libc::MSG_PEEK) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::WouldBlock { Ok(None) } else { Err(e) };
    }
    Ok((n == 1).then(|| first != TLS_HANDSHAKE && first.is_ascii_alphabetic()))
}

/// A user-space TLS read (see [`ClientStream::read`]).
fn read_user(s: &mut TlsState, fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    s.plaintext_left = false;
    if std::mem::take(&mut s.eof_pending) {
        return Ok(0);
    }
    let mut got = 0;
    // Whether the last read from the socket took less than it could: then
    // the socket is drained, and asking again would only say so.
    let mut drained = false;
    loop {
        let Mode::User(conn) = &mut s.mode else {
            // The kernel took over at the end of the handshake.
            return if got == 0 { read_kernel(fd, buf) } else { Ok(got) };
        };
        match conn.reader().read(&mut buf[got..]) {
            // close_notify.
            Ok(0) => {
                s.eof_pending = got > 0;
                return Ok(got);
            }
            Ok(n) => {
                got += n;
                if got == buf.len() {
                    s.plaintext_left = conn.process_new_packets().is_ok_and(|st| st.plaintext_bytes_to_read() > 0);
                    return Ok(got);
                }
                // Ask rustls again before the socket: it may hold the end
                // (close_notify), and a socket already drained would only
                // cost a system call to say it has nothing (one a request
                // on a kept-alive connection).
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && got > 0 && drained => return Ok(got),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // The peer closed without close_notify: the end, as for TCP.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                s.eof_pending = got > 0;
                return Ok(got);
            }
            Err(e) => return if got > 0 { Ok(got) } else { Err(e) },
        }
        // Only whole records are taken from the socket during the
        // handshake when the kernel may take over after it: what follows
        // the handshake must stay in the socket for the kernel to decrypt.
        let whole_records = conn.is_handshaking() && ktls::may_be_available();
        // Once some data is in hand, a read must not wait for more.
        let mut sock = SockIo { fd, wait: got == 0, whole_records, short: false };
        let read = conn.read_tls(&mut sock);
        drained = sock.short;
        match read {
            Ok(0) => {
                s.eof_pending = got > 0;
                return Ok(got);
            }
            Ok(_) => {}
            Err(e) => return if got > 0 { Ok(got) } else { Err(e) },
        }
        let was_handshaking = conn.is_handshaking();
        if let Err(e) = conn.process_new_packets() {
            // rustls has queued an alert saying why.
            let _ = push(conn, fd);
            return Err(io::Error::new(io::ErrorKind::InvalidData, e));
        }
        // Handshake flights and session tickets; what a full socket does
        // not take leaves at the next write or flush.
        push(conn, fd)?;
        if was_handshaking && !conn.is_handshaking() {
            s.details = Some(details(conn));
            if got == 0 {
                try_kernel(s, fd);
            }
        }
    }
}

fn read_kernel(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for its length; the fd is open.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Hands the record layer to the kernel if it can take it; on any failure
/// rustls keeps it, or (after the secrets were taken) the error closes the
/// connection at its next read.
fn try_kernel(s: &mut TlsState, fd: RawFd) {
    let Mode::User(conn) = &mut s.mode else { return };
    if !ktls::may_be_available() || conn.wants_write() || !ktls::attach(fd) {
        return;
    }
    let tls13 = conn.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3);
    let Mode::User(conn) = std::mem::replace(&mut s.mode, Mode::Kernel) else { unreachable!("checked above") };
    if conn.dangerous_extract_secrets().map_err(io::Error::other).and_then(|secrets| ktls::configure(fd, secrets, tls13)).is_err() {
        // The socket's ULP is set but has no keys: nothing more can be
        // read or written on it.
        let _ = nix::sys::socket::shutdown(fd, nix::sys::socket::Shutdown::Both);
    }
}

fn details(conn: &ServerConnection) -> TlsDetails {
    let suite = conn.negotiated_cipher_suite();
    TlsDetails {
        protocol: conn.protocol_version().map_or("", warren_tls::protocol_name),
        cipher: suite.map_or("", warren_tls::cipher_name),
        cipher_bits: suite.map_or(0, warren_tls::cipher_bits),
        server_name: conn.server_name().map(str::to_owned),
        resumed: conn.handshake_kind() == Some(HandshakeKind::Resumed),
        alpn_h2: conn.alpn_protocol() == Some(warren_tls::ALPN_H2),
    }
}

/// Reads a file's next bytes and gives them to rustls (see
/// [`ClientStream::send_file`]). Records still waiting for the socket go
/// first, unless `held` for this chunk: reading more of the file than
/// rustls would then take is a read for nothing.
fn send_file_user(conn: &mut ServerConnection, fd: RawFd, file: &File, offset: &mut u64, count: usize, held: bool) -> io::Result<usize> {
    if !held && !push(conn, fd)? {
        return Err(io::ErrorKind::WouldBlock.into());
    }
    FILE_BUF.with_borrow_mut(|chunk| {
        chunk.resize(FILE_CHUNK, 0);
        let want = count.min(FILE_CHUNK);
        let got = file.read_at(&mut chunk[..want], *offset)?;
        if got == 0 {
            return Ok(0);
        }
        let n = send_user(conn, fd, &chunk[..got], false)?;
        *offset += n as u64;
        Ok(n)
    })
}

/// Gives plaintext to rustls and pushes the records it makes (unless
/// `more` follows at once). Returns how much was taken; WouldBlock when
/// rustls's buffer is full and the socket too.
fn send_user(conn: &mut ServerConnection, fd: RawFd, buf: &[u8], more: bool) -> io::Result<usize> {
    loop {
        let n = conn.writer().write(buf)?;
        if n > 0 && more {
            return Ok(n);
        }
        // Records already made leave now if the socket takes them; what it
        // does not take waits in rustls for the next send or flush.
        match push(conn, fd) {
            Ok(_) => {}
            Err(e) if n > 0 && e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        if n > 0 || buf.is_empty() {
            return Ok(n);
        }
        if conn.wants_write() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
    }
}

/// Writes rustls's pending records. Ok(true): all out; Ok(false): socket full.
fn push(conn: &mut ServerConnection, fd: RawFd) -> io::Result<bool> {
    let mut sock = SockIo { fd, wait: false, whole_records: false, short: false };
    while conn.wants_write() {
        match conn.write_tls(&mut sock) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The socket as rustls reads and writes it.
struct SockIo {
    fd: RawFd,
    /// Whether a read may wait (a blocking socket, and nothing read yet).
    wait: bool,
    /// Read no further than the end of the next whole TLS record.
    whole_records: bool,
    /// Set when a read returned less than was asked.
    short: bool,
}

impl Read for SockIo {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let flags = if self.wait { 0 } else { libc::MSG_DONTWAIT };
        let mut want = buf.len();
        if self.whole_records {
            let mut header = [0u8; 5];
            // SAFETY: header is valid for 5 bytes; the fd is open.
            let n = unsafe { libc::recv(self.fd, header.as_mut_ptr().cast(), 5, flags | libc::MSG_PEEK) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            if n == 5 {
                want = want.min(5 + u16::from_be_bytes([header[3], header[4]]) as usize);
            } else if n > 0 {
                want = want.min(n as usize);
            }
        }
        loop {
            // SAFETY: buf is valid for `want` bytes; the fd is open.
            let n = unsafe { libc::recv(self.fd, buf.as_mut_ptr().cast(), want, flags) };
            if n >= 0 {
                self.short = (n as usize) < want && !self.whole_records;
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Write for SockIo {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[io::IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        // SAFETY: a zeroed msghdr pointing at valid iovecs (IoSlice is an iovec).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
        msg.msg_iovlen = bufs.len().min(libc::UIO_MAXIOV as usize) as _;
        // SAFETY: msg is valid; the fd is open.
        let n = unsafe { libc::sendmsg(self.fd, &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::process::{Command, Stdio};

    /// A TLS listener's configuration from a configuration file with
    /// `extra` in its TLS host, a certificate made by the `openssl` command.
    fn server_config(dir: &std::path::Path, extra: &str) -> Arc<ServerConfig> {
        std::fs::create_dir_all(dir.join("htdocs")).unwrap();
        let ok = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=a.test", "-days", "2", "-keyout"])
            .arg(dir.join("a.key"))
            .arg("-out")
            .arg(dir.join("a.pem"))
            .stderr(Stdio::null())
            .status()
            .expect("the openssl command");
        assert!(ok.success());
        let conf = dir.join("warren.conf");
        let text = format!("DocumentRoot htdocs\nListen 443\n<VirtualHost *:443>\nServerName a.test\nSSLEngine on\nSSLCertificateFile a.pem\nSSLCertificateKeyFile a.key\n{extra}</VirtualHost>\n");
        std::fs::write(&conf, text).unwrap();
        let loaded = warren_config::load_file(&conf, &warren_config::LoadOptions::default());
        let settings = loaded.settings.unwrap_or_else(|| panic!("{:?}", loaded.errors));
        warren_tls::ServerTls::new(&settings).unwrap().unwrap().for_listener("0.0.0.0:443".parse().unwrap()).unwrap()
    }

    /// Whether a connection from `openssl s_client -alpn <offer>` agreed
    /// h2, as the stream says once its first read has completed the
    /// handshake.
    fn alpn_h2_with(config: Arc<ServerConfig>, offer: &str) -> bool {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut client = Command::new("timeout")
            .args(["20", "openssl", "s_client", "-quiet", "-servername", "a.test", "-alpn", offer, "-connect"])
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("openssl s_client");
        let (sock, _) = listener.accept().unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let stream = ClientStream::tls(sock, config).unwrap();
        assert!(!stream.alpn_h2(), "nothing is agreed before the handshake");
        // s_client sends its input once the handshake is done.
        client.stdin.take().unwrap().write_all(b"x\n").unwrap();
        let mut buf = [0u8; 64];
        let n = stream.read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"x\n");
        let h2 = stream.alpn_h2();
        let _ = client.kill();
        let _ = client.wait();
        h2
    }

    #[test]
    fn alpn_h2_says_what_the_handshake_agreed() {
        let dir = std::env::temp_dir().join(format!("warren-client-stream-alpn-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let default = server_config(&dir.join("default"), "");
        assert!(!alpn_h2_with(default, "h2,http/1.1"));
        let on = server_config(&dir.join("on"), "Protocols h2 http/1.1\n");
        assert!(alpn_h2_with(on.clone(), "h2,http/1.1"));
        assert!(!alpn_h2_with(on, "http/1.1"));
        assert!(!ClientStream::plain(TcpStream::connect(TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()).unwrap()).alpn_h2());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_listener_gives_tls_streams_only_where_it_has_a_configuration() {
        let dir = std::env::temp_dir().join(format!("warren-client-stream-accept-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut listener = warren_mpm::bind("127.0.0.1:0".parse().unwrap(), 16).unwrap();
        // The listener defers accept until a connection's first bytes arrive.
        let mut plain = TcpStream::connect(listener.addr).unwrap();
        plain.write_all(b"GET / HTTP/1.1\r\n").unwrap();
        let (stream, peer, local) = listener.accept().unwrap();
        assert!(!stream.is_tls());
        assert_eq!((peer, local), (plain.local_addr().unwrap(), listener.addr));
        listener.tls = Some(server_config(&dir, ""));
        let mut tls = TcpStream::connect(listener.addr).unwrap();
        tls.write_all(b"\x16\x03\x01").unwrap();
        let (stream, peer, _) = listener.accept().unwrap();
        assert!(stream.is_tls());
        assert_eq!(peer, tls.local_addr().unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
