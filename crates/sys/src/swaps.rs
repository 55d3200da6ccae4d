//! Swap areas (/proc/swaps), and whether one shares the target's disk: swapping on the
//! card a recorder writes to competes with the recording.

use crate::root::SysRoot;
use crate::{device, mounts};
use sinkrate_model::facts::SwapArea;

pub fn read(root: &SysRoot, disk: Option<&str>) -> Vec<SwapArea> {
    let Ok(text) = root.read("/proc/swaps") else {
        return Vec::new();
    };
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let name = f.first()?.to_string();
            let kind = f.get(1)?.to_string();
            let size_bytes = f.get(2)?.parse::<u64>().ok()? * 1024;
            let base = name.trim_start_matches("/dev/");
            let same_disk = disk.is_some_and(|d| {
                if kind == "file" {
                    // A swap file's disk is that of the filesystem holding it.
                    swap_file_disk(root, &name).is_some_and(|sd| sd == d)
                } else {
                    root.canonical(&format!("/sys/class/block/{base}"))
                        .map(|sys| device::read(root, &sys).disk == d)
                        .unwrap_or(base == d)
                }
            });
            Some(SwapArea {
                name,
                kind,
                size_bytes,
                same_disk,
            })
        })
        .collect()
}

fn swap_file_disk(root: &SysRoot, file: &str) -> Option<String> {
    let t = mounts::resolve(root, file).ok()?;
    let sys = device::sysfs_dir(root, t.major, t.minor, &t.source)?;
    Some(device::read(root, &sys).disk)
}
