//! The destructive-write guard: a block device that is mounted (through any path, a
//! partition of it, or its whole disk), used as swap, held by device-mapper or md, or that
//! carries a filesystem, volume or partition-table signature is not written to unless the
//! user forces it. Every fact is asked through a [`SysRoot`], so a fixture tree answers each
//! refusal as the live system does: there a device node is a regular file holding the
//! device's first and last bytes, and its numbers come from sysfs.

use std::path::Path;

use sinkrate_procparse::mountinfo;

use crate::root::SysRoot;
use crate::signature;

/// Why a device must not be written to, in words that name what holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InUse {
    Mounted {
        device: String,
        mount_point: String,
        /// "the device itself", "its partition sdb1", "its whole disk sdb".
        which: String,
    },
    Swap {
        device: String,
        swap: String,
    },
    Held {
        name: String,
        holder: String,
    },
    Signature {
        device: String,
        found: &'static str,
    },
    /// Off Linux sinkrate has no reader of the mount table and the device holders, so every
    /// device counts as in use.
    CannotTell {
        device: String,
    },
}

impl std::fmt::Display for InUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InUse::Mounted {
                device,
                mount_point,
                which,
            } => write!(
                f,
                "{device} is mounted at {mount_point} ({which}); writing to it would destroy that filesystem"
            ),
            InUse::Swap { device, swap } => write!(f, "{device} is in use as swap ({swap})"),
            InUse::Held { name, holder } => {
                write!(f, "{name} is held by {holder} (device-mapper, md or similar)")
            }
            InUse::Signature { device, found } => write!(f, "{device} holds {found}"),
            InUse::CannotTell { device } => write!(
                f,
                "{device} is a device, and on this system sinkrate cannot tell whether it is mounted or in use"
            ),
        }
    }
}

/// A block device as the guard knows it: its numbers and its node inside the root.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    major: u32,
    minor: u32,
    /// The node's path inside the root, symlinks resolved (/dev/sdb).
    path: String,
}

/// Whether a write to `path` (inside `root`) must be refused, and why. `Ok(None)` for a path
/// that is not a block device (a regular file is guarded elsewhere, by how it is created).
pub fn block_device_in_use(root: &SysRoot, path: &Path) -> std::io::Result<Option<InUse>> {
    #[cfg(not(target_os = "linux"))]
    if root.is_live() {
        use std::os::unix::fs::FileTypeExt;
        let kind = std::fs::metadata(path)?.file_type();
        return Ok(
            (kind.is_block_device() || kind.is_char_device()).then(|| InUse::CannotTell {
                device: path.display().to_string(),
            }),
        );
    }
    let Some(node) = block_node(root, path)? else {
        return Ok(None);
    };
    let related = related_devices(root, node.major, node.minor);
    // Without the mount table nothing can be said about what is mounted: refused, not
    // taken for unmounted.
    let Ok(text) = root.read("/proc/self/mountinfo") else {
        return Ok(Some(InUse::CannotTell {
            device: node.path.clone(),
        }));
    };
    let mounts = mountinfo::parse(&text);
    for m in &mounts {
        if let Some((_, _, which)) = related
            .iter()
            .find(|(ma, mi, _)| *ma == m.major && *mi == m.minor)
        {
            return Ok(Some(InUse::Mounted {
                device: node.path.clone(),
                mount_point: m.mount_point.clone(),
                which: which.clone(),
            }));
        }
    }
    for swap in swap_devices(root) {
        let Ok(Some(s)) = block_node(root, Path::new(&swap)) else {
            continue;
        };
        if related
            .iter()
            .any(|(ma, mi, _)| *ma == s.major && *mi == s.minor)
        {
            return Ok(Some(InUse::Swap {
                device: node.path.clone(),
                swap,
            }));
        }
    }
    for (ma, mi, which) in &related {
        if let Some(holder) = root
            .list(&format!("/sys/dev/block/{ma}:{mi}/holders"))
            .into_iter()
            .next()
        {
            let name = if which == "the device itself" {
                node.path.clone()
            } else {
                which.clone()
            };
            return Ok(Some(InUse::Held { name, holder }));
        }
    }
    if let Some(found) = signature::of_file(&root.host_path(&node.path))? {
        return Ok(Some(InUse::Signature {
            device: node.path,
            found,
        }));
    }
    Ok(None)
}

/// The block device at `path`, or None when the path is something else. On the live
/// system the node's own numbers; in a fixture tree, where nodes are regular files, the
/// numbers sysfs gives the node's name.
fn block_node(root: &SysRoot, path: &Path) -> std::io::Result<Option<Node>> {
    let canonical = if root.is_live() {
        std::fs::canonicalize(path)?.to_string_lossy().into_owned()
    } else {
        root.canonical(&path.to_string_lossy()).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{}: no such file", path.display()),
            )
        })?
    };
    let meta = std::fs::metadata(root.host_path(&canonical))?;
    if let Some((major, minor)) = device_numbers(&meta) {
        return Ok(Some(Node {
            major,
            minor,
            path: canonical,
        }));
    }
    if root.is_live() || !meta.is_file() {
        return Ok(None);
    }
    let Some(name) = Path::new(&canonical).file_name() else {
        return Ok(None);
    };
    let name = name.to_string_lossy();
    Ok(root
        .attr(&format!("/sys/class/block/{name}/dev"))
        .and_then(|d| parse_dev(&d))
        .map(|(major, minor)| Node {
            major,
            minor,
            path: canonical,
        }))
}

#[cfg(target_os = "linux")]
fn device_numbers(meta: &std::fs::Metadata) -> Option<(u32, u32)> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    if !meta.file_type().is_block_device() {
        return None;
    }
    let rdev = meta.rdev();
    Some((libc::major(rdev), libc::minor(rdev)))
}

/// Off Linux only fixture trees reach here, whose nodes are regular files.
#[cfg(not(target_os = "linux"))]
fn device_numbers(_meta: &std::fs::Metadata) -> Option<(u32, u32)> {
    None
}

/// The devices (not files) used as swap, from /proc/swaps.
fn swap_devices(root: &SysRoot) -> Vec<String> {
    root.read("/proc/swaps")
        .map(|t| {
            t.lines()
                .skip(1)
                .filter_map(|l| {
                    let mut f = l.split_whitespace();
                    let name = f.next()?;
                    (f.next()? == "partition").then(|| name.to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The device itself, its partitions, and its whole disk if it is a partition.
fn related_devices(root: &SysRoot, major: u32, minor: u32) -> Vec<(u32, u32, String)> {
    let mut out = vec![(major, minor, "the device itself".to_string())];
    let Some(sys) = root.canonical(&format!("/sys/dev/block/{major}:{minor}")) else {
        return out;
    };
    for child in root.list(&sys) {
        let dir = format!("{sys}/{child}");
        if root.exists(&format!("{dir}/partition")) {
            if let Some(dev) = root.attr(&format!("{dir}/dev")).and_then(|d| parse_dev(&d)) {
                out.push((dev.0, dev.1, format!("its partition {child}")));
            }
        }
    }
    if root.exists(&format!("{sys}/partition")) {
        if let Some((parent, name)) = sys.rsplit_once('/').and_then(|(p, _)| {
            let name = p.rsplit('/').next()?.to_string();
            Some((p.to_string(), name))
        }) {
            if let Some(dev) = root
                .attr(&format!("{parent}/dev"))
                .and_then(|d| parse_dev(&d))
            {
                out.push((dev.0, dev.1, format!("its whole disk {name}")));
            }
        }
    }
    out
}

fn parse_dev(text: &str) -> Option<(u32, u32)> {
    let (a, b) = text.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

#[cfg(test)]
mod tests {
    //! Each refusal from a fixture tree alone: no root, no loop device.
    use super::*;
    use std::fs;

    /// A machine with one disk `sdb` (8:16) and its partition `sdb1` (8:17), their nodes
    /// as regular files of zeros, and nothing mounted, swapped or held.
    struct Tree {
        dir: tempfile::TempDir,
    }

    impl Tree {
        fn new() -> Tree {
            let dir = tempfile::tempdir().expect("tempdir");
            let t = Tree { dir };
            let disk = "sys/devices/pci0000:00/usb1/1-1/host0/block/sdb";
            t.write(&format!("{disk}/dev"), "8:16\n");
            t.write(&format!("{disk}/sdb1/dev"), "8:17\n");
            t.write(&format!("{disk}/sdb1/partition"), "1\n");
            fs::create_dir_all(t.path("sys/dev/block")).expect("dirs");
            fs::create_dir_all(t.path("sys/class/block")).expect("dirs");
            for (num, rel) in [("8:16", "sdb"), ("8:17", "sdb/sdb1")] {
                let target = format!("../../devices/pci0000:00/usb1/1-1/host0/block/{rel}");
                std::os::unix::fs::symlink(&target, t.path(&format!("sys/dev/block/{num}")))
                    .expect("link");
                let name = rel.rsplit('/').next().unwrap_or(rel);
                std::os::unix::fs::symlink(&target, t.path(&format!("sys/class/block/{name}")))
                    .expect("link");
            }
            fs::create_dir_all(t.path(&format!("{disk}/holders"))).expect("dirs");
            fs::create_dir_all(t.path(&format!("{disk}/sdb1/holders"))).expect("dirs");
            t.write("dev/sdb", &"\0".repeat(128 * 1024));
            t.write("dev/sdb1", &"\0".repeat(128 * 1024));
            t.write(
                "proc/self/mountinfo",
                "22 1 179:2 / / rw,noatime shared:1 - ext4 /dev/root rw\n",
            );
            t.write("proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n");
            t
        }

        fn path(&self, rel: &str) -> std::path::PathBuf {
            self.dir.path().join(rel)
        }

        fn write(&self, rel: &str, text: &str) {
            let p = self.path(rel);
            fs::create_dir_all(p.parent().expect("parent")).expect("dirs");
            fs::write(p, text).expect("write");
        }

        fn root(&self) -> SysRoot {
            SysRoot::at(self.dir.path())
        }

        fn verdict(&self, node: &str) -> Option<InUse> {
            block_device_in_use(&self.root(), Path::new(node)).expect("guard reads the tree")
        }
    }

    #[test]
    fn a_clean_unused_device_may_be_written() {
        let t = Tree::new();
        assert_eq!(t.verdict("/dev/sdb"), None);
        assert_eq!(t.verdict("/dev/sdb1"), None);
    }

    #[test]
    fn a_disk_whose_partition_is_mounted_is_refused_and_so_is_the_partition() {
        let t = Tree::new();
        t.write(
            "proc/self/mountinfo",
            "22 1 179:2 / / rw - ext4 /dev/root rw\n40 22 8:17 / /media/card rw,relatime - vfat /dev/sdb1 rw\n",
        );
        let disk = t.verdict("/dev/sdb").expect("refused");
        assert_eq!(
            disk,
            InUse::Mounted {
                device: "/dev/sdb".into(),
                mount_point: "/media/card".into(),
                which: "its partition sdb1".into()
            }
        );
        assert!(
            disk.to_string().contains("would destroy that filesystem"),
            "{disk}"
        );
        assert!(
            matches!(t.verdict("/dev/sdb1"), Some(InUse::Mounted { which, .. }) if which == "the device itself")
        );
    }

    #[test]
    fn a_partition_whose_whole_disk_is_mounted_is_refused() {
        let t = Tree::new();
        t.write(
            "proc/self/mountinfo",
            "40 22 8:16 / /mnt/raw rw - ext4 /dev/sdb rw\n",
        );
        assert!(
            matches!(t.verdict("/dev/sdb1"), Some(InUse::Mounted { which, .. }) if which == "its whole disk sdb")
        );
    }

    #[test]
    fn a_device_reached_through_a_symlink_is_the_device() {
        let t = Tree::new();
        t.write(
            "proc/self/mountinfo",
            "40 22 8:17 / /media/card rw - vfat /dev/sdb1 rw\n",
        );
        fs::create_dir_all(t.path("dev/disk/by-id")).expect("dirs");
        std::os::unix::fs::symlink("../../sdb", t.path("dev/disk/by-id/usb-Card")).expect("link");
        assert!(matches!(
            t.verdict("/dev/disk/by-id/usb-Card"),
            Some(InUse::Mounted { device, .. }) if device == "/dev/sdb"
        ));
    }

    #[test]
    fn a_swap_partition_is_refused_and_a_swap_file_is_not_a_device() {
        let t = Tree::new();
        t.write(
            "proc/swaps",
            "Filename\tType\tSize\tUsed\tPriority\n/dev/sdb1 partition 1048572 0 -2\n/var/swap file 102396 0 -3\n",
        );
        assert_eq!(
            t.verdict("/dev/sdb"),
            Some(InUse::Swap {
                device: "/dev/sdb".into(),
                swap: "/dev/sdb1".into()
            })
        );
    }

    #[test]
    fn a_dm_or_md_member_is_refused() {
        let t = Tree::new();
        fs::create_dir_all(
            t.path("sys/devices/pci0000:00/usb1/1-1/host0/block/sdb/sdb1/holders/dm-0"),
        )
        .expect("dirs");
        assert_eq!(
            t.verdict("/dev/sdb"),
            Some(InUse::Held {
                name: "its partition sdb1".into(),
                holder: "dm-0".into()
            })
        );
        assert!(
            matches!(t.verdict("/dev/sdb1"), Some(InUse::Held { name, .. }) if name == "/dev/sdb1")
        );
    }

    #[test]
    fn a_device_with_a_signature_is_refused() {
        let t = Tree::new();
        // ext4's superblock magic, 0xEF53 at 1024 + 56.
        let mut image = vec![0u8; 128 * 1024];
        image[1024 + 56] = 0x53;
        image[1024 + 57] = 0xEF;
        fs::write(t.path("dev/sdb1"), &image).expect("write");
        let v = t.verdict("/dev/sdb1").expect("refused");
        assert!(matches!(v, InUse::Signature { .. }), "{v:?}");
        assert!(v.to_string().starts_with("/dev/sdb1 holds "), "{v}");
        // The disk itself is clean (its partition's signature is the partition's).
        assert_eq!(t.verdict("/dev/sdb"), None);
    }

    #[test]
    fn a_regular_file_is_not_a_device() {
        let t = Tree::new();
        t.write("data/recording.bin", "x");
        assert_eq!(t.verdict("/data/recording.bin"), None);
    }

    #[test]
    fn a_captured_boards_mounted_usb_drive_is_refused() {
        let root = SysRoot::at(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/sysroot/arm-sbc-usb3-drive-on-usb2"),
        );
        let v = block_device_in_use(&root, Path::new("/dev/sda1"))
            .expect("reads")
            .expect("refused");
        assert!(
            matches!(&v, InUse::Mounted { mount_point, .. } if mount_point == "/media/usb0"),
            "{v:?}"
        );
    }
}
