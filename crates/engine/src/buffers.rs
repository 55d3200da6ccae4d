//! Page-aligned I/O buffers (O_DIRECT needs alignment) and their contents.

use sinkrate_jobspec::JobOptions;

use crate::rng::Rng;

/// Compressible and deduplicable data as fio makes it: each write is generated from a seed
/// (a repeated seed gives a byte-identical buffer), chunk by chunk: random bytes, then the
/// compressible share as the pattern (or zeros).
#[derive(Clone, Debug, PartialEq)]
pub struct Shaper {
    pub shape: sinkrate_jobspec::buffer_shape::BufferShape,
    pub pattern: Option<Vec<u8>>,
    last_unique: Option<u64>,
    working_set: Vec<u64>,
    /// Unique writes so far: the first ones write the working set's buffers (as fio's), so
    /// a deduplicated write repeats a buffer that is, or will be, on the device.
    uniques: usize,
}

impl Shaper {
    /// `blocks` is how many write buffers the job's files hold (the working set is a share
    /// of them); `seed` the job's, or the run's when the working set is global.
    pub fn new(o: &JobOptions, blocks: u64, seed: u64) -> Shaper {
        use sinkrate_jobspec::buffer_shape::DedupeMode;
        let shape = o.buffer_shape.clone();
        let working_set = if shape.dedupe_mode == DedupeMode::WorkingSet {
            let n = (blocks * u64::from(shape.dedupe_working_set_percentage) / 100).max(1);
            let mut r = Rng::new(seed);
            (0..n).map(|_| r.next_u64()).collect()
        } else {
            Vec::new()
        };
        Shaper {
            pattern: o.buffer_pattern.clone(),
            shape,
            last_unique: None,
            working_set,
            uniques: 0,
        }
    }

    fn seed_for_next(&mut self, rng: &mut Rng) -> u64 {
        let repeat = self.shape.dedupe_percentage > 0
            && rng.below(100) < u64::from(self.shape.dedupe_percentage);
        if repeat {
            if !self.working_set.is_empty() {
                return self.working_set[rng.below(self.working_set.len() as u64) as usize];
            }
            if let Some(seed) = self.last_unique {
                return seed;
            }
        }
        let seed = match self.working_set.get(self.uniques) {
            Some(s) => *s,
            None => rng.next_u64(),
        };
        self.uniques += 1;
        self.last_unique = Some(seed);
        seed
    }

    pub fn fill(&mut self, buf: &mut [u8], rng: &mut Rng) {
        let mut r = Rng::new(self.seed_for_next(rng));
        let pct = self.shape.compress_percentage as usize;
        let chunk = match self.shape.compress_chunk as usize {
            0 => buf.len().max(1),
            c => c,
        };
        for piece in buf.chunks_mut(chunk) {
            let random = (chunk * (100 - pct) / 100).min(piece.len());
            r.fill(&mut piece[..random]);
            let fixed = &mut piece[random..];
            match &self.pattern {
                Some(p) if !p.is_empty() => {
                    for (i, b) in fixed.iter_mut().enumerate() {
                        *b = p[i % p.len()];
                    }
                }
                _ => fixed.fill(0),
            }
        }
    }
}

/// How write buffers are filled, from the job's buffer options.
#[derive(Clone, Debug, PartialEq)]
pub enum Contents {
    Zero,
    Pattern(Vec<u8>),
    /// Random data, refilled before every write.
    RandomRefill,
    /// Random data once, scrambled per write as fio's scramble_buffers does: every 512-byte
    /// sector carries its own offset and a word that changes with each write, so no two
    /// sectors of a run are alike (which defeats deduplicating devices cheaply).
    RandomScrambled,
    Random,
    /// buffer_compress_percentage / dedupe_percentage: generated anew for every write.
    Shaped(Box<Shaper>),
}

impl Contents {
    /// `blocks` and `seed` as for [`Shaper::new`].
    pub fn from_options(o: &JobOptions, blocks: u64, seed: u64) -> Contents {
        if o.buffer_shape.shapes() {
            Contents::Shaped(Box::new(Shaper::new(o, blocks, seed)))
        } else if let Some(p) = &o.buffer_pattern {
            Contents::Pattern(p.clone())
        } else if o.zero_buffers {
            Contents::Zero
        } else if o.refill_buffers {
            Contents::RandomRefill
        } else if o.scramble_buffers {
            Contents::RandomScrambled
        } else {
            Contents::Random
        }
    }

    pub fn initial_fill(&mut self, buf: &mut [u8], rng: &mut Rng) {
        match self {
            Contents::Zero => buf.fill(0),
            Contents::Pattern(p) => {
                for (i, b) in buf.iter_mut().enumerate() {
                    *b = p[i % p.len()];
                }
            }
            Contents::Shaped(s) => s.fill(buf, rng),
            _ => rng.fill(buf),
        }
    }

    /// Called before each write of `len` bytes from `buf`.
    #[inline]
    pub fn before_write(&mut self, buf: &mut [u8], len: usize, offset: u64, rng: &mut Rng) {
        match self {
            Contents::RandomRefill => rng.fill(&mut buf[..len]),
            Contents::Shaped(s) => s.fill(&mut buf[..len], rng),
            Contents::RandomScrambled => {
                // As fio: the sector's offset in one of its eight 64-byte lines (the same
                // line for the whole write), and at the end of the first line a stamp of the
                // write (fio's is the issue time; a random word changes as surely). Writes
                // under a sector are left as they are, as in fio.
                let stamp = rng.next_u64();
                let line = ((offset ^ stamp) & 7) as usize * 64;
                for (k, sector) in buf[..len].chunks_exact_mut(512).enumerate() {
                    let at = offset + k as u64 * 512;
                    sector[line..line + 8].copy_from_slice(&at.to_le_bytes());
                    sector[48..56].copy_from_slice(&stamp.to_le_bytes());
                    sector[56..64].copy_from_slice(&stamp.rotate_left(32).to_le_bytes());
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkrate_platform::buf::{AlignedBuf, ALIGN};

    #[test]
    fn aligned_and_filled() {
        let mut b = AlignedBuf::new(10_000);
        assert_eq!(b.as_mut_ptr() as usize % ALIGN, 0);
        assert_eq!(b.as_slice().len(), 12_288);
        let mut rng = Rng::new(3);
        Contents::Pattern(vec![0xde, 0xad]).initial_fill(b.as_mut_slice(), &mut rng);
        assert_eq!(&b.as_slice()[..4], &[0xde, 0xad, 0xde, 0xad]);
        let before = b.as_slice()[..64].to_vec();
        Contents::RandomScrambled.before_write(b.as_mut_slice(), 64, 0, &mut rng);
        assert_eq!(
            before,
            b.as_slice()[..64].to_vec(),
            "under a sector: as it was"
        );
    }

    #[test]
    fn scrambling_makes_every_sector_of_every_write_differ() {
        let mut b = AlignedBuf::new(8192);
        let mut rng = Rng::new(7);
        Contents::RandomScrambled.initial_fill(b.as_mut_slice(), &mut rng);
        let mut seen = std::collections::HashSet::new();
        for write in 0..4u64 {
            // The same buffer written at two offsets, then the first offset again.
            let offset = (write % 2) * 8192;
            Contents::RandomScrambled.before_write(b.as_mut_slice(), 8192, offset, &mut rng);
            for sector in b.as_slice()[..8192].chunks(512) {
                assert!(
                    seen.insert(sector.to_vec()),
                    "write {write}: a sector repeats"
                );
            }
        }
    }
}
