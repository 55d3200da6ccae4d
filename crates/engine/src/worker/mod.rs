//! One job's life: open and lay out its files, run the I/O loop (synchronous or queued),
//! apply rate limits, think time, fsyncs, steady-state and latency-target rules, then flush,
//! close and clean up. Everything measured lands in a [`JobResult`].

mod block_io;
mod choose;
mod file_ops;
mod io_loop;
mod monitors;
mod open;
mod pacing;
mod priority;
mod random_map;
mod range_sync;
mod replaying;
mod rwmix;
mod side_load;
mod snapshot;

use block_io::run_block_io;

use file_ops::run_file_operations;

use side_load::run_side_load;
pub use side_load::{program_arguments, IoJobsRunning};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sinkrate_jobspec::Job;
use sinkrate_model::JobResult;

use crate::clock::Clock;
use crate::files::PlannedFile;
use crate::progress::{JobProgress, Phase};
use open::release_unopened;

/// fio's default bandwidth/IOPS averaging period.
pub(crate) const SAMPLE_PERIOD_NS: u64 = 500_000_000;

pub(crate) const NS_PER_S: u64 = 1_000_000_000;

/// What the runner hands a worker.
pub struct WorkerSetup {
    pub job: Job,
    pub job_number: u32,
    pub files: Vec<PlannedFile>,
    pub clock: Clock,
    pub stop: Arc<AtomicBool>,
    pub progress: Arc<JobProgress>,
    pub force_device_write: bool,
    pub made_files: crate::runner::MadeFiles,
    pub unix_start_ms: u64,
    pub read_meminfo: fn() -> Option<u64>,
    /// The I/O jobs (not cpuio or exec) of this job's stonewall segment still running.
    pub io_jobs_running: IoJobsRunning,
    /// The flow (fio's flow_id) this job's I/Os are counted in, when it has a flow weight.
    pub flow: Option<Arc<crate::flow::FlowGroup>>,
    /// Who else uses this job's files, so that the last one removes what the run made.
    pub shared_files: Arc<crate::shared_files::SharedFiles>,
    /// For a job that starts with others: its I/O begins when theirs does.
    pub start_gate: Option<crate::start_gate::GateTicket>,
    /// --debug=io,file.
    pub debug: crate::debug_trace::DebugTrace,
    /// verify_state_save and verify_state_load: where the job's state goes, what it loaded.
    pub verify_state: crate::verify_state::VerifyStatePlan,
}

/// What a worker reports besides the results.
#[derive(Default)]
pub struct WorkerOutcome {
    pub result: JobResult,
    pub notices: Vec<String>,
    pub direct_fell_back: bool,
    pub removed_files: Vec<std::path::PathBuf>,
    /// Files the job made, or found kept by an earlier run, and leaves in place: the run
    /// lists them as kept once every job is done.
    pub kept_files: Vec<std::path::PathBuf>,
    pub log_files: Vec<std::path::PathBuf>,
}

pub fn run_job(setup: WorkerSetup) -> WorkerOutcome {
    let mut outcome = WorkerOutcome::default();
    let o = setup.job.options.clone();
    let job_started = setup.clock.now_ns();
    outcome.result.name = o.name.clone();
    outcome.result.group = setup.job.group;
    outcome.result.job_number = setup.job_number;
    outcome.result.pid = std::process::id();
    outcome.result.options = o.clone();
    outcome.result.written_options = setup.job.written.clone();
    outcome.result.written_globals = setup.job.written_globals.clone();

    if !o.startdelay.is_zero() {
        let until = setup.clock.now_ns() + o.startdelay.as_nanos() as u64;
        while setup.clock.now_ns() < until && !setup.stop.load(Ordering::Relaxed) {
            setup
                .clock
                .sleep_until((setup.clock.now_ns() + 50_000_000).min(until));
        }
    }
    if setup.stop.load(Ordering::Relaxed) {
        // Ended before it began (exitall, Ctrl-C): its files may be the last use of a file
        // an earlier job made.
        release_unopened(&setup, &mut outcome);
        setup.progress.set_phase(Phase::Done);
        return outcome;
    }
    setup.progress.set_phase(Phase::Preparing);
    let result = match o.ioengine {
        e if e.is_metadata() => run_file_operations(&setup, &mut outcome),
        e if e.is_side_load() => run_side_load(&setup, &mut outcome),
        _ => run_block_io(&setup, &mut outcome),
    };
    match result {
        Err(_) if setup.stop.load(Ordering::Relaxed) => {}
        Err(e) => {
            outcome.result.error = e.errno();
            outcome.result.error_text = Some(e.to_string());
        }
        Ok(()) => {}
    }
    outcome.result.elapsed_ns = setup.clock.now_ns() - job_started;
    if setup.progress.snapshots_on.load(Ordering::Relaxed) {
        setup.progress.publish(outcome.result.clone());
    }
    setup.progress.set_phase(Phase::Done);
    outcome
}

/// The CPU a job of one operation at a time (a metadata engine, cpuio, exec) used over its
/// runtime, from the thread's rusage before and now, and its depth (always 1).
pub(super) fn account_one_at_a_time(
    outcome: &mut WorkerOutcome,
    before: Option<ThreadUsage>,
    runtime_ns: u64,
) {
    if let (Some(a), Some(b)) = (before, thread_rusage()) {
        let used = b.since(&a);
        outcome.result.usr_cpu_pct = 100.0 * used.user_ns as f64 / runtime_ns as f64;
        outcome.result.sys_cpu_pct = 100.0 * used.system_ns as f64 / runtime_ns as f64;
        outcome.result.ctx_switches = used.context_switches;
    }
    outcome.result.iodepth_level = [100.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
}

/// A depth histogram in percent, as fio's stat_calc_dist: a bucket that was ever used shows
/// at least 0.1%.
pub(super) fn shares(h: &[u64; 7]) -> [f64; 7] {
    let total: u64 = h.iter().sum();
    let mut out = [0.0; 7];
    if total > 0 {
        for (o, v) in out.iter_mut().zip(h) {
            *o = 100.0 * *v as f64 / total as f64;
            if *v > 0 {
                *o = o.max(0.1);
            }
        }
    }
    out
}

pub(crate) use sinkrate_platform::cpu::{thread_usage as thread_rusage, ThreadUsage};
