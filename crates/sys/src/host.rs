//! Live readers for host and target facts: thin wrappers that read a file and hand the text
//! to a pure parser.

use std::path::Path;

use crate::root::ReadError;
use crate::{device, mounts, SysRoot};
use sinkrate_model::{HostFacts, TargetFacts};
use sinkrate_procparse::{meminfo, vmstat};

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

pub fn host_facts() -> HostFacts {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        matches!(k.trim(), "model name" | "Hardware" | "Model" | "cpu model")
            .then(|| v.trim().to_string())
    });
    HostFacts {
        hostname: read_trimmed("/proc/sys/kernel/hostname"),
        kernel: crate::kernel_release(),
        arch: std::env::consts::ARCH.to_string(),
        cpu_model,
        cpu_count: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        mem_total_bytes: read_meminfo().mem_total_bytes,
    }
}

/// This machine's /proc/meminfo (every field None when it cannot be read).
pub fn read_meminfo() -> meminfo::MemInfo {
    meminfo_at(&SysRoot::live()).unwrap_or_default()
}

/// /proc/meminfo under `root`, or which file could not be read and why.
pub fn meminfo_at(root: &SysRoot) -> Result<meminfo::MemInfo, ReadError> {
    root.read("/proc/meminfo").map(|t| meminfo::parse(&t))
}

/// /proc/vmstat under `root`, or which file could not be read and why.
pub fn vmstat_at(root: &SysRoot) -> Result<vmstat::VmStat, ReadError> {
    root.read("/proc/vmstat").map(|t| vmstat::parse(&t))
}

/// The page cache's writeback settings (/proc/sys/vm) under `root`.
pub fn vm_settings_at(root: &SysRoot) -> sinkrate_procparse::vmsettings::VmSettings {
    sinkrate_procparse::vmsettings::VmSettings::parse_with(|name| {
        root.read(&format!("/proc/sys/vm/{name}")).ok()
    })
}

/// Dirty + Writeback right now, in bytes.
pub fn unwritten_bytes() -> Option<u64> {
    read_meminfo().unwritten_bytes()
}

pub use crate::{is_root, page_size};

/// The kernel's dirty limit (nr_dirty_threshold) in bytes.
pub fn dirty_threshold_bytes() -> Option<u64> {
    Some(vmstat_at(&SysRoot::live()).ok()?.nr_dirty_threshold? * page_size())
}

/// A directory's storage as the system layer resolved it once: the facts a result shows,
/// and the mount they came from (its device numbers, for the sampler, the trace and the
/// health readers), so that one run resolves its target once and hands it down.
#[derive(Debug, Clone, Default)]
pub struct ResolvedTarget {
    pub facts: TargetFacts,
    /// None for a block device given as the target, or a path whose mount was not found.
    pub mount: Option<sinkrate_model::facts::Target>,
}

/// Mount facts for the file system that holds `path` (which may not exist yet), from the
/// system layer's resolver (bind mounts noted, overlays followed to their upper directory).
pub fn target_facts(path: &Path, is_block_device: bool) -> TargetFacts {
    resolve_target(path, is_block_device).facts
}

/// [`target_facts`] with the mount they came from.
pub fn resolve_target(path: &Path, is_block_device: bool) -> ResolvedTarget {
    let mut facts = TargetFacts {
        path: path.display().to_string(),
        is_block_device,
        ..TargetFacts::default()
    };
    if is_block_device {
        facts.device = Some(path.display().to_string());
        return ResolvedTarget { facts, mount: None };
    }
    let probe = if path.exists() {
        path.to_path_buf()
    } else {
        crate::files::existing_parent(path)
    };
    let Ok(canonical) = std::fs::canonicalize(&probe) else {
        return ResolvedTarget { facts, mount: None };
    };
    let root = SysRoot::live();
    let mount = mounts::resolve(&root, &canonical.to_string_lossy()).ok();
    if let Some(t) = &mount {
        let device = device::sysfs_dir(&root, t.major, t.minor, &t.source)
            .map(|sys| format!("/dev/{}", device::read(&root, &sys).name));
        facts.mount_point = Some(t.mount_point.clone());
        facts.fs_type = Some(t.fs_type.clone());
        facts.device = device.or(Some(t.source.clone()));
        facts.mount_options = t.mount_options.clone();
    }
    ResolvedTarget { facts, mount }
}

/// File systems that accept O_DIRECT without a device behind it, by statfs magic.
pub fn memory_backed_fs(path: &Path) -> Option<&'static str> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let probe = if path.exists() {
        path.to_path_buf()
    } else {
        crate::files::existing_parent(path)
    };
    let c = CString::new(probe.as_os_str().as_bytes()).ok()?;
    // SAFETY: statfs fills the struct; zeroed is a valid initial value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } < 0 {
        return None;
    }
    match st.f_type as u64 {
        0x0102_1994 => Some("tmpfs"),
        0x8584_58f6 => Some("ramfs"),
        _ => None,
    }
}

/// Milliseconds since the epoch, for a run's start stamp (never for timing).
pub fn unix_ms_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The block device (its name as in /proc/diskstats) behind one target, if it has one.
pub fn device_name(t: &TargetFacts) -> Option<String> {
    let dev = t.device.as_deref().filter(|d| d.starts_with("/dev/"))?;
    device::name_of_node(&SysRoot::live(), dev)
}

/// The block devices (names as in /proc/diskstats) behind `targets`, or none when any
/// target has no device of its own (tmpfs, a network mount): the sampler then counts every
/// disk.
pub fn device_names(targets: &[TargetFacts]) -> Vec<String> {
    let mut names = Vec::new();
    for t in targets {
        let Some(name) = device_name(t) else {
            return Vec::new();
        };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}
