//! `sinkrate compare`: runs grouped by configuration into rows (seed 004's table), each row
//! set against the baseline with the difference, its 95% interval and a p-value: over runs
//! when both rows have two or more, else a block bootstrap over time within the runs.

pub mod group;
pub mod load;

use std::collections::BTreeMap;

use sinkrate_stats::bootstrap::{over_runs, over_time, Difference};

pub use group::GroupBy;
pub use load::{failure, has_runs, runs, Run, Second};
use sinkrate_model::compare::{
    CompareReport, FailedRun, Metrics, Range, Row, Significance, Spread, WindowFigures, WindowRow,
};

/// Seconds in a block of the bootstrap over time: longer than a stall and the drops it
/// causes, short enough for a minute's run to have several.
const BLOCK_S: usize = 5;
/// Runs a side from which runs are the unit of the comparison.
const RUNS_ENOUGH: usize = 4;
/// Seconds of recording a side below which the bootstrap over time has too few blocks to
/// resample (one 3 s run is less than one block: its interval has zero width).
const SECONDS_ENOUGH: usize = 4 * BLOCK_S;

/// The rows' windows side by side, when any run has two windows or more.
fn window_rows(groups: &[(String, Vec<Run>)]) -> Vec<WindowRow> {
    let n = groups
        .iter()
        .flat_map(|(_, runs)| runs.iter().map(|r| r.windows.len()))
        .max()
        .unwrap_or(0);
    if n < 2 {
        return Vec::new();
    }
    (0..n)
        .map(|i| {
            let first = groups
                .iter()
                .flat_map(|(_, runs)| runs.iter().filter_map(|r| r.windows.get(i)))
                .next();
            WindowRow {
                start_s: first.map_or(0.0, |w| w.start_s),
                end_s: first.map_or(0.0, |w| w.end_s),
                rows: groups
                    .iter()
                    .map(|(_, runs)| {
                        let ws: Vec<&sinkrate_model::record::Window> =
                            runs.iter().filter_map(|r| r.windows.get(i)).collect();
                        (!ws.is_empty()).then(|| WindowFigures {
                            written_mb_s: ws.iter().map(|w| w.written_bytes_per_s).sum::<f64>()
                                / ws.len() as f64
                                / 1e6,
                            worst_write_ms: ws
                                .iter()
                                .map(|w| w.worst_write_ns as f64 / 1e6)
                                .fold(0.0, f64::max),
                        })
                    })
                    .collect(),
            }
        })
        .collect()
}

pub struct CompareConfig {
    /// One label per run, in order, to group them by instead of their configuration.
    pub labels: Vec<String>,
    /// The baseline row's label, or the first row.
    pub baseline: Option<String>,
    /// What the labels are (`compare --by host`): the table's first heading.
    pub grouped_by: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("nothing to compare: {0}")]
    Nothing(String),
    #[error("--baseline {0}: no row has that label (the rows: {1})")]
    NoBaseline(String, String),
    #[error("{0}")]
    Mixed(String),
}

/// How far a row's runs lie apart: each figure's least and most (two runs or more).
fn spread_of(runs: &[Run]) -> Option<Spread> {
    if runs.len() < 2 {
        return None;
    }
    let range = |f: &dyn Fn(&Metrics) -> Option<f64>| {
        let v: Vec<f64> = runs.iter().filter_map(|r| f(&r.metrics)).collect();
        (v.len() >= 2).then(|| Range {
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    };
    Some(Spread {
        frames_dropped: range(&|m| m.frames_dropped.map(|d| d as f64)),
        write_p99_ms: range(&|m| m.write_p99_ms),
        app_mb_s: range(&|m| m.app_mb_s),
    })
}

/// Groups `runs` into rows and sets each against the baseline; the `failed` runs are listed
/// beside them.
pub fn compare(
    runs: Vec<Run>,
    failed: Vec<FailedRun>,
    cfg: &CompareConfig,
    unreadable: Vec<String>,
) -> Result<CompareReport, CompareError> {
    if runs.is_empty() {
        if !failed.is_empty() {
            // Every run failed: that is the answer, not an error in the inputs.
            return Ok(CompareReport {
                notes: vec![format!("no run to compare: all {} failed", failed.len())],
                failed,
                unreadable,
                grouped_by: cfg.grouped_by.clone(),
                ..CompareReport::default()
            });
        }
        return Err(CompareError::Nothing(if unreadable.is_empty() {
            "no runs given".into()
        } else {
            format!("none of the {} file(s) could be read", unreadable.len())
        }));
    }
    let recordings = runs
        .iter()
        .filter(|r| !r.seconds.is_empty() || r.metrics.frames_offered.is_some())
        .count();
    if recordings != 0 && recordings != runs.len() {
        return Err(CompareError::Mixed(
            "recordings and bench jobs cannot be lined up in one table: compare the record/check runs and the bench/fio runs separately".into(),
        ));
    }
    let mut notes = Vec::new();
    // One run given twice (a copied file, or the same file named twice) is one run: counted
    // twice it would pass for independent evidence.
    // (id, figures, first file, files given again): the same run with the same figures; an
    // edited copy (other figures) is a run of its own.
    let mut seen: Vec<(String, Metrics, String, Vec<String>)> = Vec::new();
    // Groups in the order their first run came.
    let mut groups: Vec<(String, Vec<Run>)> = Vec::new();
    for (i, run) in runs.into_iter().enumerate() {
        if let Some((_, _, _, again)) = seen
            .iter_mut()
            .find(|(id, figures, _, _)| *id == run.run_id && *figures == run.metrics)
        {
            again.push(run.file);
            continue;
        }
        seen.push((
            run.run_id.clone(),
            run.metrics.clone(),
            run.file.clone(),
            Vec::new(),
        ));
        // fio's run of a job and sinkrate bench's of the same job are one configuration:
        // their options are normalised alike (fio's JSON form), the tool is not one of them.
        let family = if run.kind == "fio" {
            "bench"
        } else {
            &run.kind
        };
        let key = match cfg.labels.get(i) {
            Some(label) => label.clone(),
            None => format!("{family}:{:?}", run.config),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(run),
            None => groups.push((key, vec![run])),
        }
    }
    for (id, _, first, again) in seen.iter().filter(|(_, _, _, a)| !a.is_empty()) {
        let named = if again.iter().all(|f| f == first) {
            format!("{first} is given {} times", again.len() + 1)
        } else {
            format!("{} hold the same run as {first}", again.join(", "))
        };
        notes.push(format!("{named} ({id}): counted once"));
    }
    if !cfg.labels.is_empty() && cfg.labels.len() < groups.iter().map(|g| g.1.len()).sum() {
        notes.push(format!(
            "{} --label(s) for more runs: the runs after them are grouped by configuration",
            cfg.labels.len()
        ));
    }
    let labels = row_labels(&groups, &cfg.labels);
    let baseline = match &cfg.baseline {
        None => 0,
        Some(b) => labels
            .iter()
            .position(|l| l == b)
            .ok_or_else(|| CompareError::NoBaseline(b.clone(), labels.join(", ")))?,
    };
    if groups.len() == 1 {
        notes.push(format!(
            "all {} run(s) have the same configuration: one row (give --label per file to split them)",
            groups[0].1.len()
        ));
    }
    for (label, (_, runs)) in labels.iter().zip(&groups) {
        let by_fio = runs.iter().filter(|r| r.kind == "fio").count();
        if by_fio > 0 && by_fio < runs.len() {
            notes.push(format!(
                "{label}: {by_fio} run(s) by fio, {} by sinkrate bench, of the same job",
                runs.len() - by_fio
            ));
        }
    }
    let base_runs = groups[baseline].1.clone();
    let windows = window_rows(&groups);
    let rows = groups
        .into_iter()
        .zip(labels)
        .enumerate()
        .map(|(i, ((_, runs), label))| {
            let against = (i != baseline).then(|| significance(&base_runs, &runs, &label));
            let mut kinds: Vec<&str> = Vec::new();
            for r in &runs {
                if !kinds.contains(&r.kind.as_str()) {
                    kinds.push(&r.kind);
                }
            }
            Row {
                // Which tools made the row's runs: `fio + bench` when both did.
                kind: kinds.join(" + "),
                files: runs.iter().map(|r| r.file.clone()).collect(),
                runs: runs.len(),
                config: runs[0].config.clone(),
                metrics: mean_metrics(&runs),
                against_baseline: against,
                spread: spread_of(&runs),
                label,
            }
        })
        .collect();
    Ok(CompareReport {
        baseline,
        rows,
        unreadable,
        notes,
        windows,
        grouped_by: cfg.grouped_by.clone(),
        failed,
    })
}

/// A row's label: the one given, or what differs between its configuration and the others'
/// (`write_mode=direct buffers=16`).
fn row_labels(groups: &[(String, Vec<Run>)], given: &[String]) -> Vec<String> {
    let configs: Vec<&BTreeMap<String, String>> =
        groups.iter().map(|(_, r)| &r[0].config).collect();
    // In key order, each once: labels read the same way on every row.
    let differing: std::collections::BTreeSet<&String> = configs
        .iter()
        .flat_map(|c| c.keys())
        .filter(|k| configs.iter().any(|c| c.get(*k) != configs[0].get(*k)))
        .collect();
    groups
        .iter()
        .enumerate()
        .map(|(i, (key, runs))| {
            if given.contains(key) {
                return key.clone();
            }
            let text: Vec<String> = differing
                .iter()
                .filter_map(|k| runs[0].config.get(*k).map(|v| format!("{k}={v}")))
                .collect();
            if text.is_empty() {
                // Nothing in the configurations differs: the first file's name tells them
                // apart (fio's run and sinkrate's of the same job).
                std::path::Path::new(&runs[0].file)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| format!("config {}", i + 1))
            } else {
                text.join(" ")
            }
        })
        .collect()
}

fn mean_of(runs: &[Run], f: fn(&Metrics) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = runs.iter().filter_map(|r| f(&r.metrics)).collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn mean_metrics(runs: &[Run]) -> Metrics {
    let total = |f: fn(&Metrics) -> Option<u64>| {
        let v: Vec<u64> = runs.iter().filter_map(|r| f(&r.metrics)).collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    Metrics {
        frames_offered: total(|m| m.frames_offered),
        frames_dropped: total(|m| m.frames_dropped),
        write_avg_ms: mean_of(runs, |m| m.write_avg_ms),
        write_p50_ms: mean_of(runs, |m| m.write_p50_ms),
        write_p99_ms: mean_of(runs, |m| m.write_p99_ms),
        write_max_ms: mean_of(runs, |m| m.write_max_ms),
        lateness_p99_ms: mean_of(runs, |m| m.lateness_p99_ms),
        app_mb_s: mean_of(runs, |m| m.app_mb_s),
        device_mb_s: mean_of(runs, |m| m.device_mb_s),
        iops: mean_of(runs, |m| m.iops),
        writer_cpu_s: mean_of(runs, |m| m.writer_cpu_s),
        flusher_cpu_s: mean_of(runs, |m| m.flusher_cpu_s),
        system_cpu_pct: mean_of(runs, |m| m.system_cpu_pct),
        peak_dirty_mb: mean_of(runs, |m| m.peak_dirty_mb),
        at_risk_s: mean_of(runs, |m| m.at_risk_s),
        stall_throttled_s: mean_of(runs, |m| m.stall_throttled_s),
        stall_writeback_s: mean_of(runs, |m| m.stall_writeback_s),
        stall_journal_s: mean_of(runs, |m| m.stall_journal_s),
        stall_device_s: mean_of(runs, |m| m.stall_device_s),
        stall_cpu_s: mean_of(runs, |m| m.stall_cpu_s),
    }
}

fn drop_share(m: &Metrics) -> Option<f64> {
    let offered = m.frames_offered.filter(|o| *o > 0)?;
    Some(m.frames_dropped.unwrap_or(0) as f64 / offered as f64)
}

/// The nearest-rank 99th percentile; a selection, not a sort: the bootstrap takes it
/// thousands of times over every frame of the runs.
fn p99(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let rank = ((values.len() as f64) * 0.99).ceil() as usize;
    let (_, at, _) = values.select_nth_unstable_by(rank.clamp(1, values.len()) - 1, f64::total_cmp);
    Some(*at)
}

fn significance(base: &[Run], row: &[Run], label: &str) -> Significance {
    let per_run = |runs: &[Run], f: &dyn Fn(&Metrics) -> Option<f64>| -> Vec<f64> {
        runs.iter().filter_map(|r| f(&r.metrics)).collect()
    };
    let pair = |f: &dyn Fn(&Metrics) -> Option<f64>| over_runs(&per_run(base, f), &per_run(row, f));
    let timed = |runs: &[Run]| runs.iter().all(|r| !r.seconds.is_empty());
    // Runs are the unit with enough of them (an exact permutation test over 3 runs a side
    // cannot go below p = 0.1); with fewer, a recording's seconds in blocks within each run.
    let by_runs =
        (base.len() >= RUNS_ENOUGH && row.len() >= RUNS_ENOUGH) || !timed(base) || !timed(row);
    let mut too_little = None;
    let (method, drops, write_p99) = if by_runs {
        (
            format!("runs (n={} vs {})", row.len(), base.len()),
            pair(&drop_share),
            pair(&|m| m.write_p99_ms),
        )
    } else {
        fn segments(runs: &[Run]) -> Vec<&[Second]> {
            runs.iter().map(|r| r.seconds.as_slice()).collect()
        }
        let (sa, sb) = (segments(base), segments(row));
        let drops = over_time(&sa, &sb, BLOCK_S, &|s: &[&Second]| {
            let offered: u64 = s.iter().map(|x| x.offered).sum();
            (offered > 0).then(|| s.iter().map(|x| x.dropped).sum::<u64>() as f64 / offered as f64)
        });
        let write_p99 = over_time(&sa, &sb, BLOCK_S, &|s: &[&Second]| {
            let mut v: Vec<f64> = s.iter().flat_map(|x| x.writes_ms.iter().copied()).collect();
            p99(&mut v)
        });
        let seconds = |v: &[&[Second]]| v.iter().map(|s| s.len()).sum::<usize>();
        // Under a few blocks a side the resamples are nearly all the same blocks: an interval
        // of zero width and a p near 0 that no data supports. No test, and no figures of one.
        let (drops, write_p99) = if seconds(&sa) < SECONDS_ENOUGH || seconds(&sb) < SECONDS_ENOUGH {
            too_little = Some((seconds(&sb), seconds(&sa)));
            (None, None)
        } else {
            (drops, write_p99)
        };
        (
            format!(
                "{}block bootstrap over time ({BLOCK_S} s blocks within runs; {} s in {} run(s) vs {} s in {})",
                if too_little.is_some() { "not tested, too little data for a " } else { "" },
                seconds(&sb),
                row.len(),
                seconds(&sa),
                base.len()
            ),
            drops,
            write_p99,
        )
    };
    let lateness = pair(&|m| m.lateness_p99_ms);
    let app = pair(&|m| m.app_mb_s);
    let worse = too_little.is_none()
        && (drops.is_some_and(|d| d.significant() && d.diff > 0.0)
            || write_p99.is_some_and(|d| d.significant() && d.diff > 0.0));
    let text = match too_little {
        None => words(label, base, row, &drops, &write_p99, by_runs),
        Some((row_s, base_s)) => unjudged_words(label, base, row, row_s, base_s),
    };
    Significance {
        method,
        drops,
        write_p99_ms: write_p99,
        lateness_p99_ms: lateness,
        app_mb_s: app,
        worse,
        text,
    }
}

/// The figures side by side, with no test: too little recording to tell.
fn unjudged_words(label: &str, base: &[Run], row: &[Run], row_s: usize, base_s: usize) -> String {
    let (b, r) = (mean_metrics(base), mean_metrics(row));
    let frames = |m: &Metrics| (m.frames_dropped.unwrap_or(0), m.frames_offered.unwrap_or(0));
    let ((bd, bo), (rd, ro)) = (frames(&b), frames(&r));
    let mut text = format!("{label}: {rd} of {ro} frames dropped vs {bd} of {bo}");
    if let (Some(rw), Some(bw)) = (r.write_p99_ms, b.write_p99_ms) {
        text.push_str(&format!("; p99 write latency {rw:.1} vs {bw:.1} ms"));
    }
    text.push_str(&format!(
        " (too little data to tell: {row_s} s vs {base_s} s of recording; {SECONDS_ENOUGH} s or more a side, or {RUNS_ENOUGH} runs a side)"
    ));
    text
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

/// The verdict in words: "B drops fewer frames than A (0 of 5400 vs 79 of 5400, p < 0.001);
/// p99 write latency -43% (95% CI -51% to -35%)", or "fewer drops (...), not significant
/// (p = 0.100)" with the runs that were too few.
fn words(
    label: &str,
    base: &[Run],
    row: &[Run],
    drops: &Option<Difference>,
    write_p99: &Option<Difference>,
    by_runs: bool,
) -> String {
    let frames = |runs: &[Run]| {
        let m = mean_metrics(runs);
        (m.frames_dropped.unwrap_or(0), m.frames_offered.unwrap_or(0))
    };
    let mut parts = Vec::new();
    if let Some(d) = drops {
        let ((bd, bo), (rd, ro)) = (frames(base), frames(row));
        if d.significant() {
            parts.push(format!(
                "drops {} frames than the baseline ({rd} of {ro} vs {bd} of {bo}, {})",
                if d.diff < 0.0 { "fewer" } else { "more" },
                p_text(d.p)
            ));
        } else if rd == 0 && bd == 0 {
            parts.push(format!("no frames dropped in either ({ro} vs {bo})"));
        } else {
            // Not significant, but not the same either: say which way, and how unsure.
            let way =
                match (rd as f64 / ro.max(1) as f64).total_cmp(&(bd as f64 / bo.max(1) as f64)) {
                    std::cmp::Ordering::Less => "fewer drops",
                    std::cmp::Ordering::Greater => "more drops",
                    std::cmp::Ordering::Equal => "as many drops",
                };
            parts.push(format!(
                "{way} ({rd} of {ro} vs {bd} of {bo}), not significant ({})",
                p_text(d.p)
            ));
        }
    }
    if let Some(w) = write_p99 {
        match (w.change_pct, w.change_ci_pct) {
            (Some(c), Some((lo, hi))) if w.significant() => parts.push(format!(
                "p99 write latency {c:+.0}% (95% CI {lo:+.0}% to {hi:+.0}%, {})",
                p_text(w.p)
            )),
            _ if w.significant() => parts.push(format!(
                "p99 write latency {:+.1} ms (95% CI {:+.1} to {:+.1} ms, {})",
                w.diff,
                w.diff_ci.0,
                w.diff_ci.1,
                p_text(w.p)
            )),
            _ => parts.push(format!(
                "p99 write latency {:.1} vs {:.1} ms, not significant ({})",
                w.b,
                w.a,
                p_text(w.p)
            )),
        }
    }
    let mut text = format!(
        "{label}: {}",
        if parts.is_empty() {
            "nothing to compare".to_string()
        } else {
            parts.join("; ")
        }
    );
    if by_runs && (base.len() < RUNS_ENOUGH || row.len() < RUNS_ENOUGH) {
        text.push_str(&format!(
            " (n={} vs {}: too few runs to tell; {RUNS_ENOUGH} or more a side)",
            row.len(),
            base.len()
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(file: &str, mode: &str, dropped: u64, p99: f64) -> Run {
        let mut config = BTreeMap::new();
        config.insert("write_mode".to_string(), mode.to_string());
        config.insert("buffers".to_string(), "4".to_string());
        Run {
            file: file.into(),
            run_id: file.into(),
            kind: "record".into(),
            config,
            metrics: Metrics {
                frames_offered: Some(1800),
                frames_dropped: Some(dropped),
                write_p99_ms: Some(p99),
                ..Metrics::default()
            },
            seconds: Vec::new(),
            windows: Vec::new(),
        }
    }

    fn cfg() -> CompareConfig {
        CompareConfig {
            grouped_by: None,
            labels: Vec::new(),
            baseline: None,
        }
    }

    fn failed(label: &str) -> FailedRun {
        FailedRun {
            label: label.into(),
            kind: "check".into(),
            file: format!("results/{label}/failed-1.json"),
            what: "sinkrate check: no space left on device".into(),
        }
    }

    #[test]
    fn failed_runs_are_carried_beside_the_rows_and_all_failed_is_an_answer() {
        let r = compare(
            vec![run("a1", "buffered", 0, 5.0)],
            vec![failed("cam2")],
            &cfg(),
            Vec::new(),
        )
        .expect("compare");
        assert_eq!(r.rows.len(), 1);
        assert_eq!(r.failed, vec![failed("cam2")]);
        // Every board failed: a report of failures, not "nothing to compare".
        let r = compare(
            Vec::new(),
            vec![failed("cam2"), failed("cam3")],
            &cfg(),
            Vec::new(),
        )
        .expect("a report of failures");
        assert!(r.rows.is_empty());
        assert_eq!(r.failed.len(), 2);
        assert!(
            r.notes.iter().any(|n| n.contains("all 2 failed")),
            "{:?}",
            r.notes
        );
        assert!(compare(Vec::new(), Vec::new(), &cfg(), Vec::new()).is_err());
    }

    #[test]
    fn runs_group_by_what_differs_and_a_clear_difference_is_named() {
        let runs = vec![
            run("a1", "buffered", 30, 300.0),
            run("b1", "direct", 0, 5.0),
            run("a2", "buffered", 25, 280.0),
            run("b2", "direct", 0, 6.0),
            run("a3", "buffered", 40, 350.0),
            run("b3", "direct", 0, 4.0),
        ];
        let r = compare(runs, Vec::new(), &cfg(), Vec::new()).expect("compare");
        assert_eq!(r.rows.len(), 2);
        assert_eq!(r.rows[0].label, "write_mode=buffered");
        assert_eq!(r.rows[1].label, "write_mode=direct");
        assert_eq!(r.rows[0].runs, 3);
        let s = r.rows[1].against_baseline.as_ref().expect("against");
        // Three runs a side, no seconds to resample: the exact permutation test cannot go
        // below p = 0.1, and the text says so rather than claim a difference.
        assert!(s.method.starts_with("runs (n=3 vs 3)"), "{s:?}");
        assert!(
            s.text
                .contains("fewer drops (0 of 5400 vs 95 of 5400), not significant (p = 0.100)"),
            "{}",
            s.text
        );
        assert!(s.text.contains("too few runs to tell"), "{}", s.text);
        assert!(!s.worse);
        // Four a side: p = 2/70.
        let mut runs = Vec::new();
        for (k, d) in [30u64, 25, 40, 35].iter().enumerate() {
            runs.push(run(&format!("a{k}"), "buffered", *d, 300.0 + k as f64));
            runs.push(run(&format!("b{k}"), "direct", 0, 5.0 + k as f64));
        }
        let r = compare(runs, Vec::new(), &cfg(), Vec::new()).expect("compare");
        let s = r.rows[1].against_baseline.as_ref().expect("against");
        assert!(
            s.text.contains(
                "drops fewer frames than the baseline (0 of 7200 vs 130 of 7200, p = 0.029)"
            ),
            "{}",
            s.text
        );
        assert!(s.text.contains("p99 write latency -98%"), "{}", s.text);
    }

    #[test]
    fn identical_rows_show_no_difference() {
        let runs = vec![
            run("a1", "buffered", 0, 10.0),
            run("a2", "buffered", 0, 12.0),
            run("b1", "direct", 0, 10.0),
            run("b2", "direct", 0, 12.0),
        ];
        let r = compare(runs, Vec::new(), &cfg(), Vec::new()).expect("compare");
        let s = r.rows[1].against_baseline.as_ref().expect("against");
        assert!(s.text.contains("no frames dropped in either"), "{}", s.text);
        assert!(
            s.text
                .contains("p99 write latency 11.0 vs 11.0 ms, not significant"),
            "{}",
            s.text
        );
    }

    #[test]
    fn one_run_each_uses_the_block_bootstrap_over_time() {
        let second = |dropped: u64, write: f64| Second {
            offered: 60,
            dropped,
            writes_ms: vec![write; 60],
        };
        let mut a = run("a", "buffered", 0, 0.0);
        a.seconds = (0..60)
            .map(|i| second(if i % 10 == 0 { 6 } else { 0 }, 100.0 + (i % 7) as f64))
            .collect();
        a.metrics.frames_dropped = Some(36);
        a.metrics.frames_offered = Some(3600);
        let mut b = run("b", "direct", 0, 0.0);
        b.seconds = (0..60).map(|i| second(0, 50.0 + (i % 5) as f64)).collect();
        b.metrics.frames_offered = Some(3600);
        let r = compare(vec![a, b], Vec::new(), &cfg(), Vec::new()).expect("compare");
        let s = r.rows[1].against_baseline.as_ref().expect("against");
        assert!(s.method.starts_with("block bootstrap over time"), "{s:?}");
        let w = s.write_p99_ms.expect("p99");
        let (lo, hi) = w.change_ci_pct.expect("relative");
        assert!(lo < -45.0 && hi > -55.0, "{w:?}");
        assert!(s.text.contains("drops fewer frames"), "{}", s.text);
    }

    #[test]
    fn fios_run_and_sinkrates_of_the_same_job_are_one_row_that_names_both_tools() {
        let as_tool = |file: &str, kind: &str| Run {
            kind: kind.into(),
            ..run(file, "direct", 0, 1.0)
        };
        let runs = vec![
            as_tool("fio.json", "fio"),
            as_tool("ours.json", "bench"),
            as_tool("other.json", "record"),
        ];
        let r = compare(runs, Vec::new(), &cfg(), Vec::new()).expect("compares");
        assert_eq!(r.rows.len(), 2, "{:?}", r.rows);
        assert_eq!(r.rows[0].kind, "fio + bench");
        assert_eq!(r.rows[0].runs, 2);
        assert_eq!(r.rows[1].kind, "record");
        assert!(
            r.notes
                .iter()
                .any(|n| n.ends_with("1 run(s) by fio, 1 by sinkrate bench, of the same job")),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn labels_group_and_a_missing_baseline_is_named() {
        let runs = vec![run("a", "buffered", 1, 1.0), run("b", "buffered", 2, 2.0)];
        let c = CompareConfig {
            grouped_by: None,
            labels: vec!["card A".into(), "card B".into()],
            baseline: Some("card C".into()),
        };
        let e = compare(runs, Vec::new(), &c, Vec::new()).expect_err("no such baseline");
        assert!(e.to_string().contains("card A, card B"), "{e}");
    }

    #[test]
    fn two_soaks_are_set_side_by_side_window_by_window() {
        let window = |i: u64, rate: f64, worst_ms: u64| sinkrate_model::record::Window {
            start_s: i as f64 * 3600.0,
            end_s: (i + 1) as f64 * 3600.0,
            written_bytes_per_s: rate,
            worst_write_ns: worst_ms * 1_000_000,
            ..Default::default()
        };
        let soak = |file: &str, mode: &str, slow_hour: u64| Run {
            windows: (0..3)
                .map(|i| window(i, 3e6, if i == slow_hour { 1900 } else { 400 }))
                .collect(),
            ..run(file, mode, 0, 1.0)
        };
        let r = compare(
            vec![soak("a.json", "direct", 1), soak("b.json", "buffered", 2)],
            Vec::new(),
            &cfg(),
            Vec::new(),
        )
        .expect("compares");
        assert_eq!(r.windows.len(), 3);
        let worst = |w: usize, row: usize| r.windows[w].rows[row].map(|f| f.worst_write_ms);
        assert_eq!((worst(1, 0), worst(1, 1)), (Some(1900.0), Some(400.0)));
        assert_eq!((worst(2, 0), worst(2, 1)), (Some(400.0), Some(1900.0)));
        assert_eq!(r.windows[0].rows[0].map(|f| f.written_mb_s), Some(3.0));
        // Short recordings have no windows to set side by side.
        let r = compare(
            vec![run("a.json", "direct", 0, 1.0)],
            Vec::new(),
            &cfg(),
            Vec::new(),
        )
        .expect("compares");
        assert!(r.windows.is_empty());
    }
}
