//! `sinkrate watch`'s result: what was watched, the timeline, its summary and the hogs.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sinkrate_procparse::vmsettings::VmSettings;

use crate::timeline::{Hog, Sample, Summary};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchConfig {
    #[serde(rename = "interval_ns", with = "nanos")]
    pub interval: Duration,
    #[serde(rename = "duration_ns", with = "opt_nanos")]
    pub duration: Option<Duration>,
    /// Block devices counted (names as in /proc/diskstats); empty: every physical disk.
    pub devices: Vec<String>,
    pub pids: Vec<u32>,
    /// The command run and watched, if any.
    pub command: Vec<String>,
    /// The watched program's write calls slower than this are explained from the kernel's
    /// events.
    #[serde(
        rename = "stall_threshold_s",
        with = "sinkrate_units::serde_seconds::seconds",
        default = "default_stall_threshold"
    )]
    pub stall_threshold: Duration,
    /// Why the kernel's events are not to be read (`--no-kernel-events`).
    #[serde(skip)]
    pub kernel_events_off: Option<String>,
}

fn default_stall_threshold() -> Duration {
    Duration::from_millis(100)
}

/// A write call of the watched program over the stall threshold, explained from the
/// kernel's events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowCall {
    pub pid: u32,
    pub tid: i32,
    /// The thread's name (its comm), when it could be read.
    pub thread: String,
    /// The system call: write, pwrite64, writev, fsync, ...
    pub call: String,
    /// The file it was on, where the observer knows it (capture does; watch does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// When it began, seconds from the start of the watch.
    pub at_s: f64,
    pub duration_ms: f64,
    pub causes: crate::causes::StallCauses,
}

impl SlowCall {
    /// The longest of the calls (what watch and capture explain first).
    pub fn longest(calls: &[SlowCall]) -> Option<&SlowCall> {
        calls
            .iter()
            .max_by(|a, b| a.duration_ms.total_cmp(&b.duration_ms))
    }
}

/// A change to the vm settings seen while watching.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingsChange {
    pub t_ns: u64,
    pub from: VmSettings,
    pub to: VmSettings,
}

/// `kind: watch` in the run envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchReport {
    pub config: WatchConfig,
    /// The watched command's exit code (128 + signal when a signal ended it).
    pub command_exit_code: Option<i32>,
    /// The signal that ended the watched command, when one did.
    #[serde(default)]
    pub command_signal: Option<i32>,
    /// What ended the watch early: an output it could not write (its figures are those up
    /// to then).
    #[serde(default)]
    pub failure: Option<String>,
    pub notes: Vec<String>,
    pub vm_settings_changes: Vec<SettingsChange>,
    pub summary: Summary,
    pub hogs: Vec<Hog>,
    pub timeline: Vec<Sample>,
    /// The watched program's slow write calls, each with its causes (empty without a
    /// program watched, or without the kernel's events: `kernel` says why).
    #[serde(default)]
    pub slow_calls: Vec<SlowCall>,
    /// Slow calls past the first 10,000, summed by cause in `kernel` but not listed.
    #[serde(default)]
    pub slow_calls_not_listed: u64,
    /// How many of its write calls the kernel's events saw in all.
    #[serde(default)]
    pub write_calls: u64,
    #[serde(default = "crate::causes::KernelAccount::absent")]
    pub kernel: crate::causes::KernelAccount,
}

mod nanos {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_nanos() as u64)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_nanos(u64::deserialize(d)?))
    }
}

mod opt_nanos {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_nanos() as u64)),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_nanos))
    }
}
