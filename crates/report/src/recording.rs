//! A recording (record, or check's recording test) as charts and words: what the
//! application wrote, each frame's write time and lateness, drops and stalls (each stall
//! with what the sampler saw then), on top of the sampler's timeline.

use sinkrate_model::record::{RecordReport, StallReport};
use sinkrate_stats::LatencyDistribution;

use crate::charts::{LATENESS, STALL_CAUSES, THROUGHPUT, WRITE_CDF, WRITE_LATENCY};
use crate::figures::{Column, Headline, Mark, MarkKind, Page, Style, Table};
use crate::{mb_s, timeline};
use sinkrate_units::product::ns_to_ms;

/// Points of a CDF drawn from many values: enough for a smooth curve, and every value of
/// the worst 0.1% so the tail is exact.
const CDF_POINTS: usize = 1000;

pub fn add(page: &mut Page, run: usize, prefix: &str, r: &RecordReport) {
    timeline::add(page, run, prefix, &r.sampler.timeline, &r.sampler.devices);
    if !r.intervals.is_empty() {
        let x = page.column(Column::time(r.intervals.iter().map(|i| i.t_s)));
        let mut prev = 0.0;
        let rates = Column::dense(r.intervals.iter().map(|i| {
            let span = (i.t_s - prev).max(1e-3);
            prev = i.t_s;
            i.bytes_written as f64 / span / 1e6
        }));
        page.series(
            THROUGHPUT,
            run,
            format!("{prefix}written by the application"),
            x,
            rates,
            Style::Step,
        );
    }
    let mut writes_ms: Vec<f64> = Vec::new();
    for f in &r.frames {
        if f.capture_us.is_empty() {
            continue;
        }
        let stream = if r.frames.len() > 1 {
            format!(" {}", f.stream)
        } else {
            String::new()
        };
        let x = page.column(Column::time(f.capture_us.iter().map(|u| *u as f64 / 1e6)));
        let write: Vec<Option<f64>> = f
            .write_start_us
            .iter()
            .zip(&f.write_end_us)
            .map(|(s, e)| Some((e.as_ref()?.saturating_sub(*s.as_ref()?)) as f64 / 1e3))
            .collect();
        writes_ms.extend(write.iter().flatten());
        page.series(
            WRITE_LATENCY,
            run,
            format!("{prefix}write time{stream}"),
            x,
            Column::of(write),
            Style::Line,
        );
        page.series(
            LATENESS,
            run,
            format!("{prefix}lateness{stream}"),
            x,
            Column::of(f.lateness_us.iter().map(|l| l.map(|u| u as f64 / 1e3))),
            Style::Line,
        );
    }
    if writes_ms.is_empty() && !r.intervals.is_empty() {
        // Frames not kept: the slowest write of each second still shows the stalls.
        let x = page.column(Column::time(r.intervals.iter().map(|i| i.t_s)));
        page.series(
            WRITE_LATENCY,
            run,
            format!("{prefix}slowest write each second"),
            x,
            Column::of(
                r.intervals
                    .iter()
                    .map(|i| (i.frame_write_max_ns > 0).then(|| ns_to_ms(i.frame_write_max_ns))),
            ),
            Style::Step,
        );
    }
    add_cdf(page, run, prefix, writes_ms, &r.totals.write_latency_ns);
    let chart = page.chart(LATENESS.0, LATENESS.1);
    for s in &r.streams {
        chart.marks.extend(s.drop_times_s.iter().map(|t| Mark {
            run,
            x: *t,
            kind: MarkKind::Drop,
            label: format!("{}dropped ({})", prefix, s.name),
        }));
    }
    for (i, stall) in r.stalls.iter().enumerate() {
        let label = format!("{prefix}S{}", i + 1);
        chart.notes.push(format!("{label}: {}", stall_words(stall)));
        chart.marks.push(Mark {
            run,
            x: stall.at_s,
            kind: MarkKind::Stall,
            label,
        });
    }
    add_stall_causes(page, run, prefix, r);
}

/// A bar per stall for each cause it had (a step up at its start by the cause's share, down
/// at its end), so the causes of every stall can be read on the run's time axis.
fn add_stall_causes(page: &mut Page, run: usize, prefix: &str, r: &RecordReport) {
    use sinkrate_model::causes::Cause;
    let mut explained: Vec<&StallReport> = r.stalls.iter().filter(|s| s.causes.is_some()).collect();
    if explained.is_empty() {
        return;
    }
    explained.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
    for cause in Cause::ALL {
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        for s in &explained {
            let Some(c) = &s.causes else { continue };
            let part = c.seconds.get(cause) * 1e3;
            xs.extend([s.at_s, s.at_s + s.duration_ms / 1e3]);
            ys.extend([Some(part), Some(0.0)]);
        }
        if ys.iter().flatten().all(|v| *v < 0.5) {
            continue;
        }
        let x = page.column(Column::time(xs));
        page.series(
            STALL_CAUSES,
            run,
            format!("{prefix}{}", cause.name()),
            x,
            Column::of(ys),
            Style::Step,
        );
    }
}

/// What the sampler saw when a write stalled, in a sentence.
pub fn stall_words(s: &StallReport) -> String {
    let mut seen = Vec::new();
    if let Some(d) = s.dirty_bytes {
        seen.push(format!("dirty {:.0} MB", d as f64 / 1e6));
    }
    if let Some(w) = s.writeback_bytes {
        seen.push(format!("writeback {:.0} MB", w as f64 / 1e6));
    }
    match s.throttled {
        Some(true) => seen.push("writers throttled".into()),
        Some(false) => seen.push("not throttled".into()),
        None => {}
    }
    if let Some(u) = s.disk_util_pct {
        seen.push(format!("device {u:.0}% busy"));
    }
    if let Some(w) = s.cpu_iowait_pct {
        seen.push(format!("iowait {w:.0}%"));
    }
    let mut text = format!(
        "at {:.1} s, {}: a write waited {}",
        s.at_s,
        s.stream,
        duration_words(s.duration_ms)
    );
    // The kernel's own account, where it was read, rather than the nearest sample.
    if let Some(c) = &s.causes {
        text.push_str(": ");
        text.push_str(&c.evidence());
        return text;
    }
    if !seen.is_empty() {
        text.push_str("; ");
        text.push_str(&seen.join(", "));
    }
    text
}

fn duration_words(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        format!("{ms:.0} ms")
    }
}

/// The CDF of `values` (ms), or of the run's percentiles when frames were not kept.
fn add_cdf(
    page: &mut Page,
    run: usize,
    prefix: &str,
    mut values: Vec<f64>,
    d: &LatencyDistribution,
) {
    let (xs, ys) = if values.is_empty() {
        if d.count == 0 {
            return;
        }
        let pts = [
            (d.min, 0.0),
            (d.p50, 50.0),
            (d.p90, 90.0),
            (d.p99, 99.0),
            (d.p999, 99.9),
            (d.max, 100.0),
        ];
        (
            pts.iter().map(|(v, _)| ns_to_ms(*v).max(1e-3)).collect(),
            pts.iter().map(|(_, p)| *p).collect(),
        )
    } else {
        values.sort_by(f64::total_cmp);
        cdf_points(&values)
    };
    let x = page.column(Column::dense(xs));
    page.series(
        WRITE_CDF,
        run,
        format!("{prefix}writes"),
        x,
        Column::dense(ys),
        Style::Step,
    );
}

/// (value, percent at or below) for sorted `values`: evenly spaced ranks, plus every value
/// of the worst 0.1% (at least the last ten).
pub fn cdf_points(sorted: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let n = sorted.len();
    let mut idx: Vec<usize> = (0..CDF_POINTS).map(|k| k * n / CDF_POINTS).collect();
    let tail = (n / 1000).max(10).min(n);
    idx.extend(n - tail..n);
    idx.sort_unstable();
    idx.dedup();
    let xs = idx.iter().map(|i| sorted[*i].max(1e-3)).collect();
    let ys = idx
        .iter()
        .map(|i| 100.0 * (*i + 1) as f64 / n as f64)
        .collect();
    (xs, ys)
}

pub fn headline(r: &RecordReport) -> Headline {
    let tone = crate::tone(r.verdict);
    let mut lines = vec![r.verdict_text.clone()];
    let t = &r.totals;
    lines.push(format!(
        "{} of {} frames dropped in {:.0} s; the application wrote {}, the device {}",
        t.frames_dropped,
        t.frames_offered,
        t.duration_s,
        mb_s(Some(t.written_bytes_per_s)),
        mb_s(t.device_bytes_per_s),
    ));
    lines.push(format!(
        "write time p50 {:.1} ms, p99 {:.1} ms, worst {:.1} ms; lateness p99 {:.1} ms",
        ns_to_ms(t.write_latency_ns.p50),
        ns_to_ms(t.write_latency_ns.p99),
        ns_to_ms(t.write_latency_ns.max),
        ns_to_ms(t.lateness_ns.p99),
    ));
    Headline {
        verdict: crate::verdict_words(r.verdict, r.headroom),
        tone,
        lines,
    }
}

pub fn streams_table(r: &RecordReport) -> Table {
    Table {
        title: "Streams".into(),
        header: [
            "stream",
            "offered",
            "written",
            "dropped",
            "fps",
            "write p50 (ms)",
            "p99 (ms)",
            "max (ms)",
            "lateness p99 (ms)",
            "pool high water",
        ]
        .map(String::from)
        .to_vec(),
        rows: r
            .streams
            .iter()
            .map(|s| {
                vec![
                    s.name.clone(),
                    s.frames_offered.to_string(),
                    s.frames_written.to_string(),
                    s.frames_dropped.to_string(),
                    format!("{:.2}", s.fps_achieved),
                    format!("{:.1}", ns_to_ms(s.write_latency_ns.p50)),
                    format!("{:.1}", ns_to_ms(s.write_latency_ns.p99)),
                    format!("{:.1}", ns_to_ms(s.write_latency_ns.max)),
                    format!("{:.1}", ns_to_ms(s.lateness_ns.p99)),
                    format!("{} of {}", s.pool_high_water, s.buffers),
                ]
            })
            .collect(),
    }
}

pub fn facts(r: &RecordReport) -> Vec<(String, String)> {
    let c = &r.config;
    let mut out = vec![
        (
            "streams".to_string(),
            c.streams
                .iter()
                .map(|s| format!("{} fps", s.fps))
                .collect::<Vec<_>>()
                .join(" + "),
        ),
        ("write mode".into(), c.write_mode.name().to_string()),
        ("capture buffers".into(), c.buffers.to_string()),
        ("duration".into(), format!("{} s", c.duration.as_secs())),
        ("directory".into(), c.dir.display().to_string()),
    ];
    if let Some(t) = &r.target {
        out.extend(crate::target_facts(t));
    }
    let vm = &r.sampler.summary.settings;
    out.push((
        "vm.dirty_* (at the start)".into(),
        format!(
            "ratio {} / background {} / bytes {} / background bytes {} / expire {} cs / writeback {} cs",
            opt(vm.dirty_ratio),
            opt(vm.dirty_background_ratio),
            opt(vm.dirty_bytes),
            opt(vm.dirty_background_bytes),
            opt(vm.dirty_expire_centisecs),
            opt(vm.dirty_writeback_centisecs)
        ),
    ));
    out
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stall_s_causes_are_drawn_as_bars_on_the_time_axis() {
        use sinkrate_model::causes::{Cause, CauseSeconds, StallCauses};
        let text = include_str!("../../../tests/fixtures/results/record.json");
        let mut r: RecordReport = serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| serde_json::from_value(v).ok())
            .expect("the record fixture reads");
        let stall = StallReport {
            stream: "cam0".into(),
            frame: Some(60),
            tid: Some(7),
            at_s: 2.0,
            duration_ms: 400.0,
            dirty_bytes: None,
            writeback_bytes: None,
            throttled: None,
            disk_util_pct: None,
            cpu_iowait_pct: None,
            causes: Some(StallCauses {
                seconds: CauseSeconds {
                    throttled_s: 0.3,
                    device_s: 0.1,
                    ..Default::default()
                },
                largest: Some(Cause::Throttled),
                ..Default::default()
            }),
        };
        r.stalls = vec![stall];
        let mut page = Page::default();
        add(&mut page, 0, "", &r);
        let chart = page
            .charts
            .iter()
            .find(|c| c.id == "stall_causes")
            .expect("the causes chart");
        let labels: Vec<&str> = chart.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["throttled", "device"]);
        let lateness = page
            .charts
            .iter()
            .find(|c| c.id == "lateness")
            .expect("lateness");
        assert!(
            lateness.notes[0].contains("throttled 0.30 s"),
            "{:?}",
            lateness.notes
        );
    }

    #[test]
    fn cdf_ends_at_the_worst_value_and_100_percent() {
        let v: Vec<f64> = (1..=10_000).map(f64::from).collect();
        let (xs, ys) = cdf_points(&v);
        assert_eq!(xs.last(), Some(&10_000.0));
        assert_eq!(ys.last(), Some(&100.0));
        assert!(xs.windows(2).all(|w| w[0] <= w[1]));
        // The median point reads 50%.
        let mid = xs.iter().position(|x| *x >= 5000.0).expect("mid");
        assert!((ys[mid] - 50.0).abs() < 0.2);
    }
}
