//! Worker threads of an event child: they run the handler's blocking work
//! and hand the response back to the event loop, which writes it.

use std::os::fd::AsFd;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use nix::sys::eventfd::{EfdFlags, EventFd};
use warren_handler::Response;

use crate::scoreboard::{Scoreboard, State};

pub type Work = Box<dyn FnOnce() -> Response + Send>;

/// A finished piece of work, for the connection `(slot, generation)`.
pub struct Done {
    pub slot: usize,
    pub generation: u64,
    /// None if the work panicked.
    pub response: Option<Response>,
}

pub struct WorkerPool {
    jobs: Option<Sender<(usize, u64, Work)>>,
    pub done: Receiver<Done>,
    /// Readable when `done` has something; the event loop polls it.
    pub wake: Arc<EventFd>,
    threads: Vec<JoinHandle<()>>,
}

impl WorkerPool {
    /// Starts `threads` threads; thread i shows its state in worker slot
    /// i + 1 of the child's process slot (slot 0 is the event loop's).
    pub fn start(threads: u32, sb: Arc<Scoreboard>, slot: usize) -> std::io::Result<WorkerPool> {
        let (job_tx, job_rx) = channel::<(usize, u64, Work)>();
        let (done_tx, done_rx) = channel::<Done>();
        let job_rx = Arc::new(Mutex::new(job_rx));
        let wake = Arc::new(EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)?);
        let mut handles = Vec::new();
        for i in 0..threads.max(1) {
            let job_rx = job_rx.clone();
            let done_tx = done_tx.clone();
            let wake = wake.clone();
            let sb = sb.clone();
            let h = std::thread::Builder::new()
                .name(format!("worker-{i}"))
                .stack_size(256 * 1024)
                .spawn(move || loop {
                    let ws = sb.worker(slot, i as usize + 1);
                    ws.set(State::Ready);
                    let job = job_rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                    let Ok((conn, generation, work)) = job else {
                        ws.set(State::Dead);
                        return;
                    };
                    ws.set(State::Writing);
                    let response = catch_unwind(AssertUnwindSafe(work)).ok();
                    if done_tx.send(Done { slot: conn, generation, response }).is_err() {
                        return;
                    }
                    let _ = wake.write(1);
                })?;
            handles.push(h);
        }
        Ok(WorkerPool { jobs: Some(job_tx), done: done_rx, wake, threads: handles })
    }

    pub fn submit(&self, slot: usize, generation: u64, work: Work) {
        if let Some(tx) = &self.jobs {
            let _ = tx.send((slot, generation, work));
        }
    }

    /// Clears the wake-up counter before draining `done`.
    pub fn reset_wake(&self) {
        let _ = nix::unistd::read(self.wake.as_fd(), &mut [0u8; 8]);
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.jobs.take();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
