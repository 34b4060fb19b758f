//! FastCGI 1.0 records: the 8-byte header, the record types, the bodies of
//! BEGIN_REQUEST, END_REQUEST and UNKNOWN_TYPE, name-value pairs with 1- and
//! 4-byte lengths, and padding to a multiple of 8.

use std::fmt;
use std::io::{self, Read};

pub const VERSION_1: u8 = 1;
pub const HEADER_LEN: usize = 8;
/// The most content one record carries.
pub const MAX_CONTENT: usize = 65535;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordType {
    BeginRequest,
    AbortRequest,
    EndRequest,
    Params,
    Stdin,
    Stdout,
    Stderr,
    Data,
    GetValues,
    GetValuesResult,
    UnknownType,
    /// A type this version does not know (answered with UNKNOWN_TYPE).
    Other(u8),
}

impl RecordType {
    pub fn from_u8(b: u8) -> RecordType {
        match b {
            1 => RecordType::BeginRequest,
            2 => RecordType::AbortRequest,
            3 => RecordType::EndRequest,
            4 => RecordType::Params,
            5 => RecordType::Stdin,
            6 => RecordType::Stdout,
            7 => RecordType::Stderr,
            8 => RecordType::Data,
            9 => RecordType::GetValues,
            10 => RecordType::GetValuesResult,
            11 => RecordType::UnknownType,
            n => RecordType::Other(n),
        }
    }

    pub fn as_u8(self) -> u8 {
        match self {
            RecordType::BeginRequest => 1,
            RecordType::AbortRequest => 2,
            RecordType::EndRequest => 3,
            RecordType::Params => 4,
            RecordType::Stdin => 5,
            RecordType::Stdout => 6,
            RecordType::Stderr => 7,
            RecordType::Data => 8,
            RecordType::GetValues => 9,
            RecordType::GetValuesResult => 10,
            RecordType::UnknownType => 11,
            RecordType::Other(n) => n,
        }
    }

    /// Management records use request id 0.
    pub fn is_management(self) -> bool {
        matches!(self, RecordType::GetValues | RecordType::GetValuesResult | RecordType::UnknownType)
    }
}

/// Roles of BEGIN_REQUEST.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Responder,
    Authorizer,
    Filter,
}

impl Role {
    fn as_u16(self) -> u16 {
        match self {
            Role::Responder => 1,
            Role::Authorizer => 2,
            Role::Filter => 3,
        }
    }
}

/// FCGI_KEEP_CONN: the application keeps the connection open after the request.
pub const FLAG_KEEP_CONN: u8 = 1;

/// protocolStatus of END_REQUEST.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolStatus {
    RequestComplete,
    CantMultiplexConn,
    Overloaded,
    UnknownRole,
    Other(u8),
}

impl ProtocolStatus {
    fn from_u8(b: u8) -> ProtocolStatus {
        match b {
            0 => ProtocolStatus::RequestComplete,
            1 => ProtocolStatus::CantMultiplexConn,
            2 => ProtocolStatus::Overloaded,
            3 => ProtocolStatus::UnknownRole,
            n => ProtocolStatus::Other(n),
        }
    }

    fn as_u8(self) -> u8 {
        match self {
            ProtocolStatus::RequestComplete => 0,
            ProtocolStatus::CantMultiplexConn => 1,
            ProtocolStatus::Overloaded => 2,
            ProtocolStatus::UnknownRole => 3,
            ProtocolStatus::Other(n) => n,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u8,
    pub kind: RecordType,
    pub request_id: u16,
    pub content_length: u16,
    pub padding_length: u8,
}

impl Header {
    pub fn parse(b: &[u8; HEADER_LEN]) -> Header {
        Header {
            version: b[0],
            kind: RecordType::from_u8(b[1]),
            request_id: u16::from_be_bytes([b[2], b[3]]),
            content_length: u16::from_be_bytes([b[4], b[5]]),
            padding_length: b[6],
        }
    }

    /// Bytes after the header: content and padding.
    pub fn body_len(&self) -> usize {
        self.content_length as usize + self.padding_length as usize
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError {
    BadVersion(u8),
    /// A name-value pair or record body that runs past its end.
    Truncated(&'static str),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::BadVersion(v) => write!(f, "FastCGI record with version {v} (only 1 exists)"),
            DecodeError::Truncated(what) => write!(f, "truncated FastCGI {what}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Appends one record; content longer than a record can hold is an error of
/// the caller (use [`write_stream`]).
pub fn write_record(out: &mut Vec<u8>, kind: RecordType, request_id: u16, content: &[u8]) {
    let (head, padding) = record_header(kind, request_id, content.len());
    out.extend_from_slice(&head);
    out.extend_from_slice(content);
    out.extend(std::iter::repeat_n(0u8, padding));
}

/// The header of a record of `len` bytes of content, and the padding that
/// follows the content.
pub fn record_header(kind: RecordType, request_id: u16, len: usize) -> ([u8; HEADER_LEN], usize) {
    assert!(len <= MAX_CONTENT, "one record holds at most 65535 bytes");
    // Padding to a multiple of 8, as the specification recommends.
    let padding = (8 - len % 8) % 8;
    let [id_high, id_low] = request_id.to_be_bytes();
    let [len_high, len_low] = (len as u16).to_be_bytes();
    ([VERSION_1, kind.as_u8(), id_high, id_low, len_high, len_low, padding as u8, 0], padding)
}

/// Appends a stream (PARAMS, STDIN, DATA ...) in records of at most
/// 65535 bytes. An empty `content` writes the empty record that ends a stream.
pub fn write_stream(out: &mut Vec<u8>, kind: RecordType, request_id: u16, content: &[u8]) {
    if content.is_empty() {
        write_record(out, kind, request_id, &[]);
        return;
    }
    for chunk in content.chunks(MAX_CONTENT) {
        write_record(out, kind, request_id, chunk);
    }
}

pub fn begin_request(out: &mut Vec<u8>, request_id: u16, role: Role, flags: u8) {
    let mut body = [0u8; 8];
    body[..2].copy_from_slice(&role.as_u16().to_be_bytes());
    body[2] = flags;
    write_record(out, RecordType::BeginRequest, request_id, &body);
}

pub fn end_request(out: &mut Vec<u8>, request_id: u16, app_status: u32, status: ProtocolStatus) {
    let mut body = [0u8; 8];
    body[..4].copy_from_slice(&app_status.to_be_bytes());
    body[4] = status.as_u8();
    write_record(out, RecordType::EndRequest, request_id, &body);
}

/// The body of END_REQUEST: (appStatus, protocolStatus).
pub fn parse_end_request(body: &[u8]) -> Result<(u32, ProtocolStatus), DecodeError> {
    if body.len() < 8 {
        return Err(DecodeError::Truncated("END_REQUEST body"));
    }
    Ok((u32::from_be_bytes([body[0], body[1], body[2], body[3]]), ProtocolStatus::from_u8(body[4])))
}

/// The body of BEGIN_REQUEST: (role number, flags).
pub fn parse_begin_request(body: &[u8]) -> Result<(u16, u8), DecodeError> {
    if body.len() < 8 {
        return Err(DecodeError::Truncated("BEGIN_REQUEST body"));
    }
    Ok((u16::from_be_bytes([body[0], body[1]]), body[2]))
}

/// UNKNOWN_TYPE's body names the type that was not understood.
pub fn unknown_type(out: &mut Vec<u8>, kind: u8) {
    let mut body = [0u8; 8];
    body[0] = kind;
    write_record(out, RecordType::UnknownType, 0, &body);
}

fn write_len(out: &mut Vec<u8>, len: usize) {
    if len < 128 {
        out.push(len as u8);
    } else {
        out.extend_from_slice(&((len as u32) | 0x8000_0000).to_be_bytes());
    }
}

/// Appends one name-value pair: lengths under 128 take one byte, others four
/// (high bit set).
pub fn write_pair(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    write_len(out, name.len());
    write_len(out, value.len());
    out.extend_from_slice(name);
    out.extend_from_slice(value);
}

fn read_len(b: &[u8], pos: &mut usize) -> Result<usize, DecodeError> {
    let first = *b.get(*pos).ok_or(DecodeError::Truncated("name-value length"))?;
    if first & 0x80 == 0 {
        *pos += 1;
        return Ok(first as usize);
    }
    let bytes = b.get(*pos..*pos + 4).ok_or(DecodeError::Truncated("name-value length"))?;
    *pos += 4;
    Ok((u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) & 0x7fff_ffff) as usize)
}

/// Decoded name-value pairs, in order.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Decodes a whole stream of name-value pairs.
pub fn parse_pairs(b: &[u8]) -> Result<Pairs, DecodeError> {
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < b.len() {
        let n = read_len(b, &mut pos)?;
        let v = read_len(b, &mut pos)?;
        let end = pos.checked_add(n).and_then(|e| e.checked_add(v)).ok_or(DecodeError::Truncated("name-value pair"))?;
        if end > b.len() {
            return Err(DecodeError::Truncated("name-value pair"));
        }
        out.push((b[pos..pos + n].to_vec(), b[pos + n..end].to_vec()));
        pos = end;
    }
    Ok(out)
}

/// How much one read of an application's output asks for.
const READ_CHUNK: usize = 16 * 1024;

/// Splits a byte stream into records as they arrive.
#[derive(Default)]
pub struct RecordReader {
    buf: Vec<u8>,
}

/// One complete record.
#[derive(Debug, PartialEq, Eq)]
pub struct Record {
    pub kind: RecordType,
    pub request_id: u16,
    pub content: Vec<u8>,
}

impl RecordReader {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Reads once from `stream` straight onto the bytes not yet parsed (no
    /// buffer on the caller's stack); 0 at the end of the stream.
    pub fn fill_from<R: Read>(&mut self, stream: &mut R) -> io::Result<usize> {
        let old = self.buf.len();
        self.buf.resize(old + READ_CHUNK, 0);
        let got = stream.read(&mut self.buf[old..]);
        self.buf.truncate(old + *got.as_ref().unwrap_or(&0));
        got
    }

    /// The next complete record, if one has arrived.
    pub fn next_record(&mut self) -> Result<Option<Record>, DecodeError> {
        if self.buf.len() < HEADER_LEN {
            return Ok(None);
        }
        let mut h = [0u8; HEADER_LEN];
        h.copy_from_slice(&self.buf[..HEADER_LEN]);
        let header = Header::parse(&h);
        if header.version != VERSION_1 {
            return Err(DecodeError::BadVersion(header.version));
        }
        let total = HEADER_LEN + header.body_len();
        if self.buf.len() < total {
            return Ok(None);
        }
        let content = self.buf[HEADER_LEN..HEADER_LEN + header.content_length as usize].to_vec();
        self.buf.drain(..total);
        Ok(Some(Record { kind: header.kind, request_id: header.request_id, content }))
    }

    /// The next complete record, reading from `stream` until one is whole;
    /// None when the stream ends first.
    pub fn read_record<R: Read>(&mut self, stream: &mut R) -> io::Result<Option<Record>> {
        loop {
            if let Some(rec) = self.next_record().map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))? {
                return Ok(Some(rec));
            }
            if self.fill_from(stream)? == 0 {
                return Ok(None);
            }
        }
    }

    /// Bytes received but not yet part of a complete record.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_layout_and_padding() {
        let mut out = Vec::new();
        write_record(&mut out, RecordType::Stdin, 0x0102, b"hello");
        assert_eq!(&out[..8], &[1, 5, 1, 2, 0, 5, 3, 0]);
        assert_eq!(&out[8..13], b"hello");
        assert_eq!(out.len(), 16, "padded to a multiple of 8");
        let mut r = RecordReader::default();
        r.push(&out[..10]);
        assert_eq!(r.next_record().unwrap(), None);
        r.push(&out[10..]);
        assert_eq!(r.next_record().unwrap(), Some(Record { kind: RecordType::Stdin, request_id: 0x0102, content: b"hello".to_vec() }));
        assert_eq!(r.pending(), 0);
    }

    #[test]
    fn every_record_type_round_trips() {
        for n in 1..=12u8 {
            let kind = RecordType::from_u8(n);
            assert_eq!(kind.as_u8(), n);
            let mut out = Vec::new();
            write_record(&mut out, kind, 7, &[n; 3]);
            let mut r = RecordReader::default();
            r.push(&out);
            let rec = r.next_record().unwrap().unwrap();
            assert_eq!((rec.kind, rec.request_id, rec.content), (kind, 7, vec![n; 3]));
        }
        assert!(RecordType::GetValues.is_management() && !RecordType::Stdout.is_management());
    }

    #[test]
    fn begin_end_and_unknown() {
        let mut out = Vec::new();
        begin_request(&mut out, 1, Role::Responder, FLAG_KEEP_CONN);
        end_request(&mut out, 1, 255, ProtocolStatus::Overloaded);
        unknown_type(&mut out, 42);
        let mut r = RecordReader::default();
        r.push(&out);
        let b = r.next_record().unwrap().unwrap();
        assert_eq!(parse_begin_request(&b.content).unwrap(), (1, FLAG_KEEP_CONN));
        let e = r.next_record().unwrap().unwrap();
        assert_eq!(e.kind, RecordType::EndRequest);
        assert_eq!(parse_end_request(&e.content).unwrap(), (255, ProtocolStatus::Overloaded));
        let u = r.next_record().unwrap().unwrap();
        assert_eq!((u.kind, u.request_id, u.content[0]), (RecordType::UnknownType, 0, 42));
        assert!(parse_end_request(&[0; 3]).is_err());
    }

    #[test]
    fn pairs_with_short_and_long_lengths() {
        let long_value = vec![b'v'; 300];
        let long_name = vec![b'N'; 128];
        let mut out = Vec::new();
        write_pair(&mut out, b"SCRIPT_FILENAME", b"/srv/index.php");
        write_pair(&mut out, b"EMPTY", b"");
        write_pair(&mut out, b"LONG", &long_value);
        write_pair(&mut out, &long_name, b"x");
        assert_eq!(out[0], 15);
        let pairs = parse_pairs(&out).unwrap();
        assert_eq!(pairs.len(), 4);
        assert_eq!(pairs[0], (b"SCRIPT_FILENAME".to_vec(), b"/srv/index.php".to_vec()));
        assert_eq!(pairs[1].1, b"");
        assert_eq!(pairs[2].1, long_value);
        assert_eq!(pairs[3].0, long_name);
        // The 4-byte form has its high bit set.
        let at = 1 + 1 + 15 + 14 + 1 + 1 + 5 + 1;
        assert_eq!(out[at] & 0x80, 0x80);
        assert!(parse_pairs(&out[..out.len() - 1]).is_err());
        assert!(parse_pairs(&[0x80, 0, 0]).is_err());
    }

    #[test]
    fn long_streams_are_split() {
        let data = vec![7u8; MAX_CONTENT + 10];
        let mut out = Vec::new();
        write_stream(&mut out, RecordType::Stdin, 1, &data);
        write_stream(&mut out, RecordType::Stdin, 1, &[]);
        let mut r = RecordReader::default();
        r.push(&out);
        let a = r.next_record().unwrap().unwrap();
        let b = r.next_record().unwrap().unwrap();
        let end = r.next_record().unwrap().unwrap();
        assert_eq!((a.content.len(), b.content.len(), end.content.len()), (MAX_CONTENT, 10, 0));
    }

    #[test]
    fn bad_version_is_an_error() {
        let mut r = RecordReader::default();
        r.push(&[2, 6, 0, 1, 0, 0, 0, 0]);
        assert_eq!(r.next_record(), Err(DecodeError::BadVersion(2)));
    }

    #[test]
    fn fills_from_a_stream_in_reads() {
        let mut wire = Vec::new();
        write_record(&mut wire, RecordType::Stdout, 1, b"hello");
        write_record(&mut wire, RecordType::Stdout, 1, &[b'x'; 20_000]);
        let mut r = RecordReader::default();
        let mut stream = &wire[..];
        // One read takes at most READ_CHUNK bytes; what was parsed is not kept.
        assert_eq!(r.fill_from(&mut stream).unwrap(), READ_CHUNK);
        assert_eq!(r.next_record().unwrap().unwrap().content, b"hello");
        assert_eq!(r.next_record().unwrap(), None);
        assert_eq!(r.fill_from(&mut stream).unwrap(), wire.len() - READ_CHUNK);
        assert_eq!(r.next_record().unwrap().unwrap().content.len(), 20_000);
        assert_eq!(r.fill_from(&mut stream).unwrap(), 0);
        assert_eq!(r.pending(), 0);
    }
}
