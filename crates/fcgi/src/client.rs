//! A FastCGI client for one request at a time on a stream (unix or TCP
//! socket): BEGIN_REQUEST, PARAMS, STDIN out; STDOUT, STDERR and
//! END_REQUEST back. It does no buffering of its own beyond one record, so
//! a caller can stream bodies both ways with bounded memory.

use std::io::{self, Read, Write};

use crate::record::{self, DecodeError, ProtocolStatus, RecordReader, RecordType, Role, FLAG_KEEP_CONN, MAX_CONTENT};

/// What the application sent back.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
    End { app_status: u32, protocol_status: ProtocolStatus },
}

/// BEGIN_REQUEST (Responder) and the PARAMS stream; with `no_body` the
/// empty STDIN record too, so that the whole request is one write.
pub fn encode_begin<N: AsRef<[u8]>, V: AsRef<[u8]>>(out: &mut Vec<u8>, request_id: u16, params: &[(N, V)], keep_conn: bool, no_body: bool) {
    record::begin_request(out, request_id, Role::Responder, if keep_conn { FLAG_KEEP_CONN } else { 0 });
    // The pairs are written in place, after room for their record's
    // header, which is filled in once their length is known: no buffer of
    // their own to grow and copy. More than one record holds are cut up after.
    let start = out.len();
    let size: usize = params.iter().map(|(n, v)| n.as_ref().len() + v.as_ref().len() + 8).sum();
    out.reserve(size + 4 * record::HEADER_LEN + 8);
    out.extend_from_slice(&[0; record::HEADER_LEN]);
    for (n, v) in params {
        record::write_pair(out, n.as_ref(), v.as_ref());
    }
    let len = out.len() - start - record::HEADER_LEN;
    if len == 0 {
        out.truncate(start);
    } else if len <= MAX_CONTENT {
        let (head, padding) = record::record_header(RecordType::Params, request_id, len);
        out[start..start + record::HEADER_LEN].copy_from_slice(&head);
        out.extend(std::iter::repeat_n(0u8, padding));
    } else {
        let pairs = out.split_off(start + record::HEADER_LEN);
        out.truncate(start);
        record::write_stream(out, RecordType::Params, request_id, &pairs);
    }
    record::write_record(out, RecordType::Params, request_id, &[]);
    if no_body {
        record::write_record(out, RecordType::Stdin, request_id, &[]);
    }
}

/// Asks an application whether it multiplexes requests on a connection
/// (FCGI_GET_VALUES for FCGI_MPXS_CONNS). Some(false): one request per
/// connection, as PHP (php-fpm and php-cgi) and libfcgi answer; Some(true):
/// it may (Go's net/http/fcgi says so); None: it gave no answer (an
/// UNKNOWN_TYPE, or it closed).
pub fn multiplexes<S: Read + Write>(stream: &mut S) -> io::Result<Option<bool>> {
    let mut query = Vec::new();
    record::write_pair(&mut query, b"FCGI_MPXS_CONNS", b"");
    let mut out = Vec::new();
    record::write_record(&mut out, RecordType::GetValues, 0, &query);
    stream.write_all(&out)?;
    let mut reader = RecordReader::default();
    while let Some(rec) = reader.read_record(stream)? {
        match rec.kind {
            RecordType::GetValuesResult => {
                let pairs = record::parse_pairs(&rec.content).map_err(invalid)?;
                return Ok(pairs.iter().find(|(n, _)| n == b"FCGI_MPXS_CONNS").map(|(_, v)| v != b"0"));
            }
            RecordType::UnknownType => return Ok(None),
            _ => {}
        }
    }
    Ok(None)
}

pub struct Client<S> {
    stream: S,
    reader: RecordReader,
    request_id: u16,
    out: Vec<u8>,
}

fn invalid(e: DecodeError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl<S: Read + Write> Client<S> {
    pub fn new(stream: S) -> Client<S> {
        Client { stream, reader: RecordReader::default(), request_id: 1, out: Vec::with_capacity(8192) }
    }

    pub fn stream(&self) -> &S {
        &self.stream
    }

    pub fn into_stream(self) -> S {
        self.stream
    }

    /// Starts a Responder request with these CGI variables. With
    /// `keep_conn` the application keeps the connection for the next one.
    pub fn begin<N: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, params: &[(N, V)], keep_conn: bool) -> io::Result<()> {
        self.begin_with(params, keep_conn, false)
    }

    /// `begin` for a request without a body: the empty STDIN record goes in
    /// the same write.
    pub fn begin_without_body<N: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, params: &[(N, V)], keep_conn: bool) -> io::Result<()> {
        self.begin_with(params, keep_conn, true)
    }

    fn begin_with<N: AsRef<[u8]>, V: AsRef<[u8]>>(&mut self, params: &[(N, V)], keep_conn: bool, no_body: bool) -> io::Result<()> {
        self.out.clear();
        encode_begin(&mut self.out, self.request_id, params, keep_conn, no_body);
        self.stream.write_all(&self.out)
    }

    /// Sends request body bytes (in records of at most 65535 bytes).
    pub fn stdin(&mut self, data: &[u8]) -> io::Result<()> {
        for chunk in data.chunks(MAX_CONTENT) {
            self.out.clear();
            record::write_record(&mut self.out, RecordType::Stdin, self.request_id, chunk);
            self.stream.write_all(&self.out)?;
        }
        Ok(())
    }

    /// Ends the request body (the empty STDIN record).
    pub fn end_stdin(&mut self) -> io::Result<()> {
        self.out.clear();
        record::write_record(&mut self.out, RecordType::Stdin, self.request_id, &[]);
        self.stream.write_all(&self.out)
    }

    /// Asks the application to abandon the request (the client went away).
    pub fn abort(&mut self) -> io::Result<()> {
        self.out.clear();
        record::write_record(&mut self.out, RecordType::AbortRequest, self.request_id, &[]);
        self.stream.write_all(&self.out)
    }

    /// The next thing the application says about our request. Records of
    /// other request ids and management records are skipped.
    pub fn next_event(&mut self) -> io::Result<Event> {
        loop {
            if let Some(ev) = self.buffered_event()? {
                return Ok(ev);
            }
            if self.reader.fill_from(&mut self.stream)? == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "FastCGI application closed the connection before END_REQUEST"));
            }
        }
    }

    /// The next event among what has already been received, without reading.
    pub fn buffered_event(&mut self) -> io::Result<Option<Event>> {
        while let Some(rec) = self.reader.next_record().map_err(invalid)? {
            if rec.request_id != self.request_id {
                continue;
            }
            match rec.kind {
                RecordType::Stdout if !rec.content.is_empty() => return Ok(Some(Event::Stdout(rec.content))),
                RecordType::Stderr if !rec.content.is_empty() => return Ok(Some(Event::Stderr(rec.content))),
                RecordType::EndRequest => {
                    let (app_status, protocol_status) = record::parse_end_request(&rec.content).map_err(invalid)?;
                    // The next request on a kept connection takes the next id.
                    self.request_id = self.request_id.checked_add(1).unwrap_or(1);
                    return Ok(Some(Event::End { app_status, protocol_status }));
                }
                _ => {}
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{parse_begin_request, parse_pairs};
    use std::os::unix::net::UnixStream;

    /// An application answering FCGI_GET_VALUES with `answer` (None: UNKNOWN_TYPE).
    fn values_answer(answer: Option<&'static [u8]>) -> Option<bool> {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let app = std::thread::spawn(move || {
            let rec = RecordReader::default().read_record(&mut b).unwrap().expect("a record");
            assert_eq!(rec.kind, RecordType::GetValues);
            assert_eq!(parse_pairs(&rec.content).unwrap(), vec![(b"FCGI_MPXS_CONNS".to_vec(), Vec::new())]);
            let mut out = Vec::new();
            match answer {
                Some(v) => {
                    let mut pairs = Vec::new();
                    record::write_pair(&mut pairs, b"FCGI_MAX_CONNS", b"4");
                    record::write_pair(&mut pairs, b"FCGI_MPXS_CONNS", v);
                    record::write_record(&mut out, RecordType::GetValuesResult, 0, &pairs);
                }
                None => record::unknown_type(&mut out, RecordType::GetValues.as_u8()),
            }
            b.write_all(&out).unwrap();
        });
        let got = multiplexes(&mut a).unwrap();
        app.join().unwrap();
        got
    }

    #[test]
    fn asks_whether_the_application_multiplexes() {
        assert_eq!(values_answer(Some(b"0")), Some(false));
        assert_eq!(values_answer(Some(b"1")), Some(true));
        assert_eq!(values_answer(None), None);
        // One that closes without a word.
        let (mut a, b) = UnixStream::pair().unwrap();
        drop(b);
        assert!(matches!(multiplexes(&mut a), Ok(None) | Err(_)));
    }

    /// A small Responder: echoes a parameter and the body, writes to stderr,
    /// and ends with the status the request asked for.
    fn responder(mut s: UnixStream) {
        let mut reader = RecordReader::default();
        let mut params = Vec::new();
        let mut body = Vec::new();
        let mut buf = [0u8; 4096];
        let mut id = 0;
        let mut keep;
        loop {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                return;
            }
            reader.push(&buf[..n]);
            while let Some(rec) = reader.next_record().unwrap() {
                match rec.kind {
                    RecordType::BeginRequest => {
                        id = rec.request_id;
                        keep = parse_begin_request(&rec.content).unwrap().1 & FLAG_KEEP_CONN != 0;
                        assert!(keep || id == 1);
                        params.clear();
                        body.clear();
                    }
                    RecordType::Params => params.extend_from_slice(&rec.content),
                    RecordType::Stdin if !rec.content.is_empty() => body.extend_from_slice(&rec.content),
                    RecordType::Stdin => {
                        let pairs = parse_pairs(&params).unwrap();
                        let get = |k: &[u8]| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default();
                        let mut out = Vec::new();
                        let mut text = b"Content-Type: text/plain\r\n\r\n".to_vec();
                        text.extend_from_slice(&get(b"QUERY_STRING"));
                        text.push(b'|');
                        text.extend_from_slice(&body);
                        record::write_stream(&mut out, RecordType::Stdout, id, &text);
                        record::write_record(&mut out, RecordType::Stdout, id, &[]);
                        record::write_record(&mut out, RecordType::Stderr, id, b"a warning");
                        let status = String::from_utf8(get(b"EXIT")).unwrap().parse().unwrap_or(0);
                        record::end_request(&mut out, id, status, ProtocolStatus::RequestComplete);
                        s.write_all(&out).unwrap();
                    }
                    _ => {}
                }
            }
        }
    }

    fn collect(c: &mut Client<UnixStream>) -> (Vec<u8>, Vec<u8>, u32) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        loop {
            match c.next_event().unwrap() {
                Event::Stdout(b) => out.extend(b),
                Event::Stderr(b) => err.extend(b),
                Event::End { app_status, protocol_status } => {
                    assert_eq!(protocol_status, ProtocolStatus::RequestComplete);
                    return (out, err, app_status);
                }
            }
        }
    }

    #[test]
    fn request_and_kept_connection() {
        let (a, b) = UnixStream::pair().unwrap();
        let app = std::thread::spawn(move || responder(b));
        let mut c = Client::new(a);
        let big = vec![b'x'; 200_000];
        c.begin(&[("QUERY_STRING", "a=1"), ("EXIT", "3")], true).unwrap();
        c.stdin(&big).unwrap();
        c.end_stdin().unwrap();
        let (out, err, status) = collect(&mut c);
        assert!(out.starts_with(b"Content-Type: text/plain\r\n\r\na=1|"));
        assert_eq!(out.len(), "Content-Type: text/plain\r\n\r\na=1|".len() + big.len());
        assert_eq!((err.as_slice(), status), (&b"a warning"[..], 3));
        // The same connection serves a second request, with the next id.
        c.begin(&[("QUERY_STRING", "second")], true).unwrap();
        c.end_stdin().unwrap();
        let (out, _, status) = collect(&mut c);
        assert!(out.ends_with(b"second|"));
        assert_eq!(status, 0);
        drop(c);
        app.join().unwrap();
    }

    #[test]
    fn closed_before_end_is_an_error() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut c = Client::new(a);
        c.begin(&[("A", "b")], false).unwrap();
        // The application reads the request, then dies without answering.
        let mut buf = [0u8; 256];
        let _ = b.read(&mut buf).unwrap();
        drop(b);
        assert_eq!(c.next_event().unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    }

    /// The request as the plain encoding writes it: the pairs in a buffer
    /// of their own, then cut into records.
    fn encoded_plainly(params: &[(Vec<u8>, Vec<u8>)], no_body: bool) -> Vec<u8> {
        let mut out = Vec::new();
        record::begin_request(&mut out, 7, Role::Responder, 0);
        let mut pairs = Vec::new();
        for (n, v) in params {
            record::write_pair(&mut pairs, n, v);
        }
        if !pairs.is_empty() {
            record::write_stream(&mut out, RecordType::Params, 7, &pairs);
        }
        record::write_record(&mut out, RecordType::Params, 7, &[]);
        if no_body {
            record::write_record(&mut out, RecordType::Stdin, 7, &[]);
        }
        out
    }

    #[test]
    fn pairs_written_in_place_are_the_records_of_the_plain_encoding() {
        let pair = |n: &str, len: usize| (n.as_bytes().to_vec(), vec![b'v'; len]);
        let cases: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![
            vec![],
            vec![pair("A", 0)],
            vec![pair("QUERY_STRING", 3), pair("REMOTE_ADDR", 9)],
            // One pair's value long enough for a 4-byte length.
            vec![pair("HTTP_COOKIE", 300), pair("X", 1)],
            // Exactly one record's worth, then one byte more.
            vec![pair("A", 65535 - 1 - 4 - 1)],
            vec![pair("A", 65535 - 1 - 4)],
            // Several records.
            vec![pair("BIG", 150_000), pair("SMALL", 5)],
        ];
        for params in cases {
            for no_body in [false, true] {
                let mut out = Vec::new();
                encode_begin(&mut out, 7, &params, false, no_body);
                assert_eq!(out, encoded_plainly(&params, no_body), "{} pairs, {} bytes", params.len(), params.iter().map(|(_, v)| v.len()).sum::<usize>());
            }
        }
    }
}
