//! Power cuts on an emulated card with a volatile write cache: the cut (sinkrate's plugin
//! loses the cache and fails every later request, so nothing the host sends afterwards,
//! unmount's flush included, reaches the image), and the power coming back (the filesystem
//! unmounted while the device is still dark, the power restored, the filesystem mounted
//! again from what the image kept, journal replay included).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::stack::{self, step, EmulateError, State};

/// A card that can lose its power: its state, and the files that cut it and report on it.
#[derive(Debug)]
pub struct Card {
    pub state: State,
    pub mountpoint: PathBuf,
    cut_file: PathBuf,
    stats_file: Option<PathBuf>,
    loop_device: PathBuf,
    /// The plugin's running total of lost cache bytes just before this cut.
    lost_before: AtomicU64,
}

use sinkrate_platform::power::Restored;

/// The emulated card whose filesystem holds `dir`, if it has a volatile write cache; else one
/// line saying what `--power-cut-at` needs.
pub fn card_holding(dir: &Path) -> Result<Card, String> {
    use std::os::unix::fs::MetadataExt;
    let need = "--power-cut-at needs a directory on an emulated card with a volatile write cache (sinkrate emulate up DIR --volatile-cache 8M)";
    let dir = stack::absolute(dir);
    let cards = crate::list();
    // A run killed between unmounting a dark card and mounting it again leaves it unmounted
    // (its directory then an empty one on the disk below): it is still the card under `dir`.
    let left_unmounted = cards.iter().position(|l| {
        !l.mounted
            && l.state
                .spec
                .as_ref()
                .is_some_and(|s| s.fs != "none" && dir.starts_with(&s.mountpoint))
    });
    let card = match left_unmounted {
        Some(k) => cards.into_iter().nth(k),
        None => {
            let dev = std::fs::metadata(&dir)
                .map_err(|e| format!("{}: {e}", dir.display()))?
                .dev();
            cards.into_iter().find(|l| {
                l.mounted
                    && l.state.spec.as_ref().is_some_and(|s| {
                        dir.starts_with(&s.mountpoint)
                            && std::fs::metadata(&s.mountpoint).is_ok_and(|m| m.dev() == dev)
                    })
            })
        }
    };
    let Some(card) = card else {
        return Err(format!("{need}; {} is not on one", dir.display()));
    };
    let state = card.state;
    let spec = state.spec.clone().ok_or_else(|| need.to_string())?;
    match (&state.power_cut_file, &state.loop_device) {
        (Some(cut), Some(loop_device)) if spec.device.volatile_cache_bytes > 0 => Ok(Card {
            mountpoint: spec.mountpoint.clone(),
            cut_file: cut.clone(),
            stats_file: state.device_stats.clone(),
            loop_device: loop_device.clone(),
            state,
            lost_before: AtomicU64::new(0),
        }),
        _ => Err(format!(
            "{need}; the card at {} has none (it was set up without --volatile-cache)",
            spec.mountpoint.display()
        )),
    }
}

impl Card {
    /// Whether the card is dark now, or its filesystem not mounted (a run killed after its
    /// cut, or between unmounting and mounting again, leaves it so): `restore` brings it back.
    pub fn needs_restore(&self) -> bool {
        self.cut_file.exists() || !stack::is_mountpoint(&self.mountpoint)
    }

    /// Cuts the power now.
    pub fn cut(&self) -> Result<(), EmulateError> {
        self.lost_before.store(
            self.stats_u64("cache_lost_bytes").unwrap_or(0),
            Ordering::Relaxed,
        );
        std::fs::write(&self.cut_file, b"")
            .map_err(|e| step("power cut", format!("{}: {e}", self.cut_file.display())))?;
        // The plugin notices at its next request; one read makes that the cut's instant, so
        // a write the host queues a moment later cannot slip in before it.
        let _ = read_one_sector(&self.loop_device);
        Ok(())
    }

    /// Unmounts the filesystem while the card is dark, restores the power and mounts it
    /// again as it was mounted.
    pub fn restore(&self) -> Result<Restored, EmulateError> {
        let spec = self
            .state
            .spec
            .as_ref()
            .ok_or_else(|| step("power back", "the card's state has no spec"))?;
        if stack::is_mountpoint(&self.mountpoint) {
            unmount(&self.mountpoint)?;
        }
        let cache_lost_bytes = self
            .stats_u64("cache_lost_bytes")
            .map(|total| total.saturating_sub(self.lost_before.load(Ordering::Relaxed)));
        std::fs::remove_file(&self.cut_file).or_else(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Ok(()),
            _ => Err(step(
                "power back",
                format!("{}: {e}", self.cut_file.display()),
            )),
        })?;
        let mut mount = crate::tools::mount_command(&spec.fs, &spec.mount_opts)
            .map_err(|e| step("mount", e))?;
        mount.arg(&self.loop_device).arg(&self.mountpoint);
        let mut log = sinkrate_sys::kmsg::KernelLog::mark();
        let mounted = stack::run("mount", &mut mount);
        let device = self.loop_device.display().to_string();
        let device = device.trim_start_matches("/dev/");
        let kernel_said: Vec<String> = log
            .as_mut()
            .map(|k| k.since())
            .unwrap_or_default()
            .into_iter()
            .filter(|m| m.contains(device))
            .collect();
        match mounted {
            Ok(_) => Ok(Restored {
                cache_lost_bytes,
                kernel_said,
            }),
            Err(e) if kernel_said.is_empty() => Err(e),
            Err(_) => Err(step(
                "mount",
                format!("the kernel says: {}", kernel_said.join("; ")),
            )),
        }
    }

    fn stats_u64(&self, key: &str) -> Option<u64> {
        let text = std::fs::read_to_string(self.stats_file.as_ref()?).ok()?;
        let value: serde_json::Value = serde_json::from_str(&text).ok()?;
        value.get(key)?.as_u64()
    }
}

fn read_one_sector(device: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(device)?;
    // O_DIRECT wants an aligned buffer: the 4 KiB-aligned part of an 8 KiB one.
    let mut space = vec![0u8; 8192];
    let at = space.as_ptr().align_offset(4096);
    f.read_at(&mut space[at..at + 4096], 0).map(|_| ())
}

/// Unmounts `mountpoint`, waiting out a moment of "busy" (a writer closing its last file).
/// Never lazily: a detached mount would keep the old superblock alive and the next mount
/// would share it instead of replaying the journal.
fn unmount(mountpoint: &Path) -> Result<(), EmulateError> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match stack::run("umount", Command::new("umount").arg(mountpoint)) {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

impl sinkrate_platform::power::PowerSwitch for Card {
    fn cut(&self) -> Result<(), String> {
        Card::cut(self).map_err(|e| e.to_string())
    }
    fn restore(&self) -> Result<Restored, String> {
        Card::restore(self).map_err(|e| e.to_string())
    }
}
