//! fio's completion-latency histogram log (`write_hist_log`, `log_hist_msec`,
//! `log_hist_coarseness`): `time_ms, direction, block_size, bin0, bin1, ...`, the I/Os that
//! completed since the direction's previous line, in fio's 1856 latency bins (summed 2^N at
//! a time with coarseness N). A line is written by the first completion once log_hist_msec
//! has passed since the last, as fio's; no partial window at the end. fio's
//! `fiologparser_hist.py` reads these files.
//!
//! The binning is written out here because it is fio's own layout (64 bins per power of
//! two above 64 ns, 29 groups), which the HDR histogram behind the job's figures does not
//! share and no crate provides.

use std::io::Write;

use crate::logs::LogFile;

/// Bits of a latency kept exact within a power of two: 64 bins per group.
const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// fio's FIO_IO_U_PLAT_NR: 29 groups of 64 bins.
pub const PLAT_NR: usize = 29 * PLAT_VAL as usize;

/// The bin of a latency in ns: values up to 127 are their own bin; above, the six bits
/// after the highest set bit choose one of the 64 bins of that power of two.
pub fn plat_index(ns: u64) -> usize {
    if ns == 0 {
        return 0;
    }
    let msb = 63 - ns.leading_zeros();
    if msb <= PLAT_BITS {
        return ns as usize;
    }
    let dropped = msb - PLAT_BITS;
    let base = ((dropped + 1) as usize) << PLAT_BITS;
    let within = ((ns >> dropped) & (PLAT_VAL - 1)) as usize;
    (base + within).min(PLAT_NR - 1)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_fios() {
        // fio's layout: exact up to 127, then 64 bins per power of two.
        assert_eq!(plat_index(0), 0);
        assert_eq!(plat_index(127), 127);
        assert_eq!(plat_index(128), 128);
        assert_eq!(plat_index(129), 128);
        assert_eq!(plat_index(130), 129);
        assert_eq!(plat_index(256), 192);
        assert_eq!(plat_index(u64::MAX), PLAT_NR - 1);
        // Every bin below the top is reached, in order.
        let mut last = 0;
        for ns in (0..1u64 << 20).step_by(7) {
            let i = plat_index(ns);
            assert!(i >= last && i < PLAT_NR);
            last = i;
        }
    }
}
