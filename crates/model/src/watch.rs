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
