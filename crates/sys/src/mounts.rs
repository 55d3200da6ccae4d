//! From a path to the mount that stores it: mountinfo's longest matching mount point,
//! noting bind mounts and following an overlay to its upper directory.

use sinkrate_procparse::mountinfo::{self, Mount};

use crate::root::{normalise, SysRoot};
use sinkrate_model::facts::Target;

fn target_of(m: &Mount, path: &str) -> Target {
    Target {
        path: path.to_string(),
        mount_point: m.mount_point.clone(),
        fs_type: m.fs_type.clone(),
        // Per-mount flags and the superblock's (sync lives there for most filesystems).
        mount_options: {
            let mut all = m.mount_options.clone();
            for o in &m.super_options {
                if !all.contains(o) {
                    all.push(o.clone());
                }
            }
            all
        },
        super_options: m.super_options.clone(),
        source: m.source.clone(),
        device: None,
        bind_of: (m.root != "/").then(|| m.root.clone()),
        overlay_at: None,
        major: m.major,
        minor: m.minor,
    }
}

/// Resolves `path` (already absolute and resolved on the live system) to its mount.
/// The mounts whose mount point is `path` (already canonical), oldest first: the last is
/// the one a user sees there, on top of the others.
pub fn stacked_at(root: &SysRoot, path: &str) -> Vec<mountinfo::Mount> {
    let text = root.read("/proc/self/mountinfo").unwrap_or_default();
    let path = normalise(path);
    mountinfo::parse(&text)
        .into_iter()
        .filter(|m| m.mount_point == path)
        .collect()
}

pub fn resolve(root: &SysRoot, path: &str) -> Result<Target, String> {
    let text = root
        .read("/proc/self/mountinfo")
        .map_err(|e| e.to_string())?;
    let mounts = mountinfo::parse(&text);
    let path = normalise(path);
    let m = mountinfo::mount_for_path(&mounts, &path)
        .ok_or_else(|| format!("{path}: no mount in mountinfo holds it"))?;
    let mut t = target_of(m, &path);
    if m.fs_type == "overlay" {
        let upper = m
            .super_options
            .iter()
            .find_map(|o| o.strip_prefix("upperdir="))
            .map(normalise);
        if let Some(upper) = upper {
            if let Some(u) = mountinfo::mount_for_path(&mounts, &upper) {
                if u.fs_type != "overlay" {
                    let mut ut = target_of(u, &path);
                    ut.overlay_at = Some(m.mount_point.clone());
                    t = ut;
                }
            }
        }
    }
    Ok(t)
}

/// Filesystems that are kernel interfaces, not storage at all.
pub const PSEUDO_FS: &[&str] = &[
    "proc",
    "sysfs",
    "devtmpfs",
    "devpts",
    "cgroup",
    "cgroup2",
    "debugfs",
    "tracefs",
    "securityfs",
    "pstore",
    "bpf",
    "configfs",
    "fusectl",
    "mqueue",
    "hugetlbfs",
    "autofs",
    "efivarfs",
    "binfmt_misc",
    "rpc_pipefs",
    "nsfs",
];

/// Filesystems whose files live in RAM: writes to them never reach a device.
pub const MEMORY_FS: &[&str] = &["tmpfs", "ramfs"];

/// Whether a filesystem of this type has no storage device behind it (memory or a kernel
/// interface): what is written there says nothing about a card or drive.
pub fn is_storage(fs_type: &str) -> bool {
    !MEMORY_FS.contains(&fs_type) && !PSEUDO_FS.contains(&fs_type)
}

/// Whether a new file in `dir` would land among device nodes, where a name that does not
/// exist is a mistyped device, not a file to create: `dir` is on devtmpfs or is the
/// directory mounted at /dev (a tmpfs there in containers), and is not a directory made
/// for anyone's files (sticky and world-writable, as /dev/shm is). Judged by what the
/// directory is, not by its name: /dev/shm and other filesystems mounted under /dev hold
/// files.
pub fn holds_device_nodes(root: &SysRoot, dir: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Ok(canonical) = std::fs::canonicalize(dir) else {
        return false;
    };
    let shared =
        std::fs::metadata(&canonical).is_ok_and(|m| m.permissions().mode() & 0o1002 == 0o1002);
    if shared {
        return false;
    }
    match resolve(root, &canonical.to_string_lossy()) {
        Ok(t) => t.fs_type == "devtmpfs" || t.mount_point == "/dev",
        Err(_) => false,
    }
}
