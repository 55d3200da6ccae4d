//! `sinkrate check [PATH]`: the front door. Audit, a raw write rate the page cache cannot
//! inflate, a short recording test of a profile with the sampler watching, then one verdict
//! table with the findings that matter most and their fixes. Exit 0 keeps up, 1 does not,
//! 2 error. Every test file is removed; the full report goes to a JSON file.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::{json, Value};
use sinkrate_audit::device::Bus;
use sinkrate_audit::{Audit, Finding, Severity};

use crate::cli::CheckArgs;

struct Plan {
    raw_s: u64,
    record_s: u64,
}

impl Plan {
    fn of(quick: bool) -> Plan {
        if quick {
            Plan {
                raw_s: 4,
                record_s: 8,
            }
        } else {
            Plan {
                raw_s: 15,
                record_s: 40,
            }
        }
    }
}

/// A progress bar over the whole check, in seconds: the phase and the time left. Off a
/// terminal with `--progress always`, one line per phase instead (a bar needs a terminal).
struct Progress {
    bar: ProgressBar,
    lines: bool,
    total_s: u64,
    started: Instant,
}

impl Progress {
    fn new(flag: &str, total_s: u64) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let show = match flag {
            "always" => true,
            "never" => false,
            _ => terminal,
        };
        let bar = ProgressBar::with_draw_target(
            Some(total_s * 10),
            if show && terminal {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        if let Ok(style) =
            ProgressStyle::with_template("{msg:<32} [{bar:30}] {elapsed_precise} ({eta} left)")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress {
            bar,
            lines: show && !terminal,
            total_s,
            started: Instant::now(),
        }
    }

    /// Runs `work` as the phase `name`, expected to take `expected_s`; the bar moves with the
    /// clock and jumps to the phase's end when it finishes.
    fn phase<T>(&self, name: &str, expected_s: u64, work: impl FnOnce() -> T) -> T {
        self.bar.set_message(name.to_string());
        if self.lines && expected_s > 0 {
            let left = self
                .total_s
                .saturating_sub(self.started.elapsed().as_secs());
            eprintln!("sinkrate check: {name}, about {left} s left");
        }
        let start_pos = self.bar.position();
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ticker = {
            let bar = self.bar.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                let t0 = Instant::now();
                while !done.load(Ordering::Relaxed) {
                    let ds = (t0.elapsed().as_millis() / 100) as u64;
                    bar.set_position(start_pos + ds.min(expected_s * 10));
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        };
        let out = work();
        done.store(true, Ordering::Relaxed);
        let _ = ticker.join();
        self.bar.set_position(start_pos + expected_s * 10);
        out
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

fn report_path(args: &CheckArgs) -> PathBuf {
    if let Some(p) = &args.output {
        return p.clone();
    }
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let stamp = chrono::DateTime::from_timestamp(now_s, 0)
        .map(|t| t.format("%Y%m%d-%H%M%S").to_string())
        .unwrap_or_default();
    let name = format!("sinkrate-check-{stamp}.json");
    let cwd_writable = std::env::current_dir()
        .ok()
        .is_some_and(|d| crate::writable(&d));
    if cwd_writable {
        PathBuf::from(name)
    } else {
        std::env::temp_dir().join(name)
    }
}

/// Why the target cannot take a write test, if it cannot.
fn unwritable(a: &Audit, path: &Path) -> Option<String> {
    let t = &a.target;
    if sinkrate_audit::PSEUDO_FS.contains(&t.fs_type.as_str()) {
        return Some(format!(
            "{} is on {}, a kernel interface, not storage",
            path.display(),
            t.fs_type
        ));
    }
    if t.mount_options.iter().any(|o| o == "ro") {
        return Some(format!(
            "{} is on a read-only mount ({})",
            path.display(),
            t.mount_point
        ));
    }
    if !path.is_dir() {
        return Some(format!("{} is not a directory", path.display()));
    }
    if !crate::writable(path) {
        return Some(format!(
            "{} is not writable by this user (run as its owner or as root)",
            path.display()
        ));
    }
    None
}

/// The three findings that matter most: critical first, then warn, then info.
fn top_findings(a: &Audit) -> Vec<&Finding> {
    a.findings
        .iter()
        .filter(|f| f.severity != Severity::Ok)
        .take(3)
        .collect()
}

/// Record flags that check sets itself and a user may not pass after `--`.
const OWN_RECORD_FLAGS: &[&str] = &[
    "--dir",
    "--duration",
    "--output",
    "--output-format",
    "--live",
    "--keep",
    "--find-max",
    "--frames-log",
];

/// Record flags that describe the streams: given after `--`, they replace the profile.
const STREAM_FLAGS: &[&str] = &[
    "--profile",
    "--fps",
    "--frame-size",
    "--bitrate",
    "--streams",
    "--gop",
];

fn flag_name(arg: &str) -> &str {
    arg.split('=').next().unwrap_or(arg)
}

fn check_record_flags(flags: &[String]) -> Result<()> {
    if let Some(own) = flags
        .iter()
        .find(|f| OWN_RECORD_FLAGS.contains(&flag_name(f)))
    {
        return Err(anyhow!(
            "{own} after --: check sets it itself (accepted there: the stream, pool and write flags of sinkrate record, e.g. --buffers 8)"
        ));
    }
    Ok(())
}

fn record_args(args: &CheckArgs, dir: &Path, seconds: u64) -> Vec<String> {
    let given = |names: &[&str]| {
        args.record_flags
            .iter()
            .any(|f| names.contains(&flag_name(f)))
    };
    let mut v: Vec<String> = vec![
        "--dir".into(),
        dir.display().to_string(),
        "--duration".into(),
        format!("{seconds}s"),
    ];
    if !given(&["--write-mode"]) {
        v.extend(["--write-mode".into(), args.write_mode.clone()]);
    }
    if !given(STREAM_FLAGS) {
        match &args.rate.bitrate {
            Some(b) => v.extend(["--fps".into(), "30".into(), "--bitrate".into(), b.clone()]),
            None => v.extend(["--profile".into(), args.rate.profile.clone()]),
        }
    }
    v.extend(args.record_flags.iter().cloned());
    v.extend([
        "--output-format".into(),
        "json".into(),
        "--live".into(),
        "never".into(),
    ]);
    v
}

fn mbs(bytes_per_s: f64) -> String {
    format!("{:.1} MB/s", bytes_per_s / 1e6)
}

fn mmss(s: f64) -> String {
    format!("{:02}:{:02}", (s / 60.0) as u64, (s % 60.0) as u64)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Verdict {
    KeepsUp,
    FallingBehind,
    Drops,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::KeepsUp => "KEEPS UP",
            Verdict::FallingBehind => "FALLING BEHIND",
            Verdict::Drops => "DROPS FRAMES",
        }
    }
    fn key(self) -> &'static str {
        match self {
            Verdict::KeepsUp => "keeps_up",
            Verdict::FallingBehind => "falling_behind",
            Verdict::Drops => "drops",
        }
    }
}

/// Whether a backlog the recording test saw is the kernel deferring writeback rather than
/// the device falling short: the device sat mostly idle and sustains well above the stream.
fn deferred_not_short(record: &Value, raw: Option<f64>, requested: f64) -> bool {
    let idle = record["totals"]["device_busy_fraction"]
        .as_f64()
        .is_some_and(|b| b < 0.5);
    idle && raw.is_some_and(|r| r >= 1.2 * requested)
}

/// The check's verdict: the recording test's, with the sustained rate as the judge of what
/// the page cache blurs: a device slower than the stream cannot keep up however the page
/// cache hid it, and a backlog that only reflects deferred writeback on a device several
/// times faster than the stream is not falling behind.
fn judge(record: &Value, raw: Option<f64>, requested: f64) -> Verdict {
    match record["verdict"].as_str() {
        Some("drops") => Verdict::Drops,
        Some("falling_behind") if deferred_not_short(record, raw, requested) => Verdict::KeepsUp,
        Some("falling_behind") => Verdict::FallingBehind,
        _ if raw.is_some_and(|r| r < requested) => Verdict::FallingBehind,
        _ => Verdict::KeepsUp,
    }
}

pub fn run(args: CheckArgs) -> Result<ExitCode> {
    let started = Instant::now();
    if let Some(p) = &args.output {
        crate::check_output_path("--output", p)?;
    }
    let (mut label, mut requested) = super::audit::stream_rate(&args.rate)?;
    check_record_flags(&args.record_flags)?;
    if let Err(e) = std::fs::metadata(&args.path) {
        return Err(anyhow!(
            "{}: {e} (give a directory on the storage to check)",
            args.path.display()
        ));
    }
    let mut a = super::audit::audit(&args.path, None, requested)?;
    if let Some(why) = unwritable(&a, &args.path) {
        let colour = super::audit::colour_wanted(&args.color, true);
        eprint!("{}", super::audit::text(&a, &label, colour));
        return Err(anyhow!(
            "{why}: no write test is possible; the audit above still applies"
        ));
    }
    let dir = std::fs::canonicalize(&args.path)
        .with_context(|| format!("{}: cannot resolve", args.path.display()))?;
    let report = report_path(&args);
    let plan = Plan::of(args.quick);
    let stop = crate::interrupt_flag()?;
    let progress = Progress::new(&args.progress, plan.raw_s + plan.record_s + 3);
    // O_DIRECT where the filesystem has it; elsewhere buffered with the final flush counted.
    let mut raw_direct = true;
    let raw = progress.phase("sustained write (direct I/O)", plan.raw_s + 1, || {
        match super::find_max::raw_write_rate(&dir, plan.raw_s, true, stop.clone()) {
            Ok(r) => Ok(r),
            Err(_) if !stop.load(Ordering::Relaxed) => {
                raw_direct = false;
                super::find_max::raw_write_rate(&dir, plan.raw_s, false, stop.clone())
            }
            Err(e) => Err(e),
        }
    });
    if stop.load(Ordering::Relaxed) {
        progress.finish();
        eprintln!("sinkrate: check interrupted; its test files are removed");
        return Ok(ExitCode::from(130));
    }
    let (raw, raw_error) = match raw {
        Ok(r) => (Some(r), None),
        Err(e) => (None, Some(format!("{e:#}"))),
    };
    let record = progress.phase(
        &format!("recording test ({label})"),
        plan.record_s + 2,
        || super::find_max::run_record_child(&record_args(&args, &dir, plan.record_s)),
    );
    progress.finish();
    let (record, record_code) = record?;
    if stop.load(Ordering::Relaxed) || record_code == Some(130) {
        eprintln!("sinkrate: check interrupted; its test files are removed");
        return Ok(ExitCode::from(130));
    }
    // Streams given after -- set the rate: the audit's rate-dependent findings follow it.
    if let Some(rate) = record["totals"]["requested_bytes_per_s"].as_f64() {
        if (rate - requested).abs() > requested * 1e-3 {
            requested = rate;
            label = record["label"]
                .as_str()
                .unwrap_or("your streams")
                .to_string();
            a.judge_for(rate);
        }
    }
    let verdict = judge(&record, raw, requested);
    let mut notes: Vec<String> = Vec::new();
    let physical = a
        .devices
        .iter()
        .find(|d| !matches!(d.bus, Bus::Loop | Bus::Dm | Bus::Md));
    if let Some(d) = physical.filter(|d| d.bus == Bus::Virtio) {
        notes.push(format!(
            "/dev/{} is a virtual machine's disk: the host may cache its writes, so the sustained rate can be the host's memory rather than a physical device",
            d.name
        ));
    }
    let vm = &a.memory.vm;
    if let (Some(expire), Some(every)) = (vm.dirty_expire_centisecs, vm.dirty_writeback_centisecs) {
        let first_burst_s = (expire + every) / 100;
        if args.write_mode == "buffered" && plan.record_s < first_burst_s {
            notes.push(format!(
                "the recording test ({} s) ended before the kernel's first writeback of expired data (dirty_expire {} s + writeback interval {} s), where buffered recorders often stall; run without --quick to include it",
                plan.record_s,
                expire / 100,
                every / 100
            ));
        }
    }
    let headroom = raw.map(|r| r / requested);
    let exit = if verdict == Verdict::KeepsUp { 0 } else { 1 };
    let top: Vec<&Finding> = top_findings(&a);
    let elapsed = started.elapsed().as_secs_f64();
    let doc = json!({
        "schema": sinkrate_model::SCHEMA, "kind": "check",
        "tool": { "name": "sinkrate", "version": sinkrate_model::TOOL_VERSION },
        "timestamp_ms": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0),
        "host": sinkrate_engine::host::host_facts(),
        "verdict": verdict.key(), "exit_code": exit, "elapsed_s": elapsed, "quick": args.quick,
        "stream": { "label": label, "bytes_per_s": requested },
        "headroom": headroom,
        "raw_write": { "bytes_per_s": raw, "direct": raw_direct, "seconds": plan.raw_s, "error": raw_error },
        "top_findings": top.iter().map(|f| f.id).collect::<Vec<_>>(),
        "audit": super::audit::json_body(&a, &label, None),
        "record": record,
        "notes": notes,
        "report_file": report.display().to_string(),
    });
    let mut bytes = serde_json::to_vec_pretty(&doc)?;
    bytes.push(b'\n');
    std::fs::write(&report, &bytes)
        .with_context(|| format!("writing the report {}", report.display()))?;
    if args.output_format == "json" {
        crate::write_stdout(&bytes)?;
    } else {
        let colour = super::audit::colour_wanted(&args.color, false);
        let text = table(&TableInput {
            a: &a,
            label: &label,
            requested,
            raw,
            raw_direct,
            raw_error: raw_error.as_deref(),
            raw_s: plan.raw_s,
            notes: &notes,
            record: &record,
            verdict,
            headroom,
            exit,
            elapsed,
            report: &report,
            colour,
        });
        crate::write_stdout(text.as_bytes())?;
    }
    Ok(ExitCode::from(exit))
}

struct TableInput<'a> {
    notes: &'a [String],
    a: &'a Audit,
    label: &'a str,
    requested: f64,
    raw: Option<f64>,
    raw_direct: bool,
    raw_error: Option<&'a str>,
    raw_s: u64,
    record: &'a Value,
    verdict: Verdict,
    headroom: Option<f64>,
    exit: u8,
    elapsed: f64,
    report: &'a Path,
    colour: bool,
}

fn table(t: &TableInput) -> String {
    let a = t.a;
    let target = &a.target;
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
        "{}: {} = {}        [{} elapsed]\n\n",
        t.label,
        format_args!("{:.1} Mbit/s", t.requested * 8.0 / 1e6),
        mbs(t.requested),
        mmss(t.elapsed)
    ));
    let verdict = match (t.verdict, t.headroom) {
        (Verdict::KeepsUp, Some(h)) => format!("KEEPS UP with {h:.1}x headroom"),
        (v, _) => v.label().to_string(),
    };
    let verdict = if t.colour {
        let code = if t.verdict == Verdict::KeepsUp {
            "1;32"
        } else {
            "1;31"
        };
        format!("\x1b[{code}m{verdict}\x1b[0m")
    } else {
        verdict
    };
    s.push_str(&format!("VERDICT  {verdict}    (exit {})\n", t.exit));
    let record_verdict = t.record["verdict"].as_str().unwrap_or("");
    let explanation = match t.raw {
        Some(raw) if record_verdict == "falling_behind" && t.verdict == Verdict::KeepsUp => format!(
            "no frame dropped; dirty data grew in RAM during the test, but the device sat mostly idle and sustains {} ({:.1}x the stream): the kernel was deferring writeback, not falling short",
            mbs(raw),
            raw / t.requested
        ),
        Some(raw) if record_verdict == "keeps_up" && t.verdict != Verdict::KeepsUp => format!(
            "no frame dropped in the test, but the device sustains only {} against the stream's {}: the page cache hid the deficit, and the backlog grows {} until writers are throttled",
            mbs(raw),
            mbs(t.requested),
            mbs(t.requested - raw)
        ),
        _ => t.record["verdict_text"].as_str().unwrap_or("").to_string(),
    };
    for line in explanation.lines() {
        s.push_str(&format!("  {line}\n"));
    }
    s.push('\n');
    let row = |s: &mut String, k: &str, v: String| s.push_str(&format!("  {k:<40} {v}\n"));
    match (t.raw, t.raw_error) {
        (Some(r), _) => row(
            &mut s,
            "sustained write, page cache excluded",
            format!(
                "{}   ({}, {} s; headroom {:.1}x the stream)",
                mbs(r),
                if t.raw_direct {
                    "direct I/O"
                } else {
                    "buffered, final flush counted"
                },
                t.raw_s,
                r / t.requested
            ),
        ),
        (None, Some(e)) => row(&mut s, "sustained write", format!("not measured: {e}")),
        _ => {}
    }
    let rec = t.record;
    let totals = &rec["totals"];
    let dur = rec["config"]["duration"]["secs"].as_u64().unwrap_or(0);
    row(
        &mut s,
        &format!(
            "recording test, {dur} s, {} writes",
            rec["config"]["write_mode"].as_str().unwrap_or("?")
        ),
        format!(
            "{} of {} frames dropped; write p99 {:.1} ms, max {:.1} ms",
            totals["frames_dropped"].as_u64().unwrap_or(0),
            totals["frames_offered"].as_u64().unwrap_or(0),
            totals["write_latency_ns"]["p99"].as_f64().unwrap_or(0.0) / 1e6,
            totals["write_latency_ns"]["max"].as_f64().unwrap_or(0.0) / 1e6
        ),
    );
    if let Some(worst) = rec["stalls"].as_array().and_then(|st| {
        st.iter().max_by(|x, y| {
            x["duration_ms"]
                .as_f64()
                .unwrap_or(0.0)
                .total_cmp(&y["duration_ms"].as_f64().unwrap_or(0.0))
        })
    }) {
        let ctx = worst;
        let mut what = format!(
            "{:.0} ms at {}",
            worst["duration_ms"].as_f64().unwrap_or(0.0),
            mmss(worst["at_s"].as_f64().unwrap_or(0.0))
        );
        if let Some(d) = ctx["dirty_bytes"].as_f64() {
            what.push_str(&format!(
                " (dirty {:.0} MB, writeback {:.0} MB)",
                d / 1e6,
                ctx["writeback_bytes"].as_f64().unwrap_or(0.0) / 1e6
            ));
        }
        row(&mut s, "worst write call", what);
        // A stall in the seconds after the first expired data is due is the flusher's burst.
        let vm = &a.memory.vm;
        if let (Some(expire), Some(every), Some(at)) = (
            vm.dirty_expire_centisecs,
            vm.dirty_writeback_centisecs,
            worst["at_s"].as_f64(),
        ) {
            let due = expire as f64 / 100.0;
            if at >= due && at <= due + 2.0 * every as f64 / 100.0 + 1.0 {
                row(
                    &mut s,
                    "",
                    format!(
                        "that is when the first data older than dirty_expire ({due:.0} s) was written back: see vm.expire"
                    ),
                );
            }
        }
    }
    let summary = &rec["sampler"]["summary"];
    let throttled = summary["throttled_seconds"].as_f64().unwrap_or(0.0);
    let peak = summary["peak_ceiling_pct"].as_f64();
    row(
        &mut s,
        "writers throttled by the page cache",
        if throttled > 0.0 {
            format!("{throttled:.1} s")
        } else {
            format!(
                "never{}",
                peak.map(|p| format!(" (peak {p:.0}% of the freerun ceiling)"))
                    .unwrap_or_default()
            )
        },
    );
    if let Some(d) = totals["device_bytes_per_s"].as_f64() {
        row(&mut s, "device wrote while recording", mbs(d));
    }
    let top = top_findings(a);
    if !top.is_empty() {
        s.push_str("\nFIX FIRST\n");
        for (i, f) in top.iter().enumerate() {
            let body = super::audit::finding_text(f, t.colour, false);
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
    for n in a.notes.iter().chain(t.notes) {
        s.push_str(&format!("note: {n}\n"));
    }
    s.push_str(&format!("\nfull report: {}\n", t.report.display()));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(verdict: &str, busy: f64) -> Value {
        json!({ "verdict": verdict, "totals": { "device_busy_fraction": busy } })
    }

    #[test]
    fn the_sustained_rate_judges_what_the_page_cache_blurs() {
        let stream = 3e6;
        assert_eq!(
            judge(&record("drops", 0.1), Some(20e6), stream),
            Verdict::Drops
        );
        // A backlog on an idle device six times faster than the stream: deferred writeback.
        assert_eq!(
            judge(&record("falling_behind", 0.05), Some(20e6), stream),
            Verdict::KeepsUp
        );
        // The same backlog on a busy device, or a device barely above the stream: real.
        assert_eq!(
            judge(&record("falling_behind", 0.9), Some(20e6), stream),
            Verdict::FallingBehind
        );
        assert_eq!(
            judge(&record("falling_behind", 0.05), Some(3.3e6), stream),
            Verdict::FallingBehind
        );
        // No backlog seen, but the device cannot sustain the stream.
        assert_eq!(
            judge(&record("keeps_up", 0.1), Some(2e6), stream),
            Verdict::FallingBehind
        );
        assert_eq!(
            judge(&record("keeps_up", 0.1), None, stream),
            Verdict::KeepsUp
        );
    }
}
