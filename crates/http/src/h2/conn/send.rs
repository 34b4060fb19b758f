//! Our side of the connection: response HEADERS and DATA within the
//! client's windows, the credit we return for its body, RST_STREAM and
//! GOAWAY from us, and the output buffer the MPM writes from.

use super::{Connection, ErrorCode, HOP_BY_HOP, IDLE_OUTPUT_CAPACITY, SEND_FRAME_SIZE};
use crate::h2::frame;

impl Connection {
    /// Credit for the connection, sent once half the window is owed so
    /// small frames do not each cost a WINDOW_UPDATE.
    pub(super) fn credit_connection(&mut self, n: u64) {
        if self.error.is_some() {
            return;
        }
        self.recv_owed = self.recv_owed.saturating_add(n);
        let target = i64::from(self.limits.connection_window);
        let owed = self.recv_owed.min(u64::from(frame::MAX_WINDOW)) as i64;
        if owed > 0 && owed >= (target / 2).max(1) {
            // Never beyond the window we announced.
            let increment = owed.min(target - self.recv_window);
            if increment > 0 {
                frame::write_window_update(&mut self.out, 0, increment as u32);
                self.recv_window += increment;
            }
            self.recv_owed = 0;
        }
    }

    pub(super) fn credit_stream(&mut self, i: usize, n: u64) {
        let target = i64::from(self.limits.initial_window.max(1));
        let Some(s) = self.streams.get_mut(i) else { return };
        if !s.recv_open || n == 0 {
            return;
        }
        s.recv_owed = s.recv_owed.saturating_add(n);
        let owed = s.recv_owed.min(u64::from(frame::MAX_WINDOW)) as i64;
        if owed >= (target / 2).max(1) {
            let increment = owed.min(i64::from(frame::MAX_WINDOW) - s.recv_window);
            if increment > 0 {
                frame::write_window_update(&mut self.out, s.id, increment as u32);
                s.recv_window += increment;
            }
            s.recv_owed = 0;
        }
    }

    /// Queues a response's HEADERS (and CONTINUATIONs): `:status` then
    /// `fields` (lower-cased by the codec; hop-by-hop fields dropped).
    pub fn send_headers(&mut self, stream: u32, status: u16, fields: &[(&str, &str)], end_stream: bool) {
        if self.error.is_some() {
            return;
        }
        let Some(i) = self.find(stream) else { return };
        let status = status.clamp(100, 999);
        let status = [b'0' + (status / 100) as u8, b'0' + (status / 10 % 10) as u8, b'0' + (status % 10) as u8];
        let mut names = Vec::with_capacity(fields.iter().map(|(n, _)| n.len()).sum());
        let mut kept = Vec::with_capacity(fields.len());
        for (name, value) in fields {
            let start = names.len();
            names.extend(name.bytes().map(|b| b.to_ascii_lowercase()));
            if HOP_BY_HOP.contains(&&names[start..]) {
                names.truncate(start);
            } else {
                kept.push((start..names.len(), value.as_bytes()));
            }
        }
        // Room for the whole block at once: a field takes at most its name,
        // its value and a few octets of lengths and flags.
        let mut block = Vec::with_capacity(16 + fields.iter().map(|(n, v)| n.len() + v.len() + 8).sum::<usize>());
        let list = std::iter::once((&b":status"[..], &status[..])).chain(kept.iter().map(|(n, v)| (&names[n.clone()], *v)));
        self.encoder.encode(list, &mut block);
        frame::write_headers(&mut self.out, stream, &block, end_stream, SEND_FRAME_SIZE);
        if end_stream {
            self.end_our_side(i);
        }
    }

    /// We sent END_STREAM: the stream is closed, or the client is still
    /// sending a body nobody will read, which RST_STREAM NO_ERROR stops
    /// (§8.1).
    pub(super) fn end_our_side(&mut self, i: usize) {
        let Some(s) = self.streams.get(i) else { return };
        if s.recv_open {
            frame::write_rst_stream(&mut self.out, s.id, ErrorCode::NoError);
            self.remember_reset(s.id);
        }
        self.remove(i);
    }

    /// How many body bytes `stream` may send now: the smaller of its window
    /// and the connection's (0 for a stream that is gone).
    pub fn send_window(&self, stream: u32) -> usize {
        match self.find(stream) {
            Some(i) if self.error.is_none() => self.streams[i].send_window.min(self.send_window).max(0) as usize,
            _ => 0,
        }
    }

    /// Queues DATA frames for up to `send_window(stream)` bytes of `data`
    /// (split at the client's SETTINGS_MAX_FRAME_SIZE); END_STREAM on the
    /// last when `end_stream` and all of `data` went. Returns how much went.
    pub fn send_data(&mut self, stream: u32, data: &[u8], end_stream: bool) -> usize {
        let n = data.len().min(self.send_window(stream));
        let Some(i) = self.find(stream) else { return 0 };
        if self.error.is_some() {
            return 0;
        }
        let finish = end_stream && n == data.len();
        if n == 0 && !finish {
            return 0;
        }
        let mut chunks = data[..n].chunks(SEND_FRAME_SIZE).peekable();
        if n == 0 {
            frame::write_data(&mut self.out, stream, b"", true);
        }
        while let Some(chunk) = chunks.next() {
            frame::write_data(&mut self.out, stream, chunk, finish && chunks.peek().is_none());
        }
        self.send_window -= n as i64;
        self.streams[i].send_window -= n as i64;
        if finish {
            self.end_our_side(i);
        }
        n
    }

    /// Resets a stream we will not finish (RST_STREAM with `code`).
    pub fn reset(&mut self, stream: u32, code: ErrorCode) {
        if self.error.is_some() {
            return;
        }
        if let Some(i) = self.find(stream) {
            frame::write_rst_stream(&mut self.out, stream, code);
            self.remember_reset(stream);
            self.remove(i);
        }
    }

    /// The server has taken `n` body bytes of `stream` from
    /// [`Event::Data`](super::Event::Data): credit goes back to the
    /// client (WINDOW_UPDATE when worth a frame). Bytes of a stream
    /// already gone were given back when it went.
    pub fn consumed(&mut self, stream: u32, n: usize) {
        let Some(i) = self.find(stream) else { return };
        let s = &mut self.streams[i];
        let n = (n as u64).min(s.unconsumed);
        s.unconsumed -= n;
        let held = n.min(s.held);
        s.held -= held;
        self.credit_stream(i, n);
        self.credit_connection(n - held);
    }

    /// The server keeps `n` body bytes of `stream` for later (a reader
    /// that takes them at its own pace): the connection's window has them
    /// back now, the stream's only once they are [`consumed`](Self::consumed).
    /// So a stream whose reader is slow holds back its own window, not the
    /// other streams' share of the connection's; what the server keeps is
    /// then bounded by the streams' windows.
    pub fn hold(&mut self, stream: u32, n: usize) {
        let Some(i) = self.find(stream) else { return };
        let s = &mut self.streams[i];
        let n = (n as u64).min(s.unconsumed - s.held);
        s.held += n;
        self.credit_connection(n);
    }

    /// Graceful shutdown: GOAWAY (NO_ERROR) naming the last stream taken;
    /// new streams are refused from then on, the open ones finish.
    /// After a header list over the limit (an HPACK bomb decodes to a
    /// hundred thousand times its size, and each one costs a full decode):
    /// GOAWAY ENHANCE_YOUR_CALM naming `stream`, so its 431 and the streams
    /// before it still finish, and nothing after it is decoded. A client
    /// that sent one honestly (a giant cookie) reconnects.
    pub(super) fn refuse_further(&mut self, stream: u32) {
        if self.error.is_some() || self.goaway_sent.is_some() {
            return;
        }
        frame::write_goaway(&mut self.out, stream, ErrorCode::EnhanceYourCalm, b"header list too large");
        self.goaway_sent = Some(stream);
        self.last_taken = Some(self.last_taken.map_or(stream, |last| last.min(stream)));
    }

    pub fn go_away(&mut self) {
        if self.error.is_some() || self.goaway_sent.is_some() {
            return;
        }
        frame::write_goaway(&mut self.out, self.max_stream, ErrorCode::NoError, b"");
        self.goaway_sent = Some(self.max_stream);
        self.last_taken = Some(self.last_taken.map_or(self.max_stream, |last| last.min(self.max_stream)));
    }

    /// Bytes waiting to be written to the client.
    pub fn output(&self) -> &[u8] {
        self.out.get(self.out_start..).unwrap_or_default()
    }

    /// `n` bytes of [`Connection::output`] have been written.
    pub fn written(&mut self, n: usize) {
        self.out_start = self.out_start.saturating_add(n).min(self.out.len());
        if self.out_start == self.out.len() {
            self.answers_unwritten = 0;
            self.out_start = 0;
            if self.out.capacity() > IDLE_OUTPUT_CAPACITY {
                self.out = Vec::new();
            } else {
                self.out.clear();
            }
        } else if self.out_start > self.out.len() / 2 {
            // Moves what is left once it is the smaller part.
            self.out.drain(..self.out_start);
            self.out_start = 0;
        }
    }

    /// Whether the client may still send on `stream` (it has not ended its
    /// side, and the stream is neither closed nor reset).
    pub fn receiving(&self, stream: u32) -> bool {
        self.find(stream).is_some_and(|i| self.streams[i].recv_open)
    }

    /// Streams open (not closed in both directions, not reset).
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// The connection is done: GOAWAY sent or received and no stream is
    /// open, or a connection error was queued. Close once output is written.
    pub fn is_finished(&self) -> bool {
        self.error.is_some() || (self.goaway_sent.is_some() || self.goaway_received) && self.streams.is_empty()
    }
}
