//! `sinkrate record --find-max streams|bitrate|fps`: the device's raw rate, then the search
//! (library code in the record crate), then its result rendered.

use std::process::ExitCode;

use anyhow::{anyhow, Result};
use sinkrate_model::record::Searched;
use sinkrate_model::{Envelope, RunKind};
use sinkrate_record::find_max::{search, SearchError};
use sinkrate_record::session::Session;

use crate::cli::RecordArgs;
use crate::export::plan::Style;

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
    let mut report = report;
    report.target = Some(sinkrate_sys::host::target_facts(&args.dir, false));
    let run = Envelope::new(
        RunKind::FindMax,
        sinkrate_sys::host::host_facts(),
        started,
        report,
    );
    args.out.print(&run, &Style::default())?;
    Ok(ExitCode::SUCCESS)
}
