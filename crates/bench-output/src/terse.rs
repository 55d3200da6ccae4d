//! fio's terse format, version 3: one semicolon-separated line per job, latencies in usec.

use sinkrate_jobspec::options::UnifiedReporting;
use sinkrate_model::{BenchRun, DirectionResult};
use sinkrate_stats::BucketUnit;

use crate::groups::apply_group_reporting;
use sinkrate_units::fio::ms_rounded;

fn us(ns: f64) -> f64 {
    ns / 1000.0
}

fn direction(
    fields: &mut Vec<String>,
    d: &DirectionResult,
    options: &sinkrate_jobspec::JobOptions,
    group_bw: f64,
) {
    let bw_kib = d.bw_bytes_per_s() / 1024.0;
    fields.push((d.io_bytes / 1024).to_string());
    fields.push(format!("{}", bw_kib.round() as u64));
    fields.push(format!("{}", d.iops().round() as u64));
    fields.push(ms_rounded(d.runtime_ns).to_string());
    for rec in [&d.slat, &d.clat] {
        let s = rec.summary(&[]);
        fields.push(format!("{}", us(s.min_ns as f64) as u64));
        fields.push(format!("{}", us(s.max_ns as f64) as u64));
        fields.push(format!("{:.6}", us(s.mean_ns)));
        fields.push(format!("{:.6}", us(s.stddev_ns)));
    }
    // fio's 20 percentile slots hold total latency's with lat_percentiles, else completion
    // latency's with clat_percentiles, else none: the list's labels (with 0 for an idle
    // direction), then `0%=0`.
    let list = options.percentile_list.as_slice();
    let (list, shown) = if options.lat_percentiles {
        (list, &d.lat)
    } else if options.clat_percentiles {
        (list, &d.clat)
    } else {
        (&[][..], &d.clat)
    };
    let s = shown.summary(list);
    for i in 0..20 {
        match (list.get(i), s.percentiles_ns.get(i)) {
            (Some(_), Some((p, v))) if s.count > 0 => {
                fields.push(format!("{p:.6}%={}", us(*v as f64) as u64))
            }
            (Some(p), _) => fields.push(format!("{p:.6}%=0")),
            (None, _) => fields.push("0%=0".into()),
        }
    }
    let s = d.lat.summary(&[]);
    fields.push(format!("{}", us(s.min_ns as f64) as u64));
    fields.push(format!("{}", us(s.max_ns as f64) as u64));
    fields.push(format!("{:.6}", us(s.mean_ns)));
    fields.push(format!("{:.6}", us(s.stddev_ns)));
    let b = d.bw_summary();
    fields.push(format!("{}", (b.min / 1024.0).round() as u64));
    fields.push(format!("{}", (b.max / 1024.0).round() as u64));
    let per = if group_bw > 0.0 {
        100.0 * d.bw_bytes_per_s() / group_bw
    } else {
        0.0
    };
    fields.push(format!("{per:.6}%"));
    fields.push(format!("{:.6}", b.mean / 1024.0));
    fields.push(format!("{:.6}", b.stddev / 1024.0));
}

pub fn render(run: &BenchRun) -> String {
    let mut out = String::new();
    let merged = apply_group_reporting(&run.jobs);
    for (job, _) in &merged {
        let mut f: Vec<String> = vec![
            "3".into(),
            sinkrate_model::fio_version_string(),
            job.name.clone(),
            job.group.to_string(),
            job.error.to_string(),
        ];
        let group = |d: usize| -> f64 {
            merged
                .iter()
                .filter(|(j, _)| j.group == job.group)
                .map(|(j, _)| j.direction(d).bw_bytes_per_s())
                .sum()
        };
        // unified_rw_reporting=mixed: the directions summed in the read slot, and no write
        // slot, as fio's terse.
        if job.options.unified_rw_reporting == UnifiedReporting::Mixed {
            let mixed = crate::mixed_direction(job);
            direction(&mut f, &mixed, &job.options, group(0) + group(1) + group(2));
        } else {
            direction(&mut f, &job.read, &job.options, group(0));
            direction(&mut f, &job.write, &job.options, group(1));
        }
        f.push(format!("{:.6}%", job.usr_cpu_pct));
        f.push(format!("{:.6}%", job.sys_cpu_pct));
        f.push(job.ctx_switches.to_string());
        f.push(job.major_faults.to_string());
        f.push(job.minor_faults.to_string());
        for v in job.iodepth_level {
            f.push(format!("{v:.1}%"));
        }
        let mut all = job.read.clat.clone();
        all.merge(&job.write.clat);
        let dist = all.bucket_distribution();
        // Terse folds the nanosecond buckets into the first microsecond bucket, as fio does.
        let ns_share: f64 = dist
            .iter()
            .filter(|(b, _)| b.unit == BucketUnit::Nanos)
            .map(|(_, s)| s)
            .sum();
        let mut first = true;
        for (b, share) in dist.iter().filter(|(b, _)| b.unit != BucketUnit::Nanos) {
            let v = if first && b.unit == BucketUnit::Micros {
                share + ns_share
            } else {
                *share
            };
            first = false;
            f.push(format!("{v:.2}%"));
        }
        // Then, as fio, each disk's utilisation.
        for d in &run.disk_util {
            f.push(d.name.clone());
            f.extend(d.counts().iter().map(u64::to_string));
            f.push(format!("{:.2}%", d.util));
        }
        out.push_str(&f.join(";"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkrate_model::JobResult;

    #[test]
    fn field_count_matches_fio_terse_v3() {
        let mut job = JobResult {
            name: "t".into(),
            ..JobResult::default()
        };
        job.read.clat.record(1500);
        job.read.total_ios = 1;
        let run = BenchRun {
            jobs: vec![job],
            ..BenchRun::default()
        };
        let line = render(&run);
        // fio 3.33 prints 121 fields for a job without disk utilisation.
        assert_eq!(line.trim_end().split(';').count(), 121, "{line}");
        let run = BenchRun {
            disk_util: vec![sinkrate_model::DiskUtil {
                name: "vda".into(),
                write_ios: 3,
                util: 48.742,
                ..Default::default()
            }],
            ..run
        };
        let line = render(&run);
        // ... and nine more for each disk.
        assert_eq!(line.trim_end().split(';').count(), 130, "{line}");
        assert!(
            line.trim_end().ends_with(";vda;0;3;0;0;0;0;0;48.74%"),
            "{line}"
        );
    }
}
