//! Fast seeded generators: xorshift64* for choices, and a full-period permutation so that
//! random I/O touches every block once per pass, as fio's random map does.

#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // splitmix64 scrambles small seeds into a well-mixed non-zero state.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng {
            state: (z ^ (z >> 31)) | 1,
        }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..bound` (bound > 0), by Lemire's multiply-shift.
    #[inline]
    pub fn below(&mut self, bound: u64) -> u64 {
        ((self.next_u64() as u128 * bound as u128) >> 64) as u64
    }

    /// Uniform in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for chunk in &mut chunks {
            chunk.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let tail = chunks.into_remainder();
        let last = self.next_u64().to_le_bytes();
        let n = tail.len();
        tail.copy_from_slice(&last[..n]);
    }
}

/// Visits every integer in `0..n` exactly once per pass, in a scrambled order, with O(1)
/// state: a full-period linear congruential sequence modulo the next power of two, skipping
/// values >= n (at most half the steps).
#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    mask: u64,
    increment: u64,
    state: u64,
    emitted: u64,
}

impl Permutation {
    pub fn new(n: u64, seed: u64) -> Permutation {
        let modulus = n.max(2).next_power_of_two();
        let mut rng = Rng::new(seed);
        Permutation {
            n,
            mask: modulus - 1,
            increment: rng.next_u64() | 1,
            state: rng.next_u64() & (modulus - 1),
            emitted: 0,
        }
    }

    /// The next index, or `None` when this pass has visited all of `0..n`.
    #[inline]
    pub fn next_index(&mut self) -> Option<u64> {
        if self.emitted >= self.n {
            return None;
        }
        loop {
            // a = 5 (a - 1 divisible by 4) and an odd increment give the full period (Hull-Dobell).
            self.state = self.state.wrapping_mul(5).wrapping_add(self.increment) & self.mask;
            if self.state < self.n {
                self.emitted += 1;
                return Some(self.state);
            }
        }
    }

    pub fn restart(&mut self) {
        self.emitted = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_visits_each_index_once() {
        for n in [1u64, 2, 3, 7, 100, 1000, 4097] {
            let mut p = Permutation::new(n, 42);
            let mut seen = vec![false; n as usize];
            while let Some(i) = p.next_index() {
                assert!(!seen[i as usize], "n={n}: {i} twice");
                seen[i as usize] = true;
            }
            assert!(seen.iter().all(|&s| s), "n={n}");
            p.restart();
            assert!(p.next_index().is_some());
        }
    }

    #[test]
    fn below_is_in_range_and_roughly_uniform() {
        let mut r = Rng::new(1);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[r.below(10) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (9_000..11_000).contains(&c)),
            "{counts:?}"
        );
        let mut buf = [0u8; 13];
        r.fill(&mut buf);
        assert!(buf.iter().any(|&b| b != 0));
    }
}
