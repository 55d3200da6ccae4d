//! A device's own writeback limits: its backing device info (bdi) under /sys/class/bdi.

use serde::{Deserialize, Serialize};

/// The per-device writeback limits of one bdi (`/sys/class/bdi/MAJ:MIN`). Each is None on a
/// kernel without the attribute: `max_ratio` and `min_ratio` are there since 2.6.26;
/// `max_bytes`, `min_bytes`, the `_fine` ratios and `strict_limit` came with Linux 6.2.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BdiLimits {
    /// The bdi's name, `MAJ:MIN` (`179:0` for an SD card, `0:45` for a FUSE mount).
    pub name: String,
    /// The device's share of the machine's dirty limit, percent: 100 lets one device hold
    /// all of it.
    pub max_ratio: Option<u64>,
    /// The same share in parts per million.
    pub max_ratio_fine: Option<u64>,
    /// The same share as bytes of the dirty limit in force now: the kernel keeps the ratio,
    /// so this moves when vm.dirty_* do.
    pub max_bytes: Option<u64>,
    pub min_ratio: Option<u64>,
    /// The device is held to its own share even while the machine is below its limits.
    pub strict_limit: Option<bool>,
    /// Pages under writeback may not be changed (the device checksums them): a writer
    /// waits for each page it rewrites.
    pub stable_pages_required: Option<bool>,
}

impl BdiLimits {
    /// No limit of the device's own: it may hold the whole of the machine's dirty data.
    pub fn shares_whole_pool(&self) -> bool {
        self.max_ratio.is_none_or(|r| r >= 100) && self.strict_limit != Some(true)
    }
}
