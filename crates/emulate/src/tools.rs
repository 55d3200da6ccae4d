//! The external tools the stack needs, and the Debian packages that provide them.

use std::path::{Path, PathBuf};

/// (command, Debian package)
const TOOLS: &[(&str, &str)] = &[
    ("nbdkit", "nbdkit"),
    ("nbdfuse", "libnbd-bin"),
    ("fusermount3", "fuse3"),
    ("losetup", "mount"),
    ("mount", "mount"),
    ("umount", "mount"),
];

pub fn mkfs_tool(fs: &str) -> Option<(&'static str, &'static str)> {
    match fs {
        "ext4" => Some(("mkfs.ext4", "e2fsprogs")),
        "xfs" => Some(("mkfs.xfs", "xfsprogs")),
        "btrfs" => Some(("mkfs.btrfs", "btrfs-progs")),
        "vfat" => Some(("mkfs.vfat", "dosfstools")),
        _ => None,
    }
}

pub fn find_in_path(cmd: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")
        .unwrap_or_else(|| "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].iter().map(PathBuf::from))
        .map(|d| d.join(cmd))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Missing tools for a filesystem, as the one `apt-get install` line that fixes it.
pub fn missing(fs: &str) -> Option<String> {
    let mut packages: Vec<&str> = Vec::new();
    let mut commands: Vec<&str> = Vec::new();
    let mkfs = mkfs_tool(fs);
    for (cmd, pkg) in TOOLS.iter().copied().chain(mkfs) {
        if find_in_path(cmd).is_none() {
            commands.push(cmd);
            if !packages.contains(&pkg) {
                packages.push(pkg);
            }
        }
    }
    if commands.is_empty() {
        None
    } else {
        Some(format!(
            "missing {} (fix: apt-get install -y {})",
            commands.join(", "),
            packages.join(" ")
        ))
    }
}
