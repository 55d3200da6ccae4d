pub mod audit;
pub mod bench;
pub mod bench_info;
pub mod capture;
pub mod check;
pub mod compare;
pub mod docs;
pub mod emulate;
pub mod find_max;
pub mod record;
pub mod report;
pub mod suite;
pub mod tune;
pub mod verify;
pub mod watch;
pub mod watch_tui;

use std::path::{Path, PathBuf};

use sinkrate_model::document::Document;

/// A result file (any sinkrate run, or fio's JSON) read through the types that wrote it, or
/// one line saying what is wrong with it; with `--by`, also its group's name from its own
/// fields (or `folder`, the folder it was found in).
pub fn read_result(
    path: &Path,
    by: Option<&sinkrate_compare::GroupBy>,
    folder: Option<&str>,
) -> Result<(Document, Option<String>), String> {
    let name = path.display().to_string();
    let bytes = sinkrate_sys::input::read_capped(path, sinkrate_sys::input::RESULT_BYTES)
        .map_err(|e| format!("{name}: {e}"))?;
    let document = Document::parse(&name, &bytes)?;
    let group = match by {
        Some(by) => {
            let value: serde_json::Value =
                serde_json::from_slice(&bytes).map_err(|e| format!("{name}: {e}"))?;
            Some(by.label(&value, folder))
        }
        None => None,
    };
    Ok((document, group))
}

/// A result's label when none is given: its file's name without `.json`.
pub fn file_label(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// The result files an input stands for, each with the first folder under the input when it
/// is a directory: the file itself, or every *.json under the directory, in name order.
/// Folders that are symlinks are not followed (a link back up would never end).
pub fn result_files(input: &Path) -> Result<Vec<(PathBuf, Option<String>)>, String> {
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

/// One result read for `compare` or `report`: where it came from, what it holds, and the
/// label it was given (its `--by` group, or the `--label` of the input it came from).
pub struct ReadResult {
    pub path: PathBuf,
    pub document: Document,
    /// Its `--by` group.
    pub group: Option<String>,
    /// The `--label` given for the input it came from.
    pub given: Option<String>,
    /// Found under a directory given (a lab's tree), not named itself.
    pub in_directory: bool,
}

/// Every result the inputs stand for, read ([`result_files`], [`read_result`]): the ones
/// read, each file found (read or not), and one line for each that could not be read
/// (printed as it is found; the others are still used).
pub fn read_all(
    inputs: &[PathBuf],
    by: Option<&sinkrate_compare::GroupBy>,
    labels: &[String],
) -> (Vec<ReadResult>, Vec<PathBuf>, Vec<String>) {
    let mut read = Vec::new();
    let mut found = Vec::new();
    let mut unreadable = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let files = match result_files(input) {
            Ok(files) => files,
            Err(line) => {
                eprintln!("sinkrate: {line}");
                unreadable.push(line);
                continue;
            }
        };
        let in_directory = input.is_dir();
        for (path, folder) in files {
            found.push(path.clone());
            match read_result(&path, by, folder.as_deref()) {
                Ok((document, group)) => read.push(ReadResult {
                    path,
                    document,
                    group,
                    given: labels.get(i).cloned(),
                    in_directory,
                }),
                Err(line) => {
                    eprintln!("sinkrate: {line}");
                    unreadable.push(line);
                }
            }
        }
    }
    (read, found, unreadable)
}
