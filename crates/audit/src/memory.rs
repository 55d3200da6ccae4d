//! Memory and the page cache's writeback settings, with the kernel's current thresholds.

use serde::{Deserialize, Serialize};
use sinkrate_procparse::vmsettings::VmSettings;
use sinkrate_procparse::{meminfo, vmstat};

use crate::root::SysRoot;

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

pub fn read(root: &SysRoot) -> Memory {
    let mem = root
        .read("/proc/meminfo")
        .map(|t| meminfo::parse(&t))
        .unwrap_or_default();
    let vm = root
        .read("/proc/vmstat")
        .map(|t| vmstat::parse(&t))
        .unwrap_or_default();
    let page = if root.is_live() {
        // SAFETY: sysconf has no preconditions.
        let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if p > 0 {
            p as u64
        } else {
            4096
        }
    } else {
        4096
    };
    Memory {
        total_bytes: mem.mem_total_bytes,
        available_bytes: mem.mem_available_bytes,
        dirty_bytes: mem.dirty_bytes,
        writeback_bytes: mem.writeback_bytes,
        vm: VmSettings::parse_with(|name| root.read(&format!("/proc/sys/vm/{name}"))),
        dirty_threshold_bytes: vm.nr_dirty_threshold.map(|p| p * page),
        background_threshold_bytes: vm.nr_dirty_background_threshold.map(|p| p * page),
        freerun_ceiling_bytes: vm.freerun_ceiling_pages().map(|p| p * page),
        sinkrate_settings: journaled(root),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournaledSetting {
    #[serde(flatten)]
    pub entry: sinkrate_settings::Entry,
    /// For a temporary change: its run is still going and will put it back itself.
    pub running: bool,
}

/// The settings journal's entries (the live one, or a fixture's /var/lib/sinkrate).
fn journaled(root: &SysRoot) -> Vec<JournaledSetting> {
    let host = sinkrate_settings::Host::at(root.clone());
    let journal =
        sinkrate_settings::Journal::at(host, &root.host_path(sinkrate_settings::DEFAULT_JOURNAL));
    journal
        .entries()
        .unwrap_or_default()
        .into_iter()
        .map(|entry| JournaledSetting {
            running: journal.is_live(&entry),
            entry,
        })
        .collect()
}
