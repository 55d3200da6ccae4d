//! `sinkrate bench`: fio job files and options in, fio-compatible results out, with the
//! honesty warnings fio does not give.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Context, Result};
use sinkrate_bench_output::OutputFormat;

use sinkrate_jobspec::JobSet;
use sinkrate_sampler::{analyse, Sampler, SamplerConfig};

use crate::cli::bench_config::{load_jobs, run_options};
use crate::cli::BenchArgs;
use crate::cmd::bench_info;
use crate::export::bench::{BenchJson, BenchResult, BenchTerse, BenchText};
use crate::export::Exporter;

/// The results in each output format asked for, one after another.
fn render(formats: &[OutputFormat], result: &BenchResult) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for f in formats {
        out.extend(match f {
            OutputFormat::Normal => BenchText.export(result)?,
            OutputFormat::Json => BenchJson { plus: false }.export(result)?,
            OutputFormat::JsonPlus => BenchJson { plus: true }.export(result)?,
            OutputFormat::Terse => BenchTerse.export(result)?,
        });
    }
    Ok(out)
}

pub fn run(args: BenchArgs) -> Result<ExitCode> {
    if let Some(answered) = bench_info::answer(&args) {
        return answered;
    }
    if let Some(v) = args.terse_version.filter(|v| *v != 3) {
        return Err(anyhow!(
            "--terse-version={v}: sinkrate writes terse version 3, fio's default (use --terse-version=3 or leave it out)"
        ));
    }
    let formats = if args.minimal {
        vec![OutputFormat::Terse]
    } else {
        OutputFormat::parse_list(&args.output_format).map_err(|e| anyhow!(e))?
    };
    let job_files: Vec<&std::path::Path> = args
        .job_files
        .iter()
        .map(PathBuf::as_path)
        .filter(|f| f.as_os_str() != "-")
        .collect();
    crate::check_outputs(
        &[
            ("--output", args.output.as_deref()),
            ("--report", args.report.as_deref()),
        ],
        &job_files,
    )?;
    check_trigger_flags(&args)?;
    let set = load_jobs(&args)?;
    check_job_limits(&args, &set)?;
    if args.parse_only {
        for n in &set.notices {
            eprintln!("sinkrate: note: {n}");
        }
        crate::write_stdout(crate::export::bench::describe_jobs(&set).as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    let debug = match &args.debug {
        Some(list) => {
            sinkrate_engine::debug_trace::DebugTrace::parse(list).map_err(|e| anyhow!(e))?
        }
        None => Default::default(),
    };
    for (on, kind) in [(debug.io, "io"), (debug.file, "file")] {
        if on {
            eprintln!("sinkrate: set debug option {kind}");
        }
    }
    let stop = crate::interrupt_flag()?;
    // --status-interval's reports: on standard output as they come, or gathered before the
    // final results when those go to a file.
    let interim = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let status_reports = status_reports(&args, &formats, &interim);
    let options = run_options(&args, stop, status_reports, debug);
    let prepared = sinkrate_engine::prepare(&set, &options)?;
    let announced = prepared.notices().len();
    // Standard error stays as silent as fio's (harnesses take any line there for a
    // failure): sinkrate's notes and warnings are in the results, and said there too on a
    // terminal, or with --notes, unless the text on standard output says them already.
    let text_on_stdout = formats.contains(&OutputFormat::Normal) && args.output.is_none();
    let say_on_stderr = args.notes || (std::io::stderr().is_terminal() && !text_on_stdout);
    // What fio would do without a word stays in the JSON's notices and `--parse-only`.
    let silent: std::collections::HashSet<String> = set
        .notices
        .iter()
        .filter(|n| n.informational)
        .map(|n| n.to_string())
        .collect();
    let worth_saying = |n: &&String| !silent.contains(*n);
    if say_on_stderr {
        for n in prepared.notices().iter().filter(worth_saying) {
            eprintln!("sinkrate: note: {n}");
        }
    }
    let sampler = start_sampler(&args, &set, &prepared)?;
    let run = sinkrate_engine::execute(prepared, &options);
    // The sampler's output with its summary, analysed once for every output format.
    let sampled = sampler.map(|(s, interval)| {
        let out = s.stop();
        let summary = analyse(&out.timeline, out.settings);
        (out, interval, summary)
    });
    if say_on_stderr {
        for n in run.notices.iter().skip(announced).filter(worth_saying) {
            eprintln!("sinkrate: note: {n}");
        }
    }
    let notes: Vec<String> = run.notices.iter().filter(worth_saying).cloned().collect();
    let result = BenchResult {
        run: &run,
        sampled: sampled.as_ref().map(|(s, i, sum)| (s, *i, sum)),
        notes: &notes,
    };
    let mut out = std::mem::take(&mut *interim.lock().unwrap_or_else(|p| p.into_inner()));
    out.extend(render(&formats, &result)?);
    if say_on_stderr {
        for w in &run.warnings {
            eprintln!("sinkrate: warning [{}]: {}", w.id, w.text);
        }
    }
    match &args.output {
        Some(path) => {
            sinkrate_sys::output::result(path, &out)
                .with_context(|| format!("{}: cannot write the results", path.display()))?;
        }
        None => crate::write_stdout(&out)?,
    }
    if let Some(p) = &args.report {
        let json = BenchJson { plus: false }.export(&result)?;
        super::report::write_for_run(&json, "bench", p)?;
    }
    for job in &run.jobs {
        if let Some(t) = &job.error_text {
            eprintln!("sinkrate: job '{}' failed: {t}", job.name);
        }
    }
    if run.interrupted {
        eprintln!("sinkrate: interrupted; the results above are partial");
        return Ok(ExitCode::from(130));
    }
    if run.jobs.iter().any(|j| j.error != 0) {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--aux-path` and the trigger flags, before any job is read.
fn check_trigger_flags(args: &BenchArgs) -> Result<()> {
    if let Some(dir) = &args.aux_path {
        if !dir.is_dir() {
            return Err(anyhow!(
                "--aux-path {}: not a directory (verify states are saved and loaded there; make it first)",
                dir.display()
            ));
        }
    }
    if args.trigger_timeout.is_some_and(|t| t.is_zero()) {
        return Err(anyhow!(
            "--trigger-timeout=0: the trigger would fire before any write (give a time after the start, e.g. --trigger-timeout=10s)"
        ));
    }
    if args.trigger.is_some() && args.trigger_timeout.is_none() && args.trigger_file.is_none() {
        return Err(anyhow!(
            "--trigger runs its command when a trigger fires: give --trigger-timeout or --trigger-file too"
        ));
    }
    Ok(())
}

/// `--max-jobs` and `--warnings-fatal`, asked of the jobs as parsed, before any runs.
fn check_job_limits(args: &BenchArgs, set: &JobSet) -> Result<()> {
    if let Some(max) = args.max_jobs {
        if set.jobs.len() > max {
            return Err(anyhow!(
                "--max-jobs={max}: the job files define {} jobs (numjobs clones counted); raise --max-jobs or run fewer",
                set.jobs.len()
            ));
        }
    }
    if args.warnings_fatal {
        if let Some(n) = set.notices.iter().find(|n| !n.informational) {
            return Err(anyhow!("{n} (--warnings-fatal)"));
        }
    }
    Ok(())
}

/// `--status-interval`'s reports: each rendered in the output formats, on standard output as
/// it comes, or gathered in `interim` (ahead of the final results) when those go to a file.
fn status_reports(
    args: &BenchArgs,
    formats: &[OutputFormat],
    interim: &Arc<Mutex<Vec<u8>>>,
) -> Option<sinkrate_engine::StatusReports> {
    // fio reads --status-interval=0 as off.
    args.status_interval.filter(|d| !d.is_zero()).map(|every| {
        let formats = formats.to_vec();
        let to_file = args.output.is_some();
        let gathered = Arc::clone(interim);
        sinkrate_engine::StatusReports {
            every,
            emit: Box::new(move |run: &sinkrate_model::BenchRun| {
                let result = BenchResult {
                    run,
                    sampled: None,
                    notes: &[],
                };
                match render(&formats, &result) {
                    Ok(out) if to_file => gathered
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .extend(out),
                    Ok(out) => {
                        if let Err(e) = crate::write_stdout(&out) {
                            eprintln!("sinkrate: warning: --status-interval: {e}");
                        }
                    }
                    Err(e) => eprintln!("sinkrate: warning: --status-interval: {e}"),
                }
            }),
        }
    })
}

/// The sampler beside the jobs (unless `--no-sampler`), on the devices the jobs use, at
/// `--sample-interval`.
fn start_sampler(
    args: &BenchArgs,
    set: &JobSet,
    prepared: &sinkrate_engine::PreparedRun,
) -> Result<Option<(Sampler, std::time::Duration)>> {
    if args.no_sampler {
        return Ok(None);
    }
    let interval = crate::cli::values::duration("sample-interval", &args.sample_interval)?;
    if interval < std::time::Duration::from_millis(10) {
        return Err(anyhow!(
            "--sample-interval: {} is below the 10ms minimum",
            args.sample_interval
        ));
    }
    let expected = set
        .jobs
        .iter()
        .filter_map(|j| j.options.runtime)
        .max()
        .unwrap_or_default();
    let config = SamplerConfig {
        interval,
        devices: sinkrate_sys::host::device_names(prepared.targets()),
        hogs: false,
        ..SamplerConfig::default()
    };
    Ok(Some((Sampler::start(config, expected), interval)))
}
