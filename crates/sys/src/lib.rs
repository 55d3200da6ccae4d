//! The one system layer: every question of the form "what is this path stored on" is asked
//! here, through a [`SysRoot`] (the live `/` or a fixture tree captured from a board). The
//! mount resolver (bind mounts noted, overlays followed to their upper directory), the
//! sysfs device chain and USB path, swaps, the kernel's filesystems, statvfs, page size and
//! the root check. The engine's run header, record, watch's device choice and audit all use
//! it.

pub mod bdi;
pub mod children;
pub mod counters;
pub mod device;
pub mod disks;
pub mod files;
pub mod guard;
pub mod health;
pub mod host;
pub mod input;
pub mod kept;
pub mod kmsg;
pub mod mounts;
pub mod output;
pub mod owned;
pub mod process;
pub mod root;
pub mod settings_journal;
pub mod signature;
pub mod space;
pub mod swaps;
pub mod sysctl_conf;
#[cfg(target_os = "linux")]
pub mod tracefs;
pub mod usb;

pub use root::SysRoot;

/// Held by the unit tests that use this process's one registry of owned files (`owned`,
/// `output`): one test's `remove_all` must not take another's files.
#[cfg(test)]
pub(crate) static REGISTRY_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
pub(crate) fn registry_test() -> std::sync::MutexGuard<'static, ()> {
    let turn = REGISTRY_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    owned::begin_again();
    turn
}
pub use space::{free_bytes, space};

/// The directory named by `SINKRATE_STATE_DIR`, when it is set to an absolute path: where
/// the journals of the files each run made (`owned/`) and the state of emulated devices
/// (`emulate/`) live instead of under `/run/sinkrate` (or the temporary directory for a
/// user other than root). A test suite sets it so that what a run killed outside it left on
/// the machine neither shows in its runs' output nor is swept by them.
pub fn state_dir_override() -> Option<std::path::PathBuf> {
    std::env::var_os("SINKRATE_STATE_DIR")
        .map(std::path::PathBuf::from)
        .filter(|p| p.is_absolute())
}

/// A user's own state directory, kept across reboots: `$XDG_STATE_HOME`, else
/// `~/.local/state`; None without either.
pub fn user_state_home() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|home| home.join(".local/state"))
        })
}

/// Whether this process runs as root (settings, drop_caches and device writes need it).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Writes out what the filesystem holding `dir` has dirty (and commits its metadata), so a
/// measurement that follows is not charged for it. Without syncfs(2), the whole system's.
pub fn sync_filesystem(dir: &std::path::Path) {
    #[cfg(target_os = "linux")]
    if let Ok(d) = std::fs::File::open(dir) {
        // SAFETY: syncfs on a descriptor owned for the call.
        unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&d)) };
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        // SAFETY: sync has no preconditions.
        unsafe { libc::sync() };
    }
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

/// The clock ticks per second that /proc's CPU times count in (100 when unknown).
pub fn clock_ticks_per_s() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as u64
    } else {
        100
    }
}

/// The running kernel's release (`6.18.0-1-amd64`), as uname and /proc give it.
pub fn kernel_release() -> Option<String> {
    SysRoot::live().attr("/proc/sys/kernel/osrelease")
}

/// The major and minor numbers of a kernel release (`4.9.337-xilinx` is 4.9).
pub fn release_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse::<u32>().ok());
    Some((parts.next()?, parts.next()?))
}

/// Whether the running kernel is older than `major.minor`; false when it cannot be told.
pub fn kernel_older_than(major: u32, minor: u32) -> bool {
    kernel_release()
        .and_then(|r| release_version(&r))
        .is_some_and(|v| v < (major, minor))
}

/// Filesystems this kernel can mount (/proc/filesystems).
pub fn kernel_filesystems(root: &SysRoot) -> Vec<String> {
    root.read("/proc/filesystems")
        .map(|t| {
            t.lines()
                .filter_map(|l| l.split_whitespace().last().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
