//! An application's answer held for a client slower than the application
//! ([`Spill`]): the answer is read at the application's pace, and what the
//! client's socket cannot take yet waits in memory up to [`IN_MEMORY`],
//! then in an unlinked temporary file up to [`MAX_FILE`] (nginx's
//! fastcgi_buffers and fastcgi_max_temp_file_size), so that the
//! application (a pool's child, a php-fpm child) is free as soon as it has
//! answered. Past the file's limit the rest is relayed at the client's pace.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use crate::exchange::{Chunk, Output};

/// Answer bytes kept in memory for one client; more go to the file.
pub const IN_MEMORY: u64 = 64 * 1024;
/// The most one answer puts in its file.
pub const MAX_FILE: u64 = 1 << 30;

#[derive(Default)]
pub struct Spill {
    file: Option<Arc<File>>,
    written: u64,
    /// The file could not be made or written: relay at the client's pace.
    failed: bool,
}

impl Spill {
    /// Queues answer bytes for the client, in memory while little waits
    /// there, else at the end of the file. The queue keeps their order.
    pub fn queue(&mut self, out: &mut Output, data: Vec<u8>) {
        if data.is_empty() {
            return;
        }
        if out.pending_in_memory() + data.len() as u64 <= IN_MEMORY || !self.has_room() {
            out.queue.push_back(Chunk::Bytes(data));
            return;
        }
        let file = match &self.file {
            Some(f) => f.clone(),
            None => match warren_handler::spool::temp_file() {
                Ok(f) => self.file.insert(Arc::new(f)).clone(),
                Err(_) => return self.give_up(out, data),
            },
        };
        let offset = self.written;
        if file.write_all_at(&data, offset).is_err() {
            return self.give_up(out, data);
        }
        self.written += data.len() as u64;
        let len = data.len() as u64;
        // Bytes written one after the other go out as one range.
        if let Some(Chunk::File { file: last, offset: at, len: n }) = out.queue.back_mut() {
            if Arc::ptr_eq(last, &file) && *at + *n == offset {
                *n += len;
                return;
            }
        }
        out.queue.push_back(Chunk::File { file, offset, len });
    }

    /// Whether the application may be read ahead of the client.
    pub fn has_room(&self) -> bool {
        !self.failed && self.written < MAX_FILE
    }

    fn give_up(&mut self, out: &mut Output, data: Vec<u8>) {
        self.failed = true;
        out.queue.push_back(Chunk::Bytes(data));
    }
}
