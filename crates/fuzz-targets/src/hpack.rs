//! HPACK (RFC 7541): a client's header blocks through the `Decoder`, and
//! the `Encoder`'s blocks read back.
//!
//! The input serves twice. Read as header blocks (each a length octet then
//! up to that many octets), it goes through two decoders of one
//! connection, one without a limit on the decoded list and one with a small
//! one: the limit may only stop fields from being handed out (those given
//! are the unlimited reading's first ones, within the limit) and turn a
//! success into `ListTooLarge`; an invalid block is invalid for both, and
//! the next blocks decode alike, so both tables stayed in step. Read as a
//! script (fields, ends of responses, and the client's table size
//! changes), it drives an `Encoder`, and a `Decoder` must read each block
//! back to the same fields; no block is larger than its fields written
//! out plainly.

use warren_http::h2::hpack::{DecodeError, Decoder, Encoder};

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// Small enough for a few fields of a short input to reach it.
const SMALL_LIST: usize = 256;

pub fn run(data: &[u8]) {
    for table_size in [4096, 64] {
        decode_blocks(data, table_size);
    }
    round_trip(data);
}

fn decode(decoder: &mut Decoder, block: &[u8], max_list: usize) -> (Fields, Result<(), DecodeError>) {
    let mut out = Vec::new();
    let result = decoder.decode(block, max_list, &mut |n, v| out.push((n.to_vec(), v.to_vec())));
    (out, result)
}

fn list_size(fields: &[(Vec<u8>, Vec<u8>)]) -> usize {
    fields.iter().map(|(n, v)| n.len() + v.len() + 32).sum()
}

fn decode_blocks(data: &[u8], table_size: usize) {
    let mut unlimited = Decoder::new(table_size);
    let mut limited = Decoder::new(table_size);
    let mut rest = data;
    while let Some((&len, tail)) = rest.split_first() {
        let (block, after) = tail.split_at((len as usize).min(tail.len()));
        rest = after;
        let (all, result) = decode(&mut unlimited, block, usize::MAX);
        let (some, limited_result) = decode(&mut limited, block, SMALL_LIST);
        assert_ne!(result, Err(DecodeError::ListTooLarge), "no limit, yet too large");
        assert!(list_size(&some) <= SMALL_LIST, "{} octets of fields handed out past the limit", list_size(&some));
        assert!(some.len() <= all.len() && some[..] == all[..some.len()], "the limit changed the fields handed out");
        match result {
            Ok(()) if list_size(&all) > SMALL_LIST => assert_eq!(limited_result, Err(DecodeError::ListTooLarge)),
            Ok(()) => assert!(limited_result == Ok(()) && some == all),
            Err(e) => {
                assert_eq!(limited_result, Err(e));
                // A connection error: nothing more is decoded.
                return;
            }
        }
    }
}

const NAMES: [&[u8]; 16] = [
    b":status",
    b"server",
    b"date",
    b"content-type",
    b"content-length",
    b"cache-control",
    b"vary",
    b"etag",
    b"set-cookie",
    b"location",
    b"last-modified",
    b"content-encoding",
    b"accept-ranges",
    b"x-frame-options",
    b"strict-transport-security",
    b"www-authenticate",
];

const VALUES: [&[u8]; 16] = [
    b"200",
    b"304",
    b"302",
    b"404",
    b"warren",
    b"text/html; charset=utf-8",
    b"gzip",
    b"bytes",
    b"",
    b"no-cache",
    b"accept-encoding",
    b"max-age=31536000",
    b"Wed, 25 Nov 2026 05:00:00 GMT",
    b"\"5f3e-1a2b\"",
    b"id=1; HttpOnly",
    b"DENY",
];

/// The next octet of the script, 0 once it is over.
fn next(script: &mut &[u8]) -> u8 {
    match script.split_first() {
        Some((&b, rest)) => {
            *script = rest;
            b
        }
        None => 0,
    }
}

/// A name or value: one of `common` by the low bits of an octet, or with
/// its high bit set, up to `max` octets of the script as they are.
fn string(script: &mut &[u8], common: &[&[u8]; 16], max: usize) -> Vec<u8> {
    let b = next(script);
    if b & 0x80 == 0 {
        return common[(b & 0x0f) as usize].to_vec();
    }
    let len = ((b & 0x7f) as usize % (max + 1)).min(script.len());
    let (s, rest) = script.split_at(len);
    *script = rest;
    s.to_vec()
}

fn round_trip(data: &[u8]) {
    let mut encoder = Encoder::new();
    // The most the encoder uses is 4096, whatever the client allows.
    let mut decoder = Decoder::new(4096);
    let mut fields: Fields = Vec::new();
    let mut script = data;
    while !script.is_empty() {
        match next(&mut script) % 8 {
            0 => {
                let size = u16::from_be_bytes([next(&mut script), next(&mut script)]);
                encoder.set_max_table_size(size as usize);
            }
            1 => send(&mut encoder, &mut decoder, &mut fields),
            _ => {
                let name = string(&mut script, &NAMES, 24);
                let value = string(&mut script, &VALUES, 100);
                fields.push((name, value));
            }
        }
    }
    send(&mut encoder, &mut decoder, &mut fields);
}

fn send(encoder: &mut Encoder, decoder: &mut Decoder, fields: &mut Fields) {
    let mut block = Vec::new();
    encoder.encode(fields.iter().map(|(n, v)| (n.as_slice(), v.as_slice())), &mut block);
    // Two size updates of at most 3 octets; per field a first octet and
    // two lengths of at most 6 octets each.
    let plain: usize = fields.iter().map(|(n, v)| n.len() + v.len() + 13).sum::<usize>() + 6;
    assert!(block.len() <= plain, "a block of {} octets for {plain} octets written plainly", block.len());
    let (back, result) = decode(decoder, &block, usize::MAX);
    assert_eq!(result, Ok(()), "our own block {block:02x?}");
    assert!(back == *fields, "read back {back:?}, sent {fields:?}");
    fields.clear();
}
