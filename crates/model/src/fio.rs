//! fio's JSON document as types (`"fio version"`, `jobs[]` with `read`/`write`/`trim`,
//! `clat_ns.percentile`, `latency_us`, ...): `sinkrate bench` writes it inside the run
//! envelope, so scripts written for fio's JSON read ours, and `report`, `compare` and `tune`
//! read back both ours and fio's own `--output-format=json` through the same types. Key names
//! are fio's, units in the keys as fio has them.
//!
//! Reading is lenient where fio is: every struct fills a key it lacks with its default, since
//! fio's versions differ in the keys around the ones read here, and fio's own JSON has none of
//! sinkrate's (`targets`, `config`, `sinkrate`).

use crate::timeline::{Sample, Summary};
use crate::{DiskUtil, Envelope, LatencyTargetResult, TargetFacts};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// A bench run's result inside the run envelope.
pub type BenchRunDoc = Envelope<BenchReport>;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BenchReport {
    #[serde(rename = "fio version")]
    pub fio_version: String,
    /// Seconds since the epoch (fio's).
    pub timestamp: u64,
    /// fio's ctime-style start time.
    pub time: String,
    pub elapsed_ns: u64,
    pub targets: Vec<TargetFacts>,
    pub config: BenchConfig,
    /// Absent when no option is global, as in fio.
    #[serde(
        rename = "global options",
        default,
        skip_serializing_if = "IndexMap::is_empty"
    )]
    pub global_options: IndexMap<String, String>,
    pub jobs: Vec<FioJob>,
    pub disk_util: Vec<DiskUtil>,
    /// What the page cache and the devices did while the jobs ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler: Option<BenchSampler>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BenchSampler {
    pub interval_ns: u64,
    pub devices: Vec<String>,
    pub notes: Vec<String>,
    pub summary: Summary,
    pub timeline: Vec<Sample>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BenchConfig {
    pub jobs: Vec<ConfigJob>,
}

/// One job as it ran, every option resolved: `options` is the job's `JobOptions` as they
/// serialize, kept as JSON on the way back in. No command reads them back (compare and
/// report read the figures, and fio's "job options" as written); a reader that wants them
/// typed takes `serde_json::from_value::<JobOptions>`. Read typed here, their deserializer
/// of some 200 options was 55 KB of the board binaries' 5 MB budget.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConfigJob {
    pub job_number: u32,
    pub name: String,
    pub group: u32,
    pub options: serde_json::Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FioJob {
    pub jobname: String,
    pub groupid: u32,
    pub job_start: u64,
    pub error: i32,
    pub eta: u64,
    /// Seconds, rounded up (fio's).
    pub elapsed: u64,
    #[serde(rename = "job options")]
    pub job_options: IndexMap<String, String>,
    /// Left out when unified_rw_reporting=mixed folds them into `mixed`, as fio's.
    #[serde(skip_serializing_if = "FioDirection::is_folded")]
    pub read: FioDirection,
    #[serde(skip_serializing_if = "FioDirection::is_folded")]
    pub write: FioDirection,
    #[serde(skip_serializing_if = "FioDirection::is_folded")]
    pub trim: FioDirection,
    /// unified_rw_reporting=mixed or both: the directions summed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mixed: Option<FioDirection>,
    pub sync: FioSync,
    /// Milliseconds.
    pub job_runtime: u64,
    pub usr_cpu: f64,
    pub sys_cpu: f64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    pub iodepth_level: IndexMap<String, f64>,
    pub iodepth_submit: IndexMap<String, f64>,
    pub iodepth_complete: IndexMap<String, f64>,
    pub latency_ns: IndexMap<String, f64>,
    pub latency_us: IndexMap<String, f64>,
    pub latency_ms: IndexMap<String, f64>,
    pub latency_depth: u32,
    pub latency_target: u64,
    pub latency_percentile: f64,
    pub latency_window: u64,
    /// Errors gone on past, for a job with continue_on_error (fio writes these two then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_err: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steadystate: Option<FioSteadyState>,
    /// What sinkrate reports beyond fio.
    pub sinkrate: JobExtras,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FioDirection {
    /// Reported inside `mixed` instead (unified_rw_reporting=mixed): not written.
    #[serde(skip)]
    pub folded: bool,
    pub io_bytes: u64,
    pub io_kbytes: u64,
    pub bw_bytes: u64,
    /// KiB/s.
    pub bw: u64,
    pub iops: f64,
    /// Milliseconds.
    pub runtime: u64,
    pub total_ios: u64,
    pub short_ios: u64,
    pub drop_ios: u64,
    pub slat_ns: FioLatency,
    pub clat_ns: FioLatency,
    pub lat_ns: FioLatency,
    /// Per priority, when the direction's I/Os had more than one (fio's cmdprio).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prios: Vec<FioPriority>,
    pub bw_min: u64,
    pub bw_max: u64,
    pub bw_agg: f64,
    pub bw_mean: f64,
    pub bw_dev: f64,
    pub bw_samples: u64,
    pub iops_min: u64,
    pub iops_max: u64,
    pub iops_mean: f64,
    pub iops_stddev: f64,
    pub iops_samples: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FioLatency {
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub stddev: f64,
    #[serde(rename = "N")]
    pub n: u64,
    /// `"99.000000": ns`, for the job's percentile_list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile: Option<IndexMap<String, u64>>,
    /// `json+`: the histogram's buckets, `"value_ns": count`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bins: Option<IndexMap<String, u64>>,
}

/// One priority's latencies: completion latency, or total latency with lat_percentiles
/// (fio tracks one of them per priority).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FioPriority {
    pub prioclass: u8,
    pub prio: u8,
    /// The priority hint (`cmdprio_bssplit`'s fifth field, as newer fio), when there is one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priohint: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clat_ns: Option<FioLatency>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lat_ns: Option<FioLatency>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FioSync {
    pub total_ios: u64,
    pub lat_ns: FioLatency,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FioSteadyState {
    pub ss: String,
    pub duration: u64,
    pub attained: u8,
    pub criterion: String,
    pub max_deviation: f64,
    pub slope: f64,
    pub data: FioSteadyStateData,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FioSteadyStateData {
    pub samples: Vec<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobExtras {
    pub jobs_merged: u32,
    pub ioengine: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush: Option<FlushExtras>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<LatencyTargetResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_done: Option<u64>,
    /// Bandwidth and IOPS per sampling interval, for pictures of the run over time.
    #[serde(default)]
    pub series: JobSeries,
    /// Completion-latency histograms as `[value_ns, count]` pairs (json+ has them as fio's
    /// `bins` too).
    #[serde(default)]
    pub clat_histogram_ns: DirectionPairs,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobSeries {
    pub interval_ms: u64,
    pub read_bytes_per_s: Vec<f64>,
    pub write_bytes_per_s: Vec<f64>,
    pub read_iops: Vec<f64>,
    pub write_iops: Vec<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DirectionPairs {
    pub read: Vec<(u64, u64)>,
    pub write: Vec<(u64, u64)>,
}

/// What became of buffered writes: the rate the application saw and the rate at which data
/// reached the device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FlushExtras {
    pub unwritten_at_end_bytes: Option<u64>,
    pub flush_ns: u64,
    pub device_bytes_per_s: f64,
    pub application_bytes_per_s: f64,
}

fn is_zero(v: &u16) -> bool {
    *v == 0
}

impl FioLatency {
    /// The percentile `p` (50.0 for the median) in nanoseconds, when the job's
    /// percentile_list has it (fio writes keys such as `"99.000000"`).
    pub fn percentile_ns(&self, p: f64) -> Option<u64> {
        self.percentile
            .as_ref()?
            .iter()
            .find(|(k, _)| k.parse::<f64>().is_ok_and(|q| (q - p).abs() < 1e-6))
            .map(|(_, v)| *v)
    }
}

impl FioDirection {
    pub fn is_folded(&self) -> bool {
        self.folded
    }
}
