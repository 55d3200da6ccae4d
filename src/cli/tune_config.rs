//! `sinkrate tune`'s arguments as what its sessions take: the fixes named by a check or
//! audit report (`apply --from`), and the workload `tune search` runs (a job file, the
//! user's recorder, or a recording).

use anyhow::{anyhow, Result};
use sinkrate_model::{Envelope, RunKind};
use sinkrate_tune::search::Workload;

use super::TuneSearchArgs;

/// Findings with a fix that is a setting: their ids and the settings, and the directory
/// they were found for.
pub struct Fixes {
    pub path: std::path::PathBuf,
    pub ids: Vec<String>,
    pub settings: Vec<sinkrate_model::tunables::Assignment>,
}

/// The fixes among `findings` for `path` (all of them, or those `only` names).
pub fn fixes_of(
    findings: &[sinkrate_model::audit::Finding],
    path: &str,
    only: Option<&[String]>,
) -> Fixes {
    let (ids, settings) = sinkrate_audit::setting_fixes(findings, only);
    Fixes {
        path: path.into(),
        ids,
        settings,
    }
}

/// The fixes in a check report (its top findings) or an audit report (every finding).
pub fn fixes_from(file: &std::path::Path) -> Result<Fixes> {
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
            let run =
                Envelope::<sinkrate_model::check::CheckReport>::from_json(&bytes, RunKind::Check)
                    .map_err(bad)?;
            let a = &run.result.audit.audit;
            Ok(fixes_of(
                &a.findings,
                &a.target.path,
                Some(&run.result.top_findings),
            ))
        }
        "audit" => {
            let run =
                Envelope::<sinkrate_model::audit::AuditReport>::from_json(&bytes, RunKind::Audit)
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

/// The workload: a job file, the user's recorder, or a recording (check's profile unless
/// the record flags after -- name the streams).
pub fn workload(args: &TuneSearchArgs) -> Result<Workload> {
    use crate::cli::record_config::RecordFlags;
    let dir = args.path.clone();
    if let Some(file) = &args.job {
        if args.confirm_duration.is_some() {
            return Err(anyhow!(
                "--confirm-duration: a job file runs as it is written; set its length with runtime= (and time_based) in {}",
                file.display()
            ));
        }
        if !args.record_flags.is_empty() {
            return Err(anyhow!(
                "--job: the job file is the whole workload; nothing goes after -- (got {})",
                args.record_flags.join(" ")
            ));
        }
        let jobs = sinkrate_jobspec::build_job_set(
            &sinkrate_jobspec::JobSources {
                files: std::slice::from_ref(file),
                texts: &[],
                cli_options: &[],
                ignore_unsupported: false,
            },
            &sinkrate_engine::probe::LiveContext,
        )
        .map_err(|e| anyhow!("--job {}: {e}", file.display()))?;
        if !jobs.jobs.iter().any(|j| j.options.rw.writes()) {
            return Err(anyhow!(
                "--job {}: no job writes (rw=write, randwrite, rw, randrw, trim...): there is nothing to tune for a recorder",
                file.display()
            ));
        }
        return Ok(Workload::Job {
            jobs,
            dir,
            file: file.clone(),
        });
    }
    if args.exec {
        if args.record_flags.is_empty() {
            return Err(anyhow!(
                "--exec: give the recorder's command after -- (e.g. --exec -- ./my_recorder --out /mnt/card)"
            ));
        }
        // The count is read after each run, from where the recorder writes it.
        let drops_file = args.drops_file.as_ref().map(|f| {
            if f.is_absolute() {
                f.clone()
            } else {
                dir.join(f)
            }
        });
        return Ok(Workload::Exec {
            argv: args.record_flags.clone(),
            dir,
            drops_file,
        });
    }
    // Dirty limits are the search's own knobs, besides the flags every session sets.
    let mut flags = RecordFlags::parse(
        &args.record_flags,
        &["ram_limit", "dirty_limit"],
        "tune search",
    )?;
    if flags.given("duration") {
        return Err(anyhow!(
            "--duration after --: tune search sets each run's length itself (screening runs past the first flush; full-length runs: --confirm-duration)"
        ));
    }
    flags.args.dir = args.path.clone();
    flags.default_profile("dual-1080p30");
    let record_args = flags.args;
    let session = crate::cli::record_config::session(&record_args)?;
    if session.record.write_mode == sinkrate_model::record::WriteMode::Null {
        return Err(anyhow!(
            "--write-mode null after --: writes nothing, so there is nothing to tune"
        ));
    }
    Ok(Workload::Record(Box::new(session)))
}
