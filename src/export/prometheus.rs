//! `watch --prometheus FILE`: node_exporter's textfile format, rewritten every interval.

use std::path::Path;

use anyhow::{Context, Result};
use sinkrate_sampler::Sample;

/// node_exporter textfile format: HELP and TYPE for every metric, written to a temporary file
/// and renamed over the target so a scrape never sees half a file.
pub fn write_prometheus(
    path: &Path,
    s: &Sample,
    throttled_seconds: f64,
    devices: &str,
) -> Result<()> {
    let mut out = String::with_capacity(4096);
    let mut metric = |name: &str, kind: &str, help: &str, labels: &str, value: Option<f64>| {
        if let Some(v) = value {
            out.push_str(&format!("# HELP sinkrate_{name} {help}\n# TYPE sinkrate_{name} {kind}\nsinkrate_{name}{labels} {v}\n"));
        }
    };
    let b = |v: Option<u64>| v.map(|x| x as f64);
    metric(
        "mem_available_bytes",
        "gauge",
        "MemAvailable from /proc/meminfo.",
        "",
        b(s.mem_available_bytes),
    );
    metric(
        "dirty_bytes",
        "gauge",
        "Dirty page cache (/proc/meminfo Dirty).",
        "",
        b(s.dirty_bytes),
    );
    metric(
        "writeback_bytes",
        "gauge",
        "Page cache under writeback (/proc/meminfo Writeback).",
        "",
        b(s.writeback_bytes),
    );
    metric(
        "dirty_threshold_bytes",
        "gauge",
        "The kernel's hard dirty threshold (nr_dirty_threshold).",
        "",
        b(s.dirty_threshold_bytes),
    );
    metric(
        "background_threshold_bytes",
        "gauge",
        "The kernel's background writeback threshold.",
        "",
        b(s.background_threshold_bytes),
    );
    metric(
        "freerun_ceiling_bytes",
        "gauge",
        "Dirty + writeback above this throttle writers.",
        "",
        b(s.freerun_ceiling_bytes),
    );
    metric(
        "throttled",
        "gauge",
        "1 while dirty + writeback is above the freerun ceiling.",
        "",
        Some(f64::from(u8::from(s.throttled))),
    );
    metric(
        "throttled_seconds_total",
        "counter",
        "Seconds writers spent above the freerun ceiling since watch started.",
        "",
        Some(throttled_seconds),
    );
    let dl = format!("{{devices=\"{devices}\"}}");
    metric(
        "disk_read_bytes_per_second",
        "gauge",
        "Bytes read from the watched disks per second.",
        &dl,
        s.disk_read_bytes_per_s,
    );
    metric(
        "disk_write_bytes_per_second",
        "gauge",
        "Bytes written to the watched disks per second.",
        &dl,
        s.disk_write_bytes_per_s,
    );
    metric(
        "disk_utilisation_ratio",
        "gauge",
        "Share of the interval the watched disks were busy.",
        &dl,
        s.disk_util_pct.map(|p| p / 100.0),
    );
    metric(
        "cpu_iowait_ratio",
        "gauge",
        "Share of CPU time in iowait.",
        "",
        s.cpu_iowait_pct.map(|p| p / 100.0),
    );
    metric(
        "psi_io_full_ratio",
        "gauge",
        "Share of the interval all tasks stalled on I/O (PSI).",
        "",
        s.psi_io_full_pct.map(|p| p / 100.0),
    );
    sinkrate_sys::output::replace(path, out.as_bytes())
        .with_context(|| format!("--prometheus {}: cannot write", path.display()))?;
    Ok(())
}
