//! `tune apply` and `tune restore`'s section: each setting from what it was to what it is,
//! what was put back, and what sinkrate still holds changed.

use sinkrate_model::settings::TuneReport;

use crate::figures::{Headline, Section, Table, Tone};

pub(crate) fn words(s: &mut Section, r: &TuneReport) {
    let put_back = r.restored.restored.len() + r.recovered.restored.len();
    s.headline = Some(Headline {
        verdict: match (r.changes.len(), put_back) {
            (0, 0) => "nothing changed".to_string(),
            (n, _) if n > 0 && r.dry_run => format!("{n} setting(s) would change (dry run)"),
            (n, _) if n > 0 => format!("{n} setting(s) changed"),
            (_, p) if r.dry_run => format!("{p} setting(s) would be put back (dry run)"),
            (_, p) => format!("{p} setting(s) put back"),
        },
        tone: if r.not_as_asked.is_empty() {
            Tone::Good
        } else {
            Tone::Bad
        },
        lines: r.not_as_asked.clone(),
    });
    if !r.changes.is_empty() {
        s.tables.push(Table {
            title: if r.dry_run {
                "Would change".into()
            } else {
                "Changed".into()
            },
            header: ["setting", "from", "to"].map(String::from).to_vec(),
            rows: r
                .changes
                .iter()
                .map(|c| vec![c.setting.to_string(), c.from.clone(), c.to.clone()])
                .collect(),
        });
    }
    let restored: Vec<Vec<String>> = r
        .recovered
        .restored
        .iter()
        .map(|(setting, to)| vec![setting.to_string(), to.clone(), "a killed run's".into()])
        .chain(
            r.restored
                .restored
                .iter()
                .map(|(setting, to)| vec![setting.to_string(), to.clone(), "restore".into()]),
        )
        .collect();
    if !restored.is_empty() {
        s.tables.push(Table {
            title: "Put back".into(),
            header: ["setting", "to", "whose change"].map(String::from).to_vec(),
            rows: restored,
        });
    }
    for (setting, now, wrote) in r.recovered.left_alone.iter().chain(&r.restored.left_alone) {
        s.warnings.push(format!(
            "{setting} left at {now}: changed by someone else after sinkrate wrote {wrote}"
        ));
    }
    if !r.held.is_empty() {
        s.tables.push(Table {
            title: "Still changed by sinkrate".into(),
            header: ["setting", "original", "now", "in force"]
                .map(String::from)
                .to_vec(),
            rows: r
                .held
                .iter()
                .map(|h| {
                    vec![
                        h.entry.setting.to_string(),
                        h.entry.original.clone(),
                        h.now.clone().unwrap_or_else(|| "-".into()),
                        if h.in_force { "yes" } else { "no" }.into(),
                    ]
                })
                .collect(),
        });
    }
    if !r.from_findings.is_empty() {
        s.facts
            .push(("fixes for".into(), r.from_findings.join(", ")));
    }
    s.warnings.extend(r.to_keep.iter().cloned());
}
