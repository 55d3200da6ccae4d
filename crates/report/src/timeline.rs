//! The sampler's timeline (shared by record, check, bench and watch) as charts: what reached
//! the device, the page cache against its thresholds with throttled stretches shaded, CPU
//! with the flusher threads as their own series, and device utilisation.

use sinkrate_model::timeline::Sample;

use crate::charts::{CPU, DEVICE, PAGE_CACHE, THROUGHPUT};
use crate::figures::{Band, Column, Page, Style};

const MB: f64 = 1e6;

fn mb(v: Option<u64>) -> Option<f64> {
    v.map(|b| b as f64 / MB)
}

/// A threshold only where it changes (and at the end): drawn as a line through the gaps.
fn steps(values: impl Iterator<Item = Option<f64>>) -> Column {
    let v: Vec<Option<f64>> = values.collect();
    let n = v.len();
    Column::of((0..n).map(|i| {
        let keep = i == 0 || i + 1 == n || v[i] != v[i - 1] || v.get(i + 1) != Some(&v[i]);
        if keep {
            v[i]
        } else {
            None
        }
    }))
}

/// Adds the timeline's charts for run `run`, series labels starting with `prefix`.
pub fn add(page: &mut Page, run: usize, prefix: &str, timeline: &[Sample], devices: &[String]) {
    if timeline.is_empty() {
        return;
    }
    let x = page.column(Column::time(timeline.iter().map(|s| s.t_ns as f64 / 1e9)));
    let devs = if devices.is_empty() {
        "device".to_string()
    } else {
        devices.join("+")
    };
    page.series(
        THROUGHPUT,
        run,
        format!("{prefix}reached the device ({devs})"),
        x,
        Column::of(
            timeline
                .iter()
                .map(|s| s.disk_write_bytes_per_s.map(|b| b / MB)),
        ),
        Style::Line,
    );
    let reads: Vec<Option<f64>> = timeline
        .iter()
        .map(|s| s.disk_read_bytes_per_s.map(|b| b / MB))
        .collect();
    if reads.iter().any(|r| r.is_some_and(|r| r > 0.0)) {
        page.series(
            THROUGHPUT,
            run,
            format!("{prefix}read from the device ({devs})"),
            x,
            Column::of(reads),
            Style::Line,
        );
    }
    for (label, column, style) in [
        (
            "dirty",
            Column::of(timeline.iter().map(|s| mb(s.dirty_bytes))),
            Style::Line,
        ),
        (
            "writeback",
            Column::of(timeline.iter().map(|s| mb(s.writeback_bytes))),
            Style::Line,
        ),
        (
            "background threshold",
            steps(timeline.iter().map(|s| mb(s.background_threshold_bytes))),
            Style::Limit,
        ),
        (
            "freerun ceiling",
            steps(timeline.iter().map(|s| mb(s.freerun_ceiling_bytes))),
            Style::Limit,
        ),
        (
            "hard limit",
            steps(timeline.iter().map(|s| mb(s.dirty_threshold_bytes))),
            Style::Limit,
        ),
    ] {
        page.series(
            PAGE_CACHE,
            run,
            format!("{prefix}{label}"),
            x,
            column,
            style,
        );
    }
    let bands = throttled(timeline);
    if !bands.is_empty() {
        let chart = page.chart(PAGE_CACHE.0, PAGE_CACHE.1);
        chart
            .bands
            .extend(bands.into_iter().map(|(from, to)| Band { run, from, to }));
    }
    for (label, column) in [
        ("user", Column::of(timeline.iter().map(|s| s.cpu_user_pct))),
        (
            "system",
            Column::of(timeline.iter().map(|s| s.cpu_system_pct)),
        ),
        (
            "iowait",
            Column::of(timeline.iter().map(|s| s.cpu_iowait_pct)),
        ),
        (
            "flusher threads (% of one core)",
            Column::of(timeline.iter().map(|s| s.flusher_cpu_pct)),
        ),
    ] {
        let style = if label.starts_with("flusher") {
            Style::Step
        } else {
            Style::Line
        };
        page.series(CPU, run, format!("{prefix}{label}"), x, column, style);
    }
    page.series(
        DEVICE,
        run,
        format!("{prefix}{devs} busy"),
        x,
        Column::of(timeline.iter().map(|s| s.disk_util_pct)),
        Style::Line,
    );
}

/// Stretches of consecutive throttled samples, each from the sample before it (the start
/// of the interval it covers) to its own time, in seconds.
pub fn throttled(timeline: &[Sample]) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut prev_t = 0.0;
    let mut open: Option<f64> = None;
    for s in timeline {
        let t = s.t_ns as f64 / 1e9;
        match (s.throttled, open) {
            (true, None) => open = Some(prev_t),
            (false, Some(from)) => {
                out.push((from, prev_t));
                open = None;
            }
            _ => {}
        }
        prev_t = t;
    }
    if let Some(from) = open {
        out.push((from, prev_t));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t_s: f64, throttled: bool) -> Sample {
        Sample {
            t_ns: (t_s * 1e9) as u64,
            throttled,
            ..Sample::default()
        }
    }

    #[test]
    fn throttled_stretches_cover_their_intervals() {
        let tl = [
            at(0.1, false),
            at(0.2, true),
            at(0.3, true),
            at(0.4, false),
            at(0.5, true),
        ];
        let b = throttled(&tl);
        assert_eq!(b.len(), 2);
        assert!((b[0].0 - 0.1).abs() < 1e-9 && (b[0].1 - 0.3).abs() < 1e-9);
        assert!((b[1].0 - 0.4).abs() < 1e-9 && (b[1].1 - 0.5).abs() < 1e-9);
    }

    #[test]
    fn steps_keep_the_changes_and_the_ends() {
        let c = steps([Some(1.0), Some(1.0), Some(1.0), Some(2.0), Some(2.0)].into_iter());
        assert_eq!(
            c.values,
            vec![Some(1.0), None, Some(1.0), Some(2.0), Some(2.0)]
        );
    }
}
