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

/// The file name of sinkrate's nbdkit plugin (crates/nbdkit-device), as cargo builds it.
pub const PLUGIN_FILE: &str = "libsinkrate_nbdkit.so";

/// Where sinkrate's nbdkit plugin is: `SINKRATE_NBDKIT_PLUGIN`, beside this executable (a
/// cargo build puts both in one directory), or in `../lib/sinkrate/` from it (where
/// scripts/install.sh puts it).
pub fn nbdkit_plugin() -> Result<PathBuf, String> {
    let mut tried: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("SINKRATE_NBDKIT_PLUGIN") {
        tried.push(PathBuf::from(p));
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        tried.push(dir.join(PLUGIN_FILE));
        tried.push(dir.join("../lib/sinkrate").join(PLUGIN_FILE));
    }
    tried.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        let places: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
        format!(
            "the device models (--service-time, --gc-pauses, --slc-cache, --volatile-cache, --fake-capacity) need sinkrate's nbdkit plugin, not found at {} (scripts/install.sh builds and installs it; or set SINKRATE_NBDKIT_PLUGIN)",
            places.join(", ")
        )
    })
}

pub fn mkfs_tool(fs: &str) -> Option<(&'static str, &'static str)> {
    match fs {
        "ext4" => Some(("mkfs.ext4", "e2fsprogs")),
        "xfs" => Some(("mkfs.xfs", "xfsprogs")),
        "btrfs" => Some(("mkfs.btrfs", "btrfs-progs")),
        "vfat" => Some(("mkfs.vfat", "dosfstools")),
        "f2fs" => Some(("mkfs.f2fs", "f2fs-tools")),
        "exfat" => Some(("mkfs.exfat", "exfatprogs")),
        _ => None,
    }
}

/// Who mounts a filesystem: the kernel, or a FUSE driver when the kernel lacks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Driver {
    Kernel,
    /// The FUSE program (on PATH) and its Debian package.
    Fuse {
        program: &'static str,
        package: &'static str,
    },
}

/// FUSE drivers for filesystems a board's kernel has but a host's may lack: (program,
/// Debian package).
pub fn fuse_driver(fs: &str) -> Option<(&'static str, &'static str)> {
    match fs {
        "exfat" => Some(("mount.exfat-fuse", "exfat-fuse")),
        "vfat" => Some(("fusefat", "fusefat")),
        _ => None,
    }
}

fn kernel_has(fs: &str) -> bool {
    sinkrate_sys::kernel_filesystems(&sinkrate_sys::SysRoot::live())
        .iter()
        .any(|f| f == fs)
}

/// How `fs` can be mounted here, or why it cannot (one line with the fix).
pub fn driver(fs: &str) -> Result<Driver, String> {
    if kernel_has(fs) {
        return Ok(Driver::Kernel);
    }
    // A module not loaded yet: modprobe loads it where the kernel has one.
    if let Some(modprobe) = find_in_path("modprobe") {
        let _ = std::process::Command::new(modprobe)
            .args(["-q", fs])
            .stderr(std::process::Stdio::null())
            .status();
        if kernel_has(fs) {
            return Ok(Driver::Kernel);
        }
    }
    match fuse_driver(fs) {
        Some((program, package)) if find_in_path(program).is_some() => {
            Ok(Driver::Fuse { program, package })
        }
        Some((program, package)) => Err(format!(
            "this kernel has no {fs} (not in /proc/filesystems, no module) and its FUSE driver {program} is missing (fix: apt-get install -y {package})"
        )),
        None => Err(format!(
            "this kernel has no {fs} (not in /proc/filesystems, no module) and there is no FUSE driver for it"
        )),
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

/// The command that mounts a device holding `fs` with `mount_opts` (device and mount point
/// to be appended): mount(8) where the kernel has the filesystem, else its FUSE driver, which
/// daemonises and is removed by umount(8) like any mount.
pub fn mount_command(fs: &str, mount_opts: &str) -> Result<std::process::Command, String> {
    Ok(match driver(fs)? {
        Driver::Kernel => {
            let mut m = std::process::Command::new("mount");
            m.arg("-t").arg(fs);
            if !mount_opts.is_empty() {
                m.arg("-o").arg(mount_opts);
            }
            m
        }
        Driver::Fuse { program, .. } => {
            let mut m = std::process::Command::new(program);
            // fusefat mounts read-only unless told otherwise.
            let mut opts: Vec<&str> = if program == "fusefat" {
                vec!["rw+"]
            } else {
                Vec::new()
            };
            opts.extend(mount_opts.split(',').filter(|o| !o.is_empty()));
            if !opts.is_empty() {
                m.arg("-o").arg(opts.join(","));
            }
            m
        }
    })
}
