//! `capture-buffers` (seed 004): the uvcvideo experiment's shape on storage. The seed set
//! buffer strategies A-F side by side with the average, min and max time per frame; here the
//! conditions are the capture side's choices a recorder makes (pool size, writing from the
//! capture buffer or copying out of it, the write size, one writer or one per stream), each
//! row set against A by `compare` (difference, 95% interval, p-value).

use sinkrate_model::record::WriteMode;
use sinkrate_record::session::Session;

use crate::suites::recording;
use crate::{Ctx, SuiteConfig, SuiteError, WorkDir};
use sinkrate_model::suite::table::{Better, Column, Table, Unit};

struct Condition {
    label: &'static str,
    about: &'static str,
    change: fn(&mut Session),
}

const CONDITIONS: &[Condition] = &[
    Condition { label: "A", about: "the workload as given (4 capture buffers per stream unless set)", change: |_| {} },
    Condition { label: "B", about: "pool of 2 capture buffers per stream", change: |s| s.record.buffers = 2 },
    Condition { label: "C", about: "pool of 8 capture buffers per stream", change: |s| s.record.buffers = 8 },
    Condition { label: "D", about: "O_DIRECT, written from the capture buffer (held until the write ends)", change: |s| s.record.write_mode = WriteMode::Direct },
    Condition {
        label: "E",
        about: "O_DIRECT, copied out of the capture buffer into 4 staging buffers (io_uring), the buffer returned at once",
        change: |s| {
            s.record.write_mode = WriteMode::Uring;
            s.record.queue_depth = 4;
        },
    },
    Condition { label: "F", about: "each frame written in 64 KiB calls", change: |s| s.record.write_size = Some(64 << 10) },
    Condition { label: "G", about: "one writer thread for every stream", change: |s| s.record.shared_writer = true },
];

pub fn estimate_s(cfg: &SuiteConfig) -> f64 {
    let runs = cfg.runs_each();
    runs as f64 * CONDITIONS.len() as f64 * (recording::duration(cfg).as_secs_f64() + 1.5)
}

pub fn run(ctx: &mut Ctx) -> Result<Vec<Table>, SuiteError> {
    let cfg = ctx.cfg;
    let mut base = cfg.recording.clone();
    if !cfg.recording_given {
        base.record.buffers = 4;
    }
    let mut table = Table::new(
        &format!(
            "{} for {} s: time per frame write and what it cost, each condition against A",
            cfg.recording.label,
            recording::duration(cfg).as_secs()
        ),
        [
            Column::new("write_avg_s", "avg", Unit::Seconds, Better::Lower),
            Column::new("write_min_s", "min", Unit::Seconds, Better::Lower),
            Column::new("write_max_s", "max", Unit::Seconds, Better::Lower),
            Column::new("write_p99_s", "p99", Unit::Seconds, Better::Lower),
            Column::new("frames_dropped", "dropped", Unit::Count, Better::Lower),
        ]
        .into_iter()
        .chain(recording::rate_and_cpu_columns())
        .collect(),
    );
    let uring = sinkrate_platform::uring::unavailable();
    let mut usable = Vec::new();
    for c in CONDITIONS {
        table.row(c.label, c.about);
        let mut s = base.clone();
        (c.change)(&mut s);
        if s.record.write_mode == WriteMode::Uring {
            if let Some(why) = &uring {
                table.not_run(c.label, c.about, why);
                continue;
            }
        }
        usable.push(c);
    }
    let work = WorkDir::for_suite(cfg, 0)?;
    let mut runs = Vec::new();
    let mut labels = Vec::new();
    for run in 0..ctx.runs() {
        for c in &usable {
            ctx.check_stop()?;
            ctx.phase(&format!("run {}: {}", run + 1, c.label));
            let rec = recording::record(ctx, &base, work.path(), &|s| (c.change)(s), c.label, run)?;
            let w = &rec.result.totals.write_latency_ns;
            table.add(c.label, "write_avg_s", w.mean / 1e9);
            table.add(c.label, "write_min_s", w.min as f64 / 1e9);
            // The figures every recording table has (those without a column here are
            // skipped by the table).
            recording::add(&mut table, c.label, &rec);
            runs.push(sinkrate_compare::load::recording(
                &format!("{}-run{}", c.label, run + 1),
                "record",
                &rec.result,
            ));
            labels.push(c.label.to_string());
        }
    }
    if ctx.runs() < 2 {
        ctx.notes.push(
            "one run of each condition: the rows are not set against A (compare needs two runs of each, or recordings long enough for its bootstrap over time); run without --quick".into(),
        );
        return Ok(vec![table]);
    }
    match sinkrate_compare::compare(
        runs,
        Vec::new(),
        &sinkrate_compare::CompareConfig {
            grouped_by: None,
            labels,
            baseline: Some("A".into()),
        },
        Vec::new(),
    ) {
        Ok(report) => {
            for r in &report.rows {
                if let Some(sig) = &r.against_baseline {
                    if let Some(row) = table.rows.iter_mut().find(|x| x.label == r.label) {
                        let text = sig
                            .text
                            .strip_prefix(&format!("{}: ", r.label))
                            .unwrap_or(&sig.text);
                        row.mark = Some(format!("vs A: {text}"));
                    }
                }
            }
            ctx.notes
                .extend(report.notes.into_iter().filter(|n| !n.contains("--label")));
        }
        Err(e) => ctx.notes.push(format!("compare: {e}")),
    }
    Ok(vec![table])
}
