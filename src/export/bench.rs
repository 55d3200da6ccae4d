//! `sinkrate bench`'s formats behind the exporter interface: fio's normal text (with one line
//! of what the page cache and the devices did), fio's JSON and json+ as typed documents, and
//! fio's terse lines. The renderers themselves live in `crates/report`, a format a file.

use std::time::Duration;

use anyhow::Result;
use sinkrate_model::fio::BenchSampler;
use sinkrate_model::timeline::Summary;
use sinkrate_model::BenchRun;
use sinkrate_sampler::SamplerOutput;

use super::Exporter;

/// A finished bench run with what the sampler saw meanwhile (its output, interval, summary).
pub struct BenchResult<'a> {
    pub run: &'a BenchRun,
    pub sampled: Option<(&'a SamplerOutput, Duration, &'a Summary)>,
    /// The run's notices worth saying (not those fio would keep quiet about): the text's
    /// closing lines.
    pub notes: &'a [String],
}

pub struct BenchText;
pub struct BenchJson {
    /// json+: the latency histograms' bins too.
    pub plus: bool,
}
pub struct BenchTerse;

impl Exporter<BenchResult<'_>> for BenchText {
    fn export(&self, r: &BenchResult<'_>) -> Result<Vec<u8>> {
        let mut out = sinkrate_bench_output::text::render(r.run);
        if let Some((s, _, summary)) = r.sampled {
            out.push_str(&sampler_line(s, summary));
        }
        for n in r.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        Ok(out.into_bytes())
    }
}

impl Exporter<BenchResult<'_>> for BenchJson {
    fn export(&self, r: &BenchResult<'_>) -> Result<Vec<u8>> {
        let mut doc = sinkrate_bench_output::fio_json::run_document(r.run, self.plus);
        if let Some((s, interval, summary)) = r.sampled {
            doc.result.sampler = Some(BenchSampler {
                interval_ns: interval.as_nanos() as u64,
                devices: s.devices.clone(),
                notes: s.notes.clone(),
                summary: summary.clone(),
                timeline: s.timeline.clone(),
            });
        }
        super::Json.export(&doc)
    }
}

impl Exporter<BenchResult<'_>> for BenchTerse {
    fn export(&self, r: &BenchResult<'_>) -> Result<Vec<u8>> {
        Ok(sinkrate_bench_output::terse::render(r.run).into_bytes())
    }
}

/// One line under the fio-style output: what the page cache and the device did meanwhile.
fn sampler_line(s: &SamplerOutput, sum: &Summary) -> String {
    let gb = |b: Option<u64>| {
        b.map(|v| format!("{:.2} GB", v as f64 / 1e9))
            .unwrap_or_else(|| "?".into())
    };
    let throttled = if sum.throttled_samples == 0 {
        "writers never throttled".to_string()
    } else {
        format!("writers THROTTLED for {:.2} s", sum.throttled_seconds)
    };
    format!(
        "\npage cache ({} samples): peak dirty+writeback {}{}, least MemAvailable {}, {throttled}{}\n",
        sum.samples,
        gb(sum.peak_dirty_writeback_bytes),
        sum.peak_ceiling_pct.map(|p| format!(" ({p:.0}% of the freerun ceiling)")).unwrap_or_default(),
        gb(sum.min_mem_available_bytes),
        sum.device_write_bytes_per_s_max
            .map(|w| format!("; {} wrote up to {:.1} MB/s", s.devices.join("+"), w / 1e6))
            .unwrap_or_default()
    )
}

/// `--parse-only`: each resolved job in one line.
pub fn describe_jobs(set: &sinkrate_jobspec::JobSet) -> String {
    let mut out = String::new();
    for (i, job) in set.jobs.iter().enumerate() {
        let o = &job.options;
        let size = match o.size {
            Some(sinkrate_jobspec::options::SizeSpec::Bytes(b)) => format!("{b}"),
            Some(sinkrate_jobspec::options::SizeSpec::Percent(p)) => format!("{p}%"),
            None => "(file size)".into(),
        };
        out.push_str(&format!(
            "job {} '{}' (group {}, clone {}): rw={} bs={},{} ioengine={} iodepth={} size={} direct={} runtime={} time_based={} numjobs={}\n",
            i + 1,
            o.name,
            job.group,
            job.clone_index,
            o.rw.fio_name(),
            o.bs[0],
            o.bs[1],
            o.ioengine.fio_name(),
            o.iodepth,
            size,
            u8::from(o.direct),
            o.runtime.map(|r| format!("{}s", r.as_secs_f64())).unwrap_or_else(|| "-".into()),
            u8::from(o.time_based),
            o.numjobs,
        ));
    }
    out
}
