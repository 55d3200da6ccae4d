//! Block choice for fio's non-uniform `random_distribution`s. The formulas for ranks are
//! fio's (so the share of I/O that the hottest blocks get is fio's for the same theta, power,
//! deviation or zones); ranks are scattered over the region by a hash, as fio's are, so the
//! hot blocks are not all at the start. Which blocks are hot differs from fio's (its own
//! generator and hash), as the README says.

use sinkrate_jobspec::distribution::{RandomDistribution, Zone};

use crate::rng::Rng;

/// fio caps the zeta sum at ten million ranges: beyond that its cost outweighs precision.
const ZIPF_MAX_TERMS: u64 = 10_000_000;

enum Kind {
    Zipf {
        theta: f64,
        zeta2: f64,
        zetan: f64,
        offset: u64,
    },
    Pareto {
        power: f64,
        offset: u64,
    },
    Normal {
        /// The spread added around the mean, in ranges.
        spread: u64,
        offset: i64,
    },
    /// Cumulative access percent, first block, blocks.
    Zoned(Vec<(f64, u64, u64)>),
    Sequence {
        blocks: Vec<u64>,
        stride: bool,
        next: usize,
        cycle: u64,
    },
}

pub struct BlockSampler {
    kind: Kind,
    nranges: u64,
    scatter: Scatter,
    rng: Rng,
}

/// Spreads ranks over the blocks: rank r goes to r * m mod n with m near n/phi and coprime
/// with n, a bijection (no two ranks share a block, as with fio's multiplicative hash) that
/// puts neighbouring ranks far apart. Rank 0, the hottest, stays at 0 (then the center).
struct Scatter {
    n: u64,
    multiplier: u64,
}

impl Scatter {
    fn new(n: u64) -> Scatter {
        let mut m = ((n as f64 * 0.618_033_988_749_895) as u64).max(1);
        while gcd(m, n) != 1 {
            m += 1;
        }
        Scatter { n, multiplier: m }
    }

    fn block(&self, rank: u64) -> u64 {
        ((u128::from(rank % self.n) * u128::from(self.multiplier)) % u128::from(self.n)) as u64
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl BlockSampler {
    /// `nranges` blocks of `range_size` bytes; `None` for the uniform distribution.
    pub fn new(
        d: &RandomDistribution,
        nranges: u64,
        range_size: u64,
        sequence_stride: bool,
        seed: u64,
    ) -> Option<BlockSampler> {
        let nranges = nranges.max(1);
        let mut rng = Rng::new(seed);
        let random_offset = rng.next_u64() % nranges;
        let centred = |c: Option<f64>| match c {
            Some(c) => (nranges as f64 * c) as u64,
            None => random_offset,
        };
        let kind = match d {
            RandomDistribution::Random => return None,
            RandomDistribution::Zipf { theta, center } => {
                let terms = nranges.min(ZIPF_MAX_TERMS);
                let zetan = (1..=terms).map(|i| (1.0 / i as f64).powf(*theta)).sum();
                Kind::Zipf {
                    theta: *theta,
                    zeta2: 1.0 + 0.5f64.powf(*theta),
                    zetan,
                    offset: centred(*center),
                }
            }
            RandomDistribution::Pareto { h, center } => Kind::Pareto {
                power: h.ln() / (1.0 - h).ln(),
                offset: centred(*center),
            },
            RandomDistribution::Normal { deviation, center } => {
                let spread = ((nranges as f64 * deviation) / 100.0).ceil() as u64;
                Kind::Normal {
                    spread: spread.min(nranges / 2),
                    offset: match center {
                        Some(c) => (nranges as f64 * (c - 0.5)) as i64,
                        None => 0,
                    },
                }
            }
            RandomDistribution::Zoned { zones } => Kind::Zoned(zone_table(zones, |z| {
                (z.size / 100.0 * nranges as f64).round() as u64
            })),
            RandomDistribution::ZonedAbs { zones } => Kind::Zoned(zone_table(zones, |z| {
                (z.size as u64).div_ceil(range_size.max(1))
            })),
            RandomDistribution::Sequence { blocks } => Kind::Sequence {
                blocks: blocks.clone(),
                stride: sequence_stride,
                next: 0,
                cycle: 0,
            },
        };
        Some(BlockSampler {
            kind,
            nranges,
            scatter: Scatter::new(nranges),
            rng,
        })
    }

    /// The next block, in `0..nranges`.
    pub fn next_block(&mut self) -> u64 {
        let n = self.nranges;
        match &mut self.kind {
            Kind::Zipf {
                theta,
                zeta2,
                zetan,
                offset,
            } => {
                let alpha = 1.0 / (1.0 - *theta);
                let eta = (1.0 - (2.0 / n as f64).powf(1.0 - *theta)) / (1.0 - *zeta2 / *zetan);
                let u = self.rng.unit();
                let z = u * *zetan;
                let rank = if z < 1.0 {
                    1
                } else if z < 1.0 + 0.5f64.powf(*theta) {
                    2
                } else {
                    1 + (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
                };
                (self.scatter.block(rank - 1) + *offset) % n
            }
            Kind::Pareto { power, offset } => {
                let rank = ((n - 1) as f64 * self.rng.unit().powf(*power)) as u64;
                (self.scatter.block(rank) + *offset) % n
            }
            Kind::Normal { spread, offset } => {
                // fio's "normal": the mean of twelve uniform draws (Irwin-Hall), then a
                // uniform deviation of the given width.
                const DRAWS: u64 = 12;
                let sum: u64 = (0..DRAWS).map(|_| self.rng.below(n + 1)).sum();
                let mut rank = sum.div_ceil(DRAWS) as i64;
                if *spread > 0 {
                    let mut dev = self.rng.below(*spread) as i64 - (*spread / 2) as i64;
                    while dev + rank >= n as i64 {
                        dev /= 2;
                    }
                    rank += dev;
                }
                (self.scatter.block(rank.max(0) as u64) as i64 + *offset).rem_euclid(n as i64)
                    as u64
            }
            Kind::Zoned(table) => {
                let x = self.rng.unit() * 100.0;
                let (_, first, blocks) = table
                    .iter()
                    .find(|(c, _, _)| x < *c)
                    .or(table.last())
                    .copied()
                    .unwrap_or((100.0, 0, n));
                let first = first.min(n - 1);
                let blocks = blocks.min(n - first).max(1);
                first + self.rng.below(blocks)
            }
            Kind::Sequence {
                blocks,
                stride,
                next,
                cycle,
            } => {
                let Some(&b) = blocks.get(*next) else {
                    return 0;
                };
                let base = if *stride {
                    *cycle * blocks.len() as u64
                } else {
                    0
                };
                *next += 1;
                if *next == blocks.len() {
                    *next = 0;
                    *cycle += 1;
                }
                (base + b) % n
            }
        }
    }
}

fn zone_table(zones: &[Zone], blocks_of: impl Fn(&Zone) -> u64) -> Vec<(f64, u64, u64)> {
    let mut cumulative = 0.0;
    let mut first = 0;
    zones
        .iter()
        .map(|z| {
            cumulative += z.access_pct;
            let blocks = blocks_of(z);
            let entry = (cumulative, first, blocks);
            first += blocks;
            entry
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hottest_share(d: RandomDistribution, n: u64, draws: usize, top: usize) -> f64 {
        let mut s = BlockSampler::new(&d, n, 4096, false, 7).expect("not uniform");
        let mut hits = vec![0u64; n as usize];
        for _ in 0..draws {
            let b = s.next_block();
            assert!(b < n);
            hits[b as usize] += 1;
        }
        hits.sort_unstable_by(|a, b| b.cmp(a));
        hits[..top].iter().sum::<u64>() as f64 / draws as f64
    }

    #[test]
    fn skewed_distributions_concentrate_io_as_their_parameters_say() {
        let zipf = |theta| {
            hottest_share(
                RandomDistribution::Zipf {
                    theta,
                    center: None,
                },
                10_000,
                200_000,
                100,
            )
        };
        // The hottest 1% of blocks: more with a larger theta.
        assert!(zipf(1.2) > zipf(0.8) + 0.2, "{} {}", zipf(1.2), zipf(0.8));
        let pareto = hottest_share(
            RandomDistribution::Pareto {
                h: 0.2,
                center: None,
            },
            10_000,
            200_000,
            2_000,
        );
        // h=0.2 is the 80/20 rule: about 80% of I/O on the hottest 20% of blocks.
        assert!((0.7..0.9).contains(&pareto), "{pareto}");
    }

    #[test]
    fn zones_get_their_share_and_sequences_repeat_or_stride() {
        let zones = vec![
            Zone {
                access_pct: 50.0,
                size: 5.0,
            },
            Zone {
                access_pct: 50.0,
                size: 95.0,
            },
        ];
        let mut s = BlockSampler::new(&RandomDistribution::Zoned { zones }, 1000, 4096, false, 1)
            .expect("zoned");
        let first_zone = (0..100_000).filter(|_| s.next_block() < 50).count();
        assert!((48_000..52_000).contains(&first_zone), "{first_zone}");
        let seq = RandomDistribution::Sequence {
            blocks: vec![2, 0, 1],
        };
        let mut fixed = BlockSampler::new(&seq, 12, 4096, false, 1).expect("sequence");
        let got: Vec<u64> = (0..6).map(|_| fixed.next_block()).collect();
        assert_eq!(got, [2, 0, 1, 2, 0, 1]);
        let mut strided = BlockSampler::new(&seq, 12, 4096, true, 1).expect("sequence");
        let got: Vec<u64> = (0..6).map(|_| strided.next_block()).collect();
        assert_eq!(got, [2, 0, 1, 5, 3, 4]);
    }
}
