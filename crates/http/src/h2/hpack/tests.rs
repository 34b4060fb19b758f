//! HPACK against RFC 7541's Appendix C examples, malformed and hostile
//! blocks, the encoder's choices, and random round trips.

use super::*;

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits.chunks(2).map(|d| u8::from_str_radix(std::str::from_utf8(d).unwrap(), 16).unwrap()).collect()
}

fn fields(list: &[(&str, &str)]) -> Fields {
    list.iter().map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec())).collect()
}

fn decode(decoder: &mut Decoder, block: &[u8], max_list: usize) -> (Fields, Result<(), DecodeError>) {
    let mut out = Vec::new();
    let result = decoder.decode(block, max_list, &mut |n, v| out.push((n.to_vec(), v.to_vec())));
    (out, result)
}

fn decode_ok(decoder: &mut Decoder, block: &[u8]) -> Fields {
    let (out, result) = decode(decoder, block, usize::MAX);
    assert_eq!(result, Ok(()));
    out
}

fn table_of(table: &DynamicTable) -> Fields {
    table.entries.iter().map(|e| (e.name().to_vec(), e.value().to_vec())).collect()
}

fn encode(encoder: &mut Encoder, list: &Fields) -> Vec<u8> {
    let mut out = Vec::new();
    encoder.encode(list.iter().map(|(n, v)| (n.as_slice(), v.as_slice())), &mut out);
    out
}

/// One block of an Appendix C sequence: its hex dump, the fields it
/// decodes to, the dynamic table after it (newest first) and its size.
type Step<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [(&'a str, &'a str)], usize);

/// Decodes each block in turn, checking what it gives and leaves.
fn check_sequence(decoder: &mut Decoder, steps: &[Step]) {
    for (i, &(block, expected, table, size)) in steps.iter().enumerate() {
        assert_eq!(decode_ok(decoder, &hex(block)), fields(expected), "block {i}");
        assert_eq!(table_of(&decoder.table), fields(table), "table after block {i}");
        assert_eq!(decoder.table.size, size, "table size after block {i}");
    }
}

#[test]
fn integers_as_in_c1() {
    // C.1.1: 10 with a 5-bit prefix; C.1.2: 1337; C.1.3: 42 at an
    // octet boundary.
    for (value, prefix, bytes) in [(10, 5, vec![0x0a]), (1337, 5, vec![0x1f, 0x9a, 0x0a]), (42, 8, vec![0x2a])] {
        let mut out = Vec::new();
        write_integer(value, prefix, 0, &mut out);
        assert_eq!(out, bytes);
        if prefix < 8 {
            let mut pos = 0;
            assert_eq!(read_integer(&bytes, &mut pos, prefix), Ok(value));
            assert_eq!(pos, bytes.len());
        }
    }
    for value in [0, 1, 30, 31, 32, 127, 128, 255, 16_383, 16_384, 1 << 21, u32::MAX as usize] {
        for prefix in 4..=7 {
            let mut out = Vec::new();
            write_integer(value, prefix, 0, &mut out);
            let mut pos = 0;
            assert_eq!(read_integer(&out, &mut pos, prefix), Ok(value), "{value} with {prefix} bits");
            assert_eq!(pos, out.len());
        }
    }
}

#[test]
fn integers_bounded() {
    let read = |bytes: &[u8]| read_integer(bytes, &mut 0, 5);
    // u32::MAX fits; one more does not.
    let mut max = Vec::new();
    write_integer(u32::MAX as usize, 5, 0, &mut max);
    assert_eq!(read(&max), Ok(u32::MAX as usize));
    let mut over = Vec::new();
    write_integer(u32::MAX as usize + 1, 5, 0, &mut over);
    assert_eq!(read(&over), Err(DecodeError::Invalid("integer overflow")));
    assert_eq!(read(&[0x1f, 0xff, 0xff, 0xff, 0xff, 0x7f]), Err(DecodeError::Invalid("integer overflow")));
    // Overlong: zeros carried on past five continuation octets.
    assert_eq!(read(&[0x1f, 0x80, 0x80, 0x80, 0x80, 0x00]), Ok(31));
    assert_eq!(read(&[0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]), Err(DecodeError::Invalid("integer too long")));
    let mut zeros = vec![0x1f];
    zeros.extend([0x80; 40]);
    assert_eq!(read(&zeros), Err(DecodeError::Invalid("integer too long")));
    // Truncated.
    assert_eq!(read(&[]), Err(DecodeError::Invalid("truncated integer")));
    assert_eq!(read(&[0x1f]), Err(DecodeError::Invalid("truncated integer")));
    assert_eq!(read(&[0x1f, 0x9a]), Err(DecodeError::Invalid("truncated integer")));
}

#[test]
fn c2_literal_fields() {
    // C.2.1: with indexing.
    let mut d = Decoder::new(4096);
    check_sequence(
        &mut d,
        &[(
            "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
            &[("custom-key", "custom-header")],
            &[("custom-key", "custom-header")],
            55,
        )],
    );
    // C.2.2: without indexing.
    let mut d = Decoder::new(4096);
    check_sequence(&mut d, &[("040c 2f73 616d 706c 652f 7061 7468", &[(":path", "/sample/path")], &[], 0)]);
    // C.2.3: never indexed.
    let mut d = Decoder::new(4096);
    check_sequence(&mut d, &[("1008 7061 7373 776f 7264 0673 6563 7265 74", &[("password", "secret")], &[], 0)]);
    // C.2.4: indexed.
    let mut d = Decoder::new(4096);
    check_sequence(&mut d, &[("82", &[(":method", "GET")], &[], 0)]);
}

const REQUESTS: [&[(&str, &str)]; 3] = [
    &[(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")],
    &[(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com"), ("cache-control", "no-cache")],
    &[(":method", "GET"), (":scheme", "https"), (":path", "/index.html"), (":authority", "www.example.com"), ("custom-key", "custom-value")],
];
const REQUEST_TABLES: [&[(&str, &str)]; 3] = [
    &[(":authority", "www.example.com")],
    &[("cache-control", "no-cache"), (":authority", "www.example.com")],
    &[("custom-key", "custom-value"), ("cache-control", "no-cache"), (":authority", "www.example.com")],
];

#[test]
fn c3_requests_without_huffman() {
    let blocks = [
        "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        "8286 84be 5808 6e6f 2d63 6163 6865",
        "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
    ];
    let sizes = [57, 110, 164];
    let steps: Vec<_> = (0..3).map(|i| (blocks[i], REQUESTS[i], REQUEST_TABLES[i], sizes[i])).collect();
    check_sequence(&mut Decoder::new(4096), &steps);
}

#[test]
fn c4_requests_with_huffman() {
    let blocks = [
        "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
        "8286 84be 5886 a8eb 1064 9cbf",
        "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
    ];
    let sizes = [57, 110, 164];
    let steps: Vec<_> = (0..3).map(|i| (blocks[i], REQUESTS[i], REQUEST_TABLES[i], sizes[i])).collect();
    check_sequence(&mut Decoder::new(4096), &steps);
}

const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
const RESPONSES: [&[(&str, &str)]; 3] = [
    &[
        (":status", "302"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("location", "https://www.example.com"),
    ],
    &[
        (":status", "307"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("location", "https://www.example.com"),
    ],
    &[
        (":status", "200"),
        ("cache-control", "private"),
        ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
        ("location", "https://www.example.com"),
        ("content-encoding", "gzip"),
        ("set-cookie", COOKIE),
    ],
];
// The third response evicts all but one entry (C.5.3, C.6.3).
const RESPONSE_TABLES: [&[(&str, &str)]; 3] = [
    &[
        ("location", "https://www.example.com"),
        ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("cache-control", "private"),
        (":status", "302"),
    ],
    &[
        (":status", "307"),
        ("location", "https://www.example.com"),
        ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
        ("cache-control", "private"),
    ],
    &[("set-cookie", COOKIE), ("content-encoding", "gzip"), ("date", "Mon, 21 Oct 2013 20:13:22 GMT")],
];

#[test]
fn c5_responses_without_huffman() {
    let blocks = [
        "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d
         546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        "4803 3330 37c1 c0bf",
        "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f
         6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b
         2076 6572 7369 6f6e 3d31",
    ];
    let sizes = [222, 222, 215];
    let steps: Vec<_> = (0..3).map(|i| (blocks[i], RESPONSES[i], RESPONSE_TABLES[i], sizes[i])).collect();
    check_sequence(&mut Decoder::new(256), &steps);
}

#[test]
fn c6_responses_with_huffman() {
    let blocks = [
        "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7
         8f0b 97c8 e9ae 82ae 43d3",
        "4883 640e ffc1 c0bf",
        "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335
         dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
    ];
    let sizes = [222, 222, 215];
    let steps: Vec<_> = (0..3).map(|i| (blocks[i], RESPONSES[i], RESPONSE_TABLES[i], sizes[i])).collect();
    check_sequence(&mut Decoder::new(256), &steps);
}

fn invalid(block: &[u8], max_table_size: usize) -> &'static str {
    match Decoder::new(max_table_size).decode(block, usize::MAX, &mut |_, _| {}) {
        Err(DecodeError::Invalid(why)) => why,
        other => panic!("{block:02x?} gave {other:?}"),
    }
}

#[test]
fn malformed_blocks_are_refused() {
    // Indexes.
    assert_eq!(invalid(&[0x80], 4096), "index 0");
    assert_eq!(invalid(&[0xbe], 4096), "index out of range");
    assert_eq!(invalid(&[0x7e, 0x00], 4096), "index out of range");
    assert_eq!(invalid(&[0x0f, 0x30, 0x00], 4096), "index out of range");
    assert_eq!(invalid(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x0f], 4096), "integer overflow");
    // Truncated integers and strings.
    assert_eq!(invalid(&[0xff], 4096), "truncated integer");
    assert_eq!(invalid(&[0x40], 4096), "truncated integer");
    assert_eq!(invalid(&[0x40, 0x05, b'a', b'b'], 4096), "truncated string");
    assert_eq!(invalid(&[0x40, 0x01, b'a'], 4096), "truncated integer");
    assert_eq!(invalid(&[0x40, 0x01, b'a', 0x03, b'x'], 4096), "truncated string");
    assert_eq!(invalid(&[0x04, 0x7f, 0xff, 0xff, 0xff, 0x0f], 4096), "truncated string");
    // A length near u32::MAX is refused before any allocation.
    assert_eq!(invalid(&[0x00, 0x7f, 0x80, 0xff, 0xff, 0xff, 0x0f], 4096), "truncated string");
    // Huffman: 'a' then bad padding, 8 bits of padding, EOS.
    assert_eq!(invalid(&[0x00, 0x81, 0b0001_1011, 0x00], 4096), "bad Huffman padding");
    assert_eq!(invalid(&[0x00, 0x82, 0b0001_1111, 0xff, 0x00], 4096), "bad Huffman padding");
    assert_eq!(invalid(&[0x00, 0x84, 0xff, 0xff, 0xff, 0xff, 0x00], 4096), "EOS in a Huffman string");
    assert_eq!(invalid(&[0x00, 0x01, b'a', 0x84, 0xff, 0xff, 0xff, 0xff], 4096), "EOS in a Huffman string");
    // Size updates: above the limit, after a field, three of them.
    assert_eq!(invalid(&[0x3f, 0xe2, 0x1f], 4096), "table size update above the limit");
    assert_eq!(invalid(&[0x21], 0), "table size update above the limit");
    assert_eq!(invalid(&[0x82, 0x20], 4096), "table size update after a field");
    assert_eq!(invalid(&[0x20, 0x3f, 0xe1, 0x1f, 0x20], 4096), "more than two table size updates");
    assert_eq!(invalid(&[0x3f], 4096), "truncated integer");
}

#[test]
fn size_updates_at_the_start() {
    let mut d = Decoder::new(4096);
    decode_ok(&mut d, &hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572"));
    assert_eq!(d.table.len(), 1);
    // Down to 0 (the table empties), back up to 4096, then a field.
    assert_eq!(decode_ok(&mut d, &[0x20, 0x3f, 0xe1, 0x1f, 0x82]), fields(&[(":method", "GET")]));
    assert_eq!((d.table.len(), d.table.capacity), (0, 4096));
    // Up to the limit is fine, a block of updates alone too.
    assert_eq!(decode_ok(&mut d, &[0x3f, 0xe1, 0x1f]), fields(&[]));
    // Shrinking evicts the oldest.
    decode_ok(&mut d, &hex("4001 6101 31 4001 6201 32"));
    assert_eq!(d.table.size, 68);
    decode_ok(&mut d, &[0x3f, 0x04]); // 35
    assert_eq!(table_of(&d.table), fields(&[("b", "2")]));
    decode_ok(&mut d, &[0x3f, 0x01]); // 32
    assert_eq!(table_of(&d.table), fields(&[]));
}

#[test]
fn table_size_0() {
    // A decoder that announced 0 keeps nothing, and so refers to nothing.
    let mut d = Decoder::new(0);
    assert_eq!(decode_ok(&mut d, &hex("4001 6101 31")), fields(&[("a", "1")]));
    assert_eq!(d.table.len(), 0);
    assert_eq!(invalid(&hex("4001 6101 31 be"), 0), "index out of range");
    // An encoder told 0 says so first, then indexes nothing.
    let mut e = Encoder::new();
    e.set_max_table_size(0);
    let list = fields(&[(":status", "302"), ("server", "warren"), ("content-type", "text/html")]);
    for i in 0..3 {
        let block = encode(&mut e, &list);
        assert_eq!(block[0] == 0x20, i == 0, "{block:02x?}");
        assert_eq!(decode_ok(&mut d, &block), list);
        assert_eq!(e.table.len(), 0);
    }
    // Raised again: the next block says so, and indexing resumes.
    e.set_max_table_size(4096);
    let block = encode(&mut e, &list);
    assert_eq!(block[..3], [0x3f, 0xe1, 0x1f]);
    let mut d = Decoder::new(4096);
    assert_eq!(decode_ok(&mut d, &block), list);
    assert_eq!(e.table.len(), 3);
    assert_eq!(table_of(&d.table), table_of(&e.table));
}

#[test]
fn a_too_large_entry_empties_the_table() {
    let mut d = Decoder::new(100);
    decode_ok(&mut d, &hex("4001 6101 31"));
    let long = "x".repeat(80);
    let mut block = vec![0x40, 0x01, b'b', 80];
    block.extend_from_slice(long.as_bytes());
    assert_eq!(decode_ok(&mut d, &block), vec![(b"b".to_vec(), long.into_bytes())]);
    assert_eq!((d.table.len(), d.table.size), (0, 0));
}

#[test]
fn indexed_name_of_an_entry_the_insertion_evicts() {
    // Table of 64: ("a", "1") is 34; a literal with indexing whose name
    // is that entry's evicts it while being added.
    let mut d = Decoder::new(64);
    decode_ok(&mut d, &hex("4001 6101 31"));
    assert_eq!(decode_ok(&mut d, &hex("7e 02 3232")), fields(&[("a", "22")]));
    assert_eq!(table_of(&d.table), fields(&[("a", "22")]));
}

/// A block of a few kilobytes that would expand to hundreds of
/// megabytes: one large entry, then a reference to it per octet.
#[test]
fn hpack_bomb_is_cut_off() {
    let mut block = vec![0x40, 0x01, b'x'];
    write_integer(4000, 7, 0, &mut block);
    block.extend(std::iter::repeat_n(b'v', 4000));
    block.extend(std::iter::repeat_n(0xbe, 100_000));
    let mut d = Decoder::new(4096);
    let mut handed_out = 0usize;
    let start = std::time::Instant::now();
    let result = d.decode(&block, 16 * 1024, &mut |n, v| handed_out += n.len() + v.len() + 32);
    assert_eq!(result, Err(DecodeError::ListTooLarge));
    assert!(handed_out <= 16 * 1024, "{handed_out}");
    assert_eq!(handed_out, 4 * 4033);
    assert!(start.elapsed() < std::time::Duration::from_secs(1));
    // Decoded to the end: the table is in step for the next block.
    assert_eq!(d.table.len(), 1);
    let (out, result) = decode(&mut d, &[0xbe, 0x82], usize::MAX);
    assert_eq!(result, Ok(()));
    assert_eq!(out.len(), 2);
    // An error after the limit is still an error.
    let mut bad = block.clone();
    bad.push(0x80);
    assert_eq!(Decoder::new(4096).decode(&bad, 16 * 1024, &mut |_, _| {}), Err(DecodeError::Invalid("index 0")));
}

#[test]
fn list_size_counts_name_value_and_32() {
    let block = hex("8286 84"); // :method GET, :scheme http, :path /
    let sizes = [7 + 3 + 32, 7 + 4 + 32, 5 + 1 + 32];
    let total: usize = sizes.iter().sum();
    let (out, result) = decode(&mut Decoder::new(4096), &block, total);
    assert_eq!((out.len(), result), (3, Ok(())));
    let (out, result) = decode(&mut Decoder::new(4096), &block, total - 1);
    assert_eq!((out.len(), result), (2, Err(DecodeError::ListTooLarge)));
    let (out, result) = decode(&mut Decoder::new(4096), &block, 0);
    assert_eq!((out.len(), result), (0, Err(DecodeError::ListTooLarge)));
}

fn response(status: &str, extra: &[(&str, &str)]) -> Fields {
    let mut list = fields(&[
        (":status", status),
        ("server", "warren/0.1"),
        ("date", "Wed, 25 Nov 2026 05:00:00 GMT"),
        ("content-type", "text/html; charset=utf-8"),
        ("content-length", "1234"),
        ("cache-control", "max-age=3600"),
        ("vary", "accept-encoding"),
    ]);
    list.extend(fields(extra));
    list
}

#[test]
fn encoder_indexes_what_repeats_and_not_what_is_unique() {
    let mut e = Encoder::new();
    let mut d = Decoder::new(4096);
    let first = response("200", &[("etag", "\"abc\""), ("last-modified", "Tue, 24 Nov 2026 10:00:00 GMT")]);
    let block1 = encode(&mut e, &first);
    assert_eq!(decode_ok(&mut d, &block1), first);
    let names: Vec<&[u8]> = e.table.entries.iter().map(Entry::name).collect();
    assert_eq!(names, [&b"vary"[..], b"cache-control", b"content-type", b"server"]);
    // :status 200 is the static table's.
    assert_eq!(block1[0], 0x88);
    let second = response("200", &[("etag", "\"def\""), ("set-cookie", "id=42")]);
    let block2 = encode(&mut e, &second);
    assert_eq!(decode_ok(&mut d, &block2), second);
    assert_eq!(table_of(&d.table), table_of(&e.table));
    // The repeated fields are one octet each; date and content-length
    // a static name index and a Huffman value.
    assert!(block2.len() < block1.len() / 2, "{} then {} octets: {block2:02x?}", block1.len(), block2.len());
    // set-cookie never indexed, by its static name (55).
    let cookie = block2.iter().position(|&b| b == 0x1f).expect("a never-indexed set-cookie");
    assert_eq!(block2[cookie + 1], 55 - 15);
    // A status outside the static table is indexed by name, then whole.
    let third = response("302", &[("location", "/elsewhere")]);
    let block3 = encode(&mut e, &third);
    assert_eq!(block3[0], 0x48);
    assert_eq!(decode_ok(&mut d, &block3), third);
    let block4 = encode(&mut e, &third);
    assert_eq!(block4[0], 0xbe);
    assert_eq!(decode_ok(&mut d, &block4), third);
    assert_eq!(table_of(&d.table), table_of(&e.table));
    for unique in [&b"date"[..], b"content-length", b"etag", b"last-modified", b"location", b"set-cookie"] {
        assert!(e.table.entries.iter().all(|x| x.name() != unique), "{}", String::from_utf8_lossy(unique));
    }
}

#[test]
fn encoder_uses_huffman_when_shorter() {
    let mut e = Encoder::new();
    let mut out = Vec::new();
    e.encode([(&b"x-plain"[..], &b"\x00\x01\xff"[..])], &mut out);
    // Literal name: Huffman ("x-plain" codes shorter), value plain.
    assert_eq!(out[0], 0x40);
    assert_eq!(out[1] & 0x80, 0x80);
    let value_at = 2 + (out[1] & 0x7f) as usize;
    assert_eq!(out[value_at..], [0x03, 0x00, 0x01, 0xff]);
    assert_eq!(decode_ok(&mut Decoder::new(4096), &out), vec![(b"x-plain".to_vec(), vec![0x00, 0x01, 0xff])]);
}

#[test]
fn encoder_signals_the_smallest_size_then_the_last() {
    let mut e = Encoder::new();
    let mut d = Decoder::new(4096);
    let list = response("200", &[]);
    decode_ok(&mut d, &encode(&mut e, &list));
    e.set_max_table_size(100);
    e.set_max_table_size(65536);
    let block = encode(&mut e, &list);
    // 100 (0x3f 0x45), then 4096: the most the encoder uses.
    assert_eq!(block[..5], [0x3f, 0x45, 0x3f, 0xe1, 0x1f]);
    assert_eq!(decode_ok(&mut d, &block), list);
    assert_eq!(table_of(&d.table), table_of(&e.table));
    // A size the table already has needs no update.
    e.set_max_table_size(8192);
    let block = encode(&mut e, &list);
    assert_ne!(block[0] & 0xe0, 0x20);
    assert_eq!(decode_ok(&mut d, &block), list);
}

/// A tiny xorshift: reproducible pseudo-random inputs without a crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, max_len: usize) -> Vec<u8> {
        let len = self.below(max_len + 1);
        (0..len).map(|_| self.next() as u8).collect()
    }
}

const NAMES: [&str; 14] = [
    ":status", "server", "date", "content-type", "content-length", "cache-control", "vary", "etag", "set-cookie",
    "location", "x-frame-options", "accept-ranges", "last-modified", "content-encoding",
];
const VALUES: [&str; 10] = ["200", "404", "302", "warren", "text/html", "gzip", "bytes", "", "no-cache", "accept-encoding"];

fn random_fields(rng: &mut Rng) -> Fields {
    let n = rng.below(12);
    (0..n)
        .map(|_| {
            let name = match rng.below(4) {
                0 => rng.bytes(20),
                _ => NAMES[rng.below(NAMES.len())].as_bytes().to_vec(),
            };
            let value = match rng.below(4) {
                0 => rng.bytes(300),
                1 => (0..rng.below(40)).map(|_| b"abcdefghijklmnopqrstuvwxyz0123456789 -/;="[rng.below(41)]).collect(),
                _ => VALUES[rng.below(VALUES.len())].as_bytes().to_vec(),
            };
            (name, value)
        })
        .collect()
}

#[test]
fn round_trips_over_random_field_lists() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..200 {
        let mut e = Encoder::new();
        let mut d = Decoder::new(4096);
        for _ in 0..20 {
            if rng.below(8) == 0 {
                let size = [0, 1, 64, 256, 4096, 100_000, rng.below(5000)][rng.below(7)];
                e.set_max_table_size(size);
            }
            let list = random_fields(&mut rng);
            let block = encode(&mut e, &list);
            assert_eq!(decode_ok(&mut d, &block), list);
            assert_eq!(table_of(&d.table), table_of(&e.table));
            assert_eq!(d.table.size, e.table.size);
            assert!(e.table.size <= e.table.capacity);
        }
    }
}

#[test]
fn random_blocks_never_panic_and_stay_bounded() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut valid = Vec::new();
    let mut e = Encoder::new();
    for _ in 0..50 {
        valid.push(encode(&mut e, &random_fields(&mut rng)));
    }
    for i in 0..5000 {
        let block = match i % 3 {
            0 => rng.bytes(200),
            // A valid block with a few octets changed or cut.
            _ => {
                let mut b = valid[rng.below(valid.len())].clone();
                for _ in 0..1 + rng.below(3) {
                    if !b.is_empty() {
                        let at = rng.below(b.len());
                        b[at] = rng.next() as u8;
                    }
                }
                b.truncate(rng.below(b.len() + 1));
                b
            }
        };
        let max_list = [0, 100, 512, 4096][rng.below(4)];
        let mut whole = Decoder::new(4096);
        let mut limited = Decoder::new(4096);
        let (all, whole_result) = decode(&mut whole, &block, usize::MAX);
        let (some, limited_result) = decode(&mut limited, &block, max_list);
        // The limit changes only which fields are handed out.
        let handed: usize = some.iter().map(|(n, v)| n.len() + v.len() + 32).sum();
        assert!(handed <= max_list);
        assert_eq!(some[..], all[..some.len()]);
        let total: usize = all.iter().map(|(n, v)| n.len() + v.len() + 32).sum();
        match &whole_result {
            Ok(()) if total > max_list => assert_eq!(limited_result, Err(DecodeError::ListTooLarge)),
            other => assert_eq!(&limited_result, other),
        }
        assert_eq!(table_of(&whole.table), table_of(&limited.table));
        assert!(whole.table.size <= whole.table.capacity && whole.table.capacity <= 4096);
    }
}

#[test]
fn static_lookup_by_name_length_finds_what_a_scan_of_the_table_finds() {
    // The first entry of the name, and the entry of name and value, as a
    // scan of all 61 entries in order finds them.
    let scan = |name: &[u8], value: &[u8]| {
        let first = STATIC_TABLE.iter().position(|&(n, _)| n == name).map(|i| i + 1);
        let whole = STATIC_TABLE.iter().position(|&(n, v)| n == name && v == value).map(|i| i + 1);
        (whole, first)
    };
    let encoder = Encoder::new();
    let mut asked: Vec<(&[u8], &[u8])> = STATIC_TABLE.to_vec();
    asked.extend([(&b":status"[..], &b"206"[..]), (b":status", b"999"), (b"content-type", b"text/html"), (b"x-unknown", b""), (b"", b""), (b"a-name-longer-than-any-in-the-static-table", b"x")]);
    for (name, value) in asked {
        let found = encoder.find(name, value, Indexing::Index);
        assert_eq!((found.whole, found.name), scan(name, value), "{}: {}", String::from_utf8_lossy(name), String::from_utf8_lossy(value));
    }
}
