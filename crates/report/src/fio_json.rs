//! JSON output: the sinkrate run schema (`"schema": "sinkrate.run/1"`) with fio's keys for
//! everything fio reports (`jobs[].read.iops`, `clat_ns.percentile`, `usr_cpu`, ...), so
//! scripts written for fio's JSON read ours. Units are in the key names, as in fio.

use serde_json::{json, Map, Value};
use sinkrate_model::{
    BenchRun, DirectionResult, JobResult, IODEPTH_LABELS, IODEPTH_SUBMIT_LABELS, SCHEMA,
    TOOL_VERSION,
};
use sinkrate_stats::{BucketUnit, LatencyRecorder};

use crate::format::ms;
use crate::groups::apply_group_reporting;

pub fn ctime(unix_ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(unix_ms as i64)
        .map(|t| t.format("%a %b %e %H:%M:%S %Y").to_string())
        .unwrap_or_default()
}

pub use sinkrate_model::envelope::rfc3339;

fn latency_object(rec: &LatencyRecorder, percentiles: Option<&[f64]>, bins: bool) -> Value {
    let s = rec.summary(percentiles.unwrap_or(&[]));
    let mut m = Map::new();
    m.insert("min".into(), json!(s.min_ns));
    m.insert("max".into(), json!(s.max_ns));
    m.insert("mean".into(), json!(s.mean_ns));
    m.insert("stddev".into(), json!(s.stddev_ns));
    m.insert("N".into(), json!(s.count));
    if let Some(list) = percentiles {
        if s.count > 0 && !list.is_empty() {
            let mut p = Map::new();
            for (q, v) in &s.percentiles_ns {
                p.insert(format!("{q:.6}"), json!(v));
            }
            m.insert("percentile".into(), Value::Object(p));
        }
    }
    if bins && s.count > 0 {
        let mut b = Map::new();
        for (value, count) in rec.bins() {
            b.insert(value.to_string(), json!(count));
        }
        m.insert("bins".into(), Value::Object(b));
    }
    Value::Object(m)
}

fn direction_object(d: &DirectionResult, percentiles: &[f64], group_bw: f64, plus: bool) -> Value {
    let bw = d.bw_bytes_per_s();
    let bws = d.bw_summary();
    let iops = d.iops_summary();
    let kib = |v: f64| v / 1024.0;
    json!({
        "io_bytes": d.io_bytes,
        "io_kbytes": d.io_bytes / 1024,
        "bw_bytes": bw.round() as u64,
        "bw": (bw / 1024.0).round() as u64,
        "iops": d.iops(),
        "runtime": ms(d.runtime_ns),
        "total_ios": d.total_ios,
        "short_ios": d.short_ios,
        "drop_ios": 0,
        "slat_ns": latency_object(&d.slat, None, false),
        "clat_ns": latency_object(&d.clat, Some(percentiles), plus),
        "lat_ns": latency_object(&d.lat, None, false),
        "bw_min": kib(bws.min).round() as u64,
        "bw_max": kib(bws.max).round() as u64,
        "bw_agg": if group_bw > 0.0 { 100.0 * bw / group_bw } else { 0.0 },
        "bw_mean": kib(bws.mean),
        "bw_dev": kib(bws.stddev),
        "bw_samples": bws.samples,
        "iops_min": iops.min.round() as u64,
        "iops_max": iops.max.round() as u64,
        "iops_mean": iops.mean,
        "iops_stddev": iops.stddev,
        "iops_samples": iops.samples,
    })
}

fn labelled(labels: &[&str], values: &[f64; 7]) -> Value {
    let mut m = Map::new();
    for (l, v) in labels.iter().zip(values) {
        m.insert((*l).to_string(), json!(v));
    }
    Value::Object(m)
}

/// fio's latency_ns / latency_us / latency_ms distributions, over reads and writes together.
fn latency_buckets(job: &JobResult) -> (Value, Value, Value) {
    let mut all = job.read.clat.clone();
    all.merge(&job.write.clat);
    let (mut ns, mut us, mut msm) = (Map::new(), Map::new(), Map::new());
    for (bucket, share) in all.bucket_distribution() {
        let target = match bucket.unit {
            BucketUnit::Nanos => &mut ns,
            BucketUnit::Micros => &mut us,
            BucketUnit::Millis => &mut msm,
        };
        target.insert(bucket.label.to_string(), json!(share));
    }
    (Value::Object(ns), Value::Object(us), Value::Object(msm))
}

/// Per group: summed bytes per second of each direction (for `bw_agg`).
fn group_rates(jobs: &[(JobResult, u32)]) -> std::collections::HashMap<(u32, bool), f64> {
    let mut m = std::collections::HashMap::new();
    for (j, _) in jobs {
        *m.entry((j.group, false)).or_insert(0.0) += j.read.bw_bytes_per_s();
        *m.entry((j.group, true)).or_insert(0.0) += j.write.bw_bytes_per_s();
    }
    m
}

pub fn job_object(
    job: &JobResult,
    count: u32,
    rates: &std::collections::HashMap<(u32, bool), f64>,
    plus: bool,
) -> Value {
    let o = &job.options;
    let p = &o.percentile_list;
    let mut options = Map::new();
    for (k, v) in &job.written_options {
        options.insert(k.clone(), json!(v));
    }
    let (lat_ns, lat_us, lat_ms) = latency_buckets(job);
    let runtime = job.read.runtime_ns.max(job.write.runtime_ns);
    let empty = DirectionResult::default();
    let mut v = json!({
        "jobname": job.name,
        "groupid": job.group,
        "job_start": 0,
        "error": job.error,
        "eta": 0,
        "elapsed": job.elapsed_ns.div_ceil(1_000_000_000),
        "job options": Value::Object(options),
        "read": direction_object(&job.read, p, rates.get(&(job.group, false)).copied().unwrap_or(0.0), plus),
        "write": direction_object(&job.write, p, rates.get(&(job.group, true)).copied().unwrap_or(0.0), plus),
        "trim": direction_object(&empty, p, 0.0, false),
        "sync": {
            "total_ios": job.sync.count(),
            "lat_ns": latency_object(&job.sync, Some(p), false),
        },
        "job_runtime": ms(runtime),
        "usr_cpu": job.usr_cpu_pct,
        "sys_cpu": job.sys_cpu_pct,
        "ctx": job.ctx_switches,
        "majf": job.major_faults,
        "minf": job.minor_faults,
        "iodepth_level": labelled(&IODEPTH_LABELS, &job.iodepth_level),
        "iodepth_submit": labelled(&IODEPTH_SUBMIT_LABELS, &job.iodepth_submit),
        "iodepth_complete": labelled(&IODEPTH_SUBMIT_LABELS, &job.iodepth_complete),
        "latency_ns": lat_ns,
        "latency_us": lat_us,
        "latency_ms": lat_ms,
        "latency_depth": job.latency_target.as_ref().map(|l| l.depth).unwrap_or(o.iodepth),
        "latency_target": o.latency_target.map(|d| d.as_nanos() as u64).unwrap_or(0),
        "latency_percentile": o.latency_percentile,
        "latency_window": o.latency_window.as_nanos() as u64,
    });
    if let Value::Object(m) = &mut v {
        if let Some(ss) = &job.steady_state {
            m.insert(
                "steadystate".into(),
                json!({
                    "ss": ss.criterion.split(':').next().unwrap_or(""),
                    "duration": o.ss_dur.map(|d| d.as_secs()).unwrap_or(0),
                    "attained": u8::from(ss.attained),
                    "criterion": ss.criterion.split(':').nth(1).unwrap_or(""),
                    "max_deviation": ss.max_deviation,
                    "slope": ss.slope,
                    "data": { "samples": ss.samples },
                }),
            );
        }
        let mut extra = Map::new();
        extra.insert("jobs_merged".into(), json!(count));
        extra.insert("ioengine".into(), json!(o.ioengine.fio_name()));
        if let Some(t) = &job.error_text {
            extra.insert("error_text".into(), json!(t));
        }
        if let Some(f) = &job.flush {
            extra.insert(
                "flush".into(),
                json!({
                    "unwritten_at_end_bytes": f.unwritten_at_end_bytes,
                    "flush_ns": f.flush_ns,
                    "device_bytes_per_s": f.device_bytes_per_s,
                    "application_bytes_per_s": job.write.bw_bytes_per_s(),
                }),
            );
        }
        if let Some(lt) = &job.latency_target {
            extra.insert("latency_target".into(), json!(lt));
        }
        if job.files_done > 0 {
            extra.insert("files_done".into(), json!(job.files_done));
        }
        m.insert("sinkrate".into(), Value::Object(extra));
    }
    v
}

/// The whole run as one JSON document.
pub fn run_document(run: &BenchRun, plus: bool) -> Value {
    let merged = apply_group_reporting(&run.jobs);
    let rates = group_rates(&merged);
    let jobs: Vec<Value> = merged
        .iter()
        .map(|(j, n)| job_object(j, *n, &rates, plus))
        .collect();
    let config: Vec<Value> = run
        .jobs
        .iter()
        .map(|j| json!({ "job_number": j.job_number, "name": j.name, "group": j.group, "options": j.options }))
        .collect();
    json!({
        "schema": SCHEMA,
        "kind": "bench",
        "tool": { "name": "sinkrate", "version": TOOL_VERSION },
        "fio version": format!("sinkrate-{TOOL_VERSION}"),
        "timestamp": run.started_unix_ms / 1000,
        "timestamp_ms": run.started_unix_ms,
        "time": ctime(run.started_unix_ms),
        "started_at": rfc3339(run.started_unix_ms),
        "elapsed_ns": run.elapsed_ns,
        "interrupted": run.interrupted,
        "host": run.host,
        "targets": run.targets,
        "config": { "jobs": config },
        "notices": run.notices,
        "warnings": run.warnings,
        "global options": {},
        "jobs": jobs,
        "disk_util": [],
    })
}
