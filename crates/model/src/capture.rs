//! `sinkrate capture`'s result: what the recorder did to its files, and what the capture
//! cost it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaptureReport {
    /// The recorder's command line.
    pub command: Vec<String>,
    /// The iolog (fio's `read_iolog`), and the sidecar of every call beside it.
    pub trace: String,
    pub sidecar: String,
    pub duration_s: f64,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Ctrl-C came during the capture (the recorder got it too). Written as the envelope's
    /// `interrupted`, not twice.
    #[serde(skip)]
    pub interrupted: bool,
    /// Calls in the trace.
    pub calls: u64,
    /// Each file written, by its last name (after renames), in the order first written.
    pub files: Vec<CapturedFile>,
    pub renames: u64,
    pub unlinks: u64,
    pub cost: CaptureCost,
    /// What the capture could not see (a file written through a mapping, io_uring).
    pub unseen: Vec<String>,
    /// When the trace could not be written (its filesystem full, its directory gone): the
    /// capture stopped writing there and let the recorder run on to its end. The trace holds
    /// the calls before that one.
    #[serde(default)]
    pub trace_cut_short: Option<TraceCut>,
    /// The recorder's calls over the stall threshold, each with its causes from the
    /// kernel's events; without them (`kernel.inferred_because`), with none.
    #[serde(default)]
    pub slow_calls: Vec<crate::watch::SlowCall>,
    /// Calls over the threshold that are not listed (the list keeps the first
    /// [`SLOW_CALLS_KEPT`]).
    #[serde(default)]
    pub slow_calls_not_listed: u64,
    #[serde(default = "crate::causes::KernelAccount::absent")]
    pub kernel: crate::causes::KernelAccount,
}

/// How many slow calls a capture lists: a bounded report however long the recorder runs.
pub const SLOW_CALLS_KEPT: usize = 10_000;

/// Where and why a trace stops short of the recorder's end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceCut {
    /// Calls the trace holds whole.
    pub calls_written: u64,
    /// When the first call that could not be written was made, in seconds from the start.
    pub at_s: f64,
    pub error: String,
}

/// One file's calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CapturedFile {
    pub file: String,
    /// Its names before the last, oldest first (a segment written as .tmp, then renamed).
    pub earlier_names: Vec<String>,
    pub writes: u64,
    pub bytes: u64,
    /// Its size as the calls left it: the furthest byte written, or a truncation's length.
    pub size: u64,
    pub fsyncs: u64,
    pub fdatasyncs: u64,
    pub sync_file_ranges: u64,
    /// O_DIRECT, O_DSYNC...: the flags of its opens, each once.
    pub open_flags: Vec<String>,
    pub write_p50_ms: Option<f64>,
    pub write_p99_ms: Option<f64>,
    pub write_max_ms: Option<f64>,
    pub sync_max_ms: Option<f64>,
    pub unlinked: bool,
}

/// What the capture cost the recorder.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaptureCost {
    /// The tracer's own CPU time, and as a share of one core over the capture.
    pub tracer_cpu_s: f64,
    pub tracer_cpu_pct_of_core: f64,
    /// Times the recorder was stopped for the tracer (two per call traced).
    pub stops: u64,
    /// Calls the interposer made and reported without stopping the recorder (its writes
    /// and syncs, in a dynamically linked recorder).
    #[serde(default)]
    pub interposed_calls: u64,
}
