//! `sinkrate verify [PATH|DEVICE]`: flags to a config, the verify session, its typed result
//! rendered as text or JSON.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use sinkrate_model::verify::VerifyVerdict;
use sinkrate_model::{Envelope, RunError, RunKind};
use sinkrate_verify::capacity::{self, CapacityConfig};
use sinkrate_verify::{Config, VerifyError};

use crate::cli::values::size;
use crate::cli::VerifyArgs;
use crate::export::plan::{Printed, Style};

fn config(args: &VerifyArgs) -> Result<Config> {
    let block_size = size("block-size", &args.block_size)?;
    let size = args.size.as_deref().map(|s| size("size", s)).transpose()?;
    if size == Some(0) {
        return Err(anyhow!("--size: must be above zero (e.g. 4G)"));
    }
    Ok(Config {
        target: args.path.clone(),
        size,
        block_size: usize::try_from(block_size)
            .map_err(|_| anyhow!("--block-size {}: too large", args.block_size))?,
        keep: args.keep,
        read_only: args.read_only,
        force: args.force,
    })
}

pub fn run(args: VerifyArgs) -> Result<ExitCode> {
    // The target is an input: a result written over a kept run's file would lose it.
    crate::check_outputs(&[("--output", args.out.output.as_deref())], &[&args.path])?;
    // What a killed capacity probe overwrote goes back before anything else touches devices.
    for line in capacity::recover_pending(&capacity::undo::default_dir()) {
        eprintln!("sinkrate: note: {line}");
    }
    if args.capacity {
        return run_capacity(&args);
    }
    if args.class {
        return run_class(&args);
    }
    let cfg = config(&args)?;
    let stop = crate::interrupt_flag()?;
    let started = sinkrate_sys::host::unix_ms_now();
    let show = args.progress.wanted(std::io::stderr().is_terminal());
    let mut progress = |p: sinkrate_verify::session::Progress| {
        if !show {
            return;
        }
        let rate = p.done_bytes as f64 / p.phase_seconds.max(1e-3);
        let left = p.total_bytes.saturating_sub(p.done_bytes) as f64 / rate.max(1.0);
        let mut err = std::io::stderr();
        let _ = write!(
            err,
            "\rsinkrate verify: {} {:5.1}%  {:.1} MB/s  {:.0} s left   ",
            if p.reading { "reading" } else { "writing" },
            100.0 * p.done_bytes as f64 / p.total_bytes.max(1) as f64,
            rate / 1e6,
            left
        );
        let _ = err.flush();
    };
    let result = sinkrate_verify::run(&cfg, &stop, &mut progress);
    if show {
        eprintln!();
    }
    let report = match result {
        Ok(r) => r,
        Err(VerifyError::Interrupted) => {
            eprintln!("sinkrate: interrupted while writing: nothing was verified");
            return Ok(ExitCode::from(130));
        }
        Err(e) => return Err(anyhow!(e)),
    };
    let error = (report.verdict == VerifyVerdict::Failed).then(|| report.verdict_text.clone());
    emit(&args, RunKind::Verify, started, &report, error)?;
    Ok(match report.verdict {
        VerifyVerdict::Verified => ExitCode::SUCCESS,
        VerifyVerdict::BadBlocks => ExitCode::from(1),
        VerifyVerdict::Failed => ExitCode::from(2),
    })
}

fn run_capacity(args: &VerifyArgs) -> Result<ExitCode> {
    let cfg = CapacityConfig {
        target: args.path.clone(),
        destructive: args.destructive,
        force: args.force,
        undo_dir: capacity::undo::default_dir(),
    };
    let stop = crate::interrupt_flag()?;
    let started = sinkrate_sys::host::unix_ms_now();
    let show = args.progress.wanted(std::io::stderr().is_terminal());
    let clock = std::time::Instant::now();
    let mut progress = |phase: &str, done: u64, total: u64| {
        if !show {
            return;
        }
        let share = done as f64 / total.max(1) as f64;
        let elapsed = clock.elapsed().as_secs_f64();
        // Writing is most of the time; reading the same bytes back is quick.
        let left = if phase == "writing" && share > 0.0 {
            elapsed / share * (1.0 - share) + elapsed * 0.2
        } else {
            0.0
        };
        let mut err = std::io::stderr();
        let _ = write!(
            err,
            "\rsinkrate verify --capacity: {phase} {:5.1}%  {:.0} s left   ",
            100.0 * share,
            left
        );
        let _ = err.flush();
    };
    if args.path.is_dir() {
        if args.destructive || args.force {
            return Err(anyhow!(
                "--capacity {}: a directory gets the fill-and-check, which writes only its own files; --destructive and --force apply to a device probe",
                args.path.display()
            ));
        }
        let result = capacity::fill::run(&args.path, &stop, &mut progress);
        if show {
            eprintln!();
        }
        let report = result.map_err(|e| anyhow!(e))?;
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            eprintln!("sinkrate: interrupted: the fill stopped and its files are removed");
            return Ok(ExitCode::from(130));
        }
        let (error, verdict) = (report.error.clone(), report.verdict);
        return capacity_result(args, started, &report, error, verdict);
    }
    let result = capacity::run(&cfg, &stop, &mut progress);
    if show {
        eprintln!();
    }
    let report = match result {
        Ok(r) => r,
        Err(VerifyError::Interrupted) => {
            eprintln!(
                "sinkrate: interrupted: the probe stopped and what it overwrote was put back"
            );
            return Ok(ExitCode::from(130));
        }
        Err(e) => return Err(anyhow!(e)),
    };
    let (error, verdict) = (report.error.clone(), report.verdict);
    capacity_result(args, started, &report, error, verdict)
}

fn class_config(args: &VerifyArgs) -> Result<sinkrate_verify::class::ClassConfig> {
    use sinkrate_model::sdclass::SdClass;
    let claim = args
        .claim
        .as_deref()
        .map(SdClass::parse)
        .transpose()
        .map_err(|e| anyhow!("--claim {e}"))?;
    let au_bytes = args.au.as_deref().map(|a| size("au", a)).transpose()?;
    let area_bytes = args.size.as_deref().map(|s| size("size", s)).transpose()?;
    let rate = crate::cli::StreamRateArgs {
        profile: args
            .profile
            .clone()
            .unwrap_or_else(|| "dual-1080p30".to_string()),
        bitrate: args.bitrate.clone(),
    };
    Ok(sinkrate_verify::class::ClassConfig {
        dir: args.path.clone(),
        claim,
        au_bytes,
        area_bytes,
        random_seconds: args.random_seconds,
        stream: Some(super::audit::stream_rate(&rate)?),
    })
}

fn run_class(args: &VerifyArgs) -> Result<ExitCode> {
    use sinkrate_verify::class::{self, ClassError};
    let cfg = class_config(args)?;
    let prepared = class::prepare(&cfg).map_err(|e| anyhow!(e))?;
    eprintln!("sinkrate verify --class: {}", prepared.plan_line());
    let stop = crate::interrupt_flag()?;
    let started = sinkrate_sys::host::unix_ms_now();
    let show = args.progress.wanted(std::io::stderr().is_terminal());
    let mut progress = |phase: &str, done: u64, total: u64| {
        if !show {
            return;
        }
        let mut err = std::io::stderr();
        let _ = write!(
            err,
            "\rsinkrate verify --class: {phase} {:5.1}%   ",
            100.0 * done as f64 / total.max(1) as f64
        );
        let _ = err.flush();
    };
    let result = class::run(&prepared, &stop, &mut progress);
    if show {
        eprintln!();
    }
    let report = match result {
        Ok(r) => r,
        Err(ClassError::Interrupted) => {
            eprintln!("sinkrate: {}", ClassError::Interrupted);
            return Ok(ExitCode::from(130));
        }
        Err(e) => return Err(anyhow!(e)),
    };
    emit(args, RunKind::Class, started, &report, None)?;
    Ok(ExitCode::from(class::exit_code(&report)))
}

/// Either capacity check's result, written out, and its exit code.
fn capacity_result<T: Clone>(
    args: &VerifyArgs,
    started: u64,
    report: &T,
    error: Option<String>,
    verdict: sinkrate_model::verify::CapacityVerdict,
) -> Result<ExitCode>
where
    Envelope<T>: Printed,
{
    emit(args, RunKind::Capacity, started, report, error)?;
    Ok(ExitCode::from(verdict.word_and_exit_code().1))
}

/// The result in the run's envelope, with `error` set when it failed, printed as the flags
/// say.
fn emit<T: Clone>(
    args: &VerifyArgs,
    kind: RunKind,
    started: u64,
    report: &T,
    error: Option<String>,
) -> Result<()>
where
    Envelope<T>: Printed,
{
    let mut run = Envelope::new(
        kind,
        sinkrate_sys::host::host_facts(),
        started,
        report.clone(),
    );
    run.error = error.clone().map(|what| RunError { what, at_s: None });
    args.out.print(&run, &Style::default())?;
    // The fault in one line where scripts look for it, whatever the output format.
    if let Some(e) = &error {
        eprintln!("sinkrate: error: {e}");
    }
    Ok(())
}
