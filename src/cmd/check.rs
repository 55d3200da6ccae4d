//! `sinkrate check [PATH]`: arguments to a check session (crates/check), its progress on
//! standard error, its report written to a JSON file and rendered as the verdict table.
//! Exit 0 keeps up, 1 does not, 2 error.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use sinkrate_check::{CheckConfig, CheckError, Phase};
use sinkrate_model::check::Plan;
use sinkrate_record::session::SessionError;

use crate::cli::values::WriteModeArg;
use crate::cli::CheckArgs;
use crate::export::plan::{self, Style};
use crate::export::{Exporter, Json};

/// The recording test's session: the user's record flags, with check's own choices where
/// they name none.
fn recording(args: &CheckArgs) -> Result<sinkrate_record::session::Session> {
    use crate::cli::record_config::RecordFlags;
    // The recording lasts what check plans, besides the flags every session sets. It goes in
    // the checked directory (record's default, `.`, where the session runs): a path that is
    // not one gets the audit and its own line there, not a --dir message from record's flags.
    let mut flags = RecordFlags::parse(&args.record_flags, &["duration"], "check")?;
    if !flags.given("write_mode") {
        if args.write_mode == WriteModeArg::Null {
            return Err(anyhow!(
                "--write-mode null writes nothing, so it cannot check storage (accepted: buffered, direct, dsync, uring)"
            ));
        }
        flags.args.write_mode = args.write_mode;
    }
    let names_streams = flags.names_streams();
    if !names_streams {
        match &args.rate.bitrate {
            Some(b) => {
                flags.args.fps = Some(30.0);
                flags.args.bitrate = Some(b.clone());
            }
            None => flags.default_profile(&args.rate.profile),
        }
    }
    let mut session = crate::cli::record_config::session(&flags.args)?;
    if !names_streams {
        // The profile's name (or the bitrate) heads check's table, as audit names it.
        session.label = super::audit::stream_rate(&args.rate)?.0;
    }
    if session.record.write_mode == sinkrate_model::record::WriteMode::Null {
        return Err(anyhow!(
            "--write-mode null after --: writes nothing, so it cannot check storage"
        ));
    }
    Ok(session)
}

/// Where the report goes when no --output names it: the current directory, or the
/// temporary directory when that is not writable (a read-only root on a board). The name is
/// created exclusively there (see `output::new_file`), so a name someone else planted in a
/// shared directory is never written through.
fn default_report_dir() -> PathBuf {
    let cwd_writable = std::env::current_dir()
        .ok()
        .is_some_and(|d| sinkrate_sys::files::writable(&d));
    if cwd_writable {
        PathBuf::new()
    } else {
        std::env::temp_dir()
    }
}

pub fn run(args: CheckArgs) -> Result<ExitCode> {
    crate::check_outputs(
        &[
            ("--output", args.output.as_deref()),
            ("--report", args.report.as_deref()),
        ],
        &[],
    )?;
    let mut recording = recording(&args)?;
    // check's own --endurance and --hours-per-day, where the record flags after -- did not
    // give them.
    let (endurance, hours_per_day) = crate::cli::values::endurance(&args.endurance)?;
    if let (sinkrate_record::session::EnduranceFrom::Device, Some(e)) =
        (&recording.endurance, endurance)
    {
        recording.endurance = sinkrate_record::session::EnduranceFrom::Known(Some(e));
    }
    if hours_per_day != sinkrate_record::session::DEFAULT_HOURS_PER_DAY {
        recording.hours_per_day = hours_per_day;
    }
    if let Err(e) = std::fs::metadata(&args.path) {
        return Err(anyhow!(
            "{}: {e} (give a directory on the storage to check)",
            args.path.display()
        ));
    }
    // As record does: a power cut needs a card whose power sinkrate switches, or a refusal
    // before any work (never accepted and ignored).
    if recording.record.power_cut_at.is_some() {
        recording.power_switch = Some(std::sync::Arc::new(super::record::emulated_card(
            &args.path,
            "--power-cut-at",
        )?));
    }
    let path = std::fs::canonicalize(&args.path)
        .with_context(|| format!("{}: cannot resolve", args.path.display()))?;
    let cfg = CheckConfig {
        path,
        quick: args.quick,
        recording,
    };
    let stop = crate::interrupt_flag()?;
    let progress = crate::progress::TimeBar::new(
        "sinkrate check",
        args.progress,
        Plan::of(args.quick).expected_s() as f64,
    );
    let result = sinkrate_check::run(&cfg, stop.clone(), &mut |p: Phase| progress.step(p.name));
    drop(progress);
    let mut run = match result {
        Ok(run) => run,
        Err(CheckError::Interrupted) => {
            eprintln!("sinkrate: check interrupted; its test files are removed");
            return Ok(ExitCode::from(130));
        }
        Err(CheckError::Recording(e @ SessionError::NoSpace { .. })) => {
            return Err(anyhow!("{e} (free some space, or check with --quick)"))
        }
        Err(CheckError::Recording(e)) => return Err(super::record::refusal(e)),
        Err(e) => return Err(anyhow!(e)),
    };
    let report = match &args.output {
        Some(p) => {
            run.result.report_file = Some(p.display().to_string());
            sinkrate_sys::output::result(p, &Json.export(&run)?)
                .with_context(|| format!("writing the report {}", p.display()))?;
            p.clone()
        }
        None => {
            let stamp = sinkrate_model::envelope::utc(sinkrate_sys::host::unix_ms_now())
                .map(|t| {
                    format!(
                        "{:04}{:02}{:02}-{:02}{:02}{:02}",
                        t.year, t.month, t.day, t.hour, t.minute, t.second
                    )
                })
                .unwrap_or_default();
            let dir = default_report_dir();
            sinkrate_sys::output::new_file(&dir, &format!("sinkrate-check-{stamp}"), "json", |p| {
                run.result.report_file = Some(p.display().to_string());
                Json.export(&run).map_err(std::io::Error::other)
            })
            .with_context(|| format!("writing the report in {}", dir.display()))?
        }
    };
    let style = Style {
        colour: super::audit::colour_wanted(args.color, false),
    };
    plan::print_stdout(&run, args.output_format, &style)?;
    if let Some(p) = &args.report {
        super::report::write_for_run(&Json.export(&run)?, &report.display().to_string(), p)?;
    }
    // The fault in one line where scripts look for it, whatever the output format.
    if let Some(e) = &run.error {
        eprintln!("sinkrate: error: {}", e.what);
    }
    Ok(ExitCode::from(run.result.exit_code))
}
