//! `sinkrate suite NAME [PATH]`: arguments to a suite config (crates/suite), its estimate
//! and progress on standard error, its typed result rendered as the table (text, Markdown)
//! or JSON, and with `--output-dir` every run's JSON and the table as JSON, Markdown and HTML.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use sinkrate_suite::{ScratchDevice, SuiteConfig, SuiteError, SuiteName, SUITES};

use crate::cli::SuiteArgs;
use crate::export::plan::{self, Style};
use crate::export::suite_text::{SuiteListing, SuiteMarkdown};
use crate::export::{Exporter, Json};

/// The default recording of the suites that record: check's default profile.
const DEFAULT_PROFILE: &str = "dual-1080p30";

fn list(args: &SuiteArgs) -> Result<ExitCode> {
    plan::print_stdout(&SuiteListing::all(), args.output_format, &Style::default())?;
    Ok(ExitCode::SUCCESS)
}

fn recording(args: &SuiteArgs, suite: SuiteName) -> Result<sinkrate_record::session::Session> {
    use crate::cli::record_config::{session, RecordFlags};
    let info = suite.info();
    if !args.record_flags.is_empty() && !info.takes_recording {
        let takers: Vec<&str> = SUITES
            .iter()
            .filter(|s| s.takes_recording)
            .map(|s| s.id)
            .collect();
        return Err(anyhow!(
            "suite {} records nothing, so the record flags after -- have nothing to replace (they apply to {})",
            info.id,
            takers.join(", ")
        ));
    }
    let mut flags = RecordFlags::parse(&args.record_flags, &["duration"], "the suite")?;
    flags.default_profile(DEFAULT_PROFILE);
    session(&flags.args)
}

fn config(args: &SuiteArgs, suite: SuiteName) -> Result<SuiteConfig> {
    let recording = recording(args, suite)?;
    if args.force && args.scratch.is_none() {
        return Err(anyhow!(
            "--force applies to --scratch DEVICE (it allows formatting a device that holds a filesystem); give --scratch or drop --force"
        ));
    }
    if let Err(e) = std::fs::metadata(&args.path) {
        return Err(anyhow!(
            "{}: {e} (give a directory on the storage to test)",
            args.path.display()
        ));
    }
    let dir = std::fs::canonicalize(&args.path)
        .with_context(|| format!("{}: cannot resolve", args.path.display()))?;
    let runs_dir = match &args.output_dir {
        Some(d) => Some(output_dir(d)?),
        None => None,
    };
    Ok(SuiteConfig {
        suite,
        dir,
        runs: args.runs,
        quick: args.quick,
        recording,
        recording_given: !args.record_flags.is_empty(),
        scratch: args.scratch.as_ref().map(|p| ScratchDevice {
            path: p.clone(),
            force: args.force,
        }),
        model: args.model.clone(),
        runs_dir,
    })
}

/// The output directory, made if missing; refused if it is a file.
fn output_dir(d: &Path) -> Result<PathBuf> {
    if d.exists() && !d.is_dir() {
        return Err(anyhow!(
            "--output-dir {}: a file, not a directory (give a new or existing directory)",
            d.display()
        ));
    }
    std::fs::create_dir_all(d).map_err(|e| anyhow!("--output-dir {}: {e}", d.display()))?;
    Ok(d.to_path_buf())
}

fn duration_words(s: f64) -> String {
    let s = s.round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        _ => format!("{} min {} s", s / 60, s % 60),
    }
}

pub fn run(args: SuiteArgs) -> Result<ExitCode> {
    if args.name == "list" {
        return list(&args);
    }
    let suite = SuiteName::find(&args.name).map_err(|e| anyhow!(e))?;
    let cfg = config(&args, suite)?;
    sinkrate_suite::preflight(&cfg).map_err(|e| anyhow!(e))?;
    let estimate = sinkrate_suite::estimate_s(&cfg);
    let basis = match sinkrate_suite::devices::emulated_card_of(&cfg.dir) {
        Some(c) => format!("on this {}", c.label),
        None => "on a 10 MB/s card; faster storage takes less".into(),
    };
    eprintln!(
        "sinkrate suite {}: {} run(s) of each condition, about {} ({basis})",
        suite.id(),
        if cfg.quick { 1 } else { cfg.runs },
        duration_words(estimate)
    );
    let stop = crate::interrupt_flag()?;
    let progress = crate::progress::TimeBar::new("sinkrate suite", args.progress, estimate);
    let result = sinkrate_suite::run(&cfg, stop, &mut |p: &str| progress.step(p));
    drop(progress);
    let run = match result {
        Ok(run) => run,
        Err(SuiteError::Interrupted) => {
            eprintln!(
                "sinkrate: suite interrupted; its files are removed and its settings restored"
            );
            return Ok(ExitCode::from(130));
        }
        Err(SuiteError::Recording(e)) => return Err(super::record::refusal(e)),
        Err(e) => return Err(anyhow!(e)),
    };
    let json = Json.export(&run)?;
    let markdown = SuiteMarkdown.export(&run)?;
    if let Some(dir) = &cfg.runs_dir {
        let base = dir.join(suite.id());
        sinkrate_sys::output::result(&base.with_extension("json"), &json)
            .with_context(|| format!("writing {}", base.with_extension("json").display()))?;
        sinkrate_sys::output::result(&base.with_extension("md"), &markdown)
            .with_context(|| format!("writing {}", base.with_extension("md").display()))?;
        let html = base.with_extension("html");
        super::report::write_for_run(
            &json,
            &base.with_extension("json").display().to_string(),
            &html,
        )?;
    }
    plan::print_stdout(&run, args.output_format, &Style::default())?;
    Ok(ExitCode::SUCCESS)
}
