//! The static Huffman code of HPACK (RFC 7541 Appendix B).
//!
//! [`CODES`] is the appendix's table as data: for each octet (and EOS,
//! symbol 256) its code, right-aligned, and its length in bits. Encoding
//! reads it directly. Decoding walks a 4-bit-at-a-time state machine
//! derived from it once ([`Machine`], behind a `OnceLock`): a state is an
//! inner node of the code tree, so a string is decoded in two table reads
//! per octet, and what may end a string (a padding of at most 7 one bits,
//! RFC 7541 §5.2) is a property of the state it ends in.

use std::sync::OnceLock;

/// `(code, length in bits)` for octets 0..=255, then EOS.
#[rustfmt::skip]
pub(crate) const CODES: [(u32, u8); 257] = [
    // 0..=31: control characters
    (0x1ff8, 13), (0x7fffd8, 23), (0xfffffe2, 28), (0xfffffe3, 28),
    (0xfffffe4, 28), (0xfffffe5, 28), (0xfffffe6, 28), (0xfffffe7, 28),
    (0xfffffe8, 28), (0xffffea, 24), (0x3ffffffc, 30), (0xfffffe9, 28),
    (0xfffffea, 28), (0x3ffffffd, 30), (0xfffffeb, 28), (0xfffffec, 28),
    (0xfffffed, 28), (0xfffffee, 28), (0xfffffef, 28), (0xffffff0, 28),
    (0xffffff1, 28), (0xffffff2, 28), (0x3ffffffe, 30), (0xffffff3, 28),
    (0xffffff4, 28), (0xffffff5, 28), (0xffffff6, 28), (0xffffff7, 28),
    (0xffffff8, 28), (0xffffff9, 28), (0xffffffa, 28), (0xffffffb, 28),
    // 32..=63: ' ' ! " # $ % & ' ( ) * + , - . / 0-9 : ; < = > ?
    (0x14, 6), (0x3f8, 10), (0x3f9, 10), (0xffa, 12),
    (0x1ff9, 13), (0x15, 6), (0xf8, 8), (0x7fa, 11),
    (0x3fa, 10), (0x3fb, 10), (0xf9, 8), (0x7fb, 11),
    (0xfa, 8), (0x16, 6), (0x17, 6), (0x18, 6),
    (0x0, 5), (0x1, 5), (0x2, 5), (0x19, 6),
    (0x1a, 6), (0x1b, 6), (0x1c, 6), (0x1d, 6),
    (0x1e, 6), (0x1f, 6), (0x5c, 7), (0xfb, 8),
    (0x7ffc, 15), (0x20, 6), (0xffb, 12), (0x3fc, 10),
    // 64..=95: @ A-Z [ \ ] ^ _
    (0x1ffa, 13), (0x21, 6), (0x5d, 7), (0x5e, 7),
    (0x5f, 7), (0x60, 7), (0x61, 7), (0x62, 7),
    (0x63, 7), (0x64, 7), (0x65, 7), (0x66, 7),
    (0x67, 7), (0x68, 7), (0x69, 7), (0x6a, 7),
    (0x6b, 7), (0x6c, 7), (0x6d, 7), (0x6e, 7),
    (0x6f, 7), (0x70, 7), (0x71, 7), (0x72, 7),
    (0xfc, 8), (0x73, 7), (0xfd, 8), (0x1ffb, 13),
    (0x7fff0, 19), (0x1ffc, 13), (0x3ffc, 14), (0x22, 6),
    // 96..=127: ` a-z { | } ~ DEL
    (0x7ffd, 15), (0x3, 5), (0x23, 6), (0x4, 5),
    (0x24, 6), (0x5, 5), (0x25, 6), (0x26, 6),
    (0x27, 6), (0x6, 5), (0x74, 7), (0x75, 7),
    (0x28, 6), (0x29, 6), (0x2a, 6), (0x7, 5),
    (0x2b, 6), (0x76, 7), (0x2c, 6), (0x8, 5),
    (0x9, 5), (0x2d, 6), (0x77, 7), (0x78, 7),
    (0x79, 7), (0x7a, 7), (0x7b, 7), (0x7ffe, 15),
    (0x7fc, 11), (0x3ffd, 14), (0x1ffd, 13), (0xffffffc, 28),
    // 128..=159
    (0xfffe6, 20), (0x3fffd2, 22), (0xfffe7, 20), (0xfffe8, 20),
    (0x3fffd3, 22), (0x3fffd4, 22), (0x3fffd5, 22), (0x7fffd9, 23),
    (0x3fffd6, 22), (0x7fffda, 23), (0x7fffdb, 23), (0x7fffdc, 23),
    (0x7fffdd, 23), (0x7fffde, 23), (0xffffeb, 24), (0x7fffdf, 23),
    (0xffffec, 24), (0xffffed, 24), (0x3fffd7, 22), (0x7fffe0, 23),
    (0xffffee, 24), (0x7fffe1, 23), (0x7fffe2, 23), (0x7fffe3, 23),
    (0x7fffe4, 23), (0x1fffdc, 21), (0x3fffd8, 22), (0x7fffe5, 23),
    (0x3fffd9, 22), (0x7fffe6, 23), (0x7fffe7, 23), (0xffffef, 24),
    // 160..=191
    (0x3fffda, 22), (0x1fffdd, 21), (0xfffe9, 20), (0x3fffdb, 22),
    (0x3fffdc, 22), (0x7fffe8, 23), (0x7fffe9, 23), (0x1fffde, 21),
    (0x7fffea, 23), (0x3fffdd, 22), (0x3fffde, 22), (0xfffff0, 24),
    (0x1fffdf, 21), (0x3fffdf, 22), (0x7fffeb, 23), (0x7fffec, 23),
    (0x1fffe0, 21), (0x1fffe1, 21), (0x3fffe0, 22), (0x1fffe2, 21),
    (0x7fffed, 23), (0x3fffe1, 22), (0x7fffee, 23), (0x7fffef, 23),
    (0xfffea, 20), (0x3fffe2, 22), (0x3fffe3, 22), (0x3fffe4, 22),
    (0x7ffff0, 23), (0x3fffe5, 22), (0x3fffe6, 22), (0x7ffff1, 23),
    // 192..=223
    (0x3ffffe0, 26), (0x3ffffe1, 26), (0xfffeb, 20), (0x7fff1, 19),
    (0x3fffe7, 22), (0x7ffff2, 23), (0x3fffe8, 22), (0x1ffffec, 25),
    (0x3ffffe2, 26), (0x3ffffe3, 26), (0x3ffffe4, 26), (0x7ffffde, 27),
    (0x7ffffdf, 27), (0x3ffffe5, 26), (0xfffff1, 24), (0x1ffffed, 25),
    (0x7fff2, 19), (0x1fffe3, 21), (0x3ffffe6, 26), (0x7ffffe0, 27),
    (0x7ffffe1, 27), (0x3ffffe7, 26), (0x7ffffe2, 27), (0xfffff2, 24),
    (0x1fffe4, 21), (0x1fffe5, 21), (0x3ffffe8, 26), (0x3ffffe9, 26),
    (0xffffffd, 28), (0x7ffffe3, 27), (0x7ffffe4, 27), (0x7ffffe5, 27),
    // 224..=255
    (0xfffec, 20), (0xfffff3, 24), (0xfffed, 20), (0x1fffe6, 21),
    (0x3fffe9, 22), (0x1fffe7, 21), (0x1fffe8, 21), (0x7ffff3, 23),
    (0x3fffea, 22), (0x3fffeb, 22), (0x1ffffee, 25), (0x1ffffef, 25),
    (0xfffff4, 24), (0xfffff5, 24), (0x3ffffea, 26), (0x7ffff4, 23),
    (0x3ffffeb, 26), (0x7ffffe6, 27), (0x3ffffec, 26), (0x3ffffed, 26),
    (0x7ffffe7, 27), (0x7ffffe8, 27), (0x7ffffe9, 27), (0x7ffffea, 27),
    (0x7ffffeb, 27), (0xffffffe, 28), (0x7ffffec, 27), (0x7ffffed, 27),
    (0x7ffffee, 27), (0x7ffffef, 27), (0x7fffff0, 27), (0x3ffffee, 26),
    // 256: EOS
    (0x3fffffff, 30),
];

const EOS: usize = 256;

/// Why a Huffman string was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HuffmanError {
    /// The EOS code inside the string (RFC 7541 §5.2: an error).
    Eos,
    /// The string ends in the middle of a code that is not a padding of at
    /// most 7 one bits.
    Padding,
}

/// How many octets `data` takes Huffman-encoded.
pub(crate) fn encoded_len(data: &[u8]) -> usize {
    let bits: usize = data.iter().map(|&b| CODES[b as usize].1 as usize).sum();
    bits.div_ceil(8)
}

/// Appends `data` Huffman-encoded to `out`, padded with the high bits of
/// EOS (ones).
pub(crate) fn encode(data: &[u8], out: &mut Vec<u8>) {
    // Up to 7 bits wait in `pending` between symbols, and a code is at most
    // 30 bits: 37 bits at most, well inside a u64.
    let mut pending: u64 = 0;
    let mut pending_bits: u32 = 0;
    for &b in data {
        let (code, len) = CODES[b as usize];
        pending = (pending << len) | u64::from(code);
        pending_bits += u32::from(len);
        while pending_bits >= 8 {
            pending_bits -= 8;
            out.push((pending >> pending_bits) as u8);
        }
        pending &= (1 << pending_bits) - 1;
    }
    if pending_bits > 0 {
        let pad = 8 - pending_bits;
        out.push(((pending << pad) | ((1 << pad) - 1)) as u8);
    }
}

/// Decodes `data`, appending the octets to `out`.
pub(crate) fn decode(data: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    let machine = machine();
    let mut state = 0usize;
    for &byte in data {
        for nibble in [byte >> 4, byte & 0x0f] {
            let step = machine.steps[state][nibble as usize];
            if step.flags & FAILS != 0 {
                return Err(HuffmanError::Eos);
            }
            if step.flags & EMITS != 0 {
                out.push(step.symbol);
            }
            state = step.next as usize;
        }
    }
    if machine.may_end[state] {
        Ok(())
    } else {
        Err(HuffmanError::Padding)
    }
}

/// Flags of a [`Step`].
const EMITS: u8 = 1;
const FAILS: u8 = 2;

/// What four more bits do from one state: the state they lead to, and the
/// symbol they complete, if any. No code is shorter than 5 bits, so four
/// bits complete at most one.
#[derive(Clone, Copy, Default)]
struct Step {
    next: u8,
    symbol: u8,
    flags: u8,
}

/// The decoding automaton. States are the code tree's inner nodes (257
/// leaves, so exactly 256 of them; 0 is the root, where every symbol
/// starts).
struct Machine {
    steps: [[Step; 16]; 256],
    /// Whether a string may end in this state: at the root, or after a
    /// padding, a path of at most 7 one bits from it (EOS is the only code
    /// of all ones, and it is 30 bits long, so such a path is always an
    /// inner node).
    may_end: [bool; 256],
}

fn machine() -> &'static Machine {
    static MACHINE: OnceLock<Machine> = OnceLock::new();
    MACHINE.get_or_init(build_machine)
}

/// A child in the code tree: an inner node or a symbol.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Child {
    Missing,
    Inner(u8),
    Leaf(u16),
}

/// The code tree: for each inner node its two children (by bit), built
/// from [`CODES`].
fn build_tree() -> Vec<[Child; 2]> {
    let mut tree: Vec<[Child; 2]> = vec![[Child::Missing; 2]];
    for (symbol, &(code, len)) in CODES.iter().enumerate() {
        let mut node = 0usize;
        for depth in (0..len).rev() {
            let bit = ((code >> depth) & 1) as usize;
            if depth == 0 {
                tree[node][bit] = Child::Leaf(symbol as u16);
            } else {
                node = match tree[node][bit] {
                    Child::Inner(n) => n as usize,
                    _ => {
                        // CODES is a complete prefix code of 257 symbols,
                        // so this makes exactly 255 more nodes (checked by
                        // the tests): the id fits in a u8.
                        tree.push([Child::Missing; 2]);
                        let id = tree.len() - 1;
                        tree[node][bit] = Child::Inner(id as u8);
                        id
                    }
                };
            }
        }
    }
    tree
}

fn build_machine() -> Machine {
    let tree = build_tree();
    let mut machine = Machine { steps: [[Step::default(); 16]; 256], may_end: [false; 256] };
    // The all-ones path from the root, up to 7 bits deep.
    let mut node = 0usize;
    machine.may_end[0] = true;
    for _ in 0..7 {
        if let Child::Inner(n) = tree[node][1] {
            node = n as usize;
            machine.may_end[node] = true;
        }
    }
    for (state, steps) in machine.steps.iter_mut().enumerate().take(tree.len()) {
        for (nibble, step) in steps.iter_mut().enumerate() {
            let mut node = state;
            for shift in (0..4).rev() {
                match tree[node][(nibble >> shift) & 1] {
                    Child::Inner(n) => node = n as usize,
                    Child::Leaf(symbol) if symbol as usize == EOS => {
                        step.flags = FAILS;
                        break;
                    }
                    Child::Leaf(symbol) => {
                        step.flags |= EMITS;
                        step.symbol = symbol as u8;
                        node = 0;
                    }
                    // Not reached with a complete code; refusing is the
                    // safe reading should it ever be.
                    Child::Missing => {
                        step.flags = FAILS;
                        break;
                    }
                }
            }
            step.next = node as u8;
        }
    }
    machine
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(data: &[u8]) -> Result<Vec<u8>, HuffmanError> {
        let mut out = Vec::new();
        decode(data, &mut out).map(|()| out)
    }

    fn encoded(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(data, &mut out);
        assert_eq!(out.len(), encoded_len(data));
        out
    }

    /// The table is a canonical code (RFC 7541's is): sorted by length
    /// then symbol, each code is the previous plus one, shifted left by
    /// the growth in length. A mistyped code or length breaks this.
    #[test]
    fn the_table_is_the_canonical_code_of_its_lengths() {
        let mut order: Vec<usize> = (0..257).collect();
        order.sort_by_key(|&s| (CODES[s].1, s));
        let mut next: u64 = 0;
        let mut last_len = CODES[order[0]].1;
        for &s in &order {
            let (code, len) = CODES[s];
            next <<= len - last_len;
            last_len = len;
            assert_eq!(u64::from(code), next, "symbol {s}");
            next += 1;
        }
        // Complete: the last code (EOS) is all ones.
        assert_eq!(next, 1 << 30);
        assert_eq!(CODES[EOS], (0x3fff_ffff, 30));
    }

    #[test]
    fn the_tree_is_complete() {
        let tree = build_tree();
        assert_eq!(tree.len(), 256);
        assert!(tree.iter().flatten().all(|c| *c != Child::Missing));
    }

    #[test]
    fn rfc_examples() {
        // RFC 7541 C.4.1 and C.6.1.
        let cases: [(&[u8], &str); 4] = [
            (b"www.example.com", "f1e3c2e5f23a6ba0ab90f4ff"),
            (b"no-cache", "a8eb10649cbf"),
            (b"custom-key", "25a849e95ba97d7f"),
            (b"Mon, 21 Oct 2013 20:13:21 GMT", "d07abe941054d444a8200595040b8166e082a62d1bff"),
        ];
        for (text, hex) in cases {
            let bytes: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
            assert_eq!(encoded(text), bytes);
            assert_eq!(decoded(&bytes).unwrap(), text);
        }
    }

    #[test]
    fn every_octet_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decoded(&encoded(&all)).unwrap(), all);
        for b in 0..=255u8 {
            let one = [b; 3];
            assert_eq!(decoded(&encoded(&one)).unwrap(), one);
        }
        assert_eq!(decoded(b"").unwrap(), b"");
    }

    #[test]
    fn padding_must_be_short_and_all_ones() {
        // 'a' is 00011: three bits of padding.
        assert_eq!(decoded(&[0b0001_1111]).unwrap(), b"a");
        assert_eq!(decoded(&[0b0001_1011]), Err(HuffmanError::Padding));
        assert_eq!(decoded(&[0b0001_1110]), Err(HuffmanError::Padding));
        // A whole octet of ones is 8 bits of padding.
        assert_eq!(decoded(&[0xff]), Err(HuffmanError::Padding));
        assert_eq!(decoded(&[0b0001_1111, 0xff]), Err(HuffmanError::Padding));
        // Zero bits are never a padding.
        assert_eq!(decoded(&[0x00]), Err(HuffmanError::Padding));
    }

    #[test]
    fn eos_is_refused() {
        // EOS (30 ones) then two bits of padding.
        assert_eq!(decoded(&[0xff, 0xff, 0xff, 0xff]), Err(HuffmanError::Eos));
        // 'a', then EOS.
        let mut with_eos = vec![0b0001_1111, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(decoded(&with_eos), Err(HuffmanError::Eos));
        with_eos.extend(encoded(b"abc"));
        assert_eq!(decoded(&with_eos), Err(HuffmanError::Eos));
    }
}
