//! `capture`'s section: what the recorder did to its files, what the capture could not see,
//! and what it cost the recorder.

use sinkrate_model::capture::CaptureReport;
use sinkrate_units::product::bytes_binary;

use crate::figures::{Headline, Section, Table, Tone};

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

pub(crate) fn words(s: &mut Section, r: &CaptureReport) {
    let ended = match (r.exit_code, r.signal) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(sig)) => format!("ended by signal {sig}"),
        (None, None) => "its end not seen".into(),
    };
    let mut lines = vec![format!(
        "{} calls to {} file(s) in {:.1} s ({} renames, {} unlinks); the recorder: {ended}",
        r.calls,
        r.files.len(),
        r.duration_s,
        r.renames,
        r.unlinks
    )];
    if let Some(cut) = &r.trace_cut_short {
        lines.push(format!(
            "the trace stops at {:.1} s after {} calls: {} (the recorder ran on to its end)",
            cut.at_s, cut.calls_written, cut.error
        ));
    }
    lines.extend(r.unseen.iter().map(|u| format!("not seen: {u}")));
    s.headline = Some(Headline {
        verdict: format!("captured: {}", r.command.join(" ")),
        tone: if r.trace_cut_short.is_some() || !r.unseen.is_empty() {
            Tone::Warn
        } else {
            Tone::Good
        },
        lines,
    });
    if !r.files.is_empty() {
        s.tables.push(Table {
            title: "Files written".into(),
            header: [
                "file",
                "writes",
                "written",
                "size",
                "syncs",
                "write p99 ms",
                "write max ms",
                "sync max ms",
                "opened with",
            ]
            .map(String::from)
            .to_vec(),
            rows: r
                .files
                .iter()
                .map(|f| {
                    vec![
                        if f.unlinked {
                            format!("{} (unlinked)", f.file)
                        } else {
                            f.file.clone()
                        },
                        f.writes.to_string(),
                        bytes_binary(f.bytes),
                        bytes_binary(f.size),
                        (f.fsyncs + f.fdatasyncs + f.sync_file_ranges).to_string(),
                        ms(f.write_p99_ms),
                        ms(f.write_max_ms),
                        ms(f.sync_max_ms),
                        f.open_flags.join(" "),
                    ]
                })
                .collect(),
        });
    }
    if !r.slow_calls.is_empty() {
        s.warnings.push(format!(
            "{} call(s) over the stall threshold{}",
            r.slow_calls.len() as u64 + r.slow_calls_not_listed,
            if r.slow_calls_not_listed > 0 {
                format!(" ({} not listed)", r.slow_calls_not_listed)
            } else {
                String::new()
            }
        ));
    }
    s.facts.push(("trace".into(), r.trace.clone()));
    s.facts.push(("sidecar".into(), r.sidecar.clone()));
    s.facts.push((
        "capture cost".into(),
        format!(
            "{:.2} s of tracer CPU ({:.1}% of a core), {} stops, {} calls reported by the interposer",
            r.cost.tracer_cpu_s, r.cost.tracer_cpu_pct_of_core, r.cost.stops, r.cost.interposed_calls
        ),
    ));
}
