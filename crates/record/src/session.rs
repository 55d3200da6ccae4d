//! A whole recording as one library call: the checks that refuse before any byte is
//! written (capture pools against memory, the recording against free space, root for dirty
//! limits), the dirty limits journaled and restored, the sampler, the streams, the evidence,
//! the verdict and the typed report. `sinkrate record`, `check` and `find-max` all call
//! [`run`]; none of them reads another's printed output.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sinkrate_model::health::{Endurance, Lifetime};
use sinkrate_model::record::{
    DeviceFailure, DirtyLimits, FrameColumns, Interval, RecordConfig, RecordReport, RecordRun,
    RestoredSetting, SamplerSection, StallReport, StreamReport, Totals, WriteMode,
};
use sinkrate_model::timeline::Sample;
use sinkrate_model::{Envelope, RunError, RunKind, TargetFacts};
use sinkrate_sampler::{analyse, Sampler, SamplerConfig, SamplerOutput};
use sinkrate_stats::{LatencyDistribution, LatencyRecorder};

use crate::stream::StreamResult;
use crate::verdict::{decide, Evidence};

/// Where the journal of temporarily changed settings lives.
pub const SETTINGS_JOURNAL: &str = sinkrate_model::settings::DEFAULT_JOURNAL;

/// Everything a recording session needs besides the stop flag.
#[derive(Debug, Clone)]
pub struct Session {
    pub record: RecordConfig,
    /// The streams in words, for the report.
    pub label: String,
    /// (vm.dirty_bytes, vm.dirty_background_bytes) for the run: a smaller board's limits.
    pub dirty_limits: Option<(u64, u64)>,
    /// A sustained rate measured before the run (check's probe), for the verdict.
    pub sustained_bytes_per_s: Option<f64>,
    /// The RAM of the board being rehearsed (`--ram-limit`): the capture pools and the
    /// sampler's timeline are sized to it instead of to this host.
    pub board_ram_bytes: Option<u64>,
    /// What `record.power_cut_at` cuts (an emulated card), supplied by the caller.
    pub power_switch: Option<std::sync::Arc<dyn sinkrate_platform::power::PowerSwitch>>,
    /// Where the lifetime estimate takes the device's endurance from.
    pub endurance: EnduranceFrom,
    /// The recorder's duty cycle for the lifetime estimate (`--hours-per-day`).
    pub hours_per_day: f64,
    /// Why the kernel's events are not to be read for this run (`--no-kernel-events`); None:
    /// read them where the kernel allows.
    pub kernel_events_off: Option<String>,
}

/// Where a recording's lifetime estimate takes the device's endurance from.
#[derive(Debug, Clone, PartialEq)]
pub enum EnduranceFrom {
    /// Given (`--endurance`), or already read of the device by the caller (check's audit);
    /// None when the device keeps no account of its own.
    Known(Option<Endurance>),
    /// The device's own account, read as the recording starts (SMART through smartctl,
    /// bounded by 10 s; an emulated card's).
    Device,
}

impl EnduranceFrom {
    /// The user's endurance when given, else the device's.
    pub fn given(endurance: Option<Endurance>) -> EnduranceFrom {
        endurance.map_or(EnduranceFrom::Device, |e| EnduranceFrom::Known(Some(e)))
    }
}

/// The duty cycle assumed when none is given: a recorder that never stops.
pub const DEFAULT_HOURS_PER_DAY: f64 = 24.0;

/// What a board with `ram` bytes has available to programs, about: what its kernel, page
/// tables and the system's own services leave (a quarter of a small board's memory).
pub fn board_available_bytes(ram: u64) -> u64 {
    ram / 4 * 3
}

/// The sizes a run takes from the memory it has, in words for the run's notices.
pub fn memory_sizing(s: &Session) -> Option<String> {
    let ram = s.board_ram_bytes?;
    Some(format!(
        "sized for a board with {:.0} MB of RAM: capture pools up to {:.0} MB (half of the {:.0} MB it would have available), the sampler's timeline up to {:.1} MB",
        ram as f64 / 1e6,
        board_available_bytes(ram) as f64 / 2e6,
        board_available_bytes(ram) as f64 / 1e6,
        sinkrate_sampler::timeline::budget_bytes(Some(ram)) as f64 / 1e6
    ))
}

/// What refused a recording before it started. The texts name no command-line flag: each
/// caller adds the hint that fits its own flags.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("--write-mode uring needs io_uring, and {0}: use --write-mode direct (O_DIRECT, one write at a time) or buffered")]
    NoIoUring(String),
    #[error("the capture pools need {needed_gb:.1} GB ({buffers} buffers of up to {frame_bytes} bytes per stream), more than half of the {available_gb:.1} GB available")]
    PoolTooLarge {
        needed_gb: f64,
        buffers: usize,
        frame_bytes: u64,
        available_gb: f64,
    },
    #[error("{dir}: the recording needs about {needed_gb:.2} GB ({rate_mb:.1} MB/s for {seconds:.0} s{}) and the file system has {free_gb:.2} GB free", preallocated_text(*preallocate_gb))]
    NoSpace {
        dir: String,
        needed_gb: f64,
        rate_mb: f64,
        seconds: f64,
        /// What --preallocate adds for all streams.
        preallocate_gb: f64,
        free_gb: f64,
    },
    #[error(
        "{dir} is on {fs_type}, a kernel interface, not storage: nothing can be recorded there"
    )]
    NotStorage { dir: String, fs_type: String },
    #[error("{0}: not a directory")]
    NotADirectory(String),
    #[error("{0} is on a file system mounted read-only now: a worn-out card, a write-protect switch, or the kernel's answer to write errors (see dmesg); nothing can be recorded there")]
    ReadOnly(String),
    #[error("{0} exists (a recording kept with --keep?): a recording never overwrites a file; move it away or record into another directory")]
    RecordingExists(String),
    #[error("the dirty limit would be {0} bytes; the kernel needs at least 256 KiB")]
    DirtyLimitTooSmall(u64),
    #[error("setting vm.dirty_bytes for the run needs root")]
    NeedsRoot,
    #[error("setting the run's dirty limits: {0}")]
    Settings(String),
    #[error("restoring the settings of an earlier, interrupted run: {0}")]
    LeftOverSettings(String),
}

fn preallocated_text(gb: f64) -> String {
    if gb > 0.0 {
        format!(", plus {gb:.2} GB preallocated")
    } else {
        String::new()
    }
}

/// What the live line shows, once a second.
#[derive(Debug, Clone, Default)]
pub struct LiveStatus {
    pub elapsed: Duration,
    pub frames_written_in_second: u64,
    pub fps_total: f64,
    pub frames_dropped: u64,
    pub pool_in_use: usize,
    pub buffers: usize,
    pub bytes_written_in_second: u64,
    pub worst_write_ns: u64,
    pub dirty_bytes: Option<u64>,
    pub writeback_bytes: Option<u64>,
}

/// Settings a killed run left changed go back first; returns what was restored and what was
/// left alone (changed since by someone else).
pub fn restore_left_over_settings() -> Result<sinkrate_model::settings::Outcome, SessionError> {
    if !Path::new(SETTINGS_JOURNAL).exists() || !sinkrate_sys::host::is_root() {
        return Ok(sinkrate_model::settings::Outcome::default());
    }
    sinkrate_settings::Journal::live()
        .recover()
        .map_err(|e| SessionError::LeftOverSettings(e.to_string()))
}

/// The dirty limits a board with `ram` bytes would have with this host's settings:
/// the same ratios of its memory, or the same absolute limits when the host sets bytes.
pub fn board_dirty_limits(ram: u64) -> (u64, u64) {
    let s = sinkrate_sampler::live::read_vm_settings();
    let dirty = match s.dirty_bytes.filter(|b| *b > 0) {
        Some(b) => b.min(ram),
        None => ram * s.dirty_ratio.unwrap_or(20) / 100,
    };
    let background = match s.dirty_background_bytes.filter(|b| *b > 0) {
        Some(b) => b.min(dirty / 2),
        None => ram * s.dirty_background_ratio.unwrap_or(10) / 100,
    };
    (dirty, background)
}

/// A recording that passed its checks, with its target resolved: what [`run_checked`]
/// records with (the target is resolved once a run, and handed down).
pub struct Checked {
    target: sinkrate_sys::host::ResolvedTarget,
}

/// Every check that can refuse the recording, before anything is written or changed.
pub fn preflight(s: &Session) -> Result<Checked, SessionError> {
    let cfg = &s.record;
    if !cfg.dir.is_dir() {
        return Err(SessionError::NotADirectory(cfg.dir.display().to_string()));
    }
    let target = sinkrate_sys::host::resolve_target(&cfg.dir, false);
    if let Some(fs_type) = target
        .facts
        .fs_type
        .clone()
        .filter(|f| sinkrate_sys::mounts::PSEUDO_FS.contains(&f.as_str()))
    {
        return Err(SessionError::NotStorage {
            dir: cfg.dir.display().to_string(),
            fs_type,
        });
    }
    if cfg.write_mode == WriteMode::Uring {
        if let Some(reason) = sinkrate_platform::uring::unavailable() {
            return Err(SessionError::NoIoUring(reason));
        }
    }
    let staging = if cfg.write_mode == WriteMode::Uring {
        cfg.queue_depth as u64
    } else {
        0
    };
    let pool_bytes: u64 = cfg
        .streams
        .iter()
        .map(|st| st.max_frame_bytes() * (cfg.buffers as u64 + staging))
        .sum();
    let host_available = sinkrate_sys::host::read_meminfo()
        .mem_available_bytes
        .unwrap_or(u64::MAX);
    let available = s.board_ram_bytes.map_or(host_available, |ram| {
        board_available_bytes(ram).min(host_available)
    });
    if pool_bytes > available / 2 {
        return Err(SessionError::PoolTooLarge {
            needed_gb: pool_bytes as f64 / 1e9,
            buffers: cfg.buffers,
            frame_bytes: cfg
                .streams
                .iter()
                .map(sinkrate_model::record::StreamSpec::max_frame_bytes)
                .max()
                .unwrap_or(0),
            available_gb: available as f64 / 1e9,
        });
    }
    let requested = cfg.requested_bytes_per_s();
    let preallocated = cfg
        .preallocate
        .unwrap_or(0)
        .saturating_mul(cfg.streams.len() as u64);
    let needed = if cfg.write_mode == WriteMode::Null {
        0
    } else {
        ((requested * cfg.duration.as_secs_f64() * 1.02) as u64).saturating_add(preallocated)
    };
    if let (Ok(free), None) = (
        sinkrate_engine::files::free_bytes(&cfg.dir),
        cfg.segments.loop_fill_pct,
    ) {
        if needed > free {
            return Err(SessionError::NoSpace {
                dir: cfg.dir.display().to_string(),
                needed_gb: needed as f64 / 1e9,
                rate_mb: requested / 1e6,
                seconds: cfg.duration.as_secs_f64(),
                preallocate_gb: preallocated as f64 / 1e9,
                free_gb: free as f64 / 1e9,
            });
        }
    }
    if cfg.write_mode != WriteMode::Null {
        if let Some(existing) = existing_recording(cfg) {
            // A worn card the kernel remounted read-only keeps the file its last recording
            // could not remove: the card is the news, not the file. (Without such a file,
            // the run itself fails on the read-only card and reports FAILED with the
            // kernel's word.)
            if sinkrate_sys::space::read_only(&cfg.dir) {
                return Err(SessionError::ReadOnly(cfg.dir.display().to_string()));
            }
            return Err(SessionError::RecordingExists(
                existing.display().to_string(),
            ));
        }
    }
    if let Some((dirty, _)) = s.dirty_limits {
        if dirty < 4096 * 64 {
            return Err(SessionError::DirtyLimitTooSmall(dirty));
        }
        if !sinkrate_sys::host::is_root() {
            return Err(SessionError::NeedsRoot);
        }
    }
    Ok(Checked { target })
}

/// A file in the directory with a name one of the streams would write (a recording kept
/// from an earlier run): the recording's own names are truncated on open.
fn existing_recording(cfg: &RecordConfig) -> Option<PathBuf> {
    let entries = std::fs::read_dir(&cfg.dir).ok()?;
    let names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    cfg.streams.iter().find_map(|st| {
        let whole = format!("sinkrate-record-{}.bin", st.name);
        let segment = format!("sinkrate-record-{}-", st.name);
        names
            .iter()
            .find(|n| **n == whole || (n.starts_with(&segment) && n.ends_with(".bin")))
            .map(|n| cfg.dir.join(n))
    })
}

/// Runs the recording and judges it. Errors are refusals before any work; a recording that
/// started always yields a report, with a `failed` verdict when a stream hit an error.
pub fn run(
    s: &Session,
    stop: Arc<AtomicBool>,
    on_second: Option<&mut dyn FnMut(&LiveStatus)>,
) -> Result<RecordRun, SessionError> {
    let checked = preflight(s)?;
    run_checked(s, checked, stop, on_second)
}

/// [`run`] for a recording its caller checked already ([`preflight`]), with the target
/// that check resolved.
pub fn run_checked(
    s: &Session,
    checked: Checked,
    stop: Arc<AtomicBool>,
    on_second: Option<&mut dyn FnMut(&LiveStatus)>,
) -> Result<RecordRun, SessionError> {
    let cfg = &s.record;
    let sinkrate_sys::host::ResolvedTarget {
        facts: target,
        mount,
    } = checked.target;
    // Journaled before the change; restored when `_limits_guard` drops, whatever happens.
    let mut restored = Vec::new();
    let _limits_guard = match s.dirty_limits {
        Some((dirty, background)) => {
            use sinkrate_model::tunables::Assignment;
            let guard = sinkrate_settings::Temporary::apply(
                &sinkrate_settings::Journal::live(),
                &[
                    Assignment::sysctl("vm.dirty_bytes", dirty),
                    Assignment::sysctl("vm.dirty_background_bytes", background),
                ],
            )
            .map_err(|e| SessionError::Settings(e.to_string()))?;
            restored = guard
                .entries()
                .iter()
                .map(|e| RestoredSetting {
                    name: e.setting.to_string().replace('.', "/"),
                    original: e.original.clone(),
                })
                .collect();
            Some(guard)
        }
        None => None,
    };
    // What the device has left when the recording starts, when the user did not say: its
    // own account (SMART, an emulated card's).
    let endurance = match &s.endurance {
        EnduranceFrom::Known(e) => e.clone(),
        EnduranceFrom::Device => sinkrate_sys::health::of_mount(mount.as_ref())
            .0
            .remaining_endurance(),
    };
    let devices = sinkrate_sys::host::device_names(std::slice::from_ref(&target));
    let sampler = Sampler::start(
        SamplerConfig {
            memory_bytes: s.board_ram_bytes,
            ..SamplerConfig::recording(devices)
        },
        cfg.duration,
    );
    // Started on this thread before the writers, which it follows.
    let tracing = crate::kernel::Tracing::start(mount.as_ref(), s.kernel_events_off.as_deref());
    let started_unix_ms = sinkrate_sys::host::unix_ms_now();
    let mut record_cfg = cfg.clone();
    record_cfg.frame_records = true;
    record_cfg.run_tag = started_unix_ms ^ (u64::from(std::process::id()) << 40);
    let clock = std::time::Instant::now();
    let recording = crate::run::start(&record_cfg, stop.clone(), clock, tracing.stall_sink(clock));
    let verifier = cfg.verify_every.map(|every| {
        crate::soak::Verifier::start(
            crate::soak::VerifierLinks {
                closed: recording.closed.clone(),
                clock: recording.clock,
                halt: recording.halt.clone(),
                stop: stop.clone(),
            },
            every,
            record_cfg.run_tag,
        )
    });
    let cutter = match (&s.power_switch, cfg.power_cut_at) {
        (Some(switch), Some(at)) => {
            Some(PowerCutTimer::start(switch.clone(), at, &recording, &stop))
        }
        _ => None,
    };
    if let Some(tick) = on_second {
        live_ticks(&recording, cfg, &stop, tick);
    }
    let clock = recording.clock;
    let halted = recording.halt.clone();
    let mut results = recording.join();
    let writer_names: std::collections::HashMap<i32, String> = results
        .iter()
        .filter_map(|r| Some((r.writer_tid?, format!("{} writer", r.name))))
        .collect();
    // The segments closed since the verifier's last pass are read before the files are
    // settled (and removed, unless kept).
    let soak = verifier.map(crate::soak::Verifier::finish);
    let recording_elapsed = clock.elapsed();
    let cut = cutter.and_then(PowerCutTimer::join);
    let mut post_cut_notes = Vec::new();
    let power_cut = match (&cut, &s.power_switch) {
        (Some(cut), Some(switch)) => Some(after_the_cut(
            cut,
            switch.as_ref(),
            &record_cfg,
            &mut results,
            &mut post_cut_notes,
        )),
        _ => None,
    };
    let mut sampled = sampler.stop();
    if memory_fs(&target).is_some() {
        sampled.forget_devices();
    }
    // The kernel's reports on the devices, timed on the recording's clock (the sampler's
    // thread starts its own a moment apart).
    if let Some(started) = sampled.started {
        for (seen_ns, _) in sampled.device_failures.iter_mut() {
            *seen_ns = (started + Duration::from_nanos(*seen_ns))
                .saturating_duration_since(clock)
                .as_nanos() as u64;
        }
    }
    // A power cut this run made fails the device on purpose: what the kernel reports from
    // the moment it began is the cut's doing, counted by `after_the_cut`, not a failure of
    // the card (a report seen before the cut returned, from the requests it failed, once
    // failed a busy machine's run).
    if let Some(cut) = &cut {
        sampled
            .device_failures
            .retain(|(seen_ns, _)| *seen_ns < cut.started_ns);
        sampled.device_failure_count = sampled.device_failures.len() as u64;
    }
    let interrupted = stop.load(Ordering::Relaxed);
    // Ended early by Ctrl-C, a failed stream or a power cut: judged over the time it recorded.
    let elapsed_s = if let Some(cut) = &cut {
        cut.at_ns as f64 / 1e9
    } else if interrupted || halted.load(Ordering::Relaxed) {
        recording_elapsed
            .as_secs_f64()
            .min(cfg.duration.as_secs_f64())
    } else {
        cfg.duration.as_secs_f64()
    }
    .max(1e-3);
    // A file removed under the recording (its directory deleted) took writes that went
    // nowhere: the run failed, whatever the writers saw. A power cut loses files by design:
    // what survived it is judged by `after_the_cut`.
    let files_can_vanish = cut.is_some();
    for r in results
        .iter_mut()
        .filter(|r| r.error.is_none() && !files_can_vanish)
    {
        if let Some(gone) = r
            .files
            .iter()
            .find(|f| std::fs::symlink_metadata(f).is_err())
        {
            r.error = Some(format!(
                "{} was removed during the recording (was its directory deleted?): its frames went nowhere",
                gone.display()
            ));
        }
    }
    let mut unremoved = Vec::new();
    let on_disk = settle_files(&results, cfg.keep, &mut unremoved);
    let mut report = judge(
        s,
        &target,
        results,
        &on_disk,
        Watched {
            sampled: &sampled,
            soak,
        },
        elapsed_s,
        s.dirty_limits.map(|(d, b)| DirtyLimits {
            dirty_bytes: d,
            dirty_background_bytes: b,
            restored,
        }),
    );
    report.power_cut = power_cut;
    // The device limit's bdi, and whether a cap at most that size is in force already.
    if let Some(limit) = report
        .sizes
        .as_mut()
        .and_then(|sizes| sizes.device_limit.as_mut())
    {
        limit.bdi.clone_from(&tracing.bdi);
        let held = tracing
            .bdi
            .as_deref()
            .and_then(|name| sinkrate_sys::bdi::read(&sinkrate_sys::SysRoot::live(), name));
        limit.held_bytes = held
            .filter(|b| b.strict_limit == Some(true))
            .and_then(|b| b.max_bytes);
        limit.in_force = limit
            .held_bytes
            .zip(limit.max_bytes)
            .is_some_and(|(now, size)| now <= size);
    }
    report.kernel = tracing.finish(&mut report.stalls, &writer_names);
    if let Some(plan) = &cfg.replay {
        report.replay = Some(crate::replay::summary(plan, &report, cfg.replay_speed));
        // A trace whose capture could not see all of the recorder's calls: the verdict is
        // on the part it saw, and says so where it is read.
        if !plan.unseen.is_empty() {
            report.verdict_text.push_str(&format!(
                "\n  this trace misses part of the recorder's workload ({}): the verdict judges the rest of it",
                plan.unseen.join("; ")
            ));
        }
    }
    if report.config.write_mode != WriteMode::Null {
        report.totals.device_bytes_written = device_bytes_until(&sampled, u64::MAX);
    }
    report.lifetime = lifetime(&report, &sampled, s.hours_per_day, endurance);
    let mut run = Envelope::new(
        RunKind::Record,
        sinkrate_sys::host::host_facts(),
        started_unix_ms,
        report,
    );
    run.error = run.result.errors.first().map(|e| RunError {
        what: e.clone(),
        at_s: run.result.device_failure.as_ref().map(|f| f.at_s),
    });
    run.interrupted = interrupted;
    if let Some(rp) = run
        .result
        .replay
        .as_ref()
        .filter(|rp| !rp.unseen.is_empty())
    {
        run.warnings.push(sinkrate_model::Warning {
            id: "replay.trace_incomplete".into(),
            job: None,
            text: format!(
                "the capture of {} did not see all of the recorder's calls ({}): the verdict judges part of its workload",
                rp.trace,
                rp.unseen.join("; ")
            ),
        });
    }
    run.notices = sampled.notes.clone();
    run.notices.extend(post_cut_notes);
    run.notices.extend(unremoved);
    run.notices.extend(memory_sizing(s));
    Ok(run)
}

/// The power cut: when it happened, whether a stream had failed before it, and whether the
/// cut itself worked.
struct Cut {
    /// When the cut began (the kernel's reports from then on are the cut's).
    started_ns: u64,
    /// When it had taken effect (frames written before then were believed written).
    at_ns: u64,
    failed_before: bool,
    result: Result<(), String>,
}

/// A thread that cuts the power at its time (unless the recording ended first) and ends
/// the recording.
struct PowerCutTimer {
    handle: std::thread::JoinHandle<Option<Cut>>,
}

impl PowerCutTimer {
    fn start(
        switch: Arc<dyn sinkrate_platform::power::PowerSwitch>,
        at: Duration,
        recording: &crate::run::Recording,
        stop: &Arc<AtomicBool>,
    ) -> PowerCutTimer {
        let (clock, halt, ended, stop) = (
            recording.clock,
            recording.halt.clone(),
            recording.ended.clone(),
            stop.clone(),
        );
        let handle = std::thread::spawn(move || {
            loop {
                let now = clock.elapsed();
                if now >= at {
                    break;
                }
                if stop.load(Ordering::Relaxed) || halt.load(Ordering::Relaxed) {
                    return None;
                }
                std::thread::sleep((at - now).min(Duration::from_millis(20)));
            }
            let failed_before = halt.load(Ordering::Relaxed);
            // The cut fails the card's requests before it returns (its own read, the
            // writes in flight), and the kernel reports them: from this instant on.
            let started_ns = clock.elapsed().as_nanos() as u64;
            let result = switch.cut();
            let at_ns = clock.elapsed().as_nanos() as u64;
            ended.store(true, Ordering::Relaxed);
            Some(Cut {
                started_ns,
                at_ns,
                failed_before,
                result,
            })
        });
        PowerCutTimer { handle }
    }

    fn join(self) -> Option<Cut> {
        self.handle.join().ok().flatten()
    }
}

/// Brings the power back, mounts the card and counts what survived. Errors the streams met
/// after the cut (the device was dark) are moved to `notes`; one before it still fails the
/// run.
fn after_the_cut(
    cut: &Cut,
    switch: &dyn sinkrate_platform::power::PowerSwitch,
    cfg: &RecordConfig,
    results: &mut [StreamResult],
    notes: &mut Vec<String>,
) -> sinkrate_model::record::PowerCutReport {
    use crate::power_cut::{frames_on_card, survival, SyncCovers};
    if !cut.failed_before {
        for r in results.iter_mut() {
            if let Some(e) = r.error.take() {
                notes.push(format!("after the power cut, stream {}: {e}", r.name));
            }
        }
    }
    // A cut that did not happen fails the run: nothing was measured.
    if let Err(e) = &cut.result {
        for r in results.iter_mut() {
            r.error.get_or_insert(format!("the power cut failed: {e}"));
        }
    }
    let restored = switch.restore();
    let (mounted_after, mount_notes, cache_lost_bytes) = match &restored {
        Ok(r) => (true, r.kernel_said.clone(), r.cache_lost_bytes),
        Err(e) => (false, vec![e.clone()], None),
    };
    let covers = SyncCovers::of(cfg.write_mode);
    let streams = results
        .iter()
        .zip(&cfg.streams)
        .map(|(r, spec)| {
            let on_card = if mounted_after {
                frames_on_card(&r.files, cfg.run_tag)
            } else {
                Default::default()
            };
            survival(r, spec.fps, cut.at_ns, covers, &on_card)
        })
        .collect();
    sinkrate_model::record::PowerCutReport {
        at_s: cut.at_ns as f64 / 1e9,
        cache_lost_bytes,
        mounted_after,
        mount_notes,
        streams,
    }
}

/// The filesystem type when the directory has no device behind it (tmpfs, ramfs, a kernel
/// interface).
fn memory_fs(target: &TargetFacts) -> Option<&str> {
    target
        .fs_type
        .as_deref()
        .filter(|f| !sinkrate_sys::mounts::is_storage(f))
}

/// Calls `tick` once a second until the recording's duration is over or `stop` is set.
fn live_ticks(
    recording: &crate::run::Recording,
    cfg: &RecordConfig,
    stop: &AtomicBool,
    tick: &mut dyn FnMut(&LiveStatus),
) {
    let fps_total: f64 = cfg.streams.iter().map(|s| s.fps).sum();
    let (mut last_written, mut last_bytes) = (0u64, 0u64);
    let mut next = Instant::now() + Duration::from_secs(1);
    while recording.clock.elapsed() < cfg.duration
        && !stop.load(Ordering::Relaxed)
        && !recording.halt.load(Ordering::Relaxed)
        && !recording.ended.load(Ordering::Relaxed)
    {
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        next += Duration::from_secs(1);
        let p = &recording.progress;
        let sum = |f: &dyn Fn(&crate::stream::StreamProgress) -> u64| p.iter().map(|x| f(x)).sum();
        let written: u64 = sum(&|x| x.frames_written.load(Ordering::Relaxed));
        let bytes: u64 = sum(&|x| x.bytes_written.load(Ordering::Relaxed));
        let mem = sinkrate_sys::host::read_meminfo();
        tick(&LiveStatus {
            elapsed: recording.clock.elapsed(),
            frames_written_in_second: written - last_written,
            fps_total,
            frames_dropped: sum(&|x| x.frames_dropped.load(Ordering::Relaxed)),
            pool_in_use: p
                .iter()
                .map(|x| x.in_use.load(Ordering::Relaxed))
                .max()
                .unwrap_or(0),
            buffers: cfg.buffers,
            bytes_written_in_second: bytes - last_bytes,
            worst_write_ns: p
                .iter()
                .map(|x| x.worst_write_ns.swap(0, Ordering::Relaxed))
                .max()
                .unwrap_or(0),
            dirty_bytes: mem.dirty_bytes,
            writeback_bytes: mem.writeback_bytes,
        });
        last_written = written;
        last_bytes = bytes;
    }
}

/// What the sampler saw nearest to `t_s` into the run.
fn context_at(timeline: &[Sample], t_s: f64) -> Option<&Sample> {
    let t_ns = (t_s * 1e9) as u64;
    timeline.iter().min_by_key(|s| s.t_ns.abs_diff(t_ns))
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, sum) = values.fold((0usize, 0.0), |(n, s), v| (n + 1, s + v));
    (n > 0).then(|| sum / n as f64)
}

/// Bytes written per second of busy time over the window, from each sample's rate and
/// utilisation over the interval that ended with it; None when the device was busy less
/// than a second in all or wrote under 4 MB, too little to judge.
fn rate_while_busy(window: &[&Sample]) -> Option<f64> {
    let (mut written, mut busy_s) = (0.0, 0.0);
    for pair in window.windows(2) {
        let dt = pair[1].t_ns.saturating_sub(pair[0].t_ns) as f64 / 1e9;
        if let (Some(rate), Some(util)) = (pair[1].disk_write_bytes_per_s, pair[1].disk_util_pct) {
            written += rate * dt;
            busy_s += util / 100.0 * dt;
        }
    }
    (busy_s >= 1.0 && written >= 4e6).then(|| written / busy_s)
}

/// What watched the recording from beside the streams: the sampler, and the verifier of
/// closed segments (`--verify-every`).
struct Watched<'a> {
    sampled: &'a SamplerOutput,
    soak: Option<sinkrate_model::record::SoakVerify>,
}

/// From the streams' results and the sampler's timeline to the typed report. Pure: no I/O.
fn judge(
    s: &Session,
    target: &TargetFacts,
    results: Vec<StreamResult>,
    on_disk: &[Option<u64>],
    watched: Watched,
    elapsed_s: f64,
    dirty_limits: Option<DirtyLimits>,
) -> RecordReport {
    let Watched { sampled, soak } = watched;
    let cfg = &s.record;
    let requested = cfg.requested_bytes_per_s();
    let summary = analyse(&sampled.timeline, sampled.settings);
    // Judge the recording window itself: after it, the writers' final fsync drains the
    // backlog, which would hide a recorder that was falling behind.
    let window_end_ns = (elapsed_s * 1e9) as u64 + 50_000_000;
    let window: Vec<&Sample> = sampled
        .timeline
        .iter()
        .filter(|x| x.t_ns <= window_end_ns)
        .collect();
    let device_bytes_per_s = mean(window.iter().filter_map(|x| x.disk_write_bytes_per_s));
    let device_busy_fraction =
        mean(window.iter().filter_map(|x| x.disk_util_pct)).map(|u| u / 100.0);
    let device_rate_while_busy = rate_while_busy(&window);
    let final_flush_s = results.iter().map(|r| r.final_sync_ns).max().unwrap_or(0) as f64 / 1e9;
    let device_failure = device_failure(sampled);
    let mut errors: Vec<String> = results.iter().filter_map(|r| r.error.clone()).collect();
    // The device's failure is the cause of the write errors after it: one line says both.
    if let Some(f) = &device_failure {
        let line = match errors.first() {
            Some(first) => format!("{}; then the recording's write failed: {first}", f.line()),
            None => f.line(),
        };
        match errors.first_mut() {
            Some(first) => *first = line,
            None => errors.push(line),
        }
    }
    // A segment that read back wrong (--verify-every) is the soak's answer, first.
    if let Some(failure) = soak.as_ref().and_then(|v| v.failure.as_ref()) {
        errors.insert(0, failure.line());
    }
    let settings = sampled.settings;
    let evidence = Evidence {
        duration_s: elapsed_s,
        requested_bytes_per_s: requested,
        error: errors.first().cloned(),
        frames_dropped: results.iter().map(|r| r.frames_dropped).sum(),
        fewest_frames: results.iter().map(|r| r.frames_offered).min().unwrap_or(0),
        first_drop_s: results
            .iter()
            .filter_map(|r| r.drop_times_s.first().copied())
            .reduce(f64::min),
        writer_busy_fraction: results
            .iter()
            .map(|r| r.writer_busy_ns as f64 / 1e9 / elapsed_s)
            .fold(0.0, f64::max),
        buffered: cfg.write_mode == WriteMode::Buffered,
        // The page cache is not the recorder's when it writes nothing at all.
        unwritten_start_bytes: window
            .first()
            .and_then(|x| x.dirty_writeback_bytes())
            .filter(|_| cfg.write_mode != WriteMode::Null),
        unwritten_end_bytes: window.last().and_then(|x| x.dirty_writeback_bytes()),
        freerun_ceiling_bytes: window.last().and_then(|x| x.freerun_ceiling_bytes),
        background_threshold_bytes: window.last().and_then(|x| x.background_threshold_bytes),
        expire_and_interval_s: settings
            .dirty_expire_centisecs
            .zip(settings.dirty_writeback_centisecs)
            .map(|(e, w)| (e + w) as f64 / 100.0),
        first_throttled_s: summary.first_throttled_at_s,
        device_bytes_per_s,
        device_busy_fraction,
        device_rate_while_busy_bytes_per_s: device_rate_while_busy,
        sustained_bytes_per_s: s.sustained_bytes_per_s,
        // A recording that writes nothing measures the writer, wherever its directory is.
        not_storage: memory_fs(target)
            .filter(|_| cfg.write_mode != WriteMode::Null)
            .map(|fs| format!("{} is on {fs}", cfg.dir.display())),
        longest_stall: results
            .iter()
            .flat_map(|r| r.stalls.iter())
            .max_by(|a, b| a.duration_ms.total_cmp(&b.duration_ms))
            .map(|x| (x.at_s, x.duration_ms)),
        board_1g_ceiling_bytes: {
            // Midway between the two limits a 1 GB board would compute from these settings.
            let gb = 1u64 << 30;
            let hard = settings
                .dirty_bytes
                .filter(|b| *b > 0)
                .unwrap_or(gb * settings.dirty_ratio.unwrap_or(20) / 100);
            let bg = settings
                .dirty_background_bytes
                .filter(|b| *b > 0)
                .unwrap_or(gb * settings.dirty_background_ratio.unwrap_or(10) / 100);
            Some((hard.min(gb) + bg.min(gb)) / 2)
        },
    };
    let outcome = decide(&evidence);
    let mut total_lat = LatencyRecorder::new();
    let mut total_late = LatencyRecorder::new();
    let mut total_jitter = LatencyRecorder::new();
    for r in &results {
        total_lat.merge(&r.write_latency);
        total_late.merge(&r.lateness);
        total_jitter.merge(&r.schedule_jitter);
    }
    let stalls: Vec<StallReport> = results
        .iter()
        .flat_map(|r| r.stalls.iter())
        .map(|st| {
            let c = context_at(&sampled.timeline, st.at_s);
            StallReport {
                stream: st.stream.clone(),
                frame: st.frame,
                tid: Some(st.tid),
                at_s: st.at_s,
                duration_ms: st.duration_ms,
                dirty_bytes: c.and_then(|c| c.dirty_bytes),
                writeback_bytes: c.and_then(|c| c.writeback_bytes),
                throttled: c.map(|c| c.throttled),
                disk_util_pct: c.and_then(|c| c.disk_util_pct),
                cpu_iowait_pct: c.and_then(|c| c.cpu_iowait_pct),
                causes: None,
            }
        })
        .collect();
    let frames: Vec<FrameColumns> = results
        .iter()
        .map(|r| frame_columns(r, r.fps_requested))
        .collect();
    let intervals = intervals(&frames, elapsed_s);
    let covers = crate::power_cut::SyncCovers::of(cfg.write_mode);
    let streams: Vec<StreamReport> = results
        .iter()
        .zip(on_disk)
        .map(|(r, size)| stream_report(r, elapsed_s, *size, covers))
        .collect();
    // A stream that never asked the device leaves the whole recording unbounded.
    let unacknowledged_worst_s = streams
        .iter()
        .map(|st| st.unacknowledged_worst_s)
        .try_fold(0.0f64, |worst, s| s.map(|s| worst.max(s)))
        .filter(|_| !streams.is_empty() && cfg.write_mode != WriteMode::Null);
    let sum = |f: fn(&StreamResult) -> u64| results.iter().map(f).sum::<u64>();
    let sizes = sinkrate_model::record::Sizes {
        pools: frames
            .iter()
            .zip(&streams)
            .filter_map(|(c, st)| crate::sizes::pool_needed(c, st.buffers))
            .collect(),
        card_class: crate::sizes::card_class(requested),
        streams_bytes_per_s: requested,
        run_s: elapsed_s,
        first_expiry_writeback_s: evidence.expire_and_interval_s,
        // Through the page cache only: a cap on dirty data holds nothing else back.
        device_limit: (cfg.write_mode == WriteMode::Buffered).then(|| {
            let pool_s = results
                .iter()
                .zip(&streams)
                .map(|(r, st)| st.buffers as f64 / r.fps_requested.max(1e-9))
                .fold(f64::INFINITY, f64::min);
            // The device's rate while busy in the recording's window; else in the whole
            // run with its final flush (a short buffered run leaves its data in the page
            // cache until the writers' final sync drains it at the card's rate); else the
            // sustained rate check measured before.
            let whole: Vec<&Sample> = sampled.timeline.iter().collect();
            crate::sizes::device_limit(
                device_rate_while_busy
                    .or_else(|| rate_while_busy(&whole))
                    .or(s.sustained_bytes_per_s),
                requested,
                if pool_s.is_finite() { pool_s } else { 0.0 },
            )
        }),
    };
    RecordReport {
        target: Some(target.clone()),
        config: cfg.clone(),
        label: s.label.clone(),
        errors,
        dirty_limits,
        verdict: outcome.verdict,
        verdict_text: outcome.text,
        headroom: outcome.headroom,
        backlog_growth_bytes_per_s: outcome.backlog_growth_bytes_per_s,
        throttled_after_s: outcome.throttled_after_s,
        deferred_writeback: outcome.deferred_writeback,
        sustained_bytes_per_s: s.sustained_bytes_per_s,
        totals: Totals {
            duration_s: elapsed_s,
            frames_offered: sum(|r| r.frames_offered),
            frames_written: sum(|r| r.frames_written),
            frames_dropped: sum(|r| r.frames_dropped),
            bytes_requested: sum(|r| r.bytes_requested),
            bytes_written: sum(|r| r.bytes_written),
            requested_bytes_per_s: requested,
            written_bytes_per_s: sum(|r| r.bytes_written) as f64 / elapsed_s,
            device_bytes_per_s,
            // Set once the run's final flush has been counted.
            device_bytes_written: None,
            device_busy_fraction,
            device_rate_while_busy_bytes_per_s: device_rate_while_busy,
            writer_cpu_s: sum(|r| r.writer_cpu_ns) as f64 / 1e9,
            flusher_cpu_s: sampled.flusher_cpu_s(),
            final_flush_s,
            write_latency_ns: LatencyDistribution::of(&total_lat),
            lateness_ns: LatencyDistribution::of(&total_late),
            schedule_jitter_ns: LatencyDistribution::of(&total_jitter),
            unacknowledged_worst_s,
        },
        streams,
        stalls,
        kernel: sinkrate_model::causes::KernelAccount::absent(),
        intervals,
        frames,
        sampler: SamplerSection {
            devices: sampled.devices.clone(),
            summary,
            hogs: sampled.hogs.clone(),
            timeline: sampled.timeline.clone(),
        },
        power_cut: None,
        device_failure,
        lifetime: None,
        windows: windows(&results, cfg.window(), elapsed_s),
        soak,
        replay: None,
        sizes: Some(sizes),
    }
}

/// The streams' windows summed: frames, bytes, rate and worst write of each.
fn windows(
    results: &[StreamResult],
    window: Duration,
    elapsed_s: f64,
) -> Vec<sinkrate_model::record::Window> {
    let len_s = window.as_secs_f64().max(1.0);
    let n = results.iter().map(|r| r.windows.len()).max().unwrap_or(0);
    (0..n)
        .map(|i| {
            let start_s = i as f64 * len_s;
            let end_s = ((i + 1) as f64 * len_s).min(elapsed_s.max(start_s));
            let mut w = sinkrate_model::record::Window {
                start_s,
                end_s,
                ..Default::default()
            };
            for c in results.iter().filter_map(|r| r.windows.get(i)) {
                w.frames_written += c.frames;
                w.bytes_written += c.bytes;
                w.worst_write_ns = w.worst_write_ns.max(c.worst_ns);
            }
            let span = end_s - start_s;
            w.written_bytes_per_s = if span > 0.0 {
                w.bytes_written as f64 / span
            } else {
                0.0
            };
            w
        })
        .collect()
}

/// How long the device lasts at this recording: the bytes the devices wrote over the whole
/// run (the final flush included, so that data the page cache still held at the window's
/// end counts) per second of recording.
fn lifetime(
    report: &sinkrate_model::record::RecordReport,
    sampled: &SamplerOutput,
    hours_per_day: f64,
    endurance: Option<Endurance>,
) -> Option<Lifetime> {
    if report.config.write_mode == WriteMode::Null {
        return None;
    }
    // A run too short to judge is too short to extrapolate to years: a few seconds of the
    // device's bytes (other writers' among them) would swing the figure tenfold.
    if report.verdict == sinkrate_model::verdict::Verdict::TooShort {
        return None;
    }
    // Up to a failure of the device, what it took in the time it worked.
    let (until_ns, seconds) = match &report.device_failure {
        Some(f) => ((f.at_s * 1e9) as u64, f.at_s),
        None => (u64::MAX, report.totals.duration_s),
    };
    let device_bytes = device_bytes_until(sampled, until_ns)?;
    // The recorder's bytes in the same time, at its mean rate.
    let app_bytes =
        (report.totals.bytes_written as f64 * (seconds / report.totals.duration_s).min(1.0)) as u64;
    Lifetime::estimate(device_bytes, app_bytes, seconds, hours_per_day, endurance)
}

/// The bytes the sampled devices wrote from the start up to `until_ns`, from the sampler's
/// rates over its intervals; None when it had no disk series.
fn device_bytes_until(sampled: &SamplerOutput, until_ns: u64) -> Option<u64> {
    let mut written = 0.0;
    let mut seen = false;
    let mut prev_ns = None;
    for x in sampled.timeline.iter().take_while(|x| x.t_ns <= until_ns) {
        if let (Some(rate), Some(prev)) = (x.disk_write_bytes_per_s, prev_ns) {
            written += rate * x.t_ns.saturating_sub(prev) as f64 / 1e9;
            seen = true;
        }
        prev_ns = Some(x.t_ns);
    }
    seen.then_some(written as u64)
}

/// What the kernel said of the recording's devices failing, with when it was seen and what
/// the devices had written by then (the sampler's rates over its samples up to then).
fn device_failure(sampled: &SamplerOutput) -> Option<DeviceFailure> {
    let (first_ns, _) = sampled.device_failures.first()?;
    Some(DeviceFailure {
        at_s: *first_ns as f64 / 1e9,
        device_written_bytes: device_bytes_until(sampled, *first_ns),
        messages: sampled
            .device_failures
            .iter()
            .map(|(_, m)| m.clone())
            .collect(),
        count: sampled.device_failure_count,
    })
}

/// Each stream's bytes on disk, measured before its files are removed (unless kept).
fn settle_files(
    results: &[StreamResult],
    keep: bool,
    unremoved: &mut Vec<String>,
) -> Vec<Option<u64>> {
    results
        .iter()
        .map(|r| {
            let on_disk = (!r.files.is_empty()).then(|| {
                r.files
                    .iter()
                    .filter_map(|f| std::fs::metadata(f).map(|m| m.len()).ok())
                    .sum::<u64>()
            });
            if !keep {
                for f in &r.files {
                    // Only what this run made, and only while it is still that file.
                    match sinkrate_sys::owned::remove(f) {
                        Ok(_) => {}
                        // Named for the user, and left listed: a second Ctrl-C in this run
                        // and the next run still try.
                        Err(e) => unremoved.push(format!(
                            "{} could not be removed ({e}); remove it by hand",
                            f.display()
                        )),
                    }
                }
            }
            on_disk
        })
        .collect()
}

fn stream_report(
    r: &StreamResult,
    elapsed_s: f64,
    on_disk: Option<u64>,
    covers: crate::power_cut::SyncCovers,
) -> StreamReport {
    let path = |p: &PathBuf| p.display().to_string();
    StreamReport {
        name: r.name.clone(),
        fps_requested: r.fps_requested,
        fps_achieved: r.frames_written as f64 / elapsed_s,
        frames_offered: r.frames_offered,
        frames_written: r.frames_written,
        frames_dropped: r.frames_dropped,
        first_drop_s: r.drop_times_s.first().copied(),
        drop_times_s: r.drop_times_s.clone(),
        bytes_requested: r.bytes_requested,
        bytes_written: r.bytes_written,
        file: path(&r.file),
        files: r.files.iter().map(path).collect(),
        file_bytes_on_disk: on_disk,
        segments_created: r.segments_created,
        segments_deleted: r.segments_deleted,
        bytes_deleted: r.bytes_deleted,
        pool_high_water: r.pool_high_water,
        buffers: r.buffers,
        write_latency_ns: LatencyDistribution::of(&r.write_latency),
        lateness_ns: LatencyDistribution::of(&r.lateness),
        schedule_jitter_ns: LatencyDistribution::of(&r.schedule_jitter),
        writer_busy_ns: r.writer_busy_ns,
        writer_cpu_ns: r.writer_cpu_ns,
        final_sync_ns: r.final_sync_ns,
        unacknowledged_worst_s: crate::power_cut::unacknowledged_worst_s(r, covers),
        error: r.error.clone(),
    }
}

fn frame_columns(r: &StreamResult, fps: f64) -> FrameColumns {
    let interval_ns = (1e9 / fps.max(1e-9)) as u64;
    let us = |ns: u64| ns / 1000;
    let mut c = FrameColumns {
        stream: r.name.clone(),
        truncated: (r.frames.len() as u64) < r.frames_offered,
        ..FrameColumns::default()
    };
    for f in &r.frames {
        c.frame.push(f.frame);
        c.size_bytes.push(f.size);
        c.capture_us.push(us(f.capture_ns));
        c.write_start_us.push(f.write_start_ns.map(us));
        c.write_end_us.push(f.write_end_ns.map(us));
        c.lateness_us.push(
            f.write_end_ns
                .map(|end| us(end.saturating_sub(f.capture_ns + interval_ns))),
        );
    }
    c
}

/// One row per second: frames captured, written and dropped, bytes written, and the frame
/// write times of that second.
fn intervals(frames: &[FrameColumns], elapsed_s: f64) -> Vec<Interval> {
    let n = elapsed_s.ceil().max(1.0) as usize;
    let mut rows: Vec<Interval> = (0..n)
        .map(|i| Interval {
            t_s: (i + 1) as f64,
            ..Interval::default()
        })
        .collect();
    let mut times: Vec<Vec<u64>> = vec![Vec::new(); n];
    let second = |us: u64| ((us / 1_000_000) as usize).min(n - 1);
    for c in frames {
        for i in 0..c.frame.len() {
            rows[second(c.capture_us[i])].frames_captured += 1;
            match (c.write_start_us[i], c.write_end_us[i]) {
                (Some(start), Some(end)) => {
                    let row = second(end);
                    rows[row].frames_written += 1;
                    rows[row].bytes_written += c.size_bytes[i];
                    times[row].push(end.saturating_sub(start) * 1000);
                }
                _ => rows[second(c.capture_us[i])].frames_dropped += 1,
            }
        }
    }
    for (row, mut t) in rows.iter_mut().zip(times) {
        if t.is_empty() {
            continue;
        }
        t.sort_unstable();
        row.frame_write_max_ns = t[t.len() - 1];
        row.frame_write_p99_ns = t[((t.len() as f64 * 0.99).ceil() as usize).clamp(1, t.len()) - 1];
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_count_frames_in_their_second() {
        let c = FrameColumns {
            stream: "cam0".into(),
            truncated: false,
            frame: vec![0, 1, 2],
            size_bytes: vec![100, 200, 300],
            capture_us: vec![0, 500_000, 1_000_000],
            write_start_us: vec![Some(10), None, Some(1_000_100)],
            write_end_us: vec![Some(2_010), None, Some(1_400_100)],
            lateness_us: vec![Some(0), None, Some(0)],
        };
        let rows = intervals(&[c], 2.0);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[0].frames_captured,
                rows[0].frames_written,
                rows[0].frames_dropped
            ),
            (2, 1, 1)
        );
        assert_eq!(rows[0].bytes_written, 100);
        assert_eq!(rows[0].frame_write_max_ns, 2_000_000);
        assert_eq!(rows[1].frame_write_max_ns, 400_000_000);
        assert_eq!(rows[1].bytes_written, 300);
    }

    #[test]
    fn busy_rate_needs_enough_busy_time() {
        let s = |i: u64, rate: f64, util: f64| Sample {
            t_ns: i * 100_000_000,
            disk_write_bytes_per_s: Some(rate),
            disk_util_pct: Some(util),
            ..Sample::default()
        };
        // 20 samples of 100 ms, busy 10% of each at 20 MB/s while busy: 2 MB/s on average.
        let busy: Vec<Sample> = (0..20).map(|i| s(i, 2e6, 10.0)).collect();
        let refs: Vec<&Sample> = busy.iter().collect();
        assert_eq!(rate_while_busy(&refs), None, "0.19 s busy is too little");
        let busy: Vec<Sample> = (0..200).map(|i| s(i, 2e6, 10.0)).collect();
        let refs: Vec<&Sample> = busy.iter().collect();
        let r = rate_while_busy(&refs).expect("2 s busy");
        assert!((r - 20e6).abs() < 1.0, "{r}");
    }
}
