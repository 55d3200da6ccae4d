//! sinkrate: will this storage keep up with my recording?
//!
//! `main` parses the command line, runs one command, and is the one place that prints
//! errors: one line, `sinkrate: error: ...`, exit 2.

mod build_info;
mod cli;
mod cmd;
mod export;
mod interrupt;
mod progress;

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{CommandFactory, FromArgMatches};

use cli::{Cli, Command};

/// Writes to stdout; a closed pipe (`sinkrate ... | head`) is not an error.
pub fn write_stdout(bytes: &[u8]) -> Result<()> {
    write_stdout_with(|w| w.write_all(bytes))
}

/// Writes to standard output what `fill` makes, as it makes it; a reader that went away
/// (`| head`) is no error.
pub fn write_stdout_with(
    fill: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<()> {
    let mut stdout = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match fill(&mut stdout).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to standard output"),
    }
}

/// Refuses, before any work, an output file that could not be written at the end: a run's
/// results must not be lost to a typo in --output.
pub fn check_output_path(flag: &str, path: &std::path::Path) -> Result<()> {
    check_outputs(&[(flag, Some(path))], &[])
}

/// The one check every command makes of its outputs before any work: each can be written
/// ([`sinkrate_sys::output::writable_here`]), none is one of the run's inputs, and no two
/// name the same file (the later would silently replace the earlier).
pub fn check_outputs(
    outputs: &[(&str, Option<&std::path::Path>)],
    inputs: &[&std::path::Path],
) -> Result<()> {
    use sinkrate_sys::output::same_file;
    let given: Vec<(&str, &std::path::Path)> = outputs
        .iter()
        .filter_map(|(flag, p)| p.map(|p| (*flag, p)))
        .collect();
    for (i, (flag, path)) in given.iter().enumerate() {
        if let Some(input) = inputs.iter().find(|input| same_file(input, path)) {
            anyhow::bail!(
                "{flag} {}: that is an input of this run ({}); write the results elsewhere",
                path.display(),
                input.display()
            );
        }
        if let Some((other, _)) = given[..i].iter().find(|(_, p)| same_file(p, path)) {
            anyhow::bail!(
                "{flag} {}: {other} names the same file; give each output its own file",
                path.display()
            );
        }
        if let Err(e) = sinkrate_sys::output::writable_here(path) {
            anyhow::bail!("{flag} {}: {e}", path.display());
        }
    }
    Ok(())
}

/// A flag set by the first Ctrl-C (or SIGTERM): see [`interrupt`].
pub fn interrupt_flag() -> Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    interrupt::flag()
}

fn run() -> Result<ExitCode> {
    // args_os: a path need not be UTF-8 (std::env::args would panic on one).
    let (clap_args, job_options) =
        cli::bench_args::split(std::env::args_os().collect()).map_err(anyhow::Error::msg)?;
    if let Some(e) = cli::negative_value(&clap_args) {
        return Err(anyhow::anyhow!(e));
    }
    let parsed = Cli::command()
        .long_version(build_info::long_version())
        .try_get_matches_from(clap_args)
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        // Help and version go to stdout as clap renders them.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return Ok(ExitCode::SUCCESS);
        }
        // Bad input gets one line: clap's message and its possible values, without the
        // usage block.
        Err(e) => return Err(anyhow::anyhow!(cli::one_line_error(&e.to_string()))),
    };
    if cli.command.writes_or_emulates() {
        sweep_left_over();
    }
    match cli.command {
        Command::Bench(mut args) => {
            args.job_options = job_options;
            cmd::bench::run(*args)
        }
        Command::Emulate { action } => cmd::emulate::run(action),
        Command::Tune { action } => cmd::tune::run(action),
        Command::Watch(args) => cmd::watch::run(*args),
        Command::Record(args) => cmd::record::run(*args),
        Command::Audit(args) => cmd::audit::run(*args),
        Command::Verify(args) => cmd::verify::run(*args),
        Command::Check(args) => cmd::check::run(*args),
        Command::Suite(args) => cmd::suite::run(*args),
        Command::Compare(args) => cmd::compare::run(*args),
        Command::Report(args) => cmd::report::run(*args),
        Command::Capture(args) => cmd::capture::run(*args),
        Command::Completions { shell } => cmd::docs::completions(shell).map(|()| ExitCode::SUCCESS),
        Command::Man => cmd::docs::man().map(|()| ExitCode::SUCCESS),
    }
}

/// How long a command waits for the sweep below to finish a step (a file, an emulated
/// device): a file left on a filesystem that does not answer (a card, or its FUSE driver,
/// that hangs) must not hang every later command, and a slow sweep is still waited for.
const SWEEP_STALL: std::time::Duration = std::time::Duration::from_secs(30);

/// Files a killed run made and could not remove go now, and emulated devices a killed run
/// made for itself alone come down, with a word about each. On a thread of its own, waited
/// for while it finishes a step at least every [`SWEEP_STALL`]: past that the command goes
/// on, says so, and the sweep stops after the step it is blocked in (a later run tries
/// again).
fn sweep_left_over() {
    use std::sync::Arc;
    let sweeping = Arc::new(sinkrate_sys::owned::Sweeping::new());
    let in_thread = Arc::clone(&sweeping);
    // The sweep wakes this thread when it ends: most commands find nothing to sweep, and a
    // fixed poll made each of them wait its interval (`bench --parse-only` of a job file
    // took 101 ms, 5 ms now). A step is checked at each wake or interval. (Parked, not waited on through a channel: the board binary's size budget.)
    let waiter = std::thread::current();
    let sweep = match std::thread::Builder::new()
        .name("sweep".into())
        .spawn(move || {
            let notes = left_over_notes(&in_thread);
            in_thread.finish();
            waiter.unpark();
            notes
        }) {
        Ok(sweep) => sweep,
        Err(_) => {
            return left_over_notes(&sweeping)
                .iter()
                .for_each(|n| eprintln!("{n}"))
        }
    };
    let (mut steps, mut since) = (sweeping.steps(), std::time::Instant::now());
    // (A sweep that panicked never says it finished; its thread's end is seen instead.)
    while !sweeping.finished() && !sweep.is_finished() {
        std::thread::park_timeout(std::time::Duration::from_millis(50));
        if sweeping.steps() != steps {
            (steps, since) = (sweeping.steps(), std::time::Instant::now());
        } else if since.elapsed() >= SWEEP_STALL {
            sweeping.abandon();
            eprintln!(
                "sinkrate: note: what earlier sinkrate runs left behind is not swept: a filesystem it lies on has not answered for {} s (a card or its driver that hangs); a later run tries again",
                SWEEP_STALL.as_secs()
            );
            return;
        }
    }
    if let Ok(notes) = sweep.join() {
        notes.iter().for_each(|n| eprintln!("{n}"));
    }
}

/// The sweep itself: one note for each thing it took down, removed or could not remove.
fn left_over_notes(sweeping: &sinkrate_sys::owned::Sweeping) -> Vec<String> {
    let mut notes = Vec::new();
    for orphan in sinkrate_emulate::sweep_orphans(&|| sweeping.step()) {
        match &orphan.outcome {
            Ok(()) => notes.push(format!(
                "sinkrate: note: took down the emulated device at {} that an interrupted sinkrate run (pid {}) made",
                orphan.mountpoint.display(),
                orphan.owner_pid
            )),
            Err(why) => notes.push(format!(
                "sinkrate: note: an interrupted sinkrate run (pid {}) left an emulated device at {}, which could not be taken down ({why}); sinkrate emulate down {} when it is free",
                orphan.owner_pid,
                orphan.mountpoint.display(),
                orphan.mountpoint.display()
            )),
        }
    }
    for left in sinkrate_sys::owned::sweep_left_over(sweeping) {
        if !left.removed.is_empty() {
            notes.push(format!(
                "sinkrate: note: removed {} file(s) left by an earlier sinkrate run (pid {}) that was stopped or could not remove them itself: {}",
                left.removed.len(),
                left.pid,
                sinkrate_units::a_few(left.removed.iter().map(|p| p.display().to_string()), 5)
            ));
        }
        // One line for each reason: a killed filecreate job may leave thousands listed.
        let mut reasons: Vec<&str> = left.kept.iter().map(|(_, why)| why.as_str()).collect();
        reasons.sort_unstable();
        reasons.dedup();
        for why in reasons {
            let paths: Vec<String> = left
                .kept
                .iter()
                .filter(|(_, w)| w == why)
                .map(|(p, _)| p.display().to_string())
                .collect();
            notes.push(format!(
                "sinkrate: note: an earlier sinkrate run (pid {}) left {} file(s), which cannot be removed ({why}); remove them by hand: {}",
                left.pid,
                paths.len(),
                sinkrate_units::a_few(paths.into_iter(), 5)
            ));
        }
    }
    #[cfg(target_os = "linux")]
    for left in sinkrate_sys::tracefs::sweep_left_over() {
        notes.push(format!(
            "sinkrate: note: removed {left}, which an earlier sinkrate run that was stopped before it could remove it left behind"
        ));
    }
    notes
}

fn main() -> ExitCode {
    let code = run();
    // A second interrupt that is already ending the process ends it with 130; one that
    // comes from here on waits for this return (the claim is kept until the process ends).
    std::mem::forget(interrupt::claim_exit());
    sinkrate_sys::owned::finish();
    match code {
        Ok(code) => code,
        Err(e) => {
            let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
            eprintln!("sinkrate: error: {}", visible(&chain.join(": ")));
            ExitCode::from(2)
        }
    }
}

/// An error line with the control characters a value may carry (a NUL or an escape
/// sequence in a job file's value) written as `\xNN`: printed raw they are invisible, or
/// move the cursor and recolour the terminal. Line breaks stay.
fn visible(line: &str) -> String {
    line.split('\n')
        .map(sinkrate_units::escaped)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_in_an_error_are_shown_not_sent() {
        assert_eq!(
            super::visible("'wr\0ite\x1b[31m' is not a mode\nnext"),
            "'wr\\x00ite\\x1b[31m' is not a mode\nnext"
        );
    }
}
