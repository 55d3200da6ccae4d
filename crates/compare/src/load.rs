//! A result file as compare reads it: a sinkrate record or check run (through their typed
//! results), or a bench run, sinkrate's or fio's own `--output-format=json` (through the fio
//! keys both share), becomes one or more [`Run`]s: what configuration it was, its figures,
//! and, for a recording, its seconds for the block bootstrap.

use std::collections::BTreeMap;

use sinkrate_model::compare::Metrics;
use sinkrate_model::document::Document;
use sinkrate_model::fio::BenchReport;
use sinkrate_model::record::{FrameSizes, RecordReport};
use sinkrate_units::product::ns_to_ms;

/// One second of a recording: what the block bootstrap resamples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Second {
    pub offered: u64,
    pub dropped: u64,
    /// Each frame's write time, ms (the second's worst when frames were not kept).
    pub writes_ms: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub file: String,
    /// What names this run wherever its file is copied: its kind and start (and job), or
    /// the file's name when the result holds no start time. Two inputs with one id are one
    /// run, counted once.
    pub run_id: String,
    /// record, check, bench, fio.
    pub kind: String,
    /// What makes the configuration: the settings that can differ between runs.
    pub config: BTreeMap<String, String>,
    pub metrics: Metrics,
    pub seconds: Vec<Second>,
    /// A long recording's windows (rate and worst write of each), to set soaks side by side.
    pub windows: Vec<sinkrate_model::record::Window>,
}

/// Whether compare finds runs in a document of this kind (a record, a check, a bench or
/// fio's JSON); an audit, a verify or a watch holds none. A directory's other results are
/// left out with a note, not counted as unreadable.
pub fn has_runs(document: &Document) -> bool {
    matches!(
        document,
        Document::Fio { .. } | Document::Record(_) | Document::Check(_)
    )
}

/// A run that failed, as `(kind, error)`: a failed run's document, or a result that carries
/// its error (a recording stopped by a full card keeps the part it measured). Compare lists
/// these beside its rows and leaves their figures out: a board whose verify failed is a
/// board that failed, whatever the kind.
pub fn failure(document: &Document) -> Option<(&'static str, String)> {
    document.error().map(|e| (document.kind_name(), e.what))
}

/// The runs of a document read from `name`.
pub fn runs(name: &str, document: Document) -> Result<Vec<Run>, String> {
    match document {
        Document::Fio {
            ours,
            output,
            value,
        } => {
            // fio's JSON (and bench's, as fio's) is stamped in `timestamp_ms` when written,
            // at the run's end: it names the run.
            let stamped_ms = value
                .get("timestamp_ms")
                .and_then(|t| t.as_u64())
                .unwrap_or(0);
            let kind = if ours { "bench" } else { "fio" };
            Ok(bench_runs(name, kind, &output, stamped_ms))
        }
        Document::Record(run) => {
            let mut r = recording(name, "record", &run.result);
            r.run_id = format!("record started {} ({} ms)", run.started_at, run.timestamp_ms);
            Ok(vec![r])
        }
        Document::Check(run) => {
            let rec = run.result.record.as_ref().ok_or_else(|| {
                format!("{name}: a check run without its recording test (--quick): nothing to compare")
            })?;
            let mut r = recording(name, "check", &rec.result);
            r.run_id = format!("check started {} ({} ms)", run.started_at, run.timestamp_ms);
            Ok(vec![r])
        }
        other => Err(format!(
            "{name}: a {} result has no runs to compare (compare reads record, check and bench results, and fio's JSON)",
            other.kind_name()
        )),
    }
}

fn frame_label(sizes: &FrameSizes) -> String {
    match sizes {
        FrameSizes::Fixed { bytes } => format!("{bytes} B"),
        FrameSizes::Bitrate { bits_per_s, .. } => {
            format!("{} Mbit/s", *bits_per_s as f64 / 1e6)
        }
    }
}

/// A recording's figures and seconds as compare reads them (`kind`: record or check).
pub fn recording(file: &str, kind: &str, r: &RecordReport) -> Run {
    let c = &r.config;
    let mut config = BTreeMap::new();
    let streams: Vec<String> = c
        .streams
        .iter()
        .map(|s| format!("{}fps x {}", s.fps, frame_label(&s.sizes)))
        .collect();
    config.insert("streams".into(), streams.join(" + "));
    config.insert("write_mode".into(), c.write_mode.name().to_string());
    config.insert("buffers".into(), c.buffers.to_string());
    if let Some(ws) = c.write_size {
        config.insert("write_size".into(), ws.to_string());
    }
    if let Some(every) = c.fdatasync_every {
        config.insert(
            "fdatasync_every".into(),
            format!("{}s", every.as_secs_f64()),
        );
    }
    if let Some(n) = c.fdatasync_every_frames {
        config.insert("fdatasync_every_frames".into(), n.to_string());
    }
    if let Some(p) = c.preallocate {
        config.insert("preallocate".into(), p.to_string());
    }
    if c.queue_depth > 1 {
        config.insert("queue_depth".into(), c.queue_depth.to_string());
    }
    config.insert("duration".into(), format!("{}s", c.duration.as_secs()));
    if let Some(t) = &r.target {
        config.insert(
            "target".into(),
            t.device.clone().unwrap_or_else(|| t.path.clone()),
        );
    }
    let vm = &r.sampler.summary.settings;
    for (key, value) in [
        ("dirty_expire_centisecs", vm.dirty_expire_centisecs),
        ("dirty_writeback_centisecs", vm.dirty_writeback_centisecs),
        ("dirty_bytes", vm.dirty_bytes.filter(|b| *b > 0)),
        (
            "dirty_background_bytes",
            vm.dirty_background_bytes.filter(|b| *b > 0),
        ),
        ("dirty_ratio", vm.dirty_ratio.filter(|r| *r > 0)),
        (
            "dirty_background_ratio",
            vm.dirty_background_ratio.filter(|r| *r > 0),
        ),
    ] {
        if let Some(v) = value {
            config.insert(key.into(), v.to_string());
        }
    }
    if let Some(limits) = &r.dirty_limits {
        config.insert("dirty_bytes".into(), limits.dirty_bytes.to_string());
        config.insert(
            "dirty_background_bytes".into(),
            limits.dirty_background_bytes.to_string(),
        );
    }
    let t = &r.totals;
    let cpu: Vec<f64> = r
        .sampler
        .timeline
        .iter()
        .filter_map(|s| s.cpu_system_pct)
        .collect();
    let peak = r.sampler.summary.peak_dirty_writeback_bytes;
    let metrics = Metrics {
        frames_offered: Some(t.frames_offered),
        frames_dropped: Some(t.frames_dropped),
        write_avg_ms: Some(t.write_latency_ns.mean / 1e6),
        write_p50_ms: Some(ns_to_ms(t.write_latency_ns.p50)),
        write_p99_ms: Some(ns_to_ms(t.write_latency_ns.p99)),
        write_max_ms: Some(ns_to_ms(t.write_latency_ns.max)),
        lateness_p99_ms: Some(ns_to_ms(t.lateness_ns.p99)),
        app_mb_s: Some(t.written_bytes_per_s / 1e6),
        device_mb_s: t.device_bytes_per_s.map(|b| b / 1e6),
        iops: None,
        writer_cpu_s: Some(t.writer_cpu_s),
        flusher_cpu_s: Some(t.flusher_cpu_s),
        system_cpu_pct: (!cpu.is_empty()).then(|| cpu.iter().sum::<f64>() / cpu.len() as f64),
        peak_dirty_mb: peak.map(|b| b as f64 / 1e6),
        at_risk_s: peak
            .filter(|_| t.requested_bytes_per_s > 0.0)
            .map(|b| b as f64 / t.requested_bytes_per_s),
        stall_throttled_s: cause(r, |c| c.throttled_s),
        stall_writeback_s: cause(r, |c| c.writeback_wait_s),
        stall_journal_s: cause(r, |c| c.journal_s),
        stall_device_s: cause(r, |c| c.device_s),
        stall_cpu_s: cause(r, |c| c.cpu_s),
    };
    Run {
        file: file.to_string(),
        run_id: file.to_string(),
        kind: kind.to_string(),
        config,
        metrics,
        seconds: seconds(r),
        windows: r.windows.clone(),
    }
}

/// One cause's share of the run's stall time, where the kernel's events were read.
fn cause(r: &RecordReport, f: fn(&sinkrate_model::causes::CauseSeconds) -> f64) -> Option<f64> {
    r.kernel.from_kernel().then(|| f(&r.kernel.stall_seconds))
}

/// The recording second by second: drops from the intervals, each frame's write time from
/// the frame columns (when the run kept them), else the interval's worst write.
fn seconds(r: &RecordReport) -> Vec<Second> {
    let mut out: Vec<Second> = r
        .intervals
        .iter()
        .map(|i| Second {
            offered: i.frames_captured,
            dropped: i.frames_dropped,
            writes_ms: Vec::new(),
        })
        .collect();
    let mut frames_kept = false;
    for f in &r.frames {
        for ((capture, start), end) in f
            .capture_us
            .iter()
            .zip(&f.write_start_us)
            .zip(&f.write_end_us)
        {
            let (Some(start), Some(end)) = (start, end) else {
                continue;
            };
            let second = (*capture / 1_000_000) as usize;
            if let Some(s) = out.get_mut(second) {
                s.writes_ms.push(end.saturating_sub(*start) as f64 / 1e3);
                frames_kept = true;
            }
        }
    }
    if !frames_kept {
        for (s, i) in out.iter_mut().zip(&r.intervals) {
            if i.frame_write_max_ns > 0 {
                s.writes_ms.push(ns_to_ms(i.frame_write_max_ns));
            }
        }
    }
    out
}

fn bench_runs(file: &str, kind: &str, out: &BenchReport, started_ms: u64) -> Vec<Run> {
    out.jobs
        .iter()
        .enumerate()
        .map(|(i, j)| {
            let mut config: BTreeMap<String, String> = out
                .global_options
                .iter()
                .chain(&j.job_options)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            config.insert("job".into(), j.jobname.clone());
            // The direction that did the work: writes when there were any; the directions
            // summed when the run reported only that (unified_rw_reporting=mixed).
            let only_mixed = j
                .mixed
                .as_ref()
                .filter(|_| j.write.io_bytes == 0 && j.read.io_bytes == 0);
            let d = if let Some(m) = only_mixed {
                m
            } else if j.write.io_bytes > 0 || j.read.io_bytes == 0 {
                &j.write
            } else {
                &j.read
            };
            let run_id = if started_ms > 0 {
                format!("{kind} run at {started_ms} ms, job {i} {}", j.jobname)
            } else {
                format!("{file}, job {i}")
            };
            Run {
                file: file.to_string(),
                run_id,
                kind: kind.to_string(),
                config,
                metrics: Metrics {
                    write_avg_ms: Some(d.clat_ns.mean / 1e6),
                    write_p50_ms: d.clat_ns.percentile_ns(50.0).map(ns_to_ms),
                    write_p99_ms: d.clat_ns.percentile_ns(99.0).map(ns_to_ms),
                    write_max_ms: Some(ns_to_ms(d.clat_ns.max)),
                    app_mb_s: Some(d.bw_bytes as f64 / 1e6),
                    iops: Some(d.iops),
                    system_cpu_pct: Some(j.usr_cpu + j.sys_cpu),
                    ..Metrics::default()
                },
                seconds: Vec::new(),
                windows: Vec::new(),
            }
        })
        .collect()
}
