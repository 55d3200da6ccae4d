//! `verify`'s sections: the blocks written and read back, by what they held (`blocks`), and
//! `verify --capacity`'s verdict on the device's real size (`capacity`).

use sinkrate_model::sdclass::ClassReport;
use sinkrate_model::verify::{CapacityReport, CapacityVerdict, VerifyReport, VerifyVerdict};
use sinkrate_units::product::{bytes_binary, mb_per_s};

use crate::figures::{Headline, Section, Table, Tone};

pub(crate) fn blocks(s: &mut Section, r: &VerifyReport) {
    let (word, _) = r.verdict.word_and_exit_code();
    s.headline = Some(Headline {
        verdict: word.to_lowercase(),
        tone: match r.verdict {
            VerifyVerdict::Verified => Tone::Good,
            VerifyVerdict::BadBlocks | VerifyVerdict::Failed => Tone::Bad,
        },
        lines: vec![r.verdict_text.clone()],
    });
    let c = &r.counts;
    s.tables.push(Table {
        title: "Blocks read back".into(),
        header: [
            "as written",
            "stale",
            "misplaced",
            "zeros",
            "garbage",
            "corrupt",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![[c.ok, c.stale, c.misplaced, c.zeros, c.garbage, c.corrupt]
            .map(|n| n.to_string())
            .to_vec()],
    });
    if !r.bad_blocks.is_empty() {
        // The run id as each block's header holds it; written in hex in the result.
        let run_id = u64::from_str_radix(&r.run_id, 16).unwrap_or(0);
        s.tables.push(Table {
            title: format!("The first {} bad blocks", r.bad_blocks.len()),
            header: ["block", "at", "what it held"].map(String::from).to_vec(),
            rows: r
                .bad_blocks
                .iter()
                .map(|b| {
                    vec![
                        b.block.to_string(),
                        bytes_binary(b.offset_bytes),
                        b.finding.words(run_id, r.generation),
                    ]
                })
                .collect(),
        });
    }
    s.facts.push(("target".into(), r.target.clone()));
    s.facts.push((
        if r.is_device { "device" } else { "file" }.into(),
        r.data_path.clone(),
    ));
    s.facts.push((
        "blocks".into(),
        format!("{} of {}", r.blocks, bytes_binary(r.block_size_bytes)),
    ));
    if let Some(w) = &r.write {
        s.facts.push((
            "written".into(),
            format!("{} at {}", bytes_binary(w.bytes), mb_per_s(w.bytes_per_s)),
        ));
    }
    if let Some(d) = r.device_bytes_written {
        s.facts.push(("the device counted".into(), bytes_binary(d)));
    }
    if let (Some(p), Some(m)) = (&r.read, r.read_method) {
        s.facts.push((
            "read".into(),
            format!(
                "{} at {} ({})",
                bytes_binary(p.bytes),
                mb_per_s(p.bytes_per_s),
                m.words()
            ),
        ));
    }
    s.facts.push((
        "run".into(),
        format!("{} generation {}", r.run_id, r.generation),
    ));
    if r.kept {
        s.facts
            .push(("data".into(), "kept for a later --read-only pass".into()));
    }
}

pub(crate) fn class(s: &mut Section, r: &ClassReport) {
    let met = r.claim_met == Some(true) && r.stream_met != Some(false);
    s.headline = Some(Headline {
        verdict: if met { "meets" } else { "misses" }.into(),
        tone: if met { Tone::Good } else { Tone::Bad },
        lines: vec![r.verdict_text.clone()],
    });
    s.facts.push(("directory".into(), r.target.clone()));
    if let Some(c) = &r.card_classes {
        s.facts.push(("the card claims".into(), c.clone()));
    }
    for v in &r.classes {
        s.facts.push((
            v.class.clone(),
            if v.met {
                "met".into()
            } else {
                format!("missed: {}", v.reasons.join("; "))
            },
        ));
    }
    for p in &r.passes {
        s.facts.push((
            format!("RU {}", bytes_binary(p.ru_bytes)),
            format!(
                "{} writes, slowest unit {:.1} MB/s, worst write {:.1} ms, worst FAT update {:.1} ms",
                p.writes,
                p.min_unit_bytes_per_s / 1e6,
                p.worst_write_ns as f64 / 1e6,
                p.worst_fat_ns as f64 / 1e6
            ),
        ));
    }
}

pub(crate) fn capacity(s: &mut Section, r: &CapacityReport) {
    let (word, _) = r.verdict.word_and_exit_code();
    s.headline = Some(Headline {
        verdict: word.to_lowercase(),
        tone: match r.verdict {
            CapacityVerdict::Genuine => Tone::Good,
            CapacityVerdict::Fake | CapacityVerdict::Failed => Tone::Bad,
        },
        lines: vec![r.verdict_text.clone()],
    });
    s.facts.push(("device".into(), r.target.clone()));
    s.facts
        .push(("reported".into(), bytes_binary(r.reported_bytes)));
    s.facts.push(("holds".into(), bytes_binary(r.real_bytes)));
    if let Some(w) = &r.wrap_evidence {
        s.facts.push((
            "wraps".into(),
            format!(
                "written at {} came back at {}",
                bytes_binary(w.written_at_bytes),
                bytes_binary(w.found_at_bytes)
            ),
        ));
    }
    s.facts.push((
        "probe".into(),
        format!(
            "{} units, {} written in {:.1} s; {}",
            r.units_written,
            bytes_binary(r.bytes_written),
            r.seconds,
            r.read_method
        ),
    ));
    s.facts
        .push(("what it overwrote".into(), r.restore.clone()));
    if let Some(e) = &r.error {
        s.warnings.push(e.clone());
    }
}
