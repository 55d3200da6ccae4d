//! /proc/meminfo.

use serde::{Deserialize, Serialize};

/// The fields sinkrate uses, in bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemInfo {
    pub mem_total_bytes: Option<u64>,
    pub mem_free_bytes: Option<u64>,
    /// Absent before Linux 3.14.
    pub mem_available_bytes: Option<u64>,
    pub cached_bytes: Option<u64>,
    pub dirty_bytes: Option<u64>,
    pub writeback_bytes: Option<u64>,
}

impl MemInfo {
    /// Dirty plus writeback: data accepted by the page cache but not yet on the device.
    pub fn unwritten_bytes(&self) -> Option<u64> {
        Some(self.dirty_bytes? + self.writeback_bytes?)
    }
}

pub fn parse(text: &str) -> MemInfo {
    let mut m = MemInfo::default();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let mut parts = rest.split_whitespace();
        let Some(Ok(number)) = parts.next().map(str::parse::<u64>) else {
            continue;
        };
        let bytes = match parts.next() {
            Some("kB") => number.saturating_mul(1024),
            _ => number,
        };
        let slot = match key {
            "MemTotal" => &mut m.mem_total_bytes,
            "MemFree" => &mut m.mem_free_bytes,
            "MemAvailable" => &mut m.mem_available_bytes,
            "Cached" => &mut m.cached_bytes,
            "Dirty" => &mut m.dirty_bytes,
            "Writeback" => &mut m.writeback_bytes,
            _ => continue,
        };
        *slot = Some(bytes);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modern_x86() {
        let m = parse(include_str!("../fixtures/x86-vm-6.18/meminfo"));
        assert!(m.mem_total_bytes.is_some_and(|t| t > 1 << 30));
        assert!(m.mem_available_bytes.is_some());
        assert!(m.dirty_bytes.is_some() && m.writeback_bytes.is_some());
    }

    #[test]
    fn old_arm_without_mem_available() {
        let m = parse(include_str!("../fixtures/arm-board-3.10/meminfo"));
        assert_eq!(m.mem_total_bytes, Some(1_026_028 * 1024));
        assert_eq!(m.mem_available_bytes, None);
        assert_eq!(m.dirty_bytes, Some(45_312 * 1024));
        assert_eq!(m.unwritten_bytes(), Some((45_312 + 8_192) * 1024));
    }

    #[test]
    fn garbage_is_ignored_not_fatal() {
        let m = parse("Dirty: lots kB\nnonsense\nWriteback: 4 kB\n");
        assert_eq!(m.dirty_bytes, None);
        assert_eq!(m.writeback_bytes, Some(4096));
        assert_eq!(m.unwritten_bytes(), None);
    }
}
