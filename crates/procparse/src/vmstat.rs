//! /proc/vmstat: the kernel's own dirty thresholds, in pages.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmStat {
    pub nr_dirty: Option<u64>,
    pub nr_writeback: Option<u64>,
    pub nr_dirty_threshold: Option<u64>,
    pub nr_dirty_background_threshold: Option<u64>,
    /// Pages dirtied and written back since boot.
    pub nr_dirtied: Option<u64>,
    pub nr_written: Option<u64>,
}

impl VmStat {
    /// Where balance_dirty_pages starts throttling writers: midway between the background
    /// and the hard threshold ("freerun" ceiling), in pages.
    pub fn freerun_ceiling_pages(&self) -> Option<u64> {
        Some((self.nr_dirty_threshold? + self.nr_dirty_background_threshold?) / 2)
    }
}

pub fn parse(text: &str) -> VmStat {
    let mut v = VmStat::default();
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let (Some(key), Some(value)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Ok(value) = value.parse::<u64>() else {
            continue;
        };
        let slot = match key {
            "nr_dirty" => &mut v.nr_dirty,
            "nr_writeback" => &mut v.nr_writeback,
            "nr_dirty_threshold" => &mut v.nr_dirty_threshold,
            "nr_dirty_background_threshold" => &mut v.nr_dirty_background_threshold,
            "nr_dirtied" => &mut v.nr_dirtied,
            "nr_written" => &mut v.nr_written,
            _ => continue,
        };
        *slot = Some(value);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_from_both_machines() {
        let x86 = parse(include_str!("../fixtures/x86-vm-6.18/vmstat"));
        assert!(x86.nr_dirty_threshold.is_some_and(|t| t > 0));
        let arm = parse(include_str!("../fixtures/arm-board-3.10/vmstat"));
        assert_eq!(arm.nr_dirty_threshold, Some(36_520));
        assert_eq!(arm.freerun_ceiling_pages(), Some((36_520 + 18_260) / 2));
        assert_eq!(parse("nr_dirty x\n").nr_dirty, None);
    }
}
