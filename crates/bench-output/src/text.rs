//! fio-style text output, plus sinkrate's honesty lines (flush, warnings).

use sinkrate_jobspec::priority::ioprio_name;
use std::fmt::Write;

use sinkrate_jobspec::options::UnifiedReporting;
use sinkrate_model::{BenchRun, DirectionResult, JobResult, IODEPTH_LABELS, IODEPTH_SUBMIT_LABELS};
use sinkrate_stats::{BucketUnit, LatencyRecorder, LatencySummary};

use crate::fio_json::ctime;
use crate::format::{count, iec, num2str, si};
use crate::groups::apply_group_reporting;
use sinkrate_units::fio::ms_rounded;

/// The unit fio's display_lat picks for a min/max/avg/stdev line: msec when all four are
/// above a million ns, usec when all four are above a thousand, else nsec.
fn unit_for(s: &LatencySummary) -> (&'static str, u64) {
    let above = |limit: u64| {
        s.min_ns > limit
            && s.max_ns > limit
            && s.mean_ns > limit as f64
            && s.stddev_ns > limit as f64
    };
    if above(1_000_000) {
        ("msec", 1_000_000)
    } else if above(1_000) {
        ("usec", 1_000)
    } else {
        ("nsec", 1)
    }
}

fn latency_line(out: &mut String, label: &str, rec: &LatencyRecorder) {
    let s = rec.summary(&[]);
    if s.count == 0 {
        return;
    }
    let (unit, div) = unit_for(&s);
    // min and max in whole units, cut as fio's integer division cuts them, in six
    // characters (num2str); mean and stdev padded to five, as fio's "%5.02f".
    let _ = writeln!(
        out,
        "{label} ({unit}): min={}, max={}, avg={:5.2}, stdev={:5.2}",
        num2str(s.min_ns / div, 6, false),
        num2str(s.max_ns / div, 6, false),
        s.mean_ns / div as f64,
        s.stddev_ns / div as f64
    );
}

/// A percentile table as fio's show_clat_percentiles lays it out: the unit from the
/// smallest and largest value shown (usec once they pass 2 us and 100 us, msec once they
/// pass 2 ms and 100 ms), each value rounded up to the unit, columns as wide as the largest
/// value (at least 5), and as many per line as fit in 73 characters.
fn percentile_table(out: &mut String, label: &str, rec: &LatencyRecorder, list: &[f64]) {
    let s = rec.summary(list);
    if s.count == 0 || list.is_empty() {
        return;
    }
    let lowest = s.percentiles_ns.iter().map(|(_, v)| *v).min().unwrap_or(0);
    let highest = s.percentiles_ns.iter().map(|(_, v)| *v).max().unwrap_or(0);
    let (unit, div) = if lowest > 2_000_000 && highest > 99_999_999 {
        ("msec", 1_000_000)
    } else if lowest > 2_000 && highest > 99_999 {
        ("usec", 1_000)
    } else {
        ("nsec", 1)
    };
    let _ = writeln!(out, "    {label} percentiles ({unit}):");
    let values: Vec<(f64, u64)> = s
        .percentiles_ns
        .iter()
        .map(|(p, v)| (*p, v.div_ceil(div)))
        .collect();
    let width = (highest / div).to_string().len().max(5);
    // fio's per_line with its default precision of 2: " %5.2fth=[%Nllu]," per cell.
    let per_line = (73 / (2 + 10 + width)).max(1);
    let rows: Vec<&[(f64, u64)]> = values.chunks(per_line).collect();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .map(|(p, v)| format!("{p:5.2}th=[{v:>width$}]"))
            .collect();
        let end = if i + 1 < rows.len() { "," } else { "" };
        let _ = writeln!(out, "     | {}{end}", cells.join(", "));
    }
}

fn direction_block(
    out: &mut String,
    name: &str,
    d: &DirectionResult,
    group_bw: f64,
    lists: crate::fio_json::PercentileLists,
) {
    if d.total_ios == 0 {
        return;
    }
    let bw = d.bw_bytes_per_s();
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={}/s ({}/s)({}/{}msec){}",
        count(d.iops()),
        iec(bw),
        si(bw),
        iec(d.io_bytes as f64),
        ms_rounded(d.runtime_ns),
        // fio's zoned-device account on its write and trim lines; sinkrate refuses
        // zonemode=zbd, so it never resets a zone.
        if name == "read" {
            ""
        } else {
            "; 0 zone resets"
        }
    );
    latency_line(out, "    slat", &d.slat);
    latency_line(out, "    clat", &d.clat);
    latency_line(out, "     lat", &d.lat);
    // fio's per-priority lines (cmdprio): completion latency, or total with lat_percentiles.
    let prios = d.seen_priorities();
    let prios = if prios.len() >= 2 { prios } else { Vec::new() };
    let (prio_kind, prio_list) = match lists.lat {
        Some(list) => ("lat", Some(list)),
        None => ("clat", lists.clat),
    };
    let prio_name =
        |p: &sinkrate_model::PriorityLatency| format!("{prio_kind} prio {}", ioprio_name(p.ioprio));
    for p in &prios {
        latency_line(out, &format!("    {}", prio_name(p)), &p.latency);
    }
    for (label, rec, list) in [
        ("slat", &d.slat, lists.slat),
        ("clat", &d.clat, lists.clat),
        ("lat", &d.lat, lists.lat),
    ] {
        if let Some(list) = list {
            percentile_table(out, label, rec, list);
        }
    }
    if let Some(list) = prio_list {
        let all: u64 = prios.iter().map(|p| p.latency.count()).sum();
        for p in &prios {
            let share = 100.0 * p.latency.count() as f64 / all.max(1) as f64;
            let label = format!("{} ({share:.2}% of IOs)", prio_name(p));
            percentile_table(out, &label, &p.latency, list);
        }
    }
    let b = d.bw_summary();
    if b.samples > 0 {
        let per = if group_bw > 0.0 {
            100.0 * bw / group_bw
        } else {
            100.0
        };
        // fio's line: KiB/s, or MiB/s once the mean passes 1 GiB/s; numbers padded to 5.
        let (unit, div) = if b.mean > 1024.0 * 1024.0 * 1024.0 {
            ("MiB", 1024.0 * 1024.0)
        } else {
            ("KiB", 1024.0)
        };
        let _ = writeln!(
            out,
            "   bw ({unit:>5}/s): min={:5}, max={:5}, per={per:.2}%, avg={:5.2}, stdev={:5.2}, samples={}",
            (b.min / div).round() as u64,
            (b.max / div).round() as u64,
            b.mean / div,
            b.stddev / div,
            b.samples
        );
        let i = d.iops_summary();
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            i.min.round() as u64,
            i.max.round() as u64,
            i.mean,
            i.stddev,
            i.samples
        );
    }
}

fn buckets(out: &mut String, job: &JobResult) {
    let mut all = job.read.clat.clone();
    all.merge(&job.write.clat);
    all.merge(&job.trim.clat);
    if all.count() == 0 {
        return;
    }
    let dist = all.bucket_distribution();
    for (unit, label) in [
        (BucketUnit::Nanos, "nsec"),
        (BucketUnit::Micros, "usec"),
        (BucketUnit::Millis, "msec"),
    ] {
        let cells: Vec<String> = dist
            .iter()
            .filter(|(b, share)| b.unit == unit && *share >= 0.01)
            .map(|(b, share)| format!("{}={share:.2}%", b.label))
            .collect();
        // Five to a line, as fio's show_lat.
        for line in cells.chunks(5) {
            let _ = writeln!(out, "  lat ({label})   : {}", line.join(", "));
        }
    }
}

fn depth_line(values: &[f64; 7], labels: &[&str]) -> String {
    labels
        .iter()
        .zip(values)
        .map(|(l, v)| format!("{l}={v:.1}%"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn render(run: &BenchRun) -> String {
    let mut out = String::new();
    let merged = apply_group_reporting(&run.jobs);
    let rates = crate::fio_json::group_rates(&merged);
    for t in &run.targets {
        let _ = writeln!(
            out,
            "target: {} on {} ({}, {}){}",
            t.path,
            t.device.as_deref().unwrap_or("?"),
            t.fs_type.as_deref().unwrap_or(if t.is_block_device {
                "block device"
            } else {
                "?"
            }),
            t.mount_options.join(","),
            t.mount_point
                .as_deref()
                .map(|m| format!(" mounted at {m}"))
                .unwrap_or_default()
        );
    }
    for (job, n) in &merged {
        let o = &job.options;
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={n}): err={:2}: pid={}: {}",
            job.name,
            job.group,
            crate::fio_json::reported_error(job),
            job.pid,
            ctime(run.started_unix_ms + job.elapsed_ns / 1_000_000)
        );
        if let Some(t) = &job.error_text {
            let _ = writeln!(out, "  error: {t}");
        }
        let rate = |d: usize| rates.get(&(job.group, d)).copied().unwrap_or(0.0);
        let lists = crate::fio_json::PercentileLists::of(o);
        if o.unified_rw_reporting != UnifiedReporting::Mixed {
            for (d, (name, r)) in [
                ("read", &job.read),
                ("write", &job.write),
                ("trim", &job.trim),
            ]
            .into_iter()
            .enumerate()
            {
                direction_block(&mut out, name, r, rate(d), lists);
            }
        }
        if o.unified_rw_reporting != UnifiedReporting::Split {
            let mixed = crate::mixed_direction(job);
            direction_block(
                &mut out,
                "mixed",
                &mixed,
                rate(0) + rate(1) + rate(2),
                lists,
            );
        }
        if job.files_done > 0 {
            let _ = writeln!(
                out,
                "  files        : {} {} operations",
                job.files_done,
                o.ioengine.fio_name()
            );
        }
        if let Some(f) = &job.flush {
            let _ = writeln!(
                out,
                "  flush        : application {}/s, device {}/s incl. final fsync of {:.1} ms{}",
                si(job.write.bw_bytes_per_s()),
                si(f.device_bytes_per_s),
                f.flush_ns as f64 / 1e6,
                f.unwritten_at_end_bytes
                    .map(|u| format!(", {} unwritten in page cache at end", iec(u as f64)))
                    .unwrap_or_default()
            );
        }
        buckets(&mut out, job);
        // After the latency buckets, with its percentiles, as fio prints it.
        if job.sync.count() > 0 {
            let _ = writeln!(out, "  fsync/fdatasync/sync_file_range:");
            latency_line(&mut out, "    sync", &job.sync);
            percentile_table(&mut out, "sync", &job.sync, &o.percentile_list);
        }
        let _ = writeln!(
            out,
            "  cpu          : usr={:.2}%, sys={:.2}%, ctx={}, majf={}, minf={}",
            job.usr_cpu_pct, job.sys_cpu_pct, job.ctx_switches, job.major_faults, job.minor_faults
        );
        let _ = writeln!(
            out,
            "  IO depths    : {}",
            depth_line(&job.iodepth_level, &IODEPTH_LABELS)
        );
        let _ = writeln!(
            out,
            "     submit    : {}",
            depth_line(&job.iodepth_submit, &IODEPTH_SUBMIT_LABELS)
        );
        let _ = writeln!(
            out,
            "     complete  : {}",
            depth_line(&job.iodepth_complete, &IODEPTH_SUBMIT_LABELS)
        );
        let _ = writeln!(
            out,
            "     issued rwts: total={},{},{},0 short={},{},{},0 dropped=0,0,0,0",
            job.read.total_ios,
            job.write.total_ios,
            job.trim.total_ios,
            job.read.short_ios,
            job.write.short_ios,
            job.trim.short_ios
        );
        if job.total_err > 0 {
            let _ = writeln!(
                out,
                "     errors    : total={}, first_error={}/<{}>",
                job.total_err,
                job.first_error,
                sinkrate_jobspec::error_policy::errno_text(job.first_error)
            );
        }
        let _ = writeln!(
            out,
            "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
            o.latency_target.map(|d| d.as_nanos()).unwrap_or(0),
            o.latency_window.as_nanos(),
            o.latency_percentile,
            job.latency_target
                .as_ref()
                .map(|l| l.depth)
                .unwrap_or(o.iodepth)
        );
        if let Some(ss) = &job.steady_state {
            let _ = writeln!(
                out,
                "  steadystate  : attained={}, criterion={}, max deviation={:.2}, slope={:.2}",
                if ss.attained { "yes" } else { "no" },
                ss.criterion,
                ss.max_deviation,
                ss.slope
            );
        }
        let _ = writeln!(out);
    }
    group_status(&mut out, &merged);
    if !run.disk_util.is_empty() {
        let _ = writeln!(out, "\nDisk stats (read/write):");
        for d in &run.disk_util {
            let [ri, wi, rm, wm, rt, wt, q] = d.counts();
            let _ = writeln!(
                out,
                "  {}: ios={ri}/{wi}, merge={rm}/{wm}, ticks={rt}/{wt}, in_queue={q}, util={:.2}%",
                d.name, d.util
            );
        }
    }
    if !run.warnings.is_empty() {
        let _ = writeln!(out);
        for w in &run.warnings {
            let job = w
                .job
                .as_deref()
                .map(|j| format!(" job '{j}'"))
                .unwrap_or_default();
            let _ = writeln!(out, "warning [{}]{job}: {}", w.id, w.text);
        }
    }
    if run.interrupted {
        let _ = writeln!(out, "\ninterrupted: these are partial results up to Ctrl-C");
    }
    out
}

fn group_status(out: &mut String, jobs: &[crate::groups::Reported<'_>]) {
    let mut groups: Vec<u32> = jobs.iter().map(|(j, _)| j.group).collect();
    groups.dedup();
    for g in groups {
        let _ = writeln!(out, "Run status group {g} (all jobs):");
        // A group whose jobs report their directions summed (unified_rw_reporting=mixed)
        // has one line, MIXED, as fio's.
        let mixed = jobs.iter().any(|(j, _)| {
            j.group == g && j.options.unified_rw_reporting == UnifiedReporting::Mixed
        });
        let summed: Vec<DirectionResult> = if mixed {
            jobs.iter()
                .filter(|(j, _)| j.group == g)
                .map(|(j, _)| crate::mixed_direction(j))
                .collect()
        } else {
            Vec::new()
        };
        let labels: &[&str] = if mixed {
            &["MIXED"]
        } else {
            &["READ", "WRITE", "TRIM"]
        };
        for (d, label) in labels.iter().enumerate() {
            let dirs: Vec<&DirectionResult> = if mixed {
                summed.iter().filter(|d| d.total_ios > 0).collect()
            } else {
                jobs.iter()
                    .filter(|(j, _)| j.group == g)
                    .map(|(j, _)| j.direction(d))
                    .filter(|d| d.total_ios > 0)
                    .collect()
            };
            if dirs.is_empty() {
                continue;
            }
            let bytes: u64 = dirs.iter().map(|d| d.io_bytes).sum();
            let max_rt = dirs.iter().map(|d| d.runtime_ns).max().unwrap_or(1).max(1);
            let min_rt = dirs.iter().map(|d| d.runtime_ns).min().unwrap_or(0);
            let agg = bytes as f64 * 1e9 / max_rt as f64;
            let lo = dirs
                .iter()
                .map(|d| d.bw_bytes_per_s())
                .fold(f64::INFINITY, f64::min);
            let hi = dirs.iter().map(|d| d.bw_bytes_per_s()).fold(0.0, f64::max);
            let _ = writeln!(
                out,
                "{label:>7}: bw={}/s ({}/s), {}/s-{}/s ({}/s-{}/s), io={} ({}), run={}-{}msec",
                iec(agg),
                si(agg),
                iec(lo),
                iec(hi),
                si(lo),
                si(hi),
                iec(bytes as f64),
                si(bytes as f64),
                ms_rounded(min_rt),
                ms_rounded(max_rt)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(min_ns: u64, max_ns: u64, mean_ns: f64, stddev_ns: f64) -> LatencySummary {
        LatencySummary {
            count: 1,
            min_ns,
            max_ns,
            mean_ns,
            stddev_ns,
            percentiles_ns: vec![],
        }
    }

    /// Lines fio 3.33 printed: its unit is usec only when all four figures pass 1,000 ns.
    #[test]
    fn latency_units_follow_fios_rule() {
        // "clat (usec): min=3, max=3266, avg=26.25, stdev=25.02"
        assert_eq!(
            unit_for(&summary(3_074, 3_266_000, 26_250.0, 25_020.0)).0,
            "usec"
        );
        // "slat (nsec): min=741, max=78987, avg=1833.65, stdev=2456.32"
        assert_eq!(
            unit_for(&summary(741, 78_987, 1_833.65, 2_456.32)).0,
            "nsec"
        );
        assert_eq!(unit_for(&summary(3_000_000, 9_000_000, 5e6, 2e6)).0, "msec");
        assert_eq!(unit_for(&summary(3_000_000, 9_000_000, 5e6, 2e5)).0, "usec");
    }

    #[test]
    fn percentile_rows_hold_as_many_as_fios() {
        let mut rec = LatencyRecorder::new();
        for v in [3_000u64, 40_000, 5_000_000_000] {
            rec.record(v);
        }
        let mut out = String::new();
        percentile_table(&mut out, "clat", &rec, &[1.0, 5.0, 10.0, 20.0, 30.0, 99.0]);
        let lines: Vec<&str> = out.lines().collect();
        // Up to 5 s in usec: 7 digits wide, three to a line (fio's (80 - 7) / (12 + 7)).
        assert_eq!(lines[0], "    clat percentiles (usec):");
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(lines[1].matches("th=[").count(), 3, "{out}");
    }
}
