//! The fast path: an interposer (preload/interpose.c, built by build.rs) that a dynamically
//! linked recorder loads through LD_PRELOAD. It makes the recorder's writes and syncs
//! itself, marked so that the seccomp filter lets them run without a stop
//! ([`crate::filter::Rule::Unmarked`]), and sends each call's record over a pipe that the
//! tracer reads between its stops. Every call that does not come through it (an open, a
//! close, a rename, a write from inside the C library, a static program) still stops for
//! the tracer: the interposer makes the capture cheaper, never less complete.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The interposer for this build's architecture (empty where there is none).
pub const INTERPOSER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/interpose.so"));

/// The environment variable that names the pipe to the interposer.
const CHANNEL_VAR: &str = "SINKRATE_CAPTURE_CHANNEL";

/// One record's size and its first word (interpose.c's `struct record`).
pub const RECORD_LEN: usize = 72;
const RECORD_MAGIC: u32 = 0x5352_4331;

/// A call the interposer made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    Write,
    Pwrite,
    Writev,
    Pwritev,
    Fsync,
    Fdatasync,
    SyncFileRange,
}

impl Kind {
    /// The system call's name, as the trace has it.
    pub fn call(self) -> &'static str {
        match self {
            Kind::Write => "write",
            Kind::Pwrite => "pwrite64",
            Kind::Writev => "writev",
            Kind::Pwritev => "pwritev",
            Kind::Fsync => "fsync",
            Kind::Fdatasync => "fdatasync",
            Kind::SyncFileRange => "sync_file_range",
        }
    }
}

/// One record as the interposer sent it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Record {
    pub kind: Kind,
    /// sync_file_range's flags.
    pub flags: u32,
    pub pid: i32,
    pub tid: i32,
    pub fd: i32,
    /// The call's result, or -errno.
    pub ret: i64,
    /// Where a write went; a range's start. None when the position was not known.
    pub offset: Option<u64>,
    /// A range's length.
    pub len: u64,
    /// CLOCK_MONOTONIC at the call's start and end.
    pub start_ns: u64,
    pub end_ns: u64,
}

impl Record {
    /// A record from its bytes (native byte order: the interposer ran on this machine);
    /// None for bytes that are not one.
    pub fn parse(b: &[u8]) -> Option<Record> {
        let b: &[u8; RECORD_LEN] = b.try_into().ok()?;
        let u32_at = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            u64::from_ne_bytes(w)
        };
        if u32_at(0) != RECORD_MAGIC {
            return None;
        }
        let word = u32_at(4);
        let kind = match word & 0xff {
            1 => Kind::Write,
            2 => Kind::Pwrite,
            3 => Kind::Writev,
            4 => Kind::Pwritev,
            5 => Kind::Fsync,
            6 => Kind::Fdatasync,
            7 => Kind::SyncFileRange,
            _ => return None,
        };
        let offset = u64_at(40);
        Some(Record {
            kind,
            flags: word >> 8,
            pid: u64_at(8) as i32,
            tid: u64_at(16) as i32,
            fd: u64_at(24) as i32,
            ret: u64_at(32) as i64,
            offset: (offset != u64::MAX).then_some(offset),
            len: u64_at(48),
            start_ns: u64_at(56),
            end_ns: u64_at(64),
        })
    }
}

fn last_error() -> io::Error {
    io::Error::last_os_error()
}

/// The interposer in memory and the pipe it reports through, set up before the recorder
/// starts.
pub struct Channel {
    /// The tracer's end, non-blocking.
    pub read: OwnedFd,
    /// The recorder's end, at a descriptor number the recorder inherits (not close-on-exec):
    /// dropped (closed) in the tracer once the recorder has started.
    pub write: Option<OwnedFd>,
    /// The interposer as a file in memory (a memfd), named to ld.so through /proc.
    _object: OwnedFd,
    /// `LD_PRELOAD=...` and `SINKRATE_CAPTURE_CHANNEL=FD:pipe:[INODE]`, for the recorder's
    /// environment.
    pub env: Vec<CString>,
    /// Bytes read so far that do not make a whole record yet.
    partial: Vec<u8>,
}

impl Channel {
    /// The channel, or None where this build has no interposer.
    pub fn new() -> io::Result<Option<Channel>> {
        if INTERPOSER.is_empty() {
            return Ok(None);
        }
        // SAFETY: memfd_create takes a NUL-terminated name and flags.
        let memfd = unsafe {
            libc::memfd_create(c"sinkrate-capture-interposer".as_ptr(), libc::MFD_CLOEXEC)
        };
        if memfd < 0 {
            return Err(last_error());
        }
        // SAFETY: a descriptor just made, owned here alone.
        let object = unsafe { OwnedFd::from_raw_fd(memfd) };
        let mut file = std::fs::File::from(object.try_clone()?);
        io::Write::write_all(&mut file, INTERPOSER)?;
        let mut fds = [0 as RawFd; 2];
        // SAFETY: pipe2 fills the two descriptors it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(last_error());
        }
        // SAFETY: descriptors just made, owned here alone.
        let (read, write_cloexec) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // A megabyte of records (14,000 calls) before a recorder thread waits for the
        // tracer to read; the system's limit for a user who is not root may be lower.
        // SAFETY: fcntl on a descriptor owned here.
        unsafe {
            libc::fcntl(read.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20);
            let flags = libc::fcntl(read.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(read.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        // The recorder's end away from the low numbers a program takes for itself.
        // SAFETY: fcntl F_DUPFD makes a new descriptor (without close-on-exec) or fails.
        let dup = unsafe { libc::fcntl(write_cloexec.as_raw_fd(), libc::F_DUPFD, 200) };
        if dup < 0 {
            return Err(last_error());
        }
        // SAFETY: a descriptor just made, owned here alone.
        let write = unsafe { OwnedFd::from_raw_fd(dup) };
        let link = sinkrate_sys::process::descriptor_target(std::process::id(), read.as_raw_fd())?;
        let object_path = sinkrate_sys::process::descriptor_path(std::process::id(), memfd)
            .display()
            .to_string();
        let preload = match std::env::var("LD_PRELOAD") {
            Ok(theirs) if !theirs.trim().is_empty() => format!("{object_path} {theirs}"),
            _ => object_path,
        };
        let env = [
            format!("LD_PRELOAD={preload}"),
            format!("{CHANNEL_VAR}={dup}:{}", link.to_string_lossy()),
        ]
        .into_iter()
        .map(|v| CString::new(v).map_err(|_| io::Error::other("a NUL in LD_PRELOAD")))
        .collect::<io::Result<Vec<_>>>()?;
        Ok(Some(Channel {
            read,
            write: Some(write),
            _object: object,
            env,
            partial: Vec::new(),
        }))
    }

    /// Every whole record waiting in the pipe, without waiting for more.
    pub fn drain(&mut self) -> Vec<Record> {
        let mut buf = [0u8; RECORD_LEN * 64];
        loop {
            // SAFETY: read into a buffer of the length given, on a descriptor owned here.
            let n =
                unsafe { libc::read(self.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n > 0 {
                self.partial.extend_from_slice(&buf[..n as usize]);
                continue;
            }
            // 0: every recorder process has closed its end; -1: nothing more now (or EINTR,
            // read again).
            if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break;
        }
        let whole = self.partial.len() / RECORD_LEN * RECORD_LEN;
        let records = self.partial[..whole]
            .chunks_exact(RECORD_LEN)
            .filter_map(Record::parse)
            .collect();
        self.partial.drain(..whole);
        records
    }
}

/// The recorder's environment: this process's, with the channel's variables put first
/// (each replacing one of the same name).
pub fn environment(extra: &[CString]) -> Vec<CString> {
    use std::os::unix::ffi::OsStrExt;
    let names: Vec<&[u8]> = extra
        .iter()
        .filter_map(|v| v.as_bytes().split(|b| *b == b'=').next())
        .collect();
    let mut env: Vec<CString> = extra.to_vec();
    for (k, v) in std::env::vars_os() {
        if names.contains(&k.as_bytes()) {
            continue;
        }
        let mut kv = k.as_bytes().to_vec();
        kv.push(b'=');
        kv.extend_from_slice(v.as_bytes());
        if let Ok(c) = CString::new(kv) {
            env.push(c);
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_other_bytes_do_not() {
        let mut b = [0u8; RECORD_LEN];
        b[..4].copy_from_slice(&RECORD_MAGIC.to_ne_bytes());
        b[4..8].copy_from_slice(&(7u32 | (2 << 8)).to_ne_bytes());
        for (i, v) in [
            (8, 10u64),
            (16, 11),
            (24, 5),
            (32, (-5i64) as u64),
            (40, 4096),
            (48, 8192),
            (56, 100),
            (64, 250),
        ] {
            b[i..i + 8].copy_from_slice(&v.to_ne_bytes());
        }
        let r = Record::parse(&b).expect("a record");
        assert_eq!(r.kind, Kind::SyncFileRange);
        assert_eq!((r.flags, r.pid, r.tid, r.fd, r.ret), (2, 10, 11, 5, -5));
        assert_eq!(
            (r.offset, r.len, r.start_ns, r.end_ns),
            (Some(4096), 8192, 100, 250)
        );
        b[40..48].copy_from_slice(&u64::MAX.to_ne_bytes());
        assert_eq!(Record::parse(&b).and_then(|r| r.offset), None);
        b[4] = 9;
        assert_eq!(Record::parse(&b), None);
        b[0] = 0;
        assert_eq!(Record::parse(&b), None);
        assert_eq!(Record::parse(&b[..8]), None);
    }

    #[test]
    fn the_interposer_is_built_for_this_architecture() {
        // An ELF shared object (e_type 3) for the machine this test runs on.
        assert!(
            INTERPOSER.starts_with(b"\x7fELF"),
            "{} bytes",
            INTERPOSER.len()
        );
        assert_eq!(u16::from_ne_bytes([INTERPOSER[16], INTERPOSER[17]]), 3);
        let machine = u16::from_ne_bytes([INTERPOSER[18], INTERPOSER[19]]);
        let expected = if cfg!(target_arch = "x86_64") {
            62
        } else if cfg!(target_arch = "aarch64") {
            183
        } else {
            40
        };
        assert_eq!(machine, expected);
    }
}
