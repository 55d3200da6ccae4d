//! `sinkrate audit`'s text: the header (target, device chain, USB path, memory, stream),
//! then the findings grouped by severity, each with its evidence, why, fix and trade-off.

use anyhow::Result;
use sinkrate_model::audit::{Audit, AuditReport, Finding, Severity};

use super::Exporter;

pub struct AuditText {
    pub colour: bool,
}

impl Exporter<AuditReport> for AuditText {
    fn export(&self, r: &AuditReport) -> Result<Vec<u8>> {
        Ok(text(&r.audit, &r.stream.label, self.colour).into_bytes())
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
    if let Some(line) = health_line(&a.health) {
        s.push_str(&format!("health     {line}\n"));
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

/// The card's or drive's own account in one line: who made it, what it claims, how worn it
/// says it is.
pub fn health_line(h: &sinkrate_model::health::CardHealth) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(c) = &h.mmc {
        let mut who: Vec<String> = Vec::new();
        who.extend(c.manufacturer.clone());
        who.extend(c.name.clone());
        who.extend(c.kind.as_deref().map(|k| match k {
            "SD" => "SD card".to_string(),
            "MMC" => "eMMC".to_string(),
            other => other.to_string(),
        }));
        parts.push(who.join(" "));
        parts.extend(c.date.as_ref().map(|d| format!("made {d}")));
        if let Some(st) = &c.sd_status {
            parts.push(st.label());
            parts.extend(st.au_bytes.map(|au| {
                if au >= 1 << 20 {
                    format!("AU {} MiB", au >> 20)
                } else {
                    format!("AU {} KiB", au >> 10)
                }
            }));
        }
        parts.extend(c.life_time.and_then(|l| l.used_percent()).map(|(lo, hi)| {
            if lo >= 100 {
                "life time estimate exceeded".to_string()
            } else {
                format!("life used {lo}-{hi}%")
            }
        }));
        parts.extend(c.pre_eol.map(|p| format!("pre-EOL {}", p.name())));
    }
    if let Some(e) = &h.emulated {
        let bytes = sinkrate_units::product::bytes_si;
        parts.push(if e.worn_out {
            format!(
                "emulated card worn out after {} ({})",
                bytes(e.worn_out_after_bytes.unwrap_or(e.written_bytes)),
                e.mode
            )
        } else {
            format!(
                "emulated card, {} of its {} endurance written",
                bytes(e.written_bytes),
                bytes(e.endurance_bytes)
            )
        });
    }
    if let Some(sm) = &h.smart {
        let mut who = sm.model.clone().unwrap_or_else(|| sm.device.clone());
        if let Some(p) = &sm.protocol {
            who.push_str(&format!(" ({p})"));
        }
        parts.push(who);
        parts.extend(
            sm.percentage_used
                .map(|p| format!("{p}% of rated endurance used")),
        );
        parts.extend(
            sm.written_bytes
                .map(|b| format!("{:.1} TB written in its life", b as f64 / 1e12)),
        );
        parts.extend(
            sm.passed
                .map(|p| format!("SMART {}", if p { "passed" } else { "FAILED" })),
        );
    }
    (!parts.is_empty()).then(|| parts.join(", "))
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
