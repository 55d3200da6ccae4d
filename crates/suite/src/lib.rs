//! `sinkrate suite NAME`: each source document's experiments as one command. A suite runs
//! its conditions `runs` times (interleaved, so a slow minute on a shared machine falls on
//! every condition alike), keeps every run's figures, and returns the document's table with
//! the median and spread of each cell, plus what the document could not show.

pub mod devices;
use sinkrate_model::suite::{format, SuiteReport, SuiteRun};
pub mod suites;
mod workdir;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sinkrate_model::{Envelope, RunKind};
use sinkrate_record::session::{Session, SessionError};

pub use devices::{Card, Maker, ScratchDevice};
use sinkrate_model::suite::table::Unit;
pub use workdir::WorkDir;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SuiteName {
    RecordSize,
    Pregrow,
    Metadata,
    PageCache,
    Filesystems,
    BackgroundLoad,
    CaptureBuffers,
    PowerCut,
}

/// What `sinkrate suite list` prints for each suite.
pub struct SuiteInfo {
    pub name: SuiteName,
    pub id: &'static str,
    pub source: &'static str,
    pub about: &'static str,
    /// Why the suite needs root, when it does.
    pub needs_root: Option<&'static str>,
    /// Runs the user's recording (record flags after --) instead of its default one.
    pub takes_recording: bool,
}

pub const SUITES: &[SuiteInfo] = &[
    SuiteInfo {
        name: SuiteName::RecordSize,
        id: "record-size",
        source: "seed 002 (QNX: record size, file descriptor vs standard I/O, setvbuf)",
        about: "write rate and CPU against the record size, 512 B to 1 MiB, for write(2), stdio and stdio with setvbuf(64 KiB)",
        needs_root: None,
        takes_recording: false,
    },
    SuiteInfo {
        name: SuiteName::Pregrow,
        id: "pregrow",
        source: "seed 002 (QNX: pregrowing a file)",
        about: "a recording-sized file appended, ftruncate'd, fallocate'd or pregrown with zeros first: rate and worst write",
        needs_root: None,
        takes_recording: false,
    },
    SuiteInfo {
        name: SuiteName::Metadata,
        id: "metadata",
        source: "seed 002 (QNX: commit level, files created and deleted per second)",
        about: "files created and deleted per second and the worst create: no sync, fsync each, O_DSYNC, dirsync and sync mounts (the mounts as root)",
        needs_root: None,
        takes_recording: false,
    },
    SuiteInfo {
        name: SuiteName::PageCache,
        id: "page-cache",
        source: "seed 000 (NVIDIA DRIVE: 483 MB/s buffered vs 386 MB/s sustained)",
        about: "one sequential write measured short buffered, long buffered, with its fsync counted, and direct",
        needs_root: Some("the dirty limit is lowered for the run (journaled, restored) so the page cache fills"),
        takes_recording: false,
    },
    SuiteInfo {
        name: SuiteName::Filesystems,
        id: "filesystems",
        source: "seed 003 (RTEMS: one fio workload on each filesystem)",
        about: "one recording on emulated cards of one model, formatted ext4 (ordered, writeback, no journal), xfs, btrfs, f2fs, FAT32, exFAT",
        needs_root: Some("each filesystem is made on its own emulated or scratch device"),
        takes_recording: true,
    },
    SuiteInfo {
        name: SuiteName::BackgroundLoad,
        id: "background-load",
        source: "seed 000 (NVIDIA DRIVE: benchmark under background load)",
        about: "a recording alone, then beside a reader, a second writer and a CPU hog on the same device",
        needs_root: None,
        takes_recording: true,
    },
    SuiteInfo {
        name: SuiteName::CaptureBuffers,
        id: "capture-buffers",
        source: "seed 004 (uvcvideo: buffer strategies A-F, average/min/max per condition)",
        about: "capture pool sizes, copy vs write from the capture buffer, write size, one writer vs one per stream, via compare",
        needs_root: None,
        takes_recording: true,
    },
    SuiteInfo {
        name: SuiteName::PowerCut,
        id: "power-cut",
        source: "power cuts on a card with a volatile write cache (dashcams lose the last minutes before a crash)",
        about: "buffered, buffered with 1 s writeback, fdatasync every 1 s and 0.2 s, direct, direct with fdatasync, dsync: write latency, and the frames on the card after a cut",
        needs_root: Some("each row's card is emulated, its power cut and restored, its filesystem mounted again"),
        takes_recording: true,
    },
];

impl SuiteName {
    pub fn info(self) -> &'static SuiteInfo {
        SUITES.iter().find(|s| s.name == self).unwrap_or(&SUITES[0])
    }
    pub fn id(self) -> &'static str {
        self.info().id
    }
    /// The suite called `id`, or the one-line list of names.
    pub fn find(id: &str) -> Result<SuiteName, String> {
        SUITES
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.name)
            .ok_or_else(|| {
                let ids: Vec<&str> = SUITES.iter().map(|s| s.id).collect();
                format!(
                "'{id}' is not a suite (the suites: {}; sinkrate suite list says what each does)",
                ids.join(", ")
            )
            })
    }
}

#[derive(Debug, Clone)]
pub struct SuiteConfig {
    pub suite: SuiteName,
    /// A directory on the storage under test (absolute).
    pub dir: PathBuf,
    pub runs: usize,
    pub quick: bool,
    /// The recording the suites that record use: the user's (record flags after --) or the
    /// suite's default, with its directory set by the suite.
    pub recording: Session,
    /// The user gave the recording (it replaces the suite's default workload).
    pub recording_given: bool,
    /// Where suites that format filesystems make them.
    pub scratch: Option<ScratchDevice>,
    /// The preset card for emulated devices when `dir` is not on one.
    pub model: String,
    /// Every run's own JSON is written here, when set.
    pub runs_dir: Option<PathBuf>,
}

impl SuiteConfig {
    /// The runs of each condition: one with --quick.
    pub fn runs_each(&self) -> usize {
        if self.quick {
            1
        } else {
            self.runs.max(1)
        }
    }

    /// The size of a suite's test file (pregrow's file, background-load's reader's):
    /// 32 MiB with --quick, else 128 MiB.
    pub fn test_file_bytes(&self) -> u64 {
        if self.quick {
            32 << 20
        } else {
            128 << 20
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("{0}")]
    Usage(String),
    #[error(
        "suite {suite} needs root: {why} (run it as root; the suites that run without: {without})"
    )]
    NeedsRoot {
        suite: &'static str,
        why: &'static str,
        without: String,
    },
    #[error("{0}")]
    Failed(String),
    #[error(transparent)]
    Recording(#[from] SessionError),
    #[error("the suite was interrupted; its files are removed and its settings restored")]
    Interrupted,
}

impl From<writer::WriteError> for SuiteError {
    fn from(e: writer::WriteError) -> SuiteError {
        match e {
            writer::WriteError::Interrupted => SuiteError::Interrupted,
            other => SuiteError::Failed(other.to_string()),
        }
    }
}

use sinkrate_sys::is_root;

/// What a running suite has at hand.
pub struct Ctx<'a> {
    pub cfg: &'a SuiteConfig,
    pub stop: Arc<AtomicBool>,
    progress: &'a mut dyn FnMut(&str),
    pub notes: Vec<String>,
    pub settings_changed: Vec<String>,
    pub run_files: Vec<String>,
    pub made_on: Option<String>,
}

impl Ctx<'_> {
    pub fn phase(&mut self, what: &str) {
        (self.progress)(what);
    }
    pub fn check_stop(&self) -> Result<(), SuiteError> {
        if self.stop.load(Ordering::Relaxed) {
            Err(SuiteError::Interrupted)
        } else {
            Ok(())
        }
    }
    /// Keeps one run's JSON in the runs directory, named after the suite, row and run.
    pub fn keep_run(
        &mut self,
        row: &str,
        run: usize,
        figures: &impl Serialize,
    ) -> Result<(), SuiteError> {
        let Some(dir) = &self.cfg.runs_dir else {
            return Ok(());
        };
        let json = serde_json::to_vec_pretty(figures)
            .map_err(|e| SuiteError::Failed(format!("the run's JSON: {e}")))?;
        let slug: String = row
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        let path = dir.join(format!(
            "{}-{}-run{}.json",
            self.cfg.suite.id(),
            slug.trim_matches('-'),
            run + 1
        ));
        sinkrate_sys::output::result(&path, &json)
            .map_err(|e| SuiteError::Failed(format!("{}: {e}", path.display())))?;
        self.run_files.push(path.display().to_string());
        Ok(())
    }
    /// The runs to make of each condition.
    pub fn runs(&self) -> usize {
        self.cfg.runs_each()
    }
}

/// The refusal, before anything is done, of a suite this user cannot run.
pub fn preflight(cfg: &SuiteConfig) -> Result<(), SuiteError> {
    let info = cfg.suite.info();
    if let (Some(why), false) = (info.needs_root, is_root()) {
        let without: Vec<&str> = SUITES
            .iter()
            .filter(|s| s.needs_root.is_none())
            .map(|s| s.id)
            .collect();
        return Err(SuiteError::NeedsRoot {
            suite: info.id,
            why,
            without: without.join(", "),
        });
    }
    if cfg.runs == 0 {
        return Err(SuiteError::Usage(
            "--runs 0: at least 1 (3 gives a median and a spread)".into(),
        ));
    }
    if !cfg.dir.is_dir() {
        return Err(SuiteError::Usage(format!(
            "{}: not a directory (give a directory on the storage to test)",
            cfg.dir.display()
        )));
    }
    if !sinkrate_sys::files::writable(&cfg.dir) {
        return Err(SuiteError::Usage(format!(
            "{}: not writable by this user (run as its owner or as root)",
            cfg.dir.display()
        )));
    }
    if let Some(s) = &cfg.scratch {
        if !is_root() {
            return Err(SuiteError::Usage(format!(
                "--scratch {}: formatting and mounting it needs root (run as root, or leave out --scratch)",
                s.path.display()
            )));
        }
        devices::scratch_guard(s).map_err(SuiteError::Usage)?;
    }
    suites::preflight(cfg)
}

/// Seconds the suite is expected to take.
pub fn estimate_s(cfg: &SuiteConfig) -> f64 {
    suites::estimate_s(cfg)
}

/// The device rate the estimates assume: the emulated card under the directory, else a
/// 10 MB/s card (a class-10 SD card, the slowest the suites are sized for).
pub fn assumed_rate(dir: &Path) -> f64 {
    devices::emulated_card_of(dir).map_or(10e6, |c| c.rate_bytes_per_s as f64)
}

pub fn run(
    cfg: &SuiteConfig,
    stop: Arc<AtomicBool>,
    progress: &mut dyn FnMut(&str),
) -> Result<SuiteRun, SuiteError> {
    preflight(cfg)?;
    // Settings a crashed run left changed go back first (the journal says which).
    sinkrate_record::session::restore_left_over_settings()?;
    let started = Instant::now();
    let started_ms = sinkrate_sys::host::unix_ms_now();
    let device_count = sinkrate_sys::disks::WrittenSince::start(&cfg.dir, false);
    let estimate = estimate_s(cfg);
    let mut ctx = Ctx {
        cfg,
        stop,
        progress,
        notes: Vec::new(),
        settings_changed: Vec::new(),
        run_files: Vec::new(),
        made_on: None,
    };
    let tables = suites::run(&mut ctx)?;
    let info = cfg.suite.info();
    let mut notes = ctx.notes;
    for t in &tables {
        for r in &t.rows {
            for (c, cell) in t.columns.iter().zip(&r.cells) {
                // Times under 10 ms are the scheduler's noise more than the device's.
                let noise = c.unit == Unit::Seconds && cell.max.is_some_and(|m| m < 0.01);
                if !noise && cell.values.len() >= 3 && cell.spread_ratio().is_some_and(|s| s > 0.5)
                {
                    notes.push(format!(
                        "{} / {}: the runs differ by more than half the median ({} to {}): a busy machine or a device that changes its speed; more --runs narrow it",
                        r.label,
                        c.title,
                        format::value(c.unit, cell.min.unwrap_or_default()),
                        format::value(c.unit, cell.max.unwrap_or_default())
                    ));
                }
            }
        }
    }
    let report = SuiteReport {
        suite: info.id.into(),
        source: info.source.into(),
        about: info.about.into(),
        dir: cfg.dir.display().to_string(),
        target: sinkrate_sys::host::target_facts(&cfg.dir, false),
        made_on: ctx.made_on,
        quick: cfg.quick,
        runs: cfg.runs_each(),
        estimate_s: estimate,
        elapsed_s: started.elapsed().as_secs_f64(),
        tables,
        settings_changed: ctx.settings_changed,
        notes,
        run_files: ctx.run_files,
        device_bytes_written: device_count.bytes(),
    };
    Ok(Envelope::new(
        RunKind::Suite,
        sinkrate_sys::host::host_facts(),
        started_ms,
        report,
    ))
}
