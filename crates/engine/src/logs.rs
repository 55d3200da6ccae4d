//! fio's log files (`write_bw_log`, `write_lat_log`, `write_iops_log`): one line per entry,
//! `time_ms, value, direction, block_size, [offset,] priority` (the offset with `log_offset`;
//! the priority is the I/O's ioprio in hex with `log_prio`, else 1 for a real-time one and 0
//! otherwise), so fio's plotting tools (fio2gnuplot, fiologparser) read them unchanged.
//! Without `log_avg_msec` every I/O has its entry in each log, as fio's: bandwidth is the
//! I/O's bytes over its completion latency (fio's bytes * 10^6 / ns), IOPS is 1. Latency
//! values are in ns, bandwidth in KiB/s.

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

use sinkrate_jobspec::priority::{ioprio_class, CLASS_RT};
use sinkrate_jobspec::JobOptions;

use crate::error::EngineError;

/// Bytes gathered before a write: whole lines only, so that logs several jobs append to
/// (per_job_logs=0) never interleave mid-line.
const FLUSH_AT: usize = 256 * 1024;

pub struct LogFile {
    path: PathBuf,
    out: File,
    pending: Vec<u8>,
    /// The first write error, reported when the log is finished.
    failed: Option<std::io::Error>,
    with_offset: bool,
    with_prio: bool,
}

impl LogFile {
    /// A job's own log, or with `shared` one appended to, as fio's per_job_logs=0.
    pub(crate) fn create(
        path: PathBuf,
        with_offset: bool,
        with_prio: bool,
        shared: bool,
    ) -> Result<LogFile, EngineError> {
        let opened = if shared {
            sinkrate_sys::output::append(&path)
        } else {
            sinkrate_sys::output::create(&path)
        };
        let out = opened.map_err(|e| EngineError::io(&path, e))?;
        Ok(LogFile {
            path,
            out,
            pending: Vec::with_capacity(FLUSH_AT + 128),
            failed: None,
            with_offset,
            with_prio,
        })
    }

    #[inline]
    /// One line; `d` is fio's direction code (0 read, 1 write, 2 trim), `ioprio` the I/O's
    /// priority (0 for averaged entries, as fio's).
    pub fn entry(&mut self, time_ms: u64, value: u64, d: u8, bs: u64, offset: u64, ioprio: u16) {
        let line = &mut self.pending;
        // Writing into a Vec cannot fail.
        let _ = write!(line, "{time_ms}, {value}, {d}, {bs}, ");
        if self.with_offset {
            let _ = write!(line, "{offset}, ");
        }
        let _ = if self.with_prio {
            writeln!(line, "0x{ioprio:04x}")
        } else {
            writeln!(line, "{}", u8::from(ioprio_class(ioprio) == CLASS_RT))
        };
        if self.pending.len() >= FLUSH_AT {
            self.flush();
        }
    }

    /// One line of another shape (the histogram log's), written by `write_line`.
    pub(crate) fn line(&mut self, write_line: impl FnOnce(&mut Vec<u8>)) {
        write_line(&mut self.pending);
        if self.pending.len() >= FLUSH_AT {
            self.flush();
        }
    }

    fn flush(&mut self) {
        // A failed log write must not stop the measurement; it is reported at the end.
        if let Err(e) = self.out.write_all(&self.pending) {
            self.failed.get_or_insert(e);
        }
        self.pending.clear();
    }

    pub fn finish(mut self) -> Result<PathBuf, EngineError> {
        self.flush();
        match self.failed.take() {
            Some(e) => Err(EngineError::io(&self.path, e)),
            None => Ok(self.path),
        }
    }
}

/// The logs one job writes.
#[derive(Default)]
pub struct JobLogs {
    pub bw: Option<LogFile>,
    pub iops: Option<LogFile>,
    pub lat: Option<LogFile>,
    pub clat: Option<LogFile>,
    pub slat: Option<LogFile>,
    /// Averaging window in ms; 0 logs every I/O.
    pub avg_msec: u64,
    /// log_max_value: an averaged latency entry is the window's largest, not its mean.
    pub max_value: bool,
    /// Added to every timestamp: the run start in Unix ms with log_unix_epoch, else 0.
    pub time_base_ms: u64,
    /// write_iolog: every I/O as issued, for fio's read_iolog.
    pub iolog: Option<crate::iolog::IoTrace>,
    /// write_hist_log: completion latency histograms every log_hist_msec.
    pub hist: Option<crate::hist_log::HistLog>,
}

impl JobLogs {
    pub fn open(
        o: &JobOptions,
        job_number: u32,
        unix_start_ms: u64,
    ) -> Result<JobLogs, EngineError> {
        let shared = !o.per_job_logs;
        let name = |prefix: &str, kind: &str| {
            PathBuf::from(if shared {
                format!("{prefix}_{kind}.log")
            } else {
                format!("{prefix}_{kind}.{job_number}.log")
            })
        };
        let log = |request: &sinkrate_jobspec::options::LogRequest, kind: &str| {
            LogFile::create(
                name(request.prefix_for(&o.name), kind),
                o.log_offset,
                o.priorities.log_prio,
                shared,
            )
        };
        let mut logs = JobLogs {
            avg_msec: o.log_avg_msec,
            max_value: o.log_max_value,
            time_base_ms: if o.log_unix_epoch { unix_start_ms } else { 0 },
            ..JobLogs::default()
        };
        if let Some(path) = &o.write_iolog {
            logs.iolog = Some(crate::iolog::IoTrace::open(std::path::Path::new(path))?);
        }
        if let Some(l) = &o.write_bw_log {
            logs.bw = Some(log(l, "bw")?);
        }
        if let Some(l) = &o.write_iops_log {
            logs.iops = Some(log(l, "iops")?);
        }
        if let Some(l) = &o.write_hist_log {
            logs.hist = Some(crate::hist_log::HistLog::new(
                log(l, "clat_hist")?,
                o.log_hist_msec,
                o.log_hist_coarseness,
            ));
        }
        if let Some(l) = &o.write_lat_log {
            logs.lat = Some(log(l, "lat")?);
            logs.clat = Some(log(l, "clat")?);
            logs.slat = Some(log(l, "slat")?);
        }
        Ok(logs)
    }

    /// Whether each I/O writes log entries (latency logs, or any log without averaging).
    pub fn per_io(&self) -> bool {
        self.lat.is_some()
            || self.hist.is_some()
            || (self.avg_msec == 0 && (self.bw.is_some() || self.iops.is_some()))
    }

    pub fn finish(self) -> Result<Vec<PathBuf>, EngineError> {
        let mut paths = Vec::new();
        for f in [self.bw, self.iops, self.lat, self.clat, self.slat]
            .into_iter()
            .flatten()
        {
            paths.push(f.finish()?);
        }
        if let Some(h) = self.hist {
            paths.push(h.finish()?);
        }
        if let Some(t) = self.iolog {
            paths.push(t.finish()?);
        }
        Ok(paths)
    }
}

/// One latency's samples over a `log_avg_msec` window.
#[derive(Default, Clone, Copy)]
pub struct LatencyWindow {
    sum: u128,
    count: u64,
    max: u64,
}

impl LatencyWindow {
    #[inline]
    pub fn add(&mut self, ns: u64) {
        self.sum += ns as u128;
        self.count += 1;
        self.max = self.max.max(ns);
    }

    /// The window's mean, or its largest with log_max_value; `None` without samples.
    pub fn value(&self, max: bool) -> Option<u64> {
        match (self.count, max) {
            (0, _) => None,
            (_, true) => Some(self.max),
            (n, false) => Some((self.sum / n as u128) as u64),
        }
    }
}

/// What a `log_avg_msec` window holds per direction: each latency's samples (lat, clat,
/// slat), and the bytes and I/Os done, from which its bandwidth and IOPS entries are the
/// window's averages (as fio's), not the last 500 ms sample.
#[derive(Default, Clone, Copy)]
pub struct Window {
    pub lat: [LatencyWindow; 3],
    pub clat: [LatencyWindow; 3],
    pub slat: [LatencyWindow; 3],
    pub bytes: [u64; 3],
    pub ios: [u64; 3],
    /// Run-clock ns the window began.
    pub start_ns: u64,
}
