//! FastCGI records as an application sends them: `RecordReader` splitting a
//! byte stream into records, and the bodies read from records (name-value
//! pairs, BEGIN_REQUEST, END_REQUEST).
//!
//! The input is the stream. It is pushed whole, one byte at a time and in
//! pieces, and read through `fill_from` from a stream that returns a few
//! bytes per read; each way must give the same records and then the same
//! error or the same bytes left over. The records must be those the header
//! fields describe, read straight from the input, and must survive being
//! written and read again; what is left over never exceeds one record.

use warren_fcgi::record::{self, DecodeError, Header, Record, RecordType, HEADER_LEN, MAX_CONTENT};
use warren_fcgi::RecordReader;

pub fn run(data: &[u8]) {
    let whole = split(&[data]);
    let bytes: Vec<&[u8]> = data.chunks(1).collect();
    assert_eq!(whole, split(&bytes), "pushed one byte at a time");
    for cuts in crate::cuts(data.len()) {
        assert_eq!(whole, split(&crate::pieces(data, &cuts)), "cut at {cuts:?}");
    }
    assert_eq!(whole, from_stream(data, 3));
    assert_eq!(whole, reference(data));

    for rec in &whole.records {
        round_trip(rec);
        bodies(rec);
    }
}

#[derive(Debug, PartialEq, Eq)]
struct Split {
    records: Vec<Record>,
    end: End,
}

#[derive(Debug, PartialEq, Eq)]
enum End {
    /// Bytes received but not yet a whole record.
    Pending(usize),
    Error(DecodeError),
}

/// Pushes each piece and takes every record it completes.
fn split(pieces: &[&[u8]]) -> Split {
    let mut r = RecordReader::default();
    let mut records = Vec::new();
    for piece in pieces {
        r.push(piece);
        loop {
            match r.next_record() {
                Ok(Some(rec)) => records.push(rec),
                Ok(None) => break,
                Err(e) => {
                    // An error stays: the stream cannot be resynchronised.
                    assert_eq!(r.next_record(), Err(e.clone_for_check()));
                    return Split { records, end: End::Error(e) };
                }
            }
        }
        assert!(r.pending() < HEADER_LEN + MAX_CONTENT + 255, "{} bytes pending", r.pending());
    }
    Split { records, end: End::Pending(r.pending()) }
}

/// Reads through `fill_from` from a stream that returns at most `step` bytes a read.
fn from_stream(data: &[u8], step: usize) -> Split {
    struct Trickle<'a>(&'a [u8], usize);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(self.1).min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let mut stream = Trickle(data, step);
    let mut r = RecordReader::default();
    let mut records = Vec::new();
    loop {
        match r.read_record(&mut stream) {
            Ok(Some(rec)) => records.push(rec),
            Ok(None) => return Split { records, end: End::Pending(r.pending()) },
            Err(e) => {
                let e = *e.into_inner().expect("a decode error").downcast::<DecodeError>().expect("a decode error");
                return Split { records, end: End::Error(e) };
            }
        }
    }
}

/// The records the headers describe, read from the whole input by offsets.
fn reference(data: &[u8]) -> Split {
    let mut records = Vec::new();
    let mut at = 0;
    while data.len() - at >= HEADER_LEN {
        let h: &[u8; HEADER_LEN] = data[at..at + HEADER_LEN].try_into().expect("8 bytes");
        if h[0] != record::VERSION_1 {
            return Split { records, end: End::Error(DecodeError::BadVersion(h[0])) };
        }
        let content = u16::from_be_bytes([h[4], h[5]]) as usize;
        let total = HEADER_LEN + content + h[6] as usize;
        if data.len() - at < total {
            break;
        }
        records.push(Record {
            kind: RecordType::from_u8(h[1]),
            request_id: u16::from_be_bytes([h[2], h[3]]),
            content: data[at + HEADER_LEN..at + HEADER_LEN + content].to_vec(),
        });
        at += total;
    }
    Split { records, end: End::Pending(data.len() - at) }
}

/// A record written by `write_record` reads back as itself.
fn round_trip(rec: &Record) {
    let mut out = Vec::new();
    record::write_record(&mut out, rec.kind, rec.request_id, &rec.content);
    assert_eq!(out.len() % 8, 0, "written records are padded to 8 bytes");
    let h = Header::parse(out[..HEADER_LEN].try_into().expect("8 bytes"));
    assert_eq!((h.kind, h.request_id, h.content_length as usize), (rec.kind, rec.request_id, rec.content.len()));
    let mut r = RecordReader::default();
    r.push(&out);
    assert_eq!(r.next_record().as_ref(), Ok(&Some(Record { kind: rec.kind, request_id: rec.request_id, content: rec.content.clone() })));
    assert_eq!(r.pending(), 0);
}

/// The bodies FastCGI gives structure to.
fn bodies(rec: &Record) {
    let c = &rec.content;
    match rec.kind {
        RecordType::Params | RecordType::GetValues | RecordType::GetValuesResult => {
            if let Ok(pairs) = record::parse_pairs(c) {
                let stated: usize = pairs.iter().map(|(n, v)| n.len() + v.len()).sum();
                assert!(stated <= c.len());
                let mut again = Vec::new();
                for (n, v) in &pairs {
                    record::write_pair(&mut again, n, v);
                }
                assert_eq!(record::parse_pairs(&again).as_ref(), Ok(&pairs));
                // The shortest form of each length: never longer than what was read.
                assert!(again.len() <= c.len());
            }
        }
        RecordType::BeginRequest => assert_eq!(record::parse_begin_request(c).is_ok(), c.len() >= 8),
        RecordType::EndRequest => assert_eq!(record::parse_end_request(c).is_ok(), c.len() >= 8),
        _ => {}
    }
}

/// `DecodeError` is not `Clone`; the fields it has are.
trait CloneForCheck {
    fn clone_for_check(&self) -> Self;
}

impl CloneForCheck for DecodeError {
    fn clone_for_check(&self) -> DecodeError {
        match self {
            DecodeError::BadVersion(v) => DecodeError::BadVersion(*v),
            DecodeError::Truncated(what) => DecodeError::Truncated(what),
        }
    }
}
