//! The tracer: starts the recorder stopped, has the kernel stop it (and every thread and
//! child it makes) only at the file calls of [`crate::filter`], reads each call at its
//! seccomp stop and at its exit, and hands it to the trace as it happens.
//!
//! How a call is read: the seccomp stop (before the call runs) gives its number and
//! arguments, and, for a close, a rename or an unlink, the names it is about to change; the
//! syscall-exit stop gives its result, and the file's name (/proc/TID/fd/N) and position
//! (/proc/TID/fdinfo/N, for a write that moved it). The call's duration is the time from
//! letting it run to its exit stop: the call itself and the tracer's wake-up (tens of µs).
//!
//! A dynamically linked recorder's writes and syncs do not stop at all: the interposer
//! ([`crate::preload`]) makes them, timed in the recorder, and the tracer reads its records
//! from a pipe every 20 ms and at every stop, before it lets the stopped call run.

use std::collections::{HashMap, HashSet};
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{ForkResult, Pid};

use sinkrate_sys::process;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::filter;
use crate::preload;
use crate::regs;
use crate::trace::{Call, Op, Seen};
use crate::{CaptureError, Outcome};

fn io(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e as i32)
}

/// A call between its seccomp stop and its exit.
struct Pending {
    /// Before Linux 4.8 the seccomp stop comes before the syscall-entry stop: that one is
    /// passed over on the way to the exit.
    entry_to_pass: bool,
    nr: libc::c_long,
    args: [u64; 6],
    started: Instant,
    /// Names read before the call ran: a close's file, a rename's two, an unlink's.
    before: Before,
}

enum Before {
    /// Not the recorder's output (a pipe, a file read only): let it run, no exit stop.
    Skip,
    /// Wanted at its exit (an open, whose file is known only then).
    Nothing,
    File(String),
    Rename(String, String),
}

/// Set when /proc refused to name a descriptor's file (a recorder that is not dumpable,
/// traced without root): its calls cannot be told apart, and the trace says so.
static PROC_DENIED: AtomicBool = AtomicBool::new(false);

/// What the trace says when /proc would not name the recorder's files.
pub const NOT_DUMPABLE_UNSEEN: &str = "the recorder is not dumpable (it set PR_SET_DUMPABLE to 0, or runs a set-user-ID program), so without root /proc does not name its files: its calls on them are not in the trace (run sinkrate capture as root)";

/// A file descriptor's file, when it is a regular file: its absolute path.
fn fd_file(tid: Pid, fd: i32, regular: &mut HashMap<String, bool>) -> Option<String> {
    if fd < 0 {
        return None;
    }
    let link = match process::descriptor_target(tid.as_raw() as u32, fd) {
        Ok(link) => link,
        Err(e) => {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                PROC_DENIED.store(true, Ordering::Relaxed);
            }
            return None;
        }
    };
    let mut path = link.to_string_lossy().into_owned();
    // Pipes, sockets and anonymous inodes are not paths.
    if !path.starts_with('/') {
        return None;
    }
    if let Some(p) = path.strip_suffix(" (deleted)") {
        path = p.to_string();
    }
    let is_file = *regular
        .entry(path.clone())
        .or_insert_with(|| process::descriptor_is_file(tid.as_raw() as u32, fd));
    is_file.then_some(path)
}

/// A descriptor's position (/proc/TID/fdinfo/N's `pos:`).
fn fd_pos(tid: Pid, fd: i32) -> Option<u64> {
    process::descriptor_info(tid.as_raw() as u32, fd).map(|i| i.pos)
}

/// A NUL-terminated string in the tracee's memory, read a page's piece at a time.
fn read_string(tid: Pid, addr: u64) -> Option<String> {
    use nix::sys::uio::{process_vm_readv, RemoteIoVec};
    let mut out = Vec::new();
    let mut at = addr as usize;
    while out.len() < libc::PATH_MAX as usize {
        // Never across a page: the next page may not be mapped.
        let n = 4096 - (at % 4096);
        let mut buf = vec![0u8; n];
        let got = process_vm_readv(
            tid,
            &mut [std::io::IoSliceMut::new(&mut buf)],
            &[RemoteIoVec { base: at, len: n }],
        )
        .ok()?;
        if let Some(end) = buf[..got].iter().position(|b| *b == 0) {
            out.extend_from_slice(&buf[..end]);
            return Some(String::from_utf8_lossy(&out).into_owned());
        }
        out.extend_from_slice(&buf[..got]);
        at += got;
        if got == 0 {
            return None;
        }
    }
    None
}

/// A path argument made absolute as the tracee sees it: relative to its working directory
/// (AT_FDCWD) or to the directory `dirfd`, its directory's links resolved.
fn absolute(tid: Pid, dirfd: i64, path: &str) -> String {
    let joined = if path.starts_with('/') {
        std::path::PathBuf::from(path)
    } else {
        let base = if dirfd == libc::AT_FDCWD as i64 {
            process::working_directory(tid.as_raw() as u32)
        } else {
            process::descriptor_target(tid.as_raw() as u32, dirfd as i32)
        };
        match base {
            Ok(b) => b.join(path),
            Err(_) => std::path::PathBuf::from(path),
        }
    };
    // The directory as the open's /proc link names it (links resolved), the name kept.
    match (joined.parent(), joined.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .map(|d| d.join(name))
            .unwrap_or(joined.clone()),
        _ => joined,
    }
    .to_string_lossy()
    .into_owned()
}

/// A 64-bit value in the tracee's memory (an loff_t an offset pointer names).
fn read_u64(tid: Pid, addr: u64) -> Option<u64> {
    use nix::sys::uio::{process_vm_readv, RemoteIoVec};
    let mut buf = [0u8; 8];
    let got = process_vm_readv(
        tid,
        &mut [std::io::IoSliceMut::new(&mut buf)],
        &[RemoteIoVec {
            base: addr as usize,
            len: 8,
        }],
    )
    .ok()?;
    (got == 8).then(|| u64::from_ne_bytes(buf))
}

/// A 64-bit offset argument at `i`: one register on a 64-bit board, a low and a high half
/// on a 32-bit one.
fn off(args: &[u64; 6], i: usize) -> u64 {
    if cfg!(target_pointer_width = "64") {
        args[i]
    } else {
        (args[i] & 0xffff_ffff) | (args.get(i + 1).copied().unwrap_or(0) << 32)
    }
}

/// Open flags in words: the access mode and the flags that change how data reaches the disk.
pub fn flag_words(flags: i32) -> String {
    let mut w = vec![match flags & libc::O_ACCMODE {
        libc::O_RDONLY => "O_RDONLY",
        libc::O_WRONLY => "O_WRONLY",
        _ => "O_RDWR",
    }];
    for (f, name) in [
        (libc::O_CREAT, "O_CREAT"),
        (libc::O_EXCL, "O_EXCL"),
        (libc::O_TRUNC, "O_TRUNC"),
        (libc::O_APPEND, "O_APPEND"),
        (libc::O_DIRECT, "O_DIRECT"),
        (libc::O_SYNC, "O_SYNC"),
        (libc::O_DSYNC, "O_DSYNC"),
        (libc::O_TMPFILE & !libc::O_DIRECTORY, "O_TMPFILE"),
    ] {
        // O_SYNC holds O_DSYNC's bit: named once.
        if flags & f == f && !(name == "O_DSYNC" && flags & libc::O_SYNC == libc::O_SYNC) {
            w.push(name);
        }
    }
    w.join("|")
}

struct Tracer {
    t0: Instant,
    /// Files the recorder opened for writing or wrote: a close of any other (a standard
    /// error inherited as a file) is not the recorder's output.
    touched: HashSet<String>,
    regular: HashMap<String, bool>,
    /// The file of each descriptor an interposed record named, by (process, descriptor):
    /// read from /proc once, not at every write. Forgotten at every stop after which a
    /// descriptor's number may name another file or its file another name (close, dup2,
    /// dup3, close_range, execve, a rename, a thread's exit): those calls stop, and the pipe
    /// is read before they run.
    interposed_files: HashMap<(i32, i32), Option<String>>,
    unseen: Vec<String>,
    /// How many of `unseen` the trace has been told.
    told: usize,
}

impl Tracer {
    fn ns(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.t0).as_nanos() as u64
    }

    fn note_unseen(&mut self, what: String) {
        if !self.unseen.contains(&what) {
            self.unseen.push(what);
        }
    }

    /// What was found unseen since the last call, handed on to the trace as it is found.
    fn tell_unseen(
        &mut self,
        sink: &mut dyn FnMut(Seen<'_>) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        if PROC_DENIED.load(Ordering::Relaxed) {
            self.note_unseen(NOT_DUMPABLE_UNSEEN.into());
        }
        while self.told < self.unseen.len() {
            let what = self.unseen[self.told].clone();
            self.told += 1;
            sink(Seen::Unseen(&what))?;
        }
        Ok(())
    }

    /// What must be read before the call runs, or [`Before::Skip`] for a call on something
    /// that is not the recorder's output.
    fn before(&mut self, tid: Pid, name: &str, a: &[u64; 6]) -> Before {
        if matches!(
            name,
            "close"
                | "dup2"
                | "dup3"
                | "close_range"
                | "execve"
                | "execveat"
                | "rename"
                | "renameat"
                | "renameat2"
        ) {
            self.interposed_files.clear();
        }
        let fd = a[0] as i32;
        let file_of = |t: &mut Self, fd: i32| {
            fd_file(tid, fd, &mut t.regular).map_or(Before::Skip, Before::File)
        };
        match name {
            "open" | "creat" | "openat" | "openat2" | "io_uring_setup" => Before::Nothing,
            // Stopped only so that the interposer's records were read first.
            "dup2" | "dup3" | "close_range" | "execve" | "execveat" => Before::Skip,
            // A file opened for reading only is not the recorder's output.
            "close" => match fdinfo_flags(tid, fd) {
                Some(f) if f & libc::O_ACCMODE != libc::O_RDONLY => file_of(self, fd),
                _ => Before::Skip,
            },
            "mmap" => file_of(self, a[4] as i32),
            // The file they fill is their third argument.
            "copy_file_range" | "splice" => file_of(self, a[2] as i32),
            "io_submit" => {
                self.note_unseen(
                    "the recorder submitted Linux native AIO (io_submit): its asynchronous writes and syncs are not in the trace".into(),
                );
                Before::Skip
            }
            "rename" => match (read_string(tid, a[0]), read_string(tid, a[1])) {
                (Some(f), Some(t)) => Before::Rename(
                    absolute(tid, libc::AT_FDCWD as i64, &f),
                    absolute(tid, libc::AT_FDCWD as i64, &t),
                ),
                _ => Before::Skip,
            },
            "renameat" | "renameat2" => match (read_string(tid, a[1]), read_string(tid, a[3])) {
                (Some(f), Some(t)) => Before::Rename(
                    absolute(tid, a[0] as i32 as i64, &f),
                    absolute(tid, a[2] as i32 as i64, &t),
                ),
                _ => Before::Skip,
            },
            "unlink" => read_string(tid, a[0])
                .map(|p| Before::File(absolute(tid, libc::AT_FDCWD as i64, &p)))
                .unwrap_or(Before::Skip),
            "unlinkat" if a[2] as i32 & libc::AT_REMOVEDIR == 0 => read_string(tid, a[1])
                .map(|p| Before::File(absolute(tid, a[0] as i32 as i64, &p)))
                .unwrap_or(Before::Skip),
            "unlinkat" => Before::Skip,
            // The write family, the syncs, truncate and fallocate: on their descriptor.
            _ => file_of(self, fd),
        }
    }

    /// The call at its exit, as the trace has it; None for a call on something other than
    /// a regular file.
    fn call(&mut self, tid: Pid, p: Pending, ret: i64, ended: Instant) -> Option<Call> {
        let name = filter::name(p.nr)?;
        let a = &p.args;
        // The descriptor's file, read before the call ran.
        let known = match &p.before {
            Before::File(f) => Some(f.clone()),
            _ => None,
        };
        let fd = a[0] as i32;
        let errno = (ret < 0).then_some(-ret as i32);
        let ok = ret >= 0;
        let op = match name {
            "open" | "creat" | "openat" | "openat2" => {
                if !ok {
                    return None;
                }
                let file = fd_file(tid, ret as i32, &mut self.regular)?;
                let flags = match name {
                    "open" => a[1] as i32,
                    "creat" => libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
                    "openat" => a[2] as i32,
                    // openat2's flags are in a struct; the file's flags as opened instead.
                    _ => fdinfo_flags(tid, ret as i32).unwrap_or(0),
                };
                // Read only (an openat2 the filter could not tell): not the recorder's output.
                if flags & (libc::O_ACCMODE | libc::O_CREAT | libc::O_TRUNC) == 0 {
                    return None;
                }
                Op::Open {
                    file,
                    fd: ret as i32,
                    flags: flag_words(flags),
                }
            }
            "write" | "writev" | "pwrite64" | "pwritev" | "pwritev2" | "sendfile"
            | "sendfile64" | "copy_file_range" | "splice" => {
                let file = known?;
                let len = ret.max(0) as u64;
                // The descriptor written: the first argument, or the third of the calls
                // that copy from one descriptor to another.
                let fd = match name {
                    "copy_file_range" | "splice" => a[2] as i32,
                    _ => fd,
                };
                let positional = match name {
                    "pwrite64" => Some(if cfg!(target_pointer_width = "64") {
                        a[3]
                    } else {
                        off(a, 4)
                    }),
                    "pwritev" => Some(off(a, 3)),
                    // pwritev2 at offset -1 writes at the position, as writev.
                    "pwritev2" => Some(off(a, 3)).filter(|o| *o != u64::MAX),
                    // An offset pointer for the file written: the call moved it past the
                    // bytes it wrote, and left the descriptor's position alone.
                    "copy_file_range" | "splice" if a[3] != 0 => {
                        read_u64(tid, a[3]).map(|end| end.saturating_sub(len))
                    }
                    _ => None,
                };
                let offset = match positional {
                    Some(o) => o,
                    None => fd_pos(tid, fd).map_or(0, |pos| pos.saturating_sub(len)),
                };
                Op::Write {
                    file,
                    fd,
                    offset,
                    len,
                    call: name.to_string(),
                    // RWF_DSYNC, RWF_SYNC: in the sixth register on every board.
                    flags: if name == "pwritev2" { a[5] as u32 } else { 0 },
                }
            }
            "fcntl" | "fcntl64" if ok && a[1] as i32 == libc::F_SETFL => {
                let words = flag_words(a[2] as i32);
                // Without the access mode, which F_SETFL does not change.
                let flags = words
                    .split_once('|')
                    .map_or("", |(_, rest)| rest)
                    .to_string();
                Op::SetFlags {
                    file: known?,
                    fd,
                    flags,
                }
            }
            "fsync" => Op::Fsync { file: known?, fd },
            "fdatasync" => Op::Fdatasync { file: known?, fd },
            "sync_file_range" => Op::SyncFileRange {
                file: known?,
                fd,
                offset: a[1],
                len: a[2],
                flags: a[3] as u32,
            },
            "sync_file_range2" => Op::SyncFileRange {
                file: known?,
                fd,
                offset: off(a, 2),
                len: off(a, 4),
                flags: a[1] as u32,
            },
            "ftruncate" => Op::Ftruncate {
                file: known?,
                fd,
                len: a[1],
            },
            "ftruncate64" => Op::Ftruncate {
                file: known?,
                fd,
                len: off(a, 2),
            },
            "fallocate" => Op::Fallocate {
                file: known?,
                fd,
                mode: a[1] as u32,
                offset: off(a, 2),
                len: if cfg!(target_pointer_width = "64") {
                    a[3]
                } else {
                    off(a, 4)
                },
            },
            "close" => match p.before {
                Before::File(file) if self.touched.contains(&file) => Op::Close { file, fd },
                _ => return None,
            },
            "rename" | "renameat" | "renameat2" => match p.before {
                Before::Rename(from, to) => Op::Rename {
                    from,
                    to,
                    flags: if name == "renameat2" { a[4] as u32 } else { 0 },
                },
                _ => return None,
            },
            "unlink" | "unlinkat" => match p.before {
                Before::File(file) => Op::Unlink { file },
                _ => return None,
            },
            "mmap" => {
                let shared_write =
                    a[2] as i32 & libc::PROT_WRITE != 0 && a[3] as i32 & libc::MAP_SHARED != 0;
                match (ok, shared_write, known) {
                    (true, true, Some(file)) => {
                        self.note_unseen(format!(
                            "{file} was mapped shared and writable: what is written through the mapping is not in the trace"
                        ));
                        Op::MappedForWrite { file, len: a[1] }
                    }
                    _ => return None,
                }
            }
            "io_uring_setup" => {
                if !ok {
                    return None;
                }
                self.note_unseen(
                    "the recorder set up io_uring: what it writes through io_uring is not in the trace".into(),
                );
                Op::IoUring
            }
            _ => return None,
        };
        if let (Some(f), false) = (
            op.file(),
            matches!(op, Op::Close { .. } | Op::Unlink { .. }),
        ) {
            if !self.touched.contains(f) {
                self.touched.insert(f.to_string());
            }
        }
        Some(Call {
            t_ns: self.ns(p.started),
            dur_ns: ended.saturating_duration_since(p.started).as_nanos() as u64,
            tid: tid.as_raw(),
            op,
            errno,
        })
    }
}

impl Tracer {
    /// A call the interposer made and reported, as the trace has it; None for one on
    /// something other than a regular file. `mono0` is the capture's start on
    /// CLOCK_MONOTONIC, the interposer's clock.
    fn interposed(&mut self, r: &preload::Record, mono0: u64) -> Option<Call> {
        // The descriptor is still the one the call used: a close stops for the tracer,
        // which reads the pipe before it lets the close run.
        let file = match self.interposed_files.get(&(r.pid, r.fd)) {
            Some(file) => file.clone(),
            None => {
                let file = fd_file(Pid::from_raw(r.pid), r.fd, &mut self.regular);
                self.interposed_files.insert((r.pid, r.fd), file.clone());
                file
            }
        }?;
        let fd = r.fd;
        let op = match r.kind {
            preload::Kind::Write
            | preload::Kind::Pwrite
            | preload::Kind::Writev
            | preload::Kind::Pwritev => Op::Write {
                file,
                fd,
                offset: r.offset.unwrap_or(0),
                len: r.ret.max(0) as u64,
                call: r.kind.call().to_string(),
                flags: 0,
            },
            preload::Kind::Fsync => Op::Fsync { file, fd },
            preload::Kind::Fdatasync => Op::Fdatasync { file, fd },
            preload::Kind::SyncFileRange => Op::SyncFileRange {
                file,
                fd,
                offset: r.offset.unwrap_or(0),
                len: r.len,
                flags: r.flags,
            },
        };
        if let Some(f) = op.file() {
            if !self.touched.contains(f) {
                self.touched.insert(f.to_string());
            }
        }
        Some(Call {
            t_ns: r.start_ns.saturating_sub(mono0),
            dur_ns: r.end_ns.saturating_sub(r.start_ns),
            tid: r.tid,
            op,
            errno: (r.ret < 0).then_some(-r.ret as i32),
        })
    }
}

/// CLOCK_MONOTONIC now, in ns: the clock of [`Instant`] on Linux and of the interposer.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A stop flag never set: a wait that only a traced thread's status ends.
static NEVER: AtomicBool = AtomicBool::new(false);

/// The write end of the pipe SIGCHLD's handler wakes the tracer through, or -1.
static WAKE_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

extern "C" fn on_sigchld(_: libc::c_int) {
    let fd = WAKE_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: write is async-signal-safe; a full pipe (a wake-up pending) is fine.
        unsafe { libc::write(fd, [1u8].as_ptr().cast(), 1) };
    }
}

/// How the tracer waits: in waitpid alone, or in poll on SIGCHLD (through a pipe its
/// handler writes to) for at most 20 ms at a time, so that it also reads the interposer's
/// records at each wake-up and before each stop it hands on, and sees the stop flag within
/// 20 ms whatever the traced threads do (a recorder that waits with SIGCHLD blocked never
/// stops for a signal). SIGCHLD's handler is the process's: one such wait at a time in a
/// process (a second would be woken by the 20 ms timeout instead of the signal).
struct Waiter {
    polled: Option<Polled>,
}

/// What the tracer waits on beside waitpid when it polls.
struct Polled {
    /// The interposer's records, when it runs.
    channel: Option<preload::Channel>,
    /// The read end of the pipe SIGCHLD's handler writes to.
    wake: OwnedFd,
    /// Its write end, kept open for the handler (WAKE_FD holds its number).
    _wake_write: OwnedFd,
    /// SIGCHLD's action before, put back at the end.
    previous: libc::sigaction,
}

impl Waiter {
    /// A waiter in waitpid alone.
    fn blocking() -> Waiter {
        Waiter { polled: None }
    }

    /// A waiter that polls, reading the interposer's `channel` when there is one.
    fn polling(channel: Option<preload::Channel>) -> std::io::Result<Waiter> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills the two descriptors it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: descriptors just made, owned here alone.
        let (wake_read, wake_write) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        WAKE_FD.store(wake_write.as_raw_fd(), Ordering::SeqCst);
        // SAFETY: a handler that only writes to a pipe; the previous action is kept to be
        // put back.
        let previous = unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_sigchld as extern "C" fn(libc::c_int) as usize;
            act.sa_flags = libc::SA_RESTART;
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGCHLD, &act, &mut old) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            old
        };
        Ok(Waiter {
            polled: Some(Polled {
                channel,
                wake: wake_read,
                _wake_write: wake_write,
                previous,
            }),
        })
    }

    /// The next status of a traced thread; `records` gets the interposer's records first.
    /// A polling waiter returns `StillAlive` once `stop` is set and no thread has a status.
    fn next(
        &mut self,
        stop: &AtomicBool,
        records: &mut dyn FnMut(Vec<preload::Record>),
    ) -> nix::Result<WaitStatus> {
        let Some(Polled { channel, wake, .. }) = self.polled.as_mut() else {
            return waitpid(None, Some(WaitPidFlag::__WALL | WaitPidFlag::__WNOTHREAD));
        };
        loop {
            let status = waitpid(
                None,
                Some(WaitPidFlag::__WALL | WaitPidFlag::__WNOTHREAD | WaitPidFlag::WNOHANG),
            )?;
            if let Some(channel) = channel.as_mut() {
                let got = channel.drain();
                if !got.is_empty() {
                    records(got);
                }
            }
            if status != WaitStatus::StillAlive || stop.load(Ordering::SeqCst) {
                return Ok(status);
            }
            // Woken by SIGCHLD (a stop), or every 20 ms to read the interposer's records:
            // not at each record, so that the tracer does not take a core from the
            // recorder at every write (the pipe holds thousands of records).
            let mut wake_fd = libc::pollfd {
                fd: wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: poll on one descriptor owned here.
            unsafe { libc::poll(&mut wake_fd, 1, 20) };
            let mut buf = [0u8; 64];
            // SAFETY: a non-blocking read into a buffer of its length.
            while unsafe { libc::read(wake.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
        }
    }

    /// The records still in the pipe once every traced process has ended.
    fn finish(&mut self) -> Vec<preload::Record> {
        match self.polled.as_mut().and_then(|p| p.channel.as_mut()) {
            Some(channel) => channel.drain(),
            None => Vec::new(),
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Some(polled) = self.polled.as_ref() {
            WAKE_FD.store(-1, Ordering::SeqCst);
            // SAFETY: puts back the action sigaction gave in Waiter::polling.
            unsafe { libc::sigaction(libc::SIGCHLD, &polled.previous, std::ptr::null_mut()) };
        }
    }
}

fn fdinfo_flags(tid: Pid, fd: i32) -> Option<i32> {
    process::descriptor_info(tid.as_raw() as u32, fd).map(|i| i.flags)
}

/// This process's CPU time so far (user + system).
fn own_cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is always valid.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Runs `program` with `argv` under capture until it and every process it made have ended,
/// handing each call to `sink` as it returns. `started` gets the recorder's pid once it runs; `stop` is
/// the interrupt flag (the recorder, in the same process group, gets the same Ctrl-C and ends
/// in its own way; the capture goes on until it has).
///
/// With `interpose`, a dynamically linked recorder also loads the interposer
/// ([`preload`]): its writes and syncs then run without a stop and are reported over a pipe.
pub fn run(
    program: &CString,
    argv: &[CString],
    interpose: bool,
    sink: &mut dyn FnMut(Seen<'_>) -> std::io::Result<()>,
    stop: &AtomicBool,
    t0: Instant,
    started: &mut dyn FnMut(u32),
) -> Result<Outcome, CaptureError> {
    let channel = if interpose {
        preload::Channel::new().map_err(|e| {
            CaptureError::Setup(format!("cannot set up the capture's interposer: {e}"))
        })?
    } else {
        None
    };
    let envp = preload::environment(channel.as_ref().map_or(&[], |c| &c.env[..]));
    let mut envp_ptrs: Vec<*const libc::c_char> = envp.iter().map(|a| a.as_ptr()).collect();
    envp_ptrs.push(std::ptr::null());
    // Where the capture started on the interposer's clock.
    let mono0 = monotonic_ns().saturating_sub(t0.elapsed().as_nanos() as u64);
    let prog = filter::program();
    let fprog = libc::sock_fprog {
        len: prog.len() as libc::c_ushort,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let cpu0 = own_cpu();
    // SAFETY: the child calls only async-signal-safe functions (raise, prctl, execv, _exit)
    // on memory prepared before the fork.
    let child = match unsafe { nix::unistd::fork() }.map_err(|e| CaptureError::Start(io(e)))? {
        ForkResult::Child => unsafe {
            // Stopped until the tracer has seized it and set its options: a traced call
            // made before that would fail with ENOSYS instead of stopping.
            libc::raise(libc::SIGSTOP);
            // Without root, a filter needs no_new_privs (a set-user-ID program then runs
            // without its privileges).
            if !root && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                libc::_exit(126);
            }
            if libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &fprog as *const libc::sock_fprog as libc::c_ulong,
                0,
                0,
            ) != 0
            {
                libc::_exit(126);
            }
            libc::execve(program.as_ptr(), argv_ptrs.as_ptr(), envp_ptrs.as_ptr());
            libc::_exit(127);
        },
        ForkResult::Parent { child } => child,
    };
    // The recorder's end of the pipe is the recorder's alone: the pipe ends when it does.
    let channel = channel.map(|mut c| {
        c.write = None;
        c
    });
    let mut waiter = match channel {
        Some(c) => Waiter::polling(Some(c)).map_err(CaptureError::Start)?,
        None => Waiter::blocking(),
    };
    // Seized (not PTRACE_TRACEME), so that a group-stop can be told from a signal and passed
    // on with PTRACE_LISTEN: a recorder someone pauses with SIGSTOP or Ctrl-Z stays paused.
    let give_up = |why: String| {
        let _ = nix::sys::signal::kill(child, Signal::SIGKILL);
        let _ = waitpid(child, None);
        CaptureError::Setup(why)
    };
    match waitpid(child, Some(WaitPidFlag::WUNTRACED)) {
        Ok(WaitStatus::Stopped(_, Signal::SIGSTOP)) => {}
        other => {
            return Err(give_up(format!(
                "the recorder did not stop for its tracer: {other:?}"
            )))
        }
    }
    let options = ptrace::Options::PTRACE_O_TRACESYSGOOD
        | ptrace::Options::PTRACE_O_TRACESECCOMP
        | ptrace::Options::PTRACE_O_TRACECLONE
        | ptrace::Options::PTRACE_O_TRACEFORK
        | ptrace::Options::PTRACE_O_TRACEVFORK
        | ptrace::Options::PTRACE_O_TRACEEXEC
        // A stop as a process exits, its descriptors still open: the interposer's records
        // are read there.
        | ptrace::Options::PTRACE_O_TRACEEXIT
        // The recorder ends with the capture: left running with the filter and no tracer,
        // its file calls would fail (ENOSYS).
        | ptrace::Options::PTRACE_O_EXITKILL;
    if let Err(e) = ptrace::seize(child, options) {
        return Err(give_up(format!("cannot trace the recorder: {}", io(e))));
    }
    // Seized while stopped, it traps at once; SIGCONT then ends its stop, and it runs.
    match waitpid(child, Some(WaitPidFlag::__WALL)) {
        Ok(WaitStatus::PtraceEvent(_, _, ev)) if ev == libc::PTRACE_EVENT_STOP => {}
        other => {
            return Err(give_up(format!(
                "the recorder did not stop for its tracer once seized: {other:?}"
            )))
        }
    }
    let _ = nix::sys::signal::kill(child, Signal::SIGCONT);
    ptrace::cont(child, None).map_err(|e| CaptureError::Start(io(e)))?;
    started(child.as_raw() as u32);

    let mut t = Tracer {
        t0,
        touched: HashSet::new(),
        regular: HashMap::new(),
        interposed_files: HashMap::new(),
        unseen: Vec::new(),
        told: 0,
    };
    let mut out = Outcome::default();
    let mut pending: HashMap<Pid, Pending> = HashMap::new();
    let mut known: HashSet<Pid> = HashSet::from([child]);
    let seccomp_stop_first = sinkrate_sys::kernel_older_than(4, 8);
    let mut write_error = None;
    PROC_DENIED.store(false, Ordering::Relaxed);
    loop {
        if stop.load(Ordering::SeqCst) {
            out.interrupted = true;
        }
        t.tell_unseen(sink).map_err(CaptureError::Write)?;
        // Started here, the recorder ends in its own way after Ctrl-C (it had the same one):
        // the wait goes on until it has, whatever the stop flag says.
        let status = match waiter.next(&NEVER, &mut |r| {
            if let Err(e) = hand_on(&mut t, &mut out, sink, r, mono0) {
                write_error.get_or_insert(e);
            }
        }) {
            Ok(s) => s,
            Err(Errno::ECHILD) => break,
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(CaptureError::Trace(io(e))),
        };
        if let Some(e) = write_error.take() {
            return Err(CaptureError::Write(e));
        }
        // A thread may die between its stop and the tracer's request (ESRCH): it is gone.
        match status {
            WaitStatus::PtraceEvent(tid, _, ev) if ev == libc::PTRACE_EVENT_SECCOMP => {
                out.stops += 1;
                known.insert(tid);
                // A write through the other ABI: said, and let run.
                if ptrace::getevent(tid).is_ok_and(|d| d as u32 == filter::FOREIGN_ABI) {
                    t.note_unseen(filter::FOREIGN_ABI_UNSEEN.into());
                    let _ = ptrace::cont(tid, None);
                    continue;
                }
                let Ok((nr, args)) = regs::entry(tid) else {
                    // Gone (ESRCH), or unreadable: let it run on.
                    let _ = ptrace::cont(tid, None);
                    continue;
                };
                let before = match filter::name(nr) {
                    Some(name) => t.before(tid, name, &args),
                    None => Before::Skip,
                };
                if matches!(before, Before::Skip) {
                    // Nothing to learn at its exit: one stop instead of two.
                    let _ = ptrace::cont(tid, None);
                    continue;
                }
                let started = Instant::now();
                pending.insert(
                    tid,
                    Pending {
                        entry_to_pass: seccomp_stop_first,
                        nr,
                        args,
                        started,
                        before,
                    },
                );
                // To its exit stop.
                let _ = ptrace::syscall(tid, None);
            }
            WaitStatus::PtraceSyscall(tid) => {
                let ended = Instant::now();
                out.stops += 1;
                if let Some(p) = pending.get_mut(&tid).filter(|p| p.entry_to_pass) {
                    p.entry_to_pass = false;
                    let _ = ptrace::syscall(tid, None);
                    continue;
                }
                let call = match (pending.remove(&tid), regs::result(tid)) {
                    (Some(p), Ok(ret)) => t.call(tid, p, ret, ended),
                    _ => None,
                };
                let _ = ptrace::cont(tid, None);
                if let Some(c) = call {
                    out.calls += 1;
                    sink(Seen::Call(&c)).map_err(CaptureError::Write)?;
                }
            }
            _ if group_stop(&status) => {
                // Paused by someone (SIGSTOP, Ctrl-Z): it stays paused until SIGCONT.
                if let Some(tid) = status.pid() {
                    known.insert(tid);
                    listen(tid);
                }
            }
            WaitStatus::PtraceEvent(tid, _, ev) => {
                if ev == libc::PTRACE_EVENT_EXIT {
                    t.interposed_files.clear();
                }
                // A new thread's or child's first stop (PTRACE_EVENT_STOP), a fork, an exec.
                known.insert(tid);
                let _ = ptrace::cont(tid, None);
            }
            WaitStatus::Stopped(tid, sig) => {
                // A signal for the recorder: delivered.
                let _ = ptrace::cont(tid, Some(sig));
            }
            WaitStatus::Exited(tid, code) => {
                pending.remove(&tid);
                if tid == child {
                    out.exit_code = Some(code);
                }
            }
            WaitStatus::Signaled(tid, sig, _) => {
                pending.remove(&tid);
                if tid == child {
                    out.signal = Some(sig as i32);
                }
            }
            _ => {}
        }
    }
    let rest = waiter.finish();
    hand_on(&mut t, &mut out, sink, rest, mono0).map_err(CaptureError::Write)?;
    t.tell_unseen(sink).map_err(CaptureError::Write)?;
    if stop.load(Ordering::SeqCst) {
        out.interrupted = true;
    }
    out.end_ns = t.ns(Instant::now());
    out.unseen = t.unseen;
    out.tracer_cpu = own_cpu().saturating_sub(cpu0);
    Ok(out)
}

/// The interposer's records, as calls, to the trace.
fn hand_on(
    t: &mut Tracer,
    out: &mut Outcome,
    sink: &mut dyn FnMut(Seen<'_>) -> std::io::Result<()>,
    records: Vec<preload::Record>,
    mono0: u64,
) -> std::io::Result<()> {
    for r in records {
        if let Some(c) = t.interposed(&r, mono0) {
            out.calls += 1;
            out.interposed += 1;
            sink(Seen::Call(&c))?;
        }
    }
    Ok(())
}

/// Whether a stop is a group-stop of a seized thread (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU
/// reached it): the process was paused by someone (a supervisor, a shell's Ctrl-Z) and
/// must stay paused until SIGCONT, traced or not.
fn group_stop(status: &WaitStatus) -> bool {
    matches!(
        status,
        WaitStatus::PtraceEvent(_, sig, ev)
            if *ev == libc::PTRACE_EVENT_STOP
                && matches!(sig, Signal::SIGSTOP | Signal::SIGTSTP | Signal::SIGTTIN | Signal::SIGTTOU)
    )
}

/// Leaves a thread in its group-stop while the tracer still hears of it (PTRACE_LISTEN): it
/// runs again at SIGCONT, as it would untraced, and not before.
fn listen(tid: Pid) {
    // SAFETY: PTRACE_LISTEN on a seized thread in a group-stop takes no addresses; a thread
    // gone meanwhile answers ESRCH, which is fine.
    unsafe {
        libc::ptrace(libc::PTRACE_LISTEN as _, tid.as_raw(), 0, 0);
    }
}

/// PTRACE_GET_SYSCALL_INFO (Linux 5.3): whether a syscall stop is an entry or an exit, with
/// the call's number and arguments or its result. Read as the kernel lays it out
/// (linux/ptrace.h): libc has the struct on glibc targets only.
const PTRACE_GET_SYSCALL_INFO: libc::c_uint = 0x420e;

enum SyscallStop {
    /// The ABI's AUDIT_ARCH, the call's number and its arguments.
    Entry(u32, libc::c_long, [u64; 6]),
    Exit(i64),
    Other,
}

fn syscall_stop(tid: Pid) -> nix::Result<SyscallStop> {
    let mut info = [0u64; 11];
    // SAFETY: the kernel writes at most `size` bytes into `info`, which outlives the call.
    let rc = unsafe {
        libc::ptrace(
            PTRACE_GET_SYSCALL_INFO as _,
            tid.as_raw(),
            std::mem::size_of_val(&info),
            info.as_mut_ptr(),
        )
    };
    if rc < 0 {
        return Err(Errno::last());
    }
    // op is the first byte; the union starts at byte 24.
    let op = (info[0] & 0xff) as u8;
    Ok(match op {
        1 => {
            let mut args = [0u64; 6];
            args.copy_from_slice(&info[4..10]);
            // arch is the u32 after op and its three bytes of padding.
            SyscallStop::Entry((info[0] >> 32) as u32, info[3] as libc::c_long, args)
        }
        2 => SyscallStop::Exit(info[3] as i64),
        _ => SyscallStop::Other,
    })
}

/// The threads of a running process.
fn threads(pid: Pid) -> Vec<Pid> {
    process::threads(pid.as_raw() as u32)
        .into_iter()
        .map(|t| Pid::from_raw(t as i32))
        .collect()
}

/// Captures a recorder already running (`--pid`): every thread attached (and each new one),
/// stopped at every system call, since no filter can be added to a running process; the file
/// calls kept as [`run`] keeps them. Ends when the recorder does, or at `stop` (Ctrl-C),
/// when every thread is let go and the recorder runs on untraced.
pub fn attach(
    pid: Pid,
    sink: &mut dyn FnMut(Seen<'_>) -> std::io::Result<()>,
    stop: &AtomicBool,
    t0: Instant,
) -> Result<Outcome, CaptureError> {
    let cpu0 = own_cpu();
    let options = ptrace::Options::PTRACE_O_TRACESYSGOOD
        | ptrace::Options::PTRACE_O_TRACECLONE
        | ptrace::Options::PTRACE_O_TRACEFORK
        | ptrace::Options::PTRACE_O_TRACEVFORK;
    let mut known: HashSet<Pid> = HashSet::new();
    // Threads made while attaching are attached by their parent's option, or here.
    loop {
        let mut new = false;
        for tid in threads(pid) {
            if known.contains(&tid) {
                continue;
            }
            match ptrace::seize(tid, options) {
                Ok(()) => {
                    let _ = ptrace::interrupt(tid);
                    known.insert(tid);
                    new = true;
                }
                // Gone already, or attached through its parent's clone.
                Err(Errno::ESRCH) | Err(Errno::EPERM) if !known.is_empty() => {}
                Err(e) => {
                    for t in &known {
                        let _ = ptrace::detach(*t, None);
                    }
                    return Err(CaptureError::Start(io(e)));
                }
            }
        }
        if !new {
            break;
        }
    }
    // The tracer polls (Waiter::polling): Ctrl-C is seen within 20 ms whatever the
    // recorder's threads are doing, with nothing sent to them.
    trace_attached(pid, known, sink, stop, t0, cpu0)
}

/// [`attach`]'s loop, on the thread that attached (ptrace answers only to it).
fn trace_attached(
    pid: Pid,
    mut known: HashSet<Pid>,
    sink: &mut dyn FnMut(Seen<'_>) -> std::io::Result<()>,
    stop: &AtomicBool,
    t0: Instant,
    cpu0: Duration,
) -> Result<Outcome, CaptureError> {
    let mut t = Tracer {
        t0,
        touched: HashSet::new(),
        regular: HashMap::new(),
        interposed_files: HashMap::new(),
        unseen: Vec::new(),
        told: 0,
    };
    let mut out = Outcome::default();
    let mut pending: HashMap<Pid, Pending> = HashMap::new();
    let mut detaching = false;
    let mut waiter = Waiter::polling(None).map_err(CaptureError::Start)?;
    PROC_DENIED.store(false, Ordering::Relaxed);
    let result = loop {
        if known.is_empty() {
            break Ok(());
        }
        if let Err(e) = t.tell_unseen(sink) {
            break Err(CaptureError::Write(e));
        }
        if stop.load(Ordering::SeqCst) && !detaching {
            detaching = true;
            out.interrupted = true;
            for tid in &known {
                let _ = ptrace::interrupt(*tid);
            }
        }
        // Once letting go, every thread was interrupted and stops at once: wait in waitpid.
        let waited = if detaching {
            waitpid(None, Some(WaitPidFlag::__WALL | WaitPidFlag::__WNOTHREAD))
        } else {
            waiter.next(stop, &mut |_| {})
        };
        let status = match waited {
            Ok(s) => s,
            Err(Errno::ECHILD) => break Ok(()),
            Err(Errno::EINTR) => continue,
            Err(e) => break Err(CaptureError::Trace(io(e))),
        };
        let Some(tid) = status.pid() else { continue };
        match status {
            WaitStatus::Exited(_, code) => {
                known.remove(&tid);
                pending.remove(&tid);
                if tid == pid {
                    out.exit_code = Some(code);
                }
                continue;
            }
            WaitStatus::Signaled(_, sig, _) => {
                known.remove(&tid);
                pending.remove(&tid);
                if tid == pid {
                    out.signal = Some(sig as i32);
                }
                continue;
            }
            _ => {}
        }
        known.insert(tid);
        // The signal to pass on when it resumes (none for a ptrace stop).
        let pass = match status {
            WaitStatus::Stopped(_, sig) => Some(sig),
            _ => None,
        };
        if detaching {
            // A thread in a group-stop stays stopped once let go, as it was.
            let _ = ptrace::detach(tid, pass);
            known.remove(&tid);
            continue;
        }
        if group_stop(&status) {
            listen(tid);
            continue;
        }
        if let WaitStatus::PtraceSyscall(_) = status {
            out.stops += 1;
            match syscall_stop(tid) {
                Ok(SyscallStop::Entry(arch, nr, _))
                    if arch != filter::AUDIT_ARCH
                        && filter::FOREIGN_WRITES.contains(&(nr as u32)) =>
                {
                    t.note_unseen(filter::FOREIGN_ABI_UNSEEN.into());
                }
                Ok(SyscallStop::Entry(arch, nr, args))
                    if arch == filter::AUDIT_ARCH && filter::wanted(nr, &args) =>
                {
                    let before = filter::name(nr).map_or(Before::Skip, |n| t.before(tid, n, &args));
                    if !matches!(before, Before::Skip) {
                        pending.insert(
                            tid,
                            Pending {
                                entry_to_pass: false,
                                nr,
                                args,
                                started: Instant::now(),
                                before,
                            },
                        );
                    }
                }
                Ok(SyscallStop::Exit(ret)) => {
                    let ended = Instant::now();
                    if let Some(p) = pending.remove(&tid) {
                        if let Some(c) = t.call(tid, p, ret, ended) {
                            let _ = ptrace::syscall(tid, None);
                            out.calls += 1;
                            if let Err(e) = sink(Seen::Call(&c)) {
                                break Err(CaptureError::Write(e));
                            }
                            continue;
                        }
                    }
                }
                Ok(_) => {}
                Err(Errno::EIO) | Err(Errno::EINVAL) => {
                    break Err(CaptureError::Setup(
                        "--pid needs Linux 5.3 or later (PTRACE_GET_SYSCALL_INFO); start the recorder under capture instead".into(),
                    ))
                }
                Err(_) => {}
            }
        }
        let _ = ptrace::syscall(tid, pass);
    };
    // Let go of whatever is still attached (an error ended the loop).
    for tid in &known {
        let _ = ptrace::interrupt(*tid);
    }
    while !known.is_empty() {
        match waitpid(None, Some(WaitPidFlag::__WALL | WaitPidFlag::__WNOTHREAD)) {
            Ok(s) => {
                if let Some(tid) = s.pid() {
                    if !matches!(s, WaitStatus::Exited(..) | WaitStatus::Signaled(..)) {
                        let _ = ptrace::detach(tid, None);
                    }
                    known.remove(&tid);
                }
            }
            Err(_) => break,
        }
    }
    result?;
    t.tell_unseen(sink).map_err(CaptureError::Write)?;
    out.end_ns = t.ns(Instant::now());
    out.unseen = t.unseen;
    out.tracer_cpu = own_cpu().saturating_sub(cpu0);
    Ok(out)
}
