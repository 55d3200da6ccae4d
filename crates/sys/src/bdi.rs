//! A device's backing device info (/sys/class/bdi/MAJ:MIN): which one a path's writes are
//! counted against, and its per-device writeback limits.

use crate::SysRoot;
use sinkrate_model::facts::BdiLimits;

/// The bdi that a mount's dirty pages are counted against: its whole disk's for a block
/// device (a partition shares its disk's), the mount's own anonymous one for FUSE or NFS;
/// None for tmpfs and the like, which have none under /sys/class/bdi.
pub fn of_mount(root: &SysRoot, major: u32, minor: u32) -> Option<String> {
    if let Some(sys) = root.canonical(&format!("/sys/dev/block/{major}:{minor}")) {
        let disk = if root.exists(&format!("{sys}/partition")) {
            sys.rsplit_once('/')
                .map_or(sys.as_str(), |(p, _)| p)
                .to_string()
        } else {
            sys
        };
        if let Some(dev) = root.attr(&format!("{disk}/dev")) {
            if root.exists(&format!("/sys/class/bdi/{dev}")) {
                return Some(dev);
            }
        }
    }
    // FUSE and NFS name theirs by the mount's st_dev; fuseblk adds a suffix.
    let own = format!("{major}:{minor}");
    [own.clone(), format!("{own}-fuseblk")]
        .into_iter()
        .find(|name| root.exists(&format!("/sys/class/bdi/{name}")))
}

/// The bdi of a whole disk named as in /sys/block (`sdb`, `mmcblk0`, `loop3`).
pub fn of_disk(root: &SysRoot, disk: &str) -> Option<String> {
    let dev = root.attr(&format!("/sys/block/{disk}/dev"))?;
    root.exists(&format!("/sys/class/bdi/{dev}")).then_some(dev)
}

/// The disk (as /sys/block names it) whose bdi is `name`; None for a bdi of no block device
/// (FUSE, NFS).
pub fn disk_of(root: &SysRoot, name: &str) -> Option<String> {
    let sys = root.canonical(&format!("/sys/dev/block/{name}"))?;
    if root.exists(&format!("{sys}/partition")) {
        return None;
    }
    sys.rsplit('/').next().map(str::to_string)
}

/// The limits of bdi `name`; None when there is no such bdi.
pub fn read(root: &SysRoot, name: &str) -> Option<BdiLimits> {
    let dir = format!("/sys/class/bdi/{name}");
    if !root.exists(&dir) {
        return None;
    }
    let number = |attr: &str| root.number(&format!("{dir}/{attr}"));
    Some(BdiLimits {
        name: name.to_string(),
        max_ratio: number("max_ratio"),
        max_ratio_fine: number("max_ratio_fine"),
        max_bytes: number("max_bytes"),
        min_ratio: number("min_ratio"),
        strict_limit: number("strict_limit").map(|v| v != 0),
        stable_pages_required: number("stable_pages_required").map(|v| v != 0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().expect("tempdir");
        let w = |p: &str, v: &str| {
            let path = d.path().join(p.trim_start_matches('/'));
            std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
            std::fs::write(path, v).expect("write");
        };
        w("/sys/devices/platform/mmc/mmcblk0/dev", "179:0\n");
        w("/sys/devices/platform/mmc/mmcblk0/mmcblk0p1/dev", "179:1\n");
        w(
            "/sys/devices/platform/mmc/mmcblk0/mmcblk0p1/partition",
            "1\n",
        );
        for (attr, v) in [
            ("max_ratio", "100"),
            ("max_bytes", "4831838208"),
            ("strict_limit", "0"),
            ("stable_pages_required", "0"),
        ] {
            w(&format!("/sys/class/bdi/179:0/{attr}"), &format!("{v}\n"));
        }
        w("/sys/class/bdi/0:45/max_ratio", "1\n");
        w("/sys/class/bdi/0:45/strict_limit", "1\n");
        std::fs::create_dir_all(d.path().join("sys/dev/block")).expect("dirs");
        std::fs::create_dir_all(d.path().join("sys/block")).expect("dirs");
        for (link, to) in [
            (
                "sys/dev/block/179:1",
                "../../devices/platform/mmc/mmcblk0/mmcblk0p1",
            ),
            ("sys/dev/block/179:0", "../../devices/platform/mmc/mmcblk0"),
            ("sys/block/mmcblk0", "../devices/platform/mmc/mmcblk0"),
        ] {
            std::os::unix::fs::symlink(to, d.path().join(link)).expect("link");
        }
        d
    }

    #[test]
    fn a_partition_counts_against_its_disk_and_fuse_against_its_own() {
        let d = tree();
        let root = SysRoot::at(d.path());
        assert_eq!(of_mount(&root, 179, 1).as_deref(), Some("179:0"));
        assert_eq!(of_mount(&root, 179, 0).as_deref(), Some("179:0"));
        assert_eq!(of_mount(&root, 0, 45).as_deref(), Some("0:45"));
        // tmpfs: an anonymous device with no bdi.
        assert_eq!(of_mount(&root, 0, 27), None);
        assert_eq!(of_disk(&root, "mmcblk0").as_deref(), Some("179:0"));
        assert_eq!(disk_of(&root, "179:0").as_deref(), Some("mmcblk0"));
        assert_eq!(disk_of(&root, "0:45"), None);
        let card = read(&root, "179:0").expect("bdi");
        assert!(card.shares_whole_pool());
        assert_eq!(card.max_bytes, Some(4_831_838_208));
        // A kernel before 6.2 has no _fine ratio: said as None, not 0.
        assert_eq!(card.max_ratio_fine, None);
        let fuse = read(&root, "0:45").expect("bdi");
        assert!(!fuse.shares_whole_pool());
        assert_eq!(read(&root, "8:0"), None);
    }
}
