//! One stored answer and its file format: a magic line, then
//! length-prefixed fields (key, status, times, header fields, body) and a
//! 64-bit FNV-1a checksum of all before it. [`Entry::decode`] refuses a
//! file whose magic, lengths or checksum are wrong, so a truncated or
//! corrupt file is discarded rather than served.

use std::sync::Arc;

const MAGIC: &[u8; 12] = b"WARRENCACHE1";

/// A stored answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The whole key (vhost, URL, variant): compared at every lookup, so
    /// two keys sharing a file name never answer for each other.
    pub key: String,
    pub status: u16,
    /// The answer's fields as stored (hop-by-hop and ignored ones left out).
    pub headers: Vec<(String, String)>,
    pub body: Arc<[u8]>,
    /// When it was stored or last revalidated (seconds since the epoch).
    pub stored_at: u64,
    /// Until when it is fresh (seconds since the epoch).
    pub fresh_until: u64,
}

impl Entry {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn is_fresh(&self, now: u64) -> bool {
        now < self.fresh_until
    }

    /// Seconds since it was stored: the Age field's value.
    pub fn age(&self, now: u64) -> u64 {
        now.saturating_sub(self.stored_at)
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.body.len() + 512);
        out.extend_from_slice(MAGIC);
        put(&mut out, self.key.as_bytes());
        out.extend_from_slice(&self.status.to_le_bytes());
        out.extend_from_slice(&self.stored_at.to_le_bytes());
        out.extend_from_slice(&self.fresh_until.to_le_bytes());
        out.extend_from_slice(&(self.headers.len() as u32).to_le_bytes());
        for (n, v) in &self.headers {
            put(&mut out, n.as_bytes());
            put(&mut out, v.as_bytes());
        }
        put(&mut out, &self.body);
        let sum = fnv1a(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// The entry in `bytes`, None if it is not a whole, intact entry.
    pub fn decode(bytes: &[u8]) -> Option<Entry> {
        let (data, sum) = bytes.split_at_checked(bytes.len().checked_sub(8)?)?;
        if fnv1a(data) != u64::from_le_bytes(sum.try_into().ok()?) {
            return None;
        }
        let mut r = Reader(data.strip_prefix(MAGIC)?);
        let key = String::from_utf8(r.field()?.to_vec()).ok()?;
        let status = u16::from_le_bytes(r.take(2)?.try_into().ok()?);
        let stored_at = u64::from_le_bytes(r.take(8)?.try_into().ok()?);
        let fresh_until = u64::from_le_bytes(r.take(8)?.try_into().ok()?);
        let count = u32::from_le_bytes(r.take(4)?.try_into().ok()?) as usize;
        let mut headers = Vec::with_capacity(count.min(256));
        for _ in 0..count {
            let n = String::from_utf8(r.field()?.to_vec()).ok()?;
            let v = String::from_utf8(r.field()?.to_vec()).ok()?;
            headers.push((n, v));
        }
        let body: Arc<[u8]> = Arc::from(r.field()?);
        if !r.0.is_empty() {
            return None;
        }
        Some(Entry { key, status, headers, body, stored_at, fresh_until })
    }
}

fn put(out: &mut Vec<u8>, field: &[u8]) {
    out.extend_from_slice(&(field.len() as u64).to_le_bytes());
    out.extend_from_slice(field);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (a, b) = self.0.split_at_checked(n)?;
        self.0 = b;
        Some(a)
    }

    fn field(&mut self) -> Option<&'a [u8]> {
        let len = u64::from_le_bytes(self.take(8)?.try_into().ok()?);
        self.take(usize::try_from(len).ok()?)
    }
}

/// FNV-1a taken a word at a time: a hit checks its whole entry, so the
/// checksum must cost little next to sending it.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let h = words.by_ref().fold(0xcbf2_9ce4_8422_2325u64, |h, w| (h ^ u64::from_le_bytes(w.try_into().unwrap_or_default())).wrapping_mul(0x0100_0000_01b3));
    words.remainder().iter().fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Entry {
        Entry { key: "http://a:80/x?y".into(), status: 200, headers: vec![("Content-Type".into(), "text/html".into())], body: Arc::from(&b"hello"[..]), stored_at: 10, fresh_until: 70 }
    }

    #[test]
    fn an_entry_reads_back_as_written() {
        assert_eq!(Entry::decode(&sample().encode()), Some(sample()));
    }

    #[test]
    fn a_truncated_or_altered_entry_is_refused() {
        let bytes = sample().encode();
        for cut in 0..bytes.len() {
            assert_eq!(Entry::decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert_eq!(Entry::decode(&flipped), None);
    }
}
