//! Synchronous output: a file written with write(2), O_DIRECT or O_DSYNC the way the write
//! mode says, with its preallocation and its close-time tail and truncation. The io_uring
//! sink builds on it for opening, preallocating and closing.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::time::Instant;

use sinkrate_platform::buf::AlignedBuf;

use sinkrate_model::record::{PreallocMode, RecordConfig, WriteMode};

/// O_DIRECT's alignment for offsets, lengths and buffers.
pub(crate) const BLOCK: usize = 4096;

/// Writes a byte stream to a file the way the write mode says.
pub(crate) struct Sink {
    pub(crate) fd: libc::c_int,
    /// For direct mode: a second descriptor without O_DIRECT for the final tail.
    pub(crate) tail_fd: libc::c_int,
    mode: WriteMode,
    pub(crate) offset: u64,
    pub(crate) staging: Option<AlignedBuf>,
    pub(crate) carry: usize,
    pub(crate) write_size: usize,
    /// Pregrown or truncated-up files are cut back to what was written when closed.
    truncate_at_close: bool,
}

pub(crate) fn open(path: &std::path::Path, flags: libc::c_int) -> std::io::Result<libc::c_int> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a valid C string; the result is checked.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, 0o644 as libc::c_uint) };
    if fd < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(fd)
    }
}

pub(crate) fn pwrite_all(fd: libc::c_int, mut data: &[u8], mut offset: u64) -> std::io::Result<()> {
    while !data.is_empty() {
        // SAFETY: data is a valid slice for its length.
        let n =
            unsafe { libc::pwrite(fd, data.as_ptr().cast(), data.len(), offset as libc::off_t) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::EIO));
        }
        data = &data[n as usize..];
        offset += n as u64;
    }
    Ok(())
}

/// Creates the recording file `path` exclusively for writing with `flags`, listed among the
/// run's own files when `owned` (the run removes it); its descriptor.
fn create_new(
    path: &std::path::Path,
    flags: libc::c_int,
    owned: bool,
) -> std::io::Result<libc::c_int> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::IntoRawFd;
    let mut how = std::fs::OpenOptions::new();
    how.write(true).custom_flags(flags | libc::O_CLOEXEC);
    let file = if owned {
        sinkrate_sys::owned::create_new(path, &mut how)
    } else {
        how.create_new(true).mode(0o644).open(path)
    };
    Ok(file?.into_raw_fd())
}

impl Sink {
    pub(crate) fn create(
        path: &std::path::Path,
        cfg: &RecordConfig,
        max_frame: usize,
    ) -> std::io::Result<Sink> {
        // Exclusive: a file at the name (another recording's, started at the same instant)
        // is never opened, and only what this run made is listed for removal.
        let owned = !cfg.keep;
        let (fd, tail_fd, staging) = match cfg.write_mode {
            WriteMode::Buffered => (create_new(path, 0, owned)?, -1, None),
            WriteMode::Dsync => (create_new(path, libc::O_DSYNC, owned)?, -1, None),
            WriteMode::Null => (-1, -1, None),
            WriteMode::Direct | WriteMode::Uring => {
                let fd = create_new(path, libc::O_DIRECT, owned)?;
                let tail = open(path, libc::O_WRONLY)?;
                (fd, tail, Some(AlignedBuf::new(max_frame + 2 * BLOCK)))
            }
        };
        if let (Some(bytes), true) = (cfg.preallocate, fd >= 0) {
            match cfg.prealloc_mode {
                #[cfg(target_os = "linux")]
                PreallocMode::Fallocate => {
                    // SAFETY: fallocate on the descriptor just opened; failing only means the
                    // writes allocate instead.
                    unsafe {
                        libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, 0, bytes as libc::off_t)
                    };
                }
                // Space reserved without changing the file's size is Linux's fallocate(2)
                // alone; posix_fallocate would make the file look written.
                #[cfg(not(target_os = "linux"))]
                PreallocMode::Fallocate => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::Unsupported,
                        "--prealloc-mode fallocate needs Linux's fallocate(2) (use ftruncate or pregrow)",
                    ));
                }
                PreallocMode::Ftruncate => {
                    // SAFETY: as above.
                    if unsafe { libc::ftruncate(fd, bytes as libc::off_t) } < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                PreallocMode::Pregrow => {
                    let zeros = vec![0u8; 1 << 20];
                    // Zeros of any length go through the descriptor without O_DIRECT.
                    let plain = if tail_fd >= 0 { tail_fd } else { fd };
                    let mut off = 0;
                    while off < bytes {
                        let n = (bytes - off).min(zeros.len() as u64) as usize;
                        pwrite_all(plain, &zeros[..n], off)?;
                        off += n as u64;
                    }
                    // SAFETY: fdatasync on the descriptor just written.
                    unsafe { libc::fdatasync(plain) };
                }
            }
        }
        Ok(Sink {
            fd,
            tail_fd,
            mode: cfg.write_mode,
            offset: 0,
            staging,
            carry: 0,
            truncate_at_close: cfg.preallocate.is_some()
                && cfg.prealloc_mode != PreallocMode::Fallocate,
            write_size: cfg
                .write_size
                .map(|w| w as usize)
                .unwrap_or(usize::MAX)
                .max(1),
        })
    }

    /// Writes one frame; returns the latency of each write call.
    pub(crate) fn write_frame(
        &mut self,
        data: &[u8],
        latencies: &mut Vec<u64>,
        clock: &Instant,
    ) -> std::io::Result<()> {
        match self.mode {
            WriteMode::Null => {
                // Read the frame as a writer would, so the cost of touching it is counted.
                let t0 = clock.elapsed().as_nanos() as u64;
                std::hint::black_box(data.iter().step_by(4096).fold(0u8, |a, b| a ^ b));
                latencies.push(clock.elapsed().as_nanos() as u64 - t0);
                self.offset += data.len() as u64;
            }
            WriteMode::Buffered | WriteMode::Dsync => {
                for chunk in data.chunks(self.write_size) {
                    let t0 = clock.elapsed().as_nanos() as u64;
                    pwrite_all(self.fd, chunk, self.offset)?;
                    latencies.push(clock.elapsed().as_nanos() as u64 - t0);
                    self.offset += chunk.len() as u64;
                }
            }
            // io_uring writes go through UringSink, which only borrows this sink's file.
            WriteMode::Uring => return Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
            WriteMode::Direct => {
                let Some(staging) = self.staging.as_mut() else {
                    return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
                };
                let buf = staging.as_mut_slice();
                let total = self.carry + data.len();
                buf[self.carry..total].copy_from_slice(data);
                let aligned = total / BLOCK * BLOCK;
                let step = (self.write_size / BLOCK * BLOCK).max(BLOCK);
                let mut done = 0;
                while done < aligned {
                    let n = step.min(aligned - done);
                    let t0 = clock.elapsed().as_nanos() as u64;
                    pwrite_all(self.fd, &buf[done..done + n], self.offset)?;
                    latencies.push(clock.elapsed().as_nanos() as u64 - t0);
                    self.offset += n as u64;
                    done += n;
                }
                buf.copy_within(aligned..total, 0);
                self.carry = total - aligned;
            }
        }
        Ok(())
    }

    pub(crate) fn datasync(&self) -> std::io::Result<()> {
        if self.fd < 0 {
            return Ok(());
        }
        // SAFETY: fdatasync on an owned descriptor.
        if unsafe { libc::fdatasync(self.fd) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Writes the direct-mode tail; with `durable`, also flushes the whole file system
    /// (every segment of every stream), as the end of a recording does.
    pub(crate) fn finish(&mut self, durable: bool) -> std::io::Result<()> {
        if self.carry > 0 {
            if let Some(staging) = self.staging.as_ref() {
                pwrite_all(self.tail_fd, &staging.as_slice()[..self.carry], self.offset)?;
                self.offset += self.carry as u64;
                self.carry = 0;
            }
        }
        if self.truncate_at_close && self.fd >= 0 {
            // SAFETY: ftruncate on an owned descriptor.
            if unsafe { libc::ftruncate(self.fd, self.offset as libc::off_t) } < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        let fd = if self.tail_fd >= 0 {
            self.tail_fd
        } else {
            self.fd
        };
        if fd < 0 || !durable {
            return Ok(());
        }
        // syncfs(2) (Linux) also forces the journal's commit of the file's metadata; elsewhere
        // fsync is what there is.
        #[cfg(target_os = "linux")]
        // SAFETY: syncfs on an owned descriptor.
        if unsafe { libc::syncfs(fd) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fsync on an owned descriptor.
        if unsafe { libc::fsync(fd) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        // SAFETY: closing descriptors this sink owns.
        unsafe {
            if self.fd >= 0 {
                libc::close(self.fd);
            }
            if self.tail_fd >= 0 {
                libc::close(self.tail_fd);
            }
        }
    }
}
