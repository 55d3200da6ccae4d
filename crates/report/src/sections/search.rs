//! `tune search`'s section: the candidates ranked, the winner against the baseline.

use sinkrate_model::search::SearchReport;

use crate::figures::{Headline, Section, Table, Tone};

pub(crate) fn words(s: &mut Section, r: &SearchReport) {
    let winner = r.winner();
    s.headline = Some(Headline {
        verdict: match winner {
            Some(w) => format!("best: {}", w.candidate.label),
            None => "no candidate kept up".into(),
        },
        tone: if winner.is_some() {
            Tone::Good
        } else {
            Tone::Bad
        },
        lines: r
            .comparison
            .iter()
            .map(|c| c.text.clone())
            .chain(r.failed.iter().cloned())
            .collect(),
    });
    s.tables.push(Table {
        title: "Candidates, best first".into(),
        header: [
            "candidate",
            "runs",
            "drops per run",
            "dropped",
            "worst write (ms)",
            "lateness p99 (ms)",
            "CPU (s)",
            "peak dirty (MB)",
        ]
        .map(String::from)
        .to_vec(),
        rows: r
            .ranked
            .iter()
            .map(|c| {
                let f = |v: Option<f64>| v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
                vec![
                    c.candidate.label.clone(),
                    format!(
                        "{}{}",
                        c.trials.len(),
                        if c.screened_only { " (screening)" } else { "" }
                    ),
                    format!("{:.1}", c.drops_per_run),
                    format!("{:.2}%", 100.0 * c.dropped_share),
                    f(c.worst_write_ms),
                    f(c.p99_lateness_ms),
                    format!("{:.2}", c.cpu_s),
                    f(c.peak_dirty_bytes.map(|b| b as f64 / 1e6)),
                ]
            })
            .collect(),
    });
    s.facts.push(("directory".into(), r.dir.clone()));
    s.facts.push(("workload".into(), r.workload.clone()));
    if let Some(p) = &r.prediction {
        let verdict = match (&p.label, p.proven) {
            (Some(label), true) => format!("{label}, proven"),
            (Some(label), false) => format!("{label}, not proven"),
            (None, _) => "none".into(),
        };
        s.facts.push(("predicted fix".into(), verdict));
        s.facts
            .push(("prediction rests on".into(), p.because.clone()));
        if let Some(proof) = &p.proof {
            s.facts.push(("its runs".into(), proof.clone()));
        }
    }
    s.facts.push((
        "budget".into(),
        format!("{:.0} s, spent {:.0} s", r.budget_s, r.spent_s),
    ));
    s.warnings.extend(r.notes.iter().cloned());
}
