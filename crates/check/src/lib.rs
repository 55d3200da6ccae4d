//! `sinkrate check` as a library session: the audit, a sustained write rate the page cache
//! cannot inflate, and a recording test judged with that rate, all in this process and read
//! through their types. The verdict is the recording session's own (one verdict type, one
//! set of rules in `sinkrate_record::verdict`); check adds no correction on top of it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use sinkrate_engine::probe::{sustained_write, ProbeError};
use sinkrate_model::audit::{Audit, AuditReport, Severity, StreamRate};
use sinkrate_model::causes::{Cause, KernelAccount};
use sinkrate_model::check::{CheckReport, CheckRun, Plan, RawWrite};
use sinkrate_model::facts::Bus;
use sinkrate_model::record::WriteMode;
use sinkrate_model::{Envelope, RunError, RunKind, Verdict};
use sinkrate_record::session::{self, EnduranceFrom, Session, SessionError};
use sinkrate_sys::root::SysRoot;

#[derive(Debug, Clone)]
pub struct CheckConfig {
    pub path: PathBuf,
    pub quick: bool,
    /// The recording test: the user's streams (a profile, or record flags after --).
    pub recording: Session,
}

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("{0}")]
    Audit(String),
    #[error("{0}")]
    Recording(#[from] SessionError),
    #[error("the check was interrupted; its test files are removed")]
    Interrupted,
}

/// A phase's name and how long it is expected to take, for whoever shows progress.
pub struct Phase<'a> {
    pub name: &'a str,
    pub expected_s: u64,
}

/// The three findings that matter most: critical first, then warn, then info.
pub fn top_findings(a: &Audit) -> Vec<&sinkrate_model::audit::Finding> {
    a.findings
        .iter()
        .filter(|f| f.severity != Severity::Ok)
        .take(3)
        .collect()
}

/// The findings whose fix acts on a cause of stalls: dirty throttling on the dirty limits,
/// the device on the card, the link and the queue, journal commits and writeback waits on
/// the mount options that force them, expired-data flushes on vm.expire.
fn addresses(cause: Cause, id: &str) -> bool {
    match cause {
        Cause::Throttled => id.starts_with("vm.dirty") || id.starts_with("bdi."),
        Cause::Device => {
            id.starts_with("card.")
                || id.starts_with("usb.")
                || id.starts_with("dev.")
                || id == "mount.discard"
                || id == "swap.same_device"
        }
        Cause::Journal => {
            matches!(id, "mount.sync" | "mount.dirsync" | "mount.atime") || id.starts_with("fs.")
        }
        Cause::WritebackWait => matches!(id, "mount.sync" | "vm.expire") || id.starts_with("bdi."),
        Cause::Cpu | Cause::Running | Cause::Unexplained => false,
    }
}

/// FIX FIRST as the recording measured it: findings that address the cause that cost the
/// most stall time come first (then the next cause's), then the rest by severity; and a note
/// when the largest measured cause has no finding. Without the kernel's account, the
/// severity order.
pub fn ranked_findings<'a>(
    findings: &'a [sinkrate_model::audit::Finding],
    kernel: Option<&KernelAccount>,
) -> (Vec<&'a sinkrate_model::audit::Finding>, Option<String>) {
    let open: Vec<&sinkrate_model::audit::Finding> = findings
        .iter()
        .filter(|f| f.severity != Severity::Ok)
        .collect();
    let Some(k) = kernel.filter(|k| k.from_kernel()) else {
        return (open.into_iter().take(3).collect(), None);
    };
    let causes = k.causes_by_time();
    let mut ranked: Vec<&sinkrate_model::audit::Finding> = Vec::new();
    for (cause, _) in &causes {
        for f in &open {
            if addresses(*cause, &f.id) && !ranked.iter().any(|r| r.id == f.id) {
                ranked.push(f);
            }
        }
    }
    for f in &open {
        if !ranked.iter().any(|r| r.id == f.id) {
            ranked.push(f);
        }
    }
    ranked.truncate(3);
    let note = causes.first().and_then(|(cause, s)| {
        (!open.iter().any(|f| addresses(*cause, &f.id))).then(|| {
            format!(
                "the stalls' largest measured cause, {} ({s:.2} s in all), is not addressed by any finding below: {}",
                cause.name(),
                cause.fix()
            )
        })
    });
    (ranked, note)
}

/// Runs the audit of the live system for `path`, judged for `bytes_per_s`.
pub fn audit(path: &Path, bytes_per_s: f64) -> Result<Audit, String> {
    sinkrate_audit::audit(
        path,
        &sinkrate_audit::Options {
            root: SysRoot::live(),
            stream_bytes_per_s: bytes_per_s,
        },
    )
}

/// What an emulated card says of itself after the test's writes (it counts them, and may
/// have worn out under them), judged again. A real card's registers do not change that fast,
/// and smartctl is not run twice.
fn refresh_health(a: &mut Audit, path: &Path, stream_bytes_per_s: f64) {
    if a.health.emulated.is_none() {
        return;
    }
    let (health, _) = sinkrate_sys::health::of_path(path);
    a.health = health;
    sinkrate_audit::judge_for(a, stream_bytes_per_s);
}

/// Why the target cannot take a write test, if it cannot.
fn unwritable(a: &Audit, path: &Path) -> Option<String> {
    let t = &a.target;
    if sinkrate_sys::mounts::PSEUDO_FS.contains(&t.fs_type.as_str()) {
        return Some(format!(
            "{} is on {}, a kernel interface, not storage",
            path.display(),
            t.fs_type
        ));
    }
    if t.mount_options.iter().any(|o| o == "ro") {
        return Some(format!(
            "{} is on a read-only mount ({})",
            path.display(),
            t.mount_point
        ));
    }
    if !path.is_dir() {
        return Some(format!("{} is not a directory", path.display()));
    }
    if !sinkrate_sys::files::writable(path) {
        return Some(format!(
            "{} is not writable by this user (run as its owner or as root)",
            path.display()
        ));
    }
    None
}

/// Notes that qualify the figures: a virtual disk, a quick test that ends before the first
/// writeback of expired data.
fn notes(a: &Audit, cfg: &CheckConfig, plan: Plan) -> Vec<String> {
    let mut notes = Vec::new();
    let physical = a
        .devices
        .iter()
        .find(|d| !matches!(d.bus, Bus::Loop | Bus::Dm | Bus::Md));
    if let Some(d) = physical.filter(|d| d.bus == Bus::Virtio) {
        notes.push(format!(
            "/dev/{} is a virtual machine's disk: the host may cache its writes, so the sustained rate can be the host's memory rather than a physical device",
            d.name
        ));
    }
    let vm = &a.memory.vm;
    if let (Some(expire), Some(every)) = (vm.dirty_expire_centisecs, vm.dirty_writeback_centisecs) {
        let first_burst_s = (expire + every) / 100;
        if cfg.recording.record.write_mode == WriteMode::Buffered && plan.record_s < first_burst_s {
            notes.push(format!(
                "the recording test ({} s) ended before the kernel's first writeback of expired data (dirty_expire {} s + writeback interval {} s), where buffered recorders often stall; run without --quick to include it",
                plan.record_s,
                expire / 100,
                every / 100
            ));
        }
    }
    notes
}

/// The report of a check that could not write at all: a failed verdict with the reason, and
/// the audit, which still applies.
fn not_writable(
    cfg: &CheckConfig,
    plan: Plan,
    a: Audit,
    why: String,
    started: Instant,
    started_ms: u64,
) -> CheckRun {
    let stream = StreamRate {
        label: cfg.recording.label.clone(),
        bytes_per_s: cfg.recording.record.requested_bytes_per_s(),
    };
    let what = format!("{why}: no write test is possible; the audit still applies");
    let report = CheckReport {
        verdict: Verdict::Failed,
        exit_code: Verdict::Failed.exit_code(),
        elapsed_s: started.elapsed().as_secs_f64(),
        quick: cfg.quick,
        stream: stream.clone(),
        headroom: None,
        raw_write: RawWrite {
            bytes_per_s: None,
            direct: false,
            method: None,
            seconds: plan.sustained_s,
            measured: None,
            error: Some("the target cannot be written".into()),
        },
        top_findings: top_findings(&a).iter().map(|f| f.id.to_string()).collect(),
        audit: AuditReport {
            audit: a,
            stream,
            sysroot: None,
        },
        record: None,
        device_bytes_written: None,
        notes: Vec::new(),
        report_file: None,
    };
    enveloped(report, started_ms, Some(RunError { what, at_s: None }))
}

/// A check's report in the run envelope, with the error that made it fail, if any.
fn enveloped(report: CheckReport, started_ms: u64, error: Option<RunError>) -> CheckRun {
    let mut run = Envelope::new(
        RunKind::Check,
        sinkrate_sys::host::host_facts(),
        started_ms,
        report,
    );
    run.error = error;
    run
}

/// The whole check. `phase` hears of each phase as it starts.
pub fn run(
    cfg: &CheckConfig,
    stop: Arc<AtomicBool>,
    phase: &mut dyn FnMut(Phase),
) -> Result<CheckRun, CheckError> {
    let started = Instant::now();
    let started_ms = sinkrate_sys::host::unix_ms_now();
    let plan = Plan::of(cfg.quick);
    let mut recording = cfg.recording.clone();
    recording.record.dir = cfg.path.clone();
    recording.record.duration = std::time::Duration::from_secs(plan.record_s);
    let requested = recording.record.requested_bytes_per_s();
    let mut a = audit(&cfg.path, requested).map_err(CheckError::Audit)?;
    if let Some(why) = unwritable(&a, &cfg.path) {
        return Ok(not_writable(cfg, plan, a, why, started, started_ms));
    }
    // Every refusal of the recording comes before the first byte of the sustained write.
    // (its target resolved once, for the recording below too)
    let checked = session::preflight(&recording)?;
    phase(Phase {
        name: "sustained write",
        expected_s: plan.sustained_s + 1,
    });
    // Memory has no sustained rate worth a figure, and the probe would fill RAM with it.
    let sustained = if sinkrate_sys::mounts::is_storage(&a.target.fs_type) {
        sustained_write(&cfg.path, plan.sustained_s, stop.clone())
    } else {
        Err(ProbeError::Failed(format!(
            "{} is {}, memory rather than a device: a sustained rate there would be RAM's",
            a.target.mount_point, a.target.fs_type
        )))
    };
    if stop.load(Ordering::Relaxed) {
        return Err(CheckError::Interrupted);
    }
    // A device that failed under the sustained write has answered the question, and a card
    // that filled under it (another program's files) leaves no room to answer it: no
    // recording is tried on either.
    if let Err(failure @ (ProbeError::DeviceFailed { .. } | ProbeError::WriteFailed { .. })) =
        &sustained
    {
        if matches!(failure, ProbeError::DeviceFailed { .. }) {
            refresh_health(&mut a, &cfg.path, requested);
        }
        let why = failure.to_string();
        let mut run = not_writable(cfg, plan, a, why.clone(), started, started_ms);
        run.result.raw_write.error = Some(why.clone());
        run.error = Some(RunError {
            what: why,
            at_s: None,
        });
        return Ok(run);
    }
    let sustained = sustained.map_err(|e| e.to_string());
    let raw_write = match sustained {
        Ok(m) => RawWrite {
            bytes_per_s: Some(m.bytes_per_s),
            direct: m.method == sinkrate_model::check::ProbeMethod::Direct,
            method: Some(m.method.label().to_string()),
            seconds: plan.sustained_s,
            measured: Some(m),
            error: None,
        },
        Err(e) => RawWrite {
            bytes_per_s: None,
            direct: false,
            method: None,
            seconds: plan.sustained_s,
            measured: None,
            error: Some(e),
        },
    };
    recording.sustained_bytes_per_s = raw_write.bytes_per_s;
    // A drive's SMART account, read by the audit, is the recording's endurance when the
    // user gave none (smartctl is not run a second time); an emulated card's is read when
    // the recording starts, after the sustained write's bytes.
    if recording.endurance == EnduranceFrom::Device && a.health.emulated.is_none() {
        recording.endurance = EnduranceFrom::Known(a.health.remaining_endurance());
    }
    // The card's claimed class is held to the rate just measured.
    if raw_write.bytes_per_s.is_some() {
        a.measured_write_bytes_per_s = raw_write.bytes_per_s;
        sinkrate_audit::judge_for(&mut a, requested);
    }
    phase(Phase {
        name: &format!("recording test ({})", recording.label),
        expected_s: plan.record_s + 2,
    });
    let record = session::run_checked(&recording, checked, stop.clone(), None)?;
    if stop.load(Ordering::Relaxed) || record.interrupted {
        return Err(CheckError::Interrupted);
    }
    let verdict = record.result.verdict;
    refresh_health(&mut a, &cfg.path, requested);
    let mut notes = notes(&a, cfg, plan);
    let (ranked, unaddressed) = ranked_findings(&a.findings, Some(&record.result.kernel));
    let ranked: Vec<String> = ranked.iter().map(|f| f.id.to_string()).collect();
    notes.extend(unaddressed);
    if let Some(m) = &raw_write.measured {
        notes.extend(m.notes.iter().cloned());
    }
    // What the check cost the card: both phases' bytes, by the device's count.
    let device_bytes_written = match (
        raw_write
            .measured
            .as_ref()
            .and_then(|m| m.device_bytes_written),
        record.result.totals.device_bytes_written,
    ) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    let report = CheckReport {
        verdict,
        exit_code: verdict.exit_code(),
        elapsed_s: started.elapsed().as_secs_f64(),
        quick: cfg.quick,
        stream: StreamRate {
            label: recording.label.clone(),
            bytes_per_s: requested,
        },
        headroom: record
            .result
            .headroom
            .filter(|_| raw_write.bytes_per_s.is_some()),
        raw_write,
        top_findings: ranked,
        audit: AuditReport {
            audit: a,
            stream: StreamRate {
                label: recording.label.clone(),
                bytes_per_s: requested,
            },
            sysroot: None,
        },
        device_bytes_written,
        record: Some(record.clone()),
        notes,
        report_file: None,
    };
    let error = record.error.clone().map(|e| RunError {
        what: e.what,
        at_s: e.at_s,
    });
    let unmeasured = report.raw_write.error.clone();
    let mut run = enveloped(report, started_ms, error);
    // A verdict without the device's own rate rests on the recording test alone: said
    // where scripts read it, and no headroom is given.
    if let Some(why) = unmeasured {
        run.warnings.push(sinkrate_model::Warning {
            id: "check.sustained_not_measured".into(),
            job: None,
            text: format!(
                "the sustained write did not run ({why}): the verdict rests on the recording test alone, and no headroom was measured"
            ),
        });
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkrate_model::causes::CauseSeconds;

    fn finding(id: &'static str, severity: Severity) -> sinkrate_model::audit::Finding {
        sinkrate_model::audit::Finding {
            id: id.into(),
            severity,
            title: id.to_string(),
            evidence: String::new(),
            why: String::new(),
            fix: Default::default(),
            tradeoff: None,
        }
    }

    fn measured(seconds: CauseSeconds) -> KernelAccount {
        KernelAccount {
            stall_seconds: seconds,
            ..Default::default()
        }
    }

    #[test]
    fn the_cause_that_cost_the_most_ranks_its_findings_first() {
        let findings = vec![
            finding("card.class_below_stream", Severity::Critical),
            finding("mount.atime", Severity::Warn),
            finding("vm.dirty", Severity::Warn),
        ];
        let ids = |v: Vec<&sinkrate_model::audit::Finding>| -> Vec<String> {
            v.iter().map(|f| f.id.to_string()).collect()
        };
        // Throttling cost the most: vm.dirty leads, then the device's, then the rest.
        let k = measured(CauseSeconds {
            throttled_s: 3.0,
            device_s: 0.5,
            ..Default::default()
        });
        let (ranked, note) = ranked_findings(&findings, Some(&k));
        assert_eq!(
            ids(ranked),
            ["vm.dirty", "card.class_below_stream", "mount.atime"]
        );
        assert_eq!(note, None);
        // Without the kernel's account: severity order.
        let (ranked, _) = ranked_findings(&findings, Some(&KernelAccount::absent()));
        assert_eq!(
            ids(ranked),
            ["card.class_below_stream", "mount.atime", "vm.dirty"]
        );
        // A writer starved of CPU: no finding addresses it, and the note says so.
        let k = measured(CauseSeconds {
            cpu_s: 2.0,
            throttled_s: 0.1,
            ..Default::default()
        });
        let (ranked, note) = ranked_findings(&findings, Some(&k));
        assert_eq!(ids(ranked)[0], "vm.dirty");
        let note = note.expect("a note");
        assert!(
            note.contains("waiting for a CPU") && note.contains("not addressed"),
            "{note}"
        );
    }
}
