//! What the next I/O is: its direction, block size, file and offset.

use sinkrate_jobspec::options::Pattern;
use sinkrate_jobspec::JobOptions;

use crate::rng::{Permutation, Rng};

use super::*;

/// Per-direction block sizes and how to choose among them.
pub(super) enum BlockSizes {
    Fixed(u64),
    Range { lo: u64, hi: u64, align: u64 },
    Split(Vec<(u64, f64)>),
}

impl BlockSizes {
    pub(super) fn for_direction(o: &JobOptions, d: usize) -> BlockSizes {
        if let Some(split) = &o.bssplit {
            let mut cumulative = 0.0;
            let table = split[d]
                .iter()
                .map(|(bs, pct)| {
                    cumulative += pct;
                    (*bs, cumulative)
                })
                .collect();
            return BlockSizes::Split(table);
        }
        if let Some(range) = &o.bsrange {
            let (lo, hi) = range[d];
            let align = if lo % 512 == 0 { 512 } else { 1 };
            return BlockSizes::Range { lo, hi, align };
        }
        BlockSizes::Fixed(o.bs[d])
    }

    #[inline]
    pub(super) fn pick(&self, rng: &mut Rng) -> u64 {
        match self {
            BlockSizes::Fixed(bs) => *bs,
            BlockSizes::Range { lo, hi, align } => {
                let steps = (hi - lo) / align + 1;
                lo + rng.below(steps) * align
            }
            BlockSizes::Split(table) => {
                let x = rng.unit() * 100.0;
                table
                    .iter()
                    .find(|(_, c)| x < *c)
                    .or(table.last())
                    .map(|e| e.0)
                    .unwrap_or(4096)
            }
        }
    }

    pub(super) fn max(&self) -> u64 {
        match self {
            BlockSizes::Fixed(bs) => *bs,
            BlockSizes::Range { hi, .. } => *hi,
            BlockSizes::Split(t) => t.iter().map(|e| e.0).max().unwrap_or(4096),
        }
    }
}

impl Loop<'_> {
    #[inline]
    pub(super) fn plan_next(&mut self) -> Planned {
        let write = match self.o.rw.direction {
            sinkrate_jobspec::options::Direction::Read => false,
            sinkrate_jobspec::options::Direction::Write => true,
            sinkrate_jobspec::options::Direction::Mixed => {
                self.rng.unit() * 100.0 >= self.o.rwmixread
            }
        };
        let d = usize::from(write);
        let bs = self.bs[d].pick(&mut self.rng);
        let nfiles = self.files.len();
        let file = self.next_file;
        self.next_file = if file + 1 >= nfiles { 0 } else { file + 1 };
        // During ramp_time a pass does not end, so more than a pass may have been issued.
        let remaining = self.pass_bytes.saturating_sub(self.pass_issued);
        let f = &mut self.files[file];
        let region = f.plan.region_len;
        let (offset, mut len) = match self.o.rw.pattern {
            Pattern::Sequential => {
                let mut pos = f.seq_pos[d];
                if pos >= region {
                    pos = 0;
                }
                let len = bs.min(region - pos);
                f.seq_pos[d] = pos + len;
                (pos, len)
            }
            Pattern::Random => {
                let align = self
                    .o
                    .blockalign
                    .map(|a| a[d])
                    .filter(|a| *a > 0)
                    .unwrap_or(bs);
                let fixed = matches!(self.bs[d], BlockSizes::Fixed(_));
                // The random map visits blocks of bs; a blockalign other than bs places
                // I/Os between them, and fio then draws offsets freely (as norandommap).
                if fixed && align == bs && !self.o.norandommap && region / bs > 0 {
                    let nblocks = region / bs;
                    let seed = self.random_seed ^ file as u64;
                    let perm = f
                        .perm
                        .get_or_insert_with(|| Permutation::new(nblocks, seed));
                    let idx = match perm.next_index() {
                        Some(i) => i,
                        None => {
                            perm.restart();
                            perm.next_index().unwrap_or(0)
                        }
                    };
                    (idx * bs, bs)
                } else {
                    let slots = region.saturating_sub(bs) / align + 1;
                    (self.rng.below(slots) * align, bs.min(region))
                }
            }
        };
        if !self.ramping && len > remaining && remaining > 0 {
            len = remaining;
        }
        Planned {
            write,
            file,
            offset: f.plan.region_start + offset,
            len: len as usize,
        }
    }
}
