//! `sinkrate audit`: what a person reads by eye from mount, lsusb -t, sysctl, tune2fs and
//! sysfs, read directly for one path, and turned into findings that say why and what to do.
//! Every system read goes through a `SysRoot`, so fixture trees are audited like live ones.

pub mod findings;
pub mod memory;
pub mod superblock;

use sinkrate_sys::{device, mounts, usb};

use sinkrate_model::audit::{Audit, Finding, FsFacts, Severity};
use sinkrate_model::facts::{BlockDevice, Bus, Target};
use sinkrate_sys::root::SysRoot;

pub struct Options {
    pub root: SysRoot,
    /// The recording's rate, for findings that depend on it (dirty limits, free space).
    pub stream_bytes_per_s: f64,
}

use sinkrate_sys::mounts::PSEUDO_FS;

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
        kernel_filesystems: sinkrate_sys::kernel_filesystems(root),
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
                    if sinkrate_sys::is_root() { "" } else { " (run as root to read it)" }
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
            // The mounted device, then what it stands on.
            devices = device::chain(root, &sys);
            target.device = devices.first().map(|d| format!("/dev/{}", d.name));
        } else if target.source.starts_with("/dev/") {
            notes.push(format!(
                "{}: not found in sysfs ({}): device facts are missing; mount and memory findings still apply",
                target.source,
                root.host_path("/sys/dev/block").display()
            ));
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
    if let Err(e) = sinkrate_sys::host::meminfo_at(root) {
        notes.push(format!("{e}: memory findings skipped"));
    }
    let space = if root.is_live() {
        sinkrate_sys::space(std::path::Path::new(&resolved)).ok()
    } else {
        None
    };
    let swap = sinkrate_sys::swaps::read(root, physical.map(|d| d.disk.as_str()));
    let health = sinkrate_sys::health::read(root, &devices, &mut notes);
    let bdi = sinkrate_sys::bdi::of_mount(root, target.major, target.minor)
        .and_then(|name| sinkrate_sys::bdi::read(root, &name));
    if let Some(b) = bdi.as_ref().filter(|b| b.strict_limit.is_none()) {
        notes.push(format!(
            "/sys/class/bdi/{}: no strict_limit or max_bytes (Linux 6.2 added them): the device's share of dirty memory can be capped only by max_ratio there",
            b.name
        ));
    }
    let mut a = Audit {
        target,
        filesystem,
        usb,
        memory,
        space,
        swap,
        bdi,
        health,
        measured_write_bytes_per_s: None,
        stream_bytes_per_s: opts.stream_bytes_per_s,
        findings: Vec::new(),
        notes,
        devices,
    };
    judge_for(&mut a, opts.stream_bytes_per_s);
    Ok(a)
}

/// (Re)judges the facts for a stream of this rate: findings sorted, critical first.
pub fn judge_for(audit: &mut Audit, stream_bytes_per_s: f64) {
    audit.stream_bytes_per_s = stream_bytes_per_s;
    audit.findings = findings::judge(audit);
    audit.findings.sort_by_key(|f| f.severity);
}

/// The findings whose fix is a setting `tune apply` can make (their ids, and the settings),
/// skipping those that are fine and, when `only` is given, those it does not name (check's
/// FIX FIRST list).
pub fn setting_fixes(
    findings: &[Finding],
    only: Option<&[String]>,
) -> (Vec<String>, Vec<sinkrate_model::tunables::Assignment>) {
    let mut ids = Vec::new();
    let mut settings = Vec::new();
    for f in findings {
        if f.severity == Severity::Ok
            || only.is_some_and(|wanted| !wanted.iter().any(|i| i == f.id.as_ref()))
        {
            continue;
        }
        let fix = f.settings();
        if !fix.is_empty() {
            ids.push(f.id.to_string());
            settings.extend(fix.iter().cloned());
        }
    }
    (ids, settings)
}
