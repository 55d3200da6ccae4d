//! /proc/sys/vm settings that govern the page cache's writeback. The caller reads the files
//! (live or from a fixture tree); this module only parses them.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct VmSettings {
    pub dirty_ratio: Option<u64>,
    pub dirty_bytes: Option<u64>,
    pub dirty_background_ratio: Option<u64>,
    pub dirty_background_bytes: Option<u64>,
    pub dirty_expire_centisecs: Option<u64>,
    pub dirty_writeback_centisecs: Option<u64>,
}

impl VmSettings {
    /// `read(name)` returns the text of /proc/sys/vm/<name>, or None when it cannot.
    pub fn parse_with(read: impl Fn(&str) -> Option<String>) -> VmSettings {
        let n = |name: &str| -> Option<u64> { read(name)?.trim().parse().ok() };
        VmSettings {
            dirty_ratio: n("dirty_ratio"),
            dirty_bytes: n("dirty_bytes"),
            dirty_background_ratio: n("dirty_background_ratio"),
            dirty_background_bytes: n("dirty_background_bytes"),
            dirty_expire_centisecs: n("dirty_expire_centisecs"),
            dirty_writeback_centisecs: n("dirty_writeback_centisecs"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_missing_files() {
        let s = VmSettings::parse_with(|name| match name {
            "dirty_ratio" => Some("20\n".into()),
            "dirty_bytes" => Some("0\n".into()),
            "dirty_expire_centisecs" => Some("garbage".into()),
            _ => None,
        });
        assert_eq!(s.dirty_ratio, Some(20));
        assert_eq!(s.dirty_bytes, Some(0));
        assert_eq!(s.dirty_expire_centisecs, None);
        assert_eq!(s.dirty_background_ratio, None);
    }
}
