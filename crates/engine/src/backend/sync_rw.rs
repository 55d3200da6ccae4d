//! The synchronous engines: `sync` (lseek + read/write), `psync` (pread/pwrite),
//! `vsync` (lseek + readv/writev) and `pvsync` (preadv/pwritev).

use std::io;

use super::{check, Backend, IoDir, IoRequest, Submitted};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Sync,
    Psync,
    Vsync,
    Pvsync,
}

pub struct SyncRw {
    flavor: Flavor,
    /// File position after the last I/O per file, to skip lseek on sequential access as
    /// fio's sync engine does.
    positions: Vec<u64>,
}

impl SyncRw {
    pub fn new(flavor: Flavor) -> SyncRw {
        SyncRw {
            flavor,
            positions: Vec::new(),
        }
    }

    fn seek(&mut self, req: &IoRequest) -> io::Result<()> {
        if self.positions.len() <= req.file_index {
            self.positions.resize(req.file_index + 1, u64::MAX);
        }
        if self.positions[req.file_index] != req.offset {
            // SAFETY: lseek on a descriptor the worker owns.
            let r = unsafe { libc::lseek(req.fd, req.offset as libc::off_t, libc::SEEK_SET) };
            if r < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

impl Backend for SyncRw {
    fn name(&self) -> &'static str {
        match self.flavor {
            Flavor::Sync => "sync",
            Flavor::Psync => "psync",
            Flavor::Vsync => "vsync",
            Flavor::Pvsync => "pvsync",
        }
    }

    #[inline]
    fn submit(&mut self, req: &IoRequest) -> io::Result<Submitted> {
        if req.dir == IoDir::Trim {
            return super::discard(req.fd, req.offset, req.len).map(Submitted::Done);
        }
        let iov = libc::iovec {
            iov_base: req.buf.cast(),
            iov_len: req.len,
        };
        let off = req.offset as libc::off_t;
        // SAFETY: req.buf is valid for req.len bytes until this call returns (IoRequest
        // contract); fd belongs to the worker.
        let n = unsafe {
            match (self.flavor, req.dir.is_write()) {
                (Flavor::Psync, false) => check(libc::pread(req.fd, req.buf.cast(), req.len, off))?,
                (Flavor::Psync, true) => check(libc::pwrite(req.fd, req.buf.cast(), req.len, off))?,
                (Flavor::Pvsync, false) => check(libc::preadv(req.fd, &iov, 1, off))?,
                (Flavor::Pvsync, true) => check(libc::pwritev(req.fd, &iov, 1, off))?,
                (Flavor::Sync, w) => {
                    self.seek(req)?;
                    if w {
                        check(libc::write(req.fd, req.buf.cast(), req.len))?
                    } else {
                        check(libc::read(req.fd, req.buf.cast(), req.len))?
                    }
                }
                (Flavor::Vsync, w) => {
                    self.seek(req)?;
                    if w {
                        check(libc::writev(req.fd, &iov, 1))?
                    } else {
                        check(libc::readv(req.fd, &iov, 1))?
                    }
                }
            }
        };
        if matches!(self.flavor, Flavor::Sync | Flavor::Vsync) {
            self.positions[req.file_index] = req.offset + n as u64;
        }
        Ok(Submitted::Done(n))
    }
}
