//! fio's `--status-interval`: every interval, the results so far (each job's figures as
//! its final result will hold them), handed to the command to print in its output format.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sinkrate_model::{BenchRun, JobResult};

use crate::clock::Clock;
use crate::disk_util::DiskWatch;
use crate::progress::{JobProgress, Phase};

/// How long the jobs get to publish their figures: a job in the middle of a long I/O keeps
/// its previous ones.
const ANSWER_WITHIN: Duration = Duration::from_millis(100);

pub struct StatusReports {
    pub every: Duration,
    /// Called with the run so far, from the reporting thread.
    pub emit: Box<dyn Fn(&BenchRun) + Sync>,
}

/// Reports every `reports.every` until `done`. `bases` are the jobs' names and options,
/// in run order; `template` the run's facts; `disks` the disks' counts so far, as fio's
/// reports carry them.
pub(crate) fn report_until_done(
    reports: &StatusReports,
    template: &BenchRun,
    bases: &[JobResult],
    progress: &[Arc<JobProgress>],
    disks: &DiskWatch,
    clock: Clock,
    done: &AtomicBool,
) {
    let every = reports.every.as_nanos().max(1) as u64;
    let mut next = every;
    loop {
        if done.load(Ordering::Relaxed) {
            return;
        }
        while clock.now_ns() < next {
            if done.load(Ordering::Relaxed) {
                return;
            }
            let left = next.saturating_sub(clock.now_ns());
            std::thread::sleep(Duration::from_nanos(left.min(20_000_000)));
        }
        let asked: Vec<&Arc<JobProgress>> = progress
            .iter()
            .filter(|p| !matches!(p.phase(), Phase::Waiting | Phase::Done))
            .collect();
        for p in &asked {
            p.snapshot_wanted.store(true, Ordering::Release);
        }
        let deadline = clock.now_ns() + ANSWER_WITHIN.as_nanos() as u64;
        while asked
            .iter()
            .any(|p| p.snapshot_wanted.load(Ordering::Acquire))
            && clock.now_ns() < deadline
            && !done.load(Ordering::Relaxed)
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut run = template.clone();
        run.elapsed_ns = clock.now_ns();
        run.disk_util = disks.so_far();
        run.jobs = bases
            .iter()
            .zip(progress)
            .map(|(base, p)| with_figures(base, p.latest()))
            .collect();
        (reports.emit)(&run);
        // The next slot still ahead: a report that took longer than the interval skips the
        // slots it overran instead of emitting them back to back.
        let now = clock.now_ns();
        next += every;
        if next <= now {
            next += (now - next) / every * every + every;
        }
    }
}

/// A job's name and options with its figures so far (none yet: zeros, as fio's).
fn with_figures(base: &JobResult, figures: Option<JobResult>) -> JobResult {
    let mut r = figures.unwrap_or_default();
    r.name.clone_from(&base.name);
    r.group = base.group;
    r.job_number = base.job_number;
    r.pid = base.pid;
    r.options.clone_from(&base.options);
    r.written_options.clone_from(&base.written_options);
    r.written_globals.clone_from(&base.written_globals);
    r
}
