//! Memory and the page cache's writeback settings, with the kernel's current thresholds.

use sinkrate_sys::host;

use sinkrate_model::facts::{JournaledSetting, Memory};
use sinkrate_sys::root::SysRoot;

pub fn read(root: &SysRoot) -> Memory {
    let mem = host::meminfo_at(root).unwrap_or_default();
    let vm = host::vmstat_at(root).unwrap_or_default();
    // A fixture tree of another machine counts in 4 KiB pages, as nearly every board does.
    let page = if root.is_live() {
        sinkrate_sys::page_size()
    } else {
        4096
    };
    Memory {
        total_bytes: mem.mem_total_bytes,
        available_bytes: mem.mem_available_bytes,
        dirty_bytes: mem.dirty_bytes,
        writeback_bytes: mem.writeback_bytes,
        vm: host::vm_settings_at(root),
        dirty_threshold_bytes: vm.nr_dirty_threshold.map(|p| p * page),
        background_threshold_bytes: vm.nr_dirty_background_threshold.map(|p| p * page),
        freerun_ceiling_bytes: vm.freerun_ceiling_pages().map(|p| p * page),
        sinkrate_settings: journaled(root),
    }
}

/// The settings journal's entries (the live one, or a fixture's /var/lib/sinkrate); none
/// when it cannot be read (`tune status` names why).
fn journaled(root: &SysRoot) -> Vec<JournaledSetting> {
    sinkrate_sys::settings_journal::entries(root).unwrap_or_default()
}
