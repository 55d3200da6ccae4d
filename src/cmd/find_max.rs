//! `sinkrate record --find-max streams|bitrate|fps`: the device's raw rate, then the search
//! (library code in the record crate), then its result rendered.

use std::process::ExitCode;

use anyhow::{anyhow, Result};
use sinkrate_model::record::{FindMaxReport, Searched};
use sinkrate_model::{Envelope, RunKind};
use sinkrate_record::find_max::{search, SearchError};
use sinkrate_record::session::Session;

use crate::cli::values::OutputFormat;
use crate::cli::RecordArgs;
use crate::export::{Exporter, Json};

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

pub fn run(args: &RecordArgs, session: Session, what: Searched) -> Result<ExitCode> {
    if what != Searched::Bitrate
        && what != Searched::Speed
        && args.fps.is_none()
        && args.frame_size.is_none()
        && args.bitrate.is_none()
    {
        return Err(anyhow!(SearchError::NeedsCustomStream(what.name())));
    }
    sinkrate_record::find_max::start_value(&session, what).map_err(|e| anyhow!(e))?;
    sinkrate_record::session::preflight(&session).map_err(super::record::refusal)?;
    let stop = crate::interrupt_flag()?;
    let started = sinkrate_sys::host::unix_ms_now();
    let raw = sinkrate_engine::probe::sustained_write(&args.dir, 5, stop.clone())
        .map_err(|e| anyhow!("measuring the device's raw write rate: {e}"))?;
    eprintln!(
        "sinkrate: raw sequential write rate ({}): {:.1} MB/s",
        raw.method.label(),
        raw.bytes_per_s / 1e6
    );
    let report = search(&session, what, raw.bytes_per_s, stop, &mut |p| {
        eprintln!(
            "sinkrate: probe {}={:.2}: {} ({:.1} MB/s requested)",
            what.name(),
            p.value,
            p.verdict.key(),
            p.requested_bytes_per_s / 1e6
        )
    });
    let report = match report {
        Err(SearchError::Interrupted) => {
            eprintln!("sinkrate: the search was interrupted; its test files are removed");
            return Ok(ExitCode::from(130));
        }
        other => other.map_err(|e| anyhow!(e))?,
    };
    let body = match args.out.output_format {
        OutputFormat::Json => {
            let mut report = report;
            report.target = Some(sinkrate_sys::host::target_facts(&args.dir, false));
            let run = Envelope::new(
                RunKind::FindMax,
                sinkrate_sys::host::host_facts(),
                started,
                report,
            );
            Json.export(&run)?
        }
        OutputFormat::Text => text(&report).into_bytes(),
    };
    args.out.write(&body)?;
    Ok(ExitCode::SUCCESS)
}
