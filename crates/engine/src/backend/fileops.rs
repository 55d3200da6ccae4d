//! fio's `ftruncate` and `falloc` engines: each write "I/O" becomes an ftruncate to its
//! offset, or an fallocate of its range (reads allocate with KEEP_SIZE, as fio does).

use std::io;

use super::{Backend, IoRequest, Submitted};

pub struct Ftruncate;

impl Backend for Ftruncate {
    fn name(&self) -> &'static str {
        "ftruncate"
    }

    fn submit(&mut self, req: &IoRequest) -> io::Result<Submitted> {
        if !req.dir.is_write() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "ftruncate engine only does writes",
            ));
        }
        // SAFETY: ftruncate on a descriptor the worker owns.
        if unsafe { libc::ftruncate(req.fd, req.offset as libc::off_t) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Submitted::Done(req.len))
    }
}

pub struct Falloc;

impl Backend for Falloc {
    fn name(&self) -> &'static str {
        "falloc"
    }

    #[cfg(target_os = "linux")]
    fn submit(&mut self, req: &IoRequest) -> io::Result<Submitted> {
        // As fio's falloc engine: reads allocate within the size, writes may extend it, and
        // trims punch a hole.
        let mode = match req.dir {
            super::IoDir::Write => 0,
            super::IoDir::Read => libc::FALLOC_FL_KEEP_SIZE,
            super::IoDir::Trim => libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
        };
        // SAFETY: fallocate on a descriptor the worker owns.
        let r = unsafe {
            libc::fallocate(
                req.fd,
                mode,
                req.offset as libc::off_t,
                req.len as libc::off_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Submitted::Done(req.len))
    }

    /// fallocate(2) and its keep-size mode are Linux's; fio's falloc engine is too.
    #[cfg(not(target_os = "linux"))]
    fn submit(&mut self, _req: &IoRequest) -> io::Result<Submitted> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "ioengine=falloc needs Linux's fallocate(2)",
        ))
    }
}
