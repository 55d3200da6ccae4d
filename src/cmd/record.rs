//! `sinkrate record`: arguments to a session, the session run, its report rendered.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use sinkrate_record::session::{self, LiveStatus, SessionError};

use crate::cli::RecordArgs;
use crate::export::plan::Style;
use crate::export::{frames_csv::FramesCsv, Exporter, Json};

/// The session's refusal with the record flag that changes it.
pub fn refusal(e: SessionError) -> anyhow::Error {
    let hint = match &e {
        SessionError::NoSpace {
            needed_gb,
            preallocate_gb,
            ..
        } if *preallocate_gb > needed_gb / 2.0 => " (lower --preallocate or free some space)",
        SessionError::NoSpace { .. } => " (shorten --duration or free some space)",
        SessionError::NotStorage { .. } => " (give --dir on the recording device's mount point)",
        SessionError::PoolTooLarge { .. } => " (lower --buffers or the frame size)",
        SessionError::NeedsRoot => " (--ram-limit/--dirty-limit)",
        _ => "",
    };
    anyhow!("{e}{hint}")
}

fn live_line(s: &LiveStatus) -> String {
    let t = s.elapsed.as_secs();
    format!(
        "{:02}:{:02}  fps {:.1}/{:.0}  drops {}  pool {}/{}  write {:.1} MB/s  worst {:.0} ms  dirty {:.0} MB  wb {:.0} MB",
        t / 60,
        t % 60,
        s.frames_written_in_second as f64,
        s.fps_total,
        s.frames_dropped,
        s.pool_in_use,
        s.buffers,
        s.bytes_written_in_second as f64 / 1e6,
        s.worst_write_ns as f64 / 1e6,
        s.dirty_bytes.unwrap_or(0) as f64 / 1e6,
        s.writeback_bytes.unwrap_or(0) as f64 / 1e6,
    )
}

/// Settings a killed run left changed go back before anything else.
pub fn restore_left_over_settings() -> Result<()> {
    let out = session::restore_left_over_settings().map_err(|e| anyhow!(e))?;
    if !out.restored.is_empty() {
        eprintln!(
            "sinkrate: note: restored settings left by an interrupted run: {}",
            out.restored_text()
        );
    }
    for line in out.left_alone_text() {
        eprintln!("sinkrate: note: {line}");
    }
    Ok(())
}

/// The emulated card under `dir`, as `flag` (`--power-cut-at`, `--power-cut`) cuts it. A
/// card left dark by a killed run gets its power back first.
pub(crate) fn emulated_card(
    dir: &std::path::Path,
    flag: &str,
) -> Result<sinkrate_emulate::power::Card> {
    let card = sinkrate_emulate::power::card_holding(dir)
        .map_err(|e| anyhow!(e.replace("--power-cut-at", flag)))?;
    if card.needs_restore() {
        card.restore().map_err(|e| {
            anyhow!("the card's power was left cut by an earlier run and cannot come back: {e}")
        })?;
        eprintln!(
            "sinkrate: note: the card at {} was left without power by an interrupted run; its power is back and its filesystem mounted",
            card.mountpoint.display()
        );
    }
    Ok(card)
}

/// The files a replay reads: the trace as given, its calls file, and its iolog when the
/// calls file was given. No output of the run may be one of them.
fn replay_inputs(trace: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut inputs = vec![trace.to_path_buf(), sinkrate_capture::sidecar_path(trace)];
    if let Some(iolog) = trace.to_str().and_then(|t| t.strip_suffix(".calls.jsonl")) {
        inputs.push(iolog.into());
    }
    inputs
}

pub fn run(args: RecordArgs) -> Result<ExitCode> {
    restore_left_over_settings()?;
    let inputs = args
        .replay
        .as_deref()
        .map(replay_inputs)
        .unwrap_or_default();
    let inputs: Vec<&std::path::Path> = inputs.iter().map(|p| p.as_path()).collect();
    crate::check_outputs(
        &[
            ("--output", args.out.output.as_deref()),
            ("--frames-log", args.frames_log.as_deref()),
            ("--report", args.report.as_deref()),
        ],
        &inputs,
    )?;
    let mut session = crate::cli::record_config::session(&args)?;
    if session.record.power_cut_at.is_some() {
        session.power_switch = Some(std::sync::Arc::new(emulated_card(
            &session.record.dir,
            "--power-cut-at",
        )?));
    }
    if let Some(what) = args.find_max {
        return super::find_max::run(&args, session, what.into());
    }
    let checked = session::preflight(&session).map_err(refusal)?;
    if let Some((dirty, background)) = session.dirty_limits {
        eprintln!(
            "sinkrate: note: vm.dirty_bytes={dirty} vm.dirty_background_bytes={background} for this run (journal {}; restored at the end)",
            session::SETTINGS_JOURNAL
        );
    }
    let stop = crate::interrupt_flag()?;
    let mut print_live = |s: &LiveStatus| eprintln!("{}", live_line(s));
    let live = args.live.wanted(std::io::stderr().is_terminal());
    let run = session::run_checked(
        &session,
        checked,
        stop,
        live.then_some(&mut print_live as &mut dyn FnMut(&LiveStatus)),
    )
    .map_err(refusal)?;
    for n in &run.notices {
        eprintln!("sinkrate: note: {n}");
    }
    if let Some(path) = &args.frames_log {
        sinkrate_sys::output::result(path, &FramesCsv.export(&run)?)
            .with_context(|| format!("--frames-log {}: cannot write", path.display()))?;
    }
    // A soak's JSON (an hour of frame records and its timeline) goes out as it is made.
    args.out.print(&run, &Style::default())?;
    if let Some(p) = &args.report {
        super::report::write_for_run(&Json.export(&run)?, "record", p)?;
    }
    for e in &run.result.errors {
        eprintln!("sinkrate: error: {e}");
    }
    if run.interrupted && run.result.errors.is_empty() {
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::from(run.result.verdict.exit_code()))
}
