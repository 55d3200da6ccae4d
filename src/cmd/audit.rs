//! `sinkrate audit [PATH]`: findings grouped by severity, each with its evidence, why, fix
//! and trade-off; JSON in the run schema.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use sinkrate_model::audit::{Audit, AuditReport, Severity, StreamRate};
use sinkrate_model::{Envelope, RunKind};
use sinkrate_sys::root::SysRoot;

use crate::cli::values::When;
use crate::cli::{AuditArgs, StreamRateArgs};
use crate::export::plan::Style;

/// The stream the findings are judged against: a label and its rate in bytes per second.
pub fn stream_rate(args: &StreamRateArgs) -> Result<(String, f64)> {
    if let Some(b) = &args.bitrate {
        let bits =
            sinkrate_units::product::parse_bitrate(b).map_err(|e| anyhow!("--bitrate: {e}"))?;
        if bits == 0 {
            return Err(anyhow!("--bitrate: must be above zero (e.g. 24M)"));
        }
        return Ok((
            format!("{:.1} Mbit/s", bits as f64 / 1e6),
            bits as f64 / 8.0,
        ));
    }
    let p = sinkrate_record::config::profile(&args.profile).map_err(|e| anyhow!(e))?;
    let rate = (p.streams)()
        .iter()
        .map(sinkrate_model::record::StreamSpec::bytes_per_s)
        .sum();
    Ok((p.name.to_string(), rate))
}

/// Whether to colour text bound for standard output (or standard error with `to_stderr`).
pub fn colour_wanted(flag: When, to_stderr: bool) -> bool {
    let terminal = if to_stderr {
        std::io::stderr().is_terminal()
    } else {
        std::io::stdout().is_terminal()
    };
    flag.wanted(std::env::var_os("NO_COLOR").is_none() && terminal)
}

/// Runs the audit with the given root; on a fixture root the host facts are not this host's.
pub fn audit(
    path: &std::path::Path,
    sysroot: Option<&std::path::Path>,
    rate: f64,
) -> Result<Audit> {
    let root = match sysroot {
        Some(dir) => {
            if !dir.join("proc").is_dir() && !dir.join("sys").is_dir() {
                return Err(anyhow!(
                    "--sysroot {}: holds neither proc/ nor sys/ (a tree with proc/self/mountinfo, sys/ and optionally dev/ is expected)",
                    dir.display()
                ));
            }
            SysRoot::at(dir)
        }
        None => SysRoot::live(),
    };
    sinkrate_audit::audit(
        path,
        &sinkrate_audit::Options {
            root,
            stream_bytes_per_s: rate,
        },
    )
    .map_err(|e| anyhow!(e))
}

pub fn run(args: AuditArgs) -> Result<ExitCode> {
    if let Some(p) = &args.out.output {
        crate::check_output_path("--output", p)?;
    }
    let (label, rate) = stream_rate(&args.rate)?;
    let started = sinkrate_sys::host::unix_ms_now();
    let a = audit(&args.path, args.sysroot.as_deref(), rate)?;
    let bad = a
        .findings
        .iter()
        .any(|f| matches!(f.severity, Severity::Critical | Severity::Warn));
    let report = AuditReport {
        audit: a,
        stream: StreamRate {
            label,
            bytes_per_s: rate,
        },
        sysroot: args.sysroot.as_ref().map(|p| p.display().to_string()),
    };
    let mut run = Envelope::new(
        RunKind::Audit,
        sinkrate_sys::host::host_facts(),
        started,
        report,
    );
    // A fixture tree's facts are not this host's.
    if args.sysroot.is_some() {
        run.host = None;
    }
    let style = Style {
        colour: args.out.output.is_none() && colour_wanted(args.color, false),
    };
    args.out.print(&run, &style)?;
    Ok(if args.strict && bad {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
