//! `sinkrate bench`'s job files and fio options as the job set its session runs: the
//! default job, a job file on standard input, and the options on the command line.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{anyhow, Result};
use sinkrate_engine::debug_trace::DebugTrace;
use sinkrate_engine::runner::StatusLine;
use sinkrate_engine::{RunOptions, StatusReports};
use sinkrate_jobspec::{build_job_set, JobSet, JobSources};

use super::BenchArgs;

/// The job `sinkrate bench` runs with no job file and no options: what a recorder needs to
/// know first, the device's sustained sequential write rate with the page cache out of the
/// way (direct I/O, or a final fsync where direct I/O is refused).
pub const DEFAULT_JOB: &str = "\
[sinkrate-default]
; sequential 1 MiB writes straight to the device for 10 s
rw=write
bs=1m
size=256m
direct=1
time_based
runtime=10s
end_fsync=1
";

/// A job file on standard input (`-`), read with the bound every job file has.
pub fn read_stdin_job() -> Result<String> {
    let name = "a job file from standard input";
    let bytes = sinkrate_sys::input::read_from(
        std::io::stdin().lock(),
        sinkrate_sys::input::JOB_FILE_BYTES,
    )
    .map_err(|e| anyhow!("{name}: {e}"))?;
    sinkrate_sys::input::text(bytes).map_err(|e| anyhow!("{name}: {e}"))
}

/// The jobs the arguments name.
pub fn load_jobs(args: &BenchArgs) -> Result<JobSet> {
    let mut files: Vec<PathBuf> = Vec::new();
    let mut texts: Vec<(PathBuf, String)> = Vec::new();
    for f in &args.job_files {
        if f.as_os_str() == "-" {
            let text = read_stdin_job()?;
            texts.push((PathBuf::from("<stdin>"), text));
        } else {
            files.push(f.clone());
        }
    }
    let mut cli_options = args.job_options.clone();
    let no_files = files.is_empty() && texts.is_empty();
    if no_files && cli_options.is_empty() {
        texts.push((
            PathBuf::from("<built-in default job>"),
            DEFAULT_JOB.to_string(),
        ));
    } else if no_files
        && !cli_options
            .iter()
            .any(|o| o.starts_with("--name=") || o == "--name")
    {
        cli_options.insert(0, "--name=sinkrate".to_string());
    }
    let set = build_job_set(
        &JobSources {
            files: &files,
            texts: &texts,
            cli_options: &cli_options,
            ignore_unsupported: args.ignore_unsupported,
        },
        &sinkrate_engine::probe::LiveContext,
    )?;
    let mut set = set;
    if !args.section.is_empty() {
        let names: Vec<&str> = set.jobs.iter().map(|j| j.options.name.as_str()).collect();
        if let Some(missing) = args.section.iter().find(|s| !names.contains(&s.as_str())) {
            let mut known = names.clone();
            known.dedup();
            return Err(anyhow!(
                "--section {missing}: no job of that name (the jobs: {})",
                known.join(", ")
            ));
        }
        set.jobs.retain(|j| args.section.contains(&j.options.name));
    }
    if args.readonly {
        // As fio's --readonly: writes and trims alike.
        if let Some(j) = set.jobs.iter().find(|j| j.options.rw.modifies()) {
            return Err(anyhow!(
                "{}: job '{}' writes or trims (rw={}), and --readonly refuses every write and trim (use rw=read or randread)",
                j.origin,
                j.options.name,
                j.options.rw.fio_name()
            ));
        }
        if let Some(j) = set.jobs.iter().find(|j| j.options.ioengine.changes_files()) {
            return Err(anyhow!(
                "{}: job '{}' changes files (ioengine={}), and --readonly refuses every write (use filestat, dirstat or a read job)",
                j.origin,
                j.options.name,
                j.options.ioengine.fio_name()
            ));
        }
    }
    Ok(set)
}

/// What the engine runs the jobs with, from the flags: files, safety, the status line and
/// reports, debug tracing.
pub fn run_options(
    args: &BenchArgs,
    stop: Arc<AtomicBool>,
    status_reports: Option<StatusReports>,
    debug: DebugTrace,
) -> RunOptions {
    RunOptions {
        read_only: args.readonly,
        base_dir: PathBuf::from("."),
        force_device_write: args.force,
        // fio keeps the files a job made unless it says unlink=1.
        made_files: if args.keep {
            sinkrate_engine::runner::MadeFiles::Kept
        } else {
            sinkrate_engine::runner::MadeFiles::KeptUnlessUnlinked
        },
        stop,
        show_status: match args.eta.as_str() {
            "always" => StatusLine::Always,
            "never" => StatusLine::Never,
            _ => StatusLine::Auto,
        },
        bandwidth_log: args.bandwidth_log,
        status_reports,
        debug,
        aux_dir: Some(args.aux_path.clone().unwrap_or_else(|| PathBuf::from("."))),
        trigger: sinkrate_engine::verify_state::Trigger {
            after: args.trigger_timeout,
            file: args.trigger_file.clone(),
            command: args.trigger.clone(),
        },
    }
}
