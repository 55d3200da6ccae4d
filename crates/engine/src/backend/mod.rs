//! I/O backends, one file each, like fio's `engines/`. A synchronous backend completes each
//! I/O inside `submit`; an asynchronous one queues it and hands completions back from `reap`.

mod fileops;
#[cfg(target_os = "linux")]
mod io_uring;
#[cfg(not(target_os = "linux"))]
#[path = "io_uring_absent.rs"]
mod io_uring;

pub use self::io_uring::Uring;
mod mmap;
mod nbd;
pub use self::nbd::Nbd;
mod null;
mod offload;
mod page_fault;
pub use offload::Offload;
mod sync_rw;

use std::io;
use std::os::fd::RawFd;

use sinkrate_jobspec::options::Engine;

/// Which way an I/O goes, in fio's order (read, write, trim): `index()` addresses the
/// per-direction arrays of options and results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoDir {
    Read,
    Write,
    Trim,
}

impl IoDir {
    pub const ALL: [IoDir; 3] = [IoDir::Read, IoDir::Write, IoDir::Trim];

    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    #[inline]
    pub fn is_write(self) -> bool {
        self == IoDir::Write
    }

    pub fn name(self) -> &'static str {
        match self {
            IoDir::Read => "read",
            IoDir::Write => "write",
            IoDir::Trim => "trim",
        }
    }
}

/// Discards a range of a block device (BLKDISCARD), as fio's trims do on every engine: the
/// kernel has no queued discard for a block device that io_uring could carry.
#[cfg(target_os = "linux")]
pub fn discard(fd: RawFd, offset: u64, len: usize) -> io::Result<usize> {
    // _IO(0x12, 119): linux/fs.h's BLKDISCARD.
    const BLKDISCARD: libc::c_ulong = 0x1277;
    let range: [u64; 2] = [offset, len as u64];
    // SAFETY: the ioctl reads two u64s from a live array; the descriptor is the worker's.
    let r = unsafe { libc::ioctl(fd, BLKDISCARD as _, range.as_ptr()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(len)
}

#[cfg(not(target_os = "linux"))]
pub fn discard(_fd: RawFd, _offset: u64, _len: usize) -> io::Result<usize> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "trims need Linux's BLKDISCARD",
    ))
}

/// One I/O to do. `buf` points at a buffer of at least `len` bytes that stays valid and
/// untouched until the I/O completes.
#[derive(Clone, Copy, Debug)]
pub struct IoRequest {
    pub fd: RawFd,
    pub file_index: usize,
    pub dir: IoDir,
    pub offset: u64,
    pub len: usize,
    pub buf: *mut u8,
    /// Caller's tag, returned with the completion (the buffer slot for async backends).
    pub tag: u64,
    /// The I/O's own priority (the kernel's ioprio), for backends that pass one per I/O;
    /// 0: the thread's.
    pub ioprio: u16,
}

#[derive(Clone, Copy, Debug)]
pub enum Submitted {
    /// Done inside submit: bytes transferred.
    Done(usize),
    /// Queued; its completion arrives from `reap`.
    Queued,
}

#[derive(Clone, Copy, Debug)]
pub struct Completion {
    pub tag: u64,
    /// Bytes transferred, or a negative errno.
    pub result: i64,
    /// When the I/O was started and ended, for a backend whose completions may wait to be
    /// reaped (offload's submitters); `None`: the reap is the completion.
    pub times: Option<(u64, u64)>,
}

pub trait Backend {
    fn name(&self) -> &'static str;
    /// Called once per file after it is opened; `size` is the region the job may touch.
    fn attach_file(
        &mut self,
        _file_index: usize,
        _fd: RawFd,
        _size: u64,
        _write: bool,
    ) -> io::Result<()> {
        Ok(())
    }
    fn submit(&mut self, req: &IoRequest) -> io::Result<Submitted>;
    /// Pushes queued I/Os to the kernel; returns how many went.
    fn commit(&mut self) -> io::Result<usize> {
        Ok(0)
    }
    /// Waits for at least `min` completions and appends up to `max` available ones to `out`.
    fn reap(&mut self, _min: usize, _max: usize, _out: &mut Vec<Completion>) -> io::Result<()> {
        Ok(())
    }
    /// Makes a file's written data durable (msync for mmap, fsync otherwise).
    fn sync_file(&mut self, _file_index: usize, fd: RawFd, data_only: bool) -> io::Result<()> {
        let r = unsafe {
            // SAFETY: plain syscalls on a descriptor the worker owns.
            if data_only {
                libc::fdatasync(fd)
            } else {
                libc::fsync(fd)
            }
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
    fn detach_file(&mut self, _file_index: usize) {}
    /// CPU time (user, system, in ns) so far of the threads the backend runs for the job
    /// beside the job's own, so that the job's usr_cpu/sys_cpu count the whole engine.
    fn helper_cpu_ns(&self) -> (u64, u64) {
        (0, 0)
    }
}

/// CPU time (user, system, in ns) of thread `tid` of this process (clock-tick resolution);
/// zeros when it cannot be read.
pub(crate) fn thread_cpu_ns(tid: i32) -> (u64, u64) {
    sinkrate_sys::process::own_thread_cpu_ns(tid)
}

/// Copies a read or write between the request's buffer and memory at `base` (a mapping of
/// `mapped` bytes): the I/O of the engines whose "file" is memory (mmap, page_fault).
fn copy_with_memory(base: *mut u8, mapped: usize, req: &IoRequest) -> io::Result<Submitted> {
    let inside = usize::try_from(req.offset)
        .ok()
        .and_then(|start| start.checked_add(req.len))
        .is_some_and(|end| end <= mapped);
    if !inside || req.dir == IoDir::Trim {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: offset+len lies inside the mapping; req.buf is valid for req.len bytes and is
    // not part of the mapping.
    unsafe {
        let at = base.add(req.offset as usize);
        if req.dir.is_write() {
            std::ptr::copy_nonoverlapping(req.buf, at, req.len);
        } else {
            std::ptr::copy_nonoverlapping(at, req.buf, req.len);
        }
    }
    Ok(Submitted::Done(req.len))
}

/// The backend for a block-I/O engine (file-operation engines have none).
pub fn for_engine(engine: Engine, depth: u32) -> io::Result<Box<dyn Backend>> {
    Ok(match engine {
        Engine::Null => Box::new(null::Null::new(depth)),
        Engine::Sync => Box::new(sync_rw::SyncRw::new(sync_rw::Flavor::Sync)),
        Engine::Psync => Box::new(sync_rw::SyncRw::new(sync_rw::Flavor::Psync)),
        Engine::Vsync => Box::new(sync_rw::SyncRw::new(sync_rw::Flavor::Vsync)),
        Engine::Pvsync => Box::new(sync_rw::SyncRw::new(sync_rw::Flavor::Pvsync)),
        Engine::IoUring => Box::new(io_uring::Uring::new(depth)?),
        Engine::Mmap => Box::new(mmap::Mmap::default()),
        Engine::PageFault => Box::new(page_fault::PageFault::default()),
        Engine::Ftruncate => Box::new(fileops::Ftruncate),
        Engine::Falloc => Box::new(fileops::Falloc),
        Engine::Nbd => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "ioengine=nbd connects to its uri= (Nbd::connect)",
            ))
        }
        Engine::Filecreate
        | Engine::Filestat
        | Engine::Filedelete
        | Engine::Dircreate
        | Engine::Dirstat
        | Engine::Dirdelete
        | Engine::Cpuio
        | Engine::Exec => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is a file-operation engine", engine.fio_name()),
            ))
        }
    })
}

pub(crate) fn check(r: isize) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}
