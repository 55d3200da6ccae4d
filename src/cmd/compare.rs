//! `sinkrate compare RUN.json...`: the files read (an unreadable one named, the others
//! still compared), a compare session, its typed report rendered.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use sinkrate_compare::{CompareConfig, CompareReport, GroupBy, Run};
use sinkrate_model::{Envelope, RunKind};

use crate::cli::{CompareArgs, CompareFormat};
use crate::export::compare_table::{CompareCsv, CompareMarkdown, CompareText};
use crate::export::{Exporter, Json};

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
    let mut unreadable = Vec::new();
    // A file's labels go with each of its runs (a bench file may hold several jobs).
    let mut labels = Vec::new();
    for (i, input) in args.inputs.iter().enumerate() {
        let files = match result_files(input) {
            Ok(files) => files,
            Err(line) => {
                eprintln!("sinkrate: {line}");
                unreadable.push(line);
                continue;
            }
        };
        for (path, folder) in files {
            match read_runs(&path, by.as_ref(), folder.as_deref()) {
                Ok((found, label)) => {
                    if let Some(l) = label.or_else(|| args.label.get(i).cloned()) {
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
    }
    let cfg = CompareConfig {
        grouped_by: args.by.clone(),
        labels,
        baseline: args.baseline.clone(),
    };
    let started_ms = sinkrate_sys::host::unix_ms_now();
    let report: CompareReport =
        sinkrate_compare::compare(runs, &cfg, unreadable.clone()).map_err(|e| anyhow!(e))?;
    let worse = report
        .rows
        .iter()
        .any(|r| r.against_baseline.as_ref().is_some_and(|s| s.worse));
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
    let body = match args.output_format {
        CompareFormat::Text => CompareText.export(&run)?,
        CompareFormat::Markdown => CompareMarkdown.export(&run)?,
        CompareFormat::Csv => CompareCsv.export(&run)?,
        CompareFormat::Json => Json.export(&run)?,
    };
    crate::write_stdout(&body)?;
    Ok(ExitCode::from(if !unreadable.is_empty() {
        2
    } else if args.fail_if_worse && worse {
        1
    } else {
        0
    }))
}

/// The result files an input stands for, each with the first folder under the input when it
/// is a directory: the file itself, or every *.json under the directory, in name order.
/// Folders that are symlinks are not followed (a link back up would never end).
fn result_files(input: &Path) -> Result<Vec<(PathBuf, Option<String>)>, String> {
    let name = input.display();
    let meta = std::fs::metadata(input).map_err(|e| format!("{name}: {e}"))?;
    if !meta.is_dir() {
        return Ok(vec![(input.to_path_buf(), None)]);
    }
    let mut found = Vec::new();
    let mut pending = vec![input.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
            let path = entry.path();
            let kind = entry
                .file_type()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            if kind.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|x| x == "json") {
                let folder = path.strip_prefix(input).ok().and_then(|rel| {
                    let mut parts = rel.components();
                    let first = parts.next()?;
                    // A file directly in the directory has no folder of its own.
                    parts.next()?;
                    Some(first.as_os_str().to_string_lossy().into_owned())
                });
                found.push((path, folder));
            }
        }
    }
    if found.is_empty() {
        return Err(format!("{name}: no result (*.json) under this directory"));
    }
    found.sort();
    Ok(found)
}

/// One file's runs and, with `--by`, their label from the file's own fields.
fn read_runs(
    path: &Path,
    by: Option<&GroupBy>,
    folder: Option<&str>,
) -> Result<(Vec<Run>, Option<String>), String> {
    let name = path.display().to_string();
    let bytes = sinkrate_sys::input::read_capped(path, sinkrate_sys::input::RESULT_BYTES)
        .map_err(|e| format!("{name}: {e}"))?;
    let document = sinkrate_model::document::Document::parse(&name, &bytes)?;
    let label = match by {
        Some(by) => {
            let value: serde_json::Value =
                serde_json::from_slice(&bytes).map_err(|e| format!("{name}: {e}"))?;
            Some(by.label(&value, folder))
        }
        None => None,
    };
    Ok((sinkrate_compare::runs(&name, document)?, label))
}
