//! A request body held whole by warren before the application is given the
//! request ([`Spool`] while it arrives, [`Spooled`] once it is in), as nginx
//! does by default: a client sending its body slowly then ties up nothing
//! but its own connection, never one of a pool's few children. Small bodies
//! stay in memory; past [`IN_MEMORY`] the body goes to an unlinked
//! temporary file, so a large upload costs disk, not memory.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;

/// Bytes of a body kept in memory; a larger one is written to a file.
pub const IN_MEMORY: usize = 64 * 1024;

/// A body as the application will get it.
pub enum Spooled {
    None,
    Memory(Vec<u8>),
    /// An unlinked file, positioned at its start, and the body's length.
    File(File, u64),
}

impl Spooled {
    pub fn len(&self) -> u64 {
        match self {
            Spooled::None => 0,
            Spooled::Memory(b) => b.len() as u64,
            Spooled::File(_, n) => *n,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A body being received.
#[derive(Default)]
pub struct Spool {
    memory: Vec<u8>,
    file: Option<File>,
    total: u64,
}

impl Spool {
    /// Adds decoded body bytes.
    pub fn push(&mut self, data: &[u8]) -> io::Result<()> {
        self.total += data.len() as u64;
        if let Some(f) = &mut self.file {
            return f.write_all(data);
        }
        if self.memory.len() + data.len() <= IN_MEMORY {
            self.memory.extend_from_slice(data);
            return Ok(());
        }
        let mut f = temp_file()?;
        f.write_all(&self.memory)?;
        f.write_all(data)?;
        self.memory = Vec::new();
        self.file = Some(f);
        Ok(())
    }

    /// The whole body, ready to be read from its start.
    pub fn finish(self) -> io::Result<Spooled> {
        match self.file {
            Some(mut f) => {
                f.seek(SeekFrom::Start(0))?;
                Ok(Spooled::File(f, self.total))
            }
            None => Ok(Spooled::Memory(self.memory)),
        }
    }
}

/// A file with no name, gone when closed.
pub fn temp_file() -> io::Result<File> {
    std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC).mode(0o600).open(std::env::temp_dir())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn small_bodies_stay_in_memory_large_ones_go_to_a_file() {
        let mut s = Spool::default();
        s.push(b"hello ").unwrap();
        s.push(b"world").unwrap();
        match s.finish().unwrap() {
            Spooled::Memory(b) => assert_eq!(b, b"hello world"),
            _ => panic!("a small body went to a file"),
        }
        let mut s = Spool::default();
        let piece: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        for _ in 0..100 {
            s.push(&piece).unwrap();
        }
        match s.finish().unwrap() {
            Spooled::File(mut f, n) => {
                assert_eq!(n, 100_000);
                let mut back = Vec::new();
                f.read_to_end(&mut back).unwrap();
                assert_eq!(back.len(), 100_000);
                assert!(back.chunks(1000).all(|c| c == piece.as_slice()));
            }
            _ => panic!("a 100 KB body stayed in memory"),
        }
    }
}
