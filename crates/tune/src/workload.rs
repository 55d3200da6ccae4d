//! What a search runs for each candidate: the user's recording (record flags, or check's
//! profile) as an in-process record session, a bench job file through the bench engine, or
//! the user's own recorder as a child process. Each run becomes one [`Trial`].

use std::os::fd::AsFd;
#[cfg(target_os = "linux")]
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sinkrate_model::Verdict;
use sinkrate_platform::child::Signal;
use sinkrate_record::session::{self, LiveStatus, Session, SessionError};
use sinkrate_sampler::{analyse, Sampler, SamplerConfig};

use crate::candidates::session_for;

use sinkrate_model::search::Candidate;
use sinkrate_model::search::Trial;

/// The workload a search tries every candidate on.
#[derive(Debug, Clone)]
pub enum Workload {
    /// The user's streams, recorded in process (the recorder's own knobs can vary).
    Record(Box<Session>),
    /// A bench job file, run in the directory as `sinkrate bench` would.
    Job {
        jobs: sinkrate_jobspec::JobSet,
        dir: PathBuf,
        file: PathBuf,
    },
    /// The user's own recorder: judged by its exit status, the sampler, and the dropped
    /// frames it writes to `drops_file` (a number) if it can.
    Exec {
        argv: Vec<String>,
        dir: PathBuf,
        drops_file: Option<PathBuf>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error("{0}")]
    Workload(String),
    #[error("setting the candidate's settings: {0}")]
    Settings(String),
}

/// Runs `workload` once with `candidate`'s recorder changes, for `duration` (record and
/// exec; a bench job runs as written). `give_up` is asked once a second with the frames
/// dropped so far; true stops the run early.
pub fn run(
    workload: &Workload,
    candidate: &Candidate,
    duration: Duration,
    stop: &Arc<AtomicBool>,
    give_up: &mut dyn FnMut(u64) -> bool,
) -> Result<Option<Trial>, SearchError> {
    // The run's own stop flag: set by the caller's Ctrl-C (seen once a second) or by giving
    // up, so that a run given up on is not taken for an interrupted search.
    let run_stop = Arc::new(AtomicBool::new(false));
    let mut stopped_early = false;
    // What the previous run left dirty on its way to a slow card is written out first, so
    // that every run starts from the same clean state and is not charged for the one before.
    sinkrate_sys::sync_filesystem(dir_of(workload));
    let mut judge = |dropped: u64| {
        let worse = give_up(dropped);
        stopped_early |= worse;
        worse
    };
    let trial = match workload {
        Workload::Record(base) => {
            // The run's length first: a change sized by it (preallocation) reads it.
            let mut base = base.clone();
            // A replay lasts its trace at most.
            base.record.duration = if base.record.replay.is_some() {
                duration.min(base.record.duration)
            } else {
                duration
            };
            let s = session_for(candidate, &base);
            let mut tick = |live: &LiveStatus| {
                if stop.load(Ordering::Relaxed) || judge(live.frames_dropped) {
                    run_stop.store(true, Ordering::Relaxed);
                }
            };
            // A run refused once the search is under way (the card filled since the
            // preflight) is that candidate's failed run, not the end of the search.
            match session::run(&s, run_stop.clone(), Some(&mut tick)) {
                Ok(run) => record_trial(&run),
                Err(e) => failed_trial(e.to_string()),
            }
        }
        Workload::Job { jobs, dir, .. } => job_trial(jobs, dir, stop)?,
        Workload::Exec {
            argv,
            dir,
            drops_file,
        } => exec_trial(argv, dir, drops_file.as_ref(), duration, stop, &mut judge)?,
    };
    if stop.load(Ordering::Relaxed) {
        return Ok(None);
    }
    Ok(Some(Trial {
        stopped_early,
        ..trial
    }))
}

/// One recording of `candidate` whose power is cut `cut_at` into it (the recorder's
/// workload only, on an emulated card with a volatile cache): the proof of what a candidate
/// loses. None when the search was stopped.
pub fn power_cut_run(
    base: &Session,
    candidate: &Candidate,
    duration: Duration,
    cut_at: Duration,
    switch: &Arc<dyn sinkrate_platform::power::PowerSwitch>,
    stop: &Arc<AtomicBool>,
) -> Result<Option<(Trial, sinkrate_model::record::PowerCutReport)>, SearchError> {
    sinkrate_sys::sync_filesystem(&base.record.dir);
    let mut base = base.clone();
    base.record.duration = duration;
    let mut s = session_for(candidate, &base);
    s.record.power_cut_at = Some(cut_at);
    s.power_switch = Some(switch.clone());
    let run_stop = Arc::new(AtomicBool::new(false));
    let mut tick = |_: &LiveStatus| {
        if stop.load(Ordering::Relaxed) {
            run_stop.store(true, Ordering::Relaxed);
        }
    };
    let run = session::run(&s, run_stop.clone(), Some(&mut tick))?;
    if stop.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let trial = record_trial(&run);
    match run.result.power_cut {
        Some(cut) => Ok(Some((trial, cut))),
        None => Err(SearchError::Workload(format!(
            "{}: the power cut at {:.1} s did not happen{}",
            candidate.label,
            cut_at.as_secs_f64(),
            trial.error.map(|e| format!(" ({e})")).unwrap_or_default()
        ))),
    }
}

fn dir_of(workload: &Workload) -> &std::path::Path {
    match workload {
        Workload::Record(s) => &s.record.dir,
        Workload::Job { dir, .. } | Workload::Exec { dir, .. } => dir,
    }
}

fn failed_trial(error: String) -> Trial {
    Trial {
        verdict: Verdict::Failed,
        frames_offered: 0,
        frames_dropped: 0,
        worst_write_ms: None,
        p99_write_ms: None,
        p99_lateness_ms: None,
        cpu_s: 0.0,
        peak_dirty_bytes: None,
        unacknowledged_worst_s: None,
        throttled_s: 0.0,
        duration_s: 0.0,
        confirmation: false,
        stopped_early: false,
        error: Some(error),
        device_bytes_per_hour: None,
        device_bytes_written: None,
        device_rate_while_busy_bytes_per_s: None,
        diagnosis: None,
    }
}

fn record_trial(run: &sinkrate_model::record::RecordRun) -> Trial {
    let r = &run.result;
    let t = &r.totals;
    Trial {
        verdict: r.verdict,
        frames_offered: t.frames_offered,
        frames_dropped: t.frames_dropped,
        worst_write_ms: Some(t.write_latency_ns.max as f64 / 1e6),
        p99_write_ms: Some(t.write_latency_ns.p99 as f64 / 1e6),
        p99_lateness_ms: Some(t.lateness_ns.p99 as f64 / 1e6),
        cpu_s: t.writer_cpu_s + t.flusher_cpu_s,
        peak_dirty_bytes: r.sampler.summary.peak_dirty_writeback_bytes,
        unacknowledged_worst_s: t.unacknowledged_worst_s,
        throttled_s: r.sampler.summary.throttled_seconds,
        duration_s: t.duration_s,
        confirmation: false,
        stopped_early: false,
        error: run.error.as_ref().map(|e| e.what.clone()),
        device_bytes_per_hour: r.lifetime.as_ref().map(|l| l.device_bytes_per_hour),
        device_bytes_written: t.device_bytes_written,
        // Else the rate the run's sizes measured in its final flush (a short buffered run's
        // data reaches the device only then).
        device_rate_while_busy_bytes_per_s: t
            .device_rate_while_busy_bytes_per_s
            .or_else(|| r.sizes.as_ref()?.device_limit.as_ref()?.device_bytes_per_s),
        diagnosis: Some(diagnose(r).into()),
    }
}

/// The seconds around the first flush of expired data in which a stall counts as that
/// flush's: from a second before it (the interval's timer) to ten after (the device taking
/// the burst).
const FLUSH_WINDOW_S: (f64, f64) = (1.0, 10.0);

/// What a recording's own account says of its stalls, for the search's prediction.
pub fn diagnose(r: &sinkrate_model::record::RecordReport) -> sinkrate_model::search::Diagnosis {
    let sizes = r.sizes.as_ref();
    let page_cache = r.config.write_mode == sinkrate_model::record::WriteMode::Buffered;
    let first_flush_s = sizes
        .and_then(|s| s.first_expiry_writeback_s)
        .filter(|_| page_cache);
    let in_flush_window = |at: f64| {
        first_flush_s.is_some_and(|f| at >= f - FLUSH_WINDOW_S.0 && at <= f + FLUSH_WINDOW_S.1)
    };
    let mut stall_s = 0.0;
    let mut stall_at_first_flush_s = 0.0;
    let mut worst_other_stall_s: f64 = 0.0;
    for st in &r.stalls {
        let s = st.duration_ms / 1e3;
        stall_s += s;
        if in_flush_window(st.at_s) {
            stall_at_first_flush_s += s;
        } else {
            worst_other_stall_s = worst_other_stall_s.max(s);
        }
    }
    let kernel = &r.kernel;
    let limit = sizes.and_then(|s| s.device_limit.as_ref());
    sinkrate_model::search::Diagnosis {
        stall_causes: kernel.from_kernel().then(|| kernel.stall_seconds.clone()),
        causes_unread: kernel.inferred_because.clone(),
        stall_s,
        stall_at_first_flush_s,
        worst_other_stall_s,
        first_flush_s,
        page_cache,
        writeback_interval_s: r
            .sampler
            .summary
            .settings
            .dirty_writeback_centisecs
            .map(|cs| cs as f64 / 100.0),
        run_s: r.totals.duration_s,
        fps: r.config.streams.iter().map(|s| s.fps).fold(0.0, f64::max),
        buffers: r.config.buffers,
        pool_frames: sizes.and_then(|s| s.pools.iter().map(|p| p.frames).max()),
        device_limit: limit.and_then(|l| Some((l.bdi.clone()?, l.max_bytes?))),
        held_device_limit_bytes: limit.and_then(|l| l.held_bytes),
        stream_bytes_per_s: sizes.map(|s| s.streams_bytes_per_s).unwrap_or(0.0),
        device_bytes_per_s: limit
            .and_then(|l| l.device_bytes_per_s)
            .or(r.totals.device_rate_while_busy_bytes_per_s),
    }
}

fn sampler_for(devices: Vec<String>, expected: Duration) -> Sampler {
    Sampler::start(SamplerConfig::recording(devices), expected)
}

fn job_trial(
    jobs: &sinkrate_jobspec::JobSet,
    dir: &std::path::Path,
    stop: &Arc<AtomicBool>,
) -> Result<Trial, SearchError> {
    let options = sinkrate_engine::RunOptions {
        read_only: false,
        base_dir: dir.to_path_buf(),
        force_device_write: false,
        made_files: sinkrate_engine::runner::MadeFiles::Removed,
        stop: stop.clone(),
        show_status: sinkrate_engine::runner::StatusLine::Never,
        bandwidth_log: false,
        status_reports: None,
        debug: Default::default(),
        aux_dir: None,
        trigger: Default::default(),
    };
    let prepared = sinkrate_engine::prepare(jobs, &options)
        .map_err(|e| SearchError::Workload(format!("--job: {e}")))?;
    let expected = jobs
        .jobs
        .iter()
        .filter_map(|j| j.options.runtime)
        .max()
        .unwrap_or_default();
    let sampler = sampler_for(
        sinkrate_sys::host::device_names(prepared.targets()),
        expected,
    );
    let run = sinkrate_engine::execute(prepared, &options);
    let sampled = sampler.stop();
    let summary = analyse(&sampled.timeline, sampled.settings);
    let mut writes = sinkrate_stats::LatencyRecorder::new();
    let mut cpu_s = 0.0;
    let mut behind = false;
    let mut error = None;
    for j in &run.jobs {
        writes.merge(&j.write.clat);
        let elapsed_s = j.elapsed_ns as f64 / 1e9;
        cpu_s += (j.usr_cpu_pct + j.sys_cpu_pct) / 100.0 * elapsed_s;
        // A rate-limited job that could not hold its rate fell behind, as a recorder would.
        let rate = j.options.rate[1] as f64;
        if rate > 0.0 && j.write.bw_bytes_per_s() < 0.95 * rate {
            behind = true;
        }
        if error.is_none() {
            error = j
                .error_text
                .clone()
                .or_else(|| (j.error != 0).then(|| format!("error {}", j.error)));
        }
    }
    let summary_ms = |p: f64| writes.value_at_percentile(p) as f64 / 1e6;
    Ok(Trial {
        verdict: if error.is_some() {
            Verdict::Failed
        } else if behind {
            Verdict::FallingBehind
        } else {
            Verdict::KeepsUp
        },
        frames_offered: 0,
        frames_dropped: 0,
        worst_write_ms: (writes.count() > 0).then(|| summary_ms(100.0)),
        p99_write_ms: (writes.count() > 0).then(|| summary_ms(99.0)),
        p99_lateness_ms: (writes.count() > 0).then(|| summary_ms(99.0)),
        cpu_s: cpu_s + sampled.flusher_cpu_s(),
        peak_dirty_bytes: summary.peak_dirty_writeback_bytes,
        unacknowledged_worst_s: None,
        throttled_s: summary.throttled_seconds,
        duration_s: run.elapsed_ns as f64 / 1e9,
        confirmation: false,
        stopped_early: false,
        error,
        device_bytes_per_hour: None,
        device_bytes_written: None,
        device_rate_while_busy_bytes_per_s: None,
        diagnosis: None,
    })
}

/// CPU seconds of this process's waited-for children so far.
fn children_cpu_s() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    if rc != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// How long a recorder has to exit after SIGINT before it gets SIGTERM, then SIGKILL.
const EXEC_GRACE: Duration = Duration::from_secs(5);

fn exec_trial(
    argv: &[String],
    dir: &std::path::Path,
    drops_file: Option<&PathBuf>,
    duration: Duration,
    stop: &Arc<AtomicBool>,
    give_up: &mut dyn FnMut(u64) -> bool,
) -> Result<Trial, SearchError> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| SearchError::Workload("--exec: no command after --".into()))?;
    if let Some(f) = drops_file {
        // A count left by the previous run must not be read as this run's.
        match std::fs::remove_file(f) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(SearchError::Workload(format!(
                    "--drops-file {}: {e}",
                    f.display()
                )))
            }
        }
    }
    let target = sinkrate_sys::host::target_facts(dir, false);
    let sampler = sampler_for(
        sinkrate_sys::host::device_names(std::slice::from_ref(&target)),
        duration,
    );
    let cpu_before = children_cpu_s();
    let started = Instant::now();
    // The recorder's output goes to standard error: standard output is the report's.
    let to_stderr = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null());
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(to_stderr);
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent. A recorder
    // must not go on writing to the card with nobody to stop it once sinkrate is killed.
    // (PR_SET_PDEATHSIG is Linux's; a port would use its system's equivalent, such as
    // FreeBSD's procctl(PROC_PDEATHSIG_CTL).)
    #[cfg(target_os = "linux")]
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .map_err(|e| SearchError::Workload(format!("--exec {program}: {e}")))?;
    let read_drops = || -> Option<u64> {
        let text = std::fs::read_to_string(drops_file?).ok()?;
        text.trim().parse().ok()
    };
    let mut ended_by_us = false;
    let mut next_check = Instant::now() + Duration::from_secs(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => return Err(SearchError::Workload(format!("--exec {program}: {e}"))),
        }
        let now = Instant::now();
        let mut quit = stop.load(Ordering::Relaxed) || now.duration_since(started) >= duration;
        if !quit && now >= next_check {
            next_check += Duration::from_secs(1);
            quit = give_up(read_drops().unwrap_or(0));
        }
        if quit {
            // A recorder is asked to stop as a user would stop it (SIGINT), then made to
            // (SIGTERM, SIGKILL), a grace apart: the one way sinkrate stops what it started.
            ended_by_us = true;
            let pid = child.id() as i32;
            let mut alive = || matches!(child.try_wait(), Ok(None));
            sinkrate_platform::child::stop(pid, Signal::Int, EXEC_GRACE, &mut alive);
            break child
                .wait()
                .map_err(|e| SearchError::Workload(format!("--exec {program}: {e}")))?;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    let sampled = sampler.stop();
    let summary = analyse(&sampled.timeline, sampled.settings);
    let dropped = read_drops();
    // Stopped by the search at the run's end, any exit is the recorder's way of stopping;
    // ended on its own, a non-zero status is a failure.
    let error = (!ended_by_us && !status.success()).then(|| {
        format!(
            "{program} exited with {} after {:.1} s",
            status
                .code()
                .map(|c| format!("status {c}"))
                .unwrap_or_else(|| "a signal".into()),
            elapsed.as_secs_f64()
        )
    });
    Ok(Trial {
        verdict: match (&error, dropped) {
            (Some(_), _) => Verdict::Failed,
            (None, Some(d)) if d > 0 => Verdict::Drops,
            _ => Verdict::KeepsUp,
        },
        frames_offered: 0,
        frames_dropped: dropped.unwrap_or(0),
        worst_write_ms: None,
        p99_write_ms: None,
        p99_lateness_ms: None,
        cpu_s: (children_cpu_s() - cpu_before).max(0.0) + sampled.flusher_cpu_s(),
        peak_dirty_bytes: summary.peak_dirty_writeback_bytes,
        unacknowledged_worst_s: None,
        throttled_s: summary.throttled_seconds,
        duration_s: elapsed.as_secs_f64(),
        confirmation: false,
        stopped_early: false,
        error,
        device_bytes_per_hour: None,
        device_bytes_written: None,
        device_rate_while_busy_bytes_per_s: None,
        diagnosis: None,
    })
}
