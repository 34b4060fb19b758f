//! Kernel TLS: after rustls's handshake, the kernel encrypts and decrypts
//! the records (TLS_TX and TLS_RX with the traffic secrets rustls exports),
//! so that static files still go by sendfile and reads and writes are
//! plain system calls. Kernels without it (no `tls` ULP, as
//! CONFIG_TLS unset) leave the records to rustls in user space; the first
//! connection finds out, once per process.
//!
//! `WARREN_KTLS=off` in the environment keeps user-space TLS, to compare.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU8, Ordering};

use rustls::{ConnectionTrafficSecrets, ExtractedSecrets};

const UNKNOWN: u8 = 0;
const YES: u8 = 1;
const NO: u8 = 2;

static AVAILABLE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// Whether the kernel may take over: not yet known to lack it.
pub fn may_be_available() -> bool {
    match AVAILABLE.load(Ordering::Relaxed) {
        YES => true,
        NO => false,
        _ => {
            if std::env::var_os("WARREN_KTLS").is_some_and(|v| v == "off") {
                AVAILABLE.store(NO, Ordering::Relaxed);
                return false;
            }
            true
        }
    }
}

/// Puts the `tls` upper-layer protocol on a connected socket. False (and
/// the socket unchanged) where the kernel has none.
pub fn attach(fd: RawFd) -> bool {
    let name = b"tls";
    // SAFETY: a valid socket and a buffer of the given length.
    let r = unsafe { libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_ULP, name.as_ptr().cast(), name.len() as libc::socklen_t) };
    if r == 0 {
        AVAILABLE.store(YES, Ordering::Relaxed);
        return true;
    }
    let e = io::Error::last_os_error();
    // ENOENT: no tls module; ENOPROTOOPT: no ULP support at all.
    if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOPROTOOPT) | Some(libc::EOPNOTSUPP)) {
        AVAILABLE.store(NO, Ordering::Relaxed);
    }
    false
}

/// Gives the kernel both directions' keys and record sequence numbers.
pub fn configure(fd: RawFd, secrets: ExtractedSecrets, tls13: bool) -> io::Result<()> {
    let version = if tls13 { libc::TLS_1_3_VERSION } else { libc::TLS_1_2_VERSION };
    set(fd, libc::TLS_TX, version, secrets.tx.0, &secrets.tx.1)?;
    set(fd, libc::TLS_RX, version, secrets.rx.0, &secrets.rx.1)
}

/// One direction's `tls12_crypto_info_*` (the same layout serves TLS 1.3).
/// For AES-GCM the kernel takes the 12-byte nonce base as a 4-byte salt
/// and an 8-byte "iv"; ChaCha20 takes it whole.
fn set(fd: RawFd, direction: libc::c_int, version: u16, seq: u64, secrets: &ConnectionTrafficSecrets) -> io::Result<()> {
    let rec_seq = seq.to_be_bytes();
    match secrets {
        ConnectionTrafficSecrets::Aes128Gcm { key, iv } => {
            let (salt, nonce) = iv.as_ref().split_at(4);
            let info = libc::tls12_crypto_info_aes_gcm_128 {
                info: libc::tls_crypto_info { version, cipher_type: libc::TLS_CIPHER_AES_GCM_128 },
                iv: nonce.try_into().map_err(|_| bad_length())?,
                key: key.as_ref().try_into().map_err(|_| bad_length())?,
                salt: salt.try_into().map_err(|_| bad_length())?,
                rec_seq,
            };
            setsockopt(fd, direction, &info)
        }
        ConnectionTrafficSecrets::Aes256Gcm { key, iv } => {
            let (salt, nonce) = iv.as_ref().split_at(4);
            let info = libc::tls12_crypto_info_aes_gcm_256 {
                info: libc::tls_crypto_info { version, cipher_type: libc::TLS_CIPHER_AES_GCM_256 },
                iv: nonce.try_into().map_err(|_| bad_length())?,
                key: key.as_ref().try_into().map_err(|_| bad_length())?,
                salt: salt.try_into().map_err(|_| bad_length())?,
                rec_seq,
            };
            setsockopt(fd, direction, &info)
        }
        ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
            let info = libc::tls12_crypto_info_chacha20_poly1305 {
                info: libc::tls_crypto_info { version, cipher_type: libc::TLS_CIPHER_CHACHA20_POLY1305 },
                iv: iv.as_ref().try_into().map_err(|_| bad_length())?,
                key: key.as_ref().try_into().map_err(|_| bad_length())?,
                salt: [],
                rec_seq,
            };
            setsockopt(fd, direction, &info)
        }
        _ => Err(io::Error::new(io::ErrorKind::Unsupported, "no kernel TLS for this cipher")),
    }
}

fn bad_length() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "unexpected key or nonce length")
}

fn setsockopt<T>(fd: RawFd, direction: libc::c_int, info: &T) -> io::Result<()> {
    // SAFETY: info is a plain C struct of the size given; the fd is open.
    let r = unsafe { libc::setsockopt(fd, libc::SOL_TLS, direction, (info as *const T).cast(), std::mem::size_of::<T>() as libc::socklen_t) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_kernel_structs_have_the_uapi_sizes() {
        // linux/tls.h: 4-byte header, then iv, key, salt, rec_seq.
        assert_eq!(std::mem::size_of::<libc::tls12_crypto_info_aes_gcm_128>(), 4 + 8 + 16 + 4 + 8);
        assert_eq!(std::mem::size_of::<libc::tls12_crypto_info_aes_gcm_256>(), 4 + 8 + 32 + 4 + 8);
        assert_eq!(std::mem::size_of::<libc::tls12_crypto_info_chacha20_poly1305>(), 4 + 12 + 32 + 8);
    }
}
