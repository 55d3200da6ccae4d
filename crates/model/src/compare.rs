//! `sinkrate compare`'s result: runs grouped into rows (seed 004's table), each row set
//! against the baseline with the difference, its 95% interval and a p-value; the runs that
//! failed beside them. Read back typed by `sinkrate report` and by scripts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sinkrate_stats::bootstrap::Difference;

/// One run's figures; a figure the run kind does not have is None.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub frames_offered: Option<u64>,
    pub frames_dropped: Option<u64>,
    pub write_avg_ms: Option<f64>,
    pub write_p50_ms: Option<f64>,
    pub write_p99_ms: Option<f64>,
    pub write_max_ms: Option<f64>,
    pub lateness_p99_ms: Option<f64>,
    /// What the application (or the job) wrote, MB/s.
    pub app_mb_s: Option<f64>,
    /// What the device wrote, MB/s.
    pub device_mb_s: Option<f64>,
    pub iops: Option<f64>,
    pub writer_cpu_s: Option<f64>,
    pub flusher_cpu_s: Option<f64>,
    /// The whole system's CPU in kernel mode, mean percent (the sampler's), or a bench
    /// job's user + system CPU percent.
    pub system_cpu_pct: Option<f64>,
    pub peak_dirty_mb: Option<f64>,
    /// The peak dirty data in seconds of the stream: what a power cut could lose.
    pub at_risk_s: Option<f64>,
    /// The stalls' time by cause, from the kernel's events (None where they were not read):
    /// throttled, waiting for writeback, journal commits, the device, waiting for a CPU.
    #[serde(default)]
    pub stall_throttled_s: Option<f64>,
    #[serde(default)]
    pub stall_writeback_s: Option<f64>,
    #[serde(default)]
    pub stall_journal_s: Option<f64>,
    #[serde(default)]
    pub stall_device_s: Option<f64>,
    #[serde(default)]
    pub stall_cpu_s: Option<f64>,
}

/// One configuration: its runs, and the mean of their figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub label: String,
    pub kind: String,
    pub files: Vec<String>,
    pub runs: usize,
    pub config: BTreeMap<String, String>,
    /// Means over the runs (frames: totals).
    pub metrics: Metrics,
    /// Against the baseline; None for the baseline itself.
    pub against_baseline: Option<Significance>,
    /// How far the row's runs lie apart (two runs or more): the same board and card can
    /// differ from run to run as much as two boards do.
    #[serde(default)]
    pub spread: Option<Spread>,
}

/// The least and the most of a figure over a row's runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// A row's runs, each figure's least and most.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub frames_dropped: Option<Range>,
    pub write_p99_ms: Option<Range>,
    pub app_mb_s: Option<Range>,
}

/// How a row differs from the baseline, and how sure that is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Significance {
    /// "runs" (bootstrap and permutation over runs) or "block bootstrap over time".
    pub method: String,
    /// Dropped frames as a share of those offered.
    pub drops: Option<Difference>,
    pub write_p99_ms: Option<Difference>,
    pub lateness_p99_ms: Option<Difference>,
    pub app_mb_s: Option<Difference>,
    /// Significantly worse than the baseline on drops or p99 write latency.
    pub worse: bool,
    /// The verdict in words.
    pub text: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompareReport {
    pub baseline: usize,
    pub rows: Vec<Row>,
    /// Inputs that could not be read, one line each.
    pub unreadable: Vec<String>,
    pub notes: Vec<String>,
    /// Long recordings (soaks) side by side, window by window: empty unless a row's runs
    /// have two windows or more.
    #[serde(default)]
    pub windows: Vec<WindowRow>,
    /// What the rows are grouped by when not by configuration (`host`, `fs`, a JSON
    /// pointer).
    #[serde(default)]
    pub grouped_by: Option<String>,
    /// Runs that failed (a board a lab could not reach or run on, a recording stopped by
    /// an error): shown beside the rows, their figures in none of them.
    #[serde(default)]
    pub failed: Vec<FailedRun>,
}

/// A run that failed, as the table shows it: never left out in silence.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FailedRun {
    /// Its group's label (`--by`), else its file's name.
    pub label: String,
    /// What was run (check, record...), or `failed` when it failed before any command.
    pub kind: String,
    pub file: String,
    /// Its error, one line.
    pub what: String,
}

/// One window of the soaks compared: each row's rate (mean over its runs) and worst write
/// (the worst of its runs); None where a row's runs did not last that long.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowRow {
    pub start_s: f64,
    pub end_s: f64,
    pub rows: Vec<Option<WindowFigures>>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowFigures {
    pub written_mb_s: f64,
    pub worst_write_ms: f64,
}
