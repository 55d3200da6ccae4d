//! Memory and the page cache's writeback settings, with the kernel's thresholds and the
//! settings sinkrate holds changed.

use serde::{Deserialize, Serialize};
use sinkrate_procparse::vmsettings::VmSettings;

use crate::settings::Entry;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Memory {
    pub total_bytes: Option<u64>,
    pub available_bytes: Option<u64>,
    pub dirty_bytes: Option<u64>,
    pub writeback_bytes: Option<u64>,
    pub vm: VmSettings,
    /// The kernel's current hard dirty threshold (writers block above it), bytes.
    pub dirty_threshold_bytes: Option<u64>,
    /// Where background writeback starts, bytes.
    pub background_threshold_bytes: Option<u64>,
    /// Where writers start being throttled: midway between the two.
    pub freerun_ceiling_bytes: Option<u64>,
    /// Settings sinkrate changed and has not put back (journal entries, temporary or
    /// applied), with whether the run that made a temporary one is still going: the values
    /// above may then be sinkrate's, not the system's own.
    #[serde(default)]
    pub sinkrate_settings: Vec<JournaledSetting>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournaledSetting {
    #[serde(flatten)]
    pub entry: Entry,
    /// For a temporary change: its run is still going and will put it back itself.
    pub running: bool,
}
