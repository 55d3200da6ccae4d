//! fio's verify state and triggers: a writing job with `verify=` saves how far its writes
//! got when it ends (`verify_state_save`, on by default as in fio), in fio's file and
//! layout, in `--aux-path` or the current directory; a verifying read job of the same name
//! and place loads it (`verify_state_load`) and reads back only that far. A trigger
//! (`--trigger-timeout`, `--trigger-file`) ends every job at once, the power-cut test's
//! moment: the states are saved, then the trigger command (`--trigger`) runs.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sinkrate_formats::fio_verify_state::{self, JobWriteState};
use sinkrate_jobspec::Job;

use crate::error::EngineError;

/// What one job does with its verify state.
#[derive(Debug, Clone, Default)]
pub struct VerifyStatePlan {
    /// Where the job saves its state when it ends: a writing job with verify and
    /// verify_state_save.
    pub save_to: Option<PathBuf>,
    /// The state a verifying read job loaded (verify_state_load).
    pub loaded: Option<JobWriteState>,
    /// The job's place in the run, from 0 (fio's thread number less one).
    pub index: u64,
}

/// A state file this big is not fio's nor sinkrate's (a job's is a few kilobytes).
const STATE_FILE_BYTES: u64 = 64 << 20;

/// Plans job `index`'s state: the file it saves checked writable, the file it loads read
/// and checked, before any job runs.
pub fn plan(
    job: &Job,
    index: usize,
    dir: Option<&Path>,
    read_only: bool,
) -> Result<VerifyStatePlan, EngineError> {
    let o = &job.options;
    let mut plan = VerifyStatePlan {
        index: index as u64,
        ..VerifyStatePlan::default()
    };
    if o.verify.is_none() {
        return Ok(plan);
    }
    let Some(dir) = dir else {
        // sinkrate's own sessions keep no state between runs.
        if o.verify_state_load {
            return Err(EngineError::job(
                &o.name,
                "verify_state_load=1 is for sinkrate bench, which saves and loads verify states",
            ));
        }
        return Ok(plan);
    };
    let path = dir.join(fio_verify_state::file_name(&o.name, index as u64));
    let writes = o.rw.writes() && !o.ioengine.is_side_load();
    if writes && o.verify_state_save && !read_only {
        sinkrate_sys::output::writable_here(&path).map_err(|e| {
            EngineError::job(
                &o.name,
                format!(
                    "its verify state goes to {} (verify_state_save=1, fio's default) and cannot be written there: {e} (choose a directory with --aux-path, or set verify_state_save=0)",
                    path.display()
                ),
            )
        })?;
        plan.save_to = Some(path);
    } else if o.verify_state_load && !writes {
        let bytes = sinkrate_sys::input::read_capped(&path, STATE_FILE_BYTES).map_err(|e| {
            EngineError::job(
                &o.name,
                format!(
                    "verify_state_load=1 reads {}: {e} (the writing job of the same name and place saves it; give the --aux-path it ran with)",
                    path.display()
                ),
            )
        })?;
        let state = fio_verify_state::decode(&bytes).map_err(|e| {
            EngineError::job(
                &o.name,
                format!(
                    "verify_state_load=1: {} is not a verify state: {e}",
                    path.display()
                ),
            )
        })?;
        plan.loaded = Some(state);
    }
    Ok(plan)
}

/// Saves a job's state as fio does (whole or not at all) and says where.
pub fn save(path: &Path, state: &JobWriteState) -> Result<String, String> {
    sinkrate_sys::output::replace(path, &fio_verify_state::encode(state))
        .map(|()| {
            format!(
                "job '{}': saved its verify state in {} ({} writes issued)",
                state.name,
                path.display(),
                state.writes_issued
            )
        })
        .map_err(|e| format!("cannot save its verify state in {}: {e}", path.display()))
}

/// fio's `--trigger-timeout`, `--trigger-file` and `--trigger`.
#[derive(Debug, Clone, Default)]
pub struct Trigger {
    /// Fire this long after the run starts.
    pub after: Option<Duration>,
    /// Fire when this file exists.
    pub file: Option<PathBuf>,
    /// Run this (with `sh -c`) once the jobs are stopped and their states saved.
    pub command: Option<String>,
}

impl Trigger {
    pub fn is_set(&self) -> bool {
        self.after.is_some() || self.file.is_some()
    }

    /// Watches for the trigger until `done`; sets `fired` with why when it fires.
    pub fn watch(
        &self,
        clock: crate::clock::Clock,
        fired: Arc<AtomicBool>,
        done: Arc<AtomicBool>,
    ) -> Option<std::thread::JoinHandle<Option<String>>> {
        if !self.is_set() {
            return None;
        }
        let trigger = self.clone();
        Some(std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let why = match (&trigger.after, &trigger.file) {
                    (Some(after), _) if clock.now_ns() >= after.as_nanos() as u64 => {
                        Some(format!("--trigger-timeout={}s", after.as_secs_f64()))
                    }
                    (_, Some(file)) if std::fs::symlink_metadata(file).is_ok() => {
                        Some(format!("--trigger-file {} appeared", file.display()))
                    }
                    _ => None,
                };
                if let Some(why) = why {
                    fired.store(true, Ordering::SeqCst);
                    return Some(why);
                }
                // fio looks for its trigger at its status-check interval; 10 ms keeps the
                // moment within a few writes of the one asked for.
                std::thread::sleep(Duration::from_millis(10));
            }
            None
        }))
    }

    /// Runs the trigger command, as fio's `system()`: its exit status, or why it could not.
    pub fn run_command(&self) -> Option<Result<std::process::ExitStatus, String>> {
        let cmd = self.command.as_ref()?;
        Some(
            std::process::Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .status()
                .map_err(|e| format!("--trigger: cannot run `{cmd}`: {e}")),
        )
    }
}
