//! Running a recording: per stream a producer (the camera: one frame per capture instant on
//! an absolute schedule, dropped when no capture buffer is free) on its own thread, and
//! writers (crate::writer) on one thread per stream or one shared thread for all.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sinkrate_platform::buf::AlignedBuf;
use sinkrate_platform::rng::Rng;

use crate::frames::FrameSource;
use crate::stream::{Frame, FrameRecord, Shared, StreamProgress, StreamResult, MAX_DROP_TIMES};
use crate::writer::{drive, StreamWriter};
use sinkrate_model::record::{RecordConfig, StreamSpec, WriteMode};
/// The camera side of one stream.
struct Camera<'a> {
    spec: &'a StreamSpec,
    cfg: &'a RecordConfig,
    /// Seeds this stream's frame sizes.
    index: usize,
    /// The stream's index among its writer thread's streams.
    writer_slot: usize,
    progress: &'a StreamProgress,
    /// Signalled after each frame when the writer sleeps on eventfds (io_uring mode).
    frames_ready: Option<&'a OwnedFd>,
}

fn producer(
    cam: &Camera<'_>,
    shared: &Shared,
    free: Receiver<usize>,
    filled: SyncSender<(usize, Frame)>,
) -> StreamResult {
    let (spec, cfg) = (cam.spec, cam.cfg);
    let mut result = StreamResult {
        name: spec.name.clone(),
        fps_requested: spec.fps,
        buffers: cfg.buffers,
        ..StreamResult::default()
    };
    let end_ns = cfg.duration.as_nanos() as u64;
    let frame_cap = crate::stream::frame_record_cap(cfg, spec.fps);
    let mut source = FrameSource::new(
        spec.sizes.clone(),
        spec.fps,
        cfg.seed.wrapping_add(cam.index as u64 * 7919),
    );
    let mut k: u64 = 0;
    loop {
        // Computed from k each time (not accumulated) so the schedule never drifts.
        let capture_ns = (k as f64 * 1e9 / spec.fps) as u64;
        if capture_ns >= end_ns || shared.stopping() {
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
        cam.progress
            .frames_offered
            .store(result.frames_offered, Ordering::Relaxed);
        match free.try_recv() {
            Ok(buffer) => {
                let used = cam.progress.in_use.fetch_add(1, Ordering::Relaxed) + 1;
                result.pool_high_water = result.pool_high_water.max(used);
                let frame = Frame {
                    index: k,
                    buffer,
                    size,
                    capture_ns,
                };
                if filled.send((cam.writer_slot, frame)).is_err() {
                    break;
                }
                if let Some(ready) = cam.frames_ready {
                    let one = 1u64;
                    // SAFETY: writes 8 bytes from a u64 to an eventfd.
                    unsafe { libc::write(ready.as_raw_fd(), (&one as *const u64).cast(), 8) };
                }
            }
            Err(TryRecvError::Empty) => {
                result.frames_dropped += 1;
                cam.progress
                    .frames_dropped
                    .store(result.frames_dropped, Ordering::Relaxed);
                if result.drop_times_s.len() < MAX_DROP_TIMES {
                    result.drop_times_s.push(capture_ns as f64 / 1e9);
                }
                if cfg.frame_records && result.frames.len() < frame_cap {
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
    result
}

/// One stream's result: the camera's counts with the writer's.
/// A stream's result from its camera's half (offered, dropped) and its writer's (written,
/// timed); also the replay's.
pub(crate) fn merge(mut produced: StreamResult, written: StreamResult) -> StreamResult {
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
    produced.writer_tid = written.writer_tid;
    produced.segments_created = written.segments_created;
    produced.segments_deleted = written.segments_deleted;
    produced.bytes_deleted = written.bytes_deleted;
    produced.error = produced.error.or(written.error);
    produced.frames.extend(written.frames);
    produced.syncs = written.syncs;
    produced.windows = written.windows;
    produced.frames.sort_by_key(|f| f.frame);
    produced
}

/// Starts every stream; `join` waits for the configured duration (or `stop`) and returns
/// the results, while `progress` feeds a live line.
pub struct Recording {
    /// One thread per writer: its streams' names and its handle.
    pub(crate) handles: Vec<(Vec<String>, std::thread::JoinHandle<Vec<StreamResult>>)>,
    /// Streams whose threads could not start.
    pub(crate) failed: Vec<StreamResult>,
    pub progress: Vec<Arc<StreamProgress>>,
    pub clock: Instant,
    /// Set when a stream failed and the recording ended early.
    pub halt: Arc<AtomicBool>,
    /// Set to end the recording at a power cut.
    pub ended: Arc<AtomicBool>,
    /// Segments closed and not yet read back (`--verify-every`).
    pub closed: Arc<std::sync::Mutex<Vec<crate::stream::ClosedSegment>>>,
}

impl Recording {
    /// Every stream's result; a stream whose thread failed reports that as its error.
    pub fn join(self) -> Vec<StreamResult> {
        let mut out = Vec::new();
        for (names, h) in self.handles {
            match h.join() {
                Ok(results) => out.extend(results),
                Err(_) => out.extend(names.into_iter().map(|name| StreamResult {
                    error: Some(format!(
                        "stream {name}: its recording thread stopped unexpectedly"
                    )),
                    name,
                    ..StreamResult::default()
                })),
            }
        }
        out.extend(self.failed);
        out
    }
}

/// Runs one writer thread's streams: their cameras on threads of their own, the writing here.
fn run_group(
    cfg: &RecordConfig,
    group: &[usize],
    progress: &[Arc<StreamProgress>],
    shared: &Shared,
) -> Vec<StreamResult> {
    let failed = |message: String| -> Vec<StreamResult> {
        shared.halt();
        group
            .iter()
            .map(|&i| StreamResult {
                name: cfg.streams[i].name.clone(),
                error: Some(message.clone()),
                ..StreamResult::default()
            })
            .collect()
    };
    let frames_ready = if cfg.write_mode == WriteMode::Uring {
        match crate::uring_sink::eventfd() {
            Ok(fd) => Some(fd),
            Err(e) => return failed(format!("cannot create an eventfd for io_uring: {e}")),
        }
    } else {
        None
    };
    let (filled_tx, filled_rx) = sync_channel::<(usize, Frame)>(cfg.buffers * group.len());
    let mut writers = Vec::new();
    let mut pools = Vec::new();
    for &i in group {
        let spec = &cfg.streams[i];
        let (free_tx, free_rx) = sync_channel::<usize>(cfg.buffers);
        let max_frame = spec.max_frame_bytes() as usize;
        let mut rng = Rng::new(cfg.seed ^ i as u64);
        let buffers: Vec<AlignedBuf> = (0..cfg.buffers)
            .map(|_| {
                let mut b = AlignedBuf::new(max_frame);
                rng.fill(b.as_mut_slice());
                b
            })
            .collect();
        for b in 0..cfg.buffers {
            let _ = free_tx.send(b);
        }
        writers.push(StreamWriter::new(
            spec,
            cfg,
            progress[i].clone(),
            buffers,
            free_tx,
            shared,
        ));
        pools.push(free_rx);
    }
    std::thread::scope(|scope| {
        let mut cameras = Vec::new();
        for (slot, (&i, free_rx)) in group.iter().zip(pools).enumerate() {
            let cam = Camera {
                spec: &cfg.streams[i],
                cfg,
                index: i,
                writer_slot: slot,
                progress: &progress[i],
                frames_ready: frames_ready.as_ref(),
            };
            let tx = filled_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("sinkrate-cam-{}", cfg.streams[i].name))
                .spawn_scoped(scope, move || producer(&cam, shared, free_rx, tx));
            cameras.push((i, spawned));
        }
        drop(filled_tx);
        let written = drive(writers, filled_rx, frames_ready.as_ref(), shared);
        cameras
            .into_iter()
            .zip(written)
            .map(|((i, camera), written)| {
                let name = cfg.streams[i].name.clone();
                let produced = match camera {
                    Ok(h) => h.join().unwrap_or_else(|_| StreamResult {
                        error: Some(format!(
                            "stream {name}: its camera thread stopped unexpectedly"
                        )),
                        ..StreamResult::default()
                    }),
                    Err(e) => {
                        shared.halt();
                        StreamResult {
                            error: Some(format!(
                                "stream {name}: cannot start its camera thread: {e}"
                            )),
                            ..StreamResult::default()
                        }
                    }
                };
                let mut r = merge(produced, written);
                r.name = name;
                r.fps_requested = cfg.streams[i].fps;
                r.buffers = cfg.buffers;
                r
            })
            .collect()
    })
}

/// Starts the recording on `clock`; each stalled write is handed to `stalls` as it ends.
pub fn start(
    cfg: &RecordConfig,
    stop: Arc<AtomicBool>,
    clock: Instant,
    stalls: Option<crate::kernel::StallSink>,
) -> Recording {
    if let Some(plan) = &cfg.replay {
        return crate::replay::start(cfg, plan.clone(), stop, clock, stalls);
    }
    let n = cfg.streams.len();
    let progress: Vec<Arc<StreamProgress>> = (0..n)
        .map(|_| Arc::new(StreamProgress::default()))
        .collect();
    let groups: Vec<Vec<usize>> = if cfg.shared_writer {
        vec![(0..n).collect()]
    } else {
        (0..n).map(|i| vec![i]).collect()
    };
    let halt = Arc::new(AtomicBool::new(false));
    let ended = Arc::new(AtomicBool::new(false));
    let closed = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut handles = Vec::new();
    let mut failed = Vec::new();
    for group in groups {
        let names: Vec<String> = group.iter().map(|&i| cfg.streams[i].name.clone()).collect();
        let cfg = cfg.clone();
        let progress = progress.clone();
        let shared = Shared {
            stop: stop.clone(),
            halt: halt.clone(),
            ended: ended.clone(),
            clock,
            closed: closed.clone(),
            stalls: stalls.clone(),
        };
        let thread_name = if group.len() == 1 {
            format!("sinkrate-{}", names[0])
        } else {
            "sinkrate-writer".to_string()
        };
        let spawned = std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || run_group(&cfg, &group, &progress, &shared));
        match spawned {
            Ok(h) => handles.push((names, h)),
            Err(e) => {
                halt.store(true, Ordering::Relaxed);
                failed.extend(names.into_iter().map(|name| StreamResult {
                    error: Some(format!("stream {name}: cannot start its threads: {e}")),
                    name,
                    ..StreamResult::default()
                }));
            }
        }
    }
    Recording {
        handles,
        failed,
        progress,
        clock,
        halt,
        ended,
        closed,
    }
}
