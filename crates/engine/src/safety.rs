//! Refuses to write to a block device that is in use or holds data: mounted (through any
//! path, a partition of it, or its whole disk), used as swap, held by device-mapper/md, or
//! carrying a filesystem or partition-table signature.

use std::os::unix::fs::FileTypeExt;
#[cfg(target_os = "linux")]
use std::os::unix::fs::MetadataExt;
use std::path::Path;
#[cfg(target_os = "linux")]
use std::path::PathBuf;

#[cfg(target_os = "linux")]
use sinkrate_procparse::mountinfo;

use crate::error::EngineError;

/// Why a block device must not be written to.
#[cfg(target_os = "linux")]
pub fn block_device_in_use(path: &Path) -> Result<Option<String>, EngineError> {
    let canonical = std::fs::canonicalize(path).map_err(|e| EngineError::io(path, e))?;
    let meta = std::fs::metadata(&canonical).map_err(|e| EngineError::io(path, e))?;
    if !meta.file_type().is_block_device() {
        return Ok(None);
    }
    let rdev = meta.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let related = related_devices(major, minor);
    let mounts_text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for m in mountinfo::parse(&mounts_text) {
        if related
            .iter()
            .any(|(ma, mi, _)| *ma == m.major && *mi == m.minor)
        {
            let which = related
                .iter()
                .find(|(ma, mi, _)| *ma == m.major && *mi == m.minor)
                .map(|r| r.2.clone())
                .unwrap_or_default();
            return Ok(Some(format!(
                "{} is mounted at {} ({which}); writing to it would destroy that filesystem",
                canonical.display(),
                m.mount_point
            )));
        }
    }
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    for line in swaps.lines().skip(1) {
        if let Some(dev) = line.split_whitespace().next() {
            if let Ok(c) = std::fs::canonicalize(dev) {
                if let Ok(sm) = std::fs::metadata(&c) {
                    let r = sm.rdev();
                    if related
                        .iter()
                        .any(|(ma, mi, _)| *ma == libc::major(r) && *mi == libc::minor(r))
                    {
                        return Ok(Some(format!(
                            "{} is in use as swap ({dev})",
                            canonical.display()
                        )));
                    }
                }
            }
        }
    }
    for (ma, mi, name) in &related {
        let holders = PathBuf::from(format!("/sys/dev/block/{ma}:{mi}/holders"));
        if let Ok(mut entries) = std::fs::read_dir(&holders) {
            if let Some(Ok(holder)) = entries.next() {
                return Ok(Some(format!(
                    "{name} is held by {} (device-mapper, md or similar)",
                    holder.file_name().to_string_lossy()
                )));
            }
        }
    }
    if let Some(sig) = signature(&canonical)? {
        return Ok(Some(format!("{} holds {sig}", canonical.display())));
    }
    Ok(None)
}

/// The device itself, its partitions, and its whole disk if it is a partition.
#[cfg(target_os = "linux")]
fn related_devices(major: u32, minor: u32) -> Vec<(u32, u32, String)> {
    let mut out = vec![(major, minor, "the device itself".to_string())];
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    if let Ok(entries) = std::fs::read_dir(&sys) {
        for e in entries.flatten() {
            let p = e.path();
            if p.join("partition").exists() {
                if let Some(dev) = read_dev(&p.join("dev")) {
                    out.push((
                        dev.0,
                        dev.1,
                        format!("its partition {}", e.file_name().to_string_lossy()),
                    ));
                }
            }
        }
    }
    if sys.join("partition").exists() {
        if let Ok(real) = std::fs::canonicalize(&sys) {
            if let Some(parent) = real.parent() {
                if let Some(dev) = read_dev(&parent.join("dev")) {
                    let name = parent
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    out.push((dev.0, dev.1, format!("its whole disk {name}")));
                }
            }
        }
    }
    out
}

#[cfg(target_os = "linux")]
fn read_dev(path: &Path) -> Option<(u32, u32)> {
    let text = std::fs::read_to_string(path).ok()?;
    let (a, b) = text.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Elsewhere sinkrate has no reader of the system's mount table and device holders, so every
/// disk device counts as in use: writing to one needs --force.
#[cfg(not(target_os = "linux"))]
pub fn block_device_in_use(path: &Path) -> Result<Option<String>, EngineError> {
    let meta = std::fs::metadata(path).map_err(|e| EngineError::io(path, e))?;
    let kind = meta.file_type();
    if kind.is_block_device() || kind.is_char_device() {
        return Ok(Some(format!(
            "{} is a device, and on this system sinkrate cannot tell whether it is mounted or in use",
            path.display()
        )));
    }
    Ok(None)
}

/// Known on-disk signatures at the start of a file or device (the system layer's).
pub fn signature(path: &Path) -> Result<Option<&'static str>, EngineError> {
    sinkrate_sys::signature::of_file(path).map_err(|e| EngineError::io(path, e))
}
