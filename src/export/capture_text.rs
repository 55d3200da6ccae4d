//! `sinkrate capture`'s summary: what ran and how it ended, where the trace is, each file the
//! recorder wrote, and what the capture cost it.

use std::fmt::Write;

use anyhow::Result;
use sinkrate_model::capture::CaptureReport;
use sinkrate_model::Envelope;

use super::Exporter;
use sinkrate_units::product::ms_column;

pub struct CaptureText;

impl Exporter<Envelope<CaptureReport>> for CaptureText {
    fn export(&self, run: &Envelope<CaptureReport>) -> Result<Vec<u8>> {
        let r = &run.result;
        let mut o = String::new();
        let ended = match (r.exit_code, r.signal) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "end unknown".into(),
        };
        writeln!(
            o,
            "sinkrate capture  {}\n  ran {:.1} s, {ended}{}\n",
            r.command.join(" "),
            r.duration_s,
            if run.interrupted { ", interrupted" } else { "" }
        )?;
        writeln!(
            o,
            "  trace   {}   (fio --name=replay --read_iolog={} replays it)",
            r.trace, r.trace
        )?;
        writeln!(o, "  calls   {}   ({} calls)", r.sidecar, r.calls)?;
        if let Some(cut) = &r.trace_cut_short {
            writeln!(
                o,
                "  CUT SHORT  the trace holds the first {} calls only: writing it failed at {:.2} s ({}); the recorder ran on to its end untouched, and the table below counts every call it made",
                cut.calls_written, cut.at_s, cut.error
            )?;
        }
        writeln!(o)?;
        if r.files.is_empty() && r.unseen.is_empty() {
            writeln!(o, "  no file was written")?;
        } else if r.files.is_empty() {
            writeln!(
                o,
                "  no file write that the capture could see (below: what it could not)"
            )?;
        } else {
            let width = r
                .files
                .iter()
                .map(|f| f.file.len())
                .max()
                .unwrap_or(4)
                .max(4);
            writeln!(
                o,
                "  {:<width$}  {:>7}  {:>9}  {:>9}  {:>6}  {:>9}  {:>24}  flags",
                "file", "writes", "MB", "size MB", "fsync", "fdatasync", "write p50/p99/max ms"
            )?;
            for f in &r.files {
                writeln!(
                    o,
                    "  {:<width$}  {:>7}  {:>9.2}  {:>9.2}  {:>6}  {:>9}  {:>24}  {}{}",
                    f.file,
                    f.writes,
                    f.bytes as f64 / 1e6,
                    f.size as f64 / 1e6,
                    f.fsyncs,
                    f.fdatasyncs,
                    format!(
                        "{}/{}/{}",
                        ms_column(f.write_p50_ms),
                        ms_column(f.write_p99_ms),
                        ms_column(f.write_max_ms)
                    ),
                    f.open_flags.join("|"),
                    if f.unlinked { " (removed)" } else { "" }
                )?;
            }
        }
        if r.renames + r.unlinks > 0 {
            writeln!(o, "  renames {}, unlinks {}", r.renames, r.unlinks)?;
        }
        writeln!(
            o,
            "\n  cost    the tracer's CPU {:.2} s ({:.2}% of a core); the recorder stopped {} times for it",
            r.cost.tracer_cpu_s, r.cost.tracer_cpu_pct_of_core, r.cost.stops
        )?;
        writeln!(
            o,
            "          {} of the {} calls reported by the interposer without a stop{}",
            r.cost.interposed_calls,
            r.calls,
            if r.cost.interposed_calls == 0 && r.calls > 0 {
                " (a static recorder, --ptrace-only, or one the interposer cannot load into: each write stopped it twice)"
            } else {
                ""
            }
        )?;
        for u in &r.unseen {
            writeln!(o, "  not seen: {u}")?;
        }
        o.push_str(&slow_calls_text(r));
        if let Some(e) = &run.error {
            writeln!(o, "\n  the capture failed: {}", e.what)?;
        }
        Ok(o.into_bytes())
    }
}

/// The recorder's slow calls from the kernel's events: the longest explained, all by cause,
/// what was not listed; or why the causes were not read.
fn slow_calls_text(r: &CaptureReport) -> String {
    let k = &r.kernel;
    if let Some(why) = &k.inferred_because {
        return format!(
            "\n  slow calls not explained (the kernel's events were not read): {why}\n"
        );
    }
    let mut t = format!(
        "\n  slow calls, from the kernel's events: {}\n",
        r.slow_calls.len()
    );
    if let Some(w) = sinkrate_model::watch::SlowCall::longest(&r.slow_calls) {
        t.push_str(&format!(
            "  the longest: {}() on {} by tid {} at {:.1} s took {:.0} ms: {}\n",
            w.call,
            w.file.as_deref().unwrap_or("?"),
            w.tid,
            w.at_s,
            w.duration_ms,
            w.causes.evidence()
        ));
        t.push_str(&format!(
            "  all {} by cause: {}\n",
            r.slow_calls.len(),
            k.stall_causes_text()
        ));
    }
    if r.slow_calls_not_listed > 0 {
        t.push_str(&format!(
            "  {} more not listed (the list holds the first {})\n",
            r.slow_calls_not_listed,
            sinkrate_model::capture::SLOW_CALLS_KEPT
        ));
    }
    if let Some(line) = super::not_explained_line(k) {
        t.push_str(&format!("  {line}\n"));
    }
    if let Some(line) = super::lost_events_line(k) {
        t.push_str(&format!("  {line}\n"));
    }
    t
}
