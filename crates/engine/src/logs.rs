//! fio's log files (`write_bw_log`, `write_lat_log`, `write_iops_log`): one line per entry,
//! `time_ms, value, direction, block_size, [offset,] priority` (the offset with `log_offset`;
//! the priority is 0, the class fio logs for I/O without one), so fio's plotting tools
//! (fio2gnuplot, fiologparser) read them unchanged. Latency values are in ns, bandwidth in
//! KiB/s.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use sinkrate_jobspec::JobOptions;

use crate::error::EngineError;

pub struct LogFile {
    path: PathBuf,
    out: BufWriter<File>,
    with_offset: bool,
}

impl LogFile {
    pub(crate) fn create(path: PathBuf, with_offset: bool) -> Result<LogFile, EngineError> {
        let f = sinkrate_sys::output::create(&path).map_err(|e| EngineError::io(&path, e))?;
        Ok(LogFile {
            path,
            out: BufWriter::with_capacity(256 * 1024, f),
            with_offset,
        })
    }

    #[inline]
    /// One line; `d` is fio's direction code (0 read, 1 write, 2 trim).
    pub fn entry(&mut self, time_ms: u64, value: u64, d: u8, bs: u64, offset: u64) {
        // A failed log write must not stop the measurement; it is reported at the end.
        let _ = if self.with_offset {
            writeln!(self.out, "{time_ms}, {value}, {d}, {bs}, {offset}, 0")
        } else {
            writeln!(self.out, "{time_ms}, {value}, {d}, {bs}, 0")
        };
    }

    pub fn finish(mut self) -> Result<PathBuf, EngineError> {
        self.out
            .flush()
            .map_err(|e| EngineError::io(&self.path, e))?;
        Ok(self.path)
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
    /// Averaging window in ms; 0 logs every I/O for latency logs and every 500 ms for rates.
    pub avg_msec: u64,
    /// log_max_value: an averaged latency entry is the window's largest, not its mean.
    pub max_value: bool,
    /// Added to every timestamp: the run start in Unix ms with log_unix_epoch, else 0.
    pub time_base_ms: u64,
    /// write_iolog: every I/O as issued, for fio's read_iolog.
    pub iolog: Option<crate::iolog::IoTrace>,
}

impl JobLogs {
    pub fn open(
        o: &JobOptions,
        job_number: u32,
        unix_start_ms: u64,
    ) -> Result<JobLogs, EngineError> {
        let name =
            |prefix: &str, kind: &str| PathBuf::from(format!("{prefix}_{kind}.{job_number}.log"));
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
            logs.bw = Some(LogFile::create(name(&l.prefix, "bw"), o.log_offset)?);
        }
        if let Some(l) = &o.write_iops_log {
            logs.iops = Some(LogFile::create(name(&l.prefix, "iops"), o.log_offset)?);
        }
        if let Some(l) = &o.write_lat_log {
            logs.lat = Some(LogFile::create(name(&l.prefix, "lat"), o.log_offset)?);
            logs.clat = Some(LogFile::create(name(&l.prefix, "clat"), o.log_offset)?);
            logs.slat = Some(LogFile::create(name(&l.prefix, "slat"), o.log_offset)?);
        }
        Ok(logs)
    }

    pub fn wants_latency(&self) -> bool {
        self.lat.is_some()
    }

    pub fn finish(self) -> Result<Vec<PathBuf>, EngineError> {
        let mut paths = Vec::new();
        for f in [self.bw, self.iops, self.lat, self.clat, self.slat]
            .into_iter()
            .flatten()
        {
            paths.push(f.finish()?);
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
