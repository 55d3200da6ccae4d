//! `sinkrate compare RUN.json...`: the files read (an unreadable one named, the others
//! still compared), a compare session, its typed report rendered.

use std::process::ExitCode;

use anyhow::{anyhow, Result};
use sinkrate_compare::{CompareConfig, GroupBy};
use sinkrate_model::compare::{CompareReport, FailedRun};
use sinkrate_model::{Envelope, RunKind};

use crate::cli::CompareArgs;
use crate::export::plan::{self, Style};

pub fn run(args: CompareArgs) -> Result<ExitCode> {
    if !args.label.is_empty() && args.label.len() != args.inputs.len() {
        return Err(anyhow!(
            "--label: {} given for {} file(s); give one per file, in order",
            args.label.len(),
            args.inputs.len()
        ));
    }
    let by = args
        .by
        .as_deref()
        .map(GroupBy::parse)
        .transpose()
        .map_err(|e| anyhow!(e))?;
    let mut runs = Vec::new();
    // A file's labels go with each of its runs (a bench file may hold several jobs).
    let mut labels = Vec::new();
    // Runs that failed: listed beside the rows, never left out in silence.
    let mut failed = Vec::new();
    // Results under a directory that hold no runs (an audit, a verify beside a lab's
    // checks), by kind: left out with a note.
    let mut left_out: std::collections::BTreeMap<&'static str, usize> = Default::default();
    let (read, _, mut unreadable) = super::read_all(&args.inputs, by.as_ref(), &args.label);
    for r in read {
        let name = r.path.display().to_string();
        let label = r.group.or(r.given);
        if let Some((kind, what)) = sinkrate_compare::failure(&r.document) {
            failed.push(FailedRun {
                label: label.unwrap_or_else(|| super::file_label(&r.path)),
                kind: kind.to_string(),
                file: name,
                what,
            });
            continue;
        }
        if r.in_directory && !sinkrate_compare::has_runs(&r.document) {
            *left_out.entry(r.document.kind_name()).or_default() += 1;
            continue;
        }
        match sinkrate_compare::runs(&name, r.document) {
            Ok(found) => {
                if let Some(l) = label {
                    labels.extend(std::iter::repeat_n(l, found.len()));
                }
                runs.extend(found);
            }
            Err(line) => {
                eprintln!("sinkrate: {line}");
                unreadable.push(line);
            }
        }
    }
    if !left_out.is_empty() {
        let kinds: Vec<String> = left_out.iter().map(|(k, n)| format!("{n} {k}")).collect();
        eprintln!(
            "sinkrate: note: left out {} result(s) with no runs to compare",
            kinds.join(", ")
        );
    }
    let cfg = CompareConfig {
        grouped_by: args.by.clone(),
        labels,
        baseline: args.baseline.clone(),
    };
    let started_ms = sinkrate_sys::host::unix_ms_now();
    let report: CompareReport = sinkrate_compare::compare(runs, failed, &cfg, unreadable.clone())
        .map_err(|e| anyhow!(e))?;
    let worse = report
        .rows
        .iter()
        .any(|r| r.against_baseline.as_ref().is_some_and(|s| s.worse));
    // A run that failed is no better than one that is worse: a gate does not pass it.
    let report_failed = report.failed.clone();
    let mut run = Envelope::new(
        RunKind::Compare,
        sinkrate_sys::host::host_facts(),
        started_ms,
        report,
    );
    if !unreadable.is_empty() {
        run.error = Some(sinkrate_model::RunError {
            what: format!("{} input(s) could not be read", unreadable.len()),
            at_s: None,
        });
    }
    plan::print_stdout(&run, args.output_format, &Style::default())?;
    Ok(ExitCode::from(if !unreadable.is_empty() {
        2
    } else if args.fail_if_worse && (worse || !report_failed.is_empty()) {
        1
    } else {
        0
    }))
}
