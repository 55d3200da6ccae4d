//! `sinkrate tune apply | restore | status`: arguments to a tune session
//! (sinkrate_settings::tune), its typed report rendered as text or JSON.

use std::process::ExitCode;

use anyhow::{anyhow, Result};
use sinkrate_model::{Envelope, RunKind};
use sinkrate_settings::tune::{self, ApplyConfig, TuneReport};
use sinkrate_settings::Journal;

use crate::cli::values::OutputFormat;
use crate::cli::{TuneAction, TuneApplyArgs, TuneSearchArgs};
use crate::export::{search_text::SearchText, tune_text::TuneText, Exporter, Json};

pub fn run(action: TuneAction) -> Result<ExitCode> {
    let journal = Journal::live();
    let started_ms = sinkrate_engine::host::unix_ms_now();
    let (report, format) = match action {
        TuneAction::Apply(args) => (apply(&args, &journal)?, args.output_format),
        TuneAction::Restore {
            dry_run,
            output_format,
        } => {
            if !dry_run {
                needs_root("restoring settings")?;
            }
            (tune::restore(dry_run, &journal)?, output_format)
        }
        TuneAction::Search(args) => return search(&args, &journal),
        TuneAction::Status { output_format } => {
            // Reading needs no root; putting back a killed run's changes does.
            let report = if sinkrate_engine::host::is_root() {
                tune::status(&journal)?
            } else {
                TuneReport {
                    held: tune::held(&journal)?,
                    ..TuneReport::default()
                }
            };
            (report, output_format)
        }
    };
    let run = Envelope::new(
        RunKind::Tune,
        sinkrate_engine::host::host_facts(),
        started_ms,
        report,
    );
    let body = match format {
        OutputFormat::Json => Json.export(&run)?,
        OutputFormat::Text => TuneText.export(&run)?,
    };
    crate::write_stdout(&body)?;
    Ok(ExitCode::SUCCESS)
}

/// Findings with a fix that is a setting: their ids and the settings, and the directory
/// they were found for.
struct Fixes {
    path: std::path::PathBuf,
    ids: Vec<String>,
    settings: Vec<String>,
}

fn fixes_of(findings: &[sinkrate_audit::Finding], path: &str, only: Option<&[String]>) -> Fixes {
    let mut out = Fixes {
        path: path.into(),
        ids: Vec::new(),
        settings: Vec::new(),
    };
    for f in findings {
        if f.severity == sinkrate_audit::Severity::Ok
            || only.is_some_and(|ids| !ids.iter().any(|i| i == f.id.as_ref()))
        {
            continue;
        }
        let settings = f.settings();
        if !settings.is_empty() {
            out.ids.push(f.id.to_string());
            out.settings.extend(settings);
        }
    }
    out
}

/// The fixes in a check report (its top findings) or an audit report (every finding).
fn fixes_from(file: &std::path::Path) -> Result<Fixes> {
    let bytes = std::fs::read(file).map_err(|e| anyhow!("--from {}: {e}", file.display()))?;
    let kind = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v["kind"].as_str().map(str::to_string))
        .ok_or_else(|| {
            anyhow!(
                "--from {}: not a sinkrate report (expected a check or audit report's JSON)",
                file.display()
            )
        })?;
    let bad = |e: sinkrate_model::envelope::ReadError| anyhow!("--from {}: {e}", file.display());
    match kind.as_str() {
        "check" => {
            let run = Envelope::<sinkrate_check::CheckReport>::from_json(&bytes, RunKind::Check)
                .map_err(bad)?;
            let a = &run.result.audit.audit;
            Ok(fixes_of(
                &a.findings,
                &a.target.path,
                Some(&run.result.top_findings),
            ))
        }
        "audit" => {
            let run = Envelope::<sinkrate_audit::AuditReport>::from_json(&bytes, RunKind::Audit)
                .map_err(bad)?;
            let a = &run.result.audit;
            Ok(fixes_of(&a.findings, &a.target.path, None))
        }
        other => Err(anyhow!(
            "--from {}: a {other} report has no findings (expected a check or audit report)",
            file.display()
        )),
    }
}

fn apply(args: &TuneApplyArgs, journal: &Journal) -> Result<TuneReport> {
    let fixes = match (&args.from, args.settings.is_empty()) {
        (Some(file), _) => Some(fixes_from(file)?),
        (None, true) => {
            // The top fixes of a fresh audit of the directory, judged for check's profile.
            let a = sinkrate_check::audit(&args.path, DEFAULT_STREAM_BYTES_PER_S)
                .map_err(|e| anyhow!("{}: {e}", args.path.display()))?;
            let top: Vec<String> = sinkrate_check::top_findings(&a)
                .iter()
                .map(|f| f.id.to_string())
                .collect();
            Some(fixes_of(&a.findings, &a.target.path, Some(&top)))
        }
        (None, false) => None,
    };
    if let Some(f) = &fixes {
        if f.settings.is_empty() {
            return Err(anyhow!(
                "no finding for {} has a fix that is a setting ({}); nothing was changed",
                f.path.display(),
                if f.ids.is_empty() {
                    "nothing to fix".to_string()
                } else {
                    f.ids.join(", ")
                }
            ));
        }
    }
    let cfg = ApplyConfig {
        settings: fixes
            .as_ref()
            .map(|f| f.settings.clone())
            .unwrap_or_else(|| args.settings.clone()),
        path: fixes
            .as_ref()
            .map(|f| f.path.clone())
            .unwrap_or_else(|| args.path.clone()),
        device: args.device.clone(),
        mount_point: args.mount_point.clone(),
        dry_run: args.dry_run,
        persist: args.persist,
    };
    if !args.dry_run && !sinkrate_engine::host::is_root() {
        // Say what would have been set, from the same plan a dry run prints.
        let plan = tune::plan(&cfg, journal)?;
        return Err(anyhow!(
            "changing settings needs root; nothing was changed (would set {})",
            plan.iter()
                .map(|c| format!("{} = {}", c.setting, c.to))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut report = tune::apply(&cfg, journal)?;
    report.from_findings = fixes.map(|f| f.ids).unwrap_or_default();
    Ok(report)
}

/// dual-1080p30, check's default profile: the rate a fresh audit's findings are judged for.
const DEFAULT_STREAM_BYTES_PER_S: f64 = 3e6;

fn needs_root(what: &str) -> Result<()> {
    if sinkrate_engine::host::is_root() {
        Ok(())
    } else {
        Err(anyhow!("{what} needs root; nothing was changed"))
    }
}

/// The workload: check's profile unless the record flags after -- name the streams.
fn workload(args: &TuneSearchArgs) -> Result<sinkrate_record::session::Session> {
    use crate::cli::record_config::{names_streams, refuse_own_flags};
    // Dirty limits are the search's own knobs, besides the flags every session sets.
    refuse_own_flags(
        &args.record_flags,
        &["--ram-limit", "--dirty-limit"],
        "tune search",
    )?;
    let mut flags: Vec<String> = vec!["--dir".into(), args.path.display().to_string()];
    if !names_streams(&args.record_flags) {
        flags.extend(["--profile".into(), "dual-1080p30".into()]);
    }
    flags.extend(args.record_flags.iter().cloned());
    let record_args = crate::cli::record_config::args_from_flags(&flags)?;
    let session = crate::cli::record_config::session(&record_args)?;
    if session.record.write_mode == sinkrate_record::config::WriteMode::Null {
        return Err(anyhow!(
            "--write-mode null after --: writes nothing, so there is nothing to tune"
        ));
    }
    Ok(session)
}

fn search(args: &TuneSearchArgs, journal: &Journal) -> Result<ExitCode> {
    if let Some(p) = &args.output {
        crate::check_output_path("--output", p)?;
    }
    if args.runs == 0 {
        return Err(anyhow!("--runs: at least 1"));
    }
    let base = workload(args)?;
    let root = sinkrate_engine::host::is_root();
    if root {
        let recovered = journal.recover()?;
        if !recovered.is_empty() {
            eprintln!(
                "sinkrate: a killed run's settings: {}",
                recovered.describe()
            );
        }
    }
    let cfg = sinkrate_tune::search::SearchConfig {
        base,
        runs: args.runs,
        budget: args.budget,
        system: root,
        journal: journal.clone(),
    };
    let stop = crate::interrupt_flag()?;
    let started_ms = sinkrate_engine::host::unix_ms_now();
    let report = sinkrate_tune::search::search(&cfg, stop, &mut |line| {
        eprintln!("sinkrate tune search: {line}")
    })
    .map_err(super::record::refusal)?;
    if args.apply {
        if let Some(w) = report.winner() {
            if !w.candidate.system.is_empty() {
                journal.apply(&w.candidate.system, sinkrate_settings::Mode::Applied)?;
                eprintln!(
                    "sinkrate: applied {} (until sinkrate tune restore)",
                    w.candidate.settings_args().join(" ")
                );
            }
        }
    }
    let interrupted = report.interrupted;
    let failed = report.failed.clone();
    let mut run = Envelope::new(
        RunKind::TuneSearch,
        sinkrate_engine::host::host_facts(),
        started_ms,
        report,
    );
    run.interrupted = interrupted;
    run.error = failed
        .clone()
        .map(|what| sinkrate_model::RunError { what, at_s: None });
    let json = Json.export(&run)?;
    if let Some(p) = &args.output {
        sinkrate_sys::output::write(p, &json)?;
    }
    let body = match args.output_format {
        OutputFormat::Json => json,
        OutputFormat::Text => SearchText.export(&run)?,
    };
    crate::write_stdout(&body)?;
    Ok(ExitCode::from(match (failed, interrupted) {
        (Some(_), _) => 2,
        (None, true) => 130,
        (None, false) => 0,
    }))
}
