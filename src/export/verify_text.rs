//! `sinkrate verify`'s text: the verdict first, the phases and how the read avoided the page
//! cache under it, then the bad blocks by kind and the first ones one by one.

use std::fmt::Write;

use anyhow::Result;
use sinkrate_model::verify::VerifyReport;
use sinkrate_units::product::bytes_binary as size;

use super::{mbs, Exporter};

pub struct VerifyText;

impl Exporter<VerifyReport> for VerifyText {
    fn export(&self, r: &VerifyReport) -> Result<Vec<u8>> {
        let mut o = String::new();
        writeln!(
            o,
            "sinkrate verify  {}  ({} {}, {} in {} blocks of {}, run {})",
            r.target,
            if r.is_device { "device" } else { "file" },
            r.data_path,
            size(r.blocks * r.block_size_bytes),
            r.blocks,
            size(r.block_size_bytes),
            r.run_id
        )?;
        let (word, code) = r.verdict.word_and_exit_code();
        writeln!(
            o,
            "\nVERDICT  {word}    (exit {code})\n  {}\n",
            r.verdict_text
        )?;
        if let Some(w) = &r.write {
            writeln!(
                o,
                "  written   {} at {} (fsync at the end){}",
                size(w.bytes),
                mbs(w.bytes_per_s),
                r.device_bytes_written
                    .map(|d| format!("; the device counted {}", size(d)))
                    .unwrap_or_default()
            )?;
        }
        if let (Some(p), Some(m)) = (&r.read, r.read_method) {
            writeln!(
                o,
                "  read      {} at {} ({})",
                size(p.bytes),
                mbs(p.bytes_per_s),
                m.words()
            )?;
        }
        let c = &r.counts;
        writeln!(
            o,
            "  blocks    {} as written, {} stale, {} misplaced, {} zeros, {} garbage, {} corrupt",
            c.ok, c.stale, c.misplaced, c.zeros, c.garbage, c.corrupt
        )?;
        if !r.bad_blocks.is_empty() {
            writeln!(o, "\nfirst bad blocks:")?;
            let run_id = u64::from_str_radix(&r.run_id, 16).unwrap_or(0);
            for b in r.bad_blocks.iter().take(10) {
                writeln!(
                    o,
                    "  block {:>8}  at {:>10}  {}",
                    b.block,
                    size(b.offset_bytes),
                    b.finding.words(run_id, r.generation)
                )?;
            }
        }
        if r.kept {
            writeln!(
                o,
                "\nkept: {} (read it again later: sinkrate verify --read-only {})",
                r.data_path, r.data_path
            )?;
        }
        Ok(o.into_bytes())
    }
}
