//! Does no I/O: measures the engine's own cost per I/O (fio's `null`). With iodepth > 1 it
//! behaves as an async backend whose I/Os complete at once.

use std::io;

use super::{Backend, Completion, IoRequest, Submitted};

pub struct Null {
    queued: Vec<Completion>,
    is_async: bool,
}

impl Null {
    pub fn new(depth: u32) -> Null {
        Null {
            queued: Vec::with_capacity(depth as usize),
            is_async: depth > 1,
        }
    }
}

impl Backend for Null {
    fn name(&self) -> &'static str {
        "null"
    }

    #[inline]
    fn submit(&mut self, req: &IoRequest) -> io::Result<Submitted> {
        if self.is_async {
            self.queued.push(Completion {
                tag: req.tag,
                result: req.len as i64,
                times: None,
            });
            Ok(Submitted::Queued)
        } else {
            Ok(Submitted::Done(req.len))
        }
    }

    fn commit(&mut self) -> io::Result<usize> {
        Ok(self.queued.len())
    }

    fn reap(&mut self, _min: usize, max: usize, out: &mut Vec<Completion>) -> io::Result<()> {
        let n = max.min(self.queued.len());
        out.extend(self.queued.drain(..n));
        Ok(())
    }

    fn sync_file(&mut self, _: usize, _: std::os::fd::RawFd, _: bool) -> io::Result<()> {
        Ok(())
    }
}
