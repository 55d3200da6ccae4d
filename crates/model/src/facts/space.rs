//! Swap areas, and free space on a filesystem.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwapArea {
    pub name: String,
    pub kind: String,
    pub size_bytes: u64,
    /// On the same disk as the target.
    pub same_disk: bool,
}

/// Size, free space and inodes of the file system holding a path (statvfs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FsSpace {
    pub total_bytes: u64,
    /// Free for unprivileged writers (the root reserve excluded).
    pub available_bytes: u64,
    pub inodes: u64,
    pub inodes_free: u64,
}

impl FsSpace {
    /// How full the file system is, in percent of its blocks (reserve counted as used).
    pub fn fill_pct(&self) -> Option<f64> {
        (self.total_bytes > 0)
            .then(|| 100.0 * (1.0 - self.available_bytes as f64 / self.total_bytes as f64))
    }
}
