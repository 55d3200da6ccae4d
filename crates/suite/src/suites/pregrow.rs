//! `pregrow` (seed 002): a recording-sized file written in 8 KiB records after four ways of
//! growing it: none (every write extends it), ftruncate, fallocate, and zeros written first.
//! The seed's table gave creation, write and total times; this one adds the rate with the
//! final fsync counted and the worst single write, which is what a recorder misses frames on.

use crate::writer::{write_file, Api, Prep, WriteJob};
use crate::{Ctx, SuiteConfig, SuiteError, WorkDir};
use sinkrate_model::suite::table::{Better, Column, Table, Unit};

const RECORD: usize = 8 << 10;
const VARIANTS: &[(Prep, &str, &str)] = &[
    (Prep::None, "write()", "a new file, extended by every write"),
    (
        Prep::Ftruncate,
        "ftruncate()",
        "ftruncate to the size first (sparse on Linux)",
    ),
    (
        Prep::Fallocate,
        "fallocate()",
        "fallocate of the size first: blocks reserved, nothing written",
    ),
    (
        Prep::Pregrow,
        "pregrown",
        "zeros written and synced first, then overwritten",
    ),
];

pub fn estimate_s(cfg: &SuiteConfig, rate: f64) -> f64 {
    let runs = cfg.runs_each();
    // Four writes of the file, and the pregrown variant's zeros.
    runs as f64 * 5.0 * cfg.test_file_bytes() as f64 / rate
}

pub fn run(ctx: &mut Ctx) -> Result<Vec<Table>, SuiteError> {
    let cfg = ctx.cfg;
    let mut table = Table::new(
        &format!(
            "a {} MiB file in 8 KiB records: growing it first, then writing it",
            cfg.test_file_bytes() >> 20
        ),
        vec![
            Column::new("creation_s", "creation", Unit::Seconds, Better::Lower),
            Column::new("write_s", "write", Unit::Seconds, Better::Lower),
            Column::new("fsync_s", "fsync", Unit::Seconds, Better::Lower),
            Column::new("total_s", "total", Unit::Seconds, Better::Lower),
            Column::new(
                "synced_bytes_per_s",
                "write+fsync rate",
                Unit::BytesPerS,
                Better::Higher,
            ),
            Column::new("worst_write_s", "worst write", Unit::Seconds, Better::Lower),
        ],
    );
    for (_, label, about) in VARIANTS {
        table.row(label, about);
    }
    let bytes = cfg.test_file_bytes();
    let work = WorkDir::for_suite(cfg, bytes * 2)?;
    let path = work.path().join("recording");
    for run in 0..ctx.runs() {
        for (prep, label, _) in VARIANTS {
            ctx.check_stop()?;
            ctx.phase(&format!("run {}: {label}", run + 1));
            sinkrate_sys::sync_filesystem(&cfg.dir);
            let w = write_file(
                &WriteJob {
                    path: &path,
                    record: RECORD,
                    bytes,
                    api: Api::Fd,
                    direct: false,
                    prep: *prep,
                    fsync: true,
                },
                &ctx.stop,
            );
            let w = match w {
                Err(crate::writer::WriteError::Io { source, .. })
                    if *prep == Prep::Fallocate
                        && source.raw_os_error() == Some(libc::EOPNOTSUPP) =>
                {
                    let _ = std::fs::remove_file(&path);
                    table.not_run(label, "", "this filesystem has no fallocate (EOPNOTSUPP)");
                    continue;
                }
                other => other?,
            };
            table.add(label, "creation_s", w.prep_s);
            table.add(label, "write_s", w.write_s);
            table.add(label, "fsync_s", w.sync_s);
            table.add(label, "total_s", w.prep_s + w.write_s + w.sync_s);
            table.add(label, "synced_bytes_per_s", w.synced_bytes_per_s());
            table.add(label, "worst_write_s", w.worst_call_s);
            let json = serde_json::json!({
                "suite": "pregrow", "variant": label, "run": run + 1, "figures": w,
            });
            ctx.keep_run(label, run, &json)?;
            let _ = std::fs::remove_file(&path);
        }
    }
    Ok(vec![table])
}
