//! `compare`'s section: each row against the baseline with the verdict in words, and the
//! runs that failed or could not be read beside the rows.

use sinkrate_model::compare::CompareReport;

use crate::figures::{Headline, Section, Table, Tone};

/// A figure with `digits` decimals, `-` where the row's runs do not have it.
fn figure(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

pub(crate) fn words(s: &mut Section, r: &CompareReport) {
    let baseline = r.rows.get(r.baseline).map(|b| b.label.as_str());
    let worse: Vec<&str> = r
        .rows
        .iter()
        .filter(|row| row.against_baseline.as_ref().is_some_and(|a| a.worse))
        .map(|row| row.label.as_str())
        .collect();
    let mut lines: Vec<String> = r
        .rows
        .iter()
        .filter_map(|row| {
            let a = row.against_baseline.as_ref()?;
            Some(format!("{}: {}", row.label, a.text))
        })
        .collect();
    lines.extend(
        r.failed
            .iter()
            .map(|f| format!("{} ({}, {}) failed: {}", f.label, f.kind, f.file, f.what)),
    );
    s.headline = Some(Headline {
        verdict: match (baseline, worse.as_slice()) {
            (None, _) => "no runs to compare".to_string(),
            (Some(b), []) => format!(
                "{} row(s) against {b}: none significantly worse",
                r.rows.len()
            ),
            (Some(b), w) => format!("significantly worse than {b}: {}", w.join(", ")),
        },
        tone: if !worse.is_empty() || !r.failed.is_empty() || baseline.is_none() {
            Tone::Bad
        } else {
            Tone::Good
        },
        lines,
    });
    if !r.rows.is_empty() {
        s.tables.push(Table {
            title: match &r.grouped_by {
                Some(by) => format!("Runs by {by}"),
                None => "Runs by configuration".into(),
            },
            header: [
                "row",
                "runs",
                "frames dropped",
                "write p99 ms",
                "lateness p99 ms",
                "written MB/s",
                "against the baseline",
            ]
            .map(String::from)
            .to_vec(),
            rows: r
                .rows
                .iter()
                .enumerate()
                .map(|(k, row)| {
                    let m = &row.metrics;
                    vec![
                        row.label.clone(),
                        row.runs.to_string(),
                        m.frames_dropped
                            .map_or_else(|| "-".into(), |d| d.to_string()),
                        figure(m.write_p99_ms, 1),
                        figure(m.lateness_p99_ms, 1),
                        figure(m.app_mb_s, 2),
                        match &row.against_baseline {
                            Some(a) => a.text.clone(),
                            None if k == r.baseline => "the baseline".into(),
                            None => "-".into(),
                        },
                    ]
                })
                .collect(),
        });
    }
    if !r.windows.is_empty() {
        let mut header = vec!["window".to_string()];
        header.extend(
            r.rows
                .iter()
                .map(|row| format!("{} MB/s, worst ms", row.label)),
        );
        s.tables.push(Table {
            title: "Long recordings, window by window".into(),
            header,
            rows: r
                .windows
                .iter()
                .map(|w| {
                    let mut cells = vec![format!("{:.0}-{:.0} s", w.start_s, w.end_s)];
                    cells.extend(w.rows.iter().map(|f| match f {
                        Some(f) => format!("{:.2}, {:.0}", f.written_mb_s, f.worst_write_ms),
                        None => "-".into(),
                    }));
                    cells
                })
                .collect(),
        });
    }
    s.warnings
        .extend(r.unreadable.iter().map(|u| format!("not read: {u}")));
    s.warnings.extend(r.notes.iter().cloned());
}
