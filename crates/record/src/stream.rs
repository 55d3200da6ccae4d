//! What one stream's camera and writer share and hand back: the frames in flight, the
//! counters the live line reads, and the stream's result. Kept apart from `run` (which
//! starts the threads) and `writer` (which writes), so that neither imports the other.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sinkrate_stats::LatencyRecorder;

/// Drop instants kept per stream (the count is always exact).
/// Frame records kept per stream and side (camera drops, writer writes): enough for an hour
/// of 60 fps, bounded for a 1 kHz logger.
pub(crate) const MAX_FRAME_RECORDS: usize = 500_000;

/// The per-frame records a stream keeps: up to [`MAX_FRAME_RECORDS`], and in a soak (two
/// hours or more) the first hour's, so that its memory is flat from then on; the windows
/// (`StreamResult::windows`) summarise the whole run.
pub(crate) fn frame_record_cap(cfg: &sinkrate_model::record::RecordConfig, fps: f64) -> usize {
    if cfg.duration >= sinkrate_sampler::timeline::SOAK_FROM {
        MAX_FRAME_RECORDS.min((fps.max(1.0) * 3600.0) as usize)
    } else {
        MAX_FRAME_RECORDS
    }
}
pub(crate) const MAX_DROP_TIMES: usize = 10_000;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Stall {
    pub stream: String,
    pub frame: Option<u64>,
    /// The writer thread that made the call.
    pub tid: i32,
    pub at_s: f64,
    pub duration_ms: f64,
}

/// One frame's life, for the per-frame log.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct FrameRecord {
    pub frame: u64,
    pub size: u64,
    pub capture_ns: u64,
    /// None for a dropped frame.
    pub write_start_ns: Option<u64>,
    pub write_end_ns: Option<u64>,
}

/// A completed fdatasync: when it returned, and the last frame written before it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyncPoint {
    pub end_ns: u64,
    pub last_frame: u64,
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
    /// The writer thread's id (the kernel's events name it so).
    pub writer_tid: Option<i32>,
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
    /// Every completed periodic fdatasync (bounded like `frames`).
    pub syncs: Vec<SyncPoint>,
    /// The frames written in each window of `RecordConfig::window` (by when their write
    /// ended): count, bytes and the slowest write. Kept as the writer goes, so a soak of
    /// days is summarised whole, not only the frames `frames` holds.
    pub windows: Vec<WindowCount>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct WindowCount {
    pub frames: u64,
    pub bytes: u64,
    pub worst_ns: u64,
}

/// A segment the writer closed, for `--verify-every` to read back.
#[derive(Debug, Clone)]
pub struct ClosedSegment {
    pub stream: String,
    pub path: PathBuf,
    /// The bytes the writer put in it.
    pub bytes: u64,
}

/// A filled capture buffer on its way to the writer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame {
    pub index: u64,
    pub buffer: usize,
    pub size: u64,
    pub capture_ns: u64,
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

pub(crate) struct Shared {
    /// The caller's: set by Ctrl-C.
    pub stop: Arc<AtomicBool>,
    /// The recording's own: set when a stream fails, so every stream ends with it. Kept apart
    /// from `stop` so that a failed run is not mistaken for an interrupted one.
    pub halt: Arc<AtomicBool>,
    /// Set at a power cut: the cameras stop, and no error after it fails the run.
    pub ended: Arc<AtomicBool>,
    pub clock: Instant,
    /// Segments closed and not yet read back (`--verify-every`).
    pub closed: Arc<std::sync::Mutex<Vec<ClosedSegment>>>,
    /// Where each stalled write is handed over to be explained while the run goes on.
    pub stalls: Option<crate::kernel::StallSink>,
}

impl Shared {
    /// A write of this thread from `start_ns` to `end_ns` took over the stall threshold.
    pub fn stalled(&self, start_ns: u64, end_ns: u64) {
        if let Some(sink) = &self.stalls {
            sink.hand_over(sinkrate_platform::cpu::thread_id(), start_ns, end_ns);
        }
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(std::sync::atomic::Ordering::Relaxed)
            || self.halt.load(std::sync::atomic::Ordering::Relaxed)
            || self.ended.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A stream failed: the others end too.
    pub fn halt(&self) {
        self.halt.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}
