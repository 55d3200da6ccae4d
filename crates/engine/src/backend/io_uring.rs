//! `io_uring`: queued reads and writes, submitted in batches, reaped from the completion
//! queue. fio's `libaio` and `posixaio` jobs run here too.

use std::io;
use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types, IoUring};

use super::{Backend, Completion, IoRequest, Submitted};

// On 32-bit ARM the io-uring crate's bindings are its x86_64 ones (see scripts/cross.sh);
// the kernel's ABI has the same layout there, which these sizes check at compile time.
const _: () = assert!(std::mem::size_of::<squeue::Entry>() == 64);
const _: () = assert!(std::mem::size_of::<io_uring::cqueue::Entry>() == 16);

/// IORING_ENTER_GETEVENTS from the kernel's io_uring ABI.
const ENTER_GETEVENTS: u32 = 1;

pub struct Uring {
    ring: IoUring,
    pending: usize,
    /// The job's files, registered with the ring on first use so each I/O skips the
    /// kernel's file-table lookup; empty when registration is not possible.
    files: Vec<RawFd>,
    registered: Option<bool>,
}

impl Uring {
    pub fn new(depth: u32) -> io::Result<Uring> {
        let entries = depth.max(1).next_power_of_two();
        // COOP_TASKRUN, SINGLE_ISSUER and DEFER_TASKRUN (as fio sets them) let completions be
        // posted in batches when this thread enters the kernel, not by interrupting it; fall
        // back step by step on older kernels.
        let ring = IoUring::builder()
            .setup_coop_taskrun()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(entries)
            .or_else(|_| {
                IoUring::builder()
                    .setup_coop_taskrun()
                    .setup_single_issuer()
                    .build(entries)
            })
            .or_else(|_| IoUring::new(entries))?;
        Ok(Uring {
            ring,
            pending: 0,
            files: Vec::new(),
            registered: None,
        })
    }

    /// A ring that signals `eventfd` on every completion, for a caller that sleeps in poll on
    /// it (and on other descriptors) instead of in the ring. A plain ring: with
    /// DEFER_TASKRUN, completions would be posted (and the eventfd signalled) only when this
    /// thread next entered the kernel.
    pub fn with_eventfd(entries: u32, eventfd: RawFd) -> io::Result<Uring> {
        let ring = IoUring::new(entries.max(1).next_power_of_two())?;
        ring.submitter().register_eventfd(eventfd)?;
        Ok(Uring {
            ring,
            pending: 0,
            files: Vec::new(),
            registered: None,
        })
    }

    fn entry(&self, req: &IoRequest, len: u32) -> squeue::Entry {
        // The same opcode for a registered file index or a plain descriptor.
        macro_rules! read_or_write {
            ($fd:expr) => {
                if req.dir.is_write() {
                    opcode::Write::new($fd, req.buf, len)
                        .offset(req.offset)
                        .ioprio(req.ioprio)
                        .build()
                } else {
                    opcode::Read::new($fd, req.buf, len)
                        .offset(req.offset)
                        .ioprio(req.ioprio)
                        .build()
                }
            };
        }
        match self.registered {
            Some(true) => read_or_write!(types::Fixed(req.file_index as u32)),
            _ => read_or_write!(types::Fd(req.fd)),
        }
    }
}

impl Backend for Uring {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn attach_file(
        &mut self,
        file_index: usize,
        fd: RawFd,
        _size: u64,
        _write: bool,
    ) -> io::Result<()> {
        if self.files.len() <= file_index {
            self.files.resize(file_index + 1, -1);
        }
        self.files[file_index] = fd;
        Ok(())
    }

    fn submit(&mut self, req: &IoRequest) -> io::Result<Submitted> {
        if req.dir == super::IoDir::Trim {
            return super::discard(req.fd, req.offset, req.len).map(Submitted::Done);
        }
        if self.registered.is_none() {
            let ok = !self.files.is_empty()
                && self.files.iter().all(|fd| *fd >= 0)
                && self.ring.submitter().register_files(&self.files).is_ok();
            self.registered = Some(ok);
        }
        let len = u32::try_from(req.len).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let entry = self.entry(req, len).user_data(req.tag);
        // SAFETY: the buffer stays valid until the completion is reaped (IoRequest contract).
        unsafe {
            if self.ring.submission().push(&entry).is_err() {
                self.ring.submit()?;
                self.ring
                    .submission()
                    .push(&entry)
                    .map_err(|_| io::Error::from_raw_os_error(libc::EBUSY))?;
            }
        }
        self.pending += 1;
        Ok(Submitted::Queued)
    }

    fn commit(&mut self) -> io::Result<usize> {
        if self.pending == 0 {
            return Ok(0);
        }
        let to_submit = self.pending as u32;
        // GETEVENTS without waiting: submit, and post whatever has completed meanwhile, so a
        // completion is seen when it happens rather than when the queue next fills up.
        // SAFETY: no argument is passed; the SQEs pushed are valid (see submit).
        let n = unsafe {
            self.ring
                .submitter()
                .enter::<libc::sigset_t>(to_submit, 0, ENTER_GETEVENTS, None)?
        };
        self.pending = 0;
        Ok(n)
    }

    fn reap(&mut self, min: usize, max: usize, out: &mut Vec<Completion>) -> io::Result<()> {
        if min > 0 && self.ring.completion().is_empty() {
            // A signal (the sampler's, a Ctrl-C) interrupts the wait, not the I/O.
            loop {
                match self.ring.submit_and_wait(min) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => {
                        other?;
                        break;
                    }
                }
            }
        }
        // Completions beyond `max` stay in the ring for the next reap.
        for cqe in self.ring.completion().take(max) {
            out.push(Completion {
                tag: cqe.user_data(),
                result: cqe.result() as i64,
                times: None,
            });
        }
        Ok(())
    }

    fn detach_file(&mut self, _file_index: usize) {
        if self.registered == Some(true) {
            let _ = self.ring.submitter().unregister_files();
            self.registered = None;
        }
    }
}
