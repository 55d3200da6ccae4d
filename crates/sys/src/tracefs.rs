//! The kernel's own account of a run, read from tracefs: a private trace instance per run
//! (`instances/sinkrate-PID-...`, never the top-level buffer that another tracer may use),
//! only the events asked for, filtered in the kernel, read from the per-CPU binary ring
//! buffers (`per_cpu/cpuN/trace_pipe_raw`) and decoded by each event's `format` file on the
//! monotonic clock (`trace_clock` mono), the clock the run's own `Instant`s use.
//!
//! Nothing here is needed for a run to work: every failure is a reason, handed back as
//! text, for the caller to say that causes were inferred instead.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use sinkrate_procparse::trace::kernel_dev;
use sinkrate_procparse::trace::{decode_page, Decoder, EventKind, Lost, PageLayout, TimedEvent};

/// The per-CPU ring buffer each instance asks for.
const BUFFER_KB_PER_CPU: u64 = 1024;
/// How often the reader empties the buffers.
const READ_EVERY: Duration = Duration::from_millis(100);
const INSTANCE_PREFIX: &str = "sinkrate-";

/// What a run asks the kernel to report.
#[derive(Debug, Clone, Default)]
pub struct TraceRequest {
    /// Threads whose pauses, waits and scheduling are traced; threads they start later
    /// are followed (`options/event-fork`, 4.7 and later).
    pub threads: Vec<i32>,
    /// The whole disk the target is on (block requests are issued against it).
    pub disk: Option<(u32, u32)>,
    /// The filesystem's own device (a partition, or the disk): its journal's commits.
    pub fs_dev: Option<(u32, u32)>,
    /// System call numbers to trace for `threads` (another program's write calls); empty:
    /// none.
    pub syscalls: Vec<i64>,
    /// Every device's requests and journal commits, unfiltered: for a program whose target
    /// is known only once it has written (capture); `disk` and `fs_dev` are then ignored.
    pub all_devices: bool,
}

/// Where a session's events go as they are read: the reader thread hands each batch over
/// in time order, so that a consumer can explain what it has been asked about and let go of
/// the events behind it while the run goes on (a run of hours keeps minutes of events).
pub trait EventSink: Send {
    /// Events read since the last call, in time order; no event handed over later is older
    /// than `settled_ns` (`u64::MAX` at the end of the session).
    fn events(&mut self, events: &[TimedEvent], settled_ns: u64);
}

/// What a session read besides its events, which went to its [`EventSink`]: what it could
/// not read, and where from.
#[derive(Debug, Clone, Default)]
pub struct KernelTrace {
    /// Events the kernel could not store (its buffer was full).
    pub lost: u64,
    /// Some were lost and the kernel did not say how many.
    pub lost_unknown: bool,
    /// The reader thread's own CPU time over the run (what tracing cost this process).
    pub reader_cpu_s: Option<f64>,
    /// Events this kernel lacks or whose format this reader could not use, with why.
    pub missing: Vec<String>,
    /// Where the events came from: the tracefs mount and the instance names.
    pub source: String,
    /// The events read, by kind (for the JSON's account).
    pub kinds: BTreeSet<EventKind>,
    /// From before the first event was enabled to after tracing stopped, on CLOCK_MONOTONIC
    /// (every event read lies inside; another tracer's events can be lined up with it).
    pub window_ns: (u64, u64),
}

/// A running trace: the instances and the thread that empties their buffers.
pub struct TraceSession {
    instances: Vec<PathBuf>,
    mounted: Option<PathBuf>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<ReaderEnd>>,
    missing: Vec<String>,
    source: String,
    kinds: BTreeSet<EventKind>,
    started_ns: u64,
}

/// What the reader thread counted besides the events it handed over.
#[derive(Default)]
struct ReaderEnd {
    lost: u64,
    lost_unknown: bool,
    /// The reader thread's own CPU time (user + system), when the system accounts it.
    reader_cpu_ns: Option<u64>,
}

/// Where tracefs is mounted, from this process's mount table (tracefs itself, or debugfs's
/// `tracing` directory on kernels before 4.1).
fn find_mounted() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mounts = sinkrate_procparse::mountinfo::parse(&text);
    // Another sinkrate run's private mount is not used: that run unmounts it when it ends,
    // and every path of this run's under it (its instance, to be removed at its end) would
    // go with it.
    let own = format!("{INSTANCE_PREFIX}tracefs-{}", std::process::id());
    let another_runs = |m: &&sinkrate_procparse::mountinfo::Mount| {
        Path::new(&m.mount_point)
            .file_name()
            .map(|n| n.to_string_lossy())
            .is_some_and(|n| n.starts_with(&format!("{INSTANCE_PREFIX}tracefs-")) && n != own)
    };
    let tracefs = mounts
        .iter()
        .filter(|m| !another_runs(m))
        .find(|m| m.fs_type == "tracefs")
        .map(|m| PathBuf::from(&m.mount_point));
    tracefs.or_else(|| {
        mounts
            .iter()
            .find(|m| m.fs_type == "debugfs")
            .map(|m| Path::new(&m.mount_point).join("tracing"))
            .filter(|p| p.join("instances").is_dir())
    })
}

/// Mounts tracefs on a directory of this run's own (tracefs has one superblock: a second
/// mount shows the same instances and leaves any other mount alone).
fn mount_private() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("{INSTANCE_PREFIX}tracefs-{}", std::process::id()));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| {
            format!(
                "tracefs is not mounted and {} could not be made: {e}",
                dir.display()
            )
        })?;
    let name = format!("{INSTANCE_PREFIX}tracefs-{}", std::process::id());
    // Noted before it is mounted, as an instance is before it is made.
    note_made(&name);
    let c = |s: &str| std::ffi::CString::new(s).unwrap_or_default();
    let target = c(&dir.to_string_lossy());
    // SAFETY: mount(2) with NUL-terminated strings that outlive the call.
    let rc = unsafe {
        libc::mount(
            c("nodev").as_ptr(),
            target.as_ptr(),
            c("tracefs").as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        let _ = std::fs::remove_dir(&dir);
        note_removed(&name);
        return Err(format!(
            "tracefs is not mounted and could not be mounted: {e}"
        ));
    }
    Ok(dir)
}

use std::os::unix::fs::DirBuilderExt;

fn unmount_private(dir: &Path) {
    let c = std::ffi::CString::new(dir.to_string_lossy().as_bytes()).unwrap_or_default();
    // SAFETY: umount2 with a NUL-terminated path; MNT_DETACH lets go even if a reader of
    // another program has a file open there.
    unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    if std::fs::remove_dir(dir).is_ok() {
        if let Some(name) = dir.file_name() {
            note_removed(&name.to_string_lossy());
        }
    }
}

/// Reads a tracefs file with one large read first: some kernels (6.18's header_page) answer
/// the small first read `read_to_string` makes and then report the end of the file.
fn read_text(path: &Path) -> std::io::Result<String> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0;
    loop {
        if len == buf.len() {
            if buf.len() >= 1 << 20 {
                break;
            }
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))
}

fn write_attr(path: &Path, value: &str) -> Result<(), String> {
    let mut f = OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    f.write_all(value.as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The filter a traced thread's own events get (`common_pid == a || ...`), for kernels
/// without `set_event_pid`.
fn pid_filter(field: &str, pids: &[i32]) -> String {
    pids.iter()
        .map(|p| format!("{field} == {p}"))
        .collect::<Vec<_>>()
        .join(" || ")
}

impl TraceSession {
    /// Starts tracing into `sink`, or says why it cannot: not root, no tracefs, a kernel
    /// without the events, lockdown. Events this kernel lacks are named in the result; the
    /// others run.
    pub fn start(req: &TraceRequest, sink: Box<dyn EventSink>) -> Result<TraceSession, String> {
        if !crate::is_root() {
            return Err("the kernel's trace events need root".into());
        }
        if let Ok(l) = std::fs::read_to_string("/sys/kernel/security/lockdown") {
            if l.contains("[confidentiality]") {
                return Err(
                    "the kernel is locked down (confidentiality): tracefs is closed".into(),
                );
            }
        }
        let (root, mounted) = match find_mounted() {
            Some(p) => (p, None),
            None => {
                let p = mount_private()?;
                (p.clone(), Some(p))
            }
        };
        let fail = |why: String, mounted: &Option<PathBuf>| {
            if let Some(m) = mounted {
                unmount_private(m);
            }
            why
        };
        if !root.join("instances").is_dir() {
            return Err(fail(
                format!(
                    "{} has no instances directory (a kernel before 3.18, or tracing not built in)",
                    root.display()
                ),
                &mounted,
            ));
        }
        let header = read_text(&root.join("events/header_page")).map_err(|e| {
            fail(
                format!("{}/events/header_page: {e}", root.display()),
                &mounted,
            )
        })?;
        let layout = PageLayout::parse(&header, cfg!(target_endian = "big")).map_err(|e| {
            fail(
                format!("{}/events/header_page: {e}", root.display()),
                &mounted,
            )
        })?;
        let mut decoder = Decoder::new(&layout);
        let mut missing = Vec::new();
        let mut found: Vec<(EventKind, String)> = Vec::new();
        for kind in EventKind::ALL {
            let wanted = match kind {
                EventKind::SyscallEnter | EventKind::SyscallExit => !req.syscalls.is_empty(),
                EventKind::RequestIssue | EventKind::RequestComplete => {
                    req.all_devices || req.disk.is_some()
                }
                EventKind::CommitStart | EventKind::CommitEnd | EventKind::CommitStats => {
                    req.all_devices || req.fs_dev.is_some()
                }
                _ => true,
            };
            if !wanted {
                continue;
            }
            let Some(path) = kind
                .paths()
                .iter()
                .find(|p| root.join("events").join(p).join("format").exists())
            else {
                missing.push(format!(
                    "{}: not on this kernel",
                    kind.paths()[0].replace('/', ":")
                ));
                continue;
            };
            match read_text(&root.join("events").join(path).join("format")) {
                Ok(text) => match decoder.learn(kind, &text) {
                    Ok(_) => found.push((kind, path.to_string())),
                    Err(why) => missing.push(format!("{}: {why}", path.replace('/', ":"))),
                },
                Err(e) => missing.push(format!("{}: {e}", path.replace('/', ":"))),
            }
        }
        if found.is_empty() {
            return Err(fail(
                format!(
                    "none of the events sinkrate reads could be used ({})",
                    missing.join("; ")
                ),
                &mounted,
            ));
        }
        // Two instances: the threads' own events, kept to those threads (and the threads
        // they start) by set_event_pid; and the device's, which other threads (the flusher,
        // the journal, interrupts) produce.
        let pid = std::process::id();
        let thread_side = root.join(format!("instances/{INSTANCE_PREFIX}{pid}-threads"));
        let device_side = root.join(format!("instances/{INSTANCE_PREFIX}{pid}-device"));
        let mut made = Vec::new();
        let cleanup = |made: &[PathBuf], mounted: &Option<PathBuf>| {
            for m in made {
                remove_instance(m);
            }
            if let Some(m) = mounted {
                unmount_private(m);
            }
        };
        for dir in [&thread_side, &device_side] {
            // Noted before it is made: a run killed between the two leaves nothing that
            // the next run does not know of.
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            note_made(&name);
            if let Err(e) = std::fs::create_dir(dir) {
                note_removed(&name);
                cleanup(&made, &mounted);
                return Err(format!(
                    "could not make the trace instance {}: {e}",
                    dir.display()
                ));
            }
            made.push(dir.clone());
            // The run's clock; an older kernel without `mono` would stamp on another.
            let clock = read_text(&dir.join("trace_clock")).unwrap_or_default();
            if !clock
                .split_whitespace()
                .any(|c| c.trim_matches(['[', ']']) == "mono")
            {
                cleanup(&made, &mounted);
                return Err("this kernel's trace clocks do not include mono".into());
            }
            let set = write_attr(&dir.join("trace_clock"), "mono").and_then(|_| {
                write_attr(&dir.join("buffer_size_kb"), &BUFFER_KB_PER_CPU.to_string())
            });
            if let Err(e) = set {
                cleanup(&made, &mounted);
                return Err(e);
            }
        }
        let threads_only = !req.threads.is_empty();
        let mut followed = false;
        if threads_only {
            let list: Vec<String> = req.threads.iter().map(|t| t.to_string()).collect();
            if write_attr(&thread_side.join("set_event_pid"), &list.join(" ")).is_ok() {
                followed = write_attr(&thread_side.join("options/event-fork"), "1").is_ok();
            }
        }
        let started_ns = sinkrate_platform::cpu::monotonic_ns();
        let mut kinds = BTreeSet::new();
        for (kind, path) in &found {
            let (dir, filter) = match kind {
                EventKind::RequestIssue | EventKind::RequestComplete => (
                    &device_side,
                    req.disk
                        .filter(|_| !req.all_devices)
                        .map(|(ma, mi)| format!("dev == {}", kernel_dev(ma, mi))),
                ),
                EventKind::CommitStart | EventKind::CommitEnd | EventKind::CommitStats => (
                    &device_side,
                    req.fs_dev
                        .filter(|_| !req.all_devices)
                        .map(|(ma, mi)| format!("dev == {}", kernel_dev(ma, mi))),
                ),
                EventKind::FlushStart | EventKind::FlushWritten => (&device_side, None),
                EventKind::SyscallEnter | EventKind::SyscallExit => (
                    &thread_side,
                    Some(
                        req.syscalls
                            .iter()
                            .map(|n| format!("id == {n}"))
                            .collect::<Vec<_>>()
                            .join(" || "),
                    ),
                ),
                EventKind::Switch if threads_only && !followed => (
                    &thread_side,
                    Some(format!(
                        "{} || {}",
                        pid_filter("prev_pid", &req.threads),
                        pid_filter("next_pid", &req.threads)
                    )),
                ),
                EventKind::Wakeup if threads_only && !followed => {
                    (&thread_side, Some(pid_filter("pid", &req.threads)))
                }
                _ if threads_only && !followed => {
                    (&thread_side, Some(pid_filter("common_pid", &req.threads)))
                }
                _ => (&thread_side, None),
            };
            let event_dir = dir.join("events").join(path);
            if let Some(f) = filter {
                if let Err(e) = write_attr(&event_dir.join("filter"), &f) {
                    missing.push(format!(
                        "{}: its filter was refused ({e})",
                        path.replace('/', ":")
                    ));
                    continue;
                }
            }
            match write_attr(&event_dir.join("enable"), "1") {
                Ok(()) => {
                    kinds.insert(*kind);
                }
                Err(e) => missing.push(format!("{}: {e}", path.replace('/', ":"))),
            }
        }
        if threads_only && !followed {
            missing.push(
                "threads started after tracing began are not followed (no options/event-fork on this kernel)"
                    .into(),
            );
        }
        let page_bytes = read_text(&root.join("buffer_subbuf_size_kb"))
            .ok()
            .and_then(|t| t.trim().parse::<usize>().ok())
            .map_or(crate::page_size() as usize, |kb| kb * 1024)
            .max(crate::page_size() as usize);
        let mut pipes = Vec::new();
        for dir in &made {
            for cpu_dir in std::fs::read_dir(dir.join("per_cpu"))
                .into_iter()
                .flatten()
                .flatten()
            {
                let name = cpu_dir.file_name().to_string_lossy().into_owned();
                let Some(cpu) = name.strip_prefix("cpu").and_then(|n| n.parse::<u32>().ok()) else {
                    continue;
                };
                match OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NONBLOCK)
                    .open(cpu_dir.path().join("trace_pipe_raw"))
                {
                    Ok(f) => pipes.push((cpu, f)),
                    Err(e) => {
                        cleanup(&made, &mounted);
                        return Err(format!(
                            "{}: {e}",
                            cpu_dir.path().join("trace_pipe_raw").display()
                        ));
                    }
                }
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("sinkrate-trace".into())
                .spawn(move || {
                    read_loop(pipes, layout, decoder, page_bytes, stop, started_ns, sink)
                })
                .map_err(|e| {
                    cleanup(&made, &mounted);
                    format!("could not start the trace reader: {e}")
                })?
        };
        Ok(TraceSession {
            source: format!(
                "{} (instances {})",
                root.display(),
                made.iter()
                    .filter_map(|m| m.file_name())
                    .map(|n| n.to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            instances: made,
            mounted,
            stop,
            reader: Some(reader),
            missing,
            kinds,
            started_ns,
        })
    }

    /// Stops tracing, hands what is left to the sink, removes the instances: what was lost
    /// and missing.
    pub fn finish(mut self) -> KernelTrace {
        for dir in &self.instances {
            let _ = write_attr(&dir.join("tracing_on"), "0");
        }
        let stopped_ns = sinkrate_platform::cpu::monotonic_ns();
        self.stop.store(true, Ordering::SeqCst);
        let collected = self
            .reader
            .take()
            .and_then(|r| r.join().ok())
            .unwrap_or_default();
        let mut lost = collected.lost;
        for dir in &self.instances {
            lost += overruns(dir);
        }
        self.teardown();
        KernelTrace {
            lost,
            lost_unknown: collected.lost_unknown,
            reader_cpu_s: collected.reader_cpu_ns.map(|ns| ns as f64 / 1e9),
            missing: std::mem::take(&mut self.missing),
            source: std::mem::take(&mut self.source),
            kinds: std::mem::take(&mut self.kinds),
            window_ns: (self.started_ns, stopped_ns),
        }
    }

    fn teardown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        for dir in self.instances.drain(..) {
            remove_instance(&dir);
        }
        if let Some(m) = self.mounted.take() {
            unmount_private(&m);
        }
    }
}

impl Drop for TraceSession {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// Events the kernel dropped or overwrote in an instance (`per_cpu/cpuN/stats`).
fn overruns(dir: &Path) -> u64 {
    let mut n = 0;
    for cpu in std::fs::read_dir(dir.join("per_cpu"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(text) = read_text(&cpu.path().join("stats")) {
            for line in text.lines() {
                if let Some(v) = line
                    .strip_prefix("overrun:")
                    .or_else(|| line.strip_prefix("dropped events:"))
                {
                    n += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
    }
    n
}

/// Turns an instance's events off and removes it (rmdir frees its buffers).
fn remove_instance(dir: &Path) {
    let _ = write_attr(&dir.join("tracing_on"), "0");
    let _ = write_attr(&dir.join("events/enable"), "0");
    // The kernel answers EBUSY while a reader it is letting go of (a run that just ended)
    // still holds the instance: a second is plenty.
    for _ in 0..20 {
        match std::fs::remove_dir(dir) {
            Ok(()) => {
                if let Some(name) = dir.file_name() {
                    note_removed(&name.to_string_lossy());
                }
                return;
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(_) => return,
        }
    }
}

/// Empties the buffers every [`READ_EVERY`] and hands the events over in time order. The
/// per-CPU buffers are read one after another, so an event of one CPU may be read after a
/// later one of another: each batch holds back what is newer than the start of the pass
/// before (by then every CPU's buffer has been read once since: nothing older can come).
fn read_loop(
    mut pipes: Vec<(u32, File)>,
    layout: PageLayout,
    decoder: Decoder,
    page_bytes: usize,
    stop: Arc<AtomicBool>,
    started_ns: u64,
    mut sink: Box<dyn EventSink>,
) -> ReaderEnd {
    let mut out = ReaderEnd::default();
    let mut page = vec![0u8; page_bytes];
    let mut held: Vec<TimedEvent> = Vec::new();
    let mut settled_ns = started_ns;
    loop {
        let last = stop.load(Ordering::SeqCst);
        let pass_started_ns = sinkrate_platform::cpu::monotonic_ns();
        for (cpu, pipe) in pipes.iter_mut() {
            loop {
                match pipe.read(&mut page) {
                    Ok(0) => break,
                    Ok(n) => match decode_page(&layout, &page[..n]) {
                        Ok(p) => {
                            match p.lost_before {
                                Lost::None => {}
                                Lost::Count(c) => out.lost += c,
                                Lost::Unknown => out.lost_unknown = true,
                            }
                            held.extend(p.records.iter().filter_map(|r| decoder.decode(*cpu, r)));
                        }
                        Err(_) => out.lost_unknown = true,
                    },
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
        }
        // Stable: one CPU's events keep their order where two share a timestamp.
        held.sort_by_key(|e| e.ts_ns);
        if last {
            sink.events(&held, u64::MAX);
            out.reader_cpu_ns = sinkrate_platform::cpu::thread_usage().map(|u| u.cpu_ns());
            return out;
        }
        let ready = held.partition_point(|e| e.ts_ns < settled_ns);
        sink.events(&held[..ready], settled_ns);
        held.drain(..ready);
        settled_ns = pass_started_ns;
        std::thread::sleep(READ_EVERY);
    }
}

/// Where a run notes what it made in tracefs (an empty file per instance, and one per
/// private mount), beside its owned-files journal: the next run sweeps what is noted in
/// its own state directory only, as it does files (a test lane's runs, with
/// SINKRATE_STATE_DIR, sweep their lane's).
fn notes_dir() -> Option<PathBuf> {
    let dir = crate::owned::journal_dir().join("tracefs");
    crate::owned::private_dir(&dir).then_some(dir)
}

fn note_made(name: &str) {
    if let Some(dir) = notes_dir() {
        let _ = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.join(name));
    }
}

fn note_removed(name: &str) {
    if let Some(dir) = notes_dir() {
        let _ = std::fs::remove_file(dir.join(name));
    }
}

/// Instances and private mounts that an earlier run of this state directory, killed before
/// it could remove them, left behind: removed if their run is gone. Returns what was
/// removed, in words that do not depend on where tracefs is mounted ("the trace instance
/// sinkrate-123-device", "the private tracefs mount /tmp/sinkrate-tracefs-123").
pub fn sweep_left_over() -> Vec<String> {
    let mut removed = Vec::new();
    let Some(notes) = notes_dir().filter(|_| crate::is_root()) else {
        return removed;
    };
    // Any live process of that pid keeps them (the run itself, under another name when a
    // test binary made them); a reused pid only delays the sweep.
    // /proc/N also answers for a thread N of another process: a process is one whose
    // thread group is its own.
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Tgid:"))
                .is_some_and(|t| t.trim() == pid.to_string())
        })
    };
    // The notes of runs that are gone: instances ("sinkrate-PID-what") and private mounts
    // ("sinkrate-tracefs-PID").
    let mut instances = Vec::new();
    let mut mounts = Vec::new();
    for e in std::fs::read_dir(&notes).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(INSTANCE_PREFIX) else {
            continue;
        };
        let (is_mount, pid_text) = match rest.strip_prefix("tracefs-") {
            Some(pid) => (true, pid),
            None => (false, rest),
        };
        let Some(pid) = pid_text
            .split('-')
            .next()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || alive(pid) {
            continue;
        }
        if is_mount {
            mounts.push((name, e.path()));
        } else {
            instances.push((name, e.path()));
        }
    }
    // The instances first, through a mount of tracefs that is no other run's (a killed
    // run's private mount is still there, but is unmounted below), else one of this
    // sweep's own, made only if a note needs it and unmounted after. tracefs has one
    // superblock: every mount shows every instance.
    if !instances.is_empty() {
        let mut sweep_mount = None;
        let root = find_mounted().or_else(|| {
            sweep_mount = mount_private().ok();
            sweep_mount.clone()
        });
        if let Some(root) = &root {
            for (name, note) in &instances {
                let dir = root.join("instances").join(name);
                if dir.exists() {
                    remove_instance(&dir);
                    if !dir.exists() {
                        removed.push(format!("the trace instance {name}"));
                    }
                }
                if !dir.exists() {
                    let _ = std::fs::remove_file(note);
                }
            }
        }
        if let Some(m) = &sweep_mount {
            unmount_private(m);
        }
    }
    for (name, note) in &mounts {
        let dir = std::env::temp_dir().join(name);
        let was_there = dir.exists();
        unmount_private(&dir);
        if !dir.exists() {
            if was_there {
                removed.push(format!("the private tracefs mount {}", dir.display()));
            }
            let _ = std::fs::remove_file(note);
        }
    }
    removed
}

/// The system calls by which a recorder writes, syncs or moves data to a file, by this
/// architecture's numbers (raw_syscalls events carry the number): what `watch` traces of
/// another program. A 32-bit program on a 64-bit kernel uses other numbers and is not seen.
pub fn write_syscalls() -> Vec<(i64, &'static str)> {
    vec![
        (libc::SYS_write, "write"),
        (libc::SYS_pwrite64, "pwrite64"),
        (libc::SYS_writev, "writev"),
        (libc::SYS_pwritev, "pwritev"),
        (libc::SYS_pwritev2, "pwritev2"),
        (libc::SYS_fsync, "fsync"),
        (libc::SYS_fdatasync, "fdatasync"),
        (libc::SYS_sendfile, "sendfile"),
        (libc::SYS_copy_file_range, "copy_file_range"),
        (libc::SYS_splice, "splice"),
        (libc::SYS_io_uring_enter, "io_uring_enter"),
        (libc::SYS_io_submit, "io_submit"),
    ]
    .into_iter()
    // c_long: i32 on 32-bit boards, i64 here.
    .map(
        #[allow(clippy::useless_conversion)]
        |(n, name)| (i64::from(n), name),
    )
    .collect()
}

/// Every thread of a process (/proc/PID/task).
pub fn threads_of(pid: u32) -> Vec<i32> {
    crate::process::threads(pid)
        .into_iter()
        .map(|t| t as i32)
        .collect()
}

/// A thread's name (its comm), if it can still be read.
pub fn thread_name(pid: u32, tid: i32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .ok()
        .map(|c| c.trim().to_string())
}

/// The major:minor of a block device by its name under /sys/class/block.
pub fn block_dev_numbers(name: &str) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(format!("/sys/class/block/{name}/dev")).ok()?;
    let (ma, mi) = text.trim().split_once(':')?;
    Some((ma.parse().ok()?, mi.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkrate_procparse::trace::KernelEvent;
    use std::sync::Mutex;

    /// Every event handed over, and whether each batch came in time order after the last.
    #[derive(Default)]
    struct Kept {
        events: Vec<TimedEvent>,
        settled_ns: u64,
        out_of_order: usize,
    }

    struct Keep(Arc<Mutex<Kept>>);

    impl EventSink for Keep {
        fn events(&mut self, events: &[TimedEvent], settled_ns: u64) {
            let mut k = self.0.lock().expect("lock");
            let floor = k.settled_ns;
            k.out_of_order += events.iter().filter(|e| e.ts_ns < floor).count();
            k.out_of_order += events
                .windows(2)
                .filter(|w| w[1].ts_ns < w[0].ts_ns)
                .count();
            if let (Some(last), Some(first)) = (k.events.last(), events.first()) {
                k.out_of_order += usize::from(first.ts_ns < last.ts_ns);
            }
            k.events.extend_from_slice(events);
            k.settled_ns = settled_ns;
        }
    }

    /// A thread that writes and syncs is seen switching out and back on the run's clock,
    /// every event handed over in time order, and the instance is gone after.
    #[test]
    fn a_writing_thread_is_seen_by_its_own_instance() {
        if !crate::is_root() {
            eprintln!("SKIP: the kernel's trace events need root");
            return;
        }
        let kept = Arc::new(Mutex::new(Kept::default()));
        let session = TraceSession::start(
            &TraceRequest {
                threads: vec![sinkrate_platform::cpu::thread_id()],
                ..Default::default()
            },
            Box::new(Keep(kept.clone())),
        )
        .expect("tracefs");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        let started = sinkrate_platform::cpu::monotonic_ns();
        let writer = std::thread::spawn(move || {
            let mut f = File::create(&path).expect("create");
            for _ in 0..20 {
                f.write_all(&[7u8; 65536]).expect("write");
                f.sync_data().expect("sync");
            }
            sinkrate_platform::cpu::thread_id()
        });
        let tid = writer.join().expect("writer");
        let instances = session.instances.clone();
        let trace = session.finish();
        // After the trace ends: the writer's last switch, as it exits, may come after the
        // join returns (the kernel wakes the joiner before the exiting thread's last
        // schedule).
        let ended = sinkrate_platform::cpu::monotonic_ns();
        assert!(instances.iter().all(|i| !i.exists()), "instances removed");
        let kept = kept.lock().expect("lock");
        assert_eq!(kept.out_of_order, 0, "events handed over in time order");
        let switches: Vec<_> = kept
            .events
            .iter()
            .filter(|e| matches!(e.event, KernelEvent::Switch { prev_pid, .. } if prev_pid == tid))
            .collect();
        assert!(
            !switches.is_empty(),
            "{:?} {:?}",
            trace.missing,
            kept.events.len()
        );
        assert!(switches
            .iter()
            .all(|e| e.ts_ns >= started && e.ts_ns <= ended));
    }
}
