//! The sustained write rate of the storage under a directory, as the device achieved it:
//! sequential 1 MiB writes (O_DIRECT where the filesystem takes it), each offset written once
//! (no rewrite of a page that may still be dirty), the timed span closed by an fsync covering
//! every byte (and one every 8 MiB before it, so that a filesystem that routes O_DIRECT
//! through the page cache cannot bank a backlog), and the device's own written-sector
//! counter (/proc/diskstats) read around it as the independent confirmation. `check` and `record --find-max` use it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sinkrate_jobspec::{build_job_set, JobSources, SourceContext};
use sinkrate_model::check::{ProbeMethod, SustainedWrite};
use sinkrate_model::TargetFacts;

use crate::{execute, prepare, RunOptions};

/// Writes between fsyncs (1 MiB each).
const FSYNC_EVERY_MIB: u32 = 8;

/// The live system's answers to fio's reserved names in a job (`$pagesize`, `$ncpus`,
/// `$mb_memory`) and to `include` and `${VAR}`.
pub struct LiveContext;

impl SourceContext for LiveContext {
    fn read_file(&self, path: &Path) -> Result<String, String> {
        let bytes = sinkrate_sys::input::read_capped(path, sinkrate_sys::input::JOB_FILE_BYTES)
            .map_err(|e| e.to_string())?;
        sinkrate_sys::input::text(bytes)
    }
    fn env_var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
    fn reserved(&self, name: &str) -> Option<String> {
        match name {
            "pagesize" => Some(crate::host::page_size().to_string()),
            "ncpus" => Some(
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
                    .to_string(),
            ),
            "mb_memory" => crate::host::read_meminfo()
                .mem_total_bytes
                .map(|b| (b / (1 << 20)).to_string()),
            _ => None,
        }
    }
}

/// Sectors written by `devices`, in bytes, from their own counters.
fn device_written_bytes(devices: &[String]) -> Option<u64> {
    let names: Vec<&str> = devices.iter().map(String::as_str).collect();
    sinkrate_sys::disks::written_bytes(&sinkrate_sys::SysRoot::live(), &names)
}

/// How often the watch of a sustained write reads the device's counter.
const STEADY_SAMPLE: Duration = Duration::from_millis(250);

/// Whether the device's rate has held, from `samples` (seconds into the run, bytes the
/// device wrote since its start) of a write planned for `span_s`: from a third of the span
/// (2 s at least), the rate over the later half of the run (its first half second, the
/// queue filling, left out) is within 5% of the earlier half's, and the last quarter's
/// (1 s at least) within 10% of it. A card whose cache runs out, a device shared with
/// other writers or a filesystem that writes in bursts is not steady, and runs its span.
fn steady(samples: &[(f64, u64)], span_s: f64) -> bool {
    let Some(&(now, written)) = samples.last() else {
        return false;
    };
    if now < (span_s / 3.0).max(2.0) || now >= span_s {
        return false;
    }
    let from = |t: f64| samples.iter().find(|(at, _)| *at >= t).copied();
    let (Some(start), Some(middle), Some(recent)) = (
        from(0.5),
        from((0.5 + now) / 2.0),
        from(now - (now / 4.0).max(1.0)),
    ) else {
        return false;
    };
    let rate = |(t0, b0): (f64, u64), (t1, b1): (f64, u64)| {
        (t1 > t0).then(|| b1.saturating_sub(b0) as f64 / (t1 - t0))
    };
    let end = (now, written);
    match (rate(start, middle), rate(middle, end), rate(recent, end)) {
        (Some(earlier), Some(later), Some(last)) => {
            later > 0.0
                && (later - earlier).abs() <= 0.05 * earlier
                && (last - later).abs() <= 0.1 * later
        }
        _ => false,
    }
}

/// Ends a sustained write's jobs (through `run_stop`) when the user stops the run, or once
/// the devices' rate has held: every byte past that costs the card and changes no figure.
/// The thread's answer is whether it ended the run for being steady.
fn watch_steady(
    devices: Vec<String>,
    span_s: f64,
    user_stop: Arc<AtomicBool>,
    run_stop: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<bool> {
    std::thread::spawn(move || {
        let start = Instant::now();
        let base = device_written_bytes(&devices);
        let mut samples = Vec::new();
        while !done.load(Ordering::Relaxed) {
            std::thread::sleep(STEADY_SAMPLE);
            if user_stop.load(Ordering::Relaxed) {
                run_stop.store(true, Ordering::Relaxed);
                return false;
            }
            let (Some(base), Some(now)) = (base, device_written_bytes(&devices)) else {
                continue;
            };
            samples.push((start.elapsed().as_secs_f64(), now.saturating_sub(base)));
            if steady(&samples, span_s) {
                run_stop.store(true, Ordering::Relaxed);
                return true;
            }
        }
        false
    })
}

/// Why the sustained write has no figure.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeError {
    /// It could not run (a job it could not set up, every method refused).
    Failed(String),
    /// The device failed under it (EIO, or EROFS from a card or filesystem turned
    /// read-only): when, and after how many bytes.
    DeviceFailed {
        what: String,
        after_bytes: u64,
        after_s: f64,
    },
    /// A write failed for a reason of the filesystem's (ENOSPC: the card filled; a quota):
    /// the run's failure, not a method to give up for another.
    WriteFailed {
        what: String,
        after_bytes: u64,
        after_s: f64,
    },
}

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProbeError::Failed(why) => f.write_str(why),
            ProbeError::DeviceFailed {
                what,
                after_bytes,
                after_s,
            } => write!(
                f,
                "the device failed {after_s:.1} s into the sustained write, after {} written: {what}",
                sinkrate_units::product::bytes_si(*after_bytes)
            ),
            ProbeError::WriteFailed {
                what,
                after_bytes,
                after_s,
            } => write!(
                f,
                "the sustained write failed {after_s:.1} s in, after {} written: {what}",
                sinkrate_units::product::bytes_si(*after_bytes)
            ),
        }
    }
}

/// What a sustained write's error `errno` ends, or None when the buffered method is worth a
/// try: only O_DIRECT refused (EINVAL: an alignment, or a filesystem without it) is. A
/// device that fails writes fails them buffered too, and a full card or a quota fails the
/// same way, after writing to it again.
fn write_failure(
    direct: bool,
    errno: i32,
    why: &str,
    (after_bytes, after_s): (u64, f64),
) -> Option<ProbeError> {
    let what = why.to_string();
    if errno == libc::EIO || errno == libc::EROFS {
        return Some(ProbeError::DeviceFailed {
            what,
            after_bytes,
            after_s,
        });
    }
    if direct && matches!(errno, libc::EINVAL | libc::EOPNOTSUPP) {
        return None;
    }
    Some(ProbeError::WriteFailed {
        what,
        after_bytes,
        after_s,
    })
}

/// Writes for at most `seconds` (the file is sized so that no offset is written twice:
/// up to a quarter of the free space, at most 8 GiB), then fsyncs; the rate counts the
/// fsync. Ends sooner once the device's rate has held (`steady`).
pub fn sustained_write(
    dir: &Path,
    seconds: u64,
    stop: Arc<AtomicBool>,
) -> Result<SustainedWrite, ProbeError> {
    let target: TargetFacts = crate::host::target_facts(dir, false);
    let devices = crate::host::device_names(std::slice::from_ref(&target));
    let free = crate::files::free_bytes(dir).unwrap_or(u64::MAX);
    let size_mib = ((free / 4) >> 20).clamp(8, 8192);
    let memory_backed = crate::host::memory_backed_fs(dir).is_some();
    let mut tried = Vec::new();
    for direct in [true, false] {
        let before = device_written_bytes(&devices);
        let options: Vec<String> = vec![
            "--name=sustained".into(),
            "--rw=write".into(),
            "--bs=1m".into(),
            format!("--size={size_mib}m"),
            format!("--direct={}", u8::from(direct)),
            format!("--runtime={seconds}"),
            // Where the filesystem takes O_DIRECT but still goes through the page cache
            // (ext4 data=journal), or refuses it, at most FSYNC_EVERY_MIB is ever unwritten:
            // the run's time is the device's, and the final fsync stays short.
            format!("--fsync={FSYNC_EVERY_MIB}"),
            "--end_fsync=1".into(),
            format!("--directory={}", dir.display()),
        ];
        let set = build_job_set(
            &JobSources {
                files: &[],
                texts: &[],
                cli_options: &options,
                ignore_unsupported: false,
            },
            &LiveContext,
        )
        .map_err(|e| ProbeError::Failed(e.to_string()))?;
        // The jobs' own stop: the user's, or the watch's once the rate has held.
        let run_stop = Arc::new(AtomicBool::new(stop.load(Ordering::Relaxed)));
        let run_options = RunOptions {
            read_only: false,
            base_dir: dir.to_path_buf(),
            force_device_write: false,
            made_files: crate::runner::MadeFiles::Removed,
            stop: run_stop.clone(),
            show_status: crate::runner::StatusLine::Never,
            bandwidth_log: false,
            status_reports: None,
            debug: Default::default(),
            aux_dir: None,
            trigger: Default::default(),
        };
        let prepared =
            prepare(&set, &run_options).map_err(|e| ProbeError::Failed(e.to_string()))?;
        let done = Arc::new(AtomicBool::new(false));
        let watch = watch_steady(
            devices.clone(),
            seconds as f64,
            stop.clone(),
            run_stop.clone(),
            done.clone(),
        );
        let run = execute(prepared, &run_options);
        done.store(true, Ordering::Relaxed);
        let stopped_steady = watch.join().unwrap_or(false);
        let after = device_written_bytes(&devices);
        let job = run
            .jobs
            .first()
            .ok_or_else(|| ProbeError::Failed("the sustained write did not run".to_string()))?;
        if job.error != 0 {
            let why = job
                .error_text
                .clone()
                .unwrap_or_else(|| std::io::Error::from_raw_os_error(job.error).to_string());
            let after = (job.write.io_bytes, job.write.runtime_ns as f64 / 1e9);
            if let Some(failure) = write_failure(direct, job.error, &why, after) {
                return Err(failure);
            }
            tried.push(why);
            continue;
        }
        let fell_back = run.warnings.iter().any(|w| w.id == "direct.fell_back");
        // ext4 with data=journal accepts O_DIRECT and journals the data through the page
        // cache all the same.
        let journalled = target.mount_options.iter().any(|o| o == "data=journal");
        let method = if direct && !fell_back && !memory_backed && !journalled {
            ProbeMethod::Direct
        } else {
            ProbeMethod::BufferedFsynced
        };
        let bytes = job.write.io_bytes;
        let flush_ns = job.flush.as_ref().map_or(0, |f| f.flush_ns);
        let span_s = (job.write.runtime_ns + flush_ns) as f64 / 1e9;
        let device_bytes_written = before.zip(after).map(|(b, a)| a.saturating_sub(b));
        let mut notes = Vec::new();
        if direct && journalled {
            notes.push(
                "ext4 data=journal takes O_DIRECT writes through the page cache and writes every byte twice (journal, then its place): the rate counts the fsync that puts both on the device".into(),
            );
        }
        if let Some(d) = device_bytes_written {
            // Journals, metadata and other writers add to the device's count; less than
            // what was fsync'd means the figure did not reach this device.
            if (d as f64) < 0.9 * bytes as f64 {
                notes.push(format!(
                    "the device counted {:.1} MB written for {:.1} MB fsync'd: part of the data did not reach it (a cache or compression below the filesystem)",
                    d as f64 / 1e6,
                    bytes as f64 / 1e6
                ));
            } else if (d as f64) > 1.5 * bytes as f64 {
                notes.push(format!(
                    "the device counted {:.1}x the bytes written ({:.1} MB for {:.1} MB): the filesystem wrote them more than once (a journal) or other writers were busy",
                    d as f64 / bytes as f64,
                    d as f64 / 1e6,
                    bytes as f64 / 1e6
                ));
            }
        } else {
            notes.push("no block device behind this directory: the rate is not a device's".into());
        }
        return Ok(SustainedWrite {
            bytes_per_s: if span_s > 0.0 {
                bytes as f64 / span_s
            } else {
                0.0
            },
            bytes_written: bytes,
            seconds: span_s,
            method,
            device_bytes_written,
            stopped_steady,
            notes,
        });
    }
    Err(ProbeError::Failed(tried.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_o_direct_refused_is_tried_again_buffered() {
        let after = (3_000_000, 0.4);
        assert!(write_failure(true, libc::EINVAL, "refused", after).is_none());
        assert!(write_failure(true, libc::EOPNOTSUPP, "refused", after).is_none());
        // Buffered, EINVAL is the run's end: there is no method left.
        assert!(matches!(
            write_failure(false, libc::EINVAL, "x", after),
            Some(ProbeError::WriteFailed { .. })
        ));
        for errno in [libc::EIO, libc::EROFS] {
            assert!(matches!(
                write_failure(true, errno, "x", after),
                Some(ProbeError::DeviceFailed { .. })
            ));
        }
        // A card that filled is not written to a second time.
        let full = write_failure(true, libc::ENOSPC, "No space left on device", after)
            .expect("ends the run");
        assert_eq!(
            full.to_string(),
            "the sustained write failed 0.4 s in, after 3 MB written: No space left on device"
        );
    }

    /// A device's counter every 250 ms for `until` s at `rate(t)` bytes per second.
    fn counted(until: f64, rate: impl Fn(f64) -> f64) -> Vec<(f64, u64)> {
        let mut written = 0.0;
        (1..=(until * 4.0) as usize)
            .map(|k| {
                let t = k as f64 * 0.25;
                written += rate(t) * 0.25;
                (t, written as u64)
            })
            .collect()
    }

    #[test]
    fn a_steady_rate_ends_the_write_at_a_third_of_its_span() {
        // 15 s planned: steady from the start, ended at 5 s, not before.
        assert!(!steady(&counted(4.75, |_| 90e6), 15.0));
        assert!(steady(&counted(5.0, |_| 90e6), 15.0));
        // A quick check's 4 s: 2 s at least.
        assert!(!steady(&counted(1.75, |_| 90e6), 4.0));
        assert!(steady(&counted(2.0, |_| 90e6), 4.0));
        // A slow first half second (the queue filling) is left out.
        assert!(steady(
            &counted(5.0, |t| if t <= 0.5 { 10e6 } else { 90e6 }),
            15.0
        ));
        assert!(!steady(&[], 15.0));
    }

    #[test]
    fn a_rate_that_falls_or_comes_in_bursts_is_not_steady() {
        // A card's cache running out 4 s in: not steady at 5 s, nor at 6 s (the halves
        // differ); steady again once the slow rate has held long enough.
        let cliff = |t: f64| if t <= 4.0 { 90e6 } else { 20e6 };
        assert!(!steady(&counted(5.0, cliff), 15.0));
        assert!(!steady(&counted(8.0, cliff), 15.0));
        // A slow decline of 2% a second: the later half is more than 5% below the earlier.
        assert!(!steady(&counted(8.0, |t| 90e6 * (1.0 - 0.02 * t)), 15.0));
        // Bursts: 8 MiB fsync'd every 0.8 s onto a 10 MB/s card, seen in 250 ms samples.
        let bursts = |t: f64| if (t % 0.8) < 0.25 { 40e6 } else { 0.0 };
        assert!(!steady(&counted(6.0, bursts), 15.0));
        // Nothing counted: no device behind it, never steady.
        assert!(!steady(&counted(10.0, |_| 0.0), 15.0));
    }
}
