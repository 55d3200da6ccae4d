//! `sinkrate tune apply | restore | status`: arguments to a tune session
//! (sinkrate_settings::tune), its typed report rendered as text or JSON.

use std::process::ExitCode;

use anyhow::{anyhow, Result};
use sinkrate_model::{Envelope, RunKind};
use sinkrate_settings::tune::{self, ApplyConfig, TuneReport};
use sinkrate_settings::Journal;

use crate::cli::values::OutputFormat;
use crate::cli::{TuneAction, TuneApplyArgs};
use crate::export::{tune_text::TuneText, Exporter, Json};

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

fn apply(args: &TuneApplyArgs, journal: &Journal) -> Result<TuneReport> {
    let cfg = ApplyConfig {
        settings: args.settings.clone(),
        path: args.path.clone(),
        device: args.device.clone(),
        mount_point: args.mount_point.clone(),
        dry_run: args.dry_run,
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
    Ok(tune::apply(&cfg, journal)?)
}

fn needs_root(what: &str) -> Result<()> {
    if sinkrate_engine::host::is_root() {
        Ok(())
    } else {
        Err(anyhow!("{what} needs root; nothing was changed"))
    }
}
