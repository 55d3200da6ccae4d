//! Pictures of sinkrate runs. Any result file (every sinkrate run kind, and fio's own JSON)
//! becomes a [`figures::Page`]: per run a section of words (verdict, findings, tables,
//! configuration, host) and charts that overlay every run given. [`html`] renders it as one
//! self-contained file, [`png`] the main charts as images.

pub mod bench;
pub mod charts;
pub mod figures;
pub mod html;
#[cfg(feature = "png")]
pub mod png;
pub mod recording;
pub mod sections;
pub mod timeline;

use std::path::PathBuf;

use sinkrate_model::document::Document;
use sinkrate_model::{HostFacts, TargetFacts, Verdict};

use figures::{Page, Section, Tone};

/// One input of a report: its file, the label its series carry, and its document.
pub struct Input {
    pub file: PathBuf,
    pub label: String,
    pub document: Document,
}

/// The page for `inputs`, overlaid in the order given.
pub fn page(inputs: &[Input]) -> Page {
    let mut page = Page {
        title: match inputs {
            [one] => format!("sinkrate report: {}", one.label),
            _ => format!(
                "sinkrate report: {}",
                inputs
                    .iter()
                    .map(|i| i.label.as_str())
                    .collect::<Vec<_>>()
                    .join(" vs ")
            ),
        },
        ..Page::default()
    };
    let overlay = inputs.len() > 1;
    for (run, input) in inputs.iter().enumerate() {
        let prefix = if overlay {
            format!("{}: ", input.label)
        } else {
            String::new()
        };
        let section = sections::section(&mut page, run, &prefix, input);
        page.sections.push(section);
    }
    // The story's order: what was written, the page cache, the writes, the frames, then
    // the CPU and the device.
    page.charts.sort_by_key(|c| {
        charts::ORDER
            .iter()
            .position(|id| *id == c.id)
            .unwrap_or(usize::MAX)
    });
    page.fit_limits();
    page
}

pub(crate) fn empty_section(input: &Input, kind: &str) -> Section {
    Section {
        label: input.label.clone(),
        file: input.file.display().to_string(),
        kind: kind.into(),
        headline: None,
        warnings: Vec::new(),
        findings: Vec::new(),
        tables: Vec::new(),
        facts: Vec::new(),
    }
}

pub(crate) fn tone(v: Verdict) -> Tone {
    match v {
        Verdict::KeepsUp => Tone::Good,
        Verdict::FallingBehind => Tone::Warn,
        Verdict::Drops | Verdict::Failed => Tone::Bad,
        Verdict::NotStorage | Verdict::TooShort => Tone::Neutral,
    }
}

/// The verdict in words; a headroom only beside a verdict that keeps up (a failed run has
/// none to speak of, whatever figure it carries; as check's text).
pub(crate) fn verdict_words(v: Verdict, headroom: Option<f64>) -> String {
    match headroom {
        Some(h) if h.is_finite() && v == Verdict::KeepsUp => {
            format!("{} with {h:.1}x headroom", v.label())
        }
        _ => v.label().to_string(),
    }
}

pub(crate) fn mb_s(b: Option<f64>) -> String {
    match b {
        Some(b) => sinkrate_units::product::mb_per_s(b),
        None => "? MB/s".into(),
    }
}

pub(crate) fn host_facts(h: &HostFacts) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(n) = &h.hostname {
        out.push(("host".into(), n.clone()));
    }
    if let Some(k) = &h.kernel {
        out.push(("kernel".into(), format!("{k} ({})", h.arch)));
    }
    out.push((
        "CPU".into(),
        format!(
            "{} x {}",
            h.cpu_count,
            h.cpu_model.clone().unwrap_or_else(|| "?".into())
        ),
    ));
    if let Some(m) = h.mem_total_bytes {
        out.push((
            "RAM".into(),
            format!("{:.1} GiB", m as f64 / (1u64 << 30) as f64),
        ));
    }
    out
}

pub(crate) fn target_facts(t: &TargetFacts) -> Vec<(String, String)> {
    let mut out = vec![("target".to_string(), t.path.clone())];
    let mut on = Vec::new();
    if let Some(fs) = &t.fs_type {
        on.push(fs.clone());
    }
    if let Some(d) = &t.device {
        on.push(format!("on {d}"));
    }
    if let Some(m) = &t.mount_point {
        on.push(format!("mounted at {m}"));
    }
    if !on.is_empty() {
        out.push(("filesystem".into(), on.join(" ")));
    }
    if !t.mount_options.is_empty() {
        out.push(("mount options".into(), t.mount_options.join(",")));
    }
    out
}
