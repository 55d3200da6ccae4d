//! What the sampler saw: one [`Sample`] per interval (memory, writeback, the disks, the CPU,
//! pressure), the [`Summary`] a user acts on, and the processes that took the CPU.

use serde::{Deserialize, Serialize};
use sinkrate_procparse::vmsettings::VmSettings;

/// One point of the timeline, with rates over the interval that ended at `t_ns`. Every
/// figure carries its unit in its name.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Sample {
    pub t_ns: u64,
    pub mem_available_bytes: Option<u64>,
    pub cached_bytes: Option<u64>,
    pub dirty_bytes: Option<u64>,
    pub writeback_bytes: Option<u64>,
    pub dirty_threshold_bytes: Option<u64>,
    pub background_threshold_bytes: Option<u64>,
    /// Where balance_dirty_pages starts throttling writers: midway between the two thresholds.
    pub freerun_ceiling_bytes: Option<u64>,
    /// Dirty + writeback above the freerun ceiling: writers are being throttled.
    pub throttled: bool,
    pub disk_read_bytes_per_s: Option<f64>,
    pub disk_write_bytes_per_s: Option<f64>,
    pub disk_util_pct: Option<f64>,
    pub disk_in_flight: Option<u64>,
    /// Average time a completed I/O spent queued and served, in ms.
    pub disk_await_ms: Option<f64>,
    pub cpu_user_pct: Option<f64>,
    pub cpu_system_pct: Option<f64>,
    pub cpu_iowait_pct: Option<f64>,
    pub cpu_irq_pct: Option<f64>,
    pub cpu_idle_pct: Option<f64>,
    pub psi_io_some_pct: Option<f64>,
    pub psi_io_full_pct: Option<f64>,
    pub psi_memory_some_pct: Option<f64>,
    pub psi_memory_full_pct: Option<f64>,
    /// The kernel's flusher threads' CPU (`kworker/*+flush-*`), percent of one core, over
    /// the last hog scan (once a second; absent on the samples in between and when
    /// processes are not scanned). Seed 001's spikes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flusher_cpu_pct: Option<f64>,
}

impl Sample {
    pub fn dirty_writeback_bytes(&self) -> Option<u64> {
        Some(self.dirty_bytes? + self.writeback_bytes?)
    }

    /// dirty + writeback as a share of the freerun ceiling.
    pub fn ceiling_pct(&self) -> Option<f64> {
        let c = self.freerun_ceiling_bytes?;
        (c > 0).then(|| 100.0 * self.dirty_writeback_bytes().unwrap_or(0) as f64 / c as f64)
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Recommendation {
    /// One or two sentences for a person.
    pub text: String,
    pub dirty_bytes: u64,
    pub dirty_background_bytes: u64,
    /// The same limits as percentages of the least MemAvailable seen (the kernel applies the
    /// ratios to its "dirtyable" memory, which MemAvailable approximates).
    pub dirty_ratio: Option<u64>,
    pub dirty_background_ratio: Option<u64>,
    /// What a power cut could lose with these settings: up to dirty_bytes, and how many
    /// seconds of writing that is at the device's measured rate.
    pub at_risk_bytes: u64,
    pub at_risk_seconds: Option<f64>,
    pub commands: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub samples: u64,
    pub duration_s: f64,
    pub min_mem_available_bytes: Option<u64>,
    pub peak_dirty_writeback_bytes: Option<u64>,
    /// The freerun ceiling when the peak was seen, and the peak as a share of it.
    pub freerun_ceiling_bytes: Option<u64>,
    /// The kernel's hard dirty threshold when the peak was seen.
    pub dirty_threshold_bytes: Option<u64>,
    pub peak_ceiling_pct: Option<f64>,
    pub throttled_samples: u64,
    pub throttled_seconds: f64,
    pub first_throttled_at_s: Option<f64>,
    pub device_write_bytes_per_s_max: Option<f64>,
    /// Mean write rate over the samples where the device was busy (>= 50% utilised).
    pub device_write_bytes_per_s_busy_mean: Option<f64>,
    pub settings: VmSettings,
    /// Seed 000's rule, dirty+writeback <= (dirty_ratio + dirty_background_ratio)/200 of
    /// MemAvailable, with the worst values of the run: whether it held.
    pub seed000_rule_held: Option<bool>,
    pub recommendation: Option<Recommendation>,
    /// Why no limits are advised, when the watch saw too little to size them.
    #[serde(default)]
    pub recommendation_withheld: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Hog {
    pub pid: u32,
    pub name: String,
    pub cpu_seconds: f64,
    /// Highest share of one core in any one-second interval.
    pub peak_cpu_pct: f64,
    /// Bytes the process caused to be written to storage while watched (/proc/PID/io;
    /// readable for other users' processes only as root).
    pub write_bytes: u64,
}
