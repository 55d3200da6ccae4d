//! The typed result of a recording: what `sinkrate record --output-format json` prints
//! (inside the run envelope) and what `check`, `find-max` and later `compare` and `tune`
//! read back. Every figure carries its unit in its key.

use serde::{Deserialize, Serialize};
use sinkrate_model::{Envelope, TargetFacts, Verdict};
use sinkrate_sampler::hogs::Hog;
use sinkrate_sampler::{Sample, Summary};
use sinkrate_stats::LatencyDistribution;

use crate::config::RecordConfig;

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
    /// One row per second of the recording.
    #[serde(default)]
    pub intervals: Vec<Interval>,
    /// Every frame's times, one column per quantity, per stream.
    #[serde(default)]
    pub frames: Vec<FrameColumns>,
    pub sampler: SamplerSection,
    /// `--power-cut-at`: what the cut cost.
    #[serde(default)]
    pub power_cut: Option<crate::power_cut::PowerCutReport>,
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
    pub at_s: f64,
    pub duration_ms: f64,
    pub dirty_bytes: Option<u64>,
    pub writeback_bytes: Option<u64>,
    pub throttled: Option<bool>,
    pub disk_util_pct: Option<f64>,
    pub cpu_iowait_pct: Option<f64>,
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
