//! Starts and ends the jobs of a run as fio does: stonewall segments one after another,
//! `wait_for` jobs once their waitees are done, `exitall`/`exit_what`/`exitall_on_error`
//! ending other jobs when one ends, and Ctrl-C ending all of them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use sinkrate_jobspec::coordination::ExitWhat;
use sinkrate_jobspec::Job;

use crate::files::PlannedFile;
use crate::flow::FlowGroup;
use crate::worker::{run_job, WorkerOutcome, WorkerSetup};

/// What every worker shares, whatever its job.
pub(crate) struct Shared {
    pub clock: crate::clock::Clock,
    pub stop: Arc<AtomicBool>,
    pub progress: Vec<Arc<crate::progress::JobProgress>>,
    pub force_device_write: bool,
    pub made_files: crate::runner::MadeFiles,
    pub unix_start_ms: u64,
    pub debug: crate::debug_trace::DebugTrace,
    /// Set when fio's trigger fires: every job ends at once, no later job starts, and the
    /// run is not interrupted (its results are whole up to that moment).
    pub triggered: Arc<AtomicBool>,
    /// Each job's verify state plan, in job order.
    pub verify_states: Vec<crate::verify_state::VerifyStatePlan>,
    /// Where jobs without `directory=` put their files (a job sized as it starts is
    /// planned again there).
    pub base_dir: std::path::PathBuf,
}

impl Shared {
    /// Whether every job must end now: Ctrl-C, or the trigger.
    fn ending(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.triggered.load(Ordering::Relaxed)
    }
}

/// Runs every job to its end and returns their outcomes in job order (a job that could not
/// start or whose worker failed has an error outcome).
pub(crate) fn run_all(
    jobs: Vec<(Job, Vec<PlannedFile>)>,
    shared: &Shared,
) -> Vec<Option<WorkerOutcome>> {
    let n = jobs.len();
    let job_stop: Vec<Arc<AtomicBool>> = (0..n).map(|_| Arc::new(AtomicBool::new(false))).collect();
    let meta: Vec<JobMeta> = jobs.iter().map(|(j, _)| JobMeta::of(j)).collect();
    let flows = flow_groups(&jobs);
    // Only block-I/O jobs give their files up through the registry; the metadata engines
    // make and remove their own.
    let shared_files = Arc::new(crate::shared_files::SharedFiles::new(
        jobs.iter()
            .zip(&meta)
            .filter(|(_, m)| m.block_io)
            .map(|((_, files), _)| files.as_slice()),
    ));
    let mut outcomes: Vec<Option<WorkerOutcome>> = (0..n).map(|_| None).collect();
    let mut done = vec![false; n];
    let mut slots: Vec<Option<(Job, Vec<PlannedFile>)>> = jobs.into_iter().map(Some).collect();
    let mut end_everything = false;
    for segment in segments(&meta) {
        if shared.ending() {
            break;
        }
        if end_everything {
            for &i in &segment {
                job_stop[i].store(true, Ordering::Relaxed);
            }
        }
        let io_jobs_running = Arc::new(AtomicUsize::new(
            segment.iter().filter(|i| !meta[**i].side_load).count(),
        ));
        // Every worker reports, a panicked one with None.
        let (finished_tx, finished_rx) = mpsc::channel::<(usize, Option<WorkerOutcome>)>();
        // The I/O jobs that start at once wait for each other's files before any I/O.
        let starting_together: Vec<usize> = segment
            .iter()
            .copied()
            .filter(|&i| meta[i].block_io && meta[i].wait_for.is_none())
            .collect();
        let gate = crate::start_gate::StartGate::new(starting_together.len());
        let mut pending: Vec<usize> = segment.clone();
        let mut running: Vec<usize> = Vec::new();
        loop {
            // Start each pending job whose waitees are all done, in job order.
            let mut still_pending = Vec::new();
            for i in pending {
                let waits = meta[i]
                    .wait_for
                    .as_ref()
                    .is_some_and(|name| (0..i).any(|w| meta[w].name == *name && !done[w]));
                if waits {
                    still_pending.push(i);
                    continue;
                }
                let Some((job, mut files)) = slots[i].take() else {
                    continue;
                };
                // Sized now, from the files an earlier phase made (fio sizes a job's files
                // as it starts).
                if files.iter().any(|f| f.sized_at_start) {
                    match crate::files::plan_files(&job, &shared.base_dir) {
                        Ok(sized) => files = sized,
                        Err(e) => {
                            outcomes[i] = Some(failed(&meta[i], i, e.to_string()));
                            done[i] = true;
                            // Its place at the start gate given up: the others do not wait.
                            if starting_together.contains(&i) {
                                drop(crate::start_gate::GateTicket::new(gate.clone()));
                            }
                            if !meta[i].side_load {
                                io_jobs_running.fetch_sub(1, Ordering::AcqRel);
                            }
                            continue;
                        }
                    }
                }
                let setup = WorkerSetup {
                    job,
                    job_number: i as u32 + 1,
                    files,
                    clock: shared.clock,
                    stop: job_stop[i].clone(),
                    progress: shared.progress[i].clone(),
                    force_device_write: shared.force_device_write,
                    made_files: shared.made_files,
                    unix_start_ms: shared.unix_start_ms,
                    debug: shared.debug,
                    verify_state: shared.verify_states.get(i).cloned().unwrap_or_default(),
                    read_meminfo: crate::host::unwritten_bytes,
                    io_jobs_running: io_jobs_running.clone(),
                    flow: flows.get(&i).cloned(),
                    shared_files: shared_files.clone(),
                    start_gate: starting_together
                        .contains(&i)
                        .then(|| crate::start_gate::GateTicket::new(gate.clone())),
                };
                let tx = finished_tx.clone();
                let side_load = meta[i].side_load;
                let counter = io_jobs_running.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("sinkrate-job{}", i + 1))
                    .spawn(move || {
                        let outcome =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                run_job(setup)
                            }))
                            .ok();
                        if !side_load {
                            counter.fetch_sub(1, Ordering::AcqRel);
                        }
                        let _ = tx.send((i, outcome));
                    });
                match spawned {
                    Ok(_) => running.push(i),
                    Err(e) => {
                        outcomes[i] = Some(failed(&meta[i], i, format!("could not start: {e}")));
                        done[i] = true;
                        if !side_load {
                            io_jobs_running.fetch_sub(1, Ordering::AcqRel);
                        }
                    }
                }
            }
            pending = still_pending;
            if running.is_empty() {
                if pending.is_empty() {
                    break;
                }
                // Waitees that could not start leave their waiters nothing to wait for.
                for &i in &pending {
                    let why = "did not start: its wait_for job could not run".to_string();
                    outcomes[i] = Some(failed(&meta[i], i, why));
                    done[i] = true;
                }
                break;
            }
            let finished = match finished_rx.recv_timeout(Duration::from_millis(20)) {
                Ok(f) => Some(f),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            if shared.ending() {
                for &i in running.iter().chain(&pending) {
                    job_stop[i].store(true, Ordering::Relaxed);
                }
            }
            let Some((i, outcome)) = finished else {
                continue;
            };
            running.retain(|r| *r != i);
            done[i] = true;
            // A worker that panicked: the job failed, and the run must say so.
            let outcome = outcome.unwrap_or_else(|| {
                failed(
                    &meta[i],
                    i,
                    "stopped unexpectedly (an internal error; its results are lost)".to_string(),
                )
            });
            let failed = outcome.result.error != 0;
            outcomes[i] = Some(outcome);
            let m = &meta[i];
            let ends = if m.exitall_on_error && failed {
                Some(ExitWhat::All)
            } else if m.exitall {
                Some(m.exit_what)
            } else {
                None
            };
            match ends {
                Some(ExitWhat::Group) => {
                    for &j in running.iter().chain(&pending) {
                        if meta[j].group == m.group {
                            job_stop[j].store(true, Ordering::Relaxed);
                        }
                    }
                }
                Some(ExitWhat::Stonewall) => {
                    for &j in &running {
                        job_stop[j].store(true, Ordering::Relaxed);
                    }
                }
                Some(ExitWhat::All) => {
                    for &j in running.iter().chain(&pending) {
                        job_stop[j].store(true, Ordering::Relaxed);
                    }
                    end_everything = true;
                }
                None => {}
            }
        }
        // Jobs still running when the channel closed have reported nothing.
        while let Ok((i, outcome)) = finished_rx.try_recv() {
            outcomes[i] = outcome;
        }
    }
    shared_files.remove_made_dirs();
    outcomes
}

/// The result of a job that could not run to its end for a reason of sinkrate's own: an
/// error, so the run reports failure in its text, JSON and exit code.
fn failed(meta: &JobMeta, index: usize, why: String) -> WorkerOutcome {
    let mut outcome = WorkerOutcome::default();
    outcome.result.name = meta.name.clone();
    outcome.result.group = meta.group;
    outcome.result.job_number = index as u32 + 1;
    outcome.result.error = libc::EIO;
    outcome.result.error_text = Some(why);
    outcome
}

/// What the scheduler needs of a job, copied out so the job itself can move to its worker.
struct JobMeta {
    name: String,
    group: u32,
    stonewall: bool,
    side_load: bool,
    /// Reads and writes blocks (not a metadata engine, cpuio or exec).
    block_io: bool,
    wait_for: Option<String>,
    exitall: bool,
    exit_what: ExitWhat,
    exitall_on_error: bool,
}

impl JobMeta {
    fn of(job: &Job) -> JobMeta {
        let o = &job.options;
        let c = &o.coordination;
        JobMeta {
            name: o.name.clone(),
            group: job.group,
            stonewall: o.stonewall,
            side_load: o.ioengine.is_side_load(),
            block_io: !o.ioengine.is_side_load() && !o.ioengine.is_metadata(),
            wait_for: c.wait_for.clone(),
            exitall: c.exitall,
            exit_what: c.exit_what,
            exitall_on_error: c.exitall_on_error,
        }
    }
}

/// A job with stonewall waits for everything before it.
fn segments(meta: &[JobMeta]) -> Vec<Vec<usize>> {
    let mut segments: Vec<Vec<usize>> = Vec::new();
    for (i, m) in meta.iter().enumerate() {
        if segments.is_empty() || m.stonewall {
            segments.push(Vec::new());
        }
        if let Some(last) = segments.last_mut() {
            last.push(i);
        }
    }
    segments
}

/// The flow each job with a flow weight takes part in, by flow_id.
fn flow_groups(jobs: &[(Job, Vec<PlannedFile>)]) -> HashMap<usize, Arc<FlowGroup>> {
    let mut by_id: HashMap<u64, Arc<FlowGroup>> = HashMap::new();
    let mut out = HashMap::new();
    for (i, (job, _)) in jobs.iter().enumerate() {
        let c = &job.options.coordination;
        if c.flow > 0 {
            let group = by_id.entry(c.flow_id).or_default().clone();
            out.insert(i, group);
        }
    }
    out
}
