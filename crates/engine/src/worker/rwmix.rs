//! The direction of each I/O of a job that reads and writes, as fio's `get_rw_ddir`
//! chooses it: a direction drawn from fio's mix generator (1..=100 against rwmixread)
//! holds until it has issued as many I/Os as the share `rwmix` gives it of the other
//! direction's count at the switch, then each I/O draws again. With fio's seeds (randrepeat,
//! the default, or randseed given) the reads and writes come in fio's order, I/O for I/O;
//! verify's read-backs are not counted, as fio counts only the job's own I/O.

use crate::backend::IoDir;
use crate::fio_rand::{job_seeds, Taus88, MIX_SEED};

#[derive(Debug, Clone)]
pub(crate) struct RwMix {
    draws: Taus88,
    /// Percent of reads and of writes (fio's rwmix[READ], rwmix[WRITE]).
    read_pct: u32,
    write_pct: u32,
    /// The direction held, and the issue count that ends the hold (fio's rwmix_issues).
    current: IoDir,
    hold_until: u64,
    issued: [u64; 2],
}

impl RwMix {
    /// The chooser of job `job_number` (from 1): fio's seed when the job repeats its
    /// sequence, `fallback_seed` (the clock's) when it does not.
    pub(crate) fn new(
        o: &sinkrate_jobspec::JobOptions,
        job_number: u32,
        fallback_seed: u64,
    ) -> RwMix {
        let seed = if o.randrepeat || o.behaviour.allrandrepeat {
            job_seeds(o.randseed, job_number)[MIX_SEED]
        } else {
            fallback_seed
        };
        let read_pct = o.rwmixread.round().clamp(0.0, 100.0) as u32;
        RwMix {
            draws: Taus88::new(seed),
            read_pct,
            write_pct: 100 - read_pct,
            current: IoDir::Read,
            hold_until: 0,
            issued: [0; 2],
        }
    }

    fn slot(d: IoDir) -> usize {
        usize::from(d == IoDir::Write)
    }

    /// The direction of the job's next I/O, counted as issued.
    pub(crate) fn next(&mut self) -> IoDir {
        if self.issued[Self::slot(self.current)] >= self.hold_until {
            let drawn = if self.draws.between(1, 100) <= self.read_pct {
                IoDir::Read
            } else {
                IoDir::Write
            };
            if drawn != self.current {
                // fio's set_rwmix_bytes: the count of the direction left, times the share
                // of the one taken.
                let share = match drawn {
                    IoDir::Write => self.write_pct,
                    _ => self.read_pct,
                };
                self.hold_until = self.issued[Self::slot(self.current)] * u64::from(share) / 100;
            }
            self.current = drawn;
        }
        self.issued[Self::slot(self.current)] += 1;
        self.current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(rwmixread: f64, ios: u64) -> [u64; 2] {
        let o = sinkrate_jobspec::JobOptions {
            rwmixread,
            ..sinkrate_jobspec::JobOptions::default()
        };
        let mut mix = RwMix::new(&o, 1, 0);
        let mut n = [0u64; 2];
        for _ in 0..ios {
            n[RwMix::slot(mix.next())] += 1;
        }
        n
    }

    #[test]
    fn reads_and_writes_are_fios_count_for_count() {
        // fio 3.33, `--rw=randrw --bs=4k --size=32m` (8192 blocks) with the default
        // randseed, read and write total_ios for rwmixread 50, 70 and 13; and fio's own
        // harness test t0008 expects 16568 KiB written at 50% (4142 blocks).
        assert_eq!(counts(50.0, 8192), [4050, 4142]);
        assert_eq!(counts(70.0, 8192), [5689, 2503]);
        assert_eq!(counts(13.0, 8192), [1076, 7116]);
    }
}
