//! Other processes as /proc describes them: the system layer's one reader of /proc/PID for
//! questions about who a process is.

use sinkrate_procparse::pid;

/// A process's real, effective and saved user ids (`Uid:` of /proc/PID/status); None when
/// it is gone or the line cannot be read.
pub fn uids(pid: u32) -> Option<[u32; 3]> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_uids(&status)
}

fn parse_uids(status: &str) -> Option<[u32; 3]> {
    let mut ids = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .map(|u| u.parse::<u32>().ok());
    Some([ids.next()??, ids.next()??, ids.next()??])
}

/// What /proc says a process is, for a tool about to attach to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Process {
    /// No such process (or its /proc entry cannot be read).
    Gone,
    /// A kernel thread: no program, nothing to trace.
    KernelThread,
    /// Ended, not yet reaped by its parent.
    Ended,
    /// A running program and its command line (its name in brackets when it has none).
    Running(Vec<String>),
}

/// What `pid` is. A process in the middle of execve shows an empty command line for a moment
/// (its new memory has no arguments yet): read again for up to a second before naming it by
/// its `comm` alone, so that a recorder just started through a wrapper script is not taken
/// for one that has ended.
pub fn describe(pid: u32) -> Process {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    loop {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return Process::Gone;
        };
        let Some(stat) = pid::parse_stat(&text) else {
            return Process::Gone;
        };
        if stat.kernel_thread() {
            return Process::KernelThread;
        }
        if !stat.running() {
            return Process::Ended;
        }
        let Some(args) = command_line(pid) else {
            return Process::Gone;
        };
        let words: Vec<String> = args
            .iter()
            .filter(|w| !w.is_empty())
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        if !words.is_empty() {
            return Process::Running(words);
        }
        if std::time::Instant::now() >= deadline {
            return Process::Running(vec![format!("[{}]", stat.comm)]);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Running: neither gone nor a zombie waiting for a parent that does not reap it.
pub fn alive(pid: u32) -> bool {
    pid > 0
        && std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .is_some_and(|t| pid::parse_stat(&t).is_some_and(|s| s.running()))
}

/// A process's arguments as the kernel holds them (/proc/PID/cmdline split at its NULs);
/// None when it is gone.
pub fn command_line(pid: u32) -> Option<Vec<Vec<u8>>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let mut args: Vec<Vec<u8>> = raw.split(|b| *b == 0).map(<[u8]>::to_vec).collect();
    if args.last().is_some_and(|a| a.is_empty()) {
        args.pop();
    }
    Some(args)
}

/// Every process's pid, as /proc lists them now.
pub fn all_pids() -> Vec<u32> {
    numbered_entries("/proc")
}

/// The threads of a process (/proc/PID/task); empty when it is gone.
pub fn threads(pid: u32) -> Vec<u32> {
    numbered_entries(&format!("/proc/{pid}/task"))
}

fn numbered_entries(dir: &str) -> Vec<u32> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// A process's stat and io files read into buffers kept between reads: what a scan of every
/// process every second reads, without a new allocation each time.
#[derive(Default)]
pub struct Scanner {
    stat: Vec<u8>,
    io: Vec<u8>,
}

impl Scanner {
    /// /proc/PID/stat, parsed; None when the process is gone.
    pub fn stat(&mut self, pid: u32) -> Option<pid::PidStat<'_>> {
        read_into(&format!("/proc/{pid}/stat"), &mut self.stat)?;
        pid::parse_stat(std::str::from_utf8(&self.stat).ok()?)
    }

    /// /proc/PID/io, parsed; None when gone or not readable by this user.
    pub fn io(&mut self, pid: u32) -> Option<pid::PidIo> {
        read_into(&format!("/proc/{pid}/io"), &mut self.io)?;
        pid::parse_io(std::str::from_utf8(&self.io).ok()?)
    }
}

fn read_into(path: &str, buf: &mut Vec<u8>) -> Option<()> {
    use std::io::Read;
    buf.clear();
    std::fs::File::open(path).ok()?.read_to_end(buf).ok()?;
    Some(())
}

/// CPU time (user, system, in ns) of this process's thread `tid`, at clock-tick resolution;
/// zeros when it cannot be read.
pub fn own_thread_cpu_ns(tid: i32) -> (u64, u64) {
    let Ok(text) = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")) else {
        return (0, 0);
    };
    let Some(stat) = pid::parse_stat(&text) else {
        return (0, 0);
    };
    let per_tick = 1_000_000_000 / crate::clock_ticks_per_s();
    (stat.utime * per_tick, stat.stime * per_tick)
}

/// What a thread's descriptor names (/proc/TID/fd/N), for a tracer of that thread. A
/// permission error is told apart from a closed descriptor: the caller says what it could
/// not see.
pub fn descriptor_target(tid: u32, fd: i32) -> std::io::Result<std::path::PathBuf> {
    std::fs::read_link(descriptor_path(tid, fd))
}

/// The path that opens a process's descriptor N (/proc/PID/fd/N): how another program
/// reaches an object that has no name of its own, such as a memfd.
pub fn descriptor_path(pid: u32, fd: i32) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("/proc/{pid}/fd/{fd}"))
}

/// Whether a thread's descriptor is a regular file (stat through /proc/TID/fd/N).
pub fn descriptor_is_file(tid: u32, fd: i32) -> bool {
    std::fs::metadata(format!("/proc/{tid}/fd/{fd}")).is_ok_and(|m| m.is_file())
}

/// A descriptor's offset and open flags (/proc/TID/fdinfo/N's `pos:` and `flags:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescriptorInfo {
    pub pos: u64,
    /// The open flags (O_ACCMODE, O_APPEND, O_DIRECT...), as the kernel prints them in octal.
    pub flags: i32,
}

pub fn descriptor_info(tid: u32, fd: i32) -> Option<DescriptorInfo> {
    parse_fdinfo(&std::fs::read_to_string(format!("/proc/{tid}/fdinfo/{fd}")).ok()?)
}

fn parse_fdinfo(text: &str) -> Option<DescriptorInfo> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
    };
    Some(DescriptorInfo {
        pos: field("pos:")?.parse().ok()?,
        flags: i32::from_str_radix(field("flags:")?, 8).ok()?,
    })
}

/// A thread's working directory (/proc/TID/cwd).
pub fn working_directory(tid: u32) -> std::io::Result<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{tid}/cwd"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_uid_line_gives_real_effective_and_saved() {
        let status = "Name:\tsleep\nUid:\t1000\t0\t1000\t0\nGid:\t1000\t1000\t1000\t1000\n";
        assert_eq!(parse_uids(status), Some([1000, 0, 1000]));
        assert_eq!(parse_uids("Name:\tx\n"), None);
        assert_eq!(parse_uids("Uid:\t1000\tnope\t1\t1\n"), None);
        assert_eq!(uids(std::process::id()).map(|u| u.len()), Some(3));
    }

    #[test]
    fn this_process_is_described_running_with_its_threads_and_descriptors() {
        let me = std::process::id();
        assert!(matches!(describe(me), Process::Running(w) if !w.is_empty()));
        assert!(alive(me));
        assert!(threads(me).contains(&me));
        assert!(all_pids().contains(&me));
        assert!(command_line(me).is_some_and(|a| !a.is_empty()));
        let mut scan = Scanner::default();
        assert_eq!(scan.stat(me).map(|s| s.pid), Some(me));
        assert_eq!(describe(u32::MAX / 2), Process::Gone);
        assert!(!alive(u32::MAX / 2));
        let file = tempfile::tempfile().expect("tempfile");
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        assert!(descriptor_is_file(me, fd));
        assert!(descriptor_target(me, fd).is_ok());
        let info = descriptor_info(me, fd).expect("fdinfo");
        assert_eq!((info.pos, info.flags & libc::O_ACCMODE), (0, libc::O_RDWR));
    }

    #[test]
    fn fdinfo_flags_are_octal() {
        let info = parse_fdinfo("pos:\t4096\nflags:\t0102001\nmnt_id:\t27\n").expect("info");
        assert_eq!(info.pos, 4096);
        assert_eq!(info.flags & libc::O_ACCMODE, libc::O_WRONLY);
        assert_ne!(info.flags & libc::O_APPEND, 0);
        assert_eq!(parse_fdinfo("pos:\t1\n"), None);
    }
}
