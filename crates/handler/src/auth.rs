//! HTTP Basic authentication against htpasswd files (mod_auth_basic with
//! mod_authn_file and mod_authz_groupfile): the credentials of a request,
//! the password and group files as read (re-read when `stat` says they
//! changed), and the check of a password against htpasswd's formats:
//! bcrypt (`$2y$`), Apache's MD5 (`$apr1$`), `{SHA}`, and the system's
//! crypt forms (DES, `$1$`, `$5$`, `$6$`).
//!
//! Hashing is slow by design (bcrypt), so a password that matched is
//! remembered (as a digest of the stored hash and the password, never the
//! password) and the pipeline routes a request that must be hashed off the
//! event loop.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, LazyLock, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use subtle::ConstantTimeEq;
use warren_http::RequestHead;
use warren_config::auth::{parse_groups, parse_users, Lines};
use warren_stat_cache::{FileVersion, StatCache};

/// The user and password of a request's `Authorization: Basic` field.
pub struct Credentials {
    pub user: String,
    password: String,
}

impl Credentials {
    pub fn of(head: &RequestHead) -> Option<Credentials> {
        let field = std::str::from_utf8(head.header("authorization")?).ok()?.trim();
        let (scheme, token) = field.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("basic") {
            return None;
        }
        let decoded = String::from_utf8(BASE64.decode(token.trim()).ok()?).ok()?;
        let (user, password) = decoded.split_once(':')?;
        Some(Credentials { user: user.to_owned(), password: password.to_owned() })
    }
}

/// A password or group file as read, or why it could not be.
type Table = Arc<Result<Lines, String>>;

static USER_FILES: LazyLock<StatCache<Table>> = LazyLock::new(|| StatCache::of_entries(256));
static GROUP_FILES: LazyLock<StatCache<Table>> = LazyLock::new(|| StatCache::of_entries(256));
/// Digests of (stored hash, password) pairs that matched.
static MATCHED: LazyLock<Mutex<HashSet<[u8; 20]>>> = LazyLock::new(Default::default);
const MATCHED_MAX: usize = 4096;

fn read_table(cache: &StatCache<Table>, path: &Path, parse: fn(&str) -> Result<Lines, String>) -> Table {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => return Arc::new(Err(format!("{}: {e}", path.display()))),
    };
    let version = FileVersion::of(&meta);
    if let Some(t) = cache.get(path, &version) {
        return t;
    }
    let table = Arc::new(match std::fs::read_to_string(path) {
        Ok(text) => parse(&text).map_err(|e| format!("{}:{e}", path.display())),
        Err(e) => Err(format!("{}: {e}", path.display())),
    });
    cache.insert(path.to_path_buf(), version, table.clone());
    table
}

fn matched_key(hash: &str, password: &str) -> [u8; 20] {
    use sha1::{Digest, Sha1};
    let mut d = Sha1::new();
    d.update(hash.as_bytes());
    d.update([0]);
    d.update(password.as_bytes());
    d.finalize().into()
}

/// Whether the user file knows the user and this password matches its
/// hash; Err: the file cannot be read or has a bad line. `may_hash`
/// false: a password not seen matching before is not hashed (Ok(None)).
pub fn check(user_file: &Path, c: &Credentials, may_hash: bool) -> Result<Option<bool>, String> {
    let table = read_table(&USER_FILES, user_file, parse_users);
    let users = table.as_ref().as_ref().map_err(Clone::clone)?;
    let Some(hash) = users.get(&c.user).and_then(|h| h.first()) else {
        // An unknown user costs what a known one does (a hash of the same
        // file, so of its cost): no telling who exists by the time taken.
        if may_hash {
            let _ = verify(&c.password, users.values().find_map(|h| h.first()).map_or(DUMMY_BCRYPT, String::as_str));
        }
        return Ok(if may_hash { Some(false) } else { None });
    };
    let key = matched_key(hash, &c.password);
    if MATCHED.lock().unwrap_or_else(|e| e.into_inner()).contains(&key) {
        return Ok(Some(true));
    }
    if !may_hash {
        return Ok(None);
    }
    let ok = verify(&c.password, hash);
    if ok {
        let mut m = MATCHED.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() >= MATCHED_MAX {
            m.clear();
        }
        m.insert(key);
    }
    Ok(Some(ok))
}

/// Whether the user is a member of one of the groups; Err as for [`check`].
pub fn in_group(group_file: &Path, user: &str, groups: &[String]) -> Result<bool, String> {
    let table = read_table(&GROUP_FILES, group_file, parse_groups);
    let by_group = table.as_ref().as_ref().map_err(Clone::clone)?;
    Ok(groups.iter().any(|g| by_group.get(g).is_some_and(|members| members.iter().any(|m| m == user))))
}

/// `htpasswd -B -C 5 x x`'s hash: hashed for unknown users.
const DUMMY_BCRYPT: &str = "$2y$05$aOgK9.WMTTb8bNsG0b3dE.X3ECWWX3oeZioH0d7tbUquX2vdjqiZa";

/// Whether `password` matches an htpasswd hash.
pub fn verify(password: &str, hash: &str) -> bool {
    if let Some(rest) = hash.strip_prefix("$apr1$") {
        let Some((salt, _)) = rest.split_once('$') else { return false };
        return apr1(password.as_bytes(), salt).as_bytes().ct_eq(hash.as_bytes()).into();
    }
    if let Some(digest) = hash.strip_prefix("{SHA}") {
        use sha1::{Digest, Sha1};
        let mine = BASE64.encode(Sha1::digest(password.as_bytes()));
        return mine.as_bytes().ct_eq(digest.as_bytes()).into();
    }
    // pwhash compares in constant time.
    pwhash::unix::verify(password, hash)
}

/// Apache's MD5 crypt: FreeBSD's `$1$` algorithm with the magic `$apr1$`
/// (no crate does it).
fn apr1(pass: &[u8], salt: &str) -> String {
    use md5::{Digest, Md5};
    const MAGIC: &str = "$apr1$";
    let salt = &salt[..salt.len().min(8)];
    let hash_b = Md5::new().chain(pass).chain(salt).chain(pass).finalize();
    let mut a = Md5::new().chain(pass).chain(MAGIC).chain(salt);
    for chunk in std::iter::repeat_n(&hash_b[..], pass.len().div_ceil(16)).enumerate().map(|(i, b)| &b[..(pass.len() - i * 16).min(16)]) {
        a.update(chunk);
    }
    let mut n = pass.len();
    while n > 0 {
        a.update(if n & 1 == 1 { &[0u8][..] } else { &pass[..1] });
        n >>= 1;
    }
    let mut hash_a = a.finalize();
    for r in 0..1000 {
        let mut d = Md5::new();
        d.update(if r % 2 == 1 { pass } else { &hash_a[..] });
        if r % 3 > 0 {
            d.update(salt);
        }
        if r % 7 > 0 {
            d.update(pass);
        }
        d.update(if r % 2 == 0 { pass } else { &hash_a[..] });
        hash_a = d.finalize();
    }
    const ORDER: [usize; 16] = [12, 6, 0, 13, 7, 1, 14, 8, 2, 15, 9, 3, 5, 10, 4, 11];
    const ALPHABET: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let bytes: Vec<u8> = ORDER.iter().map(|&i| hash_a[i]).collect();
    let mut out = format!("{MAGIC}{salt}$");
    for group in bytes.chunks(3) {
        let v = group.iter().enumerate().fold(0u32, |v, (i, &b)| v | (b as u32) << (8 * i));
        for k in 0..=group.len() {
            out.push(ALPHABET[(v >> (6 * k)) as usize & 0x3f] as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_htpasswd_format() {
        // From htpasswd-verify's tests and `htpasswd -nbm/-nbs/-nbB/-nbd`.
        assert!(verify("password", "$apr1$xxxxxxxx$dxHfLAsjHkDRmG83UXe8K0"));
        assert!(verify("password", "$apr1$lZL6V/ci$eIMz/iKDkbtys/uU7LEK00"));
        assert!(!verify("Password", "$apr1$lZL6V/ci$eIMz/iKDkbtys/uU7LEK00"));
        assert!(verify("password", "$2y$05$nC6nErr9XZJuMJ57WyCob.EuZEjylDt2KaHfbfOtyb.EgL1I2jCVa"));
        assert!(verify("password", "bGVh02xkuGli2"));
        assert!(verify("password", "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="));
        assert!(!verify("passwor", "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="));
        assert!(verify("password", "$apr1$o6La6k5K$b5w6LtvVEmw0fLYSf9DUj0"));
        assert!(verify("password", "sxoff0wn4m21o"));
        assert!(verify("x", DUMMY_BCRYPT));
        assert!(!verify("password", "garbage"));
        assert!(!verify("password", "$apr1$nosep"));
    }
}
