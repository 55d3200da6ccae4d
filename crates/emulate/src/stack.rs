//! Building and removing the emulated device, with a state journal under
//! `/run/sinkrate/emulate/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::tools;

/// Where each emulated device's state directory lives (`SINKRATE_STATE_DIR/emulate` when
/// that is set).
fn state_root() -> PathBuf {
    sinkrate_sys::state_dir_override()
        .map(|d| d.join("emulate"))
        .unwrap_or_else(|| PathBuf::from("/run/sinkrate/emulate"))
}

#[derive(Debug, thiserror::Error)]
pub enum EmulateError {
    #[error("{0}")]
    Usage(String),
    #[error("{step}: {message}")]
    Step { step: &'static str, message: String },
}

pub(crate) fn step(step: &'static str, message: impl Into<String>) -> EmulateError {
    EmulateError::Step {
        step,
        message: message.into(),
    }
}

/// What to build.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Spec {
    pub mountpoint: PathBuf,
    pub size_bytes: u64,
    /// The device's bandwidth in bytes per second, shared by reads and writes.
    pub rate_bytes_per_s: u64,
    pub write_latency_us: u64,
    pub read_latency_us: u64,
    pub fs: String,
    pub mkfs_opts: Vec<String>,
    pub mount_opts: String,
    /// Probability in [0, 1] that a request fails, once errors are armed.
    pub error_rate: Option<f64>,
    pub error_kind: String,
    /// Which requests fail: "all", "writes" or "reads".
    pub error_on: String,
    /// Keep data in a sparse file here instead of memory.
    pub backing_file: Option<PathBuf>,
    /// Overwrite a backing file that holds data.
    #[serde(default)]
    pub force: bool,
    /// Token-bucket depth of the rate filter in seconds of rate (low: no fast first seconds).
    pub burstiness_s: f64,
    pub model: Option<String>,
    /// Card behaviours served by sinkrate's nbdkit plugin; none set: nbdkit's own filters.
    #[serde(default)]
    pub device: DeviceModel,
    /// The process that made this device for itself alone (a suite's card), journaled
    /// before the first piece is built: once that process is gone, the next sinkrate run
    /// takes the device down ([`sweep_orphans`]). `None` for `sinkrate emulate up`'s
    /// devices, which stay until `emulate down`.
    #[serde(default)]
    pub owner_pid: Option<u32>,
}

/// What sinkrate's nbdkit plugin adds to a card. With any of it set, the plugin serves the
/// device (one request at a time at the rate) in place of nbdkit's memory or file plugin
/// and its rate filter (a token bucket).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct DeviceModel {
    /// Time every request costs on top of its length at the rate.
    pub service_time_us: u64,
    pub gc_pause_us: u64,
    /// A pause after this many bytes written (0: none); on average when `gc_random`.
    pub gc_every_bytes: u64,
    pub gc_random: bool,
    pub slc_bytes: u64,
    pub slc_write_bytes_per_s: u64,
    pub volatile_cache_bytes: u64,
    /// The capacity the device reports, above what it holds (`size_bytes`): a counterfeit.
    pub claimed_bytes: Option<u64>,
    /// What a counterfeit does with a write past what it holds: "wrap" or "drop".
    pub fake_mode: String,
    /// Bad sectors (offset, length): every request touching them fails with EIO once the
    /// device is ready (after mkfs and mount).
    #[serde(default)]
    pub bad_sectors: Option<(u64, u64)>,
    /// The card wears out after this many bytes written once it is ready, in this way
    /// (read-only, errors, stale).
    #[serde(default)]
    pub wear_out: Option<(u64, String)>,
    /// The distribution of extra busy per write: (share, microseconds), shares summing to 1.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busy: Vec<(f64, u64)>,
    /// Random-write IOPS by size: (bytes, IOPS), sizes rising.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub random_iops: Vec<(u64, f64)>,
    /// Writes in the card's first bytes cost more: (region bytes, extra µs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<(u64, u64)>,
    /// The card profile the model came from (`emulate up --profile`), by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

impl DeviceModel {
    pub fn any(&self) -> bool {
        !self.busy.is_empty()
            || !self.random_iops.is_empty()
            || self.metadata.is_some()
            || self.service_time_us > 0
            || self.gc_every_bytes > 0
            || self.slc_bytes > 0
            || self.volatile_cache_bytes > 0
            || self.claimed_bytes.is_some()
            || self.bad_sectors.is_some()
            || self.wear_out.is_some()
    }

    /// Whether the device has behaviour that must wait until it is ready (mkfs and mount
    /// done): bad sectors and wear are armed then.
    pub fn armed_later(&self) -> bool {
        self.bad_sectors.is_some() || self.wear_out.is_some()
    }
}

impl Spec {
    /// The size the device reports: the claimed capacity of a counterfeit, else its size.
    pub fn reported_bytes(&self) -> u64 {
        self.device.claimed_bytes.unwrap_or(self.size_bytes)
    }

    /// No filesystem: the device is left raw, and the path becomes a link to it.
    pub fn raw(&self) -> bool {
        self.fs == "none"
    }
}

/// What was built, journaled as it is built.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct State {
    pub spec: Option<Spec>,
    pub state_dir: PathBuf,
    pub created_mountpoint: bool,
    pub nbdkit_pid: Option<i32>,
    pub socket: Option<PathBuf>,
    pub fuse_dir: Option<PathBuf>,
    pub nbdfuse_pid: Option<i32>,
    pub loop_device: Option<PathBuf>,
    pub backing_created: Option<PathBuf>,
    pub mounted: bool,
    pub errors_file: Option<PathBuf>,
    pub setup_ms: u64,
    /// `--fs none`: the link at the mountpoint's path that names the loop device.
    #[serde(default)]
    pub device_link: Option<PathBuf>,
    /// The plugin's account of the device (busy time, GC pauses, cache), when it serves it.
    #[serde(default)]
    pub device_stats: Option<PathBuf>,
    /// Creating this file cuts the device's power (the plugin's volatile cache is lost).
    #[serde(default)]
    pub power_cut_file: Option<PathBuf>,
    /// The mount's ID in mountinfo once mounted: a filesystem mounted through its FUSE
    /// driver (fusefat, exfat-fuse) names the driver as its source, not the loop device.
    #[serde(default)]
    pub mount_id: Option<u32>,
    /// What taking the stack down had to do that a user should hear of (a driver killed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl State {
    fn save(&self) -> Result<(), EmulateError> {
        let text = serde_json::to_string_pretty(self).map_err(|e| step("state", e.to_string()))?;
        // Durably: after a power cut (emulate's own --power-cut tests included) `down` must
        // still find every step it has to undo.
        let path = self.state_dir.join("state.json");
        sinkrate_platform::durable::replace(&path, text.as_bytes(), 0o644)
            .map_err(|e| step("state", format!("{}: {e}", path.display())))
    }

    fn load(dir: &Path) -> Option<State> {
        let text = std::fs::read_to_string(dir.join("state.json")).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The file that arms error injection (errors are off during mkfs and mount).
    pub fn errors_file(&self) -> Option<&Path> {
        self.errors_file.as_deref()
    }
}

/// The state directory of a mountpoint: its absolute path with every byte other than ASCII
/// letters, digits, '-' and '.' written as `_XX` (hex), so that two paths never share one
/// (`/tmp/x_y` and `/tmp/x/y` are `tmp_2fx_5fy` and `tmp_2fx_2fy`).
fn state_dir_for(mountpoint: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let bytes = mountpoint.as_os_str().as_bytes();
    let trimmed = bytes.strip_prefix(b"/").unwrap_or(bytes);
    let mut name = String::with_capacity(trimmed.len() * 2);
    for &b in trimmed {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'.' {
            name.push(b as char);
        } else {
            name.push_str(&format!("_{b:02x}"));
        }
    }
    state_root().join(if name.is_empty() {
        "root".to_string()
    } else {
        name
    })
}

/// The state of the device at `mountpoint`: under its own name, or under the name an
/// earlier version gave it (separators folded to '_'), accepted only when the state itself
/// names this mountpoint.
fn state_of(mountpoint: &Path) -> Option<State> {
    let dir = state_dir_for(mountpoint);
    if let Some(s) = State::load(&dir) {
        return Some(s);
    }
    let legacy: String = mountpoint
        .to_string_lossy()
        .trim_start_matches('/')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    State::load(&state_root().join(legacy)).filter(|s| {
        s.spec
            .as_ref()
            .is_some_and(|sp| sp.mountpoint == mountpoint)
    })
}

pub(crate) fn run(step_name: &'static str, cmd: &mut Command) -> Result<String, EmulateError> {
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| {
        step(
            step_name,
            format!("cannot run {:?}: {e}", cmd.get_program()),
        )
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(step(
            step_name,
            format!("{:?} failed: {}", cmd.get_program(), one_line(&stderr)),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A tool's stderr as one line: every line it wrote, trimmed, in order.
fn one_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        "no message".into()
    } else {
        lines.join(" ")
    }
}

pub(crate) fn is_mountpoint(path: &Path) -> bool {
    !mounts_at(path).is_empty()
}

/// The mounts at `path`, oldest first (the last is on top), through the system layer.
fn mounts_at(path: &Path) -> Vec<sinkrate_procparse::mountinfo::Mount> {
    // The parent resolved, not the path itself: a stat of a mountpoint asks the filesystem
    // mounted there, and a FUSE driver that stopped answering would hold this for ever.
    let canonical = match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => match std::fs::canonicalize(parent) {
            Ok(p) => p.join(name),
            Err(_) => return Vec::new(),
        },
        _ => match std::fs::canonicalize(path) {
            Ok(p) => p,
            Err(_) => return Vec::new(),
        },
    };
    sinkrate_sys::mounts::stacked_at(&sinkrate_sys::SysRoot::live(), &canonical.to_string_lossy())
}

/// Whether `m` is the filesystem this stack mounted: the mount it recorded, or one from
/// its loop device.
fn is_ours(m: &sinkrate_procparse::mountinfo::Mount, state: &State) -> bool {
    state.mount_id == Some(m.mount_id)
        || state
            .loop_device
            .as_ref()
            .is_some_and(|dev| Path::new(&m.source) == dev.as_path())
}

/// Refuses to take a device down while something that is not its own filesystem is
/// mounted at its mountpoint (on top of it, or instead of it): unmounting that would lose
/// a user's files, and stopping the emulator under a still-mounted filesystem fails its I/O.
fn check_nothing_stacked(state: &State) -> Result<(), EmulateError> {
    let Some(spec) = &state.spec else {
        return Ok(());
    };
    let mounts = mounts_at(&spec.mountpoint);
    match mounts.last() {
        Some(top) if !is_ours(top, state) => Err(EmulateError::Usage(format!(
            "{}: {} from {} is mounted there, which is not the emulated card's filesystem: unmount it first (nothing was changed)",
            spec.mountpoint.display(),
            top.fs_type,
            top.source
        ))),
        _ => Ok(()),
    }
}

/// Running (not gone, and not a zombie waiting for a parent that does not reap it).
fn alive(pid: i32) -> bool {
    pid > 0 && sinkrate_sys::process::alive(pid as u32)
}

/// How long umount(8) may wait on the filesystem's driver. A FUSE driver can stop answering
/// for good (fusefat loops for ever on a FAT chain that a wrapping fake card's fill made
/// circular), and umount, like every file call on the mount, then waits with it.
const UNMOUNT_PATIENCE: Duration = Duration::from_secs(20);

/// umount(8) of the device's filesystem, bounded: when this stack's FUSE driver has not let
/// it finish within [`UNMOUNT_PATIENCE`], the driver is killed (the kernel then fails what
/// waited on it; what the driver had not written is lost, as at a crash) and the state says
/// so in `notes`.
fn unmount_bounded(spec: &Spec, state: &mut State) -> Result<(), EmulateError> {
    let mp = &spec.mountpoint;
    let mut umount = Command::new("umount")
        .arg(mp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| step("umount", format!("cannot run umount: {e}")))?;
    let finished = |umount: &mut std::process::Child, patience: Duration| {
        let start = Instant::now();
        loop {
            match umount.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if start.elapsed() < patience => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                _ => return None,
            }
        }
    };
    let mut status = finished(&mut umount, UNMOUNT_PATIENCE);
    if status.is_none() {
        let drivers = fuse_drivers_of(spec, state);
        for pid in &drivers {
            sinkrate_platform::child::stop(
                *pid,
                sinkrate_platform::child::Signal::Kill,
                STOP_GRACE,
                &mut || alive(*pid),
            );
        }
        if !drivers.is_empty() {
            state.notes.push(format!(
                "the {} driver did not answer umount for {} s: it was killed, and what it had not written to the device is lost",
                spec.fs,
                UNMOUNT_PATIENCE.as_secs()
            ));
        }
        status = finished(&mut umount, STOP_GRACE);
    }
    match status {
        Some(s) if s.success() => Ok(()),
        Some(_) => {
            let mut stderr = String::new();
            if let Some(mut e) = umount.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut stderr);
            }
            Err(step(
                "umount",
                format!("\"umount\" failed: {}", one_line(&stderr)),
            ))
        }
        None => {
            let _ = umount.kill();
            let _ = umount.wait();
            Err(step(
                "umount",
                format!(
                    "umount waited more than {} s on the filesystem at {}",
                    UNMOUNT_PATIENCE.as_secs(),
                    mp.display()
                ),
            ))
        }
    }
}

/// The FUSE driver this stack started for its filesystem: the process of the driver's
/// program whose command line names both this stack's loop device and its mountpoint.
fn fuse_drivers_of(spec: &Spec, state: &State) -> Vec<i32> {
    let (Some((program, _)), Some(dev)) = (tools::fuse_driver(&spec.fs), &state.loop_device) else {
        return Vec::new();
    };
    let (dev, mp) = (
        dev.to_string_lossy().into_owned(),
        spec.mountpoint.to_string_lossy().into_owned(),
    );
    sinkrate_sys::process::all_pids()
        .into_iter()
        .filter(|pid| {
            let args = sinkrate_sys::process::command_line(*pid).unwrap_or_default();
            let named = |what: &str| args.iter().any(|a| a.as_slice() == what.as_bytes());
            args.first()
                .is_some_and(|a| a.ends_with(program.as_bytes()))
                && named(&dev)
                && named(&mp)
        })
        .map(|pid| pid as i32)
        .collect()
}

/// nbdkit processes whose command line names `socket`.
fn processes_serving(socket: &Path) -> Vec<i32> {
    let needle = socket.to_string_lossy().into_owned();
    sinkrate_sys::process::all_pids()
        .into_iter()
        .filter(|pid| {
            let args = sinkrate_sys::process::command_line(*pid).unwrap_or_default();
            args.first().is_some_and(|a| a.ends_with(b"nbdkit"))
                && args.iter().any(|a| a.as_slice() == needle.as_bytes())
        })
        .map(|pid| pid as i32)
        .collect()
}

fn read_pid(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn wait_for(
    what: &'static str,
    timeout: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<(), EmulateError> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if ready() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(step(
        what,
        format!("not ready after {} s", timeout.as_secs()),
    ))
}

/// Checks what can be checked before anything is built.
fn validate(spec: &Spec) -> Result<(), EmulateError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(EmulateError::Usage(
            "emulate needs root (it creates loop devices and mounts); run it with sudo or as root"
                .into(),
        ));
    }
    if !spec.raw() && tools::mkfs_tool(&spec.fs).is_none() {
        return Err(EmulateError::Usage(format!(
            "--fs: '{}' is not supported (accepted: ext4, xfs, btrfs, vfat, f2fs, exfat, none)",
            spec.fs
        )));
    }
    if !spec.raw() {
        tools::driver(&spec.fs)
            .map_err(|e| EmulateError::Usage(format!("--fs {}: {e}", spec.fs)))?;
    }
    if let Some(m) = tools::missing(&spec.fs) {
        return Err(EmulateError::Usage(m));
    }
    validate_device(spec)?;
    let min = if spec.raw() {
        1 << 20
    } else if spec.fs == "xfs" {
        300 << 20
    } else if spec.fs == "btrfs" {
        128 << 20
    } else {
        16 << 20
    };
    if spec.size_bytes < min {
        return Err(EmulateError::Usage(format!(
            "--size: {} bytes is too small for {} (at least {} MiB)",
            spec.size_bytes,
            spec.fs,
            min >> 20
        )));
    }
    if spec.rate_bytes_per_s < 1024 {
        return Err(EmulateError::Usage(
            "--write-rate: at least 1K (1024 bytes per second)".into(),
        ));
    }
    if let Some(r) = spec.error_rate {
        if !(0.0..=1.0).contains(&r) {
            return Err(EmulateError::Usage(format!(
                "--error-rate: {r} is out of range (0 to 1, e.g. 0.01)"
            )));
        }
    }
    if !matches!(
        spec.error_kind.as_str(),
        "EIO" | "ENOSPC" | "EPERM" | "ENOMEM" | "EINVAL" | "ESHUTDOWN"
    ) {
        return Err(EmulateError::Usage(format!(
            "--error: '{}' is not accepted (EIO, ENOSPC, EPERM, ENOMEM, EINVAL, ESHUTDOWN)",
            spec.error_kind
        )));
    }
    if !matches!(spec.error_on.as_str(), "all" | "writes" | "reads") {
        return Err(EmulateError::Usage(format!(
            "--error-on: '{}' is not accepted (all, writes, reads)",
            spec.error_on
        )));
    }
    check_backing(spec)?;
    let mp = &spec.mountpoint;
    if spec.raw() {
        if std::fs::symlink_metadata(mp).is_ok() {
            return Err(EmulateError::Usage(format!(
                "{}: exists; with --fs none the path becomes a link to the device (give a new path)",
                mp.display()
            )));
        }
    } else if mp.exists() {
        if !mp.is_dir() {
            return Err(EmulateError::Usage(format!(
                "{}: is not a directory",
                mp.display()
            )));
        }
        if is_mountpoint(mp) {
            return Err(EmulateError::Usage(format!(
                "{}: something is already mounted there (sinkrate emulate down {0} if it is ours)",
                mp.display()
            )));
        }
        let occupied = std::fs::read_dir(mp)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true);
        if occupied {
            return Err(EmulateError::Usage(format!(
                "{}: is not empty; mounting over it would hide its files (use an empty directory)",
                mp.display()
            )));
        }
    }
    if state_of(&absolute(mp)).is_some() {
        return Err(EmulateError::Usage(format!(
            "{}: an emulated device is already recorded there (sinkrate emulate down {0})",
            mp.display()
        )));
    }
    Ok(())
}

fn validate_device(spec: &Spec) -> Result<(), EmulateError> {
    let d = &spec.device;
    if spec.raw() && (!spec.mkfs_opts.is_empty() || !spec.mount_opts.is_empty()) {
        return Err(EmulateError::Usage(
            "--fs none makes no filesystem and mounts nothing: --mkfs-opts and --mount-opts do not apply".into(),
        ));
    }
    if let Some(claimed) = d.claimed_bytes {
        if claimed <= spec.size_bytes {
            return Err(EmulateError::Usage(format!(
                "--fake-capacity: {claimed} bytes must be above --size ({} bytes), which is what the card really holds",
                spec.size_bytes
            )));
        }
    }
    if !matches!(d.fake_mode.as_str(), "" | "wrap" | "drop") {
        return Err(EmulateError::Usage(format!(
            "--fake-mode: '{}' is not accepted (wrap, drop)",
            d.fake_mode
        )));
    }
    if let Some((at, n)) = d.bad_sectors {
        if n == 0 || at.saturating_add(n) > spec.reported_bytes() {
            return Err(EmulateError::Usage(format!(
                "--bad-sectors: {n} bytes at {at} must lie inside the device ({} bytes)",
                spec.reported_bytes()
            )));
        }
    }
    if let Some((after, mode)) = &d.wear_out {
        if *after == 0 || sinkrate_devicemodel::WearMode::parse(mode).is_none() {
            return Err(EmulateError::Usage(format!(
                "--wear-out: {after} bytes, '{mode}': the bytes must be above zero and the mode one of {}",
                sinkrate_devicemodel::WearMode::NAMES
            )));
        }
    }
    if d.volatile_cache_bytes >= spec.size_bytes {
        return Err(EmulateError::Usage(format!(
            "--volatile-cache: {} bytes must be below the device's size",
            d.volatile_cache_bytes
        )));
    }
    if d.slc_bytes > 0 && d.slc_write_bytes_per_s <= spec.rate_bytes_per_s {
        return Err(EmulateError::Usage(
            "--slc-cache: its rate must be above the card's --write-rate (e.g. --slc-cache 512M@90M with --write-rate 20M)".into(),
        ));
    }
    if d.any() {
        tools::nbdkit_plugin().map_err(EmulateError::Usage)?;
    }
    Ok(())
}

pub(crate) fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

fn mem_available() -> u64 {
    let m = sinkrate_sys::host::read_meminfo();
    m.mem_available_bytes.or(m.mem_free_bytes).unwrap_or(0)
}

/// Where the device's data will live: the given backing file, a sparse file in the state
/// directory when the size is beyond half of the available memory, or memory.
fn backing_of(spec: &Spec, state_dir: &Path) -> Option<PathBuf> {
    match &spec.backing_file {
        Some(f) => Some(f.clone()),
        None if spec.size_bytes > mem_available() / 2 => Some(state_dir.join("backing.img")),
        None => None,
    }
}

/// A backing file is never data someone else owns: one that holds bytes or a signature is
/// overwritten only with --force, one in use (a loop device's backing file) never; and the
/// device must fit where its data will live.
fn check_backing(spec: &Spec) -> Result<(), EmulateError> {
    let gb = |b: u64| b as f64 / 1e9;
    let backing = backing_of(spec, &state_dir_for(&absolute(&spec.mountpoint)));
    let Some(file) = backing else {
        let available = mem_available();
        // Memory-backed: nbdkit's memory plugin holds what is written, up to the size.
        if spec.size_bytes > available {
            return Err(EmulateError::Usage(format!(
                "--size: {:.2} GB does not fit in the {:.2} GB of memory available (give --backing-file on a filesystem with room, or a smaller --size)",
                gb(spec.size_bytes),
                gb(available)
            )));
        }
        return Ok(());
    };
    let existing = match std::fs::metadata(&file) {
        Ok(m) if !m.is_file() => {
            return Err(EmulateError::Usage(format!(
            "--backing-file {}: is not a regular file (a device or directory is never used as one)",
            file.display()
        )))
        }
        Ok(m) => Some(m.len()),
        Err(_) => None,
    };
    if existing.is_some() {
        let loops = sinkrate_sys::device::loops_backed_by(&sinkrate_sys::SysRoot::live(), &file);
        if !loops.is_empty() {
            return Err(EmulateError::Usage(format!(
                "--backing-file {}: is in use as the backing file of {} (detach it first; it is never overwritten while in use)",
                file.display(),
                loops.join(", ")
            )));
        }
        let found = sinkrate_sys::signature::of_file(&file)
            .map_err(|e| step("backing file", format!("{}: {e}", file.display())))?;
        let len = existing.unwrap_or(0);
        if !spec.force && (found.is_some() || len > 0) {
            let what = found.map_or_else(
                || format!("{:.1} MB of data", len as f64 / 1e6),
                |sig| sig.to_string(),
            );
            return Err(EmulateError::Usage(format!(
                "--backing-file {}: holds {what}; emulate formats it (add --force to overwrite it)",
                file.display()
            )));
        }
    }
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    // The state directory is made later: ask the nearest directory that exists.
    let dir = dir
        .ancestors()
        .find(|d| d.is_dir())
        .map(Path::to_path_buf)
        .unwrap_or(dir);
    if let Ok(space) = sinkrate_sys::space(&dir) {
        let room = space.available_bytes + existing.unwrap_or(0);
        if spec.size_bytes > room {
            return Err(EmulateError::Usage(format!(
                "--size: {:.2} GB does not fit on the filesystem of {} ({:.2} GB free): the sparse file could fill it (a smaller --size, or --backing-file elsewhere)",
                gb(spec.size_bytes),
                file.display(),
                gb(room)
            )));
        }
    }
    Ok(())
}

/// Builds the stack. On failure, whatever was built is removed again.
pub fn up(mut spec: Spec) -> Result<State, EmulateError> {
    spec.mountpoint = absolute(&spec.mountpoint);
    validate(&spec)?;
    let started = Instant::now();
    let dir = state_dir_for(&spec.mountpoint);
    std::fs::create_dir_all(&dir).map_err(|e| step("state", format!("{}: {e}", dir.display())))?;
    let mut state = State {
        spec: Some(spec.clone()),
        state_dir: dir.clone(),
        ..State::default()
    };
    state.save()?;
    match build(&spec, &mut state) {
        Ok(()) => {
            state.setup_ms = started.elapsed().as_millis() as u64;
            state.save()?;
            Ok(state)
        }
        Err(e) => {
            let _ = teardown(&mut state);
            Err(e)
        }
    }
}

/// The plugin's settings (sinkrate-devicemodel's keys), in plain numbers. `armed` is the
/// file that turns bad sectors on once the device is ready.
fn plugin_args(
    spec: &Spec,
    backing: Option<&Path>,
    stats: &Path,
    cut: &Path,
    armed: &Path,
) -> Vec<String> {
    let d = &spec.device;
    let mut a = vec![
        format!("size={}", spec.reported_bytes()),
        format!("write-rate={}", spec.rate_bytes_per_s),
        format!("service-time-us={}", d.service_time_us),
        format!("stats-file={}", stats.display()),
        format!("power-cut-file={}", cut.display()),
    ];
    if let Some(f) = backing {
        a.push(format!("file={}", f.display()));
    }
    if d.gc_every_bytes > 0 {
        a.push(format!("gc-every={}", d.gc_every_bytes));
        a.push(format!("gc-pause-us={}", d.gc_pause_us));
        a.push(format!("gc-random={}", u8::from(d.gc_random)));
    }
    if !d.busy.is_empty() {
        let steps: Vec<String> = d
            .busy
            .iter()
            .map(|(share, us)| format!("{share}:{us}"))
            .collect();
        a.push(format!("busy={}", steps.join(",")));
    }
    if !d.random_iops.is_empty() {
        let sizes: Vec<String> = d
            .random_iops
            .iter()
            .map(|(bytes, iops)| format!("{bytes}:{iops}"))
            .collect();
        a.push(format!("random-iops={}", sizes.join(",")));
    }
    if let Some((region, us)) = d.metadata {
        a.push(format!("metadata={region}:{us}"));
    }
    if d.slc_bytes > 0 {
        a.push(format!("slc-bytes={}", d.slc_bytes));
        a.push(format!("slc-rate={}", d.slc_write_bytes_per_s));
    }
    if d.volatile_cache_bytes > 0 {
        a.push(format!("volatile-cache={}", d.volatile_cache_bytes));
    }
    if let Some((at, n)) = d.bad_sectors {
        a.push(format!("bad-offset={at}"));
        a.push(format!("bad-length={n}"));
    }
    if let Some((after, mode)) = &d.wear_out {
        a.push(format!("wear-out-bytes={after}"));
        a.push(format!("wear-out-mode={mode}"));
    }
    if d.armed_later() {
        a.push(format!("armed-file={}", armed.display()));
    }
    if d.claimed_bytes.is_some() {
        a.push(format!("real-size={}", spec.size_bytes));
        a.push(format!(
            "fake-mode={}",
            if d.fake_mode.is_empty() {
                "wrap"
            } else {
                &d.fake_mode
            }
        ));
    }
    a
}

/// Brings the device up step by step, saving the state after each so that `down` (or a
/// later `up`'s orphan sweep) can undo whatever was done.
fn build(spec: &Spec, state: &mut State) -> Result<(), EmulateError> {
    if !spec.raw() && !spec.mountpoint.exists() {
        let failed =
            |e: std::io::Error| step("mountpoint", format!("{}: {e}", spec.mountpoint.display()));
        if let Some(parent) = spec.mountpoint.parent() {
            std::fs::create_dir_all(parent).map_err(failed)?;
        }
        // Journaled before it is made: a run killed between the two leaves a directory
        // that the teardown then removes (empty, or not there at all), where journaling it
        // after left it behind (a killed suite's directory stayed, beside load). Made by
        // this run alone: one that appeared meanwhile is not taken for ours.
        state.created_mountpoint = true;
        state.save()?;
        if let Err(e) = std::fs::create_dir(&spec.mountpoint) {
            state.created_mountpoint = false;
            state.save()?;
            return Err(failed(e));
        }
    }
    let socket = start_nbdkit(spec, state)?;
    let disk = start_nbdfuse(state, &socket)?;
    let loop_dev = run(
        "losetup",
        Command::new("losetup")
            .args(["-f", "--show", "--direct-io=on"])
            .arg(&disk),
    )?;
    state.loop_device = Some(PathBuf::from(&loop_dev));
    state.save()?;
    if spec.raw() {
        std::os::unix::fs::symlink(&loop_dev, &spec.mountpoint)
            .map_err(|e| step("device link", format!("{}: {e}", spec.mountpoint.display())))?;
        state.device_link = Some(spec.mountpoint.clone());
        state.save()?;
        arm_errors(state)?;
        return Ok(());
    }

    make_and_mount(spec, state, &loop_dev)?;
    arm_errors(state)
}

/// Starts nbdkit on a Unix socket in the state directory, with the device's plugin (or
/// nbdkit's rate filter) and the delay and error filters the spec asks for.
fn start_nbdkit(spec: &Spec, state: &mut State) -> Result<PathBuf, EmulateError> {
    let dir = state.state_dir.clone();
    // nbdkit: memory when it fits comfortably in RAM, else a sparse file.
    let socket = dir.join("nbd.sock");
    let pidfile = dir.join("nbdkit.pid");
    let mut cmd = Command::new("nbdkit");
    cmd.arg("--unix")
        .arg(&socket)
        .arg("--pidfile")
        .arg(&pidfile);
    if spec.error_rate.is_some() {
        cmd.arg("--filter=error");
    }
    if spec.write_latency_us > 0 || spec.read_latency_us > 0 {
        cmd.arg("--filter=delay");
    }
    let plugin = if spec.device.any() {
        Some(tools::nbdkit_plugin().map_err(|e| step("nbdkit", e))?)
    } else {
        cmd.arg("--filter=rate");
        None
    };
    let backing = backing_of(spec, &dir);
    if let Some(file) = &backing {
        if !file.exists() {
            let f = std::fs::File::create(file)
                .map_err(|e| step("backing file", format!("{}: {e}", file.display())))?;
            f.set_len(spec.size_bytes)
                .map_err(|e| step("backing file", format!("{}: {e}", file.display())))?;
            state.backing_created = Some(file.clone());
            state.save()?;
        }
    }
    match plugin {
        Some(plugin) => {
            let stats = dir.join("device.json");
            let cut = dir.join("power-cut");
            let armed = dir.join("errors-on");
            cmd.arg(plugin)
                .args(plugin_args(spec, backing.as_deref(), &stats, &cut, &armed));
            state.device_stats = Some(stats);
            state.power_cut_file = Some(cut);
            if spec.device.armed_later() {
                state.errors_file = Some(armed);
            }
        }
        None => {
            match &backing {
                Some(file) => cmd.arg("file").arg(format!("file={}", file.display())),
                None => cmd.arg("memory").arg(format!("size={}", spec.size_bytes)),
            };
            cmd.arg(format!("rate={}", spec.rate_bytes_per_s.saturating_mul(8)));
            cmd.arg(format!("burstiness={}", spec.burstiness_s));
        }
    }
    if spec.write_latency_us > 0 {
        cmd.arg(format!(
            "delay-write={}ms",
            spec.write_latency_us as f64 / 1000.0
        ));
    }
    if spec.read_latency_us > 0 {
        cmd.arg(format!(
            "delay-read={}ms",
            spec.read_latency_us as f64 / 1000.0
        ));
    }
    if let Some(rate) = spec.error_rate {
        let armed = dir.join("errors-on");
        // nbdkit's error filter: error=, error-rate=, error-file= for every request, or the
        // error-pwrite-*/error-pread-* forms for one direction.
        let prefix = match spec.error_on.as_str() {
            "writes" => "error-pwrite",
            "reads" => "error-pread",
            _ => "error",
        };
        cmd.arg(format!("{prefix}={}", spec.error_kind));
        cmd.arg(format!("{prefix}-rate={rate}"));
        cmd.arg(format!("{prefix}-file={}", armed.display()));
        state.errors_file = Some(armed);
    }
    // nbdkit forks into the background once it is ready and has written its pid file.
    state.socket = Some(socket.clone());
    state.save()?;
    run("nbdkit", &mut cmd)?;
    // The daemonised server writes its pid file a moment after the foreground process exits.
    wait_for("nbdkit", Duration::from_secs(10), || {
        read_pid(&pidfile).is_some() && socket.exists()
    })?;
    state.nbdkit_pid = read_pid(&pidfile);
    state.save()?;
    Ok(socket)
}

/// Serves the export as a file through nbdfuse (in its own session); returns the file.
fn start_nbdfuse(state: &mut State, socket: &Path) -> Result<PathBuf, EmulateError> {
    let dir = state.state_dir.clone();
    let fuse_dir = dir.join("fuse");
    std::fs::create_dir_all(&fuse_dir)
        .map_err(|e| step("nbdfuse", format!("{}: {e}", fuse_dir.display())))?;
    let fuse_pid = dir.join("nbdfuse.pid");
    let log = std::fs::File::create(dir.join("nbdfuse.log"))
        .map_err(|e| step("nbdfuse", e.to_string()))?;
    let mut nbdfuse = Command::new("nbdfuse");
    nbdfuse
        .arg("-P")
        .arg(&fuse_pid)
        .arg(fuse_dir.join("disk"))
        .arg("--unix")
        .arg(socket)
        .stdin(Stdio::null())
        .stdout(
            log.try_clone()
                .map_err(|e| step("nbdfuse", e.to_string()))?,
        )
        .stderr(log);
    // Its own session: a Ctrl-C at the terminal that started `up` must not stop the device.
    // SAFETY: setsid is async-signal-safe and called in the child before exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut nbdfuse, || {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = nbdfuse
        .spawn()
        .map_err(|e| step("nbdfuse", format!("cannot start: {e}")))?;
    state.fuse_dir = Some(fuse_dir.clone());
    state.save()?;
    wait_for("nbdfuse", Duration::from_secs(10), || {
        read_pid(&fuse_pid).is_some() || matches!(child.try_wait(), Ok(Some(_)))
    })?;
    if let Ok(Some(status)) = child.try_wait() {
        let log = std::fs::read_to_string(dir.join("nbdfuse.log")).unwrap_or_default();
        return Err(step(
            "nbdfuse",
            format!(
                "exited ({status}): {}",
                log.trim().lines().last().unwrap_or("")
            ),
        ));
    }
    state.nbdfuse_pid = read_pid(&fuse_pid);
    state.save()?;
    Ok(fuse_dir.join("disk"))
}

/// mkfs on the loop device and mount it at the mountpoint; a failed mount says the
/// kernel's reason.
fn make_and_mount(spec: &Spec, state: &mut State, loop_dev: &str) -> Result<(), EmulateError> {
    let (mkfs, _) =
        tools::mkfs_tool(&spec.fs).ok_or_else(|| step("mkfs", "unsupported filesystem"))?;
    let mut mk = Command::new(mkfs);
    match spec.fs.as_str() {
        "ext4" => mk.args(["-q", "-F", "-E", "nodiscard,lazy_itable_init=0"]),
        "xfs" => mk.args(["-q", "-f", "-K"]),
        "btrfs" => mk.args(["-q", "-f", "-K"]),
        "f2fs" => mk.args(["-q", "-f"]),
        _ => &mut mk,
    };
    mk.args(&spec.mkfs_opts).arg(loop_dev);
    run("mkfs", &mut mk)?;

    let mut mount =
        tools::mount_command(&spec.fs, &spec.mount_opts).map_err(|e| step("mount", e))?;
    mount.arg(loop_dev).arg(&spec.mountpoint);
    let mut kernel_log = sinkrate_sys::kmsg::KernelLog::mark();
    if let Err(e) = run("mount", &mut mount) {
        // mount(8) points at dmesg; the filesystem's reason is there, so say it.
        let device = loop_dev.trim_start_matches("/dev/");
        let said: Vec<String> = kernel_log
            .as_mut()
            .map(|k| k.since())
            .unwrap_or_default()
            .into_iter()
            .filter(|m| m.contains(spec.fs.as_str()) || m.contains(device))
            .collect();
        if said.is_empty() {
            return Err(e);
        }
        return Err(step(
            "mount",
            format!(
                "mount -t {} -o {} failed: the kernel says: {} (--mount-opts takes {}'s mount options)",
                spec.fs,
                spec.mount_opts,
                said.join("; "),
                spec.fs
            ),
        ));
    }
    state.mounted = true;
    state.mount_id = mounts_at(&spec.mountpoint).last().map(|m| m.mount_id);
    state.save()?;
    Ok(())
}

/// Errors are armed only once the device is ready, so mkfs and mount always succeed.
fn arm_errors(state: &State) -> Result<(), EmulateError> {
    if let Some(armed) = &state.errors_file {
        std::fs::write(armed, b"").map_err(|e| step("error injection", e.to_string()))?;
    }
    Ok(())
}

/// A device whose owner process was gone, and what became of it.
#[derive(Debug)]
pub struct Orphan {
    pub mountpoint: PathBuf,
    pub owner_pid: u32,
    /// `Err` with the reason when it could not be taken down (its state is kept).
    pub outcome: Result<(), String>,
}

/// Takes down the devices that runs killed before they could (their process gone) made for
/// themselves alone, each through its own state as `down` does: what is still mounted on
/// top of one keeps it up, and is named. `step` is called as each one is dealt with.
pub fn sweep_orphans(step: &dyn Fn()) -> Vec<Orphan> {
    let mut out = Vec::new();
    for listed in list() {
        let Some(spec) = listed.state.spec.clone() else {
            continue;
        };
        let Some(pid) = spec.owner_pid else {
            continue;
        };
        // A zombie owner (killed, not yet reaped) holds nothing: `alive` says it has ended.
        let running = i32::try_from(pid).is_ok_and(alive);
        if pid == std::process::id() || running {
            continue;
        }
        let mut state = listed.state;
        let outcome = teardown(&mut state).map_err(|e| e.to_string());
        if outcome.is_ok() {
            // The directory a suite made to hold the mountpoint, if it is now empty.
            if let Some(parent) = spec.mountpoint.parent().filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("sinkrate-suite-"))
            }) {
                let _ = std::fs::remove_dir(parent);
            }
        }
        out.push(Orphan {
            mountpoint: spec.mountpoint,
            owner_pid: pid,
            outcome,
        });
        step();
    }
    out
}

/// Removes every piece recorded for `mountpoint`, in reverse order; works after any of the
/// processes died.
/// How long an emulator process has to end after each signal (or after its unmount).
const STOP_GRACE: Duration = Duration::from_secs(5);

pub fn down(mountpoint: &Path) -> Result<State, EmulateError> {
    let mp = absolute(mountpoint);
    let mut state = state_of(&mp).ok_or_else(|| {
        EmulateError::Usage(format!(
            "{}: no emulated device is recorded there (sinkrate emulate list shows what is up)",
            mp.display()
        ))
    })?;
    teardown(&mut state)?;
    Ok(state)
}

fn teardown(state: &mut State) -> Result<(), EmulateError> {
    check_nothing_stacked(state)?;
    let mut problems: Vec<String> = Vec::new();
    if let Some(errors) = &state.errors_file {
        let _ = std::fs::remove_file(errors);
    }
    if let Some(spec) = state.spec.clone() {
        if state.mounted || is_mountpoint(&spec.mountpoint) {
            if let Err(e) = unmount_bounded(&spec, state) {
                // A device whose server died can leave the mount busy with I/O that never
                // ends; a lazy unmount detaches it so the rest can go.
                if run(
                    "umount",
                    Command::new("umount").arg("-l").arg(&spec.mountpoint),
                )
                .is_err()
                    // Already unmounted by its user (a suite reading the device's counters
                    // after the filesystem's last write): nothing left to do.
                    && is_mountpoint(&spec.mountpoint)
                {
                    problems.push(e.to_string());
                }
            }
            if !problems.is_empty() {
                // Still mounted: the device under it stays, and so does its state.
                let _ = state.save();
                return Err(step("down", problems.join("; ")));
            }
            state.mounted = false;
            let _ = state.save();
        }
    }
    if let Some(link) = state.device_link.take() {
        if std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()) {
            let _ = std::fs::remove_file(&link);
        }
        let _ = state.save();
    }
    if let Some(dev) = state.loop_device.clone() {
        let attached = run("losetup", Command::new("losetup").arg(&dev)).is_ok();
        if attached {
            if let Err(e) = run("losetup", Command::new("losetup").arg("-d").arg(&dev)) {
                problems.push(e.to_string());
            }
        }
        state.loop_device = None;
        let _ = state.save();
    }
    if let Some(fuse_dir) = state.fuse_dir.clone() {
        let unmounted = || {
            run(
                "fusermount3",
                Command::new("fusermount3").arg("-u").arg(&fuse_dir),
            )
            .is_ok()
        };
        if is_mountpoint(&fuse_dir) && !unmounted() {
            let _ = run("umount", Command::new("umount").arg("-l").arg(&fuse_dir));
        }
        if let Some(pid) = state.nbdfuse_pid {
            // The unmount ends it; one that hangs is killed.
            if !sinkrate_platform::child::wait_for_end(STOP_GRACE, &mut || alive(pid)) {
                sinkrate_platform::child::stop(
                    pid,
                    sinkrate_platform::child::Signal::Kill,
                    STOP_GRACE,
                    &mut || alive(pid),
                );
            }
        }
        let _ = std::fs::remove_dir(&fuse_dir);
        state.fuse_dir = None;
        let _ = state.save();
    }
    // The pid recorded, and any nbdkit still serving this device's socket (a crash between
    // starting it and recording its pid must not leave it running).
    let mut servers: Vec<i32> = state.nbdkit_pid.into_iter().collect();
    if let Some(socket) = &state.socket {
        servers.extend(processes_serving(socket));
    }
    servers.sort_unstable();
    servers.dedup();
    for pid in servers {
        // The nbdkit this stack started (its pid file named it).
        sinkrate_platform::child::stop(
            pid,
            sinkrate_platform::child::Signal::Term,
            STOP_GRACE,
            &mut || alive(pid),
        );
    }
    state.nbdkit_pid = None;
    if let Some(backing) = state.backing_created.take() {
        let _ = std::fs::remove_file(backing);
    }
    if let Some(spec) = &state.spec {
        settle_mountpoint(
            &spec.mountpoint,
            state.created_mountpoint && problems.is_empty(),
        );
    }
    if problems.is_empty() {
        let _ = std::fs::remove_dir_all(&state.state_dir);
        Ok(())
    } else {
        let _ = state.save();
        Err(step("down", problems.join("; ")))
    }
}

/// The last step of a teardown. A mount(8) that a killed owner had started can finish
/// while its device is taken down (the owner is gone, its mount is not): what got mounted
/// meanwhile is unmounted, and a mountpoint the stack made is removed, after which no
/// mount can land there (the kernel refuses a mount on a removed directory).
fn settle_mountpoint(mountpoint: &Path, remove: bool) {
    for _ in 0..20 {
        if is_mountpoint(mountpoint) {
            let _ = run("umount", Command::new("umount").arg("-l").arg(mountpoint));
        }
        let settled = if remove {
            match std::fs::remove_dir(mountpoint) {
                Ok(()) => true,
                Err(e) => e.kind() == std::io::ErrorKind::NotFound,
            }
        } else {
            !is_mountpoint(mountpoint)
        };
        if settled {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One recorded device and how it is doing.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    pub state: State,
    pub mounted: bool,
    pub nbdkit_alive: bool,
    pub nbdfuse_alive: bool,
}

pub fn list() -> Vec<Listed> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(state_root()) else {
        return out;
    };
    for e in entries.flatten() {
        if let Some(state) = State::load(&e.path()) {
            let mounted = state
                .spec
                .as_ref()
                .is_some_and(|s| is_mountpoint(&s.mountpoint));
            out.push(Listed {
                mounted,
                nbdkit_alive: state.nbdkit_pid.is_some_and(alive),
                nbdfuse_alive: state.nbdfuse_pid.is_some_and(alive),
                state,
            });
        }
    }
    out.sort_by(|a, b| a.state.state_dir.cmp(&b.state.state_dir));
    out
}
