//! `sinkrate verify --capacity DEVICE`: is the capacity real? A fast probe in the spirit of
//! f3probe on an unmounted device (see `probe`), with every place it overwrites saved in an
//! undo journal first and put back at the end (`undo`), unless `--destructive`.

pub mod fill;
pub mod probe;
pub mod undo;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, FileTypeExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::session::VerifyError;
use sinkrate_model::verify::{Behaviour, CapacityReport, CapacityVerdict, WrapEvidence};

#[derive(Debug, Clone)]
pub struct CapacityConfig {
    /// An unmounted block device.
    pub target: PathBuf,
    /// Do not save and put back what the probe overwrites.
    pub destructive: bool,
    /// Probe a device that holds a filesystem signature (its blocks are still put back).
    pub force: bool,
    pub undo_dir: PathBuf,
}

struct BlockDevice {
    file: File,
}

impl probe::Device for BlockDevice {
    fn read_at(&mut self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }
    fn write_at(&mut self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        self.file.write_all_at(buf, offset)
    }
    fn sync(&mut self) -> std::io::Result<()> {
        self.file.sync_data()
    }
}

/// Opened for the probe: O_DIRECT so the page cache cannot hide a wrap, O_EXCL so nothing
/// mounts it meanwhile (and a device held by a mount or another exclusive opener refuses).
fn open_exclusive(path: &Path) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true);
    #[cfg(target_os = "linux")]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut o, libc::O_DIRECT | libc::O_EXCL);
    o.open(path)
}

/// Decimal, as cards are labelled, with the binary size beside it.
pub fn bytes_words(n: u64) -> String {
    let decimal = if n >= 1_000_000_000 {
        format!("{:.2} GB", n as f64 / 1e9)
    } else {
        format!("{:.1} MB", n as f64 / 1e6)
    };
    format!("{decimal} ({})", sinkrate_units::product::bytes_binary(n))
}

fn verdict_words(o: &probe::Outcome) -> (CapacityVerdict, String) {
    let real = bytes_words(o.real_bytes);
    let reported = bytes_words(o.reported_bytes);
    match o.behaviour {
        Behaviour::Genuine => (
            CapacityVerdict::Genuine,
            format!(
                "this device holds the {reported} it reports: every probe kept its data ({} written at the start, {} 4 KiB probes up to its end)",
                sinkrate_units::product::bytes_binary(o.low_region_bytes),
                o.units_written.saturating_sub(o.low_region_bytes / probe::UNIT)
            ),
        ),
        Behaviour::Wraps => (
            CapacityVerdict::Fake,
            format!(
                "this card holds {real}, not the {reported} it reports: writes past {real} overwrite the start"
            ),
        ),
        Behaviour::Drops => (
            CapacityVerdict::Fake,
            format!(
                "this card holds {real}, not the {reported} it reports: writes past {real} are lost (they read back as zeros or old data)"
            ),
        ),
        Behaviour::Damages => (
            CapacityVerdict::Fake,
            format!(
                "this device loses data near its start: the sector at {} did not read back as written",
                bytes_words(o.real_bytes)
            ),
        ),
    }
}

/// Plays back journals that runs killed half-way left, where their device is back and not
/// in use. Returns one line per journal: what was put back, or why it waits.
pub fn recover_pending(dir: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut said = Vec::new();
    for path in undo::pending(dir) {
        // Held until this journal is done with: no other run plays it back meanwhile.
        let _claimed = match undo::claim(&path) {
            Ok(Some(file)) => file,
            // A probe running now (another verify --capacity): its own to put back.
            Ok(None) => continue,
            Err(e) => {
                said.push(format!(
                    "{}: not a usable undo journal ({e})",
                    path.display()
                ));
                continue;
            }
        };
        let saved = match undo::read(&path) {
            Ok(s) => s,
            Err(e) => {
                said.push(e);
                continue;
            }
        };
        let dev = saved.device.display().to_string();
        let same = std::fs::metadata(&saved.device).is_ok_and(|m| m.rdev() == saved.rdev)
            && sinkrate_sys::files::block_device_size(&saved.device).is_ok_and(|s| s == saved.size);
        if !same {
            said.push(format!(
                "a killed capacity probe left {} to put back on {dev}, which is not here now (the journal is kept: {})",
                sinkrate_units::product::bytes_binary(saved.records.iter().map(|r| r.1.len() as u64).sum()),
                path.display()
            ));
            continue;
        }
        let played = open_exclusive(&saved.device).and_then(|file| {
            let mut d = BlockDevice { file };
            match undo::written_since(&saved, &mut d)? {
                Some(at) => Ok(Err(at)),
                None => undo::play_back(&saved, &mut d).map(Ok),
            }
        });
        match played {
            Ok(Err(at)) => said.push(format!(
                "a killed capacity probe left {} to put back on {dev}, but {dev} was written since (at byte {at} it holds neither the probe's data nor what was there before: a new filesystem?): nothing was put back; the journal is kept: {} (remove it once {dev} holds nothing you want restored)",
                sinkrate_units::product::bytes_binary(saved.records.iter().map(|r| r.1.len() as u64).sum()),
                path.display()
            )),
            Ok(Ok(bytes)) => {
                let _ = std::fs::remove_file(&path);
                said.push(format!(
                    "put back {} on {dev} that a killed capacity probe had overwritten",
                    sinkrate_units::product::bytes_binary(bytes)
                ));
            }
            Err(e) => said.push(format!(
                "a killed capacity probe left data to put back on {dev}, which cannot be opened now ({e}); the journal is kept: {}",
                path.display()
            )),
        }
    }
    said
}

/// Runs the probe. Refusals come back as errors before anything is written; a probe that
/// started yields a report (verdict `failed` with the error when it could not finish), after
/// its undo journal was played back.
pub fn run(
    cfg: &CapacityConfig,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<CapacityReport, VerifyError> {
    let target = &cfg.target;
    let meta = std::fs::metadata(target)
        .map_err(|_| VerifyError::NotFound(target.display().to_string()))?;
    if !meta.file_type().is_block_device() {
        return Err(VerifyError::CapacityNeedsDevice(
            target.display().to_string(),
        ));
    }
    let device = std::fs::canonicalize(target).map_err(crate::session::io(target))?;
    if let Some(reason) =
        sinkrate_sys::guard::block_device_in_use(&sinkrate_sys::SysRoot::live(), &device)
            .map_err(crate::session::io(&device))?
    {
        if !cfg.force {
            return Err(VerifyError::Refused(format!(
                "refusing to probe {}: {reason} (--force probes it anyway, saving what it overwrites and putting it back{})",
                device.display(),
                if cfg.destructive { "; not with --destructive" } else { "" }
            )));
        }
    }
    let size = crate::session::device_size(&device)?;
    if size < probe::MIN_DEVICE {
        return Err(VerifyError::TooSmall {
            what: device.display().to_string(),
            available: size,
            block: probe::MIN_DEVICE as usize,
        });
    }
    let file = open_exclusive(&device).map_err(|e| match e.raw_os_error() {
        Some(libc::EBUSY) => VerifyError::DeviceInUse {
            device: device.display().to_string(),
            reason: "it is in use (mounted, or held open exclusively by another program)".into(),
        },
        _ => crate::session::io(&device)(e),
    })?;
    let run_id = crate::session::new_run_id();
    let mut dev = BlockDevice { file };
    let mut journal = if cfg.destructive {
        None
    } else {
        Some(
            undo::Journal::create(&cfg.undo_dir, &device, size, run_id).map_err(|e| {
                VerifyError::Undo(format!(
                    "cannot keep the undo journal in {}: {e} (--destructive probes without saving what it overwrites)",
                    cfg.undo_dir.display()
                ))
            })?,
        )
    };
    let started = Instant::now();
    let stopped = || stop.load(Ordering::Relaxed);
    let outcome = {
        let mut no_undo = probe::NoUndo;
        let before: &mut dyn probe::BeforeWrite = match journal.as_mut() {
            Some(j) => j,
            None => &mut no_undo,
        };
        probe::Probe::new(&mut dev, before, run_id, size, &stopped, on_progress).run()
    };
    let restore = match journal {
        None => "destructive".to_string(),
        Some(j) => {
            // Read back and removed while still locked: no other run takes it meanwhile.
            let path = j.path.clone();
            let restore = match undo::read(&path).and_then(|saved| {
                undo::play_back(&saved, &mut dev)
                    .map_err(|e| format!("{}: putting back: {e}", device.display()))
            }) {
                Ok(_) => {
                    let _ = std::fs::remove_file(&path);
                    "restored".to_string()
                }
                Err(e) => format!(
                    "not restored: {e}; the journal is kept and the next sinkrate verify plays it back ({})",
                    path.display()
                ),
            };
            drop(j);
            restore
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let outcome = match outcome {
        Ok(o) => o,
        Err(probe::ProbeError::Interrupted) => return Err(VerifyError::Interrupted),
        Err(probe::ProbeError::Io(what, at, e)) => {
            let error = format!("{what} {} at byte {at}: {e}", device.display());
            return Ok(CapacityReport {
                target: device.display().to_string(),
                reported_bytes: size,
                real_bytes: 0,
                behaviour: None,
                verdict: CapacityVerdict::Failed,
                verdict_text: format!("the probe could not finish: {error}"),
                wrap_evidence: None,
                low_region_bytes: probe::low_region(size),
                units_written: 0,
                bytes_written: 0,
                read_method: "O_DIRECT".into(),
                restore,
                seconds,
                error: Some(error),
            });
        }
    };
    let (verdict, verdict_text) = verdict_words(&outcome);
    Ok(CapacityReport {
        target: device.display().to_string(),
        reported_bytes: outcome.reported_bytes,
        real_bytes: outcome.real_bytes,
        behaviour: Some(outcome.behaviour),
        verdict,
        verdict_text,
        wrap_evidence: outcome.wrap_evidence.map(|(w, f)| WrapEvidence {
            written_at_bytes: w,
            found_at_bytes: f,
        }),
        low_region_bytes: outcome.low_region_bytes,
        units_written: outcome.units_written,
        bytes_written: outcome.bytes_written,
        read_method: "O_DIRECT, after fdatasync of the device".into(),
        restore,
        seconds,
        error: None,
    })
}
