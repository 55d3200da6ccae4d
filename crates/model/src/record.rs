//! `sinkrate record`'s configuration and result, `record --power-cut-at`'s survival count and
//! `record --find-max`'s search: what `check`, `compare`, `tune` and `report` read back.
//! Every figure carries its unit in its key.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sinkrate_stats::LatencyDistribution;

use crate::timeline::{Hog, Sample, Summary};
use crate::{Envelope, TargetFacts, Verdict};

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum FrameSizes {
    Fixed {
        bytes: u64,
    },
    /// A bitrate spread over the stream's frames; the frame rate is the stream's own
    /// (`StreamSpec::fps`), the one place it is kept.
    Bitrate {
        bits_per_s: u64,
        gop: u32,
        i_to_p: f64,
        /// Relative jitter of each frame's size (0.1 = +-10%), compensated within the GOP.
        jitter: f64,
    },
}

impl FrameSizes {
    /// The mean frame at `fps` frames a second.
    pub fn mean_bytes(&self, fps: f64) -> f64 {
        match self {
            FrameSizes::Fixed { bytes } => *bytes as f64,
            FrameSizes::Bitrate { bits_per_s, .. } => *bits_per_s as f64 / 8.0 / fps,
        }
    }

    /// The largest frame this source can produce (buffers are sized for it). The residual
    /// of a GOP is spread over its remaining frames, so a late P-frame can grow to about
    /// e^(jitter x ln(gop)) of its share; 2.5x covers jitter up to 0.25 for GOPs up to 120.
    pub fn max_bytes(&self, fps: f64) -> u64 {
        match self {
            FrameSizes::Fixed { bytes } => *bytes,
            FrameSizes::Bitrate { jitter, .. } => {
                let (i, p) = self.i_and_p(fps);
                (i.max(p * 2.5) * (1.0 + jitter)).ceil() as u64 + 4096
            }
        }
    }

    /// Mean sizes of I- and P-frames such that a GOP carries exactly gop * mean bytes.
    pub fn i_and_p(&self, fps: f64) -> (f64, f64) {
        match self {
            FrameSizes::Fixed { bytes } => (*bytes as f64, *bytes as f64),
            FrameSizes::Bitrate { gop, i_to_p, .. } => {
                let mean = self.mean_bytes(fps);
                let n = (*gop).max(1) as f64;
                let p = mean * n / (i_to_p + n - 1.0);
                (p * i_to_p, p)
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SegmentPolicy {
    #[serde(
        rename = "every_s",
        alias = "every",
        with = "sinkrate_units::serde_seconds::opt_seconds",
        default
    )]
    pub every: Option<Duration>,
    pub bytes: Option<u64>,
    /// Delete oldest segments while the file system is fuller than this percentage.
    pub loop_fill_pct: Option<f64>,
}

impl SegmentPolicy {
    pub fn segmented(&self) -> bool {
        self.every.is_some() || self.bytes.is_some()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StreamSpec {
    pub name: String,
    pub fps: f64,
    pub sizes: FrameSizes,
}

impl StreamSpec {
    /// The stream's mean frame.
    pub fn mean_frame_bytes(&self) -> f64 {
        self.sizes.mean_bytes(self.fps)
    }

    /// The largest frame the stream can produce (its buffers are sized for it).
    pub fn max_frame_bytes(&self) -> u64 {
        self.sizes.max_bytes(self.fps)
    }

    /// Bytes a second the stream produces.
    pub fn bytes_per_s(&self) -> f64 {
        self.mean_frame_bytes() * self.fps
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WriteMode {
    /// write(2) into the page cache.
    Buffered,
    /// O_DIRECT from aligned buffers; the sub-block tail of each frame is carried into the
    /// next write, and the last one is written through the page cache at close.
    Direct,
    /// O_DSYNC: each write returns once on the device.
    Dsync,
    /// O_DIRECT writes queued on io_uring: each frame is copied into one of `queue_depth`
    /// aligned staging buffers and its capture buffer goes back to the pool at once, so up to
    /// `queue_depth` frames are in flight while the writer takes the next.
    Uring,
    /// No I/O at all: measures the emulator itself (schedule, pools, hand-over).
    Null,
}

impl WriteMode {
    /// The mode's name as `--write-mode` and the JSON spell it.
    pub fn name(self) -> &'static str {
        match self {
            WriteMode::Buffered => "buffered",
            WriteMode::Direct => "direct",
            WriteMode::Dsync => "dsync",
            WriteMode::Uring => "uring",
            WriteMode::Null => "null",
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PreallocMode {
    /// fallocate(FALLOC_FL_KEEP_SIZE): blocks reserved, size unchanged.
    Fallocate,
    /// ftruncate to the size: a sparse file of that length, nothing allocated.
    Ftruncate,
    /// Write zeros up to the size first (seed 002's pregrowing), then overwrite in place.
    Pregrow,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RecordConfig {
    #[serde(serialize_with = "crate::paths::lossy")]
    pub dir: PathBuf,
    pub streams: Vec<StreamSpec>,
    /// Capture buffers per stream (a V4L2 queue holds 4).
    pub buffers: usize,
    pub write_mode: WriteMode,
    /// Frames in flight at once in io_uring mode.
    pub queue_depth: usize,
    /// One writer thread for every stream (as a recorder with one storage thread has),
    /// instead of one per stream.
    pub shared_writer: bool,
    /// Bytes per write call (None: the whole frame in one call).
    pub write_size: Option<u64>,
    pub fdatasync_every_frames: Option<u64>,
    #[serde(
        rename = "fdatasync_every_s",
        alias = "fdatasync_every",
        with = "sinkrate_units::serde_seconds::opt_seconds",
        default
    )]
    pub fdatasync_every: Option<Duration>,
    /// Preallocate each file (each segment) to this many bytes, the way `prealloc_mode` says.
    pub preallocate: Option<u64>,
    pub prealloc_mode: PreallocMode,
    #[serde(
        rename = "duration_s",
        alias = "duration",
        with = "sinkrate_units::serde_seconds::seconds"
    )]
    pub duration: Duration,
    /// Write calls slower than this are listed as stalls.
    #[serde(
        rename = "stall_threshold_s",
        alias = "stall_threshold",
        with = "sinkrate_units::serde_seconds::seconds"
    )]
    pub stall_threshold: Duration,
    pub seed: u64,
    /// Keep the recorded files.
    pub keep: bool,
    /// Keep one record per frame (for --frames-log).
    pub frame_records: bool,
    pub segments: SegmentPolicy,
    /// Cut an emulated card's power this far into the run (frames then carry headers).
    #[serde(
        rename = "power_cut_at_s",
        with = "sinkrate_units::serde_seconds::opt_seconds",
        default
    )]
    pub power_cut_at: Option<Duration>,
    /// A soak: every closed segment is read back from the device this often, its frames'
    /// headers and checksums checked (frames then carry headers).
    #[serde(
        rename = "verify_every_s",
        with = "sinkrate_units::serde_seconds::opt_seconds",
        default
    )]
    pub verify_every: Option<Duration>,
    /// Tells this run's frame headers from any other's (set by the session).
    #[serde(skip)]
    pub run_tag: u64,
    /// `--replay TRACE`: a captured recorder's calls, run instead of the streams' frames.
    #[serde(skip)]
    pub replay: Option<std::sync::Arc<crate::replay::ReplayPlan>>,
    /// The replay's pace against the original (2.0: twice as fast).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub replay_speed: f64,
}

fn one() -> f64 {
    1.0
}

fn is_one(v: &f64) -> bool {
    *v == 1.0
}

impl RecordConfig {
    /// Whether frames carry headers (to be found and checked when read back).
    pub fn stamps_frames(&self) -> bool {
        self.power_cut_at.is_some() || self.verify_every.is_some()
    }

    /// The length of the windows a long recording is summarised in: an hour from two
    /// hours on (slow hours show SLC cache exhaustion, heat, garbage collection), else a
    /// sixth of the run, at least a minute.
    pub fn window(&self) -> Duration {
        let d = self.duration.as_secs();
        if d >= 7200 {
            Duration::from_secs(3600)
        } else {
            Duration::from_secs((d / 6).max(60))
        }
    }
}

/// Custom streams in words: "2 stream(s) x 30 fps".
pub fn streams_label(streams: &[StreamSpec]) -> String {
    format!(
        "{} stream(s) x {} fps",
        streams.len(),
        streams.first().map_or(0.0, |s| s.fps)
    )
}

impl RecordConfig {
    /// Bytes per second the streams produce.
    pub fn requested_bytes_per_s(&self) -> f64 {
        self.streams.iter().map(StreamSpec::bytes_per_s).sum()
    }
}

/// What the cut cost.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PowerCutReport {
    pub at_s: f64,
    /// Bytes the device's volatile write cache held, and lost, at the cut.
    pub cache_lost_bytes: Option<u64>,
    /// Whether the filesystem mounted again after the power came back.
    pub mounted_after: bool,
    /// Why it did not, or what the kernel said while mounting (journal recovery).
    pub mount_notes: Vec<String>,
    pub streams: Vec<StreamSurvival>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StreamSurvival {
    pub stream: String,
    /// Frames whose write call had returned before the cut.
    pub frames_believed_written: u64,
    /// Of those, frames a completed fdatasync (or O_DSYNC) had reported on the device.
    pub frames_acknowledged_durable: u64,
    /// Of those, frames found whole on the card after the power came back.
    pub frames_survived: u64,
    pub frames_lost: u64,
    /// Acknowledged durable, yet not on the card: the device or the filesystem broke its
    /// promise.
    pub frames_durable_lost: u64,
    /// The recording missing before the cut: from the capture of the first frame (written or
    /// waiting to be) that is not on the card, to the cut.
    pub recording_lost_s: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Searched {
    Streams,
    Bitrate,
    Fps,
    /// A replay's pace against the captured recorder (`record --replay --find-max speed`).
    Speed,
}

impl Searched {
    pub fn name(self) -> &'static str {
        match self {
            Searched::Streams => "streams",
            Searched::Bitrate => "bitrate",
            Searched::Fps => "fps",
            Searched::Speed => "speed",
        }
    }
    pub fn integer(self) -> bool {
        self == Searched::Streams
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub value: f64,
    pub verdict: Verdict,
    pub requested_bytes_per_s: f64,
}

/// The search's result (`kind: find_max` in the run envelope).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindMaxReport {
    /// What the recording directory is stored on.
    #[serde(default)]
    pub target: Option<crate::TargetFacts>,
    pub what: Searched,
    /// The largest value that kept up; None when even the smallest tried did not.
    pub max: Option<f64>,
    pub max_requested_bytes_per_s: Option<f64>,
    /// The search stopped at the most this tool runs (64 streams), not at a failure.
    #[serde(default)]
    pub at_limit: bool,
    pub raw_direct_write_bytes_per_s: f64,
    #[serde(
        with = "sinkrate_units::serde_seconds::seconds",
        rename = "probe_duration_s",
        default
    )]
    pub probe_duration: std::time::Duration,
    pub probes: Vec<Probe>,
}

/// A recording's result inside the run envelope.
pub type RecordRun = Envelope<RecordReport>;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RecordReport {
    /// What the recording directory is stored on.
    #[serde(default)]
    pub target: Option<TargetFacts>,
    pub config: RecordConfig,
    /// The streams in words: a profile's name and description, or "2 stream(s) x 30 fps".
    pub label: String,
    /// Every stream's error, if any stopped it.
    #[serde(default)]
    pub errors: Vec<String>,
    pub dirty_limits: Option<DirtyLimits>,
    pub verdict: Verdict,
    pub verdict_text: String,
    pub headroom: Option<f64>,
    pub backlog_growth_bytes_per_s: Option<f64>,
    pub throttled_after_s: Option<f64>,
    #[serde(default)]
    pub deferred_writeback: bool,
    /// A sustained write rate measured before the run (check's probe) that the verdict
    /// used; null when the run judged from its own evidence alone.
    #[serde(default)]
    pub sustained_bytes_per_s: Option<f64>,
    pub totals: Totals,
    pub streams: Vec<StreamReport>,
    pub stalls: Vec<StallReport>,
    /// The kernel's account of the run (throttling, journal, device, scheduler), or why
    /// causes were inferred from /proc samples instead.
    #[serde(default = "crate::causes::KernelAccount::absent")]
    pub kernel: crate::causes::KernelAccount,
    /// One row per second of the recording.
    #[serde(default)]
    pub intervals: Vec<Interval>,
    /// Every frame's times, one column per quantity, per stream.
    #[serde(default)]
    pub frames: Vec<FrameColumns>,
    pub sampler: SamplerSection,
    /// `--power-cut-at`: what the cut cost.
    #[serde(default)]
    pub power_cut: Option<PowerCutReport>,
    /// The device failed under the recording (the kernel reported it): when, after how
    /// many bytes, and in the kernel's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_failure: Option<DeviceFailure>,
    /// How long the device lasts at this recording's device write rate, and its write
    /// amplification; null for a recording that wrote nothing.
    #[serde(default)]
    pub lifetime: Option<crate::health::Lifetime>,
    /// The recording in windows (an hour each from two hours on): rate and worst write.
    #[serde(default)]
    pub windows: Vec<Window>,
    /// `--verify-every`: what was read back during the recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<SoakVerify>,
    /// `--replay`: the captured recorder replayed, and how well its timing was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::replay::ReplaySummary>,
    /// The capture pool and card class this recording needs, from its own frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Sizes>,
}

/// A window of a long recording: what it wrote and its worst write.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Window {
    /// The window's start and end, seconds from the start.
    pub start_s: f64,
    pub end_s: f64,
    pub frames_written: u64,
    pub bytes_written: u64,
    pub written_bytes_per_s: f64,
    /// The slowest frame write (first write call to last) that ended in the window.
    pub worst_write_ns: u64,
}

/// `--verify-every`: the closed segments read back during the recording.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SoakVerify {
    pub every_s: f64,
    pub segments_verified: u64,
    pub bytes_verified: u64,
    /// Segments loop recording deleted before their turn came.
    pub segments_deleted_first: u64,
    /// The first segment that did not read back as written, if any.
    pub failure: Option<SegmentFailure>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SegmentFailure {
    pub stream: String,
    pub file: String,
    /// When it was found, seconds from the start.
    pub found_at_s: f64,
    /// Where the first bad byte is in the file, and the frame expected there.
    pub offset: u64,
    pub frame: Option<u64>,
    /// What the bytes there are: zeros, another run's frame, a frame whose payload does
    /// not match its checksum, no frame at all, or too short.
    pub holds: String,
}

impl SegmentFailure {
    pub fn line(&self) -> String {
        format!(
            "{} did not read back as written (found at {} into the recording): from byte {}{} it holds {}",
            self.file,
            sinkrate_units::product::hh_mm_ss(self.found_at_s),
            self.offset,
            self.frame.map(|f| format!(" (frame {f})")).unwrap_or_default(),
            self.holds
        )
    }
}

/// A failure of the recording's device that the kernel reported: a card turned read-only or
/// worn out, I/O errors on writeback that no write call returned.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceFailure {
    /// Seconds into the recording when the first message was seen (to the sampler's
    /// interval).
    pub at_s: f64,
    /// What the devices had written from the start of the recording to then (diskstats).
    pub device_written_bytes: Option<u64>,
    /// The kernel's first messages, oldest first.
    pub messages: Vec<String>,
    /// How many such messages there were in all.
    pub count: u64,
}

impl DeviceFailure {
    /// One line: the moment, the bytes, the kernel's first words.
    pub fn line(&self) -> String {
        format!(
            "the device failed at {} into the recording{}: the kernel reported \"{}\"{}",
            sinkrate_units::product::hh_mm_ss(self.at_s),
            self.device_written_bytes
                .map(|b| format!(
                    ", after {} written to it",
                    sinkrate_units::product::bytes_si(b)
                ))
                .unwrap_or_default(),
            self.messages.first().map(String::as_str).unwrap_or(""),
            if self.count > 1 {
                format!(" and {} more messages like it", self.count - 1)
            } else {
                String::new()
            }
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DirtyLimits {
    pub dirty_bytes: u64,
    pub dirty_background_bytes: u64,
    /// The values they replaced, restored at the end.
    pub restored: Vec<RestoredSetting>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RestoredSetting {
    pub name: String,
    pub original: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Totals {
    /// The recording window judged (the configured duration, or up to Ctrl-C).
    #[serde(default)]
    pub duration_s: f64,
    pub frames_offered: u64,
    pub frames_written: u64,
    pub frames_dropped: u64,
    pub bytes_requested: u64,
    pub bytes_written: u64,
    pub requested_bytes_per_s: f64,
    pub written_bytes_per_s: f64,
    /// The devices' mean write rate over the recording window (diskstats).
    pub device_bytes_per_s: Option<f64>,
    /// What the recording cost the devices: the bytes they wrote from its start to the end
    /// of its final flush (diskstats; other writers to them count too). None without a
    /// device (memory, a null writer).
    #[serde(default)]
    pub device_bytes_written: Option<u64>,
    pub device_busy_fraction: Option<f64>,
    /// Bytes the devices wrote per second of busy time.
    #[serde(default)]
    pub device_rate_while_busy_bytes_per_s: Option<f64>,
    pub writer_cpu_s: f64,
    /// The kernel's flush threads (seed 001's spikes).
    pub flusher_cpu_s: f64,
    pub final_flush_s: f64,
    pub write_latency_ns: LatencyDistribution,
    pub lateness_ns: LatencyDistribution,
    pub schedule_jitter_ns: LatencyDistribution,
    /// The streams' longest unacknowledged stretch (see the stream's); null when a stream
    /// never asked the device.
    #[serde(default)]
    pub unacknowledged_worst_s: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StreamReport {
    pub name: String,
    pub fps_requested: f64,
    pub fps_achieved: f64,
    pub frames_offered: u64,
    pub frames_written: u64,
    pub frames_dropped: u64,
    pub first_drop_s: Option<f64>,
    pub drop_times_s: Vec<f64>,
    pub bytes_requested: u64,
    pub bytes_written: u64,
    pub file: String,
    pub files: Vec<String>,
    pub file_bytes_on_disk: Option<u64>,
    pub segments_created: u64,
    pub segments_deleted: u64,
    pub bytes_deleted: u64,
    pub pool_high_water: usize,
    pub buffers: usize,
    pub write_latency_ns: LatencyDistribution,
    pub lateness_ns: LatencyDistribution,
    pub schedule_jitter_ns: LatencyDistribution,
    pub writer_busy_ns: u64,
    pub writer_cpu_ns: u64,
    pub final_sync_ns: u64,
    /// The longest stretch of recording (capture to acknowledgement) that a completed
    /// fdatasync or O_DSYNC write had not yet reported on the device: what a power cut at
    /// the worst instant loses. Null when the writer never asked the device.
    #[serde(default)]
    pub unacknowledged_worst_s: Option<f64>,
    pub error: Option<String>,
}

/// A write call over the stall threshold, with what the sampler saw nearest to it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StallReport {
    pub stream: String,
    /// The frame whose write stalled, when the call wrote one.
    #[serde(default)]
    pub frame: Option<u64>,
    /// The thread that made the call.
    #[serde(default)]
    pub tid: Option<i32>,
    pub at_s: f64,
    pub duration_ms: f64,
    pub dirty_bytes: Option<u64>,
    pub writeback_bytes: Option<u64>,
    pub throttled: Option<bool>,
    pub disk_util_pct: Option<f64>,
    pub cpu_iowait_pct: Option<f64>,
    /// The call's time by cause, from the kernel's events; null where they were not read
    /// (`RecordReport::kernel` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causes: Option<crate::causes::StallCauses>,
}

/// One second of the recording, all streams together.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Interval {
    /// The interval's end, seconds from the start.
    pub t_s: f64,
    pub frames_captured: u64,
    pub frames_written: u64,
    pub frames_dropped: u64,
    /// Bytes of the frames whose writes ended in this interval.
    pub bytes_written: u64,
    /// The slowest and 99th-percentile frame write (first write call to last) that ended
    /// in this interval.
    pub frame_write_max_ns: u64,
    pub frame_write_p99_ns: u64,
}

/// What the run says its recording needs: a capture pool per stream and the lowest card
/// class, each with what it rests on.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Sizes {
    pub pools: Vec<PoolSize>,
    /// The lowest SD video speed class whose guaranteed rate carries all streams; None
    /// above V90.
    pub card_class: Option<CardClass>,
    pub streams_bytes_per_s: f64,
    pub run_s: f64,
    /// When the first dirty data to expire is written back (dirty_expire_centisecs plus one
    /// dirty_writeback_centisecs): a run shorter than this never met that flush.
    pub first_expiry_writeback_s: Option<f64>,
    /// The per-device dirty limit for the recording's card, sized from this run; None for a
    /// recording that wrote through no page cache (O_DIRECT, O_DSYNC, a null writer).
    #[serde(default)]
    pub device_limit: Option<DeviceLimit>,
}

/// A per-device dirty limit (the bdi's `strict_limit=1` and `max_bytes`) sized from a run:
/// the device's measured rate times the stall the recording rides out. Under it the card
/// holds at most that much of the recording: a flush or a sync of all of it takes no longer
/// than the pool rides out, a power cut loses no more, and other writers on the machine are
/// not throttled for the card's backlog. The recorder's writes stay unthrottled as long as
/// the card writes faster than the streams (`keeps_up`): the flusher then holds the card's
/// dirty data near half the cap, below where the kernel throttles a writer.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DeviceLimit {
    /// The card's bdi (`MAJ:MIN`), when known.
    pub bdi: Option<String>,
    /// The cap, bytes (whole MiB, rounded up); None when the device's rate was not measured.
    pub max_bytes: Option<u64>,
    /// The device's rate while busy in this run (diskstats).
    pub device_bytes_per_s: Option<f64>,
    /// The stall the recording rides out: the seconds of stream its smallest capture pool
    /// holds.
    pub ride_out_s: f64,
    /// The card writes faster than the streams, with a tenth to spare.
    pub keeps_up: bool,
    /// The bdi's cap already in force (`strict_limit` set and `max_bytes` at most the size).
    #[serde(default)]
    pub in_force: bool,
    /// The strict cap the card's bdi held during the run (`max_bytes` with `strict_limit`
    /// set), bytes; None when it held none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_bytes: Option<u64>,
    /// Why there is no cap when `max_bytes` is None.
    #[serde(default)]
    pub why_not: Option<String>,
}

impl DeviceLimit {
    /// The longest pause the kernel gives a writer under a strict per-device cap of `cap_bytes` on
    /// a device writing `device_bytes_per_s`: an eighth of the time the device takes to write the
    /// cap back (`wb_max_pause`, HZ 250 or 1000), at most 0.2 s.
    pub fn longest_throttle_pause_s(cap_bytes: u64, device_bytes_per_s: f64) -> f64 {
        const SAFETY: f64 = 0.128;
        const MAX_PAUSE_S: f64 = 0.2;
        if device_bytes_per_s <= 0.0 || !device_bytes_per_s.is_finite() {
            return MAX_PAUSE_S;
        }
        (SAFETY * cap_bytes as f64 / device_bytes_per_s).min(MAX_PAUSE_S)
    }
}

/// The capture pool a stream needed to drop nothing.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PoolSize {
    pub stream: String,
    /// Frames from capture until their write returned, at the most (`--buffers`).
    pub frames: usize,
    /// That many of the stream's largest frame.
    pub bytes: u64,
    /// That many frames as seconds of the stream.
    pub seconds: f64,
    /// When the pool was fullest.
    pub peak_at_s: f64,
    /// The longest write of the backlog that peak came from: what the figure rests on.
    pub rests_on_write_at_s: f64,
    pub rests_on_write_ms: f64,
    /// The pool the run had.
    pub buffers: usize,
    /// Frames replayed for the figure.
    pub frames_judged: u64,
    /// The run listed only its first frames: later stalls are not in the figure.
    pub truncated: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CardClass {
    pub name: String,
    pub min_bytes_per_s: f64,
}

/// A stream's frames as columns of equal length (compact for long runs): times in
/// microseconds from the start of the run; write times null for a dropped frame.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FrameColumns {
    pub stream: String,
    /// Frames beyond the per-stream cap are counted in the totals but not listed here.
    pub truncated: bool,
    pub frame: Vec<u64>,
    pub size_bytes: Vec<u64>,
    pub capture_us: Vec<u64>,
    pub write_start_us: Vec<Option<u64>>,
    pub write_end_us: Vec<Option<u64>>,
    /// How late the frame was on disk against its deadline (capture + one frame interval);
    /// 0 when on time, null for a dropped frame.
    pub lateness_us: Vec<Option<u64>>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SamplerSection {
    pub devices: Vec<String>,
    pub summary: Summary,
    pub hogs: Vec<Hog>,
    pub timeline: Vec<Sample>,
}

impl RecordReport {
    /// The stall that took longest, if any.
    pub fn worst_stall(&self) -> Option<&StallReport> {
        self.stalls
            .iter()
            .max_by(|a, b| a.duration_ms.total_cmp(&b.duration_ms))
    }
}
