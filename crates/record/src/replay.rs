//! `record --replay`: a captured recorder's calls run on this storage. Each recorder thread
//! is a stream: a producer hands its bursts over at their original times (scaled by the
//! speed), and a writer runs them, in order, on files under a directory of the run's own.
//! A burst that writes is a frame: it takes one of the stream's `buffers` capture buffers
//! until it is written, and one that finds none free is dropped, as record's own cameras
//! drop theirs. A dropped frame's data calls (writes, syncs) are skipped; its opens,
//! closes and renames still run, as the recorder makes them whatever it drops.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sinkrate_model::replay::{Burst, ReplayOp, ReplayPlan, ReplayStream};
use sinkrate_platform::buf::AlignedBuf;

use crate::run::Recording;
use crate::stream::{
    FrameRecord, Shared, Stall, StreamProgress, StreamResult, SyncPoint, MAX_DROP_TIMES,
};
use sinkrate_model::record::RecordConfig;

/// The replay's files: where each of the plan's files goes, and which ones the run made (the
/// only ones it ever removes).
pub struct Files {
    pub root: PathBuf,
    paths: Vec<PathBuf>,
    made: Mutex<HashSet<PathBuf>>,
    dirs: Mutex<Vec<PathBuf>>,
}

impl Files {
    fn path(&self, i: usize) -> &Path {
        &self.paths[i]
    }

    /// The parent directories of `path` under the root, made as needed (and remembered).
    fn parents(&self, path: &Path) -> std::io::Result<()> {
        let Some(parent) = path.parent() else {
            return Ok(());
        };
        let mut missing = Vec::new();
        let mut at = parent;
        while at != self.root && !at.exists() {
            missing.push(at.to_path_buf());
            match at.parent() {
                Some(p) => at = p,
                None => break,
            }
        }
        for d in missing.into_iter().rev() {
            std::fs::create_dir(&d).or_else(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => Ok(()),
                _ => Err(e),
            })?;
            self.dirs.lock().unwrap_or_else(|e| e.into_inner()).push(d);
        }
        Ok(())
    }

    /// Syncs every file the run made that is still there: what the recorder wrote reaches
    /// the device. The first failure, if any, named.
    fn sync_made(&self) -> Option<String> {
        let made: Vec<PathBuf> = self
            .made
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        let mut first = None;
        for path in made {
            let synced = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&path)
                .and_then(|f| f.sync_all());
            match synced {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    first.get_or_insert(err("cannot sync", &path, e));
                }
            }
        }
        first
    }

    /// Removes what the run made: its files (where still the ones it made), then its
    /// directories, deepest first, and the root when empty.
    pub fn remove(&self) -> Vec<String> {
        let mut left = Vec::new();
        for f in self.made.lock().unwrap_or_else(|e| e.into_inner()).drain() {
            if let Err(e) = std::fs::remove_file(&f) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    left.push(format!("{}: {e}", f.display()));
                }
            }
        }
        let mut dirs = std::mem::take(&mut *self.dirs.lock().unwrap_or_else(|e| e.into_inner()));
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for d in dirs.iter().chain(std::iter::once(&self.root)) {
            let _ = std::fs::remove_dir(d);
        }
        if !self.root.exists() {
            sinkrate_sys::owned::forget_dir(&self.root);
        }
        left
    }
}

/// The run's own directory under `dir`, made exclusively: `sinkrate-replay-PID-N`.
fn run_dir(dir: &Path) -> std::io::Result<PathBuf> {
    for n in 0..1000 {
        let p = dir.join(format!("sinkrate-replay-{}-{n}", std::process::id()));
        match std::fs::create_dir(&p) {
            Ok(()) => {
                // A run killed before its end leaves it: the next run removes it with what
                // it holds (the journal of this run's files).
                sinkrate_sys::owned::track_dir(&p);
                return Ok(p);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "no free name for the replay's directory",
    ))
}

/// A burst handed to the writer: dropped (no buffer was free) or not, and when it was due.
struct Item {
    burst: usize,
    dropped: bool,
    due_ns: u64,
    frame: Option<u64>,
}

/// One stream's writer: its open files, its buffer of data, its figures.
struct Writer<'a> {
    files: &'a Files,
    open: HashMap<usize, File>,
    data: AlignedBuf,
    result: StreamResult,
}

fn err(what: &str, path: &Path, e: std::io::Error) -> String {
    let path = sinkrate_units::escaped(&path.to_string_lossy());
    format!("{what} {path}: {e}")
}

impl Writer<'_> {
    fn file(&mut self, i: usize, flags: Option<i32>) -> Result<&File, String> {
        if flags.is_some() || !self.open.contains_key(&i) {
            let path = self.files.path(i).to_path_buf();
            self.files
                .parents(&path)
                .map_err(|e| err("cannot make the directory of", &path, e))?;
            let existed = path.exists();
            let kept =
                libc::O_TRUNC | libc::O_APPEND | libc::O_DIRECT | libc::O_DSYNC | libc::O_SYNC;
            let f = OpenOptions::new()
                .write(true)
                .create(true)
                .mode(0o644)
                // Never through a link (the run's directory is its own, but a link is
                // followed nowhere).
                .custom_flags(flags.unwrap_or(0) & kept | libc::O_CLOEXEC | libc::O_NOFOLLOW)
                .open(&path)
                .map_err(|e| err("cannot open", &path, e))?;
            if !existed {
                self.files
                    .made
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(path);
            }
            self.open.insert(i, f);
        }
        self.open
            .get(&i)
            .ok_or_else(|| "a file the replay opened is gone".to_string())
    }

    /// Runs one op; the data calls only when `data`.
    fn op(&mut self, op: &ReplayOp, data: bool) -> Result<(), String> {
        if op.is_data() && !data {
            return Ok(());
        }
        match *op {
            ReplayOp::Open { file, flags } => {
                self.file(file, Some(flags))?;
            }
            ReplayOp::Write { file, offset, len } => {
                let path = self.files.path(file).to_path_buf();
                self.file(file, None)?;
                let f = self
                    .open
                    .get(&file)
                    .ok_or_else(|| "a file the replay opened is gone".to_string())?;
                // In pieces of the buffer the writer holds (the plan sized it, at most
                // MAX_WRITE_BUFFER): a call larger than that is written piece by piece.
                let piece = self.data.as_slice().len().max(1) as u64;
                let mut done = 0u64;
                while done < len {
                    let n = (len - done).min(piece) as usize;
                    f.write_all_at(&self.data.as_slice()[..n], offset + done)
                        .map_err(|e| {
                            err(
                                &format!("cannot write {len} bytes at {offset} to"),
                                &path,
                                e,
                            )
                        })?;
                    done += n as u64;
                }
            }
            ReplayOp::Fsync { file } => {
                let path = self.files.path(file).to_path_buf();
                self.file(file, None)?
                    .sync_all()
                    .map_err(|e| err("fsync", &path, e))?;
            }
            ReplayOp::Fdatasync { file } => {
                let path = self.files.path(file).to_path_buf();
                self.file(file, None)?
                    .sync_data()
                    .map_err(|e| err("fdatasync", &path, e))?;
            }
            ReplayOp::SyncFileRange {
                file,
                offset,
                len,
                flags,
            } => {
                let path = self.files.path(file).to_path_buf();
                let fd = self.file(file, None)?.as_raw_fd();
                sync_file_range(fd, offset, len, flags)
                    .map_err(|e| err("sync_file_range", &path, e))?;
            }
            ReplayOp::Truncate { file, len } => {
                let path = self.files.path(file).to_path_buf();
                self.file(file, None)?
                    .set_len(len)
                    .map_err(|e| err("ftruncate", &path, e))?;
            }
            ReplayOp::Fallocate {
                file,
                mode,
                offset,
                len,
            } => {
                let path = self.files.path(file).to_path_buf();
                let fd = self.file(file, None)?.as_raw_fd();
                fallocate(fd, mode, offset, len).map_err(|e| err("fallocate", &path, e))?;
            }
            ReplayOp::Close { file } => {
                self.open.remove(&file);
            }
            ReplayOp::Rename { from, to } => {
                let (a, b) = (
                    self.files.path(from).to_path_buf(),
                    self.files.path(to).to_path_buf(),
                );
                self.files
                    .parents(&b)
                    .map_err(|e| err("cannot make the directory of", &b, e))?;
                std::fs::rename(&a, &b).map_err(|e| err("cannot rename", &a, e))?;
                let mut made = self.files.made.lock().unwrap_or_else(|e| e.into_inner());
                if made.remove(&a) {
                    made.insert(b);
                }
            }
            ReplayOp::Exchange { a, b } => {
                let (pa, pb) = (
                    self.files.path(a).to_path_buf(),
                    self.files.path(b).to_path_buf(),
                );
                exchange(&pa, &pb).map_err(|e| err("cannot exchange", &pa, e))?;
                // Each open descriptor follows its file to the other name.
                let (fa, fb) = (self.open.remove(&a), self.open.remove(&b));
                if let Some(f) = fa {
                    self.open.insert(b, f);
                }
                if let Some(f) = fb {
                    self.open.insert(a, f);
                }
                let mut made = self.files.made.lock().unwrap_or_else(|e| e.into_inner());
                let (ma, mb) = (made.remove(&pa), made.remove(&pb));
                if ma {
                    made.insert(pb);
                }
                if mb {
                    made.insert(pa);
                }
            }
            ReplayOp::SetFlags { file, flags } => {
                let path = self.files.path(file).to_path_buf();
                let fd = self.file(file, None)?.as_raw_fd();
                let kept = flags & (libc::O_DIRECT | libc::O_APPEND);
                // SAFETY: fcntl on a descriptor this writer holds open.
                if unsafe { libc::fcntl(fd, libc::F_SETFL, kept) } != 0 {
                    return Err(err(
                        "cannot set the flags of",
                        &path,
                        std::io::Error::last_os_error(),
                    ));
                }
            }
            ReplayOp::Unlink { file } => {
                // Only a file this run made is ever removed.
                let path = self.files.path(file).to_path_buf();
                let ours = self
                    .files
                    .made
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&path);
                if ours {
                    std::fs::remove_file(&path).map_err(|e| err("cannot remove", &path, e))?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(target_os = "linux")]
fn sync_file_range(fd: i32, offset: u64, len: u64, flags: u32) -> std::io::Result<()> {
    // SAFETY: sync_file_range on a descriptor the writer holds open.
    let rc =
        unsafe { libc::sync_file_range(fd, offset as libc::off64_t, len as libc::off64_t, flags) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A trace is captured on Linux; replayed elsewhere, its Linux-only calls say so.
#[cfg(not(target_os = "linux"))]
fn sync_file_range(_: i32, _: u64, _: u64, _: u32) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "sync_file_range needs Linux",
    ))
}

#[cfg(target_os = "linux")]
fn fallocate(fd: i32, mode: u32, offset: u64, len: u64) -> std::io::Result<()> {
    // SAFETY: fallocate on a descriptor the writer holds open.
    let rc = unsafe { libc::fallocate(fd, mode as i32, offset as libc::off_t, len as libc::off_t) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn fallocate(fd: i32, mode: u32, offset: u64, len: u64) -> std::io::Result<()> {
    if mode != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "fallocate with a mode needs Linux",
        ));
    }
    // SAFETY: posix_fallocate on a descriptor the writer holds open.
    match unsafe { libc::posix_fallocate(fd, offset as libc::off_t, len as libc::off_t) } {
        0 => Ok(()),
        e => Err(std::io::Error::from_raw_os_error(e)),
    }
}

/// renameat2(RENAME_EXCHANGE): the two names swap their files, as the recorder's call did.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::other("a NUL in a path"))
    };
    let (ca, cb) = (c(a)?, c(b)?);
    // SAFETY: two NUL-terminated paths that outlive the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::Error::other("renameat2 needs Linux"))
}

fn ns(clock: Instant) -> u64 {
    clock.elapsed().as_nanos() as u64
}

/// What a stream's producer works to: when the replay's time starts in the trace, its pace,
/// and the stream's pool of buffers.
struct Pace<'a> {
    t0_ns: u64,
    speed: f64,
    buffers: usize,
    in_use: &'a AtomicUsize,
    /// The replay's length: the trace's first stretch only when shorter (a tune search's
    /// screening runs).
    end_ns: u64,
}

/// The longest a producer sleeps before it looks at the stop flag again.
const STOP_CHECK: Duration = Duration::from_millis(20);

/// The largest buffer a writer holds: a traced write larger than this is written in pieces
/// of it, so that a trace's length field never sizes an allocation.
pub const MAX_WRITE_BUFFER: usize = 16 << 20;

/// The camera side: each burst at its time; a frame takes a buffer or is dropped.
fn producer(
    stream: &ReplayStream,
    pace: &Pace<'_>,
    tx: std::sync::mpsc::Sender<Item>,
    shared: &Shared,
    progress: &StreamProgress,
) -> StreamResult {
    let Pace {
        t0_ns,
        speed,
        buffers,
        in_use,
        end_ns,
    } = *pace;
    let mut r = StreamResult::default();
    let mut k = 0u64;
    for (i, b) in stream.bursts.iter().enumerate() {
        let due_ns = ((b.at_ns.saturating_sub(t0_ns)) as f64 / speed) as u64;
        if due_ns > end_ns {
            break;
        }
        // Slept in slices, so that an interrupt ends a long idle gap of the trace at once.
        loop {
            let now = ns(shared.clock);
            if due_ns <= now || shared.stopping() {
                break;
            }
            std::thread::sleep(Duration::from_nanos(due_ns - now).min(STOP_CHECK));
        }
        if shared.stopping() {
            break;
        }
        // A helper thread's writes (an index, a log) are never frames, never dropped.
        let frame = (stream.judged && b.bytes > 0).then(|| {
            k += 1;
            k - 1
        });
        let mut dropped = false;
        if frame.is_some() {
            r.frames_offered += 1;
            r.bytes_requested += b.bytes;
            progress
                .frames_offered
                .store(r.frames_offered, Ordering::Relaxed);
            let used = in_use.load(Ordering::Acquire);
            if used >= buffers {
                dropped = true;
                r.frames_dropped += 1;
                progress
                    .frames_dropped
                    .store(r.frames_dropped, Ordering::Relaxed);
                if r.drop_times_s.len() < MAX_DROP_TIMES {
                    r.drop_times_s.push(due_ns as f64 / 1e9);
                }
                r.frames.push(FrameRecord {
                    frame: k - 1,
                    size: b.bytes,
                    capture_ns: due_ns,
                    write_start_ns: None,
                    write_end_ns: None,
                });
            } else {
                in_use.fetch_add(1, Ordering::AcqRel);
                r.pool_high_water = r.pool_high_water.max(used + 1);
                progress.in_use.store(used + 1, Ordering::Relaxed);
            }
        }
        if tx
            .send(Item {
                burst: i,
                dropped,
                due_ns,
                frame,
            })
            .is_err()
        {
            break;
        }
    }
    r
}

/// The writer side: every burst in order.
fn writer(
    stream: &ReplayStream,
    files: &Files,
    cfg: &RecordConfig,
    in_use: &AtomicUsize,
    rx: Receiver<Item>,
    shared: &Shared,
    progress: &StreamProgress,
) -> StreamResult {
    let max = stream
        .bursts
        .iter()
        .flat_map(|b| b.ops.iter())
        .filter_map(|o| match o {
            ReplayOp::Write { len, .. } => Some(*len),
            _ => None,
        })
        .max()
        .unwrap_or(4096)
        .min(MAX_WRITE_BUFFER as u64) as usize;
    let mut data = AlignedBuf::new(max.max(4096));
    data.as_mut_slice().fill(0x5a);
    let mut w = Writer {
        files,
        open: HashMap::new(),
        data,
        result: StreamResult::default(),
    };
    let interval_ns = if stream.fps > 0.0 {
        (1e9 / stream.fps / cfg.replay_speed) as u64
    } else {
        0
    };
    let cpu0 = thread_cpu_ns();
    // The last frame written: what a sync covers.
    let mut last_written: Option<u64> = None;
    while let Ok(item) = rx.recv() {
        let b: &Burst = &stream.bursts[item.burst];
        let start = ns(shared.clock);
        let mut failed = None;
        for op in &b.ops {
            if let Err(e) = w.op(op, !item.dropped) {
                failed = Some(e);
                break;
            }
        }
        let end = ns(shared.clock);
        let r = &mut w.result;
        if let (Some(k), false) = (item.frame, item.dropped) {
            in_use.fetch_sub(1, Ordering::AcqRel);
            r.frames_written += 1;
            r.bytes_written += b.bytes;
            let took = end - start;
            r.write_latency.record(took);
            r.writer_busy_ns += took;
            r.schedule_jitter.record(start.saturating_sub(item.due_ns));
            r.lateness
                .record(end.saturating_sub(item.due_ns + interval_ns));
            if took >= cfg.stall_threshold.as_nanos() as u64 {
                shared.stalled(start, end);
                r.stalls.push(Stall {
                    stream: stream.name.clone(),
                    frame: item.frame,
                    tid: sinkrate_platform::cpu::thread_id(),
                    at_s: start as f64 / 1e9,
                    duration_ms: took as f64 / 1e6,
                });
            }
            r.frames.push(FrameRecord {
                frame: k,
                size: b.bytes,
                capture_ns: item.due_ns,
                write_start_ns: Some(start),
                write_end_ns: Some(end),
            });
            progress
                .frames_written
                .store(r.frames_written, Ordering::Relaxed);
            progress
                .bytes_written
                .store(r.bytes_written, Ordering::Relaxed);
            progress.worst_write_ns.fetch_max(took, Ordering::Relaxed);
            progress
                .in_use
                .store(in_use.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        if let (Some(k), false) = (item.frame, item.dropped) {
            last_written = Some(k);
        }
        // The recorder's own syncs, as record's fdatasyncs: what a power cut could lose.
        let synced = !item.dropped
            && b.ops
                .iter()
                .any(|o| matches!(o, ReplayOp::Fsync { .. } | ReplayOp::Fdatasync { .. }));
        if let (true, Some(last)) = (synced && failed.is_none(), last_written) {
            w.result.syncs.push(SyncPoint {
                end_ns: end,
                last_frame: last,
            });
        }
        if let Some(e) = failed {
            w.result.error = Some(format!("{}: {e}", stream.name));
            shared.halt();
            break;
        }
    }
    w.result.writer_cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
    w.result.writer_tid = Some(sinkrate_platform::cpu::thread_id());
    w.result
}

fn thread_cpu_ns() -> u64 {
    sinkrate_platform::cpu::thread_usage().map_or(0, |u| u.user_ns + u.system_ns)
}

/// Starts every recorder thread's replay under a directory of the run's own in `cfg.dir`.
/// The streams judged are the threads that wrote frames (`ReplayStream::judged`); a thread
/// that wrote a few times, or only opened, renamed or removed files, runs all the same.
pub fn start(
    cfg: &RecordConfig,
    plan: Arc<ReplayPlan>,
    stop: Arc<AtomicBool>,
    clock: Instant,
    stalls: Option<crate::kernel::StallSink>,
) -> Recording {
    let halt = Arc::new(AtomicBool::new(false));
    let ended = Arc::new(AtomicBool::new(false));
    let closed = Arc::new(Mutex::new(Vec::new()));
    let judged: Vec<usize> = (0..plan.streams.len())
        .filter(|&i| plan.streams[i].judged)
        .collect();
    let progress: Vec<Arc<StreamProgress>> = judged
        .iter()
        .map(|_| Arc::new(StreamProgress::default()))
        .collect();
    let recording = |handles, failed| Recording {
        handles,
        failed,
        progress: progress.clone(),
        clock,
        halt: halt.clone(),
        ended: ended.clone(),
        closed: closed.clone(),
    };
    let root = match run_dir(&cfg.dir) {
        Ok(r) => r,
        Err(e) => {
            let failed = judged
                .iter()
                .map(|&i| StreamResult {
                    name: plan.streams[i].name.clone(),
                    error: Some(format!(
                        "cannot make the replay's directory in {}: {e}",
                        cfg.dir.display()
                    )),
                    ..StreamResult::default()
                })
                .collect();
            return recording(Vec::new(), failed);
        }
    };
    let files = Arc::new(Files {
        paths: plan.mapped.iter().map(|m| root.join(m)).collect(),
        root,
        made: Mutex::new(HashSet::new()),
        dirs: Mutex::new(Vec::new()),
    });
    // The replay starts with the recorder's first call, not with its start-up.
    let t0_ns = plan
        .streams
        .iter()
        .filter_map(|s| s.bursts.first().map(|b| b.at_ns))
        .min()
        .unwrap_or(0);
    let shared = Shared {
        stop,
        halt: halt.clone(),
        ended: ended.clone(),
        clock,
        closed: closed.clone(),
        stalls,
    };
    let (cfg, plan_c, files_c) = (cfg.clone(), plan.clone(), files.clone());
    let progress_c = progress.clone();
    let judged_c = judged.clone();
    let handle = std::thread::Builder::new()
        .name("sinkrate-replay".into())
        .spawn(move || {
            let plan = plan_c;
            let results: Vec<StreamResult> = std::thread::scope(|scope| {
                let mut joins = Vec::new();
                for (i, stream) in plan.streams.iter().enumerate() {
                    let slot = judged_c.iter().position(|&j| j == i);
                    let progress = slot.map_or_else(
                        || Arc::new(StreamProgress::default()),
                        |s| progress_c[s].clone(),
                    );
                    let (tx, rx) = channel();
                    let in_use = Arc::new(AtomicUsize::new(0));
                    let (shared, files, cfg) = (&shared, &*files_c, &cfg);
                    let (p2, u2) = (progress.clone(), in_use.clone());
                    let cam = scope.spawn(move || {
                        let pace = Pace {
                            t0_ns,
                            speed: cfg.replay_speed,
                            buffers: cfg.buffers,
                            in_use: &u2,
                            end_ns: cfg.duration.as_nanos() as u64,
                        };
                        producer(stream, &pace, tx, shared, &p2)
                    });
                    let wr = scope
                        .spawn(move || writer(stream, files, cfg, &in_use, rx, shared, &progress));
                    joins.push((slot, stream.name.clone(), cam, wr));
                }
                let mut helpers_failed = Vec::new();
                let mut out = Vec::new();
                for (slot, name, cam, wr) in joins {
                    let produced = cam.join().unwrap_or_default();
                    let written = wr.join().unwrap_or_else(|_| StreamResult {
                        error: Some(format!("{name}: its replay thread stopped unexpectedly")),
                        ..StreamResult::default()
                    });
                    // The replay's writer keeps its lag where record's camera keeps its
                    // jitter: taken over merge's.
                    let lag = written.schedule_jitter.clone();
                    let mut r = crate::run::merge(produced, written);
                    r.schedule_jitter = lag;
                    r.name = name;
                    r.buffers = cfg.buffers;
                    r.file = files_c.root.clone();
                    match slot {
                        Some(_) => out.push(r),
                        None => helpers_failed.extend(r.error),
                    }
                }
                // A failure of a thread that wrote no frame fails the first stream.
                if let (Some(e), Some(first)) = (helpers_failed.first(), out.first_mut()) {
                    first.error = first.error.take().or(Some(e.clone()));
                }
                out
            });
            let mut results = results;
            // The recorder's data reaches the device before the replay is judged, as
            // record's final fsync makes it: what the page cache still held is written, timed,
            // and counted in the device's bytes (a buffered recorder that never synced would
            // otherwise be judged on the page cache alone).
            let t_sync = Instant::now();
            let unsynced = files_c.sync_made();
            let final_sync_ns = t_sync.elapsed().as_nanos() as u64;
            for r in results.iter_mut() {
                r.final_sync_ns = final_sync_ns;
            }
            if let (Some(e), Some(first)) = (unsynced, results.first_mut()) {
                first.error = first.error.take().or(Some(e));
            }
            if cfg.keep {
                // Kept on purpose: no longer this run's to remove.
                sinkrate_sys::owned::forget_dir(&files_c.root);
            } else {
                let left = files_c.remove();
                if let (Some(l), Some(first)) = (left.first(), results.first_mut()) {
                    first.error = first.error.take().or(Some(format!(
                        "the replay's files could not all be removed: {l}"
                    )));
                }
            }
            for (r, i) in results.iter_mut().zip(&judged_c) {
                r.fps_requested = plan.streams[*i].fps * cfg.replay_speed;
            }
            results
        });
    let names: Vec<String> = judged
        .iter()
        .map(|&i| plan.streams[i].name.clone())
        .collect();
    match handle {
        Ok(h) => recording(vec![(names, h)], Vec::new()),
        Err(e) => recording(
            Vec::new(),
            names
                .into_iter()
                .map(|name| StreamResult {
                    error: Some(format!("{name}: cannot start the replay: {e}")),
                    name,
                    ..StreamResult::default()
                })
                .collect(),
        ),
    }
}

/// What the replay says of itself: how late its frames started against their original
/// times (the totals' schedule jitter, which a replay's writer records), and the original
/// frames' own write times beside the replay's.
pub fn summary(
    plan: &ReplayPlan,
    report: &sinkrate_model::record::RecordReport,
    speed: f64,
) -> sinkrate_model::replay::ReplaySummary {
    let lag = &report.totals.schedule_jitter_ns;
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut original: Vec<u64> = plan
        .streams
        .iter()
        .filter(|s| s.judged)
        .flat_map(|s| {
            s.bursts
                .iter()
                .filter(|b| b.bytes > 0)
                .map(|b| b.original_ns)
        })
        .collect();
    original.sort_unstable();
    let at = |q: f64| {
        (!original.is_empty()).then(|| {
            let rank = ((original.len() as f64) * q).ceil() as usize;
            ms(original[rank.clamp(1, original.len()) - 1])
        })
    };
    sinkrate_model::replay::ReplaySummary {
        trace: plan.trace.clone(),
        speed,
        grouping: plan.grouping.clone(),
        threads: plan.streams.len(),
        frames: original.len() as u64,
        lag_p50_ms: (lag.count > 0).then(|| ms(lag.p50)),
        lag_p99_ms: (lag.count > 0).then(|| ms(lag.p99)),
        lag_max_ms: (lag.count > 0).then(|| ms(lag.max)),
        original_write_p50_ms: at(0.5),
        original_write_p99_ms: at(0.99),
        original_write_max_ms: original.last().map(|v| ms(*v)),
        unseen: plan.unseen.clone(),
    }
}
