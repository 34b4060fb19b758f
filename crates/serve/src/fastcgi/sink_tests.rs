//! One exchange, two sinks: an application's answer fed to
//! `warren_handler::fastcgi::Answer` in pieces (a byte at a time, records
//! split across reads, stderr between them, ended early, malformed), its
//! body moved into the HTTP/1.1 writer and into an HTTP/2 stream's body,
//! and what each then sends.

use std::sync::Arc;
use std::time::Duration;

use warren_config::{FcgiAddr, FcgiBackend, LogLevel};
use warren_fcgi::record::{self, ProtocolStatus, RecordType};
use warren_handler::fastcgi::{Answer, AtHead, Pumped, ResponseReader, ResponseSink};
use warren_handler::gateway::Gateway;
use warren_handler::logs::ErrorLog;
use warren_handler::Body;
use warren_http::h1::{BodyFramer, Framing};

use super::*;
use crate::exchange::{Chunk, Exchange, Output};
use crate::fastcgi::on_loop::FedByLoop;
use crate::h2::body_plan::{BodyPlan, Producer, Taken, FED_HIGH_WATER};

fn exchange() -> (Answer, Gateway) {
    let log = Arc::new(ErrorLog::open(None, None, LogLevel::Emerg).expect("log"));
    let backend = FcgiBackend { addr: FcgiAddr::Unix("/run/app.sock".into()), reuse: false, timeout: None, flush_packets: false };
    let gw = Gateway::to_backend(0, backend, Duration::from_secs(5), "/srv/app.php".into());
    let reader = ResponseReader::new("unix:/run/app.sock".into(), log, "192.0.2.7:4000".parse().unwrap(), "/srv/app.php".into());
    (Answer::new(reader), gw)
}

/// An answer in records: the head and `body` in STDOUT records of at most
/// `record` bytes, a STDERR record after each, and the end unless `cut`.
fn wire(head: &str, body: &[u8], record: usize, end: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let all = [head.as_bytes(), body].concat();
    for piece in all.chunks(record) {
        record::write_record(&mut out, RecordType::Stdout, 1, piece);
        record::write_record(&mut out, RecordType::Stderr, 1, b"a notice\n");
    }
    if end {
        record::write_record(&mut out, RecordType::Stdout, 1, b"");
        record::end_request(&mut out, 1, 0, ProtocolStatus::RequestComplete);
    }
    out
}

/// What a sink is fed: the head's first bytes, then each pump's.
trait Driven: ResponseSink {
    fn first(&mut self, bytes: Vec<u8>, len: Option<u64>);
}

/// Feeds `wire` `step` bytes at a time: the head, then the body into
/// `sink`; the last pump's outcome (None: it wanted more).
fn drive<S: Driven>(wire: &[u8], step: usize, sink: &mut S) -> Option<Pumped> {
    let (mut answer, gw) = exchange();
    let mut headed = false;
    for piece in wire.chunks(step) {
        answer.feed(piece);
        if !headed {
            match answer.head(&gw).expect("a good head") {
                None => continue,
                Some(AtHead::Partial { first, len, .. }) => sink.first(first, len),
                Some(_) => panic!("streamed, not whole: the answer came in pieces"),
            }
            headed = true;
        }
        match answer.pump(sink) {
            Pumped::More => {}
            done => return Some(done),
        }
    }
    None
}

/// The HTTP/1.1 writer with its output and framing.
struct H1 {
    out: Output,
    ex: Exchange,
    framing: Option<BodyFraming>,
    chunked: bool,
}

impl H1 {
    fn new(chunked: bool) -> H1 {
        H1 { out: Output::default(), ex: Exchange::new(None, true, 0), framing: None, chunked }
    }

    fn sink(&mut self) -> H1Sink<'_> {
        H1Sink { out: &mut self.out, framing: self.framing.as_mut().expect("after the head"), ex: &mut self.ex }
    }

    fn wire(&self) -> Vec<u8> {
        let mut all = Vec::new();
        for c in &self.out.queue {
            match c {
                Chunk::Bytes(b) => all.extend_from_slice(b),
                _ => panic!("only bytes here"),
            }
        }
        all
    }
}

impl ResponseSink for H1 {
    fn data(&mut self, bytes: Vec<u8>) {
        self.sink().data(bytes)
    }
    fn end(&mut self) -> Result<(), String> {
        self.sink().end()
    }
    fn cut_short(&mut self) {
        self.sink().cut_short()
    }
    fn full(&self) -> bool {
        self.framing.as_ref().expect("after the head").full(&self.out)
    }
}

impl Driven for H1 {
    fn first(&mut self, bytes: Vec<u8>, len: Option<u64>) {
        let framer = BodyFramer::new(Framing { chunked: self.chunked, with_body: true, keep_alive: true }, len);
        self.framing = Some(BodyFraming { framer, spill: None, encoder: None });
        self.data(bytes);
    }
}

/// An HTTP/2 stream's body, fed by the loop.
struct H2(Option<BodyPlan>);

impl H2 {
    fn fed(&mut self) -> &mut crate::h2::body_plan::Fed {
        match self.0.as_mut() {
            Some(BodyPlan::Fed(f)) => f,
            _ => panic!("a fed body"),
        }
    }

    /// What the stream sends, and how it ends.
    fn take_all(&mut self) -> (Vec<u8>, Taken) {
        let plan = self.0.as_mut().expect("plan");
        let mut all = Vec::new();
        loop {
            let mut piece = Vec::new();
            let taken = plan.take(7, &mut piece);
            all.extend(piece);
            match taken {
                Taken::Data { last: false } => {}
                end => return (all, end),
            }
        }
    }
}

impl ResponseSink for H2 {
    fn data(&mut self, bytes: Vec<u8>) {
        self.fed().data(bytes)
    }
    fn end(&mut self) -> Result<(), String> {
        ResponseSink::end(self.fed())
    }
    fn cut_short(&mut self) {
        self.fed().cut_short()
    }
    fn full(&self) -> bool {
        match self.0.as_ref() {
            Some(BodyPlan::Fed(f)) => f.full(),
            _ => false,
        }
    }
}

impl Driven for H2 {
    fn first(&mut self, bytes: Vec<u8>, len: Option<u64>) {
        self.0 = BodyPlan::new(Body::Stream { source: Box::new(FedByLoop), len }, Producer::Loop);
        self.data(bytes);
    }
}

const HEAD: &str = "Content-Type: text/plain\r\n\r\n";

fn body() -> Vec<u8> {
    (0..3000u32).map(|i| b'a' + (i % 26) as u8).collect()
}

/// Decodes a chunked body; None if it has no last chunk.
fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let nl = b.windows(2).position(|w| w == b"\r\n")?;
        let n = usize::from_str_radix(std::str::from_utf8(&b[..nl]).ok()?, 16).ok()?;
        b = &b[nl + 2..];
        if n == 0 {
            return (b == b"\r\n").then_some(out);
        }
        out.extend_from_slice(&b[..n]);
        b = &b[n + 2..];
    }
}

#[test]
fn every_way_of_arriving_gives_the_same_body_to_both_sinks() {
    let body = body();
    // One byte a read, records split across reads, records larger than a read.
    for (record, step) in [(4096, 1), (100, 7), (1000, 333), (65535, 1024)] {
        let wire = wire(HEAD, &body, record, true);
        let mut h1 = H1::new(true);
        assert!(matches!(drive(&wire, step, &mut h1), Some(Pumped::Ended)), "{record}/{step}");
        assert_eq!(dechunk(&h1.wire()).as_deref(), Some(&body[..]), "h1 {record}/{step}");
        assert_eq!(h1.ex.body_bytes, body.len() as u64);
        let mut h2 = H2(None);
        assert!(matches!(drive(&wire, step, &mut h2), Some(Pumped::Ended)), "{record}/{step}");
        assert_eq!(h2.take_all(), (body.clone(), Taken::Data { last: true }), "h2 {record}/{step}");
    }
}

#[test]
fn an_answer_that_ends_early_is_cut_short_in_both() {
    let body = body();
    // The application closes the connection with no END_REQUEST: the driver
    // sees the end of the stream and says so.
    let wire = wire(HEAD, &body[..100], 50, false);
    let mut h1 = H1::new(true);
    assert!(drive(&wire, 8, &mut h1).is_none(), "no end yet");
    h1.cut_short();
    assert_eq!(dechunk(&h1.wire()), None, "no last chunk: the client sees the cut");
    let mut h2 = H2(None);
    assert!(drive(&wire, 8, &mut h2).is_none());
    h2.cut_short();
    assert_eq!(h2.take_all(), (body[..100].to_vec(), Taken::Failed), "the stream is reset, not ended");
}

#[test]
fn an_end_short_of_the_content_length_is_cut_short() {
    let wire = wire("Content-Length: 10\r\n\r\n", b"abcd", 4096, true);
    let mut h1 = H1::new(false);
    match drive(&wire, 3, &mut h1) {
        Some(Pumped::CutShort(e)) => assert!(e.why.contains("less than its Content-Length"), "{}", e.why),
        other => panic!("{other:?}"),
    }
    assert_eq!(h1.wire(), b"abcd");
}

#[test]
fn a_malformed_record_after_the_head_cuts_both_short() {
    let mut wire = wire(HEAD, b"some", 4096, false);
    // A header with version 9.
    wire.extend_from_slice(&[9, 6, 0, 1, 0, 4, 0, 0, b'm', b'o', b'r', b'e']);
    let mut h1 = H1::new(true);
    assert!(matches!(drive(&wire, 5, &mut h1), Some(Pumped::CutShort(e)) if e.status == 502));
    assert_eq!(dechunk(&h1.wire()), None);
    let mut h2 = H2(None);
    assert!(matches!(drive(&wire, 5, &mut h2), Some(Pumped::CutShort(_))));
    assert_eq!(h2.take_all(), (b"some".to_vec(), Taken::Failed));
}

#[test]
fn both_sinks_say_when_the_client_holds_the_application_back() {
    let big = vec![b'x'; FED_HIGH_WATER + 1];
    let wire = wire(HEAD, &big, 65535, false);
    let mut h2 = H2(None);
    drive(&wire, wire.len(), &mut h2);
    assert!(h2.full());
    let mut h1 = H1::new(true);
    drive(&wire, wire.len(), &mut h1);
    // At the client's pace (no spill): full past the high water mark.
    assert!(h1.full());
    h1.framing.as_mut().expect("framing").spill = Some(crate::fastcgi::spill::Spill::default());
    assert!(!h1.full(), "a spill with room reads ahead of the client");
}
