//! `io_uring`: queued reads and writes, submitted in batches, reaped from the completion
//! queue. fio's `libaio` and `posixaio` jobs run here too.

use std::io;

use io_uring::{opcode, types, IoUring};

use super::{Backend, Completion, IoRequest, Submitted};

pub struct Uring {
    ring: IoUring,
    pending: usize,
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
        Ok(Uring { ring, pending: 0 })
    }
}

impl Backend for Uring {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn submit(&mut self, req: &IoRequest) -> io::Result<Submitted> {
        let fd = types::Fd(req.fd);
        let len = u32::try_from(req.len).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let entry = if req.write {
            opcode::Write::new(fd, req.buf, len)
                .offset(req.offset)
                .build()
        } else {
            opcode::Read::new(fd, req.buf, len)
                .offset(req.offset)
                .build()
        }
        .user_data(req.tag);
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
            self.ring.submitter().enter::<libc::sigset_t>(
                to_submit,
                0,
                io_uring_sys_getevents(),
                None,
            )?
        };
        self.pending = 0;
        Ok(n)
    }

    fn reap(&mut self, min: usize, out: &mut Vec<Completion>) -> io::Result<()> {
        if min > 0 && self.ring.completion().is_empty() {
            self.ring.submit_and_wait(min)?;
        }
        for cqe in self.ring.completion() {
            out.push(Completion {
                tag: cqe.user_data(),
                result: cqe.result() as i64,
            });
        }
        Ok(())
    }
}

/// IORING_ENTER_GETEVENTS from the kernel's io_uring ABI.
const fn io_uring_sys_getevents() -> u32 {
    1
}
