//! The block device under a mount, walked in sysfs: partition to disk, its bus, identity and
//! queue settings, a loop device's backing file, a dm/md device's members.

use crate::root::SysRoot;
use sinkrate_model::facts::{BlockDevice, Bus, Partition, Queue};

fn parent(path: &str) -> String {
    match path.rsplit_once('/') {
        Some((p, _)) if !p.is_empty() => p.to_string(),
        _ => "/".to_string(),
    }
}

fn last(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

fn bus_of(disk_sys: &str, disk: &str) -> Bus {
    let has = |s: &str| disk_sys.contains(s);
    if disk.starts_with("loop") {
        Bus::Loop
    } else if disk.starts_with("dm-") {
        Bus::Dm
    } else if disk.starts_with("md") {
        Bus::Md
    } else if disk.starts_with("nbd") {
        Bus::Nbd
    } else if disk_sys.split('/').any(|c| c.starts_with("usb")) {
        Bus::Usb
    } else if has("/mmc_host/") || disk.starts_with("mmcblk") {
        Bus::Mmc
    } else if has("/nvme/") || disk.starts_with("nvme") {
        Bus::Nvme
    } else if has("/virtio") {
        Bus::Virtio
    } else if disk_sys.split('/').any(|c| c.starts_with("ata")) {
        Bus::Sata
    } else if has("/host") && has("/target") {
        Bus::Scsi
    } else {
        Bus::Other
    }
}

/// The sysfs directory of a block device, by device number or, for filesystems that report
/// an anonymous number (btrfs), by the source's kernel name.
/// Whether the kernel knows a block device by this name (as in /proc/diskstats).
pub fn exists(root: &SysRoot, name: &str) -> bool {
    !name.is_empty() && !name.contains('/') && root.exists(&format!("/sys/class/block/{name}"))
}

/// The kernel's name of the block device at `node` (/dev/mmcblk0p1, or a link to it such as
/// /dev/disk/by-id/...): mmcblk0p1. None when it is not a block device the kernel lists.
pub fn name_of_node(root: &SysRoot, node: &str) -> Option<String> {
    let canonical = if root.is_live() {
        std::fs::canonicalize(node)
            .ok()?
            .to_string_lossy()
            .into_owned()
    } else {
        root.canonical(node)?
    };
    let name = canonical.rsplit('/').next()?.to_string();
    exists(root, &name).then_some(name)
}

/// Where a queue attribute of a whole disk lives (/sys/block/DISK/queue/ATTR), for the
/// settings journal, which writes it.
pub fn queue_attr_path(root: &SysRoot, disk: &str, attr: &str) -> std::path::PathBuf {
    root.host_path(&format!("/sys/block/{disk}/queue/{attr}"))
}

/// A queue attribute of a block device; a partition has none of its own and answers with
/// its disk's.
pub fn queue_attr(root: &SysRoot, name: &str, attr: &str) -> Option<String> {
    root.attr(&format!("/sys/class/block/{name}/queue/{attr}"))
        .or_else(|| root.attr(&format!("/sys/class/block/{name}/../queue/{attr}")))
}

pub fn sysfs_dir(root: &SysRoot, major: u32, minor: u32, source: &str) -> Option<String> {
    if major != 0 {
        if let Some(p) = root.canonical(&format!("/sys/dev/block/{major}:{minor}")) {
            return Some(p);
        }
    }
    let name = source.strip_prefix("/dev/")?;
    let name = if let Some(mapper) = name.strip_prefix("mapper/") {
        root.list("/sys/block")
            .into_iter()
            .find(|d| root.attr(&format!("/sys/block/{d}/dm/name")).as_deref() == Some(mapper))?
    } else {
        last(name)
    };
    root.canonical(&format!("/sys/class/block/{name}"))
}

pub fn read(root: &SysRoot, sys: &str) -> BlockDevice {
    let name = last(sys);
    let is_partition = root.exists(&format!("{sys}/partition"));
    let disk_sys = if is_partition {
        parent(sys)
    } else {
        sys.to_string()
    };
    let disk = last(&disk_sys);
    let a = |rel: &str| root.attr(&format!("{disk_sys}/{rel}"));
    let n = |rel: &str| root.number(&format!("{disk_sys}/{rel}"));
    let partition = is_partition.then(|| Partition {
        number: root.number(&format!("{sys}/partition")),
        start_bytes: root.number(&format!("{sys}/start")).unwrap_or(0) * 512,
        size_bytes: root.number(&format!("{sys}/size")).map(|s| s * 512),
    });
    let scheduler_line = a("queue/scheduler").unwrap_or_default();
    let schedulers: Vec<String> = scheduler_line
        .split_whitespace()
        .map(|s| s.trim_matches(['[', ']']).to_string())
        .collect();
    let scheduler = scheduler_line
        .split_whitespace()
        .find(|s| s.starts_with('['))
        .map(|s| s.trim_matches(['[', ']']).to_string())
        .or_else(|| (schedulers.len() == 1).then(|| schedulers[0].clone()));
    let bus = bus_of(&disk_sys, &disk);
    BlockDevice {
        size_bytes: root.number(&format!("{sys}/size")).map(|s| s * 512),
        // virtio and some PCI devices expose a numeric vendor id, which names nobody.
        vendor: a("device/vendor")
            .or_else(|| a("device/manfid"))
            .filter(|v| !v.starts_with("0x")),
        model: a("device/model").or_else(|| a("device/name")),
        serial: a("device/serial"),
        mmc_type: (bus == Bus::Mmc).then(|| a("device/type")).flatten(),
        removable: n("removable").map(|r| r == 1),
        queue: Queue {
            scheduler,
            schedulers,
            nr_requests: n("queue/nr_requests"),
            read_ahead_kb: n("queue/read_ahead_kb"),
            max_sectors_kb: n("queue/max_sectors_kb"),
            max_hw_sectors_kb: n("queue/max_hw_sectors_kb"),
            logical_block_size: n("queue/logical_block_size"),
            physical_block_size: n("queue/physical_block_size"),
            minimum_io_size: n("queue/minimum_io_size"),
            optimal_io_size: n("queue/optimal_io_size"),
            discard_granularity: n("queue/discard_granularity"),
            rotational: n("queue/rotational").map(|r| r == 1),
            write_cache: a("queue/write_cache"),
        },
        loop_backing_file: a("loop/backing_file"),
        members: root.list(&format!("{disk_sys}/slaves")),
        dm_name: a("dm/name"),
        partition,
        name,
        disk,
        sysfs_path: disk_sys,
        bus,
    }
}

/// The device at `sys` (a sysfs directory), then what it stands on: a loop device's backing
/// file's device, dm/md members; at most five deep.
pub fn chain(root: &SysRoot, sys: &str) -> Vec<BlockDevice> {
    let mut devices = vec![read(root, sys)];
    for _ in 0..4 {
        let Some(last) = devices.last() else { break };
        let next = if let Some(file) = last.loop_backing_file.clone() {
            let file = file.trim_end_matches(" (deleted)").to_string();
            crate::mounts::resolve(root, &file)
                .ok()
                .and_then(|t| sysfs_dir(root, t.major, t.minor, &t.source))
        } else if let Some(member) = last.members.first() {
            root.canonical(&format!("/sys/class/block/{member}"))
        } else {
            None
        };
        match next {
            Some(sys)
                if !devices.iter().any(|d: &BlockDevice| {
                    d.sysfs_path == sys || d.name == sys.rsplit('/').next().unwrap_or("")
                }) =>
            {
                devices.push(read(root, &sys))
            }
            _ => break,
        }
    }
    devices
}

/// Whole disks with hardware behind them (not loop, ram, dm): the entries of /sys/block
/// that have a `device` link, sorted.
pub fn physical_disks(root: &SysRoot) -> Vec<String> {
    let mut v: Vec<String> = root
        .list("/sys/block")
        .into_iter()
        .filter(|d| root.exists(&format!("/sys/block/{d}/device")))
        .collect();
    v.sort();
    v
}

/// The loop devices whose backing file is `file` (compared by canonical path), as
/// `/dev/loopN`.
pub fn loops_backed_by(root: &SysRoot, file: &std::path::Path) -> Vec<String> {
    let Ok(want) = std::fs::canonicalize(file) else {
        return Vec::new();
    };
    root.list("/sys/block")
        .into_iter()
        .filter(|d| d.starts_with("loop"))
        .filter(|d| {
            root.attr(&format!("/sys/block/{d}/loop/backing_file"))
                .is_some_and(|b| std::path::Path::new(b.trim_end_matches(" (deleted)")) == want)
        })
        .map(|d| format!("/dev/{d}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn physical_disks_are_those_with_a_device_behind_them() {
        let tree = tempfile::tempdir().expect("tempdir");
        for (name, hardware) in [
            ("sda", true),
            ("loop0", false),
            ("mmcblk0", true),
            ("dm-0", false),
        ] {
            let dir = tree.path().join("sys/block").join(name);
            std::fs::create_dir_all(&dir).expect("mkdir");
            if hardware {
                std::fs::create_dir_all(dir.join("device")).expect("mkdir device");
            }
        }
        let root = SysRoot::at(tree.path());
        assert_eq!(physical_disks(&root), vec!["mmcblk0", "sda"]);
    }
}
