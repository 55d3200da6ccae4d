//! `sinkrate check`'s table: the verdict with its headroom, the sustained rate, the
//! recording test, the worst write and what the page cache did, what the recording needs
//! (pool, card class), then what to fix first.

use anyhow::Result;
use sinkrate_check::top_findings;
use sinkrate_model::audit::Severity;
use sinkrate_model::check::{CheckReport, CheckRun};
use sinkrate_model::record::{RecordReport, WriteMode};
use sinkrate_model::Verdict;

use super::{mbs, mmss, Exporter};

pub struct CheckText {
    pub colour: bool,
}

fn row(s: &mut String, k: &str, v: String) {
    s.push_str(&format!("  {k:<40} {v}\n"));
}

impl Exporter<CheckRun> for CheckText {
    fn export(&self, run: &CheckRun) -> Result<Vec<u8>> {
        let c = &run.result;
        let mut s = header(c);
        self.verdict(&mut s, run);
        sustained(&mut s, c);
        if let Some(rec) = &c.record {
            recording(&mut s, c, &rec.result);
        }
        test_cost(&mut s, c);
        if let Some(sizes) = c.record.as_ref().and_then(|r| r.result.sizes.as_ref()) {
            s.push('\n');
            s.push_str(&super::record_text::sizes_text(sizes));
        }
        self.findings(&mut s, c);
        Ok(s.into_bytes())
    }
}

impl CheckText {
    /// The verdict in colour when asked, and the recording's reasons (or the error).
    fn verdict(&self, s: &mut String, run: &CheckRun) {
        let c = &run.result;
        let verdict = match (c.verdict, c.headroom) {
            (Verdict::KeepsUp, Some(h)) => format!("KEEPS UP with {h:.1}x headroom"),
            // Without the device's own rate there is no headroom to give, and the verdict
            // says what it rests on.
            (Verdict::KeepsUp, None) if c.raw_write.error.is_some() => {
                "KEEPS UP in the recording test (headroom not measured)".to_string()
            }
            (v, _) => v.label().to_string(),
        };
        let verdict = if self.colour {
            let code = match c.verdict {
                Verdict::KeepsUp => "1;32",
                Verdict::NotStorage | Verdict::TooShort => "1;33",
                _ => "1;31",
            };
            format!("\x1b[{code}m{verdict}\x1b[0m")
        } else {
            verdict
        };
        s.push_str(&format!("VERDICT  {verdict}    (exit {})\n", c.exit_code));
        match (&c.record, &run.error) {
            (Some(rec), _) => {
                for line in rec.result.verdict_text.lines() {
                    s.push_str(&format!("  {line}\n"));
                }
            }
            (None, Some(e)) => s.push_str(&format!("  {}\n", e.what)),
            (None, None) => {}
        }
        for w in &run.warnings {
            s.push_str(&format!("  warning: {}\n", w.text));
        }
        s.push('\n');
    }

    /// FIX FIRST (the top findings in full), how many more there are, the notes and where
    /// the full report went.
    fn findings(&self, s: &mut String, c: &CheckReport) {
        let a = &c.audit.audit;
        let target = &a.target;
        // In the order the check ranked them (by the causes its recording measured).
        let top: Vec<&sinkrate_model::audit::Finding> = if c.top_findings.is_empty() {
            top_findings(a)
        } else {
            c.top_findings
                .iter()
                .filter_map(|id| a.findings.iter().find(|f| f.id == *id))
                .collect()
        };
        if !top.is_empty() {
            s.push_str("\nFIX FIRST\n");
            for (i, f) in top.iter().enumerate() {
                let body = crate::export::audit_text::finding_text(f, self.colour, false);
                let mut lines = body.lines();
                if let Some(first) = lines.next() {
                    s.push_str(&format!("  {}. {first}\n", i + 1));
                }
                for l in lines {
                    s.push_str(&format!("     {l}\n"));
                }
            }
        }
        let rest = a
            .findings
            .iter()
            .filter(|f| f.severity != Severity::Ok)
            .count();
        if rest > top.len() {
            s.push_str(&format!(
                "\n{} more finding(s): sinkrate audit {}\n",
                rest - top.len(),
                target.path
            ));
        }
        for n in a.notes.iter().chain(&c.notes) {
            s.push_str(&format!("note: {n}\n"));
        }
        if let Some(f) = &c.report_file {
            s.push_str(&format!(
                "\nfull report: {f}   (its charts: sinkrate report {f})\n"
            ));
        }
    }
}

/// Whether the target is memory (tmpfs): what the sampler saw of disks and of the page
/// cache's limits is then the host's other writers', not the check's.
fn on_memory(c: &CheckReport) -> bool {
    !sinkrate_sys::mounts::is_storage(&c.audit.audit.target.fs_type)
}

/// The target, its device and fill, and the stream checked.
fn header(c: &CheckReport) -> String {
    let a = &c.audit.audit;
    let target = &a.target;
    let requested = c.stream.bytes_per_s;
    let used = a.space.map(|s| {
        if s.total_bytes == 0 {
            0.0
        } else {
            100.0 - 100.0 * s.available_bytes as f64 / s.total_bytes as f64
        }
    });
    let dev = a
        .devices
        .first()
        .map(|d| d.describe())
        .unwrap_or_else(|| target.source.clone());
    let mut s = format!(
        "sinkrate check  {}  ({} on {}{})\n",
        target.path,
        target.fs_type,
        dev,
        used.map(|u| format!(", {u:.0}% used")).unwrap_or_default()
    );
    s.push_str(&format!(
        "{}: {:.1} Mbit/s = {}        [{} elapsed]\n\n",
        c.stream.label,
        requested * 8.0 / 1e6,
        mbs(requested),
        mmss(c.elapsed_s)
    ));
    s
}

/// The sustained write the verdict used, or why it was not measured.
fn sustained(s: &mut String, c: &CheckReport) {
    let requested = c.stream.bytes_per_s;
    match (&c.raw_write.measured, &c.raw_write.error) {
        (Some(m), _) => row(
            s,
            "sustained write, page cache excluded",
            format!(
                "{}   ({}, {:.1} s{}; headroom {:.1}x the stream{})",
                mbs(m.bytes_per_s),
                m.method.label(),
                m.seconds,
                if m.stopped_steady {
                    ", ended once steady"
                } else {
                    ""
                },
                m.bytes_per_s / requested,
                m.device_bytes_written
                    .map(|d| format!("; the device counted {:.0} MB", d as f64 / 1e6))
                    .unwrap_or_default()
            ),
        ),
        (None, Some(e)) => row(s, "sustained write", format!("not measured: {e}")),
        _ => {}
    }
}

/// What the check's own writes cost the card, by the device's count.
fn test_cost(s: &mut String, c: &CheckReport) {
    let Some(total) = c.device_bytes_written.filter(|_| !on_memory(c)) else {
        return;
    };
    let bytes = sinkrate_units::product::bytes_si;
    let sustained = c
        .raw_write
        .measured
        .as_ref()
        .and_then(|m| m.device_bytes_written);
    let recorded = c
        .record
        .as_ref()
        .and_then(|r| r.result.totals.device_bytes_written);
    let parts = match (sustained, recorded) {
        (Some(a), Some(b)) => format!(" (sustained write {}, recording {})", bytes(a), bytes(b)),
        _ => String::new(),
    };
    row(
        s,
        "this check wrote to the device",
        format!("{}{parts}", bytes(total)),
    );
}

/// The recording test's figures: drops and write times, the worst stall and when it came,
/// throttling by the page cache, the device's rate.
fn recording(s: &mut String, c: &CheckReport, r: &RecordReport) {
    let a = &c.audit.audit;
    let mode = match r.config.write_mode {
        WriteMode::Buffered => "buffered",
        WriteMode::Direct => "direct",
        WriteMode::Dsync => "dsync",
        WriteMode::Uring => "uring",
        WriteMode::Null => "null",
    };
    row(
        s,
        &format!(
            "recording test, {:.0} s, {mode} writes",
            r.config.duration.as_secs_f64()
        ),
        format!(
            "{} of {} frames dropped; write p99 {:.1} ms, max {:.1} ms",
            r.totals.frames_dropped,
            r.totals.frames_offered,
            r.totals.write_latency_ns.p99 as f64 / 1e6,
            r.totals.write_latency_ns.max as f64 / 1e6
        ),
    );
    if let Some(worst) = r.worst_stall() {
        let mut what = format!("{:.0} ms at {}", worst.duration_ms, mmss(worst.at_s));
        if let Some(d) = worst.dirty_bytes {
            what.push_str(&format!(
                " (dirty {:.0} MB, writeback {:.0} MB)",
                d as f64 / 1e6,
                worst.writeback_bytes.unwrap_or(0) as f64 / 1e6
            ));
        }
        row(s, "worst write call", what);
        match (worst.causes.as_ref(), &r.kernel.inferred_because) {
            (Some(c), _) => {
                row(s, "why (kernel events)", c.evidence());
                row(
                    s,
                    "",
                    format!(
                        "all {} stalls by cause: {}",
                        r.stalls.len(),
                        r.kernel.stall_causes_text()
                    ),
                );
            }
            (None, Some(why)) => row(
                s,
                "why",
                format!("inferred from /proc samples, not the kernel's events: {why}"),
            ),
            (None, None) => {}
        }
        // A stall in the seconds after the first expired data is due is the
        // flusher's burst.
        let vm = &a.memory.vm;
        if let (Some(expire), Some(every)) =
            (vm.dirty_expire_centisecs, vm.dirty_writeback_centisecs)
        {
            let due = expire as f64 / 100.0;
            if worst.at_s >= due && worst.at_s <= due + 2.0 * every as f64 / 100.0 + 1.0 {
                row(
                    s,
                    "",
                    format!(
                        "that is when the first data older than dirty_expire ({due:.0} s) was written back: see vm.expire"
                    ),
                );
            }
        }
    }
    let summary = &r.sampler.summary;
    // Memory has no writeback, so no writer to it is throttled; the machine's dirty data
    // over its ceiling would be other writers'.
    if !on_memory(c) {
        row(
            s,
            "writers throttled by the page cache",
            // The kernel's own pauses where its events were read: the sampler's estimate
            // (time with dirty over the machine's limit) misses a per-device limit.
            if r.kernel.from_kernel() && r.kernel.throttle_pause_s() > 0.0 {
                format!(
                    "{:.1} s (the kernel's balance_dirty_pages pauses)",
                    r.kernel.throttle_pause_s()
                )
            } else if summary.throttled_seconds > 0.0 {
                format!("{:.1} s", summary.throttled_seconds)
            } else {
                format!(
                    "never{}",
                    summary
                        .peak_ceiling_pct
                        .map(|p| format!(" (peak {p:.0}% of the freerun ceiling)"))
                        .unwrap_or_default()
                )
            },
        );
    }
    // Memory has no device: the count would be the host's other disks.
    if let Some(d) = r.totals.device_bytes_per_s.filter(|_| !on_memory(c)) {
        row(s, "device wrote while recording", mbs(d));
    }
    if let Some(h) = super::audit_text::health_line(&a.health) {
        row(s, "card health", h);
    }
    if let Some(l) = r.lifetime.as_ref().filter(|_| !on_memory(c)) {
        if let Some(wa) = l.write_amplification {
            row(
                s,
                "write amplification",
                format!("{wa:.2}x (the device's bytes over the recorder's)"),
            );
        }
        row(s, "card lifetime", l.line());
    }
}
