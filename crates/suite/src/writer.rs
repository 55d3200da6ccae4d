//! The sequential writer the file suites measure with. Written here rather than through the
//! bench engine because the suites measure exactly the calls an application makes: C stdio
//! through libc's own `FILE*` (its default buffer, or one set with `setvbuf`), plain
//! `write(2)`, and a file grown one of four ways first; the engine has no stdio path.

use std::ffi::CStr;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsRawFd, IntoRawFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sinkrate_platform::buf::AlignedBuf;

/// How the application hands its records to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `write(2)` on a file descriptor, one call per record.
    Fd,
    /// `fwrite` on libc's `FILE*` with its default buffer.
    Stdio,
    /// `fwrite` after `setvbuf(_IOFBF)` with a buffer of this many bytes.
    StdioBuffer(usize),
}

/// What is done to the file before the timed writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Prep {
    /// A new, empty file: every write extends it.
    None,
    /// `ftruncate` to the final size (on Linux a sparse file: nothing allocated).
    Ftruncate,
    /// `fallocate` of the final size: blocks reserved, size set.
    Fallocate,
    /// Zeros written to the final size and synced (seed 002's pregrowing), then overwritten.
    Pregrow,
}

#[derive(Debug, Clone)]
pub struct WriteJob<'a> {
    pub path: &'a Path,
    /// Bytes per call.
    pub record: usize,
    pub bytes: u64,
    pub api: Api,
    /// O_DIRECT (records must be multiples of 4096).
    pub direct: bool,
    pub prep: Prep,
    /// fsync at the end, timed apart from the writes.
    pub fsync: bool,
}

/// What one write of a file took.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Written {
    pub bytes: u64,
    pub calls: u64,
    /// Growing the file before the timed writes.
    pub prep_s: f64,
    /// The write calls (and stdio's final flush).
    pub write_s: f64,
    /// The final fsync, when asked for.
    pub sync_s: f64,
    pub worst_call_s: f64,
    /// User + system CPU of the writing thread over the writes and the sync.
    pub cpu_s: f64,
    /// Dirty + writeback data in the whole system right after the last write call: what was
    /// still in RAM when the write figure was taken.
    pub unwritten_after_writes_bytes: Option<u64>,
}

impl Written {
    /// The rate the application saw.
    pub fn write_bytes_per_s(&self) -> f64 {
        self.bytes as f64 / self.write_s.max(1e-9)
    }
    /// The rate with the final fsync counted: data on the device.
    pub fn synced_bytes_per_s(&self) -> f64 {
        self.bytes as f64 / (self.write_s + self.sync_s).max(1e-9)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("{path}: {what}: {source}")]
    Io {
        path: String,
        what: &'static str,
        source: std::io::Error,
    },
    #[error("interrupted")]
    Interrupted,
}

fn io<'a>(path: &'a Path, what: &'static str) -> impl FnOnce(std::io::Error) -> WriteError + 'a {
    move |source| WriteError::Io {
        path: path.display().to_string(),
        what,
        source,
    }
}

/// CPU seconds (user + system) of the calling thread so far.
pub fn thread_cpu_s() -> f64 {
    sinkrate_platform::cpu::thread_usage().map_or(0.0, |u| u.cpu_ns() as f64 / 1e9)
}

/// An aligned buffer of at least `len` bytes (O_DIRECT needs the alignment), filled with
/// bytes no device can compress away.
pub fn incompressible(len: usize, seed: u64) -> AlignedBuf {
    let mut buf = AlignedBuf::new(len);
    let mut x = seed | 1;
    for b in buf.as_mut_slice().iter_mut() {
        // xorshift64: cheap, and enough to defeat compression.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    buf
}

fn grow(job: &WriteJob) -> Result<(), WriteError> {
    let path = job.path;
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(io(path, "create"))?;
    match job.prep {
        Prep::None => {}
        Prep::Ftruncate => file.set_len(job.bytes).map_err(io(path, "ftruncate"))?,
        Prep::Fallocate => {
            let len = libc::off_t::try_from(job.bytes).map_err(|_| {
                io(path, "fallocate")(std::io::Error::other(
                    "the size does not fit this platform's off_t",
                ))
            })?;
            #[cfg(target_os = "linux")]
            {
                // SAFETY: fallocate on a descriptor this function owns.
                let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
                if rc != 0 {
                    return Err(io(path, "fallocate")(std::io::Error::last_os_error()));
                }
            }
            #[cfg(not(target_os = "linux"))]
            {
                // SAFETY: posix_fallocate on a descriptor this function owns.
                let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
                if rc != 0 {
                    return Err(io(path, "posix_fallocate")(
                        std::io::Error::from_raw_os_error(rc),
                    ));
                }
            }
        }
        Prep::Pregrow => {
            let zeros = vec![0u8; 1 << 20];
            let mut left = job.bytes;
            let mut f = &file;
            while left > 0 {
                let n = left.min(zeros.len() as u64) as usize;
                f.write_all(&zeros[..n]).map_err(io(path, "pregrow"))?;
                left -= n as u64;
            }
            file.sync_all().map_err(io(path, "pregrow fsync"))?;
        }
    }
    if job.prep != Prep::None {
        // The preparation is not what is timed: its data leaves the page cache first.
        file.sync_all().map_err(io(path, "fsync"))?;
    }
    Ok(())
}

/// Writes `job.bytes` to `job.path` in records of `job.record` bytes, timing every call.
pub fn write_file(job: &WriteJob, stop: &AtomicBool) -> Result<Written, WriteError> {
    let path = job.path;
    let prep_started = Instant::now();
    grow(job)?;
    let prep_s = if job.prep == Prep::None {
        0.0
    } else {
        prep_started.elapsed().as_secs_f64()
    };
    let mut opts = OpenOptions::new();
    opts.write(true);
    #[cfg(target_os = "linux")]
    if job.direct {
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut opts, libc::O_DIRECT);
    }
    let file = opts.open(path).map_err(io(path, "open"))?;
    let buf = incompressible(job.record, job.bytes ^ job.record as u64);
    let data = &buf.as_slice()[..job.record];
    let cpu0 = thread_cpu_s();
    let mut out = Written {
        prep_s,
        ..Written::default()
    };
    let started = Instant::now();
    let mut sink = Sink::open(file, job.api).map_err(io(path, "fdopen"))?;
    let mut left = job.bytes;
    while left > 0 {
        if stop.load(Ordering::Relaxed) {
            return Err(WriteError::Interrupted);
        }
        let n = left.min(job.record as u64) as usize;
        let t = Instant::now();
        sink.write(&data[..n]).map_err(io(path, "write"))?;
        out.worst_call_s = out.worst_call_s.max(t.elapsed().as_secs_f64());
        out.calls += 1;
        left -= n as u64;
        out.bytes += n as u64;
    }
    sink.flush().map_err(io(path, "flush"))?;
    out.write_s = started.elapsed().as_secs_f64();
    out.unwritten_after_writes_bytes = sinkrate_sys::host::unwritten_bytes();
    if job.fsync {
        let t = Instant::now();
        sink.fsync().map_err(io(path, "fsync"))?;
        out.sync_s = t.elapsed().as_secs_f64();
    }
    sink.close().map_err(io(path, "close"))?;
    out.cpu_s = thread_cpu_s() - cpu0;
    Ok(out)
}

/// A file descriptor, or libc's `FILE*` over one.
enum Sink {
    Fd(File),
    Stdio(*mut libc::FILE),
}

impl Sink {
    fn open(file: File, api: Api) -> std::io::Result<Sink> {
        let size = match api {
            Api::Fd => return Ok(Sink::Fd(file)),
            Api::Stdio => None,
            Api::StdioBuffer(n) => Some(n),
        };
        const MODE: &CStr = c"w";
        let fd = file.into_raw_fd();
        // SAFETY: fdopen takes ownership of a valid descriptor this function owns.
        let fp = unsafe { libc::fdopen(fd, MODE.as_ptr()) };
        if fp.is_null() {
            let e = std::io::Error::last_os_error();
            // SAFETY: the descriptor was not taken over.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        if let Some(n) = size {
            // SAFETY: setvbuf before any I/O on the stream; libc allocates the buffer.
            let rc = unsafe { libc::setvbuf(fp, std::ptr::null_mut(), libc::_IOFBF, n) };
            if rc != 0 {
                // SAFETY: the stream is valid and closed once.
                unsafe { libc::fclose(fp) };
                return Err(std::io::Error::other("setvbuf refused the buffer size"));
            }
        }
        Ok(Sink::Stdio(fp))
    }

    fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Fd(f) => f.write_all(data),
            Sink::Stdio(fp) => {
                // SAFETY: data is valid for its length; the stream is open.
                let n = unsafe { libc::fwrite(data.as_ptr().cast(), 1, data.len(), *fp) };
                if n == data.len() {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Fd(_) => Ok(()),
            // SAFETY: the stream is open.
            Sink::Stdio(fp) => match unsafe { libc::fflush(*fp) } {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            },
        }
    }

    fn fsync(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Fd(f) => f.sync_all(),
            Sink::Stdio(fp) => {
                // SAFETY: the stream is open; fileno reads its descriptor.
                let rc = unsafe { libc::fsync(libc::fileno(*fp)) };
                if rc == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            }
        }
    }

    /// Closes a stream once, reporting the error fclose finds (a last flush that failed).
    fn close(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Fd(_) => Ok(()),
            Sink::Stdio(fp) => {
                let stream = std::mem::replace(fp, std::ptr::null_mut());
                if stream.is_null() {
                    return Ok(());
                }
                // SAFETY: the stream is open and is closed once (the pointer is cleared).
                match unsafe { libc::fclose(stream) } {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                }
            }
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_api_and_preparation_writes_the_whole_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stop = AtomicBool::new(false);
        for api in [Api::Fd, Api::Stdio, Api::StdioBuffer(65536)] {
            for prep in [Prep::None, Prep::Ftruncate, Prep::Fallocate, Prep::Pregrow] {
                let path = dir.path().join("f");
                let w = write_file(
                    &WriteJob {
                        path: &path,
                        record: 1000,
                        bytes: 100_500,
                        api,
                        direct: false,
                        prep,
                        fsync: true,
                    },
                    &stop,
                )
                .expect("written");
                assert_eq!(w.bytes, 100_500);
                assert_eq!(w.calls, 101);
                let bytes = std::fs::read(&path).expect("read");
                assert_eq!(bytes.len(), 100_500, "{api:?} {prep:?}");
                assert!(bytes.iter().any(|&b| b != 0));
                assert_eq!(bytes[..1000], bytes[1000..2000]);
            }
        }
    }

    #[test]
    fn a_stop_ends_the_writes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let stop = AtomicBool::new(true);
        let job = WriteJob {
            path: &path,
            record: 4096,
            bytes: 1 << 20,
            api: Api::Fd,
            direct: false,
            prep: Prep::None,
            fsync: false,
        };
        assert!(matches!(
            write_file(&job, &stop),
            Err(WriteError::Interrupted)
        ));
    }
}
