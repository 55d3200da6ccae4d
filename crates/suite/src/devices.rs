//! Filesystems a suite makes for itself: on emulated devices of one card model (the card
//! under PATH when PATH is itself an emulated device, else a preset), or on a scratch device
//! the user names, formatted and mounted for one condition and removed after it.

use std::path::{Path, PathBuf};
use std::process::Command;

use sinkrate_emulate::{models, tools, Spec};

/// The card every emulated device of a suite copies.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub rate_bytes_per_s: u64,
    pub write_latency_us: u64,
    pub read_latency_us: u64,
    pub burstiness_s: f64,
    /// The card's timing behaviours (service time, GC pauses, SLC cache); copies are honest
    /// cards of the same size, so a counterfeit's capacity, a volatile cache and bad sectors
    /// are not copied.
    pub device: sinkrate_emulate::stack::DeviceModel,
    /// In words: "emulated sd-class10 (10.0 MB/s, 2.0 ms per write)".
    pub label: String,
}

impl Card {
    fn describe(name: &str, rate: u64, latency_us: u64) -> String {
        format!(
            "emulated {name} ({:.1} MB/s, {:.1} ms per write)",
            rate as f64 / 1e6,
            latency_us as f64 / 1000.0
        )
    }
}

/// The emulated device `dir` is on, if it is on one.
pub fn emulated_card_of(dir: &Path) -> Option<Card> {
    let mount_point = sinkrate_sys::host::target_facts(dir, false).mount_point?;
    sinkrate_emulate::list().into_iter().find_map(|l| {
        let spec = l.state.spec?;
        (l.mounted && spec.mountpoint == Path::new(&mount_point)).then(|| Card {
            rate_bytes_per_s: spec.rate_bytes_per_s,
            write_latency_us: spec.write_latency_us,
            read_latency_us: spec.read_latency_us,
            burstiness_s: spec.burstiness_s,
            device: sinkrate_emulate::stack::DeviceModel {
                claimed_bytes: None,
                volatile_cache_bytes: 0,
                bad_sectors: None,
                ..spec.device.clone()
            },
            label: Card::describe(
                spec.model.as_deref().unwrap_or("card"),
                spec.rate_bytes_per_s,
                spec.write_latency_us,
            ),
        })
    })
}

/// The card for `dir`: its own emulated device's, else the preset `model`.
pub fn card_for(dir: &Path, model: &str) -> Result<Card, String> {
    if let Some(c) = emulated_card_of(dir) {
        return Ok(c);
    }
    let m = models::find(model)?;
    let latency_us = m.write_latency.as_micros() as u64;
    Ok(Card {
        rate_bytes_per_s: m.write_bytes_per_s,
        write_latency_us: latency_us,
        read_latency_us: 0,
        burstiness_s: 0.1,
        device: Default::default(),
        label: Card::describe(m.name, m.write_bytes_per_s, latency_us),
    })
}

/// A block device the user gave with `--scratch`, for suites that format and mount.
#[derive(Debug, Clone)]
pub struct ScratchDevice {
    pub path: PathBuf,
    /// Overwrite it although it holds a filesystem or other signature.
    pub force: bool,
}

/// Where a suite's filesystems are made.
#[derive(Debug, Clone)]
pub enum Maker {
    Emulated(Box<Card>),
    Scratch(ScratchDevice),
}

impl Maker {
    pub fn describe(&self) -> String {
        match self {
            Maker::Emulated(c) => c.label.clone(),
            Maker::Scratch(s) => format!("scratch device {}", s.path.display()),
        }
    }
}

/// A filesystem to make: its type and options.
#[derive(Debug, Clone, PartialEq)]
pub struct FsSpec {
    pub fs: &'static str,
    pub mkfs_opts: Vec<String>,
    pub mount_opts: String,
}

/// A mounted filesystem of a suite's, unmounted (and its emulated device removed) on drop.
#[derive(Debug)]
pub struct Mounted {
    pub dir: PathBuf,
    /// The block device's name in /proc/diskstats (`loop3`), for its own counters.
    pub disk: Option<String>,
    emulated: bool,
    _parent: Option<TempDir>,
}

/// A directory removed on drop (the mount points' parent).
#[derive(Debug)]
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Why `fs` cannot be made here, in one line with the fix; None when it can.
pub fn unavailable(fs: &str) -> Option<String> {
    if let Some(m) = tools::missing(fs) {
        return Some(m);
    }
    tools::driver(fs).err()
}

/// The tools `fs` needs that a package would bring: its mkfs, and its FUSE driver where
/// the kernel has no driver of its own. (command, Debian package)
pub fn missing_packages(fs: &str) -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    if let Some((cmd, pkg)) = tools::mkfs_tool(fs) {
        if tools::find_in_path(cmd).is_none() {
            out.push((cmd, pkg));
        }
    }
    if tools::driver(fs).is_err() {
        if let Some((program, pkg)) = tools::fuse_driver(fs) {
            out.push((program, pkg));
        }
    }
    out
}

/// The FUSE program that would mount `fs`, when the kernel cannot.
pub fn fuse_driver(fs: &str) -> Option<&'static str> {
    match tools::driver(fs) {
        Ok(tools::Driver::Fuse { program, .. }) => Some(program),
        _ => None,
    }
}

static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// Makes and mounts `spec` on a new emulated device of `size_bytes`, or on the scratch
/// device.
pub fn make(maker: &Maker, spec: &FsSpec, size_bytes: u64) -> Result<Mounted, String> {
    if let Some(why) = unavailable(spec.fs) {
        return Err(why);
    }
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let parent = std::env::temp_dir().join(format!("sinkrate-suite-{}-{n}", std::process::id()));
    std::fs::create_dir(&parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let parent = TempDir(parent);
    let mountpoint = parent.0.join("fs");
    match maker {
        Maker::Emulated(card) => {
            let state = sinkrate_emulate::up(Spec {
                mountpoint: mountpoint.clone(),
                size_bytes,
                rate_bytes_per_s: card.rate_bytes_per_s,
                write_latency_us: card.write_latency_us,
                read_latency_us: card.read_latency_us,
                fs: spec.fs.into(),
                mkfs_opts: spec.mkfs_opts.clone(),
                mount_opts: spec.mount_opts.clone(),
                error_rate: None,
                error_kind: "EIO".into(),
                error_on: "all".into(),
                backing_file: None,
                force: false,
                burstiness_s: card.burstiness_s,
                model: None,
                device: card.device.clone(),
                // Torn down by the next run should this one be killed.
                owner_pid: Some(std::process::id()),
            })
            .map_err(|e| e.to_string())?;
            let disk = state
                .loop_device
                .as_ref()
                .and_then(|d| d.file_name())
                .map(|n| n.to_string_lossy().into_owned());
            Ok(Mounted {
                dir: mountpoint,
                disk,
                emulated: true,
                _parent: Some(parent),
            })
        }
        Maker::Scratch(dev) => {
            scratch_guard(dev)?;
            let (mkfs, _) = tools::mkfs_tool(spec.fs).ok_or("unsupported filesystem")?;
            let mut mk = Command::new(mkfs);
            match spec.fs {
                "ext4" => mk.args(["-q", "-F"]),
                "xfs" | "btrfs" | "f2fs" => mk.args(["-q", "-f"]),
                _ => &mut mk,
            };
            run(mk.args(&spec.mkfs_opts).arg(&dev.path))?;
            std::fs::create_dir(&mountpoint)
                .map_err(|e| format!("{}: {e}", mountpoint.display()))?;
            let mut mount = tools::mount_command(spec.fs, &spec.mount_opts)?;
            run(mount.arg(&dev.path).arg(&mountpoint))?;
            let disk = std::fs::canonicalize(&dev.path)
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
            Ok(Mounted {
                dir: mountpoint,
                disk,
                emulated: false,
                _parent: Some(parent),
            })
        }
    }
}

/// A scratch device is written like bench writes a device: never while mounted or in use,
/// and not over a filesystem or other signature without --force.
pub fn scratch_guard(dev: &ScratchDevice) -> Result<(), String> {
    let path = dev.path.display();
    let meta = std::fs::metadata(&dev.path).map_err(|e| format!("--scratch {path}: {e}"))?;
    use std::os::unix::fs::FileTypeExt;
    if !meta.file_type().is_block_device() {
        return Err(format!(
            "--scratch {path}: not a block device (give an unmounted device whose contents may be destroyed, e.g. /dev/sdb1)"
        ));
    }
    use sinkrate_sys::guard::{block_device_in_use, InUse};
    match block_device_in_use(&sinkrate_sys::SysRoot::live(), &dev.path) {
        Err(e) => Err(format!("--scratch {path}: {e}")),
        // --force overrides a signature, never a mount, a swap or a holder: those are in
        // use now.
        Ok(Some(InUse::Signature { .. })) if dev.force => Ok(()),
        Ok(Some(why @ InUse::Signature { .. })) => Err(format!(
            "--scratch {path}: {why} (the suite formats it: add --force to destroy what it holds)"
        )),
        Ok(Some(why)) => Err(format!("--scratch {path}: {why}")),
        Ok(None) => Ok(()),
    }
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} failed: {}",
            cmd.get_program().to_string_lossy(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Mounted {
    /// Unmounts the filesystem, keeping the device: everything the filesystem (or its FUSE
    /// driver, which may hold data until then) had to write has reached the device after it.
    /// Then flushes the block device's own cache, where a FUSE driver's writes through the
    /// device node may still sit.
    pub fn unmount_and_flush(&self) -> Result<(), String> {
        run(Command::new("umount").arg(&self.dir))?;
        if let Some(disk) = &self.disk {
            let node = Path::new("/dev").join(disk);
            let dev = std::fs::File::open(&node).map_err(|e| format!("{}: {e}", node.display()))?;
            dev.sync_all()
                .map_err(|e| format!("{}: flushing: {e}", node.display()))?;
        }
        Ok(())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if self.emulated {
            let _ = sinkrate_emulate::down(&self.dir);
        } else if sinkrate_sys::host::target_facts(&self.dir, false)
            .mount_point
            .as_deref()
            == Some(&*self.dir.to_string_lossy())
        {
            let ok = Command::new("umount")
                .arg(&self.dir)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
            }
        }
    }
}

/// Sectors the kernel has written to `disk`, in bytes (its own counter in /proc/diskstats).
pub fn disk_written_bytes(disk: &str) -> Option<u64> {
    sinkrate_sys::disks::written_bytes(&sinkrate_sys::SysRoot::live(), &[disk])
}
