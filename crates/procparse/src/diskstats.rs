//! /proc/diskstats: 14 fields before Linux 4.18, 18 with discard counters (4.18), 20 with
//! flush counters (5.5). Sectors are always 512 bytes here, whatever the device's own.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskCounters {
    pub reads: u64,
    /// Reads merged with an adjacent one before they reached the device.
    #[serde(default)]
    pub read_merges: u64,
    pub read_bytes: u64,
    pub read_ms: u64,
    pub writes: u64,
    #[serde(default)]
    pub write_merges: u64,
    pub write_bytes: u64,
    pub write_ms: u64,
    pub in_flight: u64,
    /// Milliseconds the device had I/O in flight (for utilisation).
    pub busy_ms: u64,
    /// Weighted milliseconds (for average queue length).
    pub weighted_ms: u64,
}

impl DiskCounters {
    pub fn add(&mut self, o: &DiskCounters) {
        self.reads += o.reads;
        self.read_merges += o.read_merges;
        self.write_merges += o.write_merges;
        self.read_bytes += o.read_bytes;
        self.read_ms += o.read_ms;
        self.writes += o.writes;
        self.write_bytes += o.write_bytes;
        self.write_ms += o.write_ms;
        self.in_flight += o.in_flight;
        self.busy_ms = self.busy_ms.max(o.busy_ms);
        self.weighted_ms += o.weighted_ms;
    }
}

/// One line: (major, minor, name, counters). Lines with fewer than 14 fields are skipped.
pub fn parse_line(line: &str) -> Option<(u32, u32, &str, DiskCounters)> {
    let mut f = line.split_ascii_whitespace();
    let major = f.next()?.parse().ok()?;
    let minor = f.next()?.parse().ok()?;
    let name = f.next()?;
    let mut v = [0u64; 11];
    for slot in &mut v {
        *slot = f.next()?.parse().ok()?;
    }
    Some((
        major,
        minor,
        name,
        DiskCounters {
            reads: v[0],
            read_merges: v[1],
            // The kernel's sector counters are unsigned and wrap; so do the bytes (found by
            // fuzzing: a multiplication that overflowed).
            read_bytes: v[2].wrapping_mul(512),
            read_ms: v[3],
            writes: v[4],
            write_merges: v[5],
            write_bytes: v[6].wrapping_mul(512),
            write_ms: v[7],
            in_flight: v[8],
            busy_ms: v[9],
            weighted_ms: v[10],
        },
    ))
}

/// Every parsable line, without allocating.
pub fn lines(text: &str) -> impl Iterator<Item = (u32, u32, &str, DiskCounters)> {
    text.lines().filter_map(parse_line)
}

/// The counters of one device by name.
pub fn device(text: &str, name: &str) -> Option<DiskCounters> {
    lines(text)
        .find(|(_, _, n, _)| *n == name)
        .map(|(_, _, _, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_layouts() {
        let modern = include_str!("../fixtures/x86-vm-6.18/diskstats");
        assert!(lines(modern).count() >= 3);
        let old = include_str!("../fixtures/arm-board-3.10/diskstats");
        let sd = device(old, "mmcblk1").expect("mmcblk1");
        assert_eq!(sd.writes, 9051);
        assert_eq!((sd.read_merges, sd.write_merges), (12, 102));
        assert_eq!(sd.write_bytes, 1_548_210 * 512);
        assert_eq!(sd.in_flight, 3);
        assert_eq!(sd.busy_ms, 120_410);
        let mid = include_str!("../fixtures/x86-kernel-4.19/diskstats");
        let nvme = device(mid, "nvme0n1").expect("nvme");
        assert_eq!(nvme.read_bytes, 40_960_244 * 512);
        assert_eq!(nvme.weighted_ms, 1_002_550);
        assert_eq!(device(mid, "sdz"), None);
        assert!(parse_line("8 0 sda 1 2 3").is_none());
    }
}
