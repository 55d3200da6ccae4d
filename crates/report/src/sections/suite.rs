//! A suite's section: its tables, each cell with its spread over runs.

use sinkrate_model::suite::SuiteReport;

use crate::figures::{Headline, Section, Table, Tone};

/// A suite's tables as the report shows them: each cell the median and the runs' range.
pub(crate) fn words(s: &mut Section, r: &SuiteReport) {
    s.headline = Some(Headline {
        verdict: format!("suite {}", r.suite),
        tone: Tone::Neutral,
        lines: vec![
            r.about.clone(),
            format!(
                "{} run(s) of each condition; median, and the runs' range in brackets",
                r.runs
            ),
        ],
    });
    for t in &r.tables {
        let described = t.rows.iter().any(|r| !r.about.is_empty());
        let mut header = vec!["condition".to_string()];
        if described {
            header.push("what".into());
        }
        header.extend(t.columns.iter().map(|c| c.title.clone()));
        header.push("remark".into());
        let rows = t
            .rows
            .iter()
            .map(|row| {
                let mut cells = vec![row.label.clone()];
                if described {
                    cells.push(row.about.clone());
                }
                match &row.not_run {
                    Some(why) => {
                        cells.extend(t.columns.iter().map(|_| "-".to_string()));
                        cells.push(format!("not run: {why}"));
                    }
                    None => {
                        cells.extend(t.columns.iter().zip(&row.cells).map(|(c, cell)| {
                            sinkrate_model::suite::format::cell_range(c.unit, cell)
                        }));
                        cells.push(row.mark.clone().unwrap_or_default());
                    }
                }
                cells
            })
            .collect();
        s.tables.push(Table {
            title: t.title.clone(),
            header,
            rows,
        });
    }
    s.facts.push(("source".into(), r.source.clone()));
    s.facts.push(("directory".into(), r.dir.clone()));
    if let Some(m) = &r.made_on {
        s.facts.push(("devices made".into(), m.clone()));
    }
    for c in &r.settings_changed {
        s.facts.push(("setting".into(), c.clone()));
    }
    s.warnings.extend(r.notes.iter().cloned());
}
