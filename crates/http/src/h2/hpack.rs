//! HPACK (RFC 7541): the header compression of HTTP/2.
//!
//! [`Decoder`] reads a client's header blocks with the connection's
//! dynamic table; it counts the decoded list as it goes (name + value +
//! 32 per field, RFC 9113 §6.5.2) so that a small block that expands
//! into a huge list (an "HPACK bomb") is cut off without being built.
//! [`Encoder`] writes our response header blocks, indexing the fields
//! that repeat from response to response.
//!
//! Both sides share the static table (Appendix A) and [`DynamicTable`]
//! (§2.3, §4), the integer (§5.1) and string (§5.2) primitives, and the
//! Huffman code of [`super::huffman`]. The decoder trusts nothing: every
//! integer is bounded to a u32 and a few octets, every length is checked
//! against what is left of the block before anything is allocated, and
//! the dynamic table holds at most its size in octets (each entry counts
//! 32 more, so it also holds at most size / 32 entries).

use std::collections::VecDeque;

use super::huffman;

/// Why a header block could not be decoded. Every variant but
/// `ListTooLarge` is a COMPRESSION_ERROR for the whole connection (the
/// dynamic table can no longer be trusted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Truncated integer or string, integer overflow, bad Huffman code or
    /// padding, index out of range, table size update above the limit or
    /// not at the start of the block.
    Invalid(&'static str),
    /// The decoded list exceeded the limit: the block was still decoded to
    /// the end (the table stays in step with the client's), its fields
    /// dropped. The request gets 431; the connection lives on.
    ListTooLarge,
}

/// What an entry costs beyond its name and value (§4.1), in the table and
/// in the header list size alike.
const ENTRY_OVERHEAD: usize = 32;

/// The dynamic table size both sides start with (RFC 9113 §6.5.2), and the
/// most our encoder uses whatever the client allows: a bigger table saves
/// little on responses and costs memory on every connection.
const ENCODER_TABLE_SIZE: usize = 4096;

/// Continuation octets an integer may take after its prefix: 5 carry 35
/// bits, more than a u32 needs; a sixth could only be an overlong encoding.
const MAX_INTEGER_CONTINUATIONS: usize = 5;

/// The static table (Appendix A); index 1 is the first entry.
#[rustfmt::skip]
const STATIC_TABLE: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// The static table's entries by the length of their name, a bit for each
/// (bit 0: the first entry): the encoder looks a name up among these
/// alone, not through all 61, for every field of every response.
const STATIC_BY_NAME_LEN: [u64; 28] = {
    let mut by_len = [0u64; 28];
    let mut i = 0;
    while i < STATIC_TABLE.len() {
        by_len[STATIC_TABLE[i].0.len()] |= 1 << i;
        i += 1;
    }
    by_len
};

/// One dynamic table entry: name and value in one allocation.
struct Entry {
    bytes: Box<[u8]>,
    name_len: usize,
}

impl Entry {
    fn new(name: &[u8], value: &[u8]) -> Entry {
        let mut bytes = Vec::with_capacity(name.len() + value.len());
        bytes.extend_from_slice(name);
        bytes.extend_from_slice(value);
        Entry { bytes: bytes.into_boxed_slice(), name_len: name.len() }
    }

    fn name(&self) -> &[u8] {
        &self.bytes[..self.name_len]
    }

    fn value(&self) -> &[u8] {
        &self.bytes[self.name_len..]
    }

    fn size(&self) -> usize {
        self.bytes.len() + ENTRY_OVERHEAD
    }
}

/// The dynamic table (§2.3.2, §4): newest entry first, its size (§4.1)
/// never above its capacity (the current maximum size).
struct DynamicTable {
    entries: VecDeque<Entry>,
    size: usize,
    capacity: usize,
}

impl DynamicTable {
    fn new(capacity: usize) -> DynamicTable {
        DynamicTable { entries: VecDeque::new(), size: 0, capacity }
    }

    /// The entry at 0-based position `i`, 0 the newest.
    fn get(&self, i: usize) -> Option<&Entry> {
        self.entries.get(i)
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.evict_to(capacity);
    }

    fn evict_to(&mut self, size: usize) {
        while self.size > size {
            match self.entries.pop_back() {
                Some(e) => self.size -= e.size(),
                None => break,
            }
        }
    }

    /// Adds an entry, evicting the oldest to make room (§4.4); an entry
    /// larger than the table empties it and is not added. The caller has
    /// copied name and value out of the table when they came from it.
    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        if size > self.capacity {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.capacity - size);
        self.entries.push_front(Entry::new(name, value));
        self.size += size;
    }
}

/// Reads an integer with an N-bit prefix (§5.1) at `*pos`; the bits of the
/// first octet above the prefix are the caller's.
fn read_integer(block: &[u8], pos: &mut usize, prefix_bits: u32) -> Result<usize, DecodeError> {
    let max_prefix = (1u8 << prefix_bits) - 1;
    let Some(&first) = block.get(*pos) else {
        return Err(DecodeError::Invalid("truncated integer"));
    };
    *pos += 1;
    let mut value = u64::from(first & max_prefix);
    if value < u64::from(max_prefix) {
        return Ok(value as usize);
    }
    for i in 0..MAX_INTEGER_CONTINUATIONS {
        let Some(&octet) = block.get(*pos) else {
            return Err(DecodeError::Invalid("truncated integer"));
        };
        *pos += 1;
        value += u64::from(octet & 0x7f) << (7 * i);
        if value > u64::from(u32::MAX) {
            return Err(DecodeError::Invalid("integer overflow"));
        }
        if octet & 0x80 == 0 {
            return Ok(value as usize);
        }
    }
    Err(DecodeError::Invalid("integer too long"))
}

/// Appends `value` with an N-bit prefix, `flags` being the first octet's
/// bits above the prefix.
fn write_integer(value: usize, prefix_bits: u32, flags: u8, out: &mut Vec<u8>) {
    let max_prefix = (1usize << prefix_bits) - 1;
    if value < max_prefix {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max_prefix as u8);
    let mut rest = value - max_prefix;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// Reads a string literal (§5.2) at `*pos`: a slice of the block, or for
/// a Huffman-coded one its decoding in `scratch`.
fn read_string<'a>(block: &'a [u8], pos: &mut usize, scratch: &'a mut Vec<u8>) -> Result<&'a [u8], DecodeError> {
    let huffman = block.get(*pos).is_some_and(|&b| b & 0x80 != 0);
    let len = read_integer(block, pos, 7)?;
    // Before anything is allocated: the length is bounded by the block.
    if len > block.len() - *pos {
        return Err(DecodeError::Invalid("truncated string"));
    }
    let raw = &block[*pos..*pos + len];
    *pos += len;
    if !huffman {
        return Ok(raw);
    }
    scratch.clear();
    huffman::decode(raw, scratch).map_err(|e| match e {
        huffman::HuffmanError::Eos => DecodeError::Invalid("EOS in a Huffman string"),
        huffman::HuffmanError::Padding => DecodeError::Invalid("bad Huffman padding"),
    })?;
    Ok(scratch)
}

/// Appends a string literal, Huffman-coded when that is shorter.
fn write_string(data: &[u8], out: &mut Vec<u8>) {
    let huffman_len = huffman::encoded_len(data);
    if huffman_len < data.len() {
        write_integer(huffman_len, 7, 0x80, out);
        huffman::encode(data, out);
    } else {
        write_integer(data.len(), 7, 0, out);
        out.extend_from_slice(data);
    }
}

/// The field at a 1-based index of the static then dynamic table (§2.3.3).
fn field_at(table: &DynamicTable, index: usize) -> Result<(&[u8], &[u8]), DecodeError> {
    match index {
        0 => Err(DecodeError::Invalid("index 0")),
        1..=61 => Ok(STATIC_TABLE[index - 1]),
        _ => match table.get(index - 62) {
            Some(e) => Ok((e.name(), e.value())),
            None => Err(DecodeError::Invalid("index out of range")),
        },
    }
}

/// The decoding side of a connection: its dynamic table.
///
/// The table starts at `max_table_size`, as the RFC's examples assume. A
/// client may send header blocks before it has our SETTINGS, with the
/// protocol's initial 4096: announcing more is harmless (our table keeps
/// older entries the client no longer refers to), announcing less leaves
/// a window where the client may refer to an entry we have evicted (a
/// COMPRESSION_ERROR for a client that did nothing wrong).
pub struct Decoder {
    table: DynamicTable,
    /// What we announced: no size update may go above it.
    max_table_size: usize,
    name_scratch: Vec<u8>,
    value_scratch: Vec<u8>,
}

/// Size updates allowed at the start of a block: the smallest size since
/// the last block and the final one (§4.2).
const MAX_SIZE_UPDATES: usize = 2;

/// What the scratch buffers may keep between blocks; a larger one (a
/// client's long Huffman string) is given back.
const SCRATCH_KEPT: usize = 16 * 1024;

impl Decoder {
    /// `max_table_size`: SETTINGS_HEADER_TABLE_SIZE as we announced it.
    pub fn new(max_table_size: usize) -> Decoder {
        Decoder {
            table: DynamicTable::new(max_table_size),
            max_table_size,
            name_scratch: Vec::new(),
            value_scratch: Vec::new(),
        }
    }

    /// Decodes one whole header block (HEADERS and its CONTINUATIONs
    /// joined), giving each field to `field` in order. `max_list` bounds
    /// the decoded size (names + values + 32 per field).
    ///
    /// Fields are handed out as they are decoded: on an error, those
    /// already given belong to a block that is refused.
    pub fn decode(&mut self, block: &[u8], max_list: usize, field: &mut dyn FnMut(&[u8], &[u8])) -> Result<(), DecodeError> {
        let result = self.decode_block(block, max_list, field);
        if self.name_scratch.capacity() > SCRATCH_KEPT {
            self.name_scratch = Vec::new();
        }
        if self.value_scratch.capacity() > SCRATCH_KEPT {
            self.value_scratch = Vec::new();
        }
        result
    }

    fn decode_block(&mut self, block: &[u8], max_list: usize, field: &mut dyn FnMut(&[u8], &[u8])) -> Result<(), DecodeError> {
        let Decoder { table, max_table_size, name_scratch, value_scratch } = self;
        let mut list_size = 0usize;
        // Counted as each field is produced; once over, fields are no
        // longer handed out but the block is still read to its end.
        let mut deliver = |name: &[u8], value: &[u8]| {
            list_size = list_size.saturating_add(name.len() + value.len() + ENTRY_OVERHEAD);
            if list_size <= max_list {
                field(name, value);
            }
        };
        let mut pos = 0;
        let mut size_updates = 0;
        let mut at_start = true;
        while let Some(&first) = block.get(pos) {
            if first & 0x80 != 0 {
                // Indexed field (§6.1).
                let index = read_integer(block, &mut pos, 7)?;
                let (name, value) = field_at(table, index)?;
                deliver(name, value);
            } else if first & 0xe0 == 0x20 {
                // Dynamic table size update (§6.3).
                if !at_start {
                    return Err(DecodeError::Invalid("table size update after a field"));
                }
                size_updates += 1;
                if size_updates > MAX_SIZE_UPDATES {
                    return Err(DecodeError::Invalid("more than two table size updates"));
                }
                let size = read_integer(block, &mut pos, 5)?;
                if size > *max_table_size {
                    return Err(DecodeError::Invalid("table size update above the limit"));
                }
                table.set_capacity(size);
                continue;
            } else {
                // A literal (§6.2): with incremental indexing (01, 6-bit
                // index), without indexing (0000) or never indexed (0001),
                // the last two with a 4-bit index.
                let indexing = first & 0xc0 == 0x40;
                let index = read_integer(block, &mut pos, if indexing { 6 } else { 4 })?;
                if index == 0 {
                    let name = read_string(block, &mut pos, name_scratch)?;
                    let value = read_string(block, &mut pos, value_scratch)?;
                    deliver(name, value);
                    if indexing {
                        table.insert(name, value);
                    }
                } else if indexing {
                    // The name is copied out of the table first: the
                    // insertion may evict the entry it comes from.
                    name_scratch.clear();
                    name_scratch.extend_from_slice(field_at(table, index)?.0);
                    let value = read_string(block, &mut pos, value_scratch)?;
                    deliver(name_scratch, value);
                    table.insert(name_scratch, value);
                } else {
                    let name = field_at(table, index)?.0;
                    let value = read_string(block, &mut pos, value_scratch)?;
                    deliver(name, value);
                }
            }
            at_start = false;
        }
        if list_size > max_list {
            return Err(DecodeError::ListTooLarge);
        }
        Ok(())
    }
}

/// How the encoder writes a field that the tables do not hold whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Indexing {
    /// With incremental indexing: the field is likely to come again.
    Index,
    /// Without indexing: a value unique to this response, that would only
    /// push the fields that repeat out of the table.
    Skip,
    /// Never indexed (§7.1.3): a secret, that an intermediary must not
    /// index either.
    Never,
}

fn indexing_for(name: &[u8]) -> Indexing {
    match name {
        b"set-cookie" | b"authorization" | b"proxy-authorization" | b"cookie" => Indexing::Never,
        b"date" | b"content-length" | b"etag" | b"last-modified" | b"location" | b"content-range" | b"age"
        | b"expires" => Indexing::Skip,
        _ => Indexing::Index,
    }
}

/// Where the tables hold a field: its whole index, or its name's.
#[derive(Default)]
struct Found {
    whole: Option<usize>,
    name: Option<usize>,
}

/// The encoding side of a connection.
pub struct Encoder {
    table: DynamicTable,
    /// The capacity to signal at the start of the next block, and the
    /// smallest since the last block (§4.2), when set_max_table_size was
    /// called since.
    pending_update: Option<PendingUpdate>,
}

#[derive(Clone, Copy)]
struct PendingUpdate {
    smallest: usize,
    last: usize,
}

impl Encoder {
    pub fn new() -> Encoder {
        Encoder { table: DynamicTable::new(ENCODER_TABLE_SIZE), pending_update: None }
    }

    /// The client's SETTINGS_HEADER_TABLE_SIZE: the table shrinks to it,
    /// with a size update at the start of the next block.
    pub fn set_max_table_size(&mut self, size: usize) {
        let capacity = size.min(ENCODER_TABLE_SIZE);
        self.pending_update = Some(match self.pending_update {
            Some(p) => PendingUpdate { smallest: p.smallest.min(capacity), last: capacity },
            None => PendingUpdate { smallest: capacity, last: capacity },
        });
    }

    /// Appends the block for `fields` (lower-case names, `:status` first)
    /// to `out`.
    pub fn encode<'a>(&mut self, fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>, out: &mut Vec<u8>) {
        if let Some(update) = self.pending_update.take() {
            // The decoder must see the smallest size (it may have evicted
            // down to it), then the one we settle on.
            if update.smallest < self.table.capacity && update.smallest < update.last {
                write_integer(update.smallest, 5, 0x20, out);
                self.table.set_capacity(update.smallest);
            }
            if update.last != self.table.capacity {
                write_integer(update.last, 5, 0x20, out);
                self.table.set_capacity(update.last);
            }
        }
        for (name, value) in fields {
            self.encode_field(name, value, out);
        }
    }

    fn encode_field(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        let indexing = indexing_for(name);
        let found = self.find(name, value, indexing);
        if let Some(index) = found.whole {
            write_integer(index, 7, 0x80, out);
            return;
        }
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        // An entry over half the table would evict most of what repeats
        // for the sake of one field.
        let indexing = match indexing {
            Indexing::Index if size > self.table.capacity / 2 => Indexing::Skip,
            other => other,
        };
        let (prefix_bits, flags) = match indexing {
            Indexing::Index => (6, 0x40),
            Indexing::Skip => (4, 0x00),
            Indexing::Never => (4, 0x10),
        };
        match found.name {
            Some(index) => write_integer(index, prefix_bits, flags, out),
            None => {
                out.push(flags);
                write_string(name, out);
            }
        }
        write_string(value, out);
        if indexing == Indexing::Index {
            self.table.insert(name, value);
        }
    }

    /// Looks `name: value` up in the static then the dynamic table. A
    /// field never indexed is not looked for whole: it is never inserted,
    /// and the static table holds none with a value.
    fn find(&self, name: &[u8], value: &[u8], indexing: Indexing) -> Found {
        let mut found = Found::default();
        // Only the entries whose name is as long, in the table's order.
        let mut candidates = STATIC_BY_NAME_LEN.get(name.len()).copied().unwrap_or(0);
        while candidates != 0 {
            let i = candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            let (n, v) = STATIC_TABLE[i];
            if n == name {
                found.name.get_or_insert(i + 1);
                if v == value {
                    found.whole = Some(i + 1);
                    return found;
                }
            }
        }
        let look_for_whole = indexing == Indexing::Index;
        for i in 0..self.table.len() {
            let Some(e) = self.table.get(i) else { break };
            if e.name() == name {
                if look_for_whole && e.value() == value {
                    found.whole = Some(62 + i);
                    return found;
                }
                found.name.get_or_insert(62 + i);
            }
        }
        found
    }
}

impl Default for Encoder {
    fn default() -> Encoder {
        Encoder::new()
    }
}

#[cfg(test)]
mod tests;
