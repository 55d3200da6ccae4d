//! Whether a job set fits this process before any file is made: the memory its jobs hold
//! at once against what the host has available, and the files they hold open against the
//! open-file limit (raised to the hard limit when that is enough, as a process may).

use sinkrate_jobspec::options::Engine;
use sinkrate_jobspec::{max_block_size, Job};

use crate::error::EngineError;
use crate::files::PlannedFile;
use sinkrate_units::fio::bytes_iec;

/// What one job holds besides its I/O buffers and histograms: its thread's stack pages,
/// its state and its result.
const PER_JOB_BASE_BYTES: u64 = 64 * 1024;
/// One latency histogram in use: made on first use, it grows with the largest latency
/// seen, to 112 KiB for 10 ms and 270 KiB for an hour. 2,000 write jobs of 64 KiB measured
/// 165 KiB per job in all.
const PER_HISTOGRAM_BYTES: u64 = 128 * 1024;

/// Descriptors the process holds for itself (standard streams, /proc readers, the sampler).
const PROCESS_DESCRIPTORS: u64 = 64;
/// The share of MemAvailable a run may plan to take: the rest is the page cache's, which
/// the run writes through.
const AVAILABLE_SHARE: f64 = 0.8;

/// The most memory and descriptors any stonewall segment of the set holds at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    pub jobs: u64,
    pub memory_bytes: u64,
    pub descriptors: u64,
    /// Of `memory_bytes`, the memory page_fault jobs map and fill.
    pub mapped_bytes: u64,
}

/// One job's memory: its I/O buffers (one per I/O in flight, each of the largest block
/// size, and the 1 MiB chunk that lays out its files when it reads or overwrites them),
/// its latency histograms (submission, completion and total per direction, and one for
/// syncs) and the rest of its state.
fn job_bytes(job: &Job) -> u64 {
    let o = &job.options;
    // A job that only writes makes its files as it goes: no chunk to lay them out.
    let lays_out = o.rw.reads() || o.overwrite || o.ioengine == Engine::Mmap;
    let layout_chunk: u64 = if lays_out { 1 << 20 } else { 0 };
    let directions = u64::from(o.rw.reads()) + u64::from(o.rw.writes()) + u64::from(o.rw.trims());
    let histograms = 3 * directions.max(1) + 1;
    let in_flight = if o.ioengine.is_async() {
        u64::from(o.iodepth.max(1))
    } else {
        1
    };
    in_flight
        .saturating_mul(max_block_size(o))
        .saturating_add(layout_chunk)
        .saturating_add(histograms * PER_HISTOGRAM_BYTES)
        .saturating_add(PER_JOB_BASE_BYTES)
}

/// Descriptors a job holds besides its files: an async engine's ring (or context) and
/// eventfd, and one per log file it writes.
fn other_descriptors(job: &Job) -> u64 {
    let o = &job.options;
    let engine = if o.ioengine.is_async() { 2 } else { 0 };
    let logs = u64::from(o.write_bw_log.is_some())
        + u64::from(o.write_iops_log.is_some())
        + 3 * u64::from(o.write_lat_log.is_some())
        + u64::from(o.write_hist_log.is_some());
    engine + logs
}

/// The largest stonewall segment's needs (jobs in a segment run at once; the next starts
/// after they end).
pub fn needs(jobs: &[(Job, Vec<PlannedFile>)]) -> Needs {
    let none = Needs {
        jobs: 0,
        memory_bytes: 0,
        descriptors: 0,
        mapped_bytes: 0,
    };
    let mut worst = none;
    let mut segment = none;
    for (i, (job, files)) in jobs.iter().enumerate() {
        if i > 0 && job.options.stonewall {
            segment = none;
        }
        segment.jobs += 1;
        // page_fault's "file" is memory the job maps and may touch all of.
        let mapped = if job.options.ioengine == Engine::PageFault {
            files.iter().map(PlannedFile::needed_size).sum()
        } else {
            0
        };
        segment.mapped_bytes = segment.mapped_bytes.saturating_add(mapped);
        segment.memory_bytes = segment
            .memory_bytes
            .saturating_add(job_bytes(job))
            .saturating_add(mapped);
        // File-operation engines (filecreate, filestat, ...) hold one file at a time.
        let open_at_once = if job.options.ioengine.is_file_operation() {
            1
        } else {
            files.len() as u64
        };
        segment.descriptors += open_at_once + other_descriptors(job);
        worst.jobs = worst.jobs.max(segment.jobs);
        if segment.memory_bytes > worst.memory_bytes {
            worst.memory_bytes = segment.memory_bytes;
            worst.mapped_bytes = segment.mapped_bytes;
        }
        worst.descriptors = worst.descriptors.max(segment.descriptors);
    }
    worst
}

/// Refuses a set whose jobs would not fit in `available_bytes` (MemAvailable).
pub fn check_memory(n: &Needs, available_bytes: u64) -> Result<(), EngineError> {
    let allowed = (available_bytes as f64 * AVAILABLE_SHARE) as u64;
    if n.memory_bytes > allowed {
        let mapped = if n.mapped_bytes > 0 {
            format!(
                ", and {} that ioengine=page_fault maps",
                bytes_iec(n.mapped_bytes as f64)
            )
        } else {
            String::new()
        };
        let lower = if n.mapped_bytes > 0 {
            "size= / bs= / iodepth="
        } else {
            "bs= / iodepth="
        };
        return Err(EngineError::Refused(format!(
            "{} job(s) running at once need about {} of memory (block size x iodepth of I/O buffers each, their latency histograms{mapped}), more than {:.0}% of the {} available; run fewer jobs at once (numjobs=, stonewall) or lower {lower}",
            n.jobs,
            bytes_iec(n.memory_bytes as f64),
            AVAILABLE_SHARE * 100.0,
            bytes_iec(available_bytes as f64)
        )));
    }
    Ok(())
}

/// `rlim_t` is 32 bits wide on 32-bit glibc targets (armv7) and 64 elsewhere.
#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
fn as_rlim(v: u64) -> libc::rlim_t {
    v.min(libc::rlim_t::MAX as u64) as libc::rlim_t
}

/// Makes room for the set's open files: raises this process's soft limit up to its hard
/// limit when that is enough, and refuses when it is not.
pub fn ensure_descriptors(n: &Needs) -> Result<(), EngineError> {
    let want = n.descriptors + PROCESS_DESCRIPTORS;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into `limit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Ok(());
    }
    if as_rlim(want) <= limit.rlim_cur {
        return Ok(());
    }
    if as_rlim(want) <= limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: as_rlim(want),
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads one valid rlimit; raising the soft limit up to the hard
        // one is allowed to any process.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(());
        }
    }
    Err(EngineError::Refused(format!(
        "{} job(s) running at once hold {} files open, more than this process may open (ulimit -n {}, hard limit {}); use fewer files (nrfiles=, numjobs=) or raise the limit (ulimit -n)",
        n.jobs, n.descriptors, limit.rlim_cur, limit.rlim_max
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs_of(memory_bytes: u64) -> Needs {
        Needs {
            jobs: 10_000,
            memory_bytes,
            descriptors: 0,
            mapped_bytes: 0,
        }
    }

    #[test]
    fn a_set_that_fits_in_available_memory_passes_and_one_that_does_not_is_refused() {
        assert!(check_memory(&needs_of(1 << 30), 4 << 30).is_ok());
        let e = check_memory(&needs_of(30 << 30), 24 << 30)
            .expect_err("refused")
            .to_string();
        assert!(e.contains("10000 job(s)"), "{e}");
        assert!(e.contains("30.0GiB"), "{e}");
        assert!(e.contains("24.0GiB available"), "{e}");
        assert!(!e.contains("page_fault"), "{e}");
    }

    #[test]
    fn a_refusal_names_the_memory_page_fault_jobs_map() {
        let n = Needs {
            mapped_bytes: 20 << 30,
            ..needs_of(21 << 30)
        };
        let e = check_memory(&n, 24 << 30).expect_err("refused").to_string();
        assert!(
            e.contains("and 20.0GiB that ioengine=page_fault maps"),
            "{e}"
        );
        assert!(e.contains("lower size= / bs= / iodepth="), "{e}");
    }
}
