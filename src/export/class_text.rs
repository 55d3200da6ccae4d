//! `verify --class` as text: the verdict line, each class judged with why it was missed, and
//! each pass's figures.

use std::fmt::Write as _;

use anyhow::Result;
use sinkrate_model::sdclass::{ClaimSource, ClassReport};
use sinkrate_units::product::{bytes_binary, mb_per_s, ms_text};

use super::Exporter;

pub struct ClassText;

impl Exporter<ClassReport> for ClassText {
    fn export(&self, r: &ClassReport) -> Result<Vec<u8>> {
        let mut o = String::new();
        let source = match r.claim_source {
            Some(ClaimSource::Card) => "from the card's SD Status",
            Some(ClaimSource::Given) => "from --claim",
            Some(ClaimSource::Assumed) | None => "assumed",
        };
        writeln!(
            o,
            "sinkrate verify --class  {}  (judged against {}, {source})",
            r.target,
            r.claim.as_deref().unwrap_or("-")
        )?;
        let code = sinkrate_verify::class::exit_code(r);
        let word = if code == 0 { "MEETS" } else { "MISSES" };
        writeln!(
            o,
            "\nVERDICT  {word}    (exit {code})\n  {}\n",
            r.verdict_text
        )?;
        if let Some(classes) = &r.card_classes {
            writeln!(o, "  the card claims  {classes}")?;
        }
        writeln!(
            o,
            "  AU               {}{}",
            bytes_binary(r.au_bytes),
            if r.au_from_card { " (the card's)" } else { "" }
        )?;
        writeln!(o, "\n  class  judged")?;
        for v in &r.classes {
            if v.met {
                writeln!(o, "  {:<5}  met", v.class)?;
            } else {
                writeln!(o, "  {:<5}  missed: {}", v.class, v.reasons.join("; "))?;
            }
        }
        writeln!(
            o,
            "\n  RU        writes  Pw (slowest unit)  mean        worst write  over 250 ms  first write  FAT worst  FAT avg of 8"
        )?;
        for p in &r.passes {
            writeln!(
                o,
                "  {:<8}  {:>6}  {:>17}  {:>10}  {:>11}  {:>11}  {:>11}  {:>9}  {:>12}",
                bytes_binary(p.ru_bytes),
                p.writes,
                mb_per_s(p.min_unit_bytes_per_s),
                mb_per_s(p.mean_bytes_per_s),
                ms_text(Some(p.worst_write_ns)),
                p.writes_over_busy_limit,
                ms_text(Some(p.preparation_ns)),
                ms_text(Some(p.worst_fat_ns)),
                ms_text(Some(p.worst_fat_mean8_ns)),
            )?;
        }
        if let Some(io) = &r.random {
            writeln!(
                o,
                "\n  random 4 KiB     {:.0} reads/s, {:.0} writes/s (one at a time, {:.0} s each)",
                io.read_iops, io.write_iops, io.seconds
            )?;
        }
        writeln!(
            o,
            "  written          {}{} in {:.1} s; {}",
            bytes_binary(r.written_bytes),
            r.device_written_bytes
                .map(|b| format!(" (the device counted {})", bytes_binary(b)))
                .unwrap_or_default(),
            r.seconds,
            if r.direct {
                "O_DIRECT"
            } else {
                "buffered, fdatasync after each write"
            }
        )?;
        for n in &r.notes {
            writeln!(o, "  note: {n}")?;
        }
        Ok(o.into_bytes())
    }
}
