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
        Ok(Uring {
            ring: IoUring::new(entries)?,
            pending: 0,
        })
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
            opcode::Write::new(fd, req.buf, len).offset(req.offset).build()
        } else {
            opcode::Read::new(fd, req.buf, len).offset(req.offset).build()
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
        let n = self.ring.submit()?;
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
