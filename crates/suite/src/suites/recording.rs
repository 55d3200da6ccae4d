//! What the recording suites share: one in-process record session per condition and run,
//! its JSON kept, and the figures every recording table shows.

use std::path::Path;
use std::time::Duration;

use sinkrate_model::record::RecordRun;
use sinkrate_record::session::{self, Session};

use crate::{Ctx, SuiteConfig, SuiteError};
use sinkrate_model::suite::table::{Better, Column, Table, Unit};

/// Seconds each recording lasts.
pub fn duration(cfg: &SuiteConfig) -> Duration {
    Duration::from_secs(if cfg.quick { 5 } else { 20 })
}

/// Records `base` (changed by `change`) in `dir` for the suite's duration, as the row
/// `label`'s run `run`.
pub fn record(
    ctx: &mut Ctx,
    base: &Session,
    dir: &Path,
    change: &dyn Fn(&mut Session),
    label: &str,
    run: usize,
) -> Result<RecordRun, SuiteError> {
    let mut s = base.clone();
    s.record.dir = dir.to_path_buf();
    s.record.duration = duration(ctx.cfg);
    s.record.keep = false;
    change(&mut s);
    let result = session::run(&s, ctx.stop.clone(), None)?;
    ctx.check_stop()?;
    ctx.keep_run(label, run, &result)?;
    // A table built on a failed recording would report figures the run never reached.
    if let Some(e) = &result.error {
        return Err(SuiteError::Failed(format!(
            "{label}, run {}: the recording failed: {}",
            run + 1,
            e.what
        )));
    }
    Ok(result)
}

/// The columns of a recording: frames lost, write times, lateness, rate and CPU.
pub fn columns() -> Vec<Column> {
    vec![
        Column::new("frames_dropped", "dropped", Unit::Count, Better::Lower),
        Column::new("write_p99_s", "write p99", Unit::Seconds, Better::Lower),
        Column::new("write_max_s", "worst write", Unit::Seconds, Better::Lower),
        Column::new(
            "lateness_p99_s",
            "lateness p99",
            Unit::Seconds,
            Better::Lower,
        ),
    ]
    .into_iter()
    .chain(rate_and_cpu_columns())
    .collect()
}

/// The rate written and the CPU it cost, as `add` fills them.
pub fn rate_and_cpu_columns() -> [Column; 2] {
    [
        Column::new(
            "written_bytes_per_s",
            "written",
            Unit::BytesPerS,
            Better::Higher,
        ),
        Column::new(
            "cpu_s",
            "CPU (writer + flusher)",
            Unit::Seconds,
            Better::Lower,
        ),
    ]
}

/// Adds a recording's figures to `label`'s row.
pub fn add(table: &mut Table, label: &str, run: &RecordRun) {
    let t = &run.result.totals;
    table.add(label, "frames_dropped", t.frames_dropped as f64);
    table.add(label, "write_p99_s", t.write_latency_ns.p99 as f64 / 1e9);
    table.add(label, "write_max_s", t.write_latency_ns.max as f64 / 1e9);
    table.add(label, "lateness_p99_s", t.lateness_ns.p99 as f64 / 1e9);
    table.add(label, "written_bytes_per_s", t.written_bytes_per_s);
    table.add(label, "cpu_s", t.writer_cpu_s + t.flusher_cpu_s);
}
