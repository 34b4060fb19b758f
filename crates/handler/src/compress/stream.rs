//! Encoders over a body: a whole one at once ([`compress_all`]), or one
//! that arrives in pieces ([`StreamEncoder`], [`Encoded`]), each piece
//! flushed through the encoder so that what an application flushes reaches
//! the client then, not when the encoder's buffer fills.

use std::io::{self, Write};

use super::negotiate::Coding;
use super::Levels;
use crate::BodySource;

/// Bytes the brotli encoder buffers before writing to its output.
const BROTLI_BUFFER: usize = 4096;

enum Inner {
    Gzip(Box<flate2::write::GzEncoder<Vec<u8>>>),
    Brotli(Box<brotli::CompressorWriter<Vec<u8>>>),
}

/// A gzip or brotli encoder fed piece by piece.
pub struct StreamEncoder {
    inner: Option<Inner>,
}

impl StreamEncoder {
    pub fn new(coding: Coding, levels: Levels) -> StreamEncoder {
        let inner = match coding {
            Coding::Gzip => Inner::Gzip(Box::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(levels.gzip)))),
            Coding::Brotli => Inner::Brotli(Box::new(brotli::CompressorWriter::new(Vec::new(), BROTLI_BUFFER, levels.brotli_quality, levels.brotli_window))),
        };
        StreamEncoder { inner: Some(inner) }
    }

    /// Encodes `data`, flushed, and appends what the encoder gives to `out`.
    pub fn piece(&mut self, data: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        match self.inner.as_mut() {
            Some(Inner::Gzip(e)) => {
                e.write_all(data)?;
                e.flush()?;
                out.append(e.get_mut());
            }
            Some(Inner::Brotli(e)) => {
                e.write_all(data)?;
                e.flush()?;
                out.append(e.get_mut());
            }
            None => return Err(io::Error::other("compressed body already ended")),
        }
        Ok(())
    }

    /// Ends the encoded stream, appending its last bytes to `out`.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        match self.inner.take() {
            Some(Inner::Gzip(e)) => out.extend_from_slice(&e.finish()?),
            Some(Inner::Brotli(e)) => out.extend_from_slice(&e.into_inner()),
            None => {}
        }
        Ok(())
    }
}

/// `data` encoded whole (no flush points: the smallest output).
pub fn compress_all(data: &[u8], coding: Coding, levels: Levels) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 3 + 64);
    match coding {
        Coding::Gzip => {
            let mut e = flate2::write::GzEncoder::new(out, flate2::Compression::new(levels.gzip));
            // Writing to a Vec cannot fail.
            let _ = e.write_all(data);
            out = e.finish().unwrap_or_default();
        }
        Coding::Brotli => {
            let mut e = brotli::CompressorWriter::new(out, BROTLI_BUFFER, levels.brotli_quality, levels.brotli_window);
            let _ = e.write_all(data);
            out = e.into_inner();
        }
    }
    out
}

/// A streamed body (a FastCGI application's output) encoded as it is read.
pub struct Encoded {
    inner: Box<dyn BodySource>,
    encoder: StreamEncoder,
    scratch: Vec<u8>,
    ended: bool,
}

impl Encoded {
    pub fn new(inner: Box<dyn BodySource>, encoder: StreamEncoder) -> Encoded {
        Encoded { inner, encoder, scratch: Vec::new(), ended: false }
    }
}

impl BodySource for Encoded {
    fn next_piece(&mut self, out: &mut Vec<u8>) -> io::Result<bool> {
        loop {
            if self.ended {
                return Ok(false);
            }
            self.scratch.clear();
            if !self.inner.next_piece(&mut self.scratch)? {
                self.ended = true;
                self.encoder.finish(out)?;
                return Ok(!out.is_empty());
            }
            let before = out.len();
            self.encoder.piece(&self.scratch, out)?;
            // An empty piece in, nothing out: read on rather than look ended.
            if out.len() > before {
                return Ok(true);
            }
        }
    }

    fn read_ahead(&self) -> bool {
        self.inner.read_ahead()
    }

    fn take_encoder(&mut self) -> Option<StreamEncoder> {
        Some(std::mem::replace(&mut self.encoder, StreamEncoder { inner: None }))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;
    use warren_config::compress::AlterETag;

    const LEVELS: Levels = Levels { gzip: 6, brotli_quality: 5, brotli_window: 18, gzip_etag: AlterETag::AddSuffix, brotli_etag: AlterETag::AddSuffix };

    fn gunzip(b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(b).read_to_end(&mut out).unwrap();
        out
    }

    fn unbrotli(b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        brotli::Decompressor::new(b, 4096).read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn whole_bodies_round_trip() {
        let text = b"body { color: red }\n".repeat(100);
        assert_eq!(gunzip(&compress_all(&text, Coding::Gzip, LEVELS)), text);
        assert_eq!(unbrotli(&compress_all(&text, Coding::Brotli, LEVELS)), text);
    }

    #[test]
    fn each_piece_is_decodable_when_it_is_sent() {
        for coding in [Coding::Gzip, Coding::Brotli] {
            let mut e = StreamEncoder::new(coding, LEVELS);
            let mut sent = Vec::new();
            e.piece(b"<html><p>first part", &mut sent).unwrap();
            // What was sent so far decodes to the first piece, without the end.
            let partial = match coding {
                Coding::Gzip => {
                    let mut d = flate2::write::GzDecoder::new(Vec::new());
                    d.write_all(&sent).unwrap();
                    d.flush().unwrap();
                    d.get_ref().clone()
                }
                Coding::Brotli => {
                    let mut d = brotli::DecompressorWriter::new(Vec::new(), 4096);
                    d.write_all(&sent).unwrap();
                    d.flush().unwrap();
                    d.get_ref().clone()
                }
            };
            assert_eq!(partial, b"<html><p>first part", "{coding:?}");
            e.piece(b", second part</html>", &mut sent).unwrap();
            e.finish(&mut sent).unwrap();
            let whole = match coding {
                Coding::Gzip => gunzip(&sent),
                Coding::Brotli => unbrotli(&sent),
            };
            assert_eq!(whole, b"<html><p>first part, second part</html>");
        }
    }
}
