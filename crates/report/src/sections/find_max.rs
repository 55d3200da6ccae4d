//! `record --find-max`'s section: the largest load that kept up, and each probe.

use sinkrate_model::record::{FindMaxReport, Searched};

use crate::figures::{Headline, Section, Table, Tone};

pub(crate) fn words(s: &mut Section, r: &FindMaxReport) {
    let what = r.what.name();
    let value = |v: f64| match r.what {
        Searched::Bitrate => format!("{:.1} Mbit/s", v / 1e6),
        Searched::Speed => format!("{v:.2}x"),
        _ => format!("{v}"),
    };
    s.headline = Some(Headline {
        verdict: match r.max {
            Some(m) => format!("highest {what} that keeps up: {}", value(m)),
            None => format!("no {what} tried kept up"),
        },
        tone: if r.max.is_some() {
            Tone::Good
        } else {
            Tone::Bad
        },
        lines: r
            .max_requested_bytes_per_s
            .map(|b| format!("{:.1} MB/s of frames at that {what}", b / 1e6))
            .into_iter()
            .chain(std::iter::once(format!(
                "the device's raw direct write rate: {:.1} MB/s",
                r.raw_direct_write_bytes_per_s / 1e6
            )))
            .collect(),
    });
    s.tables.push(Table {
        title: "Runs, in the order tried".into(),
        header: [what, "verdict", "requested (MB/s)"]
            .map(String::from)
            .to_vec(),
        rows: r
            .probes
            .iter()
            .map(|p| {
                vec![
                    value(p.value),
                    p.verdict.label().to_string(),
                    format!("{:.1}", p.requested_bytes_per_s / 1e6),
                ]
            })
            .collect(),
    });
    if let Some(t) = &r.target {
        s.facts.extend(crate::target_facts(t));
    }
}
