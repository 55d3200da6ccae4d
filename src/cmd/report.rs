//! `sinkrate report RUN.json...`: the files read (an unreadable one named, the others still
//! used), the page built from their typed results, written as one HTML file and, with
//! `--png`, the main charts as PNG files. `--report FILE` on check, record, bench and watch
//! comes through [`write_for_run`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use sinkrate_model::document::Document;
use sinkrate_model::TOOL_VERSION;
use sinkrate_report::Input;

use crate::cli::ReportArgs;

pub fn run(args: ReportArgs) -> Result<ExitCode> {
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
        .map(sinkrate_compare::GroupBy::parse)
        .transpose()
        .map_err(|e| anyhow!(e))?;
    let (read, files, unreadable_lines) = super::read_all(&args.inputs, by.as_ref(), &args.label);
    let unreadable = unreadable_lines.len();
    let inputs: Vec<Input> = read
        .into_iter()
        .map(|r| Input {
            label: match (r.group, r.given) {
                (Some(g), _) => format!("{g}: {}", super::file_label(&r.path)),
                (None, Some(given)) => given,
                (None, None) => super::file_label(&r.path),
            },
            file: r.path,
            document: r.document,
        })
        .collect();
    if inputs.is_empty() {
        return Err(anyhow!("no input could be read: nothing to report"));
    }
    // A directory's report goes beside it (results.html), not into the tree.
    let output = args.output.clone().unwrap_or_else(|| {
        let first = &args.inputs[0];
        if first.is_dir() {
            // `results/` and `results` alike give results.html; `.` has no name of its own.
            let dir: PathBuf = first.components().collect();
            match dir.file_name() {
                Some(n) => dir.with_file_name(format!("{}.html", n.to_string_lossy())),
                None => PathBuf::from("sinkrate-report.html"),
            }
        } else {
            first.with_extension("html")
        }
    });
    let to_stdout = output.as_os_str() == "-";
    if !to_stdout {
        guard_output(&output, &files, args.force)?;
    }
    let page = sinkrate_report::page(&inputs);
    // Every output is checked before any is written.
    if let Some(dir) = &args.png {
        check_png(&page, dir, args.force)?;
    }
    let html = sinkrate_report::html::render(&page, TOOL_VERSION);
    if to_stdout {
        crate::write_stdout(html.as_bytes())?;
    } else {
        sinkrate_sys::output::replace(&output, html.as_bytes())
            .with_context(|| format!("{}: cannot write the report", output.display()))?;
        eprintln!(
            "sinkrate: wrote {} ({} chart(s), {:.1} MB)",
            output.display(),
            page.charts.iter().filter(|c| !c.series.is_empty()).count(),
            html.len() as f64 / 1e6
        );
    }
    if let Some(dir) = &args.png {
        write_png(&page, dir)?;
    }
    Ok(ExitCode::from(if unreadable > 0 { 2 } else { 0 }))
}

/// The report never replaces one of its inputs, nor any other file without --force.
fn guard_output(output: &Path, inputs: &[PathBuf], force: bool) -> Result<()> {
    if inputs
        .iter()
        .any(|i| sinkrate_sys::output::same_file(i, output))
    {
        return Err(anyhow!(
            "{}: that is an input; give the report another name with -o FILE.html",
            output.display()
        ));
    }
    if std::fs::symlink_metadata(output).is_ok() && !force {
        return Err(anyhow!(
            "{} exists: give --force to replace it, or -o another name",
            output.display()
        ));
    }
    crate::check_output_path("--output", output)
}

/// `--png DIR` before anything is written: a directory (or a name one can be made at),
/// whose chart files are new unless --force.
fn check_png(page: &sinkrate_report::figures::Page, dir: &Path, force: bool) -> Result<()> {
    if !cfg!(feature = "png-report") {
        return Err(anyhow!("{NO_PNG}"));
    }
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            return Err(anyhow!(
                "--png {}: not a directory (--png names the directory the PNG files go in)",
                dir.display()
            ))
        }
        Ok(_) => {}
        Err(_) => {
            let parent = match dir.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            if !parent.is_dir() {
                return Err(anyhow!(
                    "--png {}: the directory {} does not exist",
                    dir.display(),
                    parent.display()
                ));
            }
        }
    }
    if !force {
        for c in &page.charts {
            let p = dir.join(format!("{}.png", c.id));
            if p.exists() {
                return Err(anyhow!(
                    "{} exists: give --force to replace it, or --png another directory",
                    p.display()
                ));
            }
        }
    }
    Ok(())
}

/// What a build without the PNG charts says to `--png` (board builds).
const NO_PNG: &str = "--png: this build has no PNG charts (board builds leave them out to fit their 5 MB budget); the HTML report holds the same charts";

#[cfg(not(feature = "png-report"))]
fn write_png(_: &sinkrate_report::figures::Page, _: &Path) -> Result<()> {
    Err(anyhow!("{NO_PNG}"))
}

#[cfg(feature = "png-report")]
fn write_png(page: &sinkrate_report::figures::Page, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--png {}: cannot create the directory", dir.display()))?;
    let pictures = sinkrate_report::png::render_all(page)?;
    for picture in &pictures {
        let path = dir.join(&picture.file_name);
        sinkrate_sys::output::result(&path, &picture.png)
            .with_context(|| format!("--png {}: cannot write", path.display()))?;
    }
    eprintln!(
        "sinkrate: wrote {} PNG file(s) into {}",
        pictures.len(),
        dir.display()
    );
    Ok(())
}

/// `--report FILE`: the report of the run just finished, from its JSON (read back through
/// the same types as `sinkrate report` reads files), replacing FILE as `--output` does.
pub fn write_for_run(json: &[u8], name: &str, path: &Path) -> Result<()> {
    let document = Document::parse(name, json).map_err(|e| anyhow!(e))?;
    let input = Input {
        file: PathBuf::from(name),
        label: super::file_label(path),
        document,
    };
    let page = sinkrate_report::page(std::slice::from_ref(&input));
    let html = sinkrate_report::html::render(&page, TOOL_VERSION);
    sinkrate_sys::output::replace(path, html.as_bytes())
        .with_context(|| format!("--report {}: cannot write the report", path.display()))?;
    eprintln!("sinkrate: report written to {}", path.display());
    Ok(())
}
