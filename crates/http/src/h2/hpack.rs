//! HPACK (RFC 7541): the header compression of HTTP/2.
//!
//! [`Decoder`] reads a client's header blocks with the connection's
//! dynamic table; it counts the decoded list as it goes (name + value +
//! 32 per field, RFC 9113 §6.5.2) so that a small block that expands
//! into a huge list (an "HPACK bomb") is cut off without being built.
//! [`Encoder`] writes our response header blocks, indexing the fields
//! that repeat from response to response.

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

/// The decoding side of a connection: its dynamic table.
pub struct Decoder {}

impl Decoder {
    /// `max_table_size`: SETTINGS_HEADER_TABLE_SIZE as we announced it.
    pub fn new(max_table_size: usize) -> Decoder {
        let _ = max_table_size;
        todo!()
    }

    /// Decodes one whole header block (HEADERS and its CONTINUATIONs
    /// joined), giving each field to `field` in order. `max_list` bounds
    /// the decoded size (names + values + 32 per field).
    pub fn decode(&mut self, block: &[u8], max_list: usize, field: &mut dyn FnMut(&[u8], &[u8])) -> Result<(), DecodeError> {
        let _ = (block, max_list, field);
        todo!()
    }
}

/// The encoding side of a connection.
pub struct Encoder {}

impl Encoder {
    pub fn new() -> Encoder {
        todo!()
    }

    /// The client's SETTINGS_HEADER_TABLE_SIZE: the table shrinks to it,
    /// with a size update at the start of the next block.
    pub fn set_max_table_size(&mut self, size: usize) {
        let _ = size;
        todo!()
    }

    /// Appends the block for `fields` (lower-case names, `:status` first)
    /// to `out`.
    pub fn encode<'a>(&mut self, fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>, out: &mut Vec<u8>) {
        let _ = (fields, out);
        todo!()
    }
}

impl Default for Encoder {
    fn default() -> Encoder {
        Encoder::new()
    }
}
