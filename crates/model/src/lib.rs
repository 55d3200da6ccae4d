//! The result model. Every run kind produces a [`Run`]: host facts, target facts, the fully
//! resolved configuration, warnings about how far the figures can be trusted, and the
//! results. Exporters turn it into text, JSON (`"schema": "sinkrate.run/1"`) and terse lines.
//!
//! Every other command's result travels in an [`Envelope`], and every verdict is a
//! [`Verdict`]. Each command's result type lives here, one module per kind (`record`,
//! `check`, `audit`, `watch`, `search`, `suite`, `settings`, fio's JSON in `fio`), with the
//! facts sys reads (`facts`) and the sampler's timeline (`timeline`): pure data, no I/O. The
//! crates that produce a result fill these types; `report`, `compare` and `tune` read any run
//! back through them ([`document::Document`]), without depending on what produced it.

pub mod audit;
pub mod capture;
pub mod causes;
pub mod check;
pub mod compare;
pub mod document;
pub mod envelope;
pub mod facts;
pub mod fio;
pub mod health;
pub mod kept;
pub mod paths;
pub mod record;
pub mod replay;
pub mod sdclass;
pub mod search;
pub mod settings;
pub mod suite;
pub mod timeline;
pub mod tunables;
pub mod verdict;
pub mod verify;
pub mod watch;

pub use envelope::{Envelope, RunError, RunKind, Tool};
pub use verdict::Verdict;

use serde::{Deserialize, Serialize};
use sinkrate_jobspec::JobOptions;
use sinkrate_stats::{LatencyRecorder, SampleSummary};

pub const SCHEMA: &str = "sinkrate.run/1";
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The fio release whose outputs `sinkrate bench` writes (JSON keys, terse fields, logs).
pub const FIO_FORMAT_VERSION: &str = "3.33";

/// `"fio version"` in bench's JSON and terse output: fio's own form, `fio-MAJOR.MINOR`, so
/// that a consumer checking for it (`^fio-\d+\.\d+`) reads the output, with a suffix
/// that says which tool wrote it, as fio built from git says its commit
/// (`fio-3.33-sinkrate-0.2.0`).
pub fn fio_version_string() -> String {
    format!("fio-{FIO_FORMAT_VERSION}-sinkrate-{TOOL_VERSION}")
}

/// Facts about the machine a run happened on.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostFacts {
    pub hostname: Option<String>,
    pub kernel: Option<String>,
    pub arch: String,
    pub cpu_model: Option<String>,
    pub cpu_count: usize,
    pub mem_total_bytes: Option<u64>,
}

/// What a job's files live on.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TargetFacts {
    pub path: String,
    pub mount_point: Option<String>,
    pub fs_type: Option<String>,
    pub device: Option<String>,
    pub mount_options: Vec<String>,
    pub is_block_device: bool,
}

/// A statement about how far a figure can be trusted, with what to do about it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Warning {
    /// Stable identifier scripts can match on, e.g. `cache.fits_in_dirty_limit`.
    pub id: std::borrow::Cow<'static, str>,
    pub job: Option<String>,
    pub text: String,
}

/// One data direction's results.
#[derive(Debug, Clone, Default)]
pub struct DirectionResult {
    pub io_bytes: u64,
    pub total_ios: u64,
    pub short_ios: u64,
    /// Time this direction was active, in nanoseconds (fio's per-direction runtime).
    pub runtime_ns: u64,
    pub slat: LatencyRecorder,
    pub clat: LatencyRecorder,
    pub lat: LatencyRecorder,
    /// Bandwidth samples in bytes per second, one per averaging interval.
    pub bw_samples: Vec<f64>,
    pub iops_samples: Vec<f64>,
    /// With per-command priorities: completion latency (total latency with
    /// lat_percentiles) per priority, in fio's order, the job's own priority first.
    pub prios: Vec<PriorityLatency>,
}

/// The latencies of one direction's I/Os of one priority (fio's `prios` entries).
#[derive(Debug, Clone, Default)]
pub struct PriorityLatency {
    /// The kernel's ioprio: class in the top 3 bits, level in the low 3.
    pub ioprio: u16,
    pub latency: LatencyRecorder,
}

impl DirectionResult {
    pub fn bw_bytes_per_s(&self) -> f64 {
        if self.runtime_ns == 0 {
            0.0
        } else {
            self.io_bytes as f64 * 1e9 / self.runtime_ns as f64
        }
    }
    pub fn iops(&self) -> f64 {
        if self.runtime_ns == 0 {
            0.0
        } else {
            self.total_ios as f64 * 1e9 / self.runtime_ns as f64
        }
    }
    /// The priorities that had I/Os, in fio's order.
    pub fn seen_priorities(&self) -> Vec<&PriorityLatency> {
        self.prios
            .iter()
            .filter(|p| p.latency.count() > 0)
            .collect()
    }
    pub fn bw_summary(&self) -> SampleSummary {
        SampleSummary::of(&self.bw_samples)
    }
    pub fn iops_summary(&self) -> SampleSummary {
        SampleSummary::of(&self.iops_samples)
    }
    pub fn merge(&mut self, other: &DirectionResult) {
        self.io_bytes += other.io_bytes;
        self.total_ios += other.total_ios;
        self.short_ios += other.short_ios;
        self.runtime_ns = self.runtime_ns.max(other.runtime_ns);
        self.slat.merge(&other.slat);
        self.clat.merge(&other.clat);
        self.lat.merge(&other.lat);
        merge_samples(&mut self.bw_samples, &other.bw_samples);
        merge_samples(&mut self.iops_samples, &other.iops_samples);
        for theirs in &other.prios {
            match self.prios.iter_mut().find(|p| p.ioprio == theirs.ioprio) {
                Some(ours) => ours.latency.merge(&theirs.latency),
                None => self.prios.push(theirs.clone()),
            }
        }
    }
}

/// Jobs reported together add their rates interval by interval.
fn merge_samples(into: &mut Vec<f64>, from: &[f64]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0.0);
    }
    for (a, b) in into.iter_mut().zip(from) {
        *a += b;
    }
}

/// What became of buffered writes once the job stopped: the honest half of a buffered
/// write figure.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FlushResult {
    /// Distinct bytes the job's writes can have dirtied: at most the regions it wrote.
    pub footprint_bytes: u64,
    /// Dirty + Writeback in /proc/meminfo (system-wide) when the job's I/O stopped.
    pub unwritten_at_end_bytes: Option<u64>,
    /// Time the final fsync of the job's files took after the measured run.
    pub flush_ns: u64,
    /// Bytes written divided by (runtime + flush): the rate at which data reached the device.
    pub device_bytes_per_s: f64,
}

/// Steady-state detection outcome (`ss=`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SteadyStateResult {
    pub attained: bool,
    pub criterion: String,
    pub max_deviation: f64,
    pub slope: f64,
    pub samples: Vec<f64>,
}

/// Latency-target outcome (`latency_target=`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencyTargetResult {
    pub depth: u32,
    pub windows: u64,
    pub windows_met: u64,
}

/// One job's results, in fio's terms.
#[derive(Debug, Clone, Default)]
pub struct JobResult {
    pub name: String,
    pub group: u32,
    pub job_number: u32,
    pub options: JobOptions,
    /// The job's own options as written (fio's "job options" object).
    pub written_options: Vec<(String, String)>,
    /// The options shared by the jobs of its file as written (fio's "global options").
    pub written_globals: Vec<(String, String)>,
    pub error: i32,
    pub error_text: Option<String>,
    pub elapsed_ns: u64,
    pub read: DirectionResult,
    pub write: DirectionResult,
    pub trim: DirectionResult,
    /// I/O errors the job went on past (continue_on_error), and the first one's errno.
    pub total_err: u64,
    pub first_error: i32,
    pub sync: LatencyRecorder,
    /// sync_file_range calls among `sync`'s latencies (fio's `sync.total_ios` leaves them out).
    pub sync_file_ranges: u64,
    pub usr_cpu_pct: f64,
    pub sys_cpu_pct: f64,
    pub ctx_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    /// Share of I/Os issued at queue depth 1, 2, 4, 8, 16, 32, >=64.
    pub iodepth_level: [f64; 7],
    pub iodepth_submit: [f64; 7],
    pub iodepth_complete: [f64; 7],
    pub flush: Option<FlushResult>,
    pub steady_state: Option<SteadyStateResult>,
    pub latency_target: Option<LatencyTargetResult>,
    /// Files operated on, for file-operation engines (filecreate, filestat, ...).
    pub files_done: u64,
    pub pid: u32,
}

impl JobResult {
    /// A direction's results by fio's index: 0 read, 1 write, 2 trim.
    pub fn direction(&self, d: usize) -> &DirectionResult {
        match d {
            0 => &self.read,
            1 => &self.write,
            _ => &self.trim,
        }
    }
}

/// The labels for `iodepth_level` and friends, as fio prints them.
pub const IODEPTH_LABELS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];
pub const IODEPTH_SUBMIT_LABELS: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];

/// Index into `iodepth_level` for a depth.
pub fn iodepth_bucket(depth: u32) -> usize {
    match depth {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// Index into `iodepth_submit`/`iodepth_complete` for a batch size.
pub fn batch_bucket(batch: u32) -> usize {
    match batch {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// What one disk did during a bench run, as fio's `disk_util` reports it: counts from
/// /proc/diskstats over the run, `util` the share of the run the disk had I/O in flight.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    /// Milliseconds.
    pub read_ticks: u64,
    pub write_ticks: u64,
    /// Weighted milliseconds in the queue.
    pub in_queue: u64,
    /// Percent.
    pub util: f64,
}

impl DiskUtil {
    /// The counts in fio's order (its text and terse outputs): ios, merges and ticks, each
    /// read then write, then in_queue.
    pub fn counts(&self) -> [u64; 7] {
        [
            self.read_ios,
            self.write_ios,
            self.read_merges,
            self.write_merges,
            self.read_ticks,
            self.write_ticks,
            self.in_queue,
        ]
    }
}

/// A finished `bench` invocation.
#[derive(Debug, Clone, Default)]
pub struct BenchRun {
    pub host: HostFacts,
    pub targets: Vec<TargetFacts>,
    pub started_unix_ms: u64,
    pub jobs: Vec<JobResult>,
    pub notices: Vec<String>,
    pub warnings: Vec<Warning>,
    pub interrupted: bool,
    pub elapsed_ns: u64,
    /// The disks under the jobs' files (whole disks, as fio), over the run.
    pub disk_util: Vec<DiskUtil>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets() {
        assert_eq!(iodepth_bucket(1), 0);
        assert_eq!(iodepth_bucket(32), 5);
        assert_eq!(iodepth_bucket(128), 6);
        assert_eq!(batch_bucket(1), 1);
        assert_eq!(batch_bucket(0), 0);
    }

    #[test]
    fn rates_and_merge() {
        let mut a = DirectionResult {
            io_bytes: 1000,
            total_ios: 10,
            runtime_ns: 1_000_000_000,
            bw_samples: vec![1.0, 2.0],
            ..Default::default()
        };
        assert_eq!(a.bw_bytes_per_s(), 1000.0);
        assert_eq!(a.iops(), 10.0);
        let b = DirectionResult {
            io_bytes: 500,
            total_ios: 5,
            runtime_ns: 2_000_000_000,
            bw_samples: vec![1.0, 1.0, 1.0],
            ..Default::default()
        };
        a.merge(&b);
        assert_eq!(a.io_bytes, 1500);
        assert_eq!(a.runtime_ns, 2_000_000_000);
        assert_eq!(a.bw_samples, vec![2.0, 3.0, 1.0]);
    }
}
