//! `page-cache` (seed 000): one sequential write measured four ways. Short and buffered, the
//! page cache takes it at memory speed (the seed's 483 MB/s); long and buffered, writers are
//! throttled to the device once the dirty limit is reached (386 MB/s); counting the fsync,
//! or writing direct, measures the device from the start. The dirty limit is lowered for the
//! run (journaled first, restored after) so that "long" is reached in seconds, and each
//! figure is given with the data still in RAM when it was taken.

use sinkrate_settings::{Journal, Temporary};

use sinkrate_model::tunables::Assignment;

use crate::writer::{write_file, Api, Prep, WriteJob};
use crate::{Ctx, SuiteConfig, SuiteError, WorkDir};
use sinkrate_model::suite::table::{Better, Column, Table, Unit};

const RECORD: usize = 1 << 20;

/// (dirty_bytes, dirty_background_bytes) for the run.
fn limits(cfg: &SuiteConfig) -> (u64, u64) {
    if cfg.quick {
        (16 << 20, 8 << 20)
    } else {
        (64 << 20, 32 << 20)
    }
}

/// (short, long) sizes: half the background limit, and four times the dirty limit.
fn sizes(cfg: &SuiteConfig) -> (u64, u64) {
    let (dirty, background) = limits(cfg);
    (background / 2, dirty * 4)
}

pub fn estimate_s(cfg: &SuiteConfig, rate: f64) -> f64 {
    let (short, long) = sizes(cfg);
    let runs = cfg.runs_each();
    runs as f64 * (2.0 * short as f64 + 3.0 * long as f64) / rate + 2.0
}

struct Variant {
    label: &'static str,
    about: &'static str,
    long: bool,
    fsync_counted: bool,
    direct: bool,
}

const VARIANTS: &[Variant] = &[
    Variant {
        label: "short buffered",
        about: "half the background limit, write calls only",
        long: false,
        fsync_counted: false,
        direct: false,
    },
    Variant {
        label: "short buffered + fsync",
        about: "the same, its fsync counted",
        long: false,
        fsync_counted: true,
        direct: false,
    },
    Variant {
        label: "long buffered",
        about: "four times the dirty limit, write calls only",
        long: true,
        fsync_counted: false,
        direct: false,
    },
    Variant {
        label: "long buffered + fsync",
        about: "the same, its fsync counted",
        long: true,
        fsync_counted: true,
        direct: false,
    },
    Variant {
        label: "direct",
        about: "four times the dirty limit, O_DIRECT",
        long: true,
        fsync_counted: false,
        direct: true,
    },
];

pub fn run(ctx: &mut Ctx) -> Result<Vec<Table>, SuiteError> {
    let cfg = ctx.cfg;
    let (dirty, background) = limits(cfg);
    let (short, long) = sizes(cfg);
    let mut table = Table::new(
        &format!(
            "one sequential write in 1 MiB records, dirty limit {} MiB (background {} MiB)",
            dirty >> 20,
            background >> 20
        ),
        vec![
            Column::new("bytes_per_s", "rate", Unit::BytesPerS, Better::Neither),
            Column::new("written_bytes", "written", Unit::Bytes, Better::Neither),
            Column::new(
                "in_ram_at_figure_bytes",
                "in RAM at the figure",
                Unit::Bytes,
                Better::Neither,
            ),
            Column::new("worst_write_s", "worst write", Unit::Seconds, Better::Lower),
        ],
    );
    for v in VARIANTS {
        table.row(v.label, v.about);
    }
    let work = WorkDir::for_suite(cfg, long * 2)?;
    // Journaled before the change; put back when `guard` drops, whatever happens.
    let mut guard = Temporary::apply(
        &Journal::live(),
        &[
            Assignment::sysctl("vm.dirty_bytes", dirty),
            Assignment::sysctl("vm.dirty_background_bytes", background),
        ],
    )
    .map_err(|e| SuiteError::Failed(format!("lowering the dirty limit: {e}")))?;
    for e in guard.entries() {
        if let Some(w) = &e.written {
            ctx.settings_changed.push(format!(
                "{} = {w} for the run (was {})",
                e.setting, e.original
            ));
        }
    }
    let path = work.path().join("sequential");
    let result = (|| -> Result<(), SuiteError> {
        for run in 0..ctx.runs() {
            for v in VARIANTS {
                ctx.check_stop()?;
                ctx.phase(&format!("run {}: {}", run + 1, v.label));
                sinkrate_sys::sync_filesystem(&cfg.dir);
                let bytes = if v.long { long } else { short };
                let w = write_file(
                    &WriteJob {
                        path: &path,
                        record: RECORD,
                        bytes,
                        api: Api::Fd,
                        direct: v.direct,
                        prep: Prep::None,
                        fsync: true,
                    },
                    &ctx.stop,
                );
                let w = match w {
                    Err(crate::writer::WriteError::Io { source, .. })
                        if v.direct && source.raw_os_error() == Some(libc::EINVAL) =>
                    {
                        table.not_run(
                            v.label,
                            v.about,
                            "this filesystem refuses O_DIRECT (EINVAL)",
                        );
                        let _ = std::fs::remove_file(&path);
                        continue;
                    }
                    other => other?,
                };
                let rate = if v.fsync_counted {
                    w.synced_bytes_per_s()
                } else {
                    w.write_bytes_per_s()
                };
                table.add(v.label, "bytes_per_s", rate);
                table.add(v.label, "written_bytes", w.bytes as f64);
                let in_ram = if v.fsync_counted {
                    Some(0)
                } else {
                    w.unwritten_after_writes_bytes
                };
                if let Some(b) = in_ram {
                    table.add(v.label, "in_ram_at_figure_bytes", b as f64);
                }
                table.add(v.label, "worst_write_s", w.worst_call_s);
                let json = serde_json::json!({
                    "suite": "page-cache", "variant": v.label, "run": run + 1, "figures": w,
                });
                ctx.keep_run(v.label, run, &json)?;
                let _ = std::fs::remove_file(&path);
            }
        }
        Ok(())
    })();
    let outcome = guard.undo();
    match outcome {
        Ok(o) => {
            for (s, v) in o.restored {
                ctx.notes.push(format!("{s} restored to {v}"));
            }
            for (s, now, wrote) in o.left_alone {
                ctx.notes.push(format!(
                    "{s} was changed by someone else during the run ({now}, sinkrate wrote {wrote}): left as it is"
                ));
            }
        }
        Err(e) => ctx.notes.push(format!("restoring the dirty limit: {e}")),
    }
    result?;
    ctx.notes.push(
        "in RAM at the figure: the whole system's Dirty + Writeback right after the last write call; a figure taken with data still in RAM is the page cache's speed, not the device's".into(),
    );
    Ok(vec![table])
}
