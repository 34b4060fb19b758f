//! The connection's defences, against the same scripted client: protocol
//! errors that end a stream or the connection, and the budgets against
//! the known attacks (CONTINUATION, rapid-reset, SETTINGS, PING and
//! empty-frame floods, too many streams), an idle connection's memory,
//! and random frames.

use super::*;

#[test]
fn continuation_flood() {
    // Many slivers: stopped at MAX_CONTINUATIONS, as the frame's header comes.
    let mut c = Client::new(limits());
    c.frame(HEADERS, 0, 1, &[0x82]).unwrap();
    for _ in 0..MAX_CONTINUATIONS {
        c.frame(CONTINUATION, 0, 1, &[0x82]).unwrap();
    }
    let mut header = Vec::new();
    write_header(&mut header, 1, CONTINUATION, 0, 1);
    let r = c.feed(&header).map(|_| ());
    c.expect_error(r, ErrorCode::EnhanceYourCalm);

    // A block larger than twice the list limit: refused before its bytes.
    let mut c = Client::new(limits());
    c.frame(HEADERS, 0, 1, &[0x82; 3000]).unwrap();
    let mut header = Vec::new();
    write_header(&mut header, 2100, CONTINUATION, 0, 1);
    let r = c.feed(&header).map(|_| ());
    c.expect_error(r, ErrorCode::EnhanceYourCalm);

    // Empty CONTINUATIONs: the frame count stops them first.
    let mut c = Client::new(limits());
    c.frame(HEADERS, 0, 1, &[0x82]).unwrap();
    let r = (0..EMPTY_FRAMES_BURST).try_for_each(|_| c.frame(CONTINUATION, 0, 1, b""));
    c.expect_error(r, ErrorCode::EnhanceYourCalm);
}

#[test]
fn connection_errors() {
    use ErrorCode::*;
    type Script = fn(&mut Client) -> Result<(), ConnError>;
    let cases: &[(&str, Script, ErrorCode)] = &[
        ("frame over our max frame size", |c| c.data(1, &[0; 16_385], false), FrameSize),
        ("DATA on an idle stream", |c| c.data(1, b"x", false), Protocol),
        ("DATA on stream 0", |c| c.frame(DATA, 0, 0, b"x"), Protocol),
        ("RST_STREAM on an idle stream", |c| c.frame(RST_STREAM, 0, 1, &[0, 0, 0, 8]), Protocol),
        ("WINDOW_UPDATE on an idle stream", |c| c.frame(WINDOW_UPDATE, 0, 1, &[0, 0, 0, 1]), Protocol),
        ("WINDOW_UPDATE 0 on the connection", |c| c.frame(WINDOW_UPDATE, 0, 0, &[0; 4]), Protocol),
        ("connection window overflow", |c| c.frame(WINDOW_UPDATE, 0, 0, &MAX_WINDOW.to_be_bytes()), FlowControl),
        ("HEADERS on an even stream", |c| c.headers(2, &get("/"), true), Protocol),
        ("stream ids going down", |c| {
            c.get(5);
            c.headers(3, &get("/"), true)
        }, Protocol),
        ("HEADERS on a stream the client reset", |c| {
            c.headers(1, &post(""), false)?;
            c.frame(RST_STREAM, 0, 1, &[0, 0, 0, 8])?;
            c.headers(1, &get("/"), true)
        }, StreamClosed),
        ("PUSH_PROMISE", |c| c.frame(PUSH_PROMISE, FLAG_END_HEADERS, 1, &[0, 0, 0, 2]), Protocol),
        ("padding too long", |c| c.frame(DATA, FLAG_PADDED, 1, &[5, 0, 0]), Protocol),
        ("SETTINGS with ENABLE_PUSH 2", |c| c.send(&{
            let mut v = Vec::new();
            write_settings(&mut v, &[(SETTINGS_ENABLE_PUSH, 2)]);
            v
        }), Protocol),
        ("SETTINGS with a small MAX_FRAME_SIZE", |c| c.send(&{
            let mut v = Vec::new();
            write_settings(&mut v, &[(SETTINGS_MAX_FRAME_SIZE, 16_383)]);
            v
        }), Protocol),
        ("SETTINGS with INITIAL_WINDOW_SIZE over 2^31-1", |c| c.send(&{
            let mut v = Vec::new();
            write_settings(&mut v, &[(SETTINGS_INITIAL_WINDOW_SIZE, 1 << 31)]);
            v
        }), FlowControl),
        ("SETTINGS ACK with a payload", |c| c.frame(SETTINGS, FLAG_ACK, 0, &[0; 6]), FrameSize),
        ("PING of 7 bytes", |c| c.frame(PING, 0, 0, &[0; 7]), FrameSize),
        ("a bad HPACK block", |c| c.frame(HEADERS, FLAG_END_HEADERS | FLAG_END_STREAM, 1, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), Compression),
        ("DATA beyond the connection window", |c| {
            c.headers(1, &post(""), false)?;
            for _ in 0..64 {
                c.data(1, &[0; 16_384], false)?;
            }
            c.data(1, &[0; 16_384], false)
        }, FlowControl),
    ];
    for (what, script, code) in cases {
        let mut c = Client::new(H2Limits { initial_window: MAX_WINDOW, ..limits() });
        let r = script(&mut c);
        assert!(matches!(&r, Err(e) if e.code == *code), "{what}: {r:?}");
        let out = c.take();
        let goaway = out.iter().find_map(Out::goaway);
        assert_eq!(goaway.map(|g| g.1), Some(*code as u32), "{what}");
    }
}

#[test]
fn stream_errors() {
    let mut c = Client::new(limits());
    c.headers(1, &post(""), false).unwrap();
    c.events();
    c.frame(WINDOW_UPDATE, 0, 1, &[0; 4]).unwrap();
    assert!(matches!(&c.events()[..], [Event::Reset { stream: 1 }]));
    c.expect_rst(1, ErrorCode::Protocol);

    c.headers(3, &post(""), false).unwrap();
    c.events();
    c.frame(WINDOW_UPDATE, 0, 3, &MAX_WINDOW.to_be_bytes()).unwrap();
    assert!(matches!(&c.events()[..], [Event::Reset { stream: 3 }]));
    c.expect_rst(3, ErrorCode::FlowControl);

    c.frame(PRIORITY, 0, 9, &[0, 0, 0, 1]).unwrap();
    c.expect_rst(9, ErrorCode::FrameSize);
    c.frame(PRIORITY, 0, 11, &[0, 0, 0, 11, 0]).unwrap();
    c.expect_rst(11, ErrorCode::Protocol);
    // Priorities are otherwise ignored, on idle streams too.
    c.frame(PRIORITY, 0, 13, &[0, 0, 0, 1, 0]).unwrap();
    assert!(c.take().is_empty());

    // HEADERS depending on itself: decoded (HPACK in step), then reset.
    let block = c.block(&get("/"));
    let mut payload = vec![0, 0, 0, 15, 16];
    payload.extend_from_slice(&block);
    c.frame(HEADERS, FLAG_PRIORITY | FLAG_END_HEADERS | FLAG_END_STREAM, 15, &payload).unwrap();
    assert!(c.events().is_empty());
    c.expect_rst(15, ErrorCode::Protocol);
    c.get(17);
    assert_eq!(c.events().len(), 1);

    // DATA on a stream closed long ago: STREAM_CLOSED; on one we just
    // reset: ignored. Both give the connection its window back.
    c.conn.send_headers(17, 200, &[], true);
    c.take();
    c.data(17, b"x", false).unwrap();
    c.expect_rst(17, ErrorCode::StreamClosed);
    c.data(15, b"late", false).unwrap();
    assert!(c.take().is_empty());
    // Late WINDOW_UPDATE and RST_STREAM on closed streams: ignored.
    c.frame(WINDOW_UPDATE, 0, 1, &[0, 0, 0, 1]).unwrap();
    c.frame(RST_STREAM, 0, 3, &[0, 0, 0, 8]).unwrap();
    assert!(c.take().is_empty() && c.events().is_empty());
}

#[test]
fn max_concurrent_streams_refused() {
    let mut c = Client::new(limits());
    for id in [1, 3, 5, 7] {
        c.get(id);
    }
    c.take();
    c.get(9);
    c.expect_rst(9, ErrorCode::RefusedStream);
    assert_eq!(c.events().len(), 4);
    assert_eq!(c.conn.open_streams(), 4);
    // The refused stream's HPACK state was kept: the next block decodes.
    c.conn.send_headers(1, 200, &[], true);
    c.get(11);
    assert!(matches!(&c.events()[..], [Event::Request { stream: 11, .. }]));
}

#[test]
fn rapid_reset_calmed() {
    let mut c = Client::new(limits());
    let budget = 2 * RESETS_MIN_PER_SEC; // max_concurrent_streams 4 < the minimum rate
    let mut id = 1;
    let mut reset = |c: &mut Client| {
        c.get(id);
        let r = c.frame(RST_STREAM, 0, id, &[0, 0, 0, 8]);
        id += 2;
        r
    };
    for _ in 0..budget {
        reset(&mut c).unwrap();
    }
    // A second later half of it has drained.
    c.now += Duration::from_secs(1);
    for _ in 0..RESETS_MIN_PER_SEC {
        reset(&mut c).unwrap();
    }
    let r = reset(&mut c);
    c.expect_error(r, ErrorCode::EnhanceYourCalm);
    // Each stream was reported reset to the server.
    assert!(c.events().iter().filter(|e| matches!(e, Event::Reset { .. })).count() >= budget as usize);
}

#[test]
fn ping_answered_and_ping_flood() {
    let mut c = Client::new(limits());
    c.frame(PING, 0, 0, b"abcdefgh").unwrap();
    assert_eq!(c.take(), [Out { kind: PING, flags: FLAG_ACK, stream: 0, payload: b"abcdefgh".to_vec() }]);
    c.frame(PING, FLAG_ACK, 0, b"abcdefgh").unwrap();
    assert!(c.take().is_empty());
    // Answered as long as the answers are read...
    for _ in 0..3 * MAX_UNWRITTEN_ANSWERS {
        c.frame(PING, 0, 0, &[0; 8]).unwrap();
        c.take();
    }
    // ...not when they pile up.
    let r = (0..=MAX_UNWRITTEN_ANSWERS).try_for_each(|_| c.frame(PING, 0, 0, &[0; 8]));
    c.expect_error(r, ErrorCode::EnhanceYourCalm);
}

#[test]
fn settings_flood() {
    let mut c = Client::new(limits());
    let mut settings = Vec::new();
    write_settings(&mut settings, &[]);
    let r = (0..SETTINGS_BURST).try_for_each(|_| {
        c.send(&settings)?;
        c.take();
        Ok(())
    });
    c.expect_error(r, ErrorCode::EnhanceYourCalm);
}

#[test]
fn empty_data_flood() {
    let mut c = Client::new(limits());
    c.headers(1, &post(""), false).unwrap();
    let r = (0..=EMPTY_FRAMES_BURST).try_for_each(|_| c.data(1, b"", false));
    c.expect_error(r, ErrorCode::EnhanceYourCalm);
}

/// Counts the bytes each thread has live on the heap, to weigh an idle
/// connection (tests run on threads of their own).
mod heap {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static LIVE: Cell<isize> = const { Cell::new(0) };
    }

    pub struct Counting;

    // SAFETY: System does the allocating; this only counts.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = LIVE.try_with(|l| l.set(l.get() + layout.size() as isize));
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            let _ = LIVE.try_with(|l| l.set(l.get() - layout.size() as isize));
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let _ = LIVE.try_with(|l| l.set(l.get() + new_size as isize - layout.size() as isize));
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    pub fn live() -> isize {
        LIVE.with(Cell::get)
    }
}

#[test]
fn idle_connection_heap() {
    let before = heap::live();
    let mut conn = Connection::new(limits());
    let mut input = PREFACE.to_vec();
    write_settings(&mut input, &[]);
    write_settings_ack(&mut input);
    let mut events = Vec::with_capacity(4);
    conn.feed(&input, Instant::now(), &mut events).unwrap();
    let n = conn.output().len();
    conn.written(n);
    let fresh = heap::live() - before - events.capacity() as isize * std::mem::size_of::<Event>() as isize;
    // A GET whose :authority the client indexes, as browsers do, and its answer.
    input.clear();
    let mut block = vec![0x82, 0x87, 0x84, 0x41, 11];
    block.extend_from_slice(b"example.com");
    write_headers(&mut input, 1, &block, true, 16_384);
    conn.feed(&input, Instant::now(), &mut events).unwrap();
    events.clear();
    conn.send_headers(1, 200, &[("content-type", "text/html"), ("content-length", "5")], false);
    conn.send_data(1, b"hello", true);
    let n = conn.output().len();
    conn.written(n);
    let after_request = heap::live() - before - events.capacity() as isize * std::mem::size_of::<Event>() as isize;
    eprintln!("size_of::<Connection>() = {}, heap when new {fresh}, after a request {after_request}", std::mem::size_of::<Connection>());
    assert!(after_request < 2048, "{after_request}");
    drop(conn);
}

#[test]
fn idle_connection_is_small() {
    let mut c = Client::new(limits());
    c.get(1);
    c.conn.send_headers(1, 200, &[("content-type", "text/plain")], false);
    c.conn.send_data(1, &[b'x'; 60_000], true);
    c.take();
    assert_eq!(c.conn.out.capacity(), 0, "the output buffer is given back once written");
    assert_eq!(c.conn.streams.capacity(), 0);
    assert_eq!(c.conn.block.capacity(), 0);
    eprintln!("size_of::<Connection>() = {}", std::mem::size_of::<Connection>());
    assert!(std::mem::size_of::<Connection>() < 1024);
}

#[test]
fn random_frames_never_panic() {
    // Frames of every type with random flags, small stream ids and
    // random payloads, some of them valid header blocks: whatever the
    // connection makes of them, it must not panic, and its output must
    // stay whole frames.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..300 {
        let mut c = Client::new(H2Limits { max_concurrent_streams: 3, ..limits() });
        let mut input = Vec::new();
        for _ in 0..40 {
            let r = next();
            let kind = (r % 11) as u8;
            let flags = (r >> 8) as u8 & if round % 2 == 0 { 0x2d } else { 0xff };
            let stream = ((r >> 16) % 8) as u32;
            let len = ((r >> 24) % 24) as usize;
            let mut payload: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if kind == HEADERS && r >> 40 & 1 == 0 {
                payload = c.block(&get("/r"));
            }
            write_frame(&mut input, kind, flags, stream, &payload);
        }
        let mut at = 0;
        while at < input.len() {
            let end = (at + 1 + (next() % 64) as usize).min(input.len());
            match c.conn.feed(&input[at..end], c.now, &mut c.events) {
                Ok(n) => at += n,
                Err(_) => break,
            }
            if end == input.len() && c.conn.feed(&input[at..], c.now, &mut c.events).map_or(true, |n| n == 0) {
                break;
            }
            for e in std::mem::take(&mut c.events) {
                if let Event::Request { stream, .. } | Event::Refused { stream, .. } = e {
                    c.conn.send_headers(stream, 200, &[("x", "y")], false);
                    c.conn.send_data(stream, b"body", next() % 2 == 0);
                }
            }
            if next() % 3 == 0 {
                c.take();
            }
        }
        c.take();
    }
}
