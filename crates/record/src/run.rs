//! Running a recording: per stream a producer (the camera: one frame per capture instant on
//! an absolute schedule, dropped when no capture buffer is free) and a writer (takes filled
//! buffers in order, writes, returns them to the pool).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use sinkrate_engine::buffers::AlignedBuf;
use sinkrate_engine::rng::Rng;
use sinkrate_stats::LatencyRecorder;

use crate::config::{PreallocMode, RecordConfig, StreamSpec, WriteMode};
use crate::frames::FrameSource;
use crate::segments::Segments;

const BLOCK: usize = 4096;
/// Drop instants kept per stream (the count is always exact).
const MAX_DROP_TIMES: usize = 10_000;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Stall {
    pub stream: String,
    pub at_s: f64,
    pub duration_ms: f64,
}

/// One frame's life, for the per-frame log.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct FrameRecord {
    pub frame: u64,
    pub size: u64,
    pub capture_ns: u64,
    /// None for a dropped frame.
    pub write_start_ns: Option<u64>,
    pub write_end_ns: Option<u64>,
}

#[derive(Debug, Clone, Default)]
pub struct StreamResult {
    pub name: String,
    pub fps_requested: f64,
    pub frames_offered: u64,
    pub frames_written: u64,
    pub frames_dropped: u64,
    pub drop_times_s: Vec<f64>,
    pub bytes_requested: u64,
    pub bytes_written: u64,
    pub write_latency: LatencyRecorder,
    /// How late each frame was on disk against its deadline (capture + one frame interval).
    pub lateness: LatencyRecorder,
    /// Actual minus planned capture instant.
    pub schedule_jitter: LatencyRecorder,
    pub pool_high_water: usize,
    pub buffers: usize,
    pub stalls: Vec<Stall>,
    /// Time the writer spent in write and sync calls.
    pub writer_busy_ns: u64,
    /// CPU time (user + system) of the writer thread.
    pub writer_cpu_ns: u64,
    pub final_sync_ns: u64,
    pub file: PathBuf,
    /// Every file of the stream still on disk (segments that loop recording kept).
    pub files: Vec<PathBuf>,
    pub segments_created: u64,
    pub segments_deleted: u64,
    pub bytes_deleted: u64,
    pub error: Option<String>,
    /// Every frame, when asked for (drops from the producer, writes from the writer).
    pub frames: Vec<FrameRecord>,
}

struct Frame {
    index: u64,
    buffer: usize,
    size: u64,
    capture_ns: u64,
}

/// Writes a byte stream to a file the way the write mode says.
struct Sink {
    fd: libc::c_int,
    /// For direct mode: a second descriptor without O_DIRECT for the final tail.
    tail_fd: libc::c_int,
    mode: WriteMode,
    offset: u64,
    staging: Option<AlignedBuf>,
    carry: usize,
    write_size: usize,
    /// Pregrown or truncated-up files are cut back to what was written when closed.
    truncate_at_close: bool,
}

fn open(path: &std::path::Path, flags: libc::c_int) -> std::io::Result<libc::c_int> {
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

fn pwrite_all(fd: libc::c_int, mut data: &[u8], mut offset: u64) -> std::io::Result<()> {
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

impl Sink {
    fn create(
        path: &std::path::Path,
        cfg: &RecordConfig,
        max_frame: usize,
    ) -> std::io::Result<Sink> {
        let base = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC;
        let (fd, tail_fd, staging) = match cfg.write_mode {
            WriteMode::Buffered => (open(path, base)?, -1, None),
            WriteMode::Dsync => (open(path, base | libc::O_DSYNC)?, -1, None),
            WriteMode::Null => (-1, -1, None),
            WriteMode::Direct => {
                let fd = open(path, base | libc::O_DIRECT)?;
                let tail = open(path, libc::O_WRONLY)?;
                (fd, tail, Some(AlignedBuf::new(max_frame + 2 * BLOCK)))
            }
        };
        if let (Some(bytes), true) = (cfg.preallocate, fd >= 0) {
            match cfg.prealloc_mode {
                PreallocMode::Fallocate => {
                    // SAFETY: fallocate on the descriptor just opened; failing only means the
                    // writes allocate instead.
                    unsafe {
                        libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, 0, bytes as libc::off_t)
                    };
                }
                PreallocMode::Ftruncate => {
                    // SAFETY: as above.
                    if unsafe { libc::ftruncate(fd, bytes as libc::off_t) } < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                PreallocMode::Pregrow => {
                    let zeros = vec![0u8; 1 << 20];
                    let grow_fd = if tail_fd >= 0 { tail_fd } else { fd };
                    let plain = if cfg.write_mode == WriteMode::Direct {
                        grow_fd
                    } else {
                        fd
                    };
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
    fn write_frame(
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

    fn datasync(&self) -> std::io::Result<()> {
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
    fn finish(&mut self, durable: bool) -> std::io::Result<()> {
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
        // SAFETY: syncfs and fsync on an owned descriptor.
        if unsafe { libc::syncfs(fd) } < 0 || unsafe { libc::fsync(fd) } < 0 {
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

/// Counters a stream publishes for the live line (stores, not locked adds, on the hot path).
#[derive(Debug, Default)]
pub struct StreamProgress {
    pub frames_offered: AtomicU64,
    pub frames_written: AtomicU64,
    pub frames_dropped: AtomicU64,
    pub bytes_written: AtomicU64,
    pub in_use: AtomicUsize,
    /// Slowest write call since the live line last read it, ns.
    pub worst_write_ns: AtomicU64,
}

struct Shared {
    stop: Arc<AtomicBool>,
    clock: Instant,
    progress: Arc<StreamProgress>,
}

fn producer(
    spec: &StreamSpec,
    cfg: &RecordConfig,
    index: usize,
    shared: &Shared,
    free: Receiver<usize>,
    filled: SyncSender<Frame>,
    result: &mut StreamResult,
) {
    let end_ns = cfg.duration.as_nanos() as u64;
    let mut source = FrameSource::new(
        spec.sizes.clone(),
        cfg.seed.wrapping_add(index as u64 * 7919),
    );
    let mut k: u64 = 0;
    loop {
        // Computed from k each time (not accumulated) so the schedule never drifts.
        let capture_ns = (k as f64 * 1e9 / spec.fps) as u64;
        if capture_ns >= end_ns || shared.stop.load(Ordering::Relaxed) {
            break;
        }
        let now = shared.clock.elapsed().as_nanos() as u64;
        if capture_ns > now {
            std::thread::sleep(Duration::from_nanos(capture_ns - now));
        }
        let woke = shared.clock.elapsed().as_nanos() as u64;
        result
            .schedule_jitter
            .record(woke.saturating_sub(capture_ns));
        let size = source.next_size();
        result.frames_offered += 1;
        result.bytes_requested += size;
        shared
            .progress
            .frames_offered
            .store(result.frames_offered, Ordering::Relaxed);
        match free.try_recv() {
            Ok(buffer) => {
                let used = shared.progress.in_use.fetch_add(1, Ordering::Relaxed) + 1;
                result.pool_high_water = result.pool_high_water.max(used);
                if filled
                    .send(Frame {
                        index: k,
                        buffer,
                        size,
                        capture_ns,
                    })
                    .is_err()
                {
                    break;
                }
            }
            Err(TryRecvError::Empty) => {
                result.frames_dropped += 1;
                shared
                    .progress
                    .frames_dropped
                    .store(result.frames_dropped, Ordering::Relaxed);
                if result.drop_times_s.len() < MAX_DROP_TIMES {
                    result.drop_times_s.push(capture_ns as f64 / 1e9);
                }
                if cfg.frame_records {
                    result.frames.push(FrameRecord {
                        frame: k,
                        size,
                        capture_ns,
                        write_start_ns: None,
                        write_end_ns: None,
                    });
                }
            }
            Err(TryRecvError::Disconnected) => break,
        }
        k += 1;
    }
}

#[allow(clippy::too_many_arguments)]
fn writer(
    spec: &StreamSpec,
    cfg: &RecordConfig,
    shared: &Shared,
    filled: Receiver<Frame>,
    free: SyncSender<usize>,
    mut buffers: Vec<AlignedBuf>,
    path: PathBuf,
    result: &mut StreamResult,
) {
    let interval_ns = (1e9 / spec.fps) as u64;
    let max_frame = spec.sizes.max_bytes() as usize;
    let path = if cfg.write_mode == WriteMode::Null {
        PathBuf::new()
    } else {
        path
    };
    let cpu_start = thread_cpu_ns();
    let null = path.as_os_str().is_empty();
    let mut segments = Segments::new(&cfg.dir, &spec.name, cfg.segments, 0);
    let first = if null { path } else { segments.current.clone() };
    let mut sink = match Sink::create(&first, cfg, max_frame) {
        Ok(s) => s,
        Err(e) => {
            result.error = Some(format!("{}: {e}", first.display()));
            shared.stop.store(true, Ordering::Relaxed);
            return;
        }
    };
    result.file = first;
    let mut latencies = Vec::with_capacity(64);
    let mut since_sync_frames = 0u64;
    let mut last_sync = shared.clock.elapsed();
    for frame in filled {
        if result.error.is_some() {
            shared.progress.in_use.fetch_sub(1, Ordering::Relaxed);
            let _ = free.send(frame.buffer);
            continue;
        }
        let data = &buffers[frame.buffer].as_mut_slice()[..frame.size as usize];
        let t0 = shared.clock.elapsed().as_nanos() as u64;
        latencies.clear();
        // Rotation, preallocation and loop deletion happen in the frame's time, as in a
        // recorder's write path.
        let mut outcome = Ok(());
        if !null && segments.rotation_due(sink.offset + sink.carry as u64, t0) {
            outcome = sink.finish(false).and_then(|()| {
                let bytes = sink.offset;
                let next = segments.rotate(bytes, t0).to_path_buf();
                sink = Sink::create(&next, cfg, max_frame)?;
                result.file = next;
                segments.enforce_fill().map(|_| ())
            });
        }
        if outcome.is_ok() {
            outcome = sink.write_frame(data, &mut latencies, &shared.clock);
        }
        since_sync_frames += 1;
        let sync_due = cfg
            .fdatasync_every_frames
            .is_some_and(|n| since_sync_frames >= n)
            || cfg
                .fdatasync_every
                .is_some_and(|t| shared.clock.elapsed() - last_sync >= t);
        if outcome.is_ok() && sync_due {
            outcome = sink.datasync();
            since_sync_frames = 0;
            last_sync = shared.clock.elapsed();
        }
        let t1 = shared.clock.elapsed().as_nanos() as u64;
        result.writer_busy_ns += t1 - t0;
        for l in &latencies {
            result.write_latency.record(*l);
        }
        match outcome {
            Ok(()) => {
                result.frames_written += 1;
                result.bytes_written += frame.size;
                if cfg.frame_records {
                    result.frames.push(FrameRecord {
                        frame: frame.index,
                        size: frame.size,
                        capture_ns: frame.capture_ns,
                        write_start_ns: Some(t0),
                        write_end_ns: Some(t1),
                    });
                }
                shared
                    .progress
                    .frames_written
                    .store(result.frames_written, Ordering::Relaxed);
                shared
                    .progress
                    .bytes_written
                    .store(result.bytes_written, Ordering::Relaxed);
                shared
                    .progress
                    .worst_write_ns
                    .fetch_max(t1 - t0, Ordering::Relaxed);
                result
                    .lateness
                    .record(t1.saturating_sub(frame.capture_ns + interval_ns));
                if t1 - t0 > cfg.stall_threshold.as_nanos() as u64 {
                    result.stalls.push(Stall {
                        stream: spec.name.clone(),
                        at_s: t0 as f64 / 1e9,
                        duration_ms: (t1 - t0) as f64 / 1e6,
                    });
                }
            }
            Err(e) => {
                result.error = Some(format!("{}: {e}", result.file.display()));
                shared.stop.store(true, Ordering::Relaxed);
            }
        }
        shared.progress.in_use.fetch_sub(1, Ordering::Relaxed);
        // Once the camera has stopped nobody takes buffers back, but every frame already
        // captured is still written.
        let _ = free.send(frame.buffer);
    }
    let t0 = Instant::now();
    if let Err(e) = sink.finish(true) {
        result
            .error
            .get_or_insert(format!("{}: {e}", result.file.display()));
    }
    result.final_sync_ns = t0.elapsed().as_nanos() as u64;
    result.writer_cpu_ns = thread_cpu_ns().saturating_sub(cpu_start);
    if !null {
        result.files = segments.files();
    }
    result.segments_created = segments.created;
    result.segments_deleted = segments.deleted;
    result.bytes_deleted = segments.bytes_deleted;
    drop(buffers.drain(..));
}

/// Starts every stream; `join` waits for the configured duration (or `stop`) and returns
/// the results, while `progress` feeds a live line.
pub struct Recording {
    handles: Vec<(String, std::thread::JoinHandle<StreamResult>)>,
    /// Streams whose threads could not start.
    failed: Vec<StreamResult>,
    pub progress: Vec<Arc<StreamProgress>>,
    pub clock: Instant,
}

impl Recording {
    /// Every stream's result; a stream whose thread failed reports that as its error.
    pub fn join(self) -> Vec<StreamResult> {
        let mut out: Vec<StreamResult> = self
            .handles
            .into_iter()
            .map(|(name, h)| {
                h.join().unwrap_or_else(|_| StreamResult {
                    error: Some(format!(
                        "stream {name}: its recording thread stopped unexpectedly"
                    )),
                    name,
                    ..StreamResult::default()
                })
            })
            .collect();
        out.extend(self.failed);
        out
    }
}

pub fn start(cfg: &RecordConfig, stop: Arc<AtomicBool>) -> Recording {
    let mut handles = Vec::new();
    let mut failed = Vec::new();
    let stop_on_failure = stop.clone();
    let mut progress_all = Vec::new();
    let clock = Instant::now();
    for (index, spec) in cfg.streams.iter().enumerate() {
        let spec = spec.clone();
        let spec_name = spec.name.clone();
        let cfg = cfg.clone();
        let stop = stop.clone();
        let progress = Arc::new(StreamProgress::default());
        progress_all.push(progress.clone());
        let h = std::thread::Builder::new()
            .name(format!("sinkrate-{}", spec.name))
            .spawn(move || {
                let shared = Shared {
                    stop,
                    clock,
                    progress,
                };
                let (free_tx, free_rx) = sync_channel::<usize>(cfg.buffers);
                let (filled_tx, filled_rx) = sync_channel::<Frame>(cfg.buffers);
                let max_frame = spec.sizes.max_bytes() as usize;
                let mut rng = Rng::new(cfg.seed ^ index as u64);
                let buffers: Vec<AlignedBuf> = (0..cfg.buffers)
                    .map(|_| {
                        let mut b = AlignedBuf::new(max_frame);
                        rng.fill(b.as_mut_slice());
                        b
                    })
                    .collect();
                for i in 0..cfg.buffers {
                    let _ = free_tx.send(i);
                }
                let mut produced = StreamResult {
                    name: spec.name.clone(),
                    fps_requested: spec.fps,
                    buffers: cfg.buffers,
                    ..StreamResult::default()
                };
                let mut written = StreamResult::default();
                let path = cfg.dir.join(format!("sinkrate-record-{}.bin", spec.name));
                std::thread::scope(|scope| {
                    let w = scope.spawn(|| {
                        writer(
                            &spec,
                            &cfg,
                            &shared,
                            filled_rx,
                            free_tx,
                            buffers,
                            path,
                            &mut written,
                        )
                    });
                    producer(
                        &spec,
                        &cfg,
                        index,
                        &shared,
                        free_rx,
                        filled_tx,
                        &mut produced,
                    );
                    let _ = w.join();
                });
                produced.frames_written = written.frames_written;
                produced.bytes_written = written.bytes_written;
                produced.write_latency = written.write_latency;
                produced.lateness = written.lateness;
                produced.stalls = written.stalls;
                produced.writer_busy_ns = written.writer_busy_ns;
                produced.final_sync_ns = written.final_sync_ns;
                produced.file = written.file;
                produced.files = written.files;
                produced.writer_cpu_ns = written.writer_cpu_ns;
                produced.segments_created = written.segments_created;
                produced.segments_deleted = written.segments_deleted;
                produced.bytes_deleted = written.bytes_deleted;
                produced.error = written.error;
                produced.frames.extend(written.frames);
                produced.frames.sort_by_key(|f| f.frame);
                produced
            });
        match h {
            Ok(h) => handles.push((spec_name, h)),
            Err(e) => {
                stop_on_failure.store(true, Ordering::Relaxed);
                failed.push(StreamResult {
                    error: Some(format!("stream {spec_name}: cannot start its threads: {e}")),
                    name: spec_name,
                    ..StreamResult::default()
                });
            }
        }
    }
    Recording {
        handles,
        failed,
        progress: progress_all,
        clock,
    }
}

/// User + system CPU time of the calling thread, in ns.
fn thread_cpu_ns() -> u64 {
    // SAFETY: getrusage fills the struct; zeroed is a valid initial value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } < 0 {
        return 0;
    }
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000;
    ns(ru.ru_utime) + ns(ru.ru_stime)
}
