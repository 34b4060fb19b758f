//! A response body on an HTTP/2 stream: what is left of it, handed out a
//! piece at a time as the stream's flow-control window allows. Files are
//! read as their pieces go (DATA frames need our framing around the
//! bytes, so there is no sendfile here), never whole.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;

use warren_handler::compress::StreamEncoder;
use warren_handler::fastcgi::ResponseSink;
use warren_handler::{Body, BodySource, Part};

/// One piece of a body produced on a worker thread: bytes, the end (None),
/// or the failure that leaves the body incomplete.
pub type Piece = io::Result<Option<Vec<u8>>>;

/// Where a streamed body's pieces come from.
pub enum Producer {
    /// Its source, read here: only where blocking is fine.
    Here,
    /// A worker thread that reads it and hands the pieces over.
    Thread(Receiver<Piece>),
    /// The event loop, as it reads them from the application ([`Fed`]).
    Loop,
}

pub enum BodyPlan {
    Bytes { data: Vec<u8>, pos: usize },
    Shared { data: Arc<[u8]>, pos: usize },
    File { file: Arc<File>, offset: u64, len: u64 },
    Parts { file: Arc<File>, parts: VecDeque<Part> },
    /// Produced as it is sent and read here: only where blocking is fine
    /// (a prefork child or worker thread serving the connection).
    Source { source: Box<dyn BodySource>, remaining: Option<u64>, held: Vec<u8>, pos: usize, ended: bool },
    /// Produced on a worker thread that hands the pieces over (the event
    /// loop, which must not wait for an application).
    Channel { pieces: Receiver<Piece>, remaining: Option<u64>, held: Vec<u8>, pos: usize, ended: bool },
    /// Fed by the event loop as the application's answer comes.
    Fed(Fed),
}

/// A body the event loop reads from the application and pushes here as it
/// comes; the loop stops reading while [`Fed::queued`] is high, so the
/// client's pace holds the application back rather than our memory.
pub struct Fed {
    /// The compression of the answer, if its last filters chose one.
    encoder: Option<StreamEncoder>,
    queue: VecDeque<Vec<u8>>,
    queued: usize,
    remaining: Option<u64>,
    held: Vec<u8>,
    pos: usize,
    ended: bool,
    failed: bool,
}

impl Fed {
    /// More of the answer.
    pub fn push(&mut self, data: &[u8]) {
        if self.failed || self.ended {
            return;
        }
        let data = match self.encoder.as_mut() {
            Some(encoder) => {
                let mut encoded = Vec::with_capacity(data.len() / 2 + 64);
                if encoder.piece(data, &mut encoded).is_err() {
                    self.failed = true;
                    return;
                }
                encoded
            }
            None => data.to_vec(),
        };
        if !data.is_empty() {
            self.queued += data.len();
            self.queue.push_back(data);
        }
    }

    /// The answer has ended: whole (`ok`), or cut short.
    pub fn end(&mut self, ok: bool) {
        if !ok {
            self.failed = true;
            return;
        }
        if let Some(mut encoder) = self.encoder.take() {
            let mut last = Vec::new();
            if encoder.finish(&mut last).is_err() {
                self.failed = true;
                return;
            }
            self.push(&last);
        }
        self.ended = true;
    }

    /// Bytes waiting to be sent.
    pub fn queued(&self) -> usize {
        self.queued + self.held.len() - self.pos
    }

    fn take(&mut self, max: usize, out: &mut Vec<u8>) -> Taken {
        while self.pos >= self.held.len() {
            let Some(next) = self.queue.pop_front() else { break };
            self.queued -= next.len();
            self.held = next;
            self.pos = 0;
        }
        if self.pos >= self.held.len() && !self.ended {
            return if self.failed { Taken::Failed } else { Taken::Wait };
        }
        let ended = self.ended && self.queue.is_empty();
        streamed_piece(&mut self.held, &mut self.pos, &mut self.remaining, ended, max, out)
    }
}

/// A stream's answer waiting for the client past this is not read further
/// from the application until the client has taken some.
pub const FED_HIGH_WATER: usize = 256 * 1024;

/// The HTTP/2 stream as the sink of an application's answer.
impl ResponseSink for Fed {
    fn data(&mut self, bytes: Vec<u8>) {
        if self.encoder.is_some() || self.failed || self.ended || bytes.is_empty() {
            return self.push(&bytes);
        }
        // Taken as it is: no copy.
        self.queued += bytes.len();
        self.queue.push_back(bytes);
    }

    fn end(&mut self) -> Result<(), String> {
        Fed::end(self, true);
        if self.failed {
            return Err("compressing the answer failed".into());
        }
        Ok(())
    }

    fn cut_short(&mut self) {
        Fed::end(self, false);
    }

    fn full(&self) -> bool {
        self.queued() >= FED_HIGH_WATER
    }
}

/// What [`BodyPlan::take`] gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Taken {
    /// `n` bytes put in the buffer; `last` when the body ends with them.
    Data { last: bool },
    /// Nothing at hand now (a worker thread has not produced the next piece).
    Wait,
    /// The body cannot be completed: the stream must be reset, not ended.
    Failed,
}

impl BodyPlan {
    /// The plan for a response body; None when there is nothing to send.
    pub fn new(body: Body, producer: Producer) -> Option<BodyPlan> {
        let plan = match body {
            Body::Empty => return None,
            Body::Bytes(data) if data.is_empty() => return None,
            Body::Bytes(data) => BodyPlan::Bytes { data, pos: 0 },
            Body::Shared(data) if data.is_empty() => return None,
            Body::Shared(data) => BodyPlan::Shared { data, pos: 0 },
            Body::File { len: 0, .. } => return None,
            Body::File { file, start, len } => BodyPlan::File { file, offset: start, len },
            Body::Parts { file, parts } => BodyPlan::Parts { file, parts: parts.into() },
            Body::Stream { len: Some(0), .. } => return None,
            Body::Stream { mut source, len } => match producer {
                Producer::Thread(pieces) => BodyPlan::Channel { pieces, remaining: len, held: Vec::new(), pos: 0, ended: false },
                Producer::Here => BodyPlan::Source { source, remaining: len, held: Vec::new(), pos: 0, ended: false },
                Producer::Loop => BodyPlan::Fed(Fed {
                    encoder: source.take_encoder(),
                    queue: VecDeque::new(),
                    queued: 0,
                    remaining: len,
                    held: Vec::new(),
                    pos: 0,
                    ended: false,
                    failed: false,
                }),
            },
        };
        Some(plan)
    }

    /// Puts up to `max` (> 0) next bytes of the body in `out` (cleared first).
    pub fn take(&mut self, max: usize, out: &mut Vec<u8>) -> Taken {
        out.clear();
        match self {
            BodyPlan::Bytes { data, pos } => slice_piece(data, pos, max, out),
            BodyPlan::Shared { data, pos } => slice_piece(data, pos, max, out),
            BodyPlan::File { file, offset, len } => match read_file(file, offset, len, max, out) {
                Ok(()) => Taken::Data { last: *len == 0 },
                Err(_) => Taken::Failed,
            },
            BodyPlan::Parts { file, parts } => {
                let Some(part) = parts.front_mut() else { return Taken::Data { last: true } };
                let done = match part {
                    Part::Bytes(b) => {
                        let n = b.len().min(max);
                        out.extend(b.drain(..n));
                        b.is_empty()
                    }
                    Part::FileRange { start, len } => {
                        if read_file(file, start, len, max, out).is_err() {
                            return Taken::Failed;
                        }
                        *len == 0
                    }
                };
                if done {
                    parts.pop_front();
                }
                Taken::Data { last: parts.is_empty() }
            }
            BodyPlan::Source { source, remaining, held, pos, ended } => {
                while *pos >= held.len() && !*ended {
                    held.clear();
                    *pos = 0;
                    match source.next_piece(held) {
                        Ok(true) => {}
                        Ok(false) => *ended = true,
                        Err(_) => return Taken::Failed,
                    }
                }
                streamed_piece(held, pos, remaining, *ended, max, out)
            }
            BodyPlan::Channel { pieces, remaining, held, pos, ended } => {
                while *pos >= held.len() && !*ended {
                    match pieces.try_recv() {
                        Ok(Ok(Some(piece))) => {
                            *held = piece;
                            *pos = 0;
                        }
                        Ok(Ok(None)) => *ended = true,
                        Err(TryRecvError::Empty) => return Taken::Wait,
                        Ok(Err(_)) | Err(TryRecvError::Disconnected) => return Taken::Failed,
                    }
                }
                streamed_piece(held, pos, remaining, *ended, max, out)
            }
            BodyPlan::Fed(fed) => fed.take(max, out),
        }
    }
}

fn slice_piece(data: &[u8], pos: &mut usize, max: usize, out: &mut Vec<u8>) -> Taken {
    let n = (data.len() - *pos).min(max);
    out.extend_from_slice(&data[*pos..*pos + n]);
    *pos += n;
    Taken::Data { last: *pos == data.len() }
}

fn read_file(file: &File, offset: &mut u64, len: &mut u64, max: usize, out: &mut Vec<u8>) -> io::Result<()> {
    let n = (*len).min(max as u64) as usize;
    out.resize(n, 0);
    // A file that shrank under us cannot fill the length announced.
    file.read_exact_at(out, *offset)?;
    *offset += n as u64;
    *len -= n as u64;
    Ok(())
}

/// The next bytes of an application's output: never more than the length
/// it announced, and an end short of that length is a failure.
fn streamed_piece(held: &mut [u8], pos: &mut usize, remaining: &mut Option<u64>, ended: bool, max: usize, out: &mut Vec<u8>) -> Taken {
    let mut n = (held.len() - *pos).min(max);
    if let Some(left) = remaining {
        n = n.min(usize::try_from(*left).unwrap_or(usize::MAX));
        *left -= n as u64;
    }
    out.extend_from_slice(&held[*pos..*pos + n]);
    *pos += n;
    if remaining.is_some_and(|left| left == 0) {
        // Whatever else the application writes is not sent.
        return Taken::Data { last: true };
    }
    let drained = *pos >= held.len();
    match (ended && drained, remaining) {
        (true, Some(_)) => Taken::Failed,
        (true, None) => Taken::Data { last: true },
        (false, _) => Taken::Data { last: false },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::mpsc::sync_channel;

    fn drain(plan: &mut BodyPlan, max: usize) -> (Vec<u8>, Taken) {
        let mut all = Vec::new();
        let mut piece = Vec::new();
        loop {
            match plan.take(max, &mut piece) {
                Taken::Data { last } => {
                    assert!(piece.len() <= max);
                    all.extend_from_slice(&piece);
                    if last {
                        return (all, Taken::Data { last: true });
                    }
                }
                other => return (all, other),
            }
        }
    }

    #[test]
    fn bytes_go_in_pieces_no_larger_than_asked() {
        let mut plan = BodyPlan::new(Body::Bytes((0..100u8).collect()), Producer::Here).unwrap();
        let (all, end) = drain(&mut plan, 7);
        assert_eq!(all, (0..100u8).collect::<Vec<_>>());
        assert_eq!(end, Taken::Data { last: true });
        assert!(BodyPlan::new(Body::Bytes(Vec::new()), Producer::Here).is_none());
    }

    #[test]
    fn file_ranges_and_parts_are_read_as_they_go() {
        let path = std::env::temp_dir().join(format!("warren-body-plan-{}", std::process::id()));
        std::fs::File::create(&path).unwrap().write_all(b"0123456789").unwrap();
        let file = Arc::new(File::open(&path).unwrap());
        std::fs::remove_file(&path).unwrap();
        let mut plan = BodyPlan::new(Body::File { file: file.clone(), start: 2, len: 5 }, Producer::Here).unwrap();
        assert_eq!(drain(&mut plan, 2).0, b"23456");
        let parts = vec![Part::Bytes(b"--a\r\n".to_vec()), Part::FileRange { start: 0, len: 3 }, Part::Bytes(b"\r\n--a--".to_vec())];
        let mut plan = BodyPlan::new(Body::Parts { file: file.clone(), parts }, Producer::Here).unwrap();
        assert_eq!(drain(&mut plan, 4).0, b"--a\r\n012\r\n--a--");
        // A file shorter than the plan says fails rather than ends.
        let mut plan = BodyPlan::new(Body::File { file, start: 8, len: 5 }, Producer::Here).unwrap();
        assert_eq!(drain(&mut plan, 16).1, Taken::Failed);
    }

    #[test]
    fn pieces_from_a_thread_wait_end_and_fail() {
        let (tx, rx) = sync_channel(4);
        let source: Box<dyn BodySource> = Box::new(Unread);
        let mut plan = BodyPlan::new(Body::Stream { source, len: None }, Producer::Thread(rx)).unwrap();
        let mut piece = Vec::new();
        assert_eq!(plan.take(10, &mut piece), Taken::Wait);
        tx.send(Ok(Some(b"hello".to_vec()))).unwrap();
        assert_eq!(plan.take(3, &mut piece), Taken::Data { last: false });
        assert_eq!(piece, b"hel");
        assert_eq!(plan.take(3, &mut piece), Taken::Data { last: false });
        assert_eq!(piece, b"lo");
        assert_eq!(plan.take(3, &mut piece), Taken::Wait);
        tx.send(Ok(None)).unwrap();
        assert_eq!(plan.take(3, &mut piece), Taken::Data { last: true });
        assert!(piece.is_empty());
        // A thread that went away before the end leaves the body incomplete.
        let (tx, rx) = sync_channel::<Piece>(4);
        let mut plan = BodyPlan::new(Body::Stream { source: Box::new(Unread), len: None }, Producer::Thread(rx)).unwrap();
        drop(tx);
        assert_eq!(plan.take(3, &mut piece), Taken::Failed);
    }

    #[test]
    fn an_announced_length_bounds_the_body_and_must_be_reached() {
        let (tx, rx) = sync_channel(4);
        let mut plan = BodyPlan::new(Body::Stream { source: Box::new(Unread), len: Some(4) }, Producer::Thread(rx)).unwrap();
        tx.send(Ok(Some(b"abcdef".to_vec()))).unwrap();
        let mut piece = Vec::new();
        assert_eq!(plan.take(10, &mut piece), Taken::Data { last: true });
        assert_eq!(piece, b"abcd");
        let (tx, rx) = sync_channel(4);
        let mut plan = BodyPlan::new(Body::Stream { source: Box::new(Unread), len: Some(10) }, Producer::Thread(rx)).unwrap();
        tx.send(Ok(Some(b"abc".to_vec()))).unwrap();
        tx.send(Ok(None)).unwrap();
        assert_eq!(drain(&mut plan, 10).1, Taken::Failed);
    }

    #[test]
    fn a_source_is_read_in_place() {
        let mut plan = BodyPlan::new(Body::Stream { source: Box::new(Counting(3)), len: None }, Producer::Here).unwrap();
        assert_eq!(drain(&mut plan, 2).0, b"xxxxxx");
    }

    fn fed(plan: &mut BodyPlan) -> &mut Fed {
        match plan {
            BodyPlan::Fed(f) => f,
            _ => panic!("not fed"),
        }
    }

    #[test]
    fn a_body_fed_by_the_loop_waits_for_it_and_counts_what_is_queued() {
        let mut plan = BodyPlan::new(Body::Stream { source: Box::new(Unread), len: None }, Producer::Loop).unwrap();
        let mut piece = Vec::new();
        assert_eq!(plan.take(10, &mut piece), Taken::Wait);
        fed(&mut plan).push(b"hello ");
        fed(&mut plan).push(b"world");
        assert_eq!(fed(&mut plan).queued(), 11);
        assert_eq!(plan.take(4, &mut piece), Taken::Data { last: false });
        assert_eq!((piece.as_slice(), fed(&mut plan).queued()), (&b"hell"[..], 7));
        assert_eq!(drain(&mut plan, 4), (b"o world".to_vec(), Taken::Wait));
        fed(&mut plan).end(true);
        assert_eq!(plan.take(4, &mut piece), Taken::Data { last: true });
        assert!(piece.is_empty());

        // Cut short: what came goes, then the stream is reset.
        let mut plan = BodyPlan::new(Body::Stream { source: Box::new(Unread), len: None }, Producer::Loop).unwrap();
        fed(&mut plan).push(b"abc");
        fed(&mut plan).end(false);
        assert_eq!(drain(&mut plan, 10), (b"abc".to_vec(), Taken::Failed));

        // An announced length: never more, and an end short of it fails.
        let mut plan = BodyPlan::new(Body::Stream { source: Box::new(Unread), len: Some(4) }, Producer::Loop).unwrap();
        fed(&mut plan).push(b"abcdef");
        assert_eq!(drain(&mut plan, 10), (b"abcd".to_vec(), Taken::Data { last: true }));
        let mut plan = BodyPlan::new(Body::Stream { source: Box::new(Unread), len: Some(10) }, Producer::Loop).unwrap();
        fed(&mut plan).push(b"abc");
        fed(&mut plan).end(true);
        assert_eq!(drain(&mut plan, 10).1, Taken::Failed);
    }

    struct Unread;
    impl BodySource for Unread {
        fn next_piece(&mut self, _out: &mut Vec<u8>) -> io::Result<bool> {
            panic!("a channel plan never reads its source");
        }
    }

    /// Three pieces of "xx", then the end.
    struct Counting(u32);
    impl BodySource for Counting {
        fn next_piece(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
            if self.0 == 0 {
                return Ok(false);
            }
            self.0 -= 1;
            out.extend_from_slice(b"xx");
            Ok(true)
        }
    }
}
