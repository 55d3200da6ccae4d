//! Exporters: one small interface, a file per format and result kind (as hyperfine's
//! `export/`). A command renders its typed result through one of these and never builds its
//! output anywhere else; none of them touches the system.

pub mod audit_text;
pub mod bench;
pub mod capacity_text;
pub mod capture_text;
pub mod check_text;
pub mod class_text;
pub mod compare_table;
pub mod emulate_text;
pub mod find_max_text;
pub mod frames_csv;
pub mod plan;
pub mod prometheus;
pub mod record_text;
pub mod samples_csv;
pub mod search_text;
pub mod suite_text;
pub mod tune_text;
pub mod verify_text;
pub mod watch_text;

use anyhow::Result;
use serde::Serialize;

/// Turns a typed result into the bytes of one output format.
pub trait Exporter<T> {
    fn export(&self, run: &T) -> Result<Vec<u8>>;
}

/// Why the stalls happened: the longest with its kernel cause and evidence, all of them by
/// cause, what the kernel could not say; or that causes are inferred, and why.
pub fn causes_text(r: &sinkrate_model::record::RecordReport) -> String {
    let k = &r.kernel;
    if let Some(why) = &k.inferred_because {
        return if r.stalls.is_empty() {
            String::new()
        } else {
            format!("causes inferred from /proc samples, not the kernel's events: {why}\n")
        };
    }
    let mut t = String::new();
    if let Some(line) = r.worst_stall().and_then(|w| w.explained()) {
        t.push_str(&format!("why, from the kernel's events: {line}\n"));
        t.push_str(&format!(
            "all {} stalls by cause: {}\n",
            r.stalls.len(),
            k.stall_causes_text()
        ));
    }
    if let Some(line) = lost_events_line(k) {
        t.push_str(&line);
        t.push('\n');
    }
    if let Some(line) = not_explained_line(k) {
        t.push_str(&line);
        t.push('\n');
    }
    if !k.missing.is_empty() && !r.stalls.is_empty() {
        t.push_str(&format!("not traced: {}\n", k.missing.join("; ")));
    }
    t
}

/// Why some stalls have no breakdown: the events before them were no longer kept.
pub fn not_explained_line(k: &sinkrate_model::causes::KernelAccount) -> Option<String> {
    (k.stalls_not_explained > 0).then(|| {
        format!(
            "{} stall(s) not explained: they began before the events kept behind the run (the last {} s{})",
            k.stalls_not_explained,
            sinkrate_model::causes::KEPT_BEHIND_S,
            if k.events_not_kept > 0 {
                format!(
                    ", less where {} events were let go sooner to bound memory",
                    k.events_not_kept
                )
            } else {
                String::new()
            }
        )
    })
}

/// "the kernel's events: N lost: the breakdown may be partial", when any were.
pub fn lost_events_line(k: &sinkrate_model::causes::KernelAccount) -> Option<String> {
    (k.lost_events > 0 || k.lost_unknown).then(|| {
        format!(
            "the kernel's events: {} lost{}: the breakdown may be partial",
            k.lost_events,
            if k.lost_unknown {
                " (and more in an unknown number)"
            } else {
                ""
            }
        )
    })
}

/// Any result as pretty JSON with a final newline.
pub struct Json;

impl<T: Serialize> Exporter<T> for Json {
    fn export(&self, run: &T) -> Result<Vec<u8>> {
        let mut bytes = Vec::new();
        Json::write_to(run, &mut bytes)?;
        Ok(bytes)
    }
}

impl Json {
    /// The same JSON as [`Exporter::export`], written as it is made.
    pub fn write_to<T: Serialize>(run: &T, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *w, run)?;
        w.write_all(b"\n")
    }
}

/// mm:ss.
pub fn mmss(s: f64) -> String {
    format!("{:02}:{:02}", (s / 60.0) as u64, (s % 60.0) as u64)
}

use sinkrate_units::product::mb_per_s as mbs;

#[cfg(test)]
mod snapshots;
