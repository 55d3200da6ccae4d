//! Runs a job set: checks every target before any I/O, then runs jobs concurrently within
//! stonewall segments, shows the status line, and gathers results and honesty warnings.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sinkrate_jobspec::options::Engine;
use sinkrate_jobspec::{Job, JobSet};
use sinkrate_model::{BenchRun, TargetFacts, Warning};

use crate::backend::IoDir;
use crate::clock::Clock;
use crate::error::EngineError;
use crate::files::{self, PlannedFile};
use crate::host;
use crate::progress::JobProgress;
use crate::status::{status_line, JobView};
use crate::worker::WorkerOutcome;

pub struct RunOptions {
    /// Where relative file names go (fio: the current directory).
    pub base_dir: PathBuf,
    /// Write to block devices even if mounted or holding data.
    pub force_device_write: bool,
    /// What becomes of the files the jobs make.
    pub made_files: MadeFiles,
    /// Set by Ctrl-C; workers stop at the next I/O and the partial results are kept.
    pub stop: Arc<AtomicBool>,
    /// When to draw the live status line on stderr.
    pub show_status: StatusLine,
    /// fio's --bandwidth-log: the run's aggregate bandwidth logs, in `base_dir`.
    pub bandwidth_log: bool,
    /// fio's --status-interval: the results so far, every interval.
    pub status_reports: Option<crate::status_reports::StatusReports>,
    /// fio's --debug=io,file.
    pub debug: crate::debug_trace::DebugTrace,
    /// fio's --readonly: nothing is created, extended, laid out or written, by any job
    /// (a replayed trace's writes included); refused while planning, before any I/O.
    pub read_only: bool,
    /// fio's --aux-path: where verify states are saved and loaded (fio: the current
    /// directory). None for sinkrate's own sessions, which keep no state.
    pub aux_dir: Option<PathBuf>,
    /// fio's --trigger-timeout, --trigger-file and --trigger.
    pub trigger: crate::verify_state::Trigger,
}

/// What becomes of the files a job makes once it is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MadeFiles {
    /// sinkrate's own sessions (check, tune, the probes): removed, unless the job says
    /// `unlink=0`.
    Removed,
    /// `sinkrate bench`, as fio: kept (and remembered, so that a later run may write into
    /// them again), unless the job says `unlink=1`.
    KeptUnlessUnlinked,
    /// `--keep`: kept, whatever the job says.
    Kept,
}

/// fio's `--eta`: the status line on a terminal (auto), always, or never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusLine {
    Auto,
    Always,
    Never,
}

/// A job set whose targets passed every check; nothing has been written yet.
pub struct PreparedRun {
    jobs: Vec<(Job, Vec<PlannedFile>)>,
    targets: Vec<TargetFacts>,
    warnings: Vec<Warning>,
    notices: Vec<String>,
    /// Each job's verify state plan, in job order.
    verify_states: Vec<crate::verify_state::VerifyStatePlan>,
}

impl PreparedRun {
    pub fn targets(&self) -> &[TargetFacts] {
        &self.targets
    }

    /// What the user should read before the run starts: job-file notices and overrides.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }
}

/// Plans files and checks targets: missing directories, block devices in use, free space.
pub fn prepare(set: &JobSet, opts: &RunOptions) -> Result<PreparedRun, EngineError> {
    let mut prep = Preparation {
        opts,
        jobs: Vec::with_capacity(set.jobs.len()),
        needed_by_fs: HashMap::new(),
        targets: Vec::new(),
        warnings: Vec::new(),
        notices: set.notices.iter().map(|n| n.to_string()).collect(),
        seen_dirs: Vec::new(),
        uring_missing: None,
        iologs: Vec::new(),
        verify_states: Vec::new(),
    };
    // The files earlier runs made and kept (fio's unlink=0): a job may write into them again.
    let kept = sinkrate_sys::kept::load();
    for job in &set.jobs {
        let job = effective_job(job)?;
        prep.check_job(&job)?;
        let in_job = |e: EngineError| EngineError::InJob {
            origin: job.origin.to_string(),
            inner: Box::new(e),
        };
        let state = crate::verify_state::plan(
            &job,
            prep.jobs.len(),
            opts.aux_dir.as_deref(),
            opts.read_only,
        )
        .map_err(in_job)?;
        prep.verify_states.push(state);
        if job.options.ioengine.is_side_load() {
            prep.jobs.push((job.into_owned(), Vec::new()));
            continue;
        }
        let o = &job.options;
        let made_earlier = |path: &Path| made_by_an_earlier_phase(&prep.jobs, &job, path);
        let mut planned =
            files::plan_files_or_later(&job, &opts.base_dir, made_earlier).map_err(in_job)?;
        for f in planned.iter_mut() {
            f.kept_from_earlier = f.existing_size.is_some()
                && !f.is_block_device
                && !f.special
                && kept.holds(&f.path);
        }
        let writes = o.rw.modifies() || o.overwrite || o.ioengine.changes_files();
        existing_files_hold(&job, writes, &planned, opts.force_device_write).map_err(in_job)?;
        if opts.read_only {
            read_only_holds(&job, writes, &planned).map_err(in_job)?;
        }
        for f in planned.iter().filter(|f| !f.special) {
            prep.check_file(&job, f, writes)?;
        }
        prep.count_space(&job, &planned);
        prep.jobs.push((job.into_owned(), planned));
    }
    prep.finish()
}

/// Whether a job of an earlier phase (one before a stonewall at or ahead of `job`) writes
/// `path`: the file exists by the time `job` starts.
fn made_by_an_earlier_phase(earlier: &[(Job, Vec<PlannedFile>)], job: &Job, path: &Path) -> bool {
    earlier.iter().enumerate().any(|(j, (other, files))| {
        let o = &other.options;
        let writes = o.rw.modifies() || o.ioengine.changes_files();
        let phase_ends = job.options.stonewall
            || earlier[j + 1..]
                .iter()
                .any(|(later, _)| later.options.stonewall);
        writes && phase_ends && files.iter().any(|f| f.path == path)
    })
}

/// The job as it runs: a replayed trace's, or fill_device's size far beyond the storage.
fn effective_job(job: &Job) -> Result<std::borrow::Cow<'_, Job>, EngineError> {
    use std::borrow::Cow;
    Ok(match &job.options.read_iolog {
        Some(_) => Cow::Owned(replay_job(job)?),
        None if job.options.fill_device => {
            // fio's fill_device: a size far beyond the storage, so that ENOSPC (or the
            // end of a device) ends the job; nothing is allocated ahead.
            let mut filling = job.clone();
            filling.options.size = Some(sinkrate_jobspec::options::SizeSpec::Bytes(1 << 60));
            filling.options.filesize = None;
            filling.options.io_size = None;
            Cow::Owned(filling)
        }
        None => Cow::Borrowed(job),
    })
}

/// What `prepare` gathers over the jobs, checked as a whole once every job is planned.
struct Preparation<'a> {
    opts: &'a RunOptions,
    jobs: Vec<(Job, Vec<PlannedFile>)>,
    /// Per file system (its device number): what the jobs' files will allocate there.
    needed_by_fs: HashMap<u64, FsNeed>,
    targets: Vec<TargetFacts>,
    warnings: Vec<Warning>,
    notices: Vec<String>,
    seen_dirs: Vec<PathBuf>,
    /// Why io_uring cannot run here, asked once.
    uring_missing: Option<Option<String>>,
    iologs: Vec<String>,
    verify_states: Vec<crate::verify_state::VerifyStatePlan>,
}

/// The bytes the jobs' files will allocate on one file system.
#[derive(Default)]
struct FsNeed {
    /// A directory on it (for statvfs and the refusal's wording).
    dir: PathBuf,
    /// Files of a job's own (generated names): summed.
    own_bytes: u64,
    /// Named files, which jobs may share: each as far as its furthest region reaches.
    shared: HashMap<PathBuf, u64>,
    /// The job that needs the most, and its origin, named when the space does not do.
    largest: (u64, String),
}

impl Preparation<'_> {
    /// What one job needs before its files are planned: its own write_iolog, io_uring,
    /// its directories, exec's program.
    fn check_job(&mut self, job: &Job) -> Result<(), EngineError> {
        let o = &job.options;
        if let Some(iolog) = o.write_iolog.as_deref() {
            // fio lets the jobs' lines interleave mid-line in one file; refused here.
            if self.iologs.iter().any(|i| i == iolog) {
                return Err(EngineError::Refused(format!(
                    "{}: write_iolog={iolog} is given to more than one job (numjobs clones count): give each job its own file",
                    job.origin
                )));
            }
            self.iologs.push(iolog.to_string());
        }
        if o.ioengine == Engine::IoUring {
            let missing = self
                .uring_missing
                .get_or_insert_with(sinkrate_platform::uring::unavailable);
            if let Some(reason) = missing {
                let asked = o.ioengine_requested.as_deref().unwrap_or("io_uring");
                return Err(EngineError::Refused(format!(
                    "{}: ioengine={asked} runs on io_uring, and {reason}: use --ioengine=psync (one I/O at a time) or pvsync",
                    job.origin
                )));
            }
        }
        if let Some(dir) = &o.directory {
            // Every directory of directory=a:b, not only the first: clones use them all.
            for d in files::split_filenames(dir).into_iter().map(PathBuf::from) {
                if !d.is_dir() {
                    return Err(EngineError::path(
                        &d,
                        format!("directory= {}", files::not_a_directory(&d)),
                    ));
                }
            }
        }
        if let (Engine::Exec, Some(program)) = (o.ioengine, &o.program) {
            if !program_exists(program) {
                return Err(EngineError::InJob {
                    origin: job.origin.to_string(),
                    inner: Box::new(EngineError::path(
                        std::path::Path::new(program),
                        "program= is not there or not executable (give its path, or a name on PATH)",
                    )),
                });
            }
        }
        Ok(())
    }

    /// One planned file: a trim's target, the destructive-write guard, the directory it
    /// needs, and the facts of each target directory (once).
    fn check_file(&mut self, job: &Job, f: &PlannedFile, writes: bool) -> Result<(), EngineError> {
        let o = &job.options;
        // As fio: a trim is a discard of a block device's range (BLKDISCARD), which a
        // regular file refuses (fio 3.33 fails there with ENOTTY at the first trim);
        // fio's falloc engine trims a file by punching a hole.
        if o.rw.trims() && !f.is_block_device && o.ioengine != Engine::Falloc {
            return Err(EngineError::InJob {
                origin: job.origin.to_string(),
                inner: Box::new(EngineError::path(
                    &f.path,
                    format!(
                        "is not a block device: rw={} discards a block device's blocks (give filename=/dev/..., or use ioengine=falloc to punch holes in a file)",
                        o.rw.fio_name()
                    ),
                )),
            });
        }
        if f.is_block_device && writes {
            if let Some(reason) =
                sinkrate_sys::guard::block_device_in_use(&sinkrate_sys::SysRoot::live(), &f.path)
                    .map_err(|e| EngineError::io(&f.path, e))?
            {
                if !self.opts.force_device_write {
                    let what = if o.rw.trims() && !o.rw.writes() {
                        "trim (discard)"
                    } else {
                        "write to"
                    };
                    return Err(EngineError::Refused(format!(
                        "refusing to {what} {}: {reason} (--allow-mounted-write or --force writes anyway and destroys it)",
                        f.path.display()
                    )));
                }
                self.notices.push(format!(
                    "writing to {} although {reason} (--force)",
                    f.path.display()
                ));
            }
        }
        // Missing directories on the way are made when the job starts, as fio makes
        // them; a file standing where one is needed cannot become one.
        if !f.is_block_device && f.existing_size.is_none() {
            let nearest = sinkrate_sys::files::existing_parent(&f.path);
            if !nearest.is_dir() {
                return Err(EngineError::path(
                    &nearest,
                    "is a file, and the job's file would need it to be a directory (check filename= and directory=)",
                ));
            }
        }
        let dir = if f.is_block_device {
            f.path.clone()
        } else {
            sinkrate_sys::files::existing_parent(&f.path)
        };
        if self.seen_dirs.contains(&dir) {
            return Ok(());
        }
        self.targets
            .push(host::target_facts(&f.path, f.is_block_device));
        // A device node sits on devtmpfs; its data does not.
        if o.direct && !f.is_block_device {
            if let Some(fs) = host::memory_backed_fs(&f.path) {
                self.warnings.push(Warning {
                    id: "direct.no_device".into(),
                    job: Some(o.name.clone()),
                    text: format!(
                        "direct=1 on {fs} ({}): {fs} accepts O_DIRECT but keeps data in memory, so this measures RAM, not storage",
                        dir.display()
                    ),
                });
            }
        }
        self.seen_dirs.push(dir);
        Ok(())
    }

    /// Adds the bytes a job's files will allocate to their file system's total.
    fn count_space(&mut self, job: &Job, planned: &[PlannedFile]) {
        let o = &job.options;
        // A job that goes on past ENOSPC on its writes (continue_on_error with
        // ignore_error=,ENOSPC, as fio's enospc-pressure.fio) means to fill the file system.
        let fills_the_fs = o.fill_device
            || o.error_policy.non_fatal(
                sinkrate_jobspec::error_policy::ErrorKind::Write,
                libc::ENOSPC,
            );
        let allocates = !o.ioengine.is_file_operation()
            || o.ioengine == Engine::Ftruncate
            || o.ioengine == Engine::Falloc;
        let need = files::bytes_to_allocate(planned);
        if !allocates || fills_the_fs || need == 0 {
            return;
        }
        let Some(first) = planned.iter().find(|f| !f.is_block_device) else {
            return;
        };
        let dir = sinkrate_sys::files::existing_parent(&first.path);
        let dev = std::fs::metadata(&dir).map(|m| m.dev()).unwrap_or(0);
        let fs = self.needed_by_fs.entry(dev).or_insert_with(|| FsNeed {
            dir,
            ..FsNeed::default()
        });
        if need > fs.largest.0 {
            fs.largest = (need, job.origin.to_string());
        }
        if o.filename.is_none() {
            // The job's own files: no other job allocates them.
            fs.own_bytes += need;
            return;
        }
        // Named files may be shared (numjobs clones, other jobs naming them): each needs
        // the space once, as far as the furthest region in it reaches (offset=,
        // offset_increment=).
        for f in planned.iter().filter(|f| !f.is_block_device && !f.special) {
            let need = f.needed_size().saturating_sub(f.existing_size.unwrap_or(0));
            let furthest = fs.shared.entry(f.path.clone()).or_insert(0);
            *furthest = (*furthest).max(need);
        }
    }

    /// The checks over every job together: memory, descriptors, free space per file system.
    fn finish(self) -> Result<PreparedRun, EngineError> {
        let needs = crate::resources::needs(&self.jobs);
        let available = host::read_meminfo().mem_available_bytes;
        self.opts.debug.mem(format_args!(
            "planned: {} job(s) at once need {} bytes of memory ({} mapped by page_fault) and {} descriptors; {} bytes available",
            needs.jobs,
            needs.memory_bytes,
            needs.mapped_bytes,
            needs.descriptors,
            available.map_or_else(|| "?".to_string(), |a| a.to_string())
        ));
        if let Some(available) = available {
            crate::resources::check_memory(&needs, available)?;
        }
        crate::resources::ensure_descriptors(&needs)?;
        for fs in self.needed_by_fs.values() {
            let need = fs.own_bytes + fs.shared.values().sum::<u64>();
            let dir = &fs.dir;
            let free = files::free_bytes(dir)?;
            if need > free {
                // Named after the job that needs the most, as other refusals of a job are.
                let origin = fs.largest.1.clone();
                let too_little = EngineError::path(
                    dir,
                    format!(
                        "not enough free space: the jobs need {} and the file system has {} (lower size=, or free space)",
                        sinkrate_units::fio::bytes_iec(need as f64),
                        sinkrate_units::fio::bytes_iec(free as f64)
                    ),
                );
                return Err(EngineError::InJob {
                    origin,
                    inner: Box::new(too_little),
                });
            }
        }
        Ok(PreparedRun {
            jobs: self.jobs,
            targets: self.targets,
            warnings: self.warnings,
            notices: self.notices,
            verify_states: self.verify_states,
        })
    }
}

/// Runs a prepared job set to the end (or to Ctrl-C) and returns everything measured.
pub fn execute(prepared: PreparedRun, opts: &RunOptions) -> BenchRun {
    let clock = Clock::start();
    let unix_start_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut run = BenchRun {
        host: host::host_facts(),
        targets: prepared.targets,
        started_unix_ms: unix_start_ms,
        notices: prepared.notices,
        warnings: prepared.warnings,
        ..BenchRun::default()
    };
    let disks = crate::disk_util::DiskWatch::start(&run.targets);
    let progress: Vec<Arc<JobProgress>> = prepared
        .jobs
        .iter()
        .map(|_| Arc::new(JobProgress::default()))
        .collect();
    let done = Arc::new(AtomicBool::new(false));
    let status_thread =
        spawn_status_line(opts.show_status, &prepared.jobs, &progress, clock, &done);
    let agg_log = if opts.bandwidth_log {
        match crate::agg_log::spawn(&opts.base_dir, progress.clone(), clock, done.clone()) {
            Ok(t) => Some(t),
            Err(e) => {
                run.warnings
                    .push(log_not_written(format!("--bandwidth-log: {e}")));
                None
            }
        }
    } else {
        None
    };
    let triggered = Arc::new(AtomicBool::new(false));
    let trigger_watch = opts.trigger.watch(clock, triggered.clone(), done.clone());
    let shared = crate::schedule::Shared {
        clock,
        stop: opts.stop.clone(),
        progress: progress.clone(),
        force_device_write: opts.force_device_write,
        made_files: opts.made_files,
        unix_start_ms,
        debug: opts.debug,
        triggered,
        verify_states: prepared.verify_states,
        base_dir: opts.base_dir.clone(),
    };
    let outcomes = match &opts.status_reports {
        None => crate::schedule::run_all(prepared.jobs, &shared),
        Some(reports) => run_reporting(prepared.jobs, &shared, reports, &run, &disks, &done),
    };
    done.store(true, Ordering::Relaxed);
    if let Some(t) = status_thread {
        let _ = t.join();
    }
    match agg_log.map(|t| t.join()) {
        Some(Ok(Ok(paths))) => run.notices.extend(
            paths
                .iter()
                .map(|p| format!("--bandwidth-log: wrote log {}", p.display())),
        ),
        Some(Ok(Err(e))) => run
            .warnings
            .push(log_not_written(format!("--bandwidth-log: {e}"))),
        Some(Err(_)) => run.warnings.push(log_not_written(
            "--bandwidth-log: the log writer stopped unexpectedly".into(),
        )),
        None => {}
    }
    run.interrupted = opts.stop.load(Ordering::Relaxed);
    run.elapsed_ns = clock.now_ns();
    let fired = trigger_watch.and_then(|t| t.join().ok().flatten());
    run.disk_util = disks.so_far();
    let dirty_limit = host::dirty_threshold_bytes();
    let outcomes: Vec<WorkerOutcome> = outcomes.into_iter().flatten().collect();
    keep_what_the_jobs_left(&outcomes, &mut run.notices);
    for outcome in outcomes {
        run.notices.extend(outcome.notices.iter().cloned());
        honesty_warnings(&outcome, dirty_limit, &mut run.warnings);
        for p in &outcome.log_files {
            run.notices.push(format!(
                "job '{}': wrote log {}",
                outcome.result.name,
                p.display()
            ));
        }
        run.jobs.push(outcome.result);
    }
    // fio runs the trigger command once the jobs are stopped and their states saved.
    if let Some(why) = fired {
        run.notices.push(format!(
            "the trigger fired ({why}) at {:.3} s: every job was stopped there",
            run.elapsed_ns as f64 / 1e9
        ));
        match opts.trigger.run_command() {
            Some(Ok(status)) if status.success() => run.notices.push(format!(
                "ran the trigger command `{}`",
                opts.trigger.command.as_deref().unwrap_or_default()
            )),
            Some(Ok(status)) => run.warnings.push(Warning {
                id: "trigger.command_failed".into(),
                job: None,
                text: format!(
                    "the trigger command `{}` failed ({status})",
                    opts.trigger.command.as_deref().unwrap_or_default()
                ),
            }),
            Some(Err(why)) => run.warnings.push(Warning {
                id: "trigger.command_failed".into(),
                job: None,
                text: why,
            }),
            None => {}
        }
    }
    run
}

/// Lists the files the jobs left in place as kept (one write for the run), so that a later
/// run may write into them again, and tells how many: fio keeps its files silently, but a
/// run that filled a card should say where the space went.
fn keep_what_the_jobs_left(outcomes: &[WorkerOutcome], notices: &mut Vec<String>) {
    let mut kept: Vec<&std::path::Path> = outcomes
        .iter()
        .flat_map(|o| o.kept_files.iter().map(PathBuf::as_path))
        .collect();
    kept.sort();
    kept.dedup();
    if kept.is_empty() {
        return;
    }
    sinkrate_sys::kept::keep_all(kept.iter().copied());
    // Listed as kept: no longer this run's to remove, were it stopped from here on.
    for p in &kept {
        sinkrate_sys::owned::forget(p);
    }
    let bytes: u64 = kept
        .iter()
        .filter_map(|p| std::fs::symlink_metadata(p).ok())
        .map(|m| m.len())
        .sum();
    if kept.is_empty() {
        return;
    }
    let named = sinkrate_units::a_few(
        kept.iter()
            .map(|p| crate::debug_trace::shown(p).to_string()),
        1,
    );
    notices.push(format!(
        "kept {} file(s) the jobs made, {} in all ({named}), as fio does; unlink=1 in a job removes its files",
        kept.len(),
        sinkrate_units::fio::bytes_iec(bytes as f64)
    ));
}

fn log_not_written(text: String) -> Warning {
    Warning {
        id: "log.not_written".into(),
        job: None,
        text,
    }
}

/// fio's `--eta`: a thread drawing the status line every half second until `done`.
fn spawn_status_line(
    show: StatusLine,
    jobs: &[(Job, Vec<PlannedFile>)],
    progress: &[Arc<JobProgress>],
    clock: Clock,
    done: &Arc<AtomicBool>,
) -> Option<std::thread::JoinHandle<()>> {
    let terminal = std::io::stderr().is_terminal();
    let status = match show {
        StatusLine::Always => true,
        StatusLine::Auto => terminal,
        StatusLine::Never => false,
    };
    if !status {
        return None;
    }
    let views_meta = view_meta(jobs);
    let progress = progress.to_vec();
    let done = done.clone();
    Some(std::thread::spawn(move || {
        let mut prev = Vec::new();
        let mut stderr = std::io::stderr();
        while !done.load(Ordering::Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(500));
            let views: Vec<JobView> = progress
                .iter()
                .zip(&views_meta)
                .map(|(p, m)| JobView {
                    progress: p,
                    reads: m.0,
                    writes: m.1,
                    runtime_ns: m.2,
                    total_bytes: m.3,
                    segment: m.4,
                })
                .collect();
            let line = status_line(&views, clock.now_ns(), &mut prev);
            // Off a terminal (--eta=always into a log), as fio: lines ended by a carriage
            // return, no escape codes.
            let _ = if terminal {
                write!(stderr, "\r{line}\x1b[K")
            } else {
                write!(stderr, "{line}\r")
            };
            let _ = stderr.flush();
        }
        let _ = if terminal {
            write!(stderr, "\r\x1b[K")
        } else {
            writeln!(stderr)
        };
    }))
}

/// What the status line needs of each job: reads, writes, its runtime, its bytes (for the
/// ETA) and its stonewall segment.
fn view_meta(jobs: &[(Job, Vec<PlannedFile>)]) -> Vec<(bool, bool, Option<u64>, u64, usize)> {
    let mut segment = 0usize;
    jobs.iter()
        .enumerate()
        .map(|(i, (j, files))| {
            if i > 0 && j.options.stonewall {
                segment += 1;
            }
            let o = &j.options;
            let region = |f: &PlannedFile| {
                if o.fill_device && !f.is_block_device {
                    // What the file system can still take: the fill's end, for the ETA.
                    let free = files::free_bytes(&sinkrate_sys::files::existing_parent(&f.path))
                        .unwrap_or(0);
                    f.existing_size.unwrap_or(0) + free
                } else {
                    f.region_len
                }
            };
            let bytes: u64 =
                o.io_size.unwrap_or_else(|| files.iter().map(region).sum()) * o.loops as u64;
            let runtime = o
                .runtime
                .map(|r| r.as_nanos() as u64)
                .filter(|_| o.time_based || o.runtime.is_some());
            (o.rw.reads(), o.rw.writes(), runtime, bytes, segment)
        })
        .collect()
}

/// Runs the jobs with `--status-interval`'s reports written beside them until they end.
fn run_reporting(
    jobs: Vec<(Job, Vec<PlannedFile>)>,
    shared: &crate::schedule::Shared,
    reports: &crate::status_reports::StatusReports,
    run: &BenchRun,
    disks: &crate::disk_util::DiskWatch,
    done: &AtomicBool,
) -> Vec<Option<WorkerOutcome>> {
    let bases: Vec<sinkrate_model::JobResult> = jobs
        .iter()
        .enumerate()
        .map(|(i, (job, _))| sinkrate_model::JobResult {
            name: job.options.name.clone(),
            group: job.group,
            job_number: i as u32 + 1,
            pid: std::process::id(),
            options: job.options.clone(),
            written_options: job.written.clone(),
            written_globals: job.written_globals.clone(),
            ..Default::default()
        })
        .collect();
    for p in &shared.progress {
        p.snapshots_on.store(true, Ordering::Relaxed);
    }
    let template = run.clone();
    std::thread::scope(|s| {
        s.spawn(|| {
            crate::status_reports::report_until_done(
                reports,
                &template,
                &bases,
                &shared.progress,
                disks,
                shared.clock,
                done,
            )
        });
        let outcomes = crate::schedule::run_all(jobs, shared);
        done.store(true, Ordering::Relaxed);
        outcomes
    })
}

fn honesty_warnings(
    outcome: &WorkerOutcome,
    dirty_limit: Option<u64>,
    warnings: &mut Vec<Warning>,
) {
    let r = &outcome.result;
    let o = &r.options;
    let name = Some(r.name.clone());
    if outcome.direct_fell_back {
        warnings.push(Warning {
            id: "direct.fell_back".into(),
            job: name.clone(),
            text: "direct=1 was refused by the file system; the job ran buffered and its figures include the page cache".into(),
        });
    }
    if let Some(flush) = &r.flush {
        let app = r.write.bw_bytes_per_s();
        let mut text = format!(
            "buffered writes without fsync: the application saw {}/s, but data reached the device at {}/s once the {} flush at the end is counted",
            human_mb(app),
            human_mb(flush.device_bytes_per_s),
            human_ms(flush.flush_ns)
        );
        if let Some(unwritten) = flush.unwritten_at_end_bytes {
            text.push_str(&format!(
                "; {} was still dirty or under writeback in the page cache when the job stopped",
                sinkrate_units::fio::bytes_iec(unwritten as f64)
            ));
        }
        text.push_str(" (add end_fsync=1 or direct=1 to measure the device)");
        warnings.push(Warning {
            id: "cache.unflushed_at_end".into(),
            job: name.clone(),
            text,
        });
        if let Some(limit) = dirty_limit {
            if flush.footprint_bytes <= limit {
                warnings.push(Warning {
                    id: "cache.fits_in_dirty_limit".into(),
                    job: name.clone(),
                    text: format!(
                        "the job's buffered writes cover {}, less than the kernel's dirty limit of {}: the page cache can absorb all of it, so the application rate measures memory, not storage (write a larger file than the limit, or use end_fsync=1 / direct=1)",
                        sinkrate_units::fio::bytes_iec(flush.footprint_bytes as f64),
                        sinkrate_units::fio::bytes_iec(limit as f64)
                    ),
                });
            }
        }
    }
    if r.total_err > 0 {
        warnings.push(Warning {
            id: "io.errors_ignored".into(),
            job: name.clone(),
            text: format!(
                "{} I/O error(s) gone on past (continue_on_error), the first {} ({}): the figures count only the I/Os that succeeded",
                r.total_err,
                sinkrate_jobspec::error_policy::errno_name(r.first_error).unwrap_or("an error"),
                sinkrate_jobspec::error_policy::errno_text(r.first_error),
            ),
        });
    }
    let runtime = r
        .read
        .runtime_ns
        .max(r.write.runtime_ns)
        .max(r.trim.runtime_ns);
    if runtime > 0
        && runtime < 1_000_000_000
        && o.ioengine != Engine::Null
        && !o.ioengine.is_side_load()
        && r.error == 0
    {
        warnings.push(Warning {
            id: "run.too_short".into(),
            job: name,
            text: format!(
                "the measured run lasted {}: too short for a stable figure (use runtime= of a few seconds or more with time_based)",
                human_ms(runtime)
            ),
        });
    }
}

/// A file that was there before the run is written or extended only where the job names
/// it (`filename=`, or a trace's files) or the command line says `--force`; a symlink that
/// another user planted in a sticky directory (/tmp) is never followed, whatever was said.
/// Checked while planning, before any I/O.
fn existing_files_hold(
    job: &Job,
    writes: bool,
    planned: &[PlannedFile],
    force: bool,
) -> Result<(), EngineError> {
    let o = &job.options;
    let named = o.filename.is_some() || o.read_iolog.is_some();
    // dirdelete's rmdir takes only empty directories (and dircreate's mkdir fails on one
    // that exists): an earlier run's directories lose nothing.
    if o.ioengine.on_directories() {
        return Ok(());
    }
    for f in planned.iter().filter(|f| !f.special && !f.is_block_device) {
        if let Some(why) = sinkrate_sys::owned::planted_symlink(&f.path) {
            return Err(EngineError::path(&f.path, why));
        }
        let Some(size) = f.existing_size else {
            continue;
        };
        // This process made it (an earlier job or trial, with unlink=0), or an earlier run
        // made and kept it and it is still that file: not a user's file.
        if f.kept_from_earlier || sinkrate_sys::owned::made_by_this_run(&f.path) {
            continue;
        }
        let changes = writes || (size < f.needed_size() && !o.ioengine.is_file_operation());
        if changes && !named && !force {
            return Err(EngineError::path(
                &f.path,
                format!(
                    "was there before this run and job '{}' did not name it: sinkrate bench writes into an existing file only when filename= names it or --force is given (or remove it)",
                    o.name
                ),
            ));
        }
    }
    Ok(())
}

/// `--readonly` holds for `job` (after a trace has said what it does): it neither writes nor
/// changes files, and every file it reads exists and is large enough, since laying one out
/// would create or extend it.
fn read_only_holds(job: &Job, writes: bool, planned: &[PlannedFile]) -> Result<(), EngineError> {
    let o = &job.options;
    if writes {
        let what = match &o.read_iolog {
            Some(trace) => format!("its trace read_iolog={trace} writes or trims"),
            None if o.ioengine.changes_files() => {
                format!("ioengine={} changes files", o.ioengine.fio_name())
            }
            None => format!("rw={} writes or trims", o.rw.fio_name()),
        };
        return Err(EngineError::Refused(format!(
            "job '{}': {what}, and --readonly refuses every write",
            o.name
        )));
    }
    for f in planned.iter().filter(|f| !f.special && !f.is_block_device) {
        match f.existing_size {
            // filestat and dirstat would make a missing target first, as fio does.
            None => {
                return Err(EngineError::path(
                    &f.path,
                    "does not exist, and --readonly creates nothing (give a file that is there)",
                ))
            }
            Some(size) if size < f.needed_size() && !o.ioengine.is_file_operation() => {
                return Err(EngineError::path(
                    &f.path,
                    format!(
                        "holds {size} bytes and the job reads up to byte {}; --readonly never extends a file (set size= to at most the file's size)",
                        f.needed_size()
                    ),
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// A read_iolog job as the rest of the run sees it: the trace's files (or the redirect) as
/// its files, each as large as the trace's furthest I/O, its largest I/O as its block size,
/// and its directions those the trace holds (which open the files for writing and guard a
/// device like any job's writes or trims).
fn replay_job(job: &Job) -> Result<Job, EngineError> {
    use sinkrate_jobspec::options::{Direction, SizeSpec};
    let o = &job.options;
    let path = o.read_iolog.as_deref().unwrap_or_default();
    let redirect = o.replay_redirect.as_deref().map(std::path::Path::new);
    let trace = crate::replay::Trace::load(std::path::Path::new(path), redirect)
        .map_err(|e| EngineError::Refused(format!("{}: {e}", job.origin)))?;
    let mut job = job.clone();
    let r = &mut job.options;
    let names: Vec<String> = trace
        .files
        .iter()
        .map(|f| f.to_string_lossy().replace(':', "\\:"))
        .collect();
    r.filename = Some(names.join(":"));
    let extent = trace.extent();
    r.filesize = Some((extent, extent));
    r.size = Some(SizeSpec::Bytes(extent * trace.files.len() as u64));
    r.offset = SizeSpec::Bytes(0);
    r.bs = [trace.largest(); 3];
    r.bsrange = None;
    r.bssplit = None;
    let (reads, writes, trims) = (
        trace.has(IoDir::Read),
        trace.has(IoDir::Write),
        trace.has(IoDir::Trim),
    );
    r.rw.direction = match (reads, writes, trims) {
        (false, true, false) => Direction::Write,
        (false, false, true) => Direction::Trim,
        (false, true, true) => Direction::TrimWrite,
        (true, false, false) => Direction::Read,
        _ => Direction::Mixed,
    };
    Ok(job)
}

fn human_mb(bytes_per_s: f64) -> String {
    format!("{:.1} MB", bytes_per_s / 1e6)
}

fn human_ms(ns: u64) -> String {
    if ns >= 1_000_000_000 {
        format!("{:.2} s", ns as f64 / 1e9)
    } else {
        format!("{:.1} ms", ns as f64 / 1e6)
    }
}

/// Whether exec's `program=` names an executable file, by path or on PATH.
fn program_exists(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(std::path::Path::new(program));
    }
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| executable(&dir.join(program)))
    })
}
