//! `sinkrate emulate up|down|list`: slow storage on demand.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::emulate_config::spec_from;
use crate::cli::{EmulateAction, EmulateUpArgs};
use crate::export::plan::{self, Format, Style};

pub fn run(action: EmulateAction) -> Result<ExitCode> {
    match action {
        EmulateAction::Up(args) => up(*args),
        EmulateAction::Down { mountpoint } => {
            let state = sinkrate_emulate::down(&mountpoint)?;
            for note in &state.notes {
                eprintln!("sinkrate: warning: {note}");
            }
            println!("removed the emulated device at {}", mountpoint.display());
            Ok(ExitCode::SUCCESS)
        }
        EmulateAction::List { output_format } => list(output_format),
    }
}

fn up(args: EmulateUpArgs) -> Result<ExitCode> {
    let (spec, notes) = spec_from(&args)?;
    // The notes once the card is up: a refusal (a size too small for the filesystem) is one
    // line, not the notes and then the error.
    let state = sinkrate_emulate::up(spec)?;
    for n in &notes {
        eprintln!("sinkrate: note: {n}");
    }
    plan::print_stdout(&state, args.output_format, &Style::default())?;
    Ok(ExitCode::SUCCESS)
}

fn list(format: Format) -> Result<ExitCode> {
    plan::print_stdout(&sinkrate_emulate::list(), format, &Style::default())?;
    Ok(ExitCode::SUCCESS)
}
