//! JSON output: the sinkrate run schema (`"schema": "sinkrate.run/1"`) with fio's keys for
//! everything fio reports (`jobs[].read.iops`, `clat_ns.percentile`, `usr_cpu`, ...), so
//! scripts written for fio's JSON read ours. Units are in the key names, as in fio.

use indexmap::IndexMap;
use sinkrate_jobspec::options::UnifiedReporting;
use sinkrate_model::{
    BenchRun, DirectionResult, Envelope, JobResult, RunKind, IODEPTH_LABELS, IODEPTH_SUBMIT_LABELS,
};
use sinkrate_stats::{BucketUnit, LatencyRecorder};

use crate::groups::apply_group_reporting;
use sinkrate_jobspec::priority::{ioprio_class, ioprio_hint, ioprio_level};
use sinkrate_model::fio::{
    BenchConfig, BenchReport, BenchRunDoc, ConfigJob, DirectionPairs, FioDirection, FioJob,
    FioLatency, FioPriority, FioSteadyState, FioSteadyStateData, FioSync, FlushExtras, JobExtras,
    JobSeries,
};
use sinkrate_units::fio::ms_rounded;

/// C's ctime(3) form, as fio prints its times: `Thu Nov 26 23:05:31 2026`.
pub fn ctime(unix_ms: u64) -> String {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    sinkrate_model::envelope::utc(unix_ms)
        .map(|t| {
            format!(
                "{} {} {:>2} {:02}:{:02}:{:02} {}",
                DAYS[t.weekday as usize % 7],
                MONTHS[(t.month as usize + 11) % 12],
                t.day,
                t.hour,
                t.minute,
                t.second,
                t.year
            )
        })
        .unwrap_or_default()
}

/// One latency's object: its summary, the percentiles when they are on, and with json+
/// (`plus`) fio's bins beside them (fio writes bins wherever it writes percentiles).
fn latency_object(rec: &LatencyRecorder, percentiles: Option<&[f64]>, plus: bool) -> FioLatency {
    let s = rec.summary(percentiles.unwrap_or(&[]));
    FioLatency {
        min: s.min_ns,
        max: s.max_ns,
        mean: s.mean_ns,
        stddev: s.stddev_ns,
        n: s.count,
        percentile: percentiles
            .filter(|list| s.count > 0 && !list.is_empty())
            .map(|_| {
                s.percentiles_ns
                    .iter()
                    .map(|(q, v)| (format!("{q:.6}"), *v))
                    .collect()
            }),
        bins: (plus && percentiles.is_some() && s.count > 0).then(|| {
            rec.fio_bins()
                .into_iter()
                .map(|(value, count)| (value.to_string(), count))
                .collect()
        }),
    }
}

/// The percentile list for each latency, or None where the job's options leave it out
/// (`clat_percentiles`, `lat_percentiles`, `slat_percentiles`, as fio's).
#[derive(Clone, Copy)]
pub struct PercentileLists<'a> {
    pub slat: Option<&'a [f64]>,
    pub clat: Option<&'a [f64]>,
    pub lat: Option<&'a [f64]>,
}

impl<'a> PercentileLists<'a> {
    pub fn of(o: &'a sinkrate_jobspec::JobOptions) -> PercentileLists<'a> {
        let list = o.percentile_list.as_slice();
        let on = |wanted: bool| wanted.then_some(list);
        PercentileLists {
            // fio measures submission latency only where submitting and completing differ
            // (the queued engines), and has no percentiles of it elsewhere.
            slat: on(o.slat_percentiles && o.submits_apart()),
            clat: on(o.clat_percentiles),
            lat: on(o.lat_percentiles),
        }
    }
}

fn direction_object(
    d: &DirectionResult,
    lists: PercentileLists,
    group_bw: f64,
    plus: bool,
) -> FioDirection {
    let bw = d.bw_bytes_per_s();
    let bws = d.bw_summary();
    let iops = d.iops_summary();
    let kib = |v: f64| v / 1024.0;
    FioDirection {
        folded: false,
        io_bytes: d.io_bytes,
        io_kbytes: d.io_bytes / 1024,
        bw_bytes: bw.round() as u64,
        bw: (bw / 1024.0).round() as u64,
        iops: d.iops(),
        runtime: ms_rounded(d.runtime_ns),
        total_ios: d.total_ios,
        short_ios: d.short_ios,
        drop_ios: 0,
        slat_ns: latency_object(&d.slat, lists.slat, plus),
        clat_ns: latency_object(&d.clat, lists.clat, plus),
        lat_ns: latency_object(&d.lat, lists.lat, plus),
        prios: priority_objects(d, lists, plus),
        bw_min: kib(bws.min).round() as u64,
        bw_max: kib(bws.max).round() as u64,
        bw_agg: if group_bw > 0.0 {
            100.0 * bw / group_bw
        } else {
            0.0
        },
        bw_mean: kib(bws.mean),
        bw_dev: kib(bws.stddev),
        bw_samples: bws.samples,
        iops_min: iops.min.round() as u64,
        iops_max: iops.max.round() as u64,
        iops_mean: iops.mean,
        iops_stddev: iops.stddev,
        iops_samples: iops.samples,
    }
}

/// fio's `prios`: the priorities that had I/Os, when there were two or more.
fn priority_objects(d: &DirectionResult, lists: PercentileLists, plus: bool) -> Vec<FioPriority> {
    let seen = d.seen_priorities();
    if seen.len() < 2 {
        return Vec::new();
    }
    seen.into_iter()
        .map(|p| {
            // lat_percentiles makes the per-priority figure total latency, as fio's.
            let total = lists.lat.is_some();
            let list = if total { lists.lat } else { lists.clat };
            let latency = Some(latency_object(&p.latency, list, plus));
            FioPriority {
                prioclass: ioprio_class(p.ioprio),
                prio: ioprio_level(p.ioprio),
                priohint: ioprio_hint(p.ioprio),
                clat_ns: if total { None } else { latency.clone() },
                lat_ns: if total { latency } else { None },
            }
        })
        .collect()
}

fn labelled(labels: &[&str], values: &[f64; 7]) -> IndexMap<String, f64> {
    labels
        .iter()
        .zip(values)
        .map(|(l, v)| ((*l).to_string(), *v))
        .collect()
}

/// fio's latency_ns / latency_us / latency_ms distributions, over reads and writes together.
fn latency_buckets(
    job: &JobResult,
) -> (
    IndexMap<String, f64>,
    IndexMap<String, f64>,
    IndexMap<String, f64>,
) {
    let mut all = job.read.clat.clone();
    all.merge(&job.write.clat);
    all.merge(&job.trim.clat);
    let (mut ns, mut us, mut msm) = (IndexMap::new(), IndexMap::new(), IndexMap::new());
    for (bucket, share) in all.bucket_distribution() {
        let target = match bucket.unit {
            BucketUnit::Nanos => &mut ns,
            BucketUnit::Micros => &mut us,
            BucketUnit::Millis => &mut msm,
        };
        target.insert(bucket.label.to_string(), share);
    }
    (ns, us, msm)
}

/// Per group: summed bytes per second of each direction (for `bw_agg`).
pub(crate) fn group_rates(
    jobs: &[crate::groups::Reported<'_>],
) -> std::collections::HashMap<(u32, usize), f64> {
    let mut m = std::collections::HashMap::new();
    for (j, _) in jobs {
        for (d, r) in [&j.read, &j.write, &j.trim].into_iter().enumerate() {
            *m.entry((j.group, d)).or_insert(0.0) += r.bw_bytes_per_s();
        }
    }
    m
}

/// The job's `error` as fio writes it: the error that stopped it, else the first one it went
/// on past (fio 3.33 reports that too, and exits 0).
pub fn reported_error(job: &JobResult) -> i32 {
    if job.error != 0 {
        job.error
    } else {
        job.first_error
    }
}

pub fn job_object(
    job: &JobResult,
    count: u32,
    rates: &std::collections::HashMap<(u32, usize), f64>,
    plus: bool,
) -> FioJob {
    let o = &job.options;
    let p = &o.percentile_list;
    let lists = PercentileLists::of(o);
    let (latency_ns, latency_us, latency_ms) = latency_buckets(job);
    let runtime = job
        .read
        .runtime_ns
        .max(job.write.runtime_ns)
        .max(job.trim.runtime_ns);
    let rate = |d: usize| rates.get(&(job.group, d)).copied().unwrap_or(0.0);
    let folded = o.unified_rw_reporting == UnifiedReporting::Mixed;
    FioJob {
        jobname: job.name.clone(),
        groupid: job.group,
        job_start: 0,
        error: reported_error(job),
        eta: 0,
        elapsed: job.elapsed_ns.div_ceil(1_000_000_000),
        job_options: as_fio_prints(&job.written_options),
        read: FioDirection {
            folded,
            ..direction_object(&job.read, lists, rate(0), plus)
        },
        write: FioDirection {
            folded,
            ..direction_object(&job.write, lists, rate(1), plus)
        },
        trim: FioDirection {
            folded,
            ..direction_object(&job.trim, lists, rate(2), plus)
        },
        mixed: (o.unified_rw_reporting != UnifiedReporting::Split).then(|| {
            direction_object(
                &crate::mixed_direction(job),
                lists,
                rate(0) + rate(1) + rate(2),
                plus,
            )
        }),
        sync: FioSync {
            total_ios: job.sync.count().saturating_sub(job.sync_file_ranges),
            lat_ns: latency_object(&job.sync, Some(p), plus),
        },
        job_runtime: ms_rounded(runtime),
        usr_cpu: job.usr_cpu_pct,
        sys_cpu: job.sys_cpu_pct,
        ctx: job.ctx_switches,
        majf: job.major_faults,
        minf: job.minor_faults,
        iodepth_level: labelled(&IODEPTH_LABELS, &job.iodepth_level),
        iodepth_submit: labelled(&IODEPTH_SUBMIT_LABELS, &job.iodepth_submit),
        iodepth_complete: labelled(&IODEPTH_SUBMIT_LABELS, &job.iodepth_complete),
        latency_ns,
        latency_us,
        latency_ms,
        latency_depth: job
            .latency_target
            .as_ref()
            .map(|l| l.depth)
            .unwrap_or(o.iodepth),
        latency_target: o.latency_target.map(|d| d.as_nanos() as u64).unwrap_or(0),
        latency_percentile: o.latency_percentile,
        latency_window: o.latency_window.as_nanos() as u64,
        total_err: o.error_policy.continues().then_some(job.total_err),
        first_error: o.error_policy.continues().then_some(job.first_error),
        steadystate: job.steady_state.as_ref().map(|ss| FioSteadyState {
            ss: ss.criterion.split(':').next().unwrap_or("").to_string(),
            duration: o.ss_dur.map(|d| d.as_secs()).unwrap_or(0),
            attained: u8::from(ss.attained),
            criterion: ss.criterion.split(':').nth(1).unwrap_or("").to_string(),
            max_deviation: ss.max_deviation,
            slope: ss.slope,
            data: FioSteadyStateData {
                samples: ss.samples.clone(),
            },
        }),
        sinkrate: JobExtras {
            jobs_merged: count,
            ioengine: o.ioengine.fio_name().to_string(),
            error_text: job.error_text.clone(),
            flush: job.flush.as_ref().map(|f| FlushExtras {
                unwritten_at_end_bytes: f.unwritten_at_end_bytes,
                flush_ns: f.flush_ns,
                device_bytes_per_s: f.device_bytes_per_s,
                application_bytes_per_s: job.write.bw_bytes_per_s(),
            }),
            latency_target: job.latency_target.clone(),
            files_done: (job.files_done > 0).then_some(job.files_done),
            series: JobSeries {
                interval_ms: o.bw_sample_period_ns() / 1_000_000,
                read_bytes_per_s: job.read.bw_samples.clone(),
                write_bytes_per_s: job.write.bw_samples.clone(),
                read_iops: job.read.iops_samples.clone(),
                write_iops: job.write.iops_samples.clone(),
            },
            clat_histogram_ns: DirectionPairs {
                read: job.read.clat.bins(),
                write: job.write.clat.bins(),
            },
        },
    }
}

/// Options as fio's JSON lists them: as written, but a flag given without a value
/// (`time_based`) is left out, as fio 3.33 leaves it out (`time_based=1` is listed).
fn as_fio_prints<'a, I>(written: I) -> IndexMap<String, String>
where
    I: IntoIterator<Item = &'a (String, String)>,
{
    written
        .into_iter()
        .filter(|(_, value)| !value.is_empty())
        .cloned()
        .collect()
}

/// The whole run as one typed document, fio's keys inside the run envelope.
pub fn run_document(run: &BenchRun, plus: bool) -> BenchRunDoc {
    let merged = apply_group_reporting(&run.jobs);
    let rates = group_rates(&merged);
    // fio stamps a document with the time it is written (each --status-interval report,
    // and the final one at the end), not the run's start, which `started_at` keeps.
    let reported_ms = run.started_unix_ms + run.elapsed_ns / 1_000_000;
    let report = BenchReport {
        fio_version: sinkrate_model::fio_version_string(),
        timestamp: reported_ms / 1000,
        time: ctime(reported_ms),
        elapsed_ns: run.elapsed_ns,
        targets: run.targets.clone(),
        config: BenchConfig {
            jobs: run
                .jobs
                .iter()
                .map(|j| ConfigJob {
                    job_number: j.job_number,
                    name: j.name.clone(),
                    group: j.group,
                    options: serde_json::to_value(&j.options).unwrap_or_else(|e| {
                        serde_json::Value::String(format!("the options could not be written: {e}"))
                    }),
                })
                .collect(),
        },
        // fio writes one object: the options its job file's [global] (or the command line
        // before the first --name) set, as written.
        global_options: run
            .jobs
            .first()
            .map(|j| as_fio_prints(&j.written_globals))
            .unwrap_or_default(),
        jobs: merged
            .iter()
            .map(|(j, n)| job_object(j, *n, &rates, plus))
            .collect(),
        disk_util: run.disk_util.clone(),
        sampler: None,
    };
    let mut doc = Envelope::new(
        RunKind::Bench,
        run.host.clone(),
        run.started_unix_ms,
        report,
    );
    doc.timestamp_ms = reported_ms;
    doc.interrupted = run.interrupted;
    doc.notices = run.notices.clone();
    doc.warnings = run.warnings.clone();
    doc
}

#[cfg(test)]
mod ctime_tests {
    #[test]
    fn ctime_is_cs_form() {
        assert_eq!(super::ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(super::ctime(1_795_734_331_000), "Thu Nov 26 23:05:31 2026");
    }
}
