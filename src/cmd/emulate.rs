//! `sinkrate emulate up|down|list`: slow storage on demand.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::emulate_config::spec_from;
use crate::cli::values::OutputFormat;
use crate::cli::{EmulateAction, EmulateUpArgs};
use crate::export::emulate_text::{ListText, UpText};
use crate::export::{Exporter, Json};

pub fn run(action: EmulateAction) -> Result<ExitCode> {
    match action {
        EmulateAction::Up(args) => up(*args),
        EmulateAction::Down { mountpoint } => {
            sinkrate_emulate::down(&mountpoint)?;
            println!("removed the emulated device at {}", mountpoint.display());
            Ok(ExitCode::SUCCESS)
        }
        EmulateAction::List { output_format } => list(output_format),
    }
}

fn up(args: EmulateUpArgs) -> Result<ExitCode> {
    let (spec, notes) = spec_from(&args)?;
    for n in &notes {
        eprintln!("sinkrate: note: {n}");
    }
    let state = sinkrate_emulate::up(spec)?;
    let out = match args.output_format {
        OutputFormat::Json => Json.export(&state)?,
        _ => UpText.export(&state)?,
    };
    crate::write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

fn list(format: OutputFormat) -> Result<ExitCode> {
    let devices = sinkrate_emulate::list();
    let out = match format {
        OutputFormat::Json => Json.export(&devices)?,
        _ => ListText.export(&devices)?,
    };
    crate::write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}
