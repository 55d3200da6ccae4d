//! `sinkrate audit`: what a person reads by eye from mount, lsusb -t, sysctl, tune2fs and
//! sysfs, read directly for one path, and turned into findings that say why and what to do.
//! Every system read goes through a `SysRoot`, so fixture trees are audited like live ones.

pub mod device;
pub mod findings;
pub mod memory;
pub mod mounts;
pub mod root;
pub mod superblock;
pub mod usb;

use serde::Serialize;

pub use findings::{Finding, Fix, Severity};
pub use root::SysRoot;

use device::{BlockDevice, Bus};
use memory::Memory;
use mounts::Target;
use usb::UsbPath;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FsFacts {
    /// From the device's superblock, read-only.
    pub ext4: Option<superblock::Ext4Super>,
    /// /proc/fs/ext4/DEV/options: the options in force, defaults included.
    pub ext4_options: Vec<String>,
    /// vfat/exfat cluster size.
    pub cluster_bytes: Option<u64>,
    /// Filesystems this kernel can mount (/proc/filesystems).
    pub kernel_filesystems: Vec<String>,
}

pub use sinkrate_engine::files::FsSpace as Space;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SwapArea {
    pub name: String,
    pub kind: String,
    pub size_bytes: u64,
    /// On the same disk as the target.
    pub same_disk: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Audit {
    pub target: Target,
    pub filesystem: FsFacts,
    /// The mounted device first, then what it stands on (a loop's backing device, dm/md
    /// members).
    pub devices: Vec<BlockDevice>,
    pub usb: Option<UsbPath>,
    pub memory: Memory,
    pub space: Option<Space>,
    pub swap: Vec<SwapArea>,
    /// The stream rate the findings were judged against, bytes per second.
    pub stream_bytes_per_s: f64,
    pub findings: Vec<Finding>,
    /// What could not be read, and what still works without it.
    pub notes: Vec<String>,
}

pub struct Options {
    pub root: SysRoot,
    /// The recording's rate, for findings that depend on it (dirty limits, free space).
    pub stream_bytes_per_s: f64,
}

/// Filesystems that are not storage at all.
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

fn swaps(root: &SysRoot, disk: Option<&str>) -> Vec<SwapArea> {
    let Some(text) = root.read("/proc/swaps") else {
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

/// The device node to read a superblock from: the live /dev, or the fixture's dev/.
fn device_node(root: &SysRoot, name: &str) -> std::path::PathBuf {
    root.host_path(&format!("/dev/{name}"))
}

fn filesystem_facts(
    root: &SysRoot,
    target: &Target,
    dev: Option<&BlockDevice>,
    notes: &mut Vec<String>,
) -> FsFacts {
    let mut fs = FsFacts {
        kernel_filesystems: root
            .read("/proc/filesystems")
            .map(|t| {
                t.lines()
                    .filter_map(|l| l.split_whitespace().last().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        ..FsFacts::default()
    };
    let Some(dev) = dev else {
        return fs;
    };
    let node = device_node(root, &dev.name);
    match target.fs_type.as_str() {
        "ext4" | "ext3" | "ext2" => {
            fs.ext4_options = root
                .read(&format!("/proc/fs/ext4/{}/options", dev.name))
                .map(|t| {
                    t.lines()
                        .map(|l| l.trim().to_string())
                        .filter(|l| !l.is_empty())
                        .collect()
                })
                .unwrap_or_default();
            match superblock::read_ext4(&node) {
                Ok(sb) => fs.ext4 = sb,
                Err(e) => notes.push(format!(
                    "ext4 superblock not read ({}: {e}); journal facts come from the mount options only{}",
                    node.display(),
                    // SAFETY: geteuid has no preconditions.
                    if unsafe { libc::geteuid() } != 0 { " (run as root to read it)" } else { "" }
                )),
            }
        }
        "vfat" | "exfat" | "msdos" => match superblock::read_cluster_bytes(&node) {
            Ok(c) => fs.cluster_bytes = c,
            Err(e) => notes.push(format!(
                "boot sector not read ({}: {e}); cluster size unknown",
                node.display()
            )),
        },
        _ => {}
    }
    fs
}

/// Audits `path`: on the live system it must exist (it is resolved through symlinks); under
/// a fixture root it is taken as written.
pub fn audit(path: &std::path::Path, opts: &Options) -> Result<Audit, String> {
    let root = &opts.root;
    let resolved = if root.is_live() {
        std::fs::canonicalize(path)
            .map_err(|e| {
                format!(
                    "{}: {} (give an existing directory on the storage to audit)",
                    path.display(),
                    e
                )
            })?
            .to_string_lossy()
            .to_string()
    } else {
        if !path.is_absolute() {
            return Err(format!(
                "{}: with --sysroot the path must be absolute (as on that machine)",
                path.display()
            ));
        }
        path.to_string_lossy().to_string()
    };
    let mut notes = Vec::new();
    let mut target = mounts::resolve(root, &resolved)?;
    let mut devices = Vec::new();
    if !PSEUDO_FS.contains(&target.fs_type.as_str()) {
        if let Some(sys) = device::sysfs_dir(root, target.major, target.minor, &target.source) {
            let dev = device::read(root, &sys);
            target.device = Some(format!("/dev/{}", dev.name));
            devices.push(dev);
        } else if target.source.starts_with("/dev/") {
            notes.push(format!(
                "{}: not found in sysfs ({}): device facts are missing; mount and memory findings still apply",
                target.source,
                root.host_path("/sys/dev/block").display()
            ));
        }
    }
    // What the mounted device stands on: a loop's backing file's device, dm/md members.
    for _ in 0..4 {
        let Some(last) = devices.last() else { break };
        let next = if let Some(file) = last.loop_backing_file.clone() {
            let file = file.trim_end_matches(" (deleted)").to_string();
            mounts::resolve(root, &file)
                .ok()
                .and_then(|t| device::sysfs_dir(root, t.major, t.minor, &t.source))
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
                devices.push(device::read(root, &sys))
            }
            _ => break,
        }
    }
    let physical = devices
        .iter()
        .find(|d| !matches!(d.bus, Bus::Loop | Bus::Dm | Bus::Md));
    let usb = physical
        .filter(|d| d.bus == Bus::Usb)
        .and_then(|d| usb::path_of(root, &d.sysfs_path));
    let filesystem = filesystem_facts(root, &target, devices.first(), &mut notes);
    let memory = memory::read(root);
    if memory.total_bytes.is_none() {
        notes.push(format!(
            "{}: missing: memory findings skipped",
            root.host_path("/proc/meminfo").display()
        ));
    }
    let space = if root.is_live() {
        sinkrate_engine::files::space(std::path::Path::new(&resolved)).ok()
    } else {
        None
    };
    let swap = swaps(root, physical.map(|d| d.disk.as_str()));
    let mut a = Audit {
        target,
        filesystem,
        usb,
        memory,
        space,
        swap,
        stream_bytes_per_s: opts.stream_bytes_per_s,
        findings: Vec::new(),
        notes,
        devices,
    };
    a.judge_for(opts.stream_bytes_per_s);
    Ok(a)
}

impl Audit {
    /// (Re)judges the facts for a stream of this rate: findings sorted, critical first.
    pub fn judge_for(&mut self, stream_bytes_per_s: f64) {
        self.stream_bytes_per_s = stream_bytes_per_s;
        self.findings = findings::judge(self);
        self.findings.sort_by_key(|f| f.severity);
    }
}
