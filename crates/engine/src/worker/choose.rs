//! What the next I/O is: its direction, block size, file and offset.

use sinkrate_jobspec::behaviour::{FileService, RandomGenerator};
use sinkrate_jobspec::options::{read_write_slot, Direction, Pattern};
use sinkrate_jobspec::JobOptions;

use sinkrate_jobspec::distribution::RwSequencer;

use super::io_loop::Loop;
use super::io_loop::Planned;
use super::open::OpenFile;
use super::open::NO_START;
use crate::backend::IoDir;
use crate::distribution::BlockSampler;
use crate::rng::{Permutation, Rng};

/// Per-direction block sizes and how to choose among them.
pub(super) enum BlockSizes {
    Fixed(u64),
    Range { lo: u64, hi: u64, align: u64 },
    Split(Vec<(u64, f64)>),
}

impl BlockSizes {
    pub(super) fn for_direction(o: &JobOptions, d: usize) -> BlockSizes {
        let rw = read_write_slot(d);
        if let Some(split) = &o.bssplit {
            let mut cumulative = 0.0;
            let table = split[rw]
                .iter()
                .map(|(bs, pct)| {
                    cumulative += pct;
                    (*bs, cumulative)
                })
                .collect();
            return BlockSizes::Split(table);
        }
        if let Some(range) = &o.bsrange {
            let (lo, hi) = range[rw];
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

    pub(super) fn min(&self) -> u64 {
        match self {
            BlockSizes::Fixed(bs) => *bs,
            BlockSizes::Range { lo, .. } => *lo,
            BlockSizes::Split(t) => t.iter().map(|e| e.0).min().unwrap_or(4096),
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
    /// The file of the next I/O, as fio's file_service_type: round robin (the default),
    /// random, or one file's share of the pass before the next; `:N` switches every N I/Os.
    #[inline]
    fn choose_file(&mut self) -> usize {
        let nfiles = self.files.len();
        if nfiles <= 1 {
            return 0;
        }
        let b = &self.o.behaviour;
        let switch = match b.file_service {
            FileService::RoundRobin | FileService::Random => self.file_ios >= b.file_service_every,
            FileService::Sequential => {
                self.file_bytes >= self.files[self.next_file].plan.region_len
            }
        };
        if switch {
            self.next_file = match b.file_service {
                FileService::Random => self.rng.below(nfiles as u64) as usize,
                _ => (self.next_file + 1) % nfiles,
            };
            self.file_ios = 0;
            self.file_bytes = 0;
        } else if self.file_ios == 0 && b.file_service == FileService::Random {
            self.next_file = self.rng.below(nfiles as u64) as usize;
        }
        self.file_ios += 1;
        self.next_file
    }

    #[inline]
    pub(super) fn plan_next(&mut self) -> Planned {
        if self.replay.is_some() {
            return self.plan_replayed();
        }
        let file = self.choose_file();
        let dir = match self.o.rw.direction {
            Direction::Read => IoDir::Read,
            Direction::Write => IoDir::Write,
            Direction::Trim => IoDir::Trim,
            // Made with the loop for every mixed job.
            Direction::Mixed => self
                .rwmix
                .as_mut()
                .map_or(IoDir::Read, super::rwmix::RwMix::next),
            // fio's trimwrite: trim where the last write started, then write there.
            Direction::TrimWrite => {
                let last = &self.files[file].last_start;
                if last[IoDir::Write.index()] == last[IoDir::Trim.index()] {
                    IoDir::Trim
                } else {
                    IoDir::Write
                }
            }
        };
        let d = dir.index();
        let bs = self.bs[d].pick(&mut self.bs_rngs[d]);
        // During ramp_time a pass does not end, so more than a pass may have been issued.
        let remaining = self.pass_bytes.saturating_sub(self.pass_issued);
        let modifier = self.o.offset_modifier;
        let random_now = match self.o.rw.pattern {
            Pattern::Sequential => false,
            // fio's rw=randread:N: a random offset on the first of every N I/Os, the others
            // follow rw_sequencer.
            Pattern::Random => {
                let n = self.sequencer_ios;
                self.sequencer_ios += 1;
                modifier.random_every <= 1 || n % modifier.random_every == 0
            }
        };
        let range_size = self
            .bs
            .iter()
            .map(BlockSizes::min)
            .min()
            .unwrap_or(1)
            .max(1);
        let next_min_bs = self.bs[d].min();
        let f = &mut self.files[file];
        let strided = self.strided;
        // zonemode=strided: the I/O stays in the current zone until zonesize bytes are done
        // there, then moves zonerange + zoneskip on (back to the start past the end), as
        // fio's; offsets below are within the zone.
        let (zone_base, region) = match strided {
            Some(z) => {
                if f.zone_bytes >= z.size {
                    f.zone_bytes = 0;
                    f.zone_base += z.range + z.skip;
                    if f.zone_base >= f.plan.region_len {
                        f.zone_base = 0;
                    }
                    f.seq_pos = [0; 3];
                    // A new zone, a new random map over its blocks, as fio's.
                    f.perm = None;
                    f.random_map = None;
                }
                (f.zone_base, z.range.min(f.plan.region_len - f.zone_base))
            }
            None => (0, f.plan.region_len),
        };
        let sequential = |f: &mut OpenFile| {
            let mut pos = f.seq_pos[d];
            if pos >= region {
                pos = 0;
            } else if modifier.add != 0 && pos != 0 {
                // rw=write:4k leaves holes, rw=read:-8k reads backwards; past either end it
                // wraps to the start (holes) or to the end (backwards), as fio's does.
                let next = i128::from(pos) + i128::from(modifier.add);
                pos = if next >= 0 && next < i128::from(region) {
                    next as u64
                } else if modifier.add > 0 {
                    0
                } else {
                    (i128::from(region) + i128::from(modifier.add)).max(0) as u64
                };
            }
            (pos, bs.min(region - pos))
        };
        if random_now && f.samplers[d].is_none() {
            let rw = read_write_slot(d);
            if let Some(dist) = self.o.random_distribution.as_ref().map(|all| &all[rw]) {
                let nranges = region.div_ceil(range_size);
                let seed = self.random_seed ^ ((file as u64) << 1 | d as u64);
                f.samplers[d] = BlockSampler::new(
                    dist,
                    nranges,
                    range_size,
                    self.o.random_sequence_stride,
                    seed,
                );
            }
        }
        let sampled = match &mut f.samplers[d] {
            Some(sampler) if random_now && strided.is_none() => Some(sampler.next_block()),
            _ => None,
        };
        let trimmed_here = (self.o.rw.direction == Direction::TrimWrite && dir == IoDir::Write)
            .then(|| f.last_start[IoDir::Trim.index()]);
        let (offset, mut len) = if let Some(at) = trimmed_here {
            // fio's trimwrite writes what it just trimmed: the trim's place and length.
            let trimmed_len = f.seq_pos[IoDir::Trim.index()].saturating_sub(at);
            (at, trimmed_len.min(region - at.min(region)))
        } else if !random_now {
            match (self.o.rw.pattern, self.o.rw_sequencer) {
                (Pattern::Random, RwSequencer::Identical) => {
                    let last = f.last_start[d];
                    (if last == NO_START { 0 } else { last }, bs.min(region))
                }
                _ => sequential(f),
            }
        } else if let Some(block) = sampled {
            let last_fit = region.saturating_sub(bs) / range_size * range_size;
            ((block * range_size).min(last_fit), bs.min(region))
        } else {
            let align = self
                .o
                .blockalign
                .map(|a| a[read_write_slot(d)])
                .filter(|a| *a > 0)
                .unwrap_or(bs);
            let fixed = matches!(self.bs[d], BlockSizes::Fixed(_));
            // The random map visits blocks of bs; a blockalign other than bs places
            // I/Os between them, and fio then draws offsets freely (as norandommap).
            // fio's lfsr visits every block once per pass without a map too.
            let mapped =
                !self.o.norandommap || self.o.behaviour.random_generator == RandomGenerator::Lfsr;
            if fixed && align == bs && mapped && region / bs > 0 {
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
            } else if !fixed && mapped && self.o.blockalign.is_none() && region / range_size > 0 {
                // Sizes that vary: fio's map at the smallest size. A random untouched
                // block, the next one past it if touched, the I/O shortened where it
                // meets a touched one, so that a pass touches every block once.
                let blocks = region / range_size;
                let map = f
                    .random_map
                    .get_or_insert_with(|| super::random_map::RandomMap::new(blocks));
                let first = match map.next_free(self.rng.below(blocks)) {
                    Some(b) => b,
                    None => {
                        map.restart();
                        self.rng.below(blocks)
                    }
                };
                let touched = map.touch_run(first, bs.div_ceil(range_size));
                (first * range_size, (touched * range_size).min(bs))
            } else {
                let slots = region.saturating_sub(bs) / align + 1;
                (self.rng.below(slots) * align, bs.min(region))
            }
        };
        // A random trim where the last pair was (norandommap): as fio's, the last write's
        // start is moved off it so that the write of this pair still follows.
        if self.o.rw.direction == Direction::TrimWrite
            && dir == IoDir::Trim
            && f.last_start[d] == offset
        {
            f.last_start[IoDir::Write.index()] = f.last_start[IoDir::Write.index()].wrapping_sub(1);
        }
        f.seq_pos[d] = offset + len;
        f.last_start[d] = offset;
        // Holes (rw=read:512k) past which the next block would not fit end the pass, as
        // fio's (it wraps to the start only when the hole itself passes the end).
        if self.o.rw.pattern == Pattern::Sequential
            && modifier.add > 0
            && trimmed_here.is_none()
            && !self.o.time_based
        {
            let next = f.seq_pos[d].saturating_add(modifier.add as u64);
            if next < region && next.saturating_add(next_min_bs) > region {
                self.pass_cut_short = true;
            }
        }
        f.zone_bytes += len;
        self.file_bytes += len;
        if !self.ramping && len > remaining && remaining > 0 {
            len = remaining;
        }
        let offset = f.plan.region_start + zone_base + offset;
        Planned {
            dir,
            file,
            offset,
            len: len as usize,
            ioprio: self.ioprio_for(dir, len),
        }
    }

    /// The priority of an I/O: chosen per command with cmdprio, else the job's own.
    #[inline]
    pub(super) fn ioprio_for(&mut self, dir: IoDir, len: u64) -> u16 {
        match &mut self.command_prio {
            Some(c) => c.choose(dir.index(), len),
            None => self.job_ioprio,
        }
    }
}
