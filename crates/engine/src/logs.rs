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
    /// log_store_compressed: entries are fio's binary samples, written as one gzip member
    /// per chunk of this many bytes (fio's `.fz`); 0 writes text lines.
    compressed_chunk: usize,
}

/// One text line of a log: `time, value, direction, block size, [offset,] priority`, the
/// priority in hex with log_prio (`with_prio`), else 1 for a real-time I/O and 0 otherwise.
fn write_entry(
    out: &mut Vec<u8>,
    [time_ms, value, d, bs]: [u64; 4],
    offset: Option<u64>,
    with_prio: Option<u16>,
    ioprio: u16,
) {
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{time_ms}, {value}, {d}, {bs}, ");
    if let Some(offset) = offset {
        let _ = write!(out, "{offset}, ");
    }
    let _ = match with_prio {
        Some(p) => writeln!(out, "0x{p:04x}"),
        None => writeln!(out, "{}", u8::from(ioprio_class(ioprio) == CLASS_RT)),
    };
}

/// fio's flags in a binary sample's direction word (iolog.h).
const LOG_OFFSET_SAMPLE_BIT: u32 = 0x8000_0000;
const LOG_PRIO_SAMPLE_BIT: u32 = 0x4000_0000;

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
            compressed_chunk: 0,
        })
    }

    /// Stores the entries as fio's compressed log: gzip members of `chunk` bytes of binary
    /// samples each (fio's log_compression with log_store_compressed).
    pub(crate) fn stored_compressed(mut self, chunk: u64) -> LogFile {
        self.compressed_chunk = (chunk as usize).clamp(1, FLUSH_AT);
        self
    }

    #[inline]
    /// One line; `d` is fio's direction code (0 read, 1 write, 2 trim), `ioprio` the I/O's
    /// priority (0 for averaged entries, as fio's).
    pub fn entry(&mut self, time_ms: u64, value: u64, d: u8, bs: u64, offset: u64, ioprio: u16) {
        if self.compressed_chunk > 0 {
            self.sample(time_ms, value, d, bs, offset, ioprio);
            return;
        }
        write_entry(
            &mut self.pending,
            [time_ms, value, u64::from(d), bs],
            self.with_offset.then_some(offset),
            self.with_prio.then_some(ioprio),
            ioprio,
        );
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

    /// One entry as fio's `struct io_sample` (with `io_sample_offset`'s offset after it):
    /// time, value, direction word, priority, 2 bytes of padding, block size; little
    /// endian, as fio writes it on the boards sinkrate runs on.
    fn sample(&mut self, time_ms: u64, value: u64, d: u8, bs: u64, offset: u64, ioprio: u16) {
        let mut word = u32::from(d);
        if self.with_offset {
            word |= LOG_OFFSET_SAMPLE_BIT;
        }
        if self.with_prio {
            word |= LOG_PRIO_SAMPLE_BIT;
        }
        let s = &mut self.pending;
        s.extend_from_slice(&time_ms.to_le_bytes());
        s.extend_from_slice(&value.to_le_bytes());
        s.extend_from_slice(&word.to_le_bytes());
        s.extend_from_slice(&ioprio.to_le_bytes());
        s.extend_from_slice(&[0, 0]);
        s.extend_from_slice(&bs.to_le_bytes());
        if self.with_offset {
            s.extend_from_slice(&offset.to_le_bytes());
        }
        if self.pending.len() >= self.compressed_chunk {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.compressed_chunk > 0 && !self.pending.is_empty() {
            // One zlib stream per chunk, as fio's: streams of several jobs appended to one
            // log (per_job_logs=0) stay whole.
            let mut gz =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            let member = gz.write_all(&self.pending).and_then(|()| gz.finish());
            match member {
                Ok(bytes) => self.pending = bytes,
                Err(e) => {
                    self.failed.get_or_insert(e);
                    self.pending.clear();
                    return;
                }
            }
        }
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
    /// log_unix_epoch: the run's start in Unix ms; each timestamp is then that plus the
    /// run clock's time (a job that starts later, by wait_for or a stonewall, logs its own
    /// Unix times), else it counts from the job's start.
    pub unix_base_ms: Option<u64>,
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
        // fio's compressed logs are the text log's name and `.fz`.
        let stored_compressed = o.log_compression > 0 && o.log_store_compressed;
        let name = |prefix: &str, kind: &str| {
            let mut name = if shared {
                format!("{prefix}_{kind}.log")
            } else {
                format!("{prefix}_{kind}.{job_number}.log")
            };
            if stored_compressed && kind != "clat_hist" {
                name.push_str(".fz");
            }
            PathBuf::from(name)
        };
        let log = |request: &sinkrate_jobspec::options::LogRequest, kind: &str| {
            let file = LogFile::create(
                name(request.prefix_for(&o.name), kind),
                o.log_offset,
                o.priorities.log_prio,
                shared,
            )?;
            Ok::<_, EngineError>(if stored_compressed && kind != "clat_hist" {
                file.stored_compressed(o.log_compression)
            } else {
                file
            })
        };
        let mut logs = JobLogs {
            avg_msec: o.log_avg_msec,
            max_value: o.log_max_value,
            unix_base_ms: o.log_unix_epoch.then_some(unix_start_ms),
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

/// The largest compressed log `inflate_log` reads: a bound on what an endless or hostile
/// input can make it hold.
const INFLATE_LIMIT: u64 = 4 << 30;

/// fio's `--inflate-log`: a compressed log (`.fz`, gzip members of binary samples) as the
/// text lines the uncompressed log would hold.
pub fn inflate_log(path: &std::path::Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut packed = Vec::new();
    file.take(INFLATE_LIMIT + 1)
        .read_to_end(&mut packed)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // zlib streams one after another, as fio writes them (fio's reader also takes gzip).
    let mut raw = Vec::new();
    let mut rest = packed.as_slice();
    while !rest.is_empty() && (raw.len() as u64) <= INFLATE_LIMIT {
        let limit = INFLATE_LIMIT + 1 - raw.len() as u64;
        let used = if rest.starts_with(&[0x1f, 0x8b]) {
            let mut d = flate2::bufread::GzDecoder::new(rest);
            (&mut d).take(limit).read_to_end(&mut raw).map(|_| {
                // What the member took of the input: the decoder's reader, advanced.
                rest.len() - d.into_inner().len()
            })
        } else {
            let mut d = flate2::read::ZlibDecoder::new(rest);
            (&mut d)
                .take(limit)
                .read_to_end(&mut raw)
                .map(|_| d.total_in() as usize)
        }
        .map_err(|e| format!("{}: not a compressed fio log ({e})", path.display()))?;
        if used == 0 {
            break;
        }
        rest = &rest[used.min(rest.len())..];
    }
    if raw.len() as u64 > INFLATE_LIMIT {
        return Err(format!(
            "{}: inflates to more than {} GiB",
            path.display(),
            INFLATE_LIMIT >> 30
        ));
    }
    let word = |at: usize| {
        raw.get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let Some(first) = word(16) else {
        return Ok(Vec::new());
    };
    let with_offset = first & LOG_OFFSET_SAMPLE_BIT != 0;
    let with_prio = first & LOG_PRIO_SAMPLE_BIT != 0;
    let size = if with_offset { 40 } else { 32 };
    if raw.len() % size != 0 {
        return Err(format!(
            "{}: {} bytes of samples are not whole {size}-byte samples",
            path.display(),
            raw.len()
        ));
    }
    let u64_at = |s: &[u8], at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&s[at..at + 8]);
        u64::from_le_bytes(b)
    };
    let mut text = Vec::with_capacity(raw.len());
    for s in raw.chunks_exact(size) {
        let d = u32::from_le_bytes([s[16], s[17], s[18], s[19]])
            & !(LOG_OFFSET_SAMPLE_BIT | LOG_PRIO_SAMPLE_BIT);
        let ioprio = u16::from_le_bytes([s[20], s[21]]);
        write_entry(
            &mut text,
            [u64_at(s, 0), u64_at(s, 8), u64::from(d), u64_at(s, 24)],
            with_offset.then(|| u64_at(s, 32)),
            with_prio.then_some(ioprio),
            ioprio,
        );
    }
    Ok(text)
}
