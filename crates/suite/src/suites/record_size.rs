//! `record-size` (seed 002): write rate and CPU against the record size for write(2), C
//! stdio with its default buffer, and stdio with a 64 KiB buffer set by setvbuf. The seed
//! measured the rate the application saw; on a card that rate is the page cache's, so the
//! table also gives the rate with the final fsync counted (what reached the device).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::writer::{write_file, Api, Prep, WriteJob};
use crate::{Ctx, SuiteConfig, SuiteError, WorkDir};
use sinkrate_model::suite::table::{Better, Column, Table, Unit};

const FULL_SIZES: &[usize] = &[
    512,
    1 << 10,
    4 << 10,
    8 << 10,
    16 << 10,
    64 << 10,
    256 << 10,
    1 << 20,
];
const QUICK_SIZES: &[usize] = &[512, 4 << 10, 64 << 10, 1 << 20];
const SETVBUF: usize = 64 << 10;
const APIS: &[(Api, &str)] = &[
    (Api::Fd, "fd"),
    (Api::Stdio, "stdio"),
    (Api::StdioBuffer(SETVBUF), "setvbuf"),
];

fn sizes(cfg: &SuiteConfig) -> &'static [usize] {
    if cfg.quick {
        QUICK_SIZES
    } else {
        FULL_SIZES
    }
}

fn file_bytes(cfg: &SuiteConfig) -> u64 {
    if cfg.quick {
        8 << 20
    } else {
        16 << 20
    }
}

pub fn estimate_s(cfg: &SuiteConfig, rate: f64) -> f64 {
    let cells = sizes(cfg).len() * APIS.len() * cfg.runs_each();
    cells as f64 * (file_bytes(cfg) as f64 / rate + 0.2)
}

pub fn size_label(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

/// The sizes the filesystem and device say suit them: (where, bytes).
fn reported_sizes(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    if let Ok(m) = std::fs::metadata(dir) {
        out.push(("st_blksize".to_string(), m.blksize()));
    }
    let facts = sinkrate_sys::host::target_facts(dir, false);
    if let Some(name) = facts
        .device
        .as_deref()
        .and_then(|d| d.strip_prefix("/dev/"))
    {
        for attr in ["optimal_io_size", "minimum_io_size"] {
            let v = sinkrate_sys::device::queue_attr(&sinkrate_sys::SysRoot::live(), name, attr)
                .and_then(|t| t.parse::<u64>().ok());
            if let Some(v) = v.filter(|v| *v > 0) {
                out.push((format!("{name} {attr}"), v));
            }
        }
    }
    out
}

pub fn run(ctx: &mut Ctx) -> Result<Vec<Table>, SuiteError> {
    let cfg = ctx.cfg;
    let mut columns = Vec::new();
    for (_, name) in APIS {
        columns.push(Column::new(
            &format!("{name}_write_bytes_per_s"),
            &format!("{name} write"),
            Unit::BytesPerS,
            Better::Higher,
        ));
    }
    for (_, name) in APIS {
        columns.push(Column::new(
            &format!("{name}_synced_bytes_per_s"),
            &format!("{name} +fsync"),
            Unit::BytesPerS,
            Better::Higher,
        ));
    }
    for (_, name) in APIS {
        columns.push(Column::new(
            &format!("{name}_cpu_s_per_gib"),
            &format!("{name} CPU s/GiB"),
            Unit::Seconds,
            Better::Lower,
        ));
    }
    let mut table = Table::new(
        "write rate and CPU by record size (write: the calls; +fsync: data on the device)",
        columns,
    );
    let reported = reported_sizes(&cfg.dir);
    for &size in sizes(cfg) {
        let row = table.row(&size_label(size), "");
        let marks: Vec<String> = reported
            .iter()
            .filter(|(_, v)| *v == size as u64)
            .map(|(w, _)| w.clone())
            .collect();
        if !marks.is_empty() {
            row.mark = Some(format!("reported optimal: {}", marks.join(", ")));
        }
    }
    for (what, v) in &reported {
        if !sizes(cfg).contains(&(*v as usize)) {
            ctx.notes.push(format!(
                "{what} reports {} ({v} bytes), not one of the rows measured",
                size_label(*v as usize)
            ));
        }
    }
    let bytes = file_bytes(cfg);
    let work = WorkDir::for_suite(cfg, bytes * 2)?;
    let path = work.path().join("records");
    let gib = (1u64 << 30) as f64;
    for run in 0..ctx.runs() {
        for &size in sizes(cfg) {
            // Each run starts with another API, so that whatever the cell before leaves
            // behind (a deletion's journal commit) falls on every API alike.
            for i in 0..APIS.len() {
                let (api, name) = &APIS[(i + run) % APIS.len()];
                sinkrate_sys::sync_filesystem(&cfg.dir);
                ctx.check_stop()?;
                ctx.phase(&format!("run {}: {name}, {}", run + 1, size_label(size)));
                let w = write_file(
                    &WriteJob {
                        path: &path,
                        record: size,
                        bytes,
                        api: *api,
                        direct: false,
                        prep: Prep::None,
                        fsync: true,
                    },
                    &ctx.stop,
                )?;
                let label = size_label(size);
                table.add(
                    &label,
                    &format!("{name}_write_bytes_per_s"),
                    w.write_bytes_per_s(),
                );
                table.add(
                    &label,
                    &format!("{name}_synced_bytes_per_s"),
                    w.synced_bytes_per_s(),
                );
                table.add(
                    &label,
                    &format!("{name}_cpu_s_per_gib"),
                    w.cpu_s * gib / w.bytes.max(1) as f64,
                );
                let json = serde_json::json!({
                    "suite": "record-size", "api": name, "record_bytes": size, "run": run + 1,
                    "figures": w,
                });
                ctx.keep_run(&format!("{name}-{label}"), run, &json)?;
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    ctx.notes.push(format!(
        "each cell writes a new {} MiB file; stdio's default buffer here is glibc's (st_blksize), not the 1 KiB BUFSIZ of the seed's QNX libc",
        bytes >> 20
    ));
    Ok(vec![table])
}
