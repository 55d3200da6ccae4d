//! Live readers for host and target facts: thin wrappers that read a file and hand the text
//! to a pure parser.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use sinkrate_model::{HostFacts, TargetFacts};
use sinkrate_procparse::{meminfo, mountinfo, vmstat};

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
        kernel: read_trimmed("/proc/sys/kernel/osrelease"),
        arch: std::env::consts::ARCH,
        cpu_model,
        cpu_count: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        mem_total_bytes: read_meminfo().mem_total_bytes,
    }
}

pub fn read_meminfo() -> meminfo::MemInfo {
    meminfo::parse(&std::fs::read_to_string("/proc/meminfo").unwrap_or_default())
}

/// Dirty + Writeback right now, in bytes.
pub fn unwritten_bytes() -> Option<u64> {
    read_meminfo().unwritten_bytes()
}

pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// The kernel's dirty limit (nr_dirty_threshold) in bytes.
pub fn dirty_threshold_bytes() -> Option<u64> {
    let v = vmstat::parse(&std::fs::read_to_string("/proc/vmstat").ok()?);
    Some(v.nr_dirty_threshold? * page_size())
}

/// Mount facts for the file system that holds `path` (which may not exist yet).
pub fn target_facts(path: &Path, is_block_device: bool) -> TargetFacts {
    let mut facts = TargetFacts {
        path: path.display().to_string(),
        is_block_device,
        ..TargetFacts::default()
    };
    if is_block_device {
        facts.device = Some(path.display().to_string());
        return facts;
    }
    let probe = if path.exists() {
        path.to_path_buf()
    } else {
        crate::files::existing_parent(path)
    };
    let Ok(canonical) = std::fs::canonicalize(&probe) else {
        return facts;
    };
    let mounts =
        mountinfo::parse(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default());
    let dev = std::fs::metadata(&canonical).map(|m| m.dev()).ok();
    // Prefer the mount whose device number matches the file's (overlays and binds agree then).
    let by_dev = dev.and_then(|d| {
        let (ma, mi) = (libc::major(d), libc::minor(d));
        let candidates: Vec<&mountinfo::Mount> = mounts
            .iter()
            .filter(|m| m.major == ma && m.minor == mi)
            .collect();
        let s = canonical.to_string_lossy().into_owned();
        mountinfo::mount_for_path(&candidates.into_iter().cloned().collect::<Vec<_>>(), &s).cloned()
    });
    let mount = by_dev
        .or_else(|| mountinfo::mount_for_path(&mounts, &canonical.to_string_lossy()).cloned());
    if let Some(m) = mount {
        facts.mount_point = Some(m.mount_point.clone());
        facts.fs_type = Some(m.fs_type.clone());
        facts.device = Some(m.source.clone());
        facts.mount_options = m.mount_options.clone();
    }
    facts
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
