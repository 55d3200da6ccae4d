//! fio's completion-latency histogram log (`write_hist_log`, `log_hist_msec`,
//! `log_hist_coarseness`): `time_ms, direction, block_size, bin0, bin1, ...`, the I/Os that
//! completed since the direction's previous line, in fio's 1856 latency bins (summed 2^N at
//! a time with coarseness N). A line is written by the first completion once log_hist_msec
//! has passed since the last, as fio's; no partial window at the end. fio's
//! `fiologparser_hist.py` reads these files.

use std::io::Write;

use sinkrate_stats::fio_bins::{plat_index, PLAT_NR};

use crate::logs::LogFile;

pub struct HistLog {
    file: LogFile,
    every_ms: u64,
    coarseness: u8,
    /// Per direction: the bins since the last line, and when that line was (ms).
    bins: [Vec<u64>; 3],
    last_ms: [u64; 3],
}

impl HistLog {
    pub fn new(file: LogFile, every_ms: u64, coarseness: u8) -> HistLog {
        HistLog {
            file,
            every_ms,
            coarseness,
            bins: Default::default(),
            last_ms: [0; 3],
        }
    }

    /// One completion of direction `d`, `len` bytes, at `t_ms` (the logs' time).
    #[inline]
    pub fn add(&mut self, d: usize, clat_ns: u64, len: u64, t_ms: u64) {
        if self.every_ms == 0 {
            // As fio: without log_hist_msec the file is made and stays empty.
            return;
        }
        let bins = &mut self.bins[d];
        if bins.is_empty() {
            bins.resize(PLAT_NR, 0);
        }
        bins[plat_index(clat_ns)] += 1;
        if t_ms.saturating_sub(self.last_ms[d]) >= self.every_ms {
            let group = 1usize << self.coarseness;
            let bins = &mut self.bins[d];
            self.file.line(|out| {
                // Writing into a Vec cannot fail.
                let _ = write!(out, "{t_ms}, {d}, {len}");
                for chunk in bins.chunks(group) {
                    let _ = write!(out, ", {}", chunk.iter().sum::<u64>());
                }
                out.push(b'\n');
            });
            bins.iter_mut().for_each(|b| *b = 0);
            self.last_ms[d] = t_ms;
        }
    }

    pub fn finish(self) -> Result<std::path::PathBuf, crate::error::EngineError> {
        self.file.finish()
    }
}
