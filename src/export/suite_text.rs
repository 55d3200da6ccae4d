//! A suite's result as the terminal shows it (each cell's median and ± half the runs'
//! spread, tables too wide for a terminal split into column groups) and as Markdown (each
//! cell's median and the runs' range), and the list of suites.

use anyhow::Result;
use sinkrate_model::suite::format::{cell_range, cell_short};
use sinkrate_model::suite::table::Table;
use sinkrate_model::suite::SuiteRun;
use sinkrate_suite::SUITES;

use super::Exporter;

/// Widest a text table gets before its columns are split into groups.
const MAX_WIDTH: usize = 110;

pub struct SuiteText;
pub struct SuiteMarkdown;

/// The suites `sinkrate suite list` names: what each does, where it comes from.
#[derive(serde::Serialize)]
pub struct SuiteListing(Vec<ListedSuite>);

#[derive(serde::Serialize)]
pub struct ListedSuite {
    name: &'static str,
    source: &'static str,
    about: &'static str,
    needs_root: Option<&'static str>,
    takes_recording: bool,
}

impl SuiteListing {
    pub fn all() -> SuiteListing {
        SuiteListing(
            SUITES
                .iter()
                .map(|s| ListedSuite {
                    name: s.id,
                    source: s.source,
                    about: s.about,
                    needs_root: s.needs_root,
                    takes_recording: s.takes_recording,
                })
                .collect(),
        )
    }
}

impl Exporter<SuiteListing> for SuiteText {
    fn export(&self, listing: &SuiteListing) -> Result<Vec<u8>> {
        let width = listing.0.iter().map(|s| s.name.len()).max().unwrap_or(0);
        let mut out = String::new();
        for s in &listing.0 {
            out.push_str(&format!("{:width$}  {}\n", s.name, s.about));
            out.push_str(&format!("{:width$}  from {}", "", s.source));
            if let Some(why) = s.needs_root {
                out.push_str(&format!("; needs root: {why}"));
            }
            out.push('\n');
        }
        out.push_str(
            "\nrun one: sinkrate suite NAME [PATH] [--quick] [--runs N] [--output-dir DIR]\n",
        );
        Ok(out.into_bytes())
    }
}

impl Exporter<SuiteListing> for SuiteMarkdown {
    fn export(&self, listing: &SuiteListing) -> Result<Vec<u8>> {
        let mut out =
            String::from("| suite | what it measures | from | needs root |\n|---|---|---|---|\n");
        for s in &listing.0 {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                s.name,
                s.about.replace('|', "\\|"),
                s.source.replace('|', "\\|"),
                s.needs_root.unwrap_or("no").replace('|', "\\|")
            ));
        }
        Ok(out.into_bytes())
    }
}

fn header(run: &SuiteRun, out: &mut String) {
    let r = &run.result;
    let t = &r.target;
    let on = match (&t.fs_type, &t.device) {
        (Some(fs), Some(dev)) => format!("  ({fs} on {dev})"),
        (Some(fs), None) => format!("  ({fs})"),
        _ => String::new(),
    };
    out.push_str(&format!("sinkrate suite {}  {}{on}\n", r.suite, r.dir));
    out.push_str(&format!("from {}\n", r.source));
    out.push_str(&format!(
        "{} run(s) of each condition{}; took {}\n",
        r.runs,
        if r.runs > 1 {
            ": median, ± half the runs' spread"
        } else {
            " (--quick: one run, no spread)"
        },
        super::mmss(r.elapsed_s)
    ));
    if let Some(d) = r.device_bytes_written {
        out.push_str(&format!(
            "written to {}'s device meanwhile: {} (its own count)\n",
            r.dir,
            sinkrate_units::product::bytes_si(d)
        ));
    }
    if let Some(m) = &r.made_on {
        out.push_str(&format!("devices made: {m}\n"));
    }
    for s in &r.settings_changed {
        out.push_str(&format!("setting: {s}\n"));
    }
}

fn text_table(t: &Table, out: &mut String) {
    out.push_str(&format!("\n{}\n", t.title));
    let cells: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            t.columns
                .iter()
                .zip(&r.cells)
                .map(|(c, cell)| {
                    if r.not_run.is_some() {
                        String::new()
                    } else {
                        cell_short(c.unit, cell)
                    }
                })
                .collect()
        })
        .collect();
    let label_w = t
        .rows
        .iter()
        .map(|r| r.label.len())
        .max()
        .unwrap_or(0)
        .max(9);
    let widths: Vec<usize> = t
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            cells
                .iter()
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
                .max(c.title.chars().count())
        })
        .collect();
    // Column groups that fit the width; the remarks follow the last group.
    let mut groups: Vec<Vec<usize>> = vec![Vec::new()];
    let mut used = label_w;
    for (i, w) in widths.iter().enumerate() {
        if used + 2 + w > MAX_WIDTH && !groups.last().is_some_and(|g| g.is_empty()) {
            groups.push(Vec::new());
            used = label_w;
        }
        used += 2 + w;
        if let Some(g) = groups.last_mut() {
            g.push(i);
        }
    }
    let last = groups.len() - 1;
    for (gi, g) in groups.iter().enumerate() {
        if gi > 0 {
            out.push('\n');
        }
        let mut line = format!("{:label_w$}", "");
        for &i in g {
            line.push_str(&format!("  {:>w$}", t.columns[i].title, w = widths[i]));
        }
        out.push_str(line.trim_end());
        out.push('\n');
        for (r, row_cells) in t.rows.iter().zip(&cells) {
            let mut line = format!("{:label_w$}", r.label);
            if let Some(why) = &r.not_run {
                line.push_str(&format!("  not run: {why}"));
                out.push_str(&line);
                out.push('\n');
                continue;
            }
            for &i in g {
                line.push_str(&format!("  {:>w$}", row_cells[i], w = widths[i]));
            }
            if gi == last {
                if let Some(m) = &r.mark {
                    line.push_str(&format!("  {m}"));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
}

impl Exporter<SuiteRun> for SuiteText {
    fn export(&self, run: &SuiteRun) -> Result<Vec<u8>> {
        let mut out = String::new();
        header(run, &mut out);
        for t in &run.result.tables {
            text_table(t, &mut out);
        }
        let conditions: Vec<String> = run
            .result
            .tables
            .iter()
            .flat_map(|t| t.rows.iter())
            .filter(|r| !r.about.is_empty())
            .map(|r| format!("  {}: {}", r.label, r.about))
            .collect();
        if !conditions.is_empty() {
            out.push_str("\nconditions:\n");
            out.push_str(&conditions.join("\n"));
            out.push('\n');
        }
        if !run.result.notes.is_empty() {
            out.push_str("\nnotes:\n");
            for n in &run.result.notes {
                out.push_str(&format!("  - {n}\n"));
            }
        }
        Ok(out.into_bytes())
    }
}

fn escape(s: &str) -> String {
    s.replace('|', "\\|")
}

impl Exporter<SuiteRun> for SuiteMarkdown {
    fn export(&self, run: &SuiteRun) -> Result<Vec<u8>> {
        let r = &run.result;
        let mut out = format!("## sinkrate suite {}\n\n", r.suite);
        out.push_str(&format!("From {}. {}.\n\n", r.source, r.about));
        out.push_str(&format!(
            "Measured in `{}`{}; {} run(s) of each condition, each cell the median{}.\n",
            r.dir,
            r.made_on
                .as_deref()
                .map(|m| format!(", devices made: {m}"))
                .unwrap_or_default(),
            r.runs,
            if r.runs > 1 {
                " and, in brackets, the runs' range"
            } else {
                ""
            }
        ));
        for s in &r.settings_changed {
            out.push_str(&format!("Setting for the run: {s}.\n"));
        }
        for t in &r.tables {
            out.push_str(&format!("\n### {}\n\n", escape(&t.title)));
            let described = t.rows.iter().any(|r| !r.about.is_empty());
            let mut head = vec!["condition".to_string()];
            if described {
                head.push("what".into());
            }
            head.extend(t.columns.iter().map(|c| escape(&c.title)));
            head.push("remark".into());
            out.push_str(&format!("| {} |\n", head.join(" | ")));
            out.push_str(&format!(
                "|{}\n",
                head.iter()
                    .enumerate()
                    .map(|(i, _)| {
                        if i == 0 || i == head.len() - 1 || (described && i == 1) {
                            "---|"
                        } else {
                            "---:|"
                        }
                    })
                    .collect::<String>()
            ));
            for row in &t.rows {
                let mut cells = vec![escape(&row.label)];
                if described {
                    cells.push(escape(&row.about));
                }
                match &row.not_run {
                    Some(why) => {
                        cells.extend(t.columns.iter().map(|_| "-".to_string()));
                        cells.push(escape(&format!("not run: {why}")));
                    }
                    None => {
                        cells.extend(
                            t.columns
                                .iter()
                                .zip(&row.cells)
                                .map(|(c, cell)| cell_range(c.unit, cell)),
                        );
                        cells.push(escape(row.mark.as_deref().unwrap_or("")));
                    }
                }
                out.push_str(&format!("| {} |\n", cells.join(" | ")));
            }
        }
        if !r.notes.is_empty() {
            out.push('\n');
            for n in &r.notes {
                out.push_str(&format!("- {}\n", escape(n)));
            }
        }
        Ok(out.into_bytes())
    }
}
