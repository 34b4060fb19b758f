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

use warren_handler::{Body, BodySource, Part};

/// One piece of a body produced on a worker thread: bytes, the end (None),
/// or the failure that leaves the body incomplete.
pub type Piece = io::Result<Option<Vec<u8>>>;

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
    pub fn new(body: Body, pieces: Option<Receiver<Piece>>) -> Option<BodyPlan> {
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
            Body::Stream { source, len } => match pieces {
                Some(pieces) => BodyPlan::Channel { pieces, remaining: len, held: Vec::new(), pos: 0, ended: false },
                None => BodyPlan::Source { source, remaining: len, held: Vec::new(), pos: 0, ended: false },
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
