//! fio's `io_submit_mode=offload`: the job hands each I/O to a pool of submitter threads (one
//! per iodepth) and goes on with its schedule, whatever the device's completions. Each
//! submitter does its I/O with a positional read or write and stamps when it started and
//! ended it, so a slow device shows as queueing (slat, lat) instead of silently slowing the
//! schedule (coordinated omission).

use std::io;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::{Backend, Completion, IoDir, IoRequest, Submitted};
use crate::clock::Clock;

/// An I/O on its way to a submitter. The buffer stays valid and untouched until the
/// completion is reaped (IoRequest's contract), which is what makes sending it sound.
struct Work {
    req: IoRequest,
}

// SAFETY: the buffer pointer is used by exactly one submitter until its completion is sent
// back; the job does not touch the buffer meanwhile (IoRequest's contract).
unsafe impl Send for Work {}

pub struct Offload {
    work: Option<Sender<Work>>,
    done: Receiver<Completion>,
    submitters: Vec<JoinHandle<()>>,
    /// The engine the job asked for does nothing but count (ioengine=null).
    queued: Vec<IoRequest>,
}

impl Offload {
    pub fn new(depth: u32, clock: Clock, null: bool) -> io::Result<Offload> {
        let (work_tx, work_rx) = mpsc::channel::<Work>();
        let (done_tx, done_rx) = mpsc::channel::<Completion>();
        let work_rx = Arc::new(Mutex::new(work_rx));
        let mut submitters = Vec::new();
        for i in 0..depth.max(1) {
            let rx = work_rx.clone();
            let tx = done_tx.clone();
            let handle = std::thread::Builder::new()
                .name(format!("sinkrate-submit{i}"))
                .spawn(move || submitter(rx, tx, clock, null))?;
            submitters.push(handle);
        }
        Ok(Offload {
            work: Some(work_tx),
            done: done_rx,
            submitters,
            queued: Vec::new(),
        })
    }
}

fn submitter(work: Arc<Mutex<Receiver<Work>>>, done: Sender<Completion>, clock: Clock, null: bool) {
    loop {
        let next = match work.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(Work { req }) = next else {
            return;
        };
        let issued = clock.now_ns();
        let result = if null {
            req.len as i64
        } else {
            let transferred = match req.dir {
                // SAFETY: req.buf is valid for req.len bytes until this completion is reaped.
                IoDir::Write => Ok(unsafe {
                    libc::pwrite(req.fd, req.buf.cast(), req.len, req.offset as libc::off_t)
                }),
                // SAFETY: as above.
                IoDir::Read => Ok(unsafe {
                    libc::pread(req.fd, req.buf.cast(), req.len, req.offset as libc::off_t)
                }),
                IoDir::Trim => super::discard(req.fd, req.offset, req.len).map(|n| n as isize),
            };
            match transferred {
                Ok(n) if n >= 0 => n as i64,
                Ok(_) => {
                    -(io::Error::last_os_error()
                        .raw_os_error()
                        .unwrap_or(libc::EIO) as i64)
                }
                Err(e) => -(e.raw_os_error().unwrap_or(libc::EIO) as i64),
            }
        };
        let completion = Completion {
            tag: req.tag,
            result,
            times: Some((issued, clock.now_ns())),
        };
        if done.send(completion).is_err() {
            return;
        }
    }
}

impl Backend for Offload {
    fn name(&self) -> &'static str {
        "offload"
    }

    fn submit(&mut self, req: &IoRequest) -> io::Result<Submitted> {
        self.queued.push(*req);
        Ok(Submitted::Queued)
    }

    fn commit(&mut self) -> io::Result<usize> {
        let n = self.queued.len();
        let Some(work) = &self.work else {
            return Err(io::Error::other("the submitters have stopped"));
        };
        for req in self.queued.drain(..) {
            work.send(Work { req })
                .map_err(|_| io::Error::other("the submitters have stopped"))?;
        }
        Ok(n)
    }

    fn reap(&mut self, min: usize, max: usize, out: &mut Vec<Completion>) -> io::Result<()> {
        let mut got = 0;
        while got < max {
            let next = if got < min {
                self.done
                    .recv()
                    .map_err(|_| io::Error::other("the submitters have stopped"))?
            } else {
                match self.done.try_recv() {
                    Ok(c) => c,
                    Err(_) => break,
                }
            };
            out.push(next);
            got += 1;
        }
        Ok(())
    }
}

impl Drop for Offload {
    fn drop(&mut self) {
        // Closing the queue ends every submitter once it has finished its I/O.
        self.work = None;
        for handle in self.submitters.drain(..) {
            let _ = handle.join();
        }
    }
}
