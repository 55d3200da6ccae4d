//! `sinkrate audit [PATH]`: findings grouped by severity, each with its evidence, why, fix
//! and trade-off; JSON in the run schema.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use serde_json::{json, Value};
use sinkrate_audit::{Audit, Finding, Severity, SysRoot};

use crate::cli::{AuditArgs, StreamRateArgs};

/// The stream the findings are judged against: a label and its rate in bytes per second.
pub fn stream_rate(args: &StreamRateArgs) -> Result<(String, f64)> {
    if let Some(b) = &args.bitrate {
        let bits =
            sinkrate_record::config::parse_bitrate(b).map_err(|e| anyhow!("--bitrate: {e}"))?;
        if bits == 0 {
            return Err(anyhow!("--bitrate: must be above zero (e.g. 24M)"));
        }
        return Ok((
            format!("{:.1} Mbit/s", bits as f64 / 1e6),
            bits as f64 / 8.0,
        ));
    }
    let p = sinkrate_record::config::profile(&args.profile).map_err(|e| anyhow!(e))?;
    let rate = (p.streams)()
        .iter()
        .map(|s| s.sizes.mean_bytes() * s.fps)
        .sum();
    Ok((p.name.to_string(), rate))
}

/// Whether to colour text bound for standard output (or standard error with `to_stderr`).
pub fn colour_wanted(flag: &str, to_stderr: bool) -> bool {
    let terminal = if to_stderr {
        std::io::stderr().is_terminal()
    } else {
        std::io::stdout().is_terminal()
    };
    match flag {
        "always" => true,
        "never" => false,
        _ => std::env::var_os("NO_COLOR").is_none() && terminal,
    }
}

fn paint(text: &str, severity: Severity, colour: bool) -> String {
    if !colour {
        return text.to_string();
    }
    let code = match severity {
        Severity::Critical => "1;31",
        Severity::Warn => "33",
        Severity::Info => "36",
        Severity::Ok => "32",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// One finding as text: severity, id and title on the first line, the rest indented.
pub fn finding_text(f: &Finding, colour: bool, with_evidence: bool) -> String {
    let pad = " ".repeat(10);
    let mut t = format!(
        "{}{:<28} {}\n",
        paint(&format!("{:<10}", f.severity.label()), f.severity, colour),
        f.id,
        f.title
    );
    if with_evidence {
        t.push_str(&format!("{pad}evidence:   {}\n", f.evidence));
    }
    t.push_str(&format!("{pad}why:        {}\n", f.why));
    for (i, c) in f.fix.now.iter().enumerate() {
        t.push_str(&format!(
            "{pad}{}{c}\n",
            if i == 0 {
                "now:        "
            } else {
                "            "
            }
        ));
    }
    for (i, c) in f.fix.persistent.iter().enumerate() {
        t.push_str(&format!(
            "{pad}{}{c}\n",
            if i == 0 {
                "persistent: "
            } else {
                "            "
            }
        ));
    }
    if let Some(tr) = &f.tradeoff {
        t.push_str(&format!("{pad}trade-off:  {tr}\n"));
    }
    t
}

/// The header: target, device chain, USB path, memory, stream.
pub fn header_text(a: &Audit, stream_label: &str) -> String {
    let t = &a.target;
    let mut s = format!(
        "{}  {} ({}) on {}\n",
        t.path,
        t.fs_type,
        t.all_options().join(","),
        t.device.as_deref().unwrap_or(&t.source)
    );
    if t.mount_point != t.path {
        s.push_str(&format!("mount      {}\n", t.mount_point));
    }
    for (i, d) in a.devices.iter().enumerate() {
        let mut line = d.describe();
        if let Some(b) = &d.loop_backing_file {
            line.push_str(&format!(", backed by {b}"));
        }
        let q = &d.queue;
        if let Some(sched) = &q.scheduler {
            line.push_str(&format!(", scheduler {sched}"));
        }
        if let Some(m) = q.max_sectors_kb {
            line.push_str(&format!(", max request {m} KiB"));
        }
        s.push_str(&format!(
            "{}{line}\n",
            if i == 0 { "device     " } else { "  on       " }
        ));
    }
    if let Some(u) = &a.usb {
        s.push_str(&format!(
            "usb        {} at {} Mbit/s (device is USB {}), root hub {} at {}, controller up to {}\n",
            u.device.name,
            u.device.speed_mbps.map(|x| x.to_string()).unwrap_or_else(|| "?".into()),
            u.device.usb_version.as_deref().map(str::trim).unwrap_or("?"),
            u.root_hub.name,
            u.root_hub.speed_mbps.map(|x| x.to_string()).unwrap_or_else(|| "?".into()),
            u.controller_max_mbps.map(|x| x.to_string()).unwrap_or_else(|| "?".into()),
        ));
    }
    let m = &a.memory;
    if let (Some(avail), Some(total)) = (m.available_bytes, m.total_bytes) {
        s.push_str(&format!(
            "memory     {:.1} GB available of {:.1} GB; dirty thresholds {} MB hard, {} MB background\n",
            avail as f64 / 1e9,
            total as f64 / 1e9,
            m.dirty_threshold_bytes.map(|b| (b / 1_000_000).to_string()).unwrap_or_else(|| "?".into()),
            m.background_threshold_bytes.map(|b| (b / 1_000_000).to_string()).unwrap_or_else(|| "?".into()),
        ));
    }
    s.push_str(&format!(
        "stream     {stream_label}: {:.1} MB/s\n",
        a.stream_bytes_per_s / 1e6
    ));
    s
}

pub fn text(a: &Audit, stream_label: &str, colour: bool) -> String {
    let mut s = format!("sinkrate audit  {}\n", a.target.path);
    s.push_str(&header_text(a, stream_label));
    s.push('\n');
    for severity in [
        Severity::Critical,
        Severity::Warn,
        Severity::Info,
        Severity::Ok,
    ] {
        let group: Vec<&Finding> = a
            .findings
            .iter()
            .filter(|f| f.severity == severity)
            .collect();
        if group.is_empty() {
            continue;
        }
        for f in group {
            if severity == Severity::Ok {
                s.push_str(&format!(
                    "{}{:<28} {}\n",
                    paint(&format!("{:<10}", "ok"), severity, colour),
                    f.id,
                    f.title
                ));
            } else {
                s.push_str(&finding_text(f, colour, true));
                s.push('\n');
            }
        }
    }
    let counts = |sev: Severity| a.findings.iter().filter(|f| f.severity == sev).count();
    s.push_str(&format!(
        "\n{} critical, {} warn, {} info, {} ok\n",
        counts(Severity::Critical),
        counts(Severity::Warn),
        counts(Severity::Info),
        counts(Severity::Ok)
    ));
    for n in &a.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s
}

pub fn json_body(a: &Audit, stream_label: &str, sysroot: Option<&std::path::Path>) -> Value {
    json!({
        "target": a.target, "filesystem": a.filesystem, "devices": a.devices, "usb": a.usb,
        "memory": a.memory, "space": a.space, "swap": a.swap,
        "stream": { "label": stream_label, "bytes_per_s": a.stream_bytes_per_s },
        "findings": a.findings, "notes": a.notes,
        "sysroot": sysroot.map(|p| p.display().to_string()),
    })
}

/// Runs the audit with the given root; on a fixture root the host facts are not this host's.
pub fn audit(
    path: &std::path::Path,
    sysroot: Option<&std::path::Path>,
    rate: f64,
) -> Result<Audit> {
    let root = match sysroot {
        Some(dir) => {
            if !dir.join("proc").is_dir() && !dir.join("sys").is_dir() {
                return Err(anyhow!(
                    "--sysroot {}: holds neither proc/ nor sys/ (a tree with proc/self/mountinfo, sys/ and optionally dev/ is expected)",
                    dir.display()
                ));
            }
            SysRoot::at(dir)
        }
        None => SysRoot::live(),
    };
    sinkrate_audit::audit(
        path,
        &sinkrate_audit::Options {
            root,
            stream_bytes_per_s: rate,
        },
    )
    .map_err(|e| anyhow!(e))
}

pub fn run(args: AuditArgs) -> Result<ExitCode> {
    if let Some(p) = &args.output {
        crate::check_output_path("--output", p)?;
    }
    let (label, rate) = stream_rate(&args.rate)?;
    let a = audit(&args.path, args.sysroot.as_deref(), rate)?;
    let body = if args.output_format == "json" {
        let mut doc = json!({
            "schema": sinkrate_model::SCHEMA, "kind": "audit",
            "tool": { "name": "sinkrate", "version": sinkrate_model::TOOL_VERSION },
            "timestamp_ms": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0),
            "host": if args.sysroot.is_none() { serde_json::to_value(sinkrate_engine::host::host_facts())? } else { Value::Null },
        });
        if let (Some(obj), Value::Object(body)) = (
            doc.as_object_mut(),
            json_body(&a, &label, args.sysroot.as_deref()),
        ) {
            obj.extend(body);
        }
        let mut v = serde_json::to_vec_pretty(&doc)?;
        v.push(b'\n');
        v
    } else {
        let colour = args.output.is_none() && colour_wanted(&args.color, false);
        text(&a, &label, colour).into_bytes()
    };
    match &args.output {
        Some(p) => {
            std::fs::write(p, &body).map_err(|e| anyhow!("--output {}: {e}", p.display()))?
        }
        None => crate::write_stdout(&body)?,
    }
    let bad = a
        .findings
        .iter()
        .any(|f| matches!(f.severity, Severity::Critical | Severity::Warn));
    Ok(if args.strict && bad {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
