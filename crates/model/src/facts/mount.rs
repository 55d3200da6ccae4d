//! Where a path is mounted: the fields of /proc/self/mountinfo that sinkrate judges.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// The audited path, absolute and resolved.
    pub path: String,
    pub mount_point: String,
    pub fs_type: String,
    /// Every option in force: the mount's flags, then the filesystem's own.
    pub mount_options: Vec<String>,
    /// Filesystem-specific options alone (data=, commit=, errors=, sync, ...).
    pub super_options: Vec<String>,
    /// The mount's source as mountinfo gives it (/dev/sda1, tmpfs, ...).
    pub source: String,
    /// The block device, /dev/NAME, when there is one.
    pub device: Option<String>,
    /// A bind mount: the directory of the filesystem mounted here.
    pub bind_of: Option<String>,
    /// Reached through an overlay mounted here, whose upper directory stores the writes.
    pub overlay_at: Option<String>,
    pub major: u32,
    pub minor: u32,
}

impl Target {
    pub fn has_option(&self, name: &str) -> bool {
        self.mount_options.iter().any(|o| o == name) || self.super_options.iter().any(|o| o == name)
    }

    /// Mount options then filesystem options, each once (both lists carry rw/ro).
    pub fn all_options(&self) -> Vec<String> {
        let mut out = self.mount_options.clone();
        for o in &self.super_options {
            if !out.contains(o) {
                out.push(o.clone());
            }
        }
        out
    }

    /// The value of a `key=value` option.
    pub fn option_value(&self, key: &str) -> Option<&str> {
        self.super_options
            .iter()
            .chain(self.mount_options.iter())
            .find_map(|o| o.strip_prefix(key)?.strip_prefix('='))
    }
}
