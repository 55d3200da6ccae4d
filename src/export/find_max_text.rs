//! `record --find-max` as text: the largest value that kept up, against the device's raw rate.

use anyhow::Result;
use sinkrate_model::record::{FindMaxReport, Searched};

use super::Exporter;

pub struct FindMaxText;

impl Exporter<FindMaxReport> for FindMaxText {
    fn export(&self, r: &FindMaxReport) -> Result<Vec<u8>> {
        Ok(text(r).into_bytes())
    }
}

fn text(r: &FindMaxReport) -> String {
    let value = |v: f64| {
        if r.what == Searched::Streams {
            format!("{}", v as u64)
        } else {
            format!("{v:.2}")
        }
    };
    let raw = r.raw_direct_write_bytes_per_s;
    let duration = format!("{:.0}s", r.probe_duration.as_secs_f64());
    match (r.max, r.max_requested_bytes_per_s) {
        (Some(best), Some(rate)) => format!(
            "largest {} that keeps up for {duration}: {}{} ({:.1} MB/s of frames); raw direct sequential write: {:.1} MB/s ({:.0}%), {} probes\n",
            r.what.name(),
            if r.at_limit { "at least " } else { "" },
            value(best),
            rate / 1e6,
            raw / 1e6,
            if raw > 0.0 { 100.0 * rate / raw } else { 0.0 },
            r.probes.len()
        ) + if r.at_limit { "(64 streams is the most this tool runs)\n" } else { "" },
        _ => format!(
            "no {} tried keeps up for {duration} (the smallest: {}); raw direct sequential write: {:.1} MB/s\n",
            r.what.name(),
            r.probes.iter().map(|p| p.value).fold(f64::INFINITY, f64::min),
            raw / 1e6
        ),
    }
}
