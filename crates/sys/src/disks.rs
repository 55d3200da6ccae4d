//! Disks' own counters (/proc/diskstats): what a device says it wrote, the figure every
//! sinkrate rate is checked against.

use sinkrate_procparse::diskstats;

use crate::root::SysRoot;

/// Bytes the kernel has written to `devices` (names as in /proc/diskstats: sda, loop3),
/// summed; None when none of them is listed.
pub fn written_bytes(root: &SysRoot, devices: &[&str]) -> Option<u64> {
    if devices.is_empty() {
        return None;
    }
    let text = root.read("/proc/diskstats").ok()?;
    let mut total = 0;
    let mut seen = 0;
    for line in text.lines() {
        if let Some((_, _, name, c)) = diskstats::parse_line(line) {
            if devices.contains(&name) {
                total += c.write_bytes;
                seen += 1;
            }
        }
    }
    (seen > 0).then_some(total)
}

/// Each named disk's counters now, in the order given; a disk /proc/diskstats does not list
/// is left out.
pub fn counters(root: &SysRoot, names: &[String]) -> Vec<(String, diskstats::DiskCounters)> {
    let text = root.read("/proc/diskstats").unwrap_or_default();
    names
        .iter()
        .filter_map(|n| diskstats::device(&text, n).map(|c| (n.clone(), c)))
        .collect()
}

/// The devices' own count of the bytes written since a start: what a run cost them (other
/// writers to them count too).
pub struct WrittenSince {
    devices: Vec<String>,
    before: Option<u64>,
}

impl WrittenSince {
    /// From now, for the devices behind `path`: a directory's filesystem, or the block
    /// device itself. None of them (tmpfs, a network mount) counts nothing.
    pub fn start(path: &std::path::Path, is_block_device: bool) -> WrittenSince {
        let facts = crate::host::target_facts(path, is_block_device);
        let devices = crate::host::device_names(std::slice::from_ref(&facts));
        let before = Self::written(&devices);
        WrittenSince { devices, before }
    }

    fn written(devices: &[String]) -> Option<u64> {
        let names: Vec<&str> = devices.iter().map(String::as_str).collect();
        written_bytes(&SysRoot::live(), &names)
    }

    /// Bytes written since the start; None without a device.
    pub fn bytes(&self) -> Option<u64> {
        Some(Self::written(&self.devices)?.saturating_sub(self.before?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disks_written_sectors_are_bytes_and_several_disks_add_up() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(d.path().join("proc")).expect("dirs");
        std::fs::write(
            d.path().join("proc/diskstats"),
            "   8       0 sda 10 0 80 5 20 0 160 9 0 12 14 0 0 0 0\n \
             179       0 mmcblk0 1 0 8 1 4 0 2048 3 0 4 4 0 0 0 0\n",
        )
        .expect("write");
        let root = SysRoot::at(d.path());
        assert_eq!(written_bytes(&root, &["sda"]), Some(160 * 512));
        assert_eq!(
            written_bytes(&root, &["sda", "mmcblk0"]),
            Some((160 + 2048) * 512)
        );
        assert_eq!(written_bytes(&root, &["nvme0n1"]), None);
        assert_eq!(written_bytes(&root, &[]), None);
    }
}
