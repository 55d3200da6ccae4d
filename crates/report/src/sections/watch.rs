//! A watch's section: the timeline, its summary and the hogs.

use sinkrate_model::watch::WatchReport;
use sinkrate_model::{Envelope, RunKind};

use super::envelope_words;
use crate::figures::{Headline, Page, Section, Table, Tone};
use crate::{empty_section, timeline, Input};

pub(crate) fn section(
    page: &mut Page,
    run: usize,
    prefix: &str,
    input: &Input,
    env: &Envelope<WatchReport>,
) -> Section {
    let mut s = empty_section(input, RunKind::Watch.name());
    let w = &env.result;
    let devices = w.config.devices.clone();
    timeline::add(page, run, prefix, &w.timeline, &devices);
    s.headline = Some(watch_headline(w));
    s.tables.push(Table {
        title: "Processes and kernel threads by CPU".into(),
        header: [
            "process",
            "pid",
            "CPU (s)",
            "peak (% of a core)",
            "written (MB)",
        ]
        .map(String::from)
        .to_vec(),
        rows: w
            .hogs
            .iter()
            .map(|h| {
                vec![
                    h.name.clone(),
                    h.pid.to_string(),
                    format!("{:.2}", h.cpu_seconds),
                    format!("{:.0}", h.peak_cpu_pct),
                    format!("{:.1}", h.write_bytes as f64 / 1e6),
                ]
            })
            .collect(),
    });
    if !w.config.command.is_empty() {
        s.facts.push(("command".into(), w.config.command.join(" ")));
    }
    s.facts.push((
        "interval".into(),
        format!("{} ms", w.config.interval.as_millis()),
    ));
    envelope_words(&mut s, env);
    s.warnings.extend(w.notes.iter().cloned());
    s
}

fn watch_headline(w: &WatchReport) -> Headline {
    let sum = &w.summary;
    let mut lines = Vec::new();
    if let Some(p) = sum.peak_dirty_writeback_bytes {
        lines.push(format!(
            "peak dirty + writeback {:.0} MB{}",
            p as f64 / 1e6,
            sum.peak_ceiling_pct
                .map(|c| format!(" = {c:.0}% of the freerun ceiling"))
                .unwrap_or_default()
        ));
    }
    if let Some(r) = &sum.recommendation {
        lines.push(r.text.clone());
    } else if let Some(why) = &sum.recommendation_withheld {
        lines.push(why.clone());
    }
    let throttled = sum.throttled_seconds > 0.0;
    Headline {
        verdict: if throttled {
            format!(
                "writers throttled for {:.1} s (first at {:.1} s)",
                sum.throttled_seconds,
                sum.first_throttled_at_s.unwrap_or(0.0)
            )
        } else {
            format!("never throttled in {:.0} s watched", sum.duration_s)
        },
        tone: if throttled { Tone::Warn } else { Tone::Good },
        lines,
    }
}
