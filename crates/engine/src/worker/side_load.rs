//! Jobs that do no I/O but load the machine beside those that do: `cpuio` (a CPU burn of
//! `cpuload` percent in cycles of `cpuchunks` microseconds, as fio's) and `exec` (a program
//! run for the job's runtime, stopped with SIGTERM and after `grace_time` with SIGKILL).

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use sinkrate_jobspec::options::Engine;
use sinkrate_model::DirectionResult;

use super::account_one_at_a_time;
use super::thread_rusage;
use super::WorkerOutcome;
use super::WorkerSetup;
use crate::error::EngineError;
use crate::progress::Phase;

pub(super) fn run_side_load(
    setup: &WorkerSetup,
    outcome: &mut WorkerOutcome,
) -> Result<(), EngineError> {
    let start = setup.clock.now_ns();
    setup.progress.started_ns.store(start, Ordering::Relaxed);
    setup.progress.set_phase(Phase::Running);
    let cpu_before = thread_rusage();
    let mut rec = DirectionResult::default();
    let result = match setup.job.options.ioengine {
        Engine::Exec => run_program(setup, start),
        _ => {
            burn(setup, start, &mut rec);
            Ok(())
        }
    };
    let end = setup.clock.now_ns();
    rec.runtime_ns = (end - start).max(1);
    account_one_at_a_time(outcome, cpu_before, rec.runtime_ns);
    outcome.result.read = rec;
    result
}

/// Whether the job's time is up, or (exit_on_io_done) the I/O jobs beside it are done.
fn over(setup: &WorkerSetup, start: u64) -> bool {
    let o = &setup.job.options;
    setup.stop.load(Ordering::Relaxed)
        || o.runtime
            .is_some_and(|rt| setup.clock.now_ns() - start >= rt.as_nanos() as u64)
        || (o.exit_on_io_done && setup.io_jobs_running.load(Ordering::Acquire) == 0)
}

/// Busy for `cpuchunks` microseconds, then idle for the rest of a cycle that makes the
/// busy share `cpuload` percent; each busy stretch is one completion-latency sample.
fn burn(setup: &WorkerSetup, start: u64, rec: &mut DirectionResult) {
    let o = &setup.job.options;
    let load = u64::from(o.cpuload.unwrap_or(100).clamp(1, 100));
    let busy_ns = o.cpuchunks_us * 1_000;
    let idle_ns = busy_ns * (100 - load) / load;
    let mut numbers: Vec<u64> = Vec::new();
    let mut rng = crate::rng::Rng::new(o.randseed);
    while !over(setup, start) {
        let t0 = setup.clock.now_ns();
        let until = t0 + busy_ns;
        while setup.clock.now_ns() < until {
            if o.cpumode_qsort {
                // Sorting shuffled numbers keeps the caches and branch predictors busy, so
                // the CPU draws more power than spinning does (fio's reason for the mode).
                numbers.clear();
                numbers.extend((0..4096).map(|_| rng.next_u64()));
                numbers.sort_unstable();
            } else {
                std::hint::spin_loop();
            }
        }
        let t1 = setup.clock.now_ns();
        rec.clat.record(t1 - t0);
        rec.total_ios += 1;
        if idle_ns > 0 {
            let wake = t1 + idle_ns;
            while setup.clock.now_ns() < wake && !over(setup, start) {
                setup
                    .clock
                    .sleep_until((setup.clock.now_ns() + 50_000_000).min(wake));
            }
        }
    }
}

/// The program's argument list, with fio's `%r` (runtime in seconds) and `%n` (job name).
pub fn program_arguments(o: &sinkrate_jobspec::JobOptions) -> Vec<String> {
    let runtime = o.runtime.map(|r| r.as_secs()).unwrap_or(0).to_string();
    o.arguments
        .as_deref()
        .unwrap_or_default()
        .split_whitespace()
        .map(|a| a.replace("%r", &runtime).replace("%n", &o.name))
        .collect()
}

fn run_program(setup: &WorkerSetup, start: u64) -> Result<(), EngineError> {
    let o = &setup.job.options;
    let program = o.program.as_deref().unwrap_or_default();
    let mut cmd = Command::new(program);
    cmd.args(program_arguments(o)).stdin(Stdio::null());
    if o.std_redirect {
        let file = |ext: &str| {
            let path = std::path::PathBuf::from(format!("{}.{ext}", o.name));
            std::fs::File::create(&path).map_err(|e| EngineError::io(&path, e))
        };
        cmd.stdout(file("stdout")?).stderr(file("stderr")?);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| EngineError::io(std::path::Path::new(program), e))?;
    let pid = child.id() as libc::pid_t;
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| EngineError::io(std::path::Path::new(program), e))?
        {
            return match status.code() {
                Some(0) => {
                    // With time_based the job lasts its runtime, as fio's does.
                    if o.time_based && o.runtime.is_some() {
                        while !over(setup, start) {
                            setup.clock.sleep_until(setup.clock.now_ns() + 10_000_000);
                        }
                    }
                    Ok(())
                }
                Some(code) => Err(EngineError::path(
                    std::path::Path::new(program),
                    format!("exited with status {code}"),
                )),
                None => Ok(()),
            };
        }
        if over(setup, start) {
            break;
        }
        setup.clock.sleep_until(setup.clock.now_ns() + 10_000_000);
    }
    // As fio's exec engine: SIGTERM, then SIGKILL after grace_time.
    sinkrate_platform::child::stop(
        pid,
        sinkrate_platform::child::Signal::Term,
        o.grace_time,
        &mut || matches!(child.try_wait(), Ok(None)),
    );
    let _ = child.wait();
    Ok(())
}

/// How many I/O jobs of a stonewall segment are still running (exit_on_io_done).
pub type IoJobsRunning = std::sync::Arc<AtomicUsize>;
