//! `sinkrate verify --capacity`'s text: the verdict in words first, then what the probe did
//! and whether the device's data was put back.

use std::fmt::Write;

use anyhow::Result;
use sinkrate_model::verify::{CapacityReport, CapacityVerdict};
use sinkrate_units::product::bytes_binary as size;

use super::Exporter;

pub struct CapacityText;

/// The verdict, its exit code and its words, as both capacity checks print them.
fn verdict_block(o: &mut String, verdict: CapacityVerdict, text: &str) -> std::fmt::Result {
    let (word, code) = verdict.word_and_exit_code();
    writeln!(o, "\nVERDICT  {word}    (exit {code})\n  {text}\n")
}
use sinkrate_verify::capacity::bytes_words as gb;

impl Exporter<CapacityReport> for CapacityText {
    fn export(&self, r: &CapacityReport) -> Result<Vec<u8>> {
        let mut o = String::new();
        writeln!(
            o,
            "sinkrate verify --capacity  {}  (reports {})",
            r.target,
            gb(r.reported_bytes)
        )?;
        verdict_block(&mut o, r.verdict, &r.verdict_text)?;
        if r.verdict != CapacityVerdict::Failed {
            writeln!(o, "  real size        {}", gb(r.real_bytes))?;
        }
        if let Some(w) = &r.wrap_evidence {
            writeln!(
                o,
                "  evidence         a sector written at byte {} came back at byte {}",
                w.written_at_bytes, w.found_at_bytes
            )?;
        }
        writeln!(
            o,
            "  probe            {} written ({} at the start, single 4 KiB units every {} above), {:.1} s",
            size(r.bytes_written),
            size(r.low_region_bytes),
            size(r.low_region_bytes),
            r.seconds
        )?;
        writeln!(o, "  read back        {}", r.read_method)?;
        let restore = match r.restore.as_str() {
            "restored" => {
                "every place the probe wrote was put back as it was (undo journal)".to_string()
            }
            "destructive" => "--destructive: what the probe overwrote is gone".to_string(),
            other => other.to_string(),
        };
        writeln!(o, "  device's data    {restore}")?;
        Ok(o.into_bytes())
    }
}

/// `verify --capacity DIR`: the fill-and-check's verdict, then what was written and read.
pub struct FillText;

impl Exporter<sinkrate_verify::capacity::fill::FillReport> for FillText {
    fn export(&self, r: &sinkrate_verify::capacity::fill::FillReport) -> Result<Vec<u8>> {
        let mut o = String::new();
        writeln!(
            o,
            "sinkrate verify --capacity  {}  (filesystem of {}, {} free)",
            r.dir,
            gb(r.fs_total_bytes),
            gb(r.fs_free_bytes)
        )?;
        verdict_block(&mut o, r.verdict, &r.verdict_text)?;
        let rate = |b: Option<f64>| b.map_or("-".into(), super::mbs);
        writeln!(
            o,
            "  filled           {} in {} file(s) at {}, flushed, read back ({}) at {}",
            size(r.written_bytes),
            r.files,
            rate(r.write_bytes_per_s),
            r.read_method,
            rate(r.read_bytes_per_s)
        )?;
        writeln!(
            o,
            "  sectors          {} as written, {} another place's (wrapped), {} lost",
            size(r.ok_bytes),
            size(r.overwritten_bytes),
            size(r.lost_bytes)
        )?;
        if let Some(at) = r.first_bad_at_bytes {
            writeln!(o, "  first bad        {} into the fill", size(at))?;
        }
        if r.vanished_files > 0 {
            writeln!(
                o,
                "  vanished         {} file(s) of the fill are no longer in the filesystem",
                r.vanished_files
            )?;
        }
        writeln!(o, "  files            removed; {:.1} s", r.seconds)?;
        Ok(o.into_bytes())
    }
}
