//! The connection played against a scripted client: frames written with
//! [`frame`]'s writers and blocks with the HPACK encoder, our output
//! parsed back into frames.

use std::time::{Duration, Instant};

use super::*;
use crate::h2::frame::*;
use crate::request::BodyFraming;

mod limits;

const HEAD: HeadLimits = HeadLimits { request_line: 200, field_size: 200, fields: 20, head: 2000 };

fn limits() -> H2Limits {
    H2Limits { max_concurrent_streams: 4, initial_window: 65_535, connection_window: 1 << 20, max_frame_size: 16_384, header_table_size: 4096, head: HEAD, extended_connect: false }
}

/// A frame of our output.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Out {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

impl Out {
    fn u32_at(&self, at: usize) -> u32 {
        u32::from_be_bytes(self.payload[at..at + 4].try_into().unwrap())
    }
    fn rst(&self) -> Option<(u32, u32)> {
        (self.kind == RST_STREAM).then(|| (self.stream, self.u32_at(0)))
    }
    fn goaway(&self) -> Option<(u32, u32)> {
        (self.kind == GOAWAY).then(|| (self.u32_at(0), self.u32_at(4)))
    }
    fn window_update(&self) -> Option<(u32, u32)> {
        (self.kind == WINDOW_UPDATE).then(|| (self.stream, self.u32_at(0)))
    }
}

struct Client {
    conn: Connection,
    encoder: Encoder,
    decoder: Decoder,
    now: Instant,
    events: Vec<Event>,
}

fn parse_frames(mut buf: &[u8]) -> Vec<Out> {
    let mut frames = Vec::new();
    while let Some(h) = Header::parse(buf) {
        let end = HEADER_LEN + h.len as usize;
        frames.push(Out { kind: h.kind, flags: h.flags, stream: h.stream, payload: buf[HEADER_LEN..end].to_vec() });
        buf = &buf[end..];
    }
    assert!(buf.is_empty(), "a partial frame in our output");
    frames
}

impl Client {
    /// A connection past the preface and the SETTINGS exchange.
    fn new(limits: H2Limits) -> Client {
        let mut c = Client::bare(limits);
        let mut input = PREFACE.to_vec();
        write_settings(&mut input, &[]);
        write_settings_ack(&mut input);
        assert_eq!(c.feed(&input), Ok(input.len()));
        c.take();
        c
    }

    fn bare(limits: H2Limits) -> Client {
        Client { conn: Connection::new(limits), encoder: Encoder::new(), decoder: Decoder::new(4096), now: Instant::now(), events: Vec::new() }
    }

    fn feed(&mut self, input: &[u8]) -> Result<usize, ConnError> {
        self.conn.feed(input, self.now, &mut self.events)
    }

    /// Feeds whole frames, expecting all to be taken.
    fn send(&mut self, input: &[u8]) -> Result<(), ConnError> {
        let n = self.feed(input)?;
        assert_eq!(n, input.len());
        Ok(())
    }

    /// Our output, written out.
    fn take(&mut self) -> Vec<Out> {
        let out = self.conn.output().to_vec();
        self.conn.written(out.len());
        parse_frames(&out)
    }

    fn block(&mut self, fields: &[(&str, &str)]) -> Vec<u8> {
        let mut block = Vec::new();
        self.encoder.encode(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())), &mut block);
        block
    }

    fn headers(&mut self, stream: u32, fields: &[(&str, &str)], end_stream: bool) -> Result<(), ConnError> {
        let block = self.block(fields);
        let mut input = Vec::new();
        write_headers(&mut input, stream, &block, end_stream, 16_384);
        self.send(&input)
    }

    fn get(&mut self, stream: u32) {
        self.headers(stream, &get("/"), true).unwrap();
    }

    fn frame(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Result<(), ConnError> {
        let mut input = Vec::new();
        write_frame(&mut input, kind, flags, stream, payload);
        self.send(&input)
    }

    fn data(&mut self, stream: u32, data: &[u8], end_stream: bool) -> Result<(), ConnError> {
        let mut input = Vec::new();
        write_data(&mut input, stream, data, end_stream);
        self.send(&input)
    }

    fn events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// Decodes one of our header blocks.
    fn fields(&mut self, block: &[u8]) -> Vec<(String, String)> {
        let mut fields = Vec::new();
        self.decoder
            .decode(block, 1 << 20, &mut |n, v| fields.push((String::from_utf8_lossy(n).into_owned(), String::from_utf8_lossy(v).into_owned())))
            .unwrap();
        fields
    }

    /// Expects a connection error with `code`, and our GOAWAY saying so.
    fn expect_error(&mut self, result: Result<(), ConnError>, code: ErrorCode) {
        match result {
            Err(e) => assert_eq!(e.code, code, "{e:?}"),
            Ok(()) => panic!("no connection error, wanted {code:?}"),
        }
        let out = self.take();
        let goaway = out.iter().find_map(Out::goaway).expect("a GOAWAY");
        assert_eq!(goaway.1, code as u32);
        assert!(self.conn.is_finished());
        // Nothing more is processed.
        let mut ping = Vec::new();
        write_ping(&mut ping, false, [0; 8]);
        assert!(self.feed(&ping).is_err());
        assert!(self.take().is_empty());
    }

    /// Expects RST_STREAM with `code` on `stream`, nothing else.
    fn expect_rst(&mut self, stream: u32, code: ErrorCode) {
        let out = self.take();
        assert_eq!(out.iter().filter_map(Out::rst).collect::<Vec<_>>(), [(stream, code as u32)], "{out:?}");
    }
}

fn get(path: &'static str) -> [(&'static str, &'static str); 4] {
    [(":method", "GET"), (":scheme", "https"), (":authority", "example.com"), (":path", path)]
}

fn post(length: &'static str) -> Vec<(&'static str, &'static str)> {
    let mut v = vec![(":method", "POST"), (":scheme", "https"), (":authority", "example.com"), (":path", "/form")];
    if !length.is_empty() {
        v.push(("content-length", length));
    }
    v
}

#[test]
fn our_settings_first_then_the_clients_acknowledged() {
    let mut c = Client::bare(H2Limits { max_frame_size: 32_768, header_table_size: 8192, ..limits() });
    let out = c.take();
    assert_eq!(out[0].kind, SETTINGS);
    let params: Vec<_> = settings(&out[0].payload).collect();
    assert_eq!(
        params,
        [
            (SETTINGS_MAX_CONCURRENT_STREAMS, 4),
            (SETTINGS_INITIAL_WINDOW_SIZE, 65_535),
            (SETTINGS_MAX_FRAME_SIZE, 32_768),
            (SETTINGS_MAX_HEADER_LIST_SIZE, 2000),
            (SETTINGS_HEADER_TABLE_SIZE, 8192),
            (SETTINGS_NO_RFC7540_PRIORITIES, 1),
        ]
    );
    assert_eq!(out[1].window_update(), Some((0, (1 << 20) - 65_535)));
    assert_eq!(out.len(), 2);

    // The preface in pieces.
    assert_eq!(c.feed(&PREFACE[..10]), Ok(0));
    let mut input = PREFACE.to_vec();
    write_settings(&mut input, &[(SETTINGS_HEADER_TABLE_SIZE, 0), (SETTINGS_ENABLE_PUSH, 0), (0x99, 5)]);
    assert_eq!(c.feed(&input[..input.len() - 1]), Ok(PREFACE.len()));
    assert_eq!(c.feed(&input[PREFACE.len()..]), Ok(input.len() - PREFACE.len()));
    let out = c.take();
    assert_eq!(out, [Out { kind: SETTINGS, flags: FLAG_ACK, stream: 0, payload: vec![] }]);
    assert!(!c.conn.settings_acked);
    c.frame(SETTINGS, FLAG_ACK, 0, b"").unwrap();
    assert!(c.conn.settings_acked);
}

#[test]
fn the_preface_and_the_first_frame() {
    let mut c = Client::bare(limits());
    c.take();
    let r = c.feed(b"GET / HTTP/1.1\r\n\r\n").map(|_| ());
    c.expect_error(r, ErrorCode::Protocol);

    let mut c = Client::bare(limits());
    c.take();
    let mut input = PREFACE.to_vec();
    write_ping(&mut input, false, [1; 8]);
    let r = c.send(&input);
    c.expect_error(r, ErrorCode::Protocol);

    let mut c = Client::bare(limits());
    c.take();
    let mut input = PREFACE.to_vec();
    write_settings_ack(&mut input);
    let r = c.send(&input);
    c.expect_error(r, ErrorCode::Protocol);
}

#[test]
fn a_get_answered() {
    let mut c = Client::new(limits());
    c.headers(1, &[(":method", "GET"), (":scheme", "https"), (":authority", "example.com"), (":path", "/index.html"), ("accept", "*/*")], true).unwrap();
    let events = c.events();
    let [Event::Request { stream: 1, head }] = &events[..] else { panic!("{events:?}") };
    assert_eq!(head.request_line(), b"GET /index.html HTTP/2.0");
    assert_eq!(head.host(), Some(&b"example.com"[..]));
    assert_eq!(head.header("accept"), Some(&b"*/*"[..]));
    assert_eq!(head.framing, BodyFraming::None);
    assert_eq!(c.conn.open_streams(), 1);

    c.conn.send_headers(1, 200, &[("Content-Type", "text/html"), ("Connection", "close"), ("Transfer-Encoding", "chunked"), ("X-A", "b")], false);
    assert_eq!(c.conn.send_window(1), 65_535);
    assert_eq!(c.conn.send_data(1, b"<p>hi</p>", true), 9);
    let out = c.take();
    assert_eq!(out.len(), 2);
    assert_eq!((out[0].kind, out[0].flags, out[0].stream), (HEADERS, FLAG_END_HEADERS, 1));
    let fields = c.fields(&out[0].payload.clone());
    let want: Vec<(String, String)> = [(":status", "200"), ("content-type", "text/html"), ("x-a", "b")].iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
    assert_eq!(fields, want);
    assert_eq!(out[1], Out { kind: DATA, flags: FLAG_END_STREAM, stream: 1, payload: b"<p>hi</p>".to_vec() });
    assert_eq!(c.conn.open_streams(), 0);
    assert_eq!(c.conn.send_window(1), 0);
    assert_eq!(c.conn.send_data(1, b"more", true), 0);
}

#[test]
fn a_large_response_head_continues() {
    let mut c = Client::new(limits());
    c.get(1);
    let big = "x".repeat(40_000);
    c.conn.send_headers(1, 404, &[("x-big", &big)], true);
    let out = c.take();
    assert_eq!(out.iter().map(|f| f.kind).collect::<Vec<_>>(), [HEADERS, CONTINUATION, CONTINUATION]);
    assert_eq!(out[0].flags, FLAG_END_STREAM);
    assert_eq!(out[2].flags, FLAG_END_HEADERS);
    let block: Vec<u8> = out.iter().flat_map(|f| f.payload.clone()).collect();
    assert_eq!(c.fields(&block)[1].1.len(), 40_000);
}

#[test]
fn a_post_with_its_body() {
    let mut c = Client::new(limits());
    c.headers(1, &post("11"), false).unwrap();
    let events = c.events();
    let [Event::Request { stream: 1, head }] = &events[..] else { panic!("{events:?}") };
    assert_eq!(head.framing, BodyFraming::Length(11));
    c.data(1, b"hello ", false).unwrap();
    c.data(1, b"world", true).unwrap();
    let events = c.events();
    assert!(matches!(&events[..], [Event::Data { stream: 1, data: a, end_stream: false }, Event::Data { stream: 1, data: b, end_stream: true }] if a == b"hello " && b == b"world"));
    // Half-closed (remote): still ours to answer.
    assert_eq!(c.conn.open_streams(), 1);
    c.conn.consumed(1, 11);
    c.conn.send_headers(1, 204, &[], true);
    assert_eq!(c.conn.open_streams(), 0);
    // No RST_STREAM: the client had finished.
    assert!(c.take().iter().all(|f| f.kind == HEADERS));

    // Without content-length: Chunked, ended by END_STREAM.
    c.headers(3, &post(""), false).unwrap();
    let events = c.events();
    assert!(matches!(&events[..], [Event::Request { stream: 3, head }] if head.framing == BodyFraming::Chunked));
}

#[test]
fn content_length_mismatches() {
    let mut c = Client::new(limits());
    // More than announced.
    c.headers(1, &post("3"), false).unwrap();
    c.events();
    c.data(1, b"four", false).unwrap();
    assert!(matches!(&c.events()[..], [Event::Reset { stream: 1 }]));
    c.expect_rst(1, ErrorCode::Protocol);
    // Less, then END_STREAM.
    c.headers(3, &post("5"), false).unwrap();
    c.events();
    c.data(3, b"abc", true).unwrap();
    assert!(matches!(&c.events()[..], [Event::Reset { stream: 3 }]));
    c.expect_rst(3, ErrorCode::Protocol);
    // Less, then trailers.
    c.headers(5, &post("5"), false).unwrap();
    c.events();
    c.data(5, b"abc", false).unwrap();
    c.headers(5, &[("x-sum", "1")], true).unwrap();
    assert!(matches!(&c.events()[..], [Event::Data { .. }, Event::Reset { stream: 5 }]));
    c.expect_rst(5, ErrorCode::Protocol);
    // content-length with END_STREAM on HEADERS: malformed, no event.
    c.headers(7, &post("5"), true).unwrap();
    assert!(c.events().is_empty());
    c.expect_rst(7, ErrorCode::Protocol);
    // content-length: 0 and an empty END_STREAM DATA: fine, no Data event.
    c.headers(9, &post("0"), false).unwrap();
    assert!(matches!(&c.events()[..], [Event::Request { head, .. }] if head.framing == BodyFraming::None));
    c.data(9, b"", true).unwrap();
    assert!(c.events().is_empty());
    assert!(c.take().is_empty());
    // The connection lives on.
    c.get(11);
    assert_eq!(c.events().len(), 1);
}

#[test]
fn trailers_accepted_and_dropped() {
    let mut c = Client::new(limits());
    c.headers(1, &post(""), false).unwrap();
    c.data(1, b"body", false).unwrap();
    c.headers(1, &[("x-checksum", "abc")], true).unwrap();
    let events = c.events();
    assert!(matches!(&events[..], [Event::Request { .. }, Event::Data { data, end_stream: false, .. }, Event::Data { data: end, end_stream: true, .. }] if data == b"body" && end.is_empty()), "{events:?}");
    // Anything more on the half-closed stream: STREAM_CLOSED.
    c.data(1, b"late", false).unwrap();
    assert!(matches!(&c.events()[..], [Event::Reset { stream: 1 }]));
    c.expect_rst(1, ErrorCode::StreamClosed);

    // Trailers without END_STREAM.
    c.headers(3, &post(""), false).unwrap();
    c.data(3, b"body", false).unwrap();
    c.events();
    c.headers(3, &[("x-checksum", "abc")], false).unwrap();
    assert!(matches!(&c.events()[..], [Event::Reset { stream: 3 }]));
    c.expect_rst(3, ErrorCode::Protocol);

    // Pseudo-headers in trailers.
    c.headers(5, &post(""), false).unwrap();
    c.events();
    c.headers(5, &[(":path", "/")], true).unwrap();
    assert!(matches!(&c.events()[..], [Event::Reset { stream: 5 }]));
    c.expect_rst(5, ErrorCode::Protocol);
}

#[test]
fn continuation_sequences() {
    let mut c = Client::new(limits());
    let block = c.block(&[(":method", "GET"), (":scheme", "https"), (":authority", "example.com"), (":path", "/split"), ("x-long", &"v".repeat(100))]);
    let mut input = Vec::new();
    write_headers(&mut input, 1, &block, true, 7);
    // Fed a byte at a time: partial frames are left for later.
    let mut at = 0;
    while at < input.len() {
        let end = (at + 5).min(input.len());
        let mut buf = input[at..end].to_vec();
        loop {
            let n = c.feed(&buf).unwrap();
            at += n;
            if at >= input.len() || buf.len() >= input.len() - at + n {
                break;
            }
            buf = input[at..(at + buf.len() - n + 5).min(input.len())].to_vec();
        }
    }
    let events = c.events();
    assert!(matches!(&events[..], [Event::Request { stream: 1, head }] if head.path_and_query() == b"/split"), "{events:?}");

    // Something between HEADERS and its CONTINUATION.
    let block = c.block(&get("/"));
    let mut input = Vec::new();
    write_frame(&mut input, HEADERS, FLAG_END_STREAM, 3, &block[..2]);
    write_ping(&mut input, false, [0; 8]);
    let r = c.send(&input);
    c.expect_error(r, ErrorCode::Protocol);

    // A CONTINUATION of another stream.
    let mut c = Client::new(limits());
    let block = c.block(&get("/"));
    let mut input = Vec::new();
    write_frame(&mut input, HEADERS, FLAG_END_STREAM, 1, &block[..2]);
    write_frame(&mut input, CONTINUATION, FLAG_END_HEADERS, 3, &block[2..]);
    let r = c.send(&input);
    c.expect_error(r, ErrorCode::Protocol);

    // A CONTINUATION out of the blue.
    let mut c = Client::new(limits());
    let r = c.frame(CONTINUATION, FLAG_END_HEADERS, 1, b"");
    c.expect_error(r, ErrorCode::Protocol);
}

#[test]
fn receive_flow_control() {
    let mut c = Client::new(H2Limits { initial_window: 1000, connection_window: 100_000, ..limits() });
    assert_eq!(c.conn.initial_recv_window(), 1000);
    c.headers(1, &post(""), false).unwrap();
    c.events();
    c.data(1, &[1; 600], false).unwrap();
    c.events();
    // Not consumed: no credit.
    assert!(c.take().is_empty());
    c.conn.consumed(1, 300);
    assert!(c.take().is_empty(), "less than half a window owed");
    c.conn.consumed(1, 400); // only 300 more were unconsumed
    assert_eq!(c.take().iter().filter_map(Out::window_update).collect::<Vec<_>>(), [(1, 600)]);
    // Padding (with the pad length byte) is owed at once, without a
    // consumed(): 256 + 256 is over half the window.
    let mut padded = vec![255];
    padded.extend_from_slice(&[7; 299]);
    c.frame(DATA, FLAG_PADDED, 1, &padded).unwrap();
    assert!(matches!(&c.events()[..], [Event::Data { data, .. }] if data.len() == 44));
    assert!(c.take().is_empty());
    c.frame(DATA, FLAG_PADDED, 1, &[255; 256]).unwrap();
    assert!(c.events().is_empty());
    assert_eq!(c.take().iter().filter_map(Out::window_update).collect::<Vec<_>>(), [(1, 512)]);
    assert_eq!(c.conn.streams[0].recv_window, 1000 - 300 - 256 + 512);
    c.data(1, &[1; 957], false).unwrap();
    assert!(matches!(&c.events()[..], [Event::Reset { stream: 1 }]));
    c.expect_rst(1, ErrorCode::FlowControl);
    assert_eq!(c.conn.recv_window, 100_000 - 600 - 300 - 256 - 957);

    // Before the client acknowledges our SETTINGS, the default window holds.
    let c = Client::bare(H2Limits { initial_window: 1000, ..limits() });
    assert_eq!(c.conn.initial_recv_window(), 65_535);

    // The connection's window is credited once half of it is owed,
    // including what a reset stream never had consumed.
    let mut c = Client::new(H2Limits { initial_window: 60_000, connection_window: 100_000, ..limits() });
    c.frame(SETTINGS, FLAG_ACK, 0, b"").unwrap();
    c.headers(1, &post(""), false).unwrap();
    c.headers(3, &post(""), false).unwrap();
    c.data(1, &[0; 16_000], false).unwrap();
    c.data(1, &[0; 16_000], false).unwrap();
    c.data(3, &[0; 16_000], false).unwrap();
    c.data(3, &[0; 16_000], false).unwrap();
    c.take();
    c.conn.consumed(1, 32_000);
    assert_eq!(c.take().iter().filter_map(Out::window_update).collect::<Vec<_>>(), [(1, 32_000)]);
    c.frame(RST_STREAM, 0, 3, &[0, 0, 0, 8]).unwrap();
    assert_eq!(c.take().iter().filter_map(Out::window_update).collect::<Vec<_>>(), [(0, 64_000)]);
    assert_eq!(c.conn.recv_window, 100_000);
}

#[test]
fn held_data_gives_the_connection_its_window_back() {
    let mut c = Client::new(H2Limits { initial_window: 60_000, connection_window: 80_000, ..limits() });
    c.frame(SETTINGS, FLAG_ACK, 0, b"").unwrap();
    c.headers(1, &post(""), false).unwrap();
    c.headers(3, &post(""), false).unwrap();
    for _ in 0..3 {
        c.data(1, &[0; 16_000], false).unwrap();
    }
    c.take();
    // Kept for a slow reader: the connection's credit at once, not the stream's.
    c.conn.hold(1, 48_000);
    assert_eq!(c.take().iter().filter_map(Out::window_update).collect::<Vec<_>>(), [(0, 48_000)]);
    assert_eq!(c.conn.streams[0].recv_window, 60_000 - 48_000);
    // Held twice is credited once.
    c.conn.hold(1, 48_000);
    assert!(c.take().is_empty());
    // Taken later: the stream's credit only.
    c.conn.consumed(1, 40_000);
    assert_eq!(c.take().iter().filter_map(Out::window_update).collect::<Vec<_>>(), [(1, 40_000)]);
    // Streams that go with held bytes give back only what was not.
    c.data(3, &[0; 16_000], false).unwrap();
    c.conn.hold(3, 6_000);
    c.take();
    c.frame(RST_STREAM, 0, 3, &[0, 0, 0, 8]).unwrap();
    c.frame(RST_STREAM, 0, 1, &[0, 0, 0, 8]).unwrap();
    c.take();
    // Credited or owed (under half a window: not yet worth a frame).
    assert_eq!(c.conn.recv_window + c.conn.recv_owed as i64, 80_000, "every byte credited back once");
}

#[test]
fn send_flow_control() {
    let mut c = Client::new(limits());
    c.get(1);
    c.get(3);
    c.conn.send_headers(1, 200, &[], false);
    c.conn.send_headers(3, 200, &[], false);
    let body = vec![b'z'; 70_000];
    assert_eq!(c.conn.send_window(1), 65_535);
    assert_eq!(c.conn.send_data(1, &body, true), 65_535);
    assert_eq!(c.conn.send_window(1), 0);
    assert_eq!(c.conn.send_window(3), 0, "the connection's window is spent");
    let out = c.take();
    let data: Vec<_> = out.iter().filter(|f| f.kind == DATA).map(|f| (f.payload.len(), f.flags)).collect();
    assert_eq!(data, [(16_384, 0), (16_384, 0), (16_384, 0), (16_383, 0)]);
    // The client raises the connection's window; the stream's is still 0.
    c.frame(WINDOW_UPDATE, 0, 0, &100_000u32.to_be_bytes()).unwrap();
    assert_eq!(c.conn.send_window(1), 0);
    assert_eq!(c.conn.send_window(3), 65_535);
    c.frame(WINDOW_UPDATE, 0, 1, &10_000u32.to_be_bytes()).unwrap();
    assert_eq!(c.conn.send_window(1), 10_000);
    // A smaller INITIAL_WINDOW_SIZE: windows go negative.
    let mut settings = Vec::new();
    write_settings(&mut settings, &[(SETTINGS_INITIAL_WINDOW_SIZE, 1000)]);
    c.send(&settings).unwrap();
    assert_eq!(c.conn.streams.iter().find(|s| s.id == 1).unwrap().send_window, 10_000 - 64_535);
    assert_eq!(c.conn.send_window(1), 0);
    assert_eq!(c.conn.send_window(3), 1000);
    assert_eq!(c.conn.send_data(1, &body[65_535..], true), 0);
    // And larger again, for the new and the open streams.
    settings.clear();
    write_settings(&mut settings, &[(SETTINGS_INITIAL_WINDOW_SIZE, 200_000)]);
    c.send(&settings).unwrap();
    assert_eq!(c.conn.streams.iter().find(|s| s.id == 1).unwrap().send_window, 10_000 - 64_535 + 199_000);
    assert_eq!(c.conn.send_window(1), 100_000, "the connection's window is the smaller");
    assert_eq!(c.conn.send_data(1, &body[65_535..], true), 70_000 - 65_535);
    assert_eq!(c.conn.open_streams(), 1);
    c.get(5);
    assert_eq!(c.conn.streams.iter().find(|s| s.id == 5).unwrap().send_window, 200_000);
    // An empty END_STREAM needs no window.
    c.frame(WINDOW_UPDATE, 0, 0, &1u32.to_be_bytes()).unwrap();
    assert_eq!(c.conn.send_data(3, b"", true), 0);
    assert_eq!(c.conn.open_streams(), 1);
    // Over 2^31-1 by SETTINGS: FLOW_CONTROL_ERROR.
    let mut c = Client::new(limits());
    c.get(1);
    c.frame(WINDOW_UPDATE, 0, 1, &(MAX_WINDOW - 65_535).to_be_bytes()).unwrap();
    settings.clear();
    write_settings(&mut settings, &[(SETTINGS_INITIAL_WINDOW_SIZE, 65_536)]);
    let r = c.send(&settings);
    c.expect_error(r, ErrorCode::FlowControl);
}

#[test]
fn goaway_from_us_and_from_the_client() {
    let mut c = Client::new(limits());
    c.get(1);
    c.get(3);
    c.conn.go_away();
    assert_eq!(c.take().iter().find_map(Out::goaway), Some((3, 0)));
    assert!(!c.conn.is_finished());
    c.headers(5, &post(""), false).unwrap();
    assert_eq!(c.events().len(), 2, "stream 5 came after GOAWAY: ignored");
    c.data(5, b"body", false).unwrap();
    c.headers(5, &[("x-trailer", "1")], true).unwrap();
    assert!(c.take().is_empty() && c.events().is_empty(), "and so are its frames");
    c.conn.send_headers(1, 200, &[], true);
    c.conn.reset(3, ErrorCode::Cancel);
    assert!(c.conn.is_finished());
    c.conn.go_away();
    assert!(c.take().iter().all(|f| f.kind != GOAWAY), "one GOAWAY");

    let mut c = Client::new(limits());
    c.get(1);
    c.frame(GOAWAY, 0, 0, &[0; 8]).unwrap();
    assert!(!c.conn.is_finished());
    c.get(3);
    assert_eq!(c.events().len(), 1, "no new stream after the client's GOAWAY");
    c.conn.send_headers(1, 200, &[], true);
    assert!(c.conn.is_finished());
}

#[test]
fn unknown_frames_and_settings_ignored() {
    let mut c = Client::new(limits());
    c.frame(0xfa, 0xff, 0, b"extension").unwrap();
    c.frame(0xfa, 0, 7, b"").unwrap();
    assert!(c.take().is_empty());
    c.get(1);
    assert_eq!(c.events().len(), 1);
}

#[test]
fn cookies_joined_and_malformed_requests_reset() {
    let mut c = Client::new(limits());
    let mut fields = get("/").to_vec();
    fields.extend([("cookie", "a=1"), ("cookie", "b=2")]);
    c.headers(1, &fields, true).unwrap();
    let events = c.events();
    assert!(matches!(&events[..], [Event::Request { head, .. }] if head.header("cookie") == Some(&b"a=1; b=2"[..])));

    let cases: &[&[(&str, &str)]] = &[
        &[(":method", "GET"), (":scheme", "https"), (":path", "/"), ("User-Agent", "x")],
        &[(":method", "GET"), (":scheme", "https"), (":path", "/"), ("connection", "keep-alive")],
        &[(":method", "GET"), (":scheme", "https")],
        &[(":method", "GET"), (":method", "GET"), (":scheme", "https"), (":path", "/")],
        &[(":method", "GET"), (":scheme", "https"), ("accept", "*/*"), (":path", "/")],
        &[(":method", "GET"), (":scheme", "https"), (":path", "/"), ("te", "gzip")],
    ];
    let mut id = 3;
    for fields in cases {
        c.headers(id, fields, true).unwrap();
        assert!(c.events().is_empty(), "{fields:?}");
        c.expect_rst(id, ErrorCode::Protocol);
        id += 2;
    }
}

#[test]
fn refused_requests_answered_and_their_bodies_dropped() {
    let mut c = Client::new(limits());
    let mut fields = post("");
    let big = "b".repeat(190);
    for _ in 0..12 {
        fields.push(("x-big", &big));
    }
    c.headers(1, &fields, false).unwrap();
    let events = c.events();
    assert!(matches!(&events[..], [Event::Refused { stream: 1, error }] if error.status == 431), "{events:?}");
    // A header list over the limit also ends the connection for new
    // streams (each would cost a full decode): GOAWAY naming stream 1.
    let out = c.take();
    assert_eq!(out.iter().filter_map(Out::goaway).collect::<Vec<_>>(), [(1, 0xb)], "GOAWAY ENHANCE_YOUR_CALM");
    c.data(1, &[0; 1000], false).unwrap();
    assert!(c.events().is_empty(), "the body of a refused request is dropped");
    c.conn.send_headers(1, 431, &[], true);
    let out = c.take();
    assert_eq!(out.iter().filter_map(Out::rst).collect::<Vec<_>>(), [(1, 0)], "RST_STREAM NO_ERROR");
    // Data in flight after our RST_STREAM: ignored.
    c.data(1, &[0; 10], true).unwrap();
    assert!(c.take().is_empty());
    // Streams after the GOAWAY are not taken up.
    c.get(3);
    assert!(c.events().is_empty());
    assert!(c.conn.is_finished());

    let mut c = Client::new(limits());
    c.headers(3, &[(":method", "CONNECT"), (":authority", "example.com:443")], false).unwrap();
    assert!(matches!(&c.events()[..], [Event::Refused { stream: 3, error }] if error.status == 405));
}

#[test]
fn upgraded_from_http1() {
    // SETTINGS_INITIAL_WINDOW_SIZE 1000, SETTINGS_ENABLE_PUSH 0.
    let params = [0u8, 4, 0, 0, 0x03, 0xe8, 0, 2, 0, 0, 0, 0];
    assert_eq!(base64url_decode(b"AAQAAAPoAAIAAAAA"), Some(params.to_vec()));
    let mut c = Client { conn: Connection::upgraded(limits(), b"AAQAAAPoAAIAAAAA").unwrap(), ..Client::bare(limits()) };
    c.take();
    assert_eq!(c.conn.open_streams(), 1);
    assert_eq!(c.conn.send_window(1), 1000);
    let mut input = PREFACE.to_vec();
    write_settings(&mut input, &[]);
    c.send(&input).unwrap();
    c.take();
    c.conn.send_headers(1, 200, &[], false);
    assert_eq!(c.conn.send_data(1, b"hello", true), 5);
    assert_eq!(c.conn.open_streams(), 0);
    // Stream 1 was half-closed (remote): DATA on it is STREAM_CLOSED.
    let mut c = Client { conn: Connection::upgraded(limits(), b"").unwrap(), ..Client::bare(limits()) };
    c.take();
    let mut input = PREFACE.to_vec();
    write_settings(&mut input, &[]);
    write_data(&mut input, 1, b"x", false);
    c.send(&input).unwrap();
    assert!(matches!(&c.events()[..], [Event::Reset { stream: 1 }]));
    c.expect_rst(1, ErrorCode::StreamClosed);
    c.get(3);
    assert_eq!(c.events().len(), 1);

    assert!(Connection::upgraded(limits(), b"AAQAAAPo!").is_err());
    assert!(Connection::upgraded(limits(), b"AAQAAA").is_err(), "4 bytes are not a setting");
    assert!(Connection::upgraded(limits(), b"AAIAAAAC").is_err(), "ENABLE_PUSH 2");
}

#[test]
fn base64url() {
    assert_eq!(base64url_decode(b""), Some(vec![]));
    assert_eq!(base64url_decode(b"TQ"), Some(b"M".to_vec()));
    assert_eq!(base64url_decode(b"TWE"), Some(b"Ma".to_vec()));
    assert_eq!(base64url_decode(b"TWFu"), Some(b"Man".to_vec()));
    assert_eq!(base64url_decode(b"TWE="), Some(b"Ma".to_vec()));
    assert_eq!(base64url_decode(b"-_-_"), Some(vec![0xfb, 0xff, 0xbf]));
    assert_eq!(base64url_decode(b"T"), None);
    assert_eq!(base64url_decode(b"T WE"), None);
}

#[test]
fn output_written_in_pieces() {
    let mut c = Client::new(limits());
    c.get(1);
    c.conn.send_headers(1, 200, &[], false);
    c.conn.send_data(1, &[b'x'; 20_000], true);
    let all = c.conn.output().to_vec();
    let mut got = Vec::new();
    while !c.conn.output().is_empty() {
        let n = c.conn.output().len().min(777);
        got.extend_from_slice(&c.conn.output()[..n]);
        c.conn.written(n);
    }
    assert_eq!(got, all);
    c.conn.written(10); // more than there is: harmless
    assert!(c.conn.output().is_empty());
}

#[test]
fn extended_connect_announced_and_its_data_not_a_body() {
    // Not announced, and a :protocol is a malformed request (RFC 8441 §3).
    let mut c = Client::bare(limits());
    let out = c.take();
    assert!(!settings(&out[0].payload).any(|(id, _)| id == SETTINGS_ENABLE_CONNECT_PROTOCOL));
    let ws = [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"), (":authority", "a.example"), (":path", "/chat"), ("sec-websocket-version", "13")];
    let mut c = Client::new(limits());
    c.headers(1, &ws, false).unwrap();
    assert!(c.events().is_empty());
    assert_eq!(c.take().iter().find_map(Out::rst), Some((1, ErrorCode::Protocol as u32)));

    let mut c = Client::bare(H2Limits { extended_connect: true, ..limits() });
    let out = c.take();
    assert!(settings(&out[0].payload).any(|s| s == (SETTINGS_ENABLE_CONNECT_PROTOCOL, 1)));
    let mut c = Client::new(H2Limits { extended_connect: true, ..limits() });
    c.headers(1, &ws, false).unwrap();
    c.data(1, b"frame bytes", false).unwrap();
    assert!(c.conn.receiving(1));
    c.data(1, b"", true).unwrap();
    assert!(!c.conn.receiving(1), "the client ended its side");
    assert!(!c.conn.receiving(3), "no such stream");
    let events = c.events();
    assert!(
        matches!(&events[..], [Event::Request { stream: 1, head }, Event::Data { data, end_stream: false, .. }, Event::Data { end_stream: true, .. }] if head.is_h2_websocket() && data == b"frame bytes"),
        "{events:?}"
    );
}
