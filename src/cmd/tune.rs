//! `sinkrate tune apply | restore | status`: arguments to a tune session
//! (sinkrate_tune::apply), its typed report rendered as text or JSON.

use std::process::ExitCode;

use anyhow::{anyhow, Result};
use sinkrate_model::settings::TuneReport;
use sinkrate_model::{Envelope, RunKind};
use sinkrate_settings::Journal;
use sinkrate_tune::apply::{self as tune, ApplyConfig, Requested};

use crate::cli::tune_config::{fixes_from, fixes_of, workload};
use crate::cli::{TuneAction, TuneApplyArgs, TuneSearchArgs};
use crate::export::plan::{self, Style};
use crate::export::{Exporter, Json};
use sinkrate_tune::candidates::QueueMount;
use sinkrate_tune::search::{SearchError, Workload};

pub fn run(action: TuneAction) -> Result<ExitCode> {
    let journal = Journal::live();
    let started_ms = sinkrate_sys::host::unix_ms_now();
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
            let report = if sinkrate_sys::host::is_root() {
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
        sinkrate_sys::host::host_facts(),
        started_ms,
        report,
    );
    plan::print_stdout(&run, format, &Style::default())?;
    Ok(ExitCode::SUCCESS)
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
        settings: match &fixes {
            Some(f) => f.settings.iter().cloned().map(Requested::Fixed).collect(),
            None => args
                .settings
                .iter()
                .cloned()
                .map(Requested::Named)
                .collect(),
        },
        path: fixes
            .as_ref()
            .map(|f| f.path.clone())
            .unwrap_or_else(|| args.path.clone()),
        device: args.device.clone(),
        mount_point: args.mount_point.clone(),
        dry_run: args.dry_run,
        persist: args.persist || args.persist_fstab,
        fstab: args.persist_fstab.then(|| {
            args.fstab
                .clone()
                .unwrap_or_else(|| sinkrate_settings::persist::FSTAB.into())
        }),
    };
    if !args.dry_run && !sinkrate_sys::host::is_root() {
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
    if sinkrate_sys::host::is_root() {
        Ok(())
    } else {
        Err(anyhow!("{what} needs root; nothing was changed"))
    }
}

fn search(args: &TuneSearchArgs, journal: &Journal) -> Result<ExitCode> {
    if let Some(p) = &args.output {
        crate::check_output_path("--output", p)?;
    }
    if args.runs == 0 {
        return Err(anyhow!("--runs: at least 1"));
    }
    if !args.path.is_dir() {
        return Err(anyhow!(
            "{}: not a directory (give a directory on the storage to tune for)",
            args.path.display()
        ));
    }
    let workload = workload(args)?;
    let root = sinkrate_sys::host::is_root();
    let mut target_note = None;
    let target = if root {
        let recovered = journal.recover()?;
        if !recovered.is_empty() {
            eprintln!(
                "sinkrate: a killed run's settings: {}",
                recovered.describe()
            );
        }
        QueueMount::of(&args.path, journal)
            .map_err(|why| target_note = Some(why))
            .ok()
    } else {
        None
    };
    if args
        .max_loss
        .is_some_and(|d| d < std::time::Duration::from_millis(50))
    {
        return Err(anyhow!(
            "--max-loss: at least 50ms (a sync's own time is longer than that on any card)"
        ));
    }
    let power_switch = match (&workload, args.power_cut) {
        (_, false) => None,
        (Workload::Record(s), true) => {
            crate::cli::record_config::power_cut_fits(&s.record, "--power-cut")?;
            let card: std::sync::Arc<dyn sinkrate_platform::power::PowerSwitch> =
                std::sync::Arc::new(super::record::emulated_card(&args.path, "--power-cut")?);
            Some(card)
        }
        (_, true) => {
            return Err(anyhow!(
                "--power-cut needs the recording in process (record flags after --), not --job or --exec"
            ))
        }
    };
    let cfg = sinkrate_tune::search::SearchConfig {
        max_loss: args.max_loss,
        wear: args.objective == crate::cli::values::ObjectiveArg::Wear,
        power_switch,
        workload,
        runs: args.runs,
        budget: args.budget,
        confirm: args.confirm_duration,
        predict: !args.no_predict,
        system: root,
        target,
        journal: journal.clone(),
    };
    let stop = crate::interrupt_flag()?;
    let started_ms = sinkrate_sys::host::unix_ms_now();
    let mut bar = crate::progress::TimeBar::new(
        "sinkrate tune search",
        args.progress,
        args.budget.as_secs_f64(),
    );
    let result = sinkrate_tune::search::search(&cfg, stop, &mut |e| {
        crate::progress::tune_search_event(&mut bar, e)
    });
    drop(bar);
    let mut report = result.map_err(|e| match e {
        SearchError::Session(e) => super::record::refusal(e),
        other => anyhow!(other),
    })?;
    report.notes.extend(target_note);
    if args.apply {
        if let Some(w) = report.winner() {
            if !w.candidate.system.is_empty() {
                journal.apply(&w.candidate.system, sinkrate_model::settings::Mode::Applied)?;
                let applied = w.candidate.settings_args();
                eprintln!(
                    "sinkrate: applied {} (until sinkrate tune restore)",
                    applied.join(" ")
                );
                report.applied = applied;
            }
        }
    }
    let interrupted = report.interrupted;
    let failed = report.failed.clone();
    let bound_met = report.max_loss_met;
    let mut run = Envelope::new(
        RunKind::TuneSearch,
        sinkrate_sys::host::host_facts(),
        started_ms,
        report,
    );
    run.interrupted = interrupted;
    run.error = failed
        .clone()
        .map(|what| sinkrate_model::RunError { what, at_s: None });
    if let Some(p) = &args.output {
        sinkrate_sys::output::result(p, &Json.export(&run)?)?;
    }
    plan::print_stdout(&run, args.output_format, &Style::default())?;
    // The fault in one line where scripts look for it, whatever the output format.
    if let Some(what) = &failed {
        eprintln!("sinkrate: error: {what}");
    }
    Ok(ExitCode::from(match (failed, interrupted, bound_met) {
        (Some(_), _, _) => 2,
        (None, true, _) => 130,
        (None, false, Some(false)) => 1,
        (None, false, _) => 0,
    }))
}
