//! `sinkrate compare`'s table as text, markdown and CSV: one row per configuration, the
//! columns the rows have, a row per failed run saying why, then each row's verdict against
//! the baseline.

use anyhow::Result;
use sinkrate_model::compare::{CompareReport, FailedRun, Metrics, Row};
use sinkrate_model::Envelope;

use super::Exporter;

/// A column: its heading and how a row's figure is written.
struct Column {
    heading: &'static str,
    cell: fn(&Row) -> Option<String>,
}

fn f(v: Option<f64>, digits: usize) -> Option<String> {
    // + 0.0 turns a negative zero (an empty sum in an older result) into "0.00", not "-0.00".
    v.map(|v| format!("{:.digits$}", v + 0.0))
}

/// A row's least and most over its runs ("0-3"), when it has two runs or more.
fn range(r: Option<sinkrate_model::compare::Range>, digits: usize) -> Option<String> {
    r.map(|r| format!("{:.digits$}-{:.digits$}", r.min + 0.0, r.max + 0.0))
}

fn m(row: &Row) -> &Metrics {
    &row.metrics
}

const COLUMNS: &[Column] = &[
    Column {
        heading: "runs",
        cell: |r| Some(r.runs.to_string()),
    },
    Column {
        heading: "dropped",
        cell: |r| {
            let m = m(r);
            Some(format!("{} of {}", m.frames_dropped?, m.frames_offered?))
        },
    },
    Column {
        heading: "dropped/run",
        cell: |r| range(r.spread.as_ref()?.frames_dropped, 0),
    },
    Column {
        heading: "write avg ms",
        cell: |r| f(m(r).write_avg_ms, 1),
    },
    Column {
        heading: "p50 ms",
        cell: |r| f(m(r).write_p50_ms, 1),
    },
    Column {
        heading: "p99 ms",
        cell: |r| f(m(r).write_p99_ms, 1),
    },
    Column {
        heading: "p99 range ms",
        cell: |r| range(r.spread.as_ref()?.write_p99_ms, 1),
    },
    Column {
        heading: "max ms",
        cell: |r| f(m(r).write_max_ms, 1),
    },
    Column {
        heading: "late p99 ms",
        cell: |r| f(m(r).lateness_p99_ms, 1),
    },
    Column {
        heading: "app MB/s",
        cell: |r| f(m(r).app_mb_s, 2),
    },
    Column {
        heading: "device MB/s",
        cell: |r| f(m(r).device_mb_s, 2),
    },
    Column {
        heading: "IOPS",
        cell: |r| f(m(r).iops, 0),
    },
    Column {
        heading: "writer CPU s",
        cell: |r| f(m(r).writer_cpu_s, 2),
    },
    Column {
        heading: "flusher CPU s",
        cell: |r| f(m(r).flusher_cpu_s, 2),
    },
    Column {
        heading: "sys CPU %",
        cell: |r| f(m(r).system_cpu_pct, 1),
    },
    Column {
        heading: "peak dirty MB",
        cell: |r| f(m(r).peak_dirty_mb, 0),
    },
    Column {
        heading: "at risk s",
        cell: |r| f(m(r).at_risk_s, 1),
    },
    // The stalls' causes from the kernel's events, side by side.
    Column {
        heading: "throttled s",
        cell: |r| f(m(r).stall_throttled_s, 2),
    },
    Column {
        heading: "wb wait s",
        cell: |r| f(m(r).stall_writeback_s, 2),
    },
    Column {
        heading: "journal s",
        cell: |r| f(m(r).stall_journal_s, 2),
    },
    Column {
        heading: "device s",
        cell: |r| f(m(r).stall_device_s, 2),
    },
    Column {
        heading: "CPU wait s",
        cell: |r| f(m(r).stall_cpu_s, 2),
    },
];

/// A failed run's words in the table: `FAILED (check): what`.
fn failed_text(f: &FailedRun) -> String {
    if f.kind == "failed" {
        // It failed before any command ran (a board not reached).
        format!("FAILED: {}", f.what)
    } else {
        format!("FAILED ({}): {}", f.kind, f.what)
    }
}

/// The columns at least one row has a figure for, with every row's cells.
fn cells<'a>(rows: &[Row], grouped_by: Option<&'a str>) -> (Vec<&'a str>, Vec<Vec<String>>) {
    let used: Vec<&Column> = COLUMNS
        .iter()
        .filter(|c| rows.iter().any(|r| (c.cell)(r).is_some()))
        .collect();
    let mut headings: Vec<&str> = std::iter::once(grouped_by.unwrap_or("configuration"))
        .chain(used.iter().map(|c| c.heading))
        .collect();
    let mut body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            std::iter::once(r.label.clone())
                .chain(
                    used.iter()
                        .map(|c| (c.cell)(r).unwrap_or_else(|| "-".into())),
                )
                .collect()
        })
        .collect();
    if used.is_empty() {
        // No figure at all (every run failed): one column for what each row says.
        headings.push("result");
        body.iter_mut().for_each(|row| row.push("-".into()));
    }
    (headings, body)
}

fn verdicts(r: &CompareReport) -> Vec<String> {
    r.rows
        .iter()
        .filter_map(|row| {
            row.against_baseline
                .as_ref()
                .map(|s| format!("{} [{}]", s.text, s.method))
        })
        .collect()
}

fn trailer(r: &CompareReport) -> Vec<String> {
    let mut lines = Vec::new();
    for u in &r.unreadable {
        lines.push(format!("not read: {u}"));
    }
    for n in &r.notes {
        lines.push(format!("note: {n}"));
    }
    lines
}

/// Soaks side by side: a line per window, each row's rate and worst write.
fn windows_text(r: &CompareReport) -> String {
    if r.windows.is_empty() {
        return String::new();
    }
    let clock = sinkrate_units::product::h_mm_ss;
    let mut out = String::from("\nwindow by window (rate MB/s, worst write ms):\n");
    for w in &r.windows {
        let cells: Vec<String> = w
            .rows
            .iter()
            .zip(&r.rows)
            .map(|(f, row)| match f {
                Some(f) => format!(
                    "{}: {:.2} MB/s, {:.1} ms",
                    row.label, f.written_mb_s, f.worst_write_ms
                ),
                None => format!("{}: -", row.label),
            })
            .collect();
        out.push_str(&format!(
            "  {}-{}  {}\n",
            clock(w.start_s),
            clock(w.end_s),
            cells.join("   ")
        ));
    }
    out.push('\n');
    out
}

pub struct CompareText;

impl Exporter<Envelope<CompareReport>> for CompareText {
    fn export(&self, run: &Envelope<CompareReport>) -> Result<Vec<u8>> {
        let r = &run.result;
        let (headings, body) = cells(&r.rows, r.grouped_by.as_deref());
        let widths: Vec<usize> = (0..headings.len())
            .map(|i| {
                body.iter()
                    .map(|row| row[i].chars().count())
                    .chain(std::iter::once(headings[i].len()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: Vec<&str>| -> String {
            cells
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if i == 0 {
                        format!("{c:<w$}", w = widths[i])
                    } else {
                        format!("{c:>w$}", w = widths[i])
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        };
        let mut out = String::new();
        out.push_str(&line(headings.clone()));
        out.push('\n');
        for (i, row) in body.iter().enumerate() {
            let mut l = line(row.iter().map(String::as_str).collect());
            if i == r.baseline {
                l.push_str("  (baseline)");
            }
            out.push_str(&l);
            out.push('\n');
        }
        // A failed run's row: its label, and why in place of figures (set apart from the
        // columns' widths, which a long line would stretch).
        let label_width = widths[0].max(
            r.failed
                .iter()
                .map(|f| f.label.chars().count())
                .max()
                .unwrap_or(0),
        );
        for f in &r.failed {
            out.push_str(&format!("{:<label_width$}  {}\n", f.label, failed_text(f)));
        }
        out.push('\n');
        for v in verdicts(r) {
            out.push_str(&v);
            out.push('\n');
        }
        out.push_str(&windows_text(r));
        for t in trailer(r) {
            out.push_str(&t);
            out.push('\n');
        }
        Ok(out.into_bytes())
    }
}

pub struct CompareMarkdown;

impl Exporter<Envelope<CompareReport>> for CompareMarkdown {
    fn export(&self, run: &Envelope<CompareReport>) -> Result<Vec<u8>> {
        let r = &run.result;
        let (headings, body) = cells(&r.rows, r.grouped_by.as_deref());
        // A pipe inside a label would end its cell.
        let esc = |s: &str| s.replace('|', "\\|");
        let mut out = format!(
            "| {} |\n|{}|\n",
            headings.join(" | "),
            headings
                .iter()
                .enumerate()
                .map(|(i, _)| if i == 0 { "---" } else { "---:" })
                .collect::<Vec<_>>()
                .join("|")
        );
        for (i, row) in body.iter().enumerate() {
            let mut cells: Vec<String> = row.iter().map(|c| esc(c)).collect();
            if i == r.baseline {
                cells[0] = format!("{} (baseline)", cells[0]);
            }
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        for f in &r.failed {
            let mut cells = vec![esc(&f.label), esc(&failed_text(f))];
            cells.resize(headings.len(), String::new());
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        out.push('\n');
        for v in verdicts(r) {
            out.push_str(&format!("- {}\n", esc(&v)));
        }
        for t in trailer(r) {
            out.push_str(&format!("- {}\n", esc(&t)));
        }
        Ok(out.into_bytes())
    }
}

pub struct CompareCsv;

impl Exporter<Envelope<CompareReport>> for CompareCsv {
    fn export(&self, run: &Envelope<CompareReport>) -> Result<Vec<u8>> {
        let r = &run.result;
        let (headings, body) = cells(&r.rows, r.grouped_by.as_deref());
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut head: Vec<&str> = headings.clone();
        head.extend([
            "baseline",
            "method",
            "drops p",
            "p99 change %",
            "p99 CI low %",
            "p99 CI high %",
            "p99 p",
            "significantly worse",
            "verdict",
        ]);
        w.write_record(&head)?;
        for (i, (row, cells)) in r.rows.iter().zip(&body).enumerate() {
            let s = row.against_baseline.as_ref();
            let num = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_default();
            let p99 = s.and_then(|s| s.write_p99_ms);
            let mut rec = cells.clone();
            rec.extend([
                (i == r.baseline).to_string(),
                s.map(|s| s.method.clone()).unwrap_or_default(),
                num(s.and_then(|s| s.drops).map(|d| d.p)),
                num(p99.and_then(|d| d.change_pct)),
                num(p99.and_then(|d| d.change_ci_pct).map(|c| c.0)),
                num(p99.and_then(|d| d.change_ci_pct).map(|c| c.1)),
                num(p99.map(|d| d.p)),
                s.map(|s| s.worse.to_string()).unwrap_or_default(),
                s.map(|s| s.text.clone()).unwrap_or_default(),
            ]);
            w.write_record(rec.iter().map(|c| spreadsheet_safe(c).into_owned()))?;
        }
        // A failed run: its label, no figures, and why in the verdict column.
        for f in &r.failed {
            let mut rec = vec![f.label.clone()];
            rec.resize(head.len() - 1, String::new());
            rec.push(failed_text(f));
            w.write_record(rec.iter().map(|c| spreadsheet_safe(c).into_owned()))?;
        }
        Ok(w.into_inner()?)
    }
}

/// A text cell a spreadsheet would run as a formula (a label such as `=HYPERLINK(...)`, or
/// one starting `+`, `-`, `@`) gets a leading `'`, as OWASP advises for CSV; a number such
/// as `-42.0` stays a number.
fn spreadsheet_safe(cell: &str) -> std::borrow::Cow<'_, str> {
    let formula = cell.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if formula && cell.trim_end_matches('%').parse::<f64>().is_err() {
        std::borrow::Cow::Owned(format!("'{cell}"))
    } else {
        std::borrow::Cow::Borrowed(cell)
    }
}

#[cfg(test)]
mod spreadsheet_tests {
    #[test]
    fn a_label_that_is_a_formula_is_text_and_a_negative_number_a_number() {
        assert_eq!(
            super::spreadsheet_safe("=HYPERLINK(\"x\")"),
            "'=HYPERLINK(\"x\")"
        );
        assert_eq!(super::spreadsheet_safe("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(super::spreadsheet_safe("-42.0"), "-42.0");
        assert_eq!(super::spreadsheet_safe("-12%"), "-12%");
        assert_eq!(super::spreadsheet_safe("buffers=4"), "buffers=4");
    }
}
