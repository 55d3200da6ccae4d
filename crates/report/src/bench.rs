//! A bench run (sinkrate's, with its rate series, histograms and sampler timeline) or fio's
//! own JSON (figures and percentiles only) as charts and a table of fio's figures.

use serde::Deserialize;
use sinkrate_model::fio::{BenchReport, FioDirection};
use sinkrate_model::timeline::Sample;

use crate::charts::{JOB_LATENCY_CDF, THROUGHPUT};
use crate::figures::{Column, Headline, Page, Style, Table, Tone};
use crate::timeline;

/// sinkrate's additions to fio's JSON, read leniently (absent from fio's own).
#[derive(Debug, Default, Deserialize)]
pub struct Extras {
    #[serde(default)]
    jobs: Vec<JobExtras>,
    #[serde(default)]
    sampler: Option<SamplerExtras>,
}

#[derive(Debug, Default, Deserialize)]
struct JobExtras {
    #[serde(default)]
    jobname: String,
    #[serde(default)]
    sinkrate: Option<JobSinkrate>,
}

#[derive(Debug, Default, Deserialize)]
struct JobSinkrate {
    #[serde(default)]
    series: Option<RateSeries>,
    #[serde(default)]
    clat_histogram_ns: Option<Histograms>,
    #[serde(default)]
    flush: Option<FlushExtras>,
}

#[derive(Debug, Default, Deserialize)]
struct FlushExtras {
    #[serde(default)]
    device_bytes_per_s: f64,
}

#[derive(Debug, Default, Deserialize)]
struct RateSeries {
    interval_ms: f64,
    #[serde(default)]
    read_bytes_per_s: Vec<f64>,
    #[serde(default)]
    write_bytes_per_s: Vec<f64>,
}

#[derive(Debug, Default, Deserialize)]
struct Histograms {
    #[serde(default)]
    read: Vec<(u64, u64)>,
    #[serde(default)]
    write: Vec<(u64, u64)>,
}

#[derive(Debug, Default, Deserialize)]
struct SamplerExtras {
    #[serde(default)]
    devices: Vec<String>,
    #[serde(default)]
    timeline: Vec<Sample>,
}

/// Reads sinkrate's additions from the document, in place (a bench run's JSON holds its
/// whole sampler timeline).
pub fn extras(value: &serde_json::Value) -> Extras {
    Extras::deserialize(value).unwrap_or_default()
}

pub fn add(page: &mut Page, run: usize, prefix: &str, out: &BenchReport, extras: &Extras) {
    for (j, job) in out.jobs.iter().enumerate() {
        let ext = extras
            .jobs
            .get(j)
            .filter(|e| e.jobname == job.jobname)
            .and_then(|e| e.sinkrate.as_ref());
        for (dir, d, hist) in [
            (
                "read",
                &job.read,
                ext.and_then(|e| e.clat_histogram_ns.as_ref())
                    .map(|h| &h.read),
            ),
            (
                "write",
                &job.write,
                ext.and_then(|e| e.clat_histogram_ns.as_ref())
                    .map(|h| &h.write),
            ),
        ] {
            if d.io_bytes == 0 {
                continue;
            }
            let label = format!("{prefix}{} {dir}", job.jobname);
            let (xs, ys) = match hist.filter(|h| !h.is_empty()) {
                Some(h) => histogram_cdf(h),
                None => percentile_cdf(d),
            };
            if xs.is_empty() {
                continue;
            }
            let x = page.column(Column::dense(xs));
            page.series(
                JOB_LATENCY_CDF,
                run,
                label,
                x,
                Column::dense(ys),
                Style::Step,
            );
        }
        if let Some(series) = ext.and_then(|e| e.series.as_ref()) {
            for (dir, rates) in [
                ("read", &series.read_bytes_per_s),
                ("write", &series.write_bytes_per_s),
            ] {
                if rates.is_empty() {
                    continue;
                }
                let step = series.interval_ms / 1e3;
                let x = page.column(Column::time((1..=rates.len()).map(|i| i as f64 * step)));
                page.series(
                    THROUGHPUT,
                    run,
                    format!("{prefix}{} {dir} (the job's rate)", job.jobname),
                    x,
                    Column::dense(rates.iter().map(|r| r / 1e6)),
                    Style::Step,
                );
            }
        }
    }
    if let Some(s) = &extras.sampler {
        timeline::add(page, run, prefix, &s.timeline, &s.devices);
    }
}

/// (ms, percent at or below) from `[highest value in bucket (ns), count]` pairs.
fn histogram_cdf(h: &[(u64, u64)]) -> (Vec<f64>, Vec<f64>) {
    let total: u64 = h.iter().map(|(_, c)| c).sum();
    if total == 0 {
        return (Vec::new(), Vec::new());
    }
    let mut seen = 0;
    h.iter()
        .map(|(v, c)| {
            seen += c;
            (*v as f64 / 1e6, 100.0 * seen as f64 / total as f64)
        })
        .unzip()
}

/// (ms, percent) from the percentiles fio wrote, with its minimum at 0% and maximum at 100%.
fn percentile_cdf(d: &FioDirection) -> (Vec<f64>, Vec<f64>) {
    let mut pts: Vec<(f64, f64)> = vec![(d.clat_ns.min as f64 / 1e6, 0.0)];
    if let Some(map) = &d.clat_ns.percentile {
        for (k, v) in map {
            if let Ok(p) = k.parse::<f64>() {
                pts.push((*v as f64 / 1e6, p));
            }
        }
    }
    pts.push((d.clat_ns.max as f64 / 1e6, 100.0));
    pts.sort_by(|a, b| a.1.total_cmp(&b.1));
    pts.into_iter().filter(|(x, _)| *x > 0.0).unzip()
}

pub fn table(out: &BenchReport) -> Table {
    let mut rows = Vec::new();
    for j in &out.jobs {
        // unified_rw_reporting=mixed: fio writes the directions summed, "mixed", alone.
        let mixed = j.mixed.iter().map(|m| ("mixed", m));
        for (dir, d) in [("read", &j.read), ("write", &j.write)]
            .into_iter()
            .chain(mixed)
        {
            if d.io_bytes == 0 || (dir == "mixed" && (j.read.io_bytes + j.write.io_bytes) > 0) {
                continue;
            }
            let p = |q| {
                d.clat_ns
                    .percentile_ns(q)
                    .map(|ns| format!("{:.3}", ns as f64 / 1e6))
                    .unwrap_or_else(|| "-".into())
            };
            rows.push(vec![
                j.jobname.clone(),
                dir.into(),
                format!("{:.1}", d.bw_bytes as f64 / 1e6),
                format!("{:.0}", d.iops),
                format!("{:.3}", d.clat_ns.mean / 1e6),
                p(50.0),
                p(99.0),
                format!("{:.3}", d.clat_ns.max as f64 / 1e6),
                format!("{:.1}", j.usr_cpu + j.sys_cpu),
            ]);
        }
    }
    Table {
        title: "Jobs (fio's figures)".into(),
        header: [
            "job",
            "direction",
            "bandwidth (MB/s)",
            "IOPS",
            "clat mean (ms)",
            "clat p50 (ms)",
            "clat p99 (ms)",
            "clat max (ms)",
            "CPU usr+sys (%)",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

pub fn headline(out: &BenchReport, ours: bool, extras: &Extras) -> Headline {
    let (mut read, mut write) = (0u64, 0u64);
    let mut mixed = 0u64;
    for j in &out.jobs {
        read += j.read.bw_bytes;
        write += j.write.bw_bytes;
        if let Some(m) = j
            .mixed
            .as_ref()
            .filter(|_| j.read.io_bytes + j.write.io_bytes == 0)
        {
            mixed += m.bw_bytes;
        }
    }
    let who = if ours {
        "sinkrate bench".to_string()
    } else {
        out.fio_version.clone()
    };
    let mut parts = Vec::new();
    if write > 0 {
        parts.push(format!("write {:.1} MB/s", write as f64 / 1e6));
    }
    if mixed > 0 {
        parts.push(format!("reads and writes {:.1} MB/s", mixed as f64 / 1e6));
    }
    if read > 0 {
        parts.push(format!("read {:.1} MB/s", read as f64 / 1e6));
    }
    let device: f64 = extras
        .jobs
        .iter()
        .filter_map(|j| j.sinkrate.as_ref()?.flush.as_ref())
        .map(|f| f.device_bytes_per_s)
        .sum();
    if device > 0.0 {
        parts.push(format!(
            "{:.1} MB/s reached the device (through the final fsync)",
            device / 1e6
        ));
    }
    Headline {
        verdict: if parts.is_empty() {
            "no I/O".into()
        } else {
            parts.join(", ")
        },
        tone: Tone::Neutral,
        lines: vec![format!(
            "{} job(s) run by {who}; rates are as the jobs saw them (buffered writes include the page cache)",
            out.jobs.len()
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_cdf_reaches_100() {
        let (x, y) = histogram_cdf(&[(1_000_000, 1), (2_000_000, 2), (4_000_000, 1)]);
        assert_eq!(x, vec![1.0, 2.0, 4.0]);
        assert_eq!(y, vec![25.0, 75.0, 100.0]);
    }
}
