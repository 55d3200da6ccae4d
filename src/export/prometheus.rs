//! `watch --prometheus FILE`: the fleet's metrics in node_exporter's textfile format.
//!
//! Counters only grow (bytes, I/O time, throttled seconds, stalls) and carry `_total`, so a
//! query takes `rate()` over them however seldom it scrapes; each device is its own series
//! with a `device` label as node_exporter's `node_disk_*` have it, so the two join. While
//! the watch runs, `sinkrate_watch_running` is 1 and the gauges of the moment (dirty data,
//! thresholds, requests in flight, a stall under way) are there; the file's last rewrite, at
//! the watch's end, says 0 and keeps only what stays true afterwards (the counters, the
//! longest stall, the times), so nothing stale is served as if it were current. A watch
//! killed outright cannot say so: `sinkrate_last_update_timestamp_seconds` tells.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use sinkrate_sampler::fleet::{FleetMetrics, STALL_MIN};

/// One metric family: HELP and TYPE once, then its series.
struct Family<'a> {
    out: &'a mut String,
}

impl Family<'_> {
    fn head(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(
            self.out,
            "# HELP sinkrate_{name} {help}\n# TYPE sinkrate_{name} {kind}"
        );
    }

    fn one(&mut self, name: &str, kind: &str, help: &str, value: Option<f64>) {
        if let Some(v) = value {
            self.head(name, kind, help);
            let _ = writeln!(self.out, "sinkrate_{name} {}", number(v));
        }
    }

    /// A family with one series per device; nothing at all when no device has a value.
    fn per_device(
        &mut self,
        m: &FleetMetrics,
        name: &str,
        kind: &str,
        help: &str,
        value: impl Fn(&sinkrate_sampler::fleet::DeviceMetrics) -> Option<f64>,
    ) {
        let series: Vec<(String, f64)> = m
            .devices
            .iter()
            .filter_map(|d| value(d).map(|v| (label(&d.device), v)))
            .collect();
        if series.is_empty() {
            return;
        }
        self.head(name, kind, help);
        for (device, v) in series {
            let _ = writeln!(
                self.out,
                "sinkrate_{name}{{device=\"{device}\"}} {}",
                number(v)
            );
        }
    }
}

/// Prometheus' text format takes Go's float syntax: integers print without a fraction.
fn number(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// A label value escaped as the text format asks (backslash, double quote, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The textfile's content: `running` is false for the last rewrite, at the watch's end.
pub fn render(m: &FleetMetrics, running: bool) -> String {
    let mut out = String::with_capacity(8192);
    let mut f = Family { out: &mut out };
    f.head(
        "build_info",
        "gauge",
        "The sinkrate that wrote this file (always 1).",
    );
    let _ = writeln!(
        f.out,
        "sinkrate_build_info{{version=\"{}\"}} 1",
        env!("CARGO_PKG_VERSION")
    );
    f.one(
        "watch_running",
        "gauge",
        "1 while sinkrate watch runs; 0 in the file it leaves when it ends.",
        Some(if running { 1.0 } else { 0.0 }),
    );
    f.one(
        "watch_start_timestamp_seconds",
        "gauge",
        "When this watch started (Unix time).",
        Some(m.started_unix_s),
    );
    f.one(
        "last_update_timestamp_seconds",
        "gauge",
        "When these figures were last brought up to date (Unix time); far behind time() means the watch is gone.",
        m.updated_unix_s,
    );
    f.one(
        "throttled_seconds_total",
        "counter",
        "Seconds the machine's dirty + writeback data stood above the freerun ceiling (writers throttled) since the watch started.",
        Some(m.throttled_seconds),
    );
    f.one(
        "throttled_episodes_total",
        "counter",
        "Times dirty + writeback went above the freerun ceiling since the watch started.",
        Some(m.throttled_episodes as f64),
    );
    let stall_ms = STALL_MIN.as_millis();
    f.per_device(
        m,
        "disk_read_bytes_total",
        "counter",
        "Bytes read from the device (/proc/diskstats, since boot).",
        |d| Some(d.counters.read_bytes as f64),
    );
    f.per_device(
        m,
        "disk_written_bytes_total",
        "counter",
        "Bytes written to the device (/proc/diskstats, since boot).",
        |d| Some(d.counters.write_bytes as f64),
    );
    f.per_device(
        m,
        "disk_reads_completed_total",
        "counter",
        "Reads the device completed (since boot).",
        |d| Some(d.counters.reads as f64),
    );
    f.per_device(
        m,
        "disk_writes_completed_total",
        "counter",
        "Writes the device completed (since boot).",
        |d| Some(d.counters.writes as f64),
    );
    f.per_device(
        m,
        "disk_io_time_seconds_total",
        "counter",
        "Seconds the device had I/O in flight (since boot); its rate is the busy share.",
        |d| Some(d.counters.busy_ms as f64 / 1e3),
    );
    f.per_device(
        m,
        "disk_write_time_seconds_total",
        "counter",
        "Seconds spent by all writes to the device, queued and served (since boot).",
        |d| Some(d.counters.write_ms as f64 / 1e3),
    );
    f.per_device(
        m,
        "disk_stalls_total",
        "counter",
        &format!("Times the device had requests in flight and completed none for {stall_ms} ms or more, since the watch started."),
        |d| Some(d.stalls as f64),
    );
    f.per_device(
        m,
        "disk_longest_stall_seconds",
        "gauge",
        "The longest the device went with requests in flight and none completed, since the watch started.",
        |d| Some(d.longest_stall_s),
    );
    f.per_device(
        m,
        "disk_longest_stall_timestamp_seconds",
        "gauge",
        "When the longest stall was last seen (Unix time).",
        |d| d.longest_stall_at_unix_s,
    );
    if running {
        moment(&mut f, m);
    }
    out
}

/// The gauges of the moment: true only while the watch runs.
fn moment(f: &mut Family, m: &FleetMetrics) {
    f.per_device(
        m,
        "disk_io_now",
        "gauge",
        "Requests in flight on the device.",
        |d| Some(d.counters.in_flight as f64),
    );
    f.per_device(
        m,
        "disk_stalled_seconds",
        "gauge",
        "How long the device has had requests in flight and completed none (0 when it is not stalled).",
        |d| Some(d.stalled_now_s),
    );
    let Some(s) = &m.last else { return };
    let b = |v: Option<u64>| v.map(|x| x as f64);
    f.one(
        "mem_available_bytes",
        "gauge",
        "MemAvailable from /proc/meminfo.",
        b(s.mem_available_bytes),
    );
    f.one(
        "dirty_bytes",
        "gauge",
        "Dirty page cache (/proc/meminfo Dirty).",
        b(s.dirty_bytes),
    );
    f.one(
        "writeback_bytes",
        "gauge",
        "Page cache under writeback (/proc/meminfo Writeback).",
        b(s.writeback_bytes),
    );
    f.one(
        "dirty_threshold_bytes",
        "gauge",
        "The kernel's hard dirty threshold (nr_dirty_threshold): writers block at it.",
        b(s.dirty_threshold_bytes),
    );
    f.one(
        "background_threshold_bytes",
        "gauge",
        "The kernel's background writeback threshold.",
        b(s.background_threshold_bytes),
    );
    f.one(
        "freerun_ceiling_bytes",
        "gauge",
        "Dirty + writeback above this throttle writers (midway between the two thresholds).",
        b(s.freerun_ceiling_bytes),
    );
    f.one(
        "throttled",
        "gauge",
        "1 while dirty + writeback is above the freerun ceiling.",
        Some(f64::from(u8::from(s.throttled))),
    );
    f.one(
        "cpu_iowait_ratio",
        "gauge",
        "Share of CPU time in iowait over the last interval.",
        s.cpu_iowait_pct.map(|p| p / 100.0),
    );
    f.one(
        "psi_io_full_ratio",
        "gauge",
        "Share of the last interval all tasks stalled on I/O (PSI).",
        s.psi_io_full_pct.map(|p| p / 100.0),
    );
}

/// Replaces FILE with the metrics at once (a scrape never sees half a file).
pub fn write_prometheus(path: &Path, m: &FleetMetrics, running: bool) -> Result<()> {
    sinkrate_sys::output::replace(path, render(m, running).as_bytes())
        .with_context(|| format!("--prometheus {}: cannot write", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkrate_model::timeline::Sample;
    use sinkrate_procparse::diskstats::DiskCounters;

    fn metrics() -> FleetMetrics {
        let mut m = FleetMetrics::new(1_700_000_000.0);
        let c = DiskCounters {
            writes: 10,
            write_bytes: 5 << 20,
            busy_ms: 1500,
            in_flight: 2,
            ..DiskCounters::default()
        };
        let s = Sample {
            t_ns: 1,
            dirty_bytes: Some(4096),
            ..Sample::default()
        };
        m.observe(&s, 1_700_000_001.5, [("mmcblk0", &c), ("sda", &c)]);
        m
    }

    #[test]
    fn each_device_is_a_series_of_one_family() {
        let text = render(&metrics(), true);
        assert_eq!(
            text.matches("# TYPE sinkrate_disk_written_bytes_total counter")
                .count(),
            1
        );
        assert!(text.contains("sinkrate_disk_written_bytes_total{device=\"mmcblk0\"} 5242880\n"));
        assert!(text.contains("sinkrate_disk_written_bytes_total{device=\"sda\"} 5242880\n"));
        assert!(text.contains("sinkrate_disk_io_time_seconds_total{device=\"sda\"} 1.5\n"));
        assert!(text.contains("sinkrate_last_update_timestamp_seconds 1700000001.5\n"));
        assert!(text.contains("sinkrate_watch_running 1\n"));
        assert!(text.contains("sinkrate_dirty_bytes 4096\n"));
    }

    #[test]
    fn the_file_left_at_the_end_says_so_and_holds_nothing_of_the_moment() {
        let text = render(&metrics(), false);
        assert!(text.contains("sinkrate_watch_running 0\n"));
        assert!(text.contains("sinkrate_disk_written_bytes_total{device=\"sda\"}"));
        for gauge in [
            "sinkrate_dirty_bytes",
            "sinkrate_disk_io_now",
            "sinkrate_throttled ",
        ] {
            assert!(!text.contains(gauge), "{gauge}: {text}");
        }
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
