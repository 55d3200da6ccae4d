//! fio's own random generator (lib/rand.c: L'Ecuyer's combined Tausworthe generator with
//! fio's LCG seeding) and fio's per-job seeds (init.c `setup_random_seeds`). Written here
//! because no library reproduces fio's seeding: a job that draws from it draws what fio
//! draws for the same `randseed` and job number, so its choices are fio's, I/O for I/O.

/// One of fio's 32-bit generators (`struct taus88_state`).
#[derive(Debug, Clone)]
pub struct Taus88 {
    s1: u32,
    s2: u32,
    s3: u32,
}

impl Taus88 {
    /// fio's `__init_rand32`: an LCG from the (32-bit) seed, then six draws discarded.
    pub fn new(seed: u64) -> Taus88 {
        let seed = seed as u32;
        let lcg = |x: u32| x.wrapping_mul(69069) ^ seed;
        // The component floors L'Ecuyer's erratum requires (s1 > 1, s2 > 7, s3 > 15).
        let floor = |x: u32, m: u32| if x < m { x + m } else { x };
        // fio writes the starting value as `(2^31) + (2^17) + (2^7)`, where ^ is C's
        // exclusive or: 29 + 19 + 5.
        let s1 = floor(lcg(53), 1);
        let s2 = floor(lcg(s1), 7);
        let s3 = floor(lcg(s2), 15);
        let mut t = Taus88 { s1, s2, s3 };
        for _ in 0..6 {
            t.next_u32();
        }
        t
    }

    /// fio's `__rand32`.
    pub fn next_u32(&mut self) -> u32 {
        fn step(s: u32, a: u32, b: u32, c: u32, d: u32) -> u32 {
            ((s & c) << d) ^ (((s << a) ^ s) >> b)
        }
        self.s1 = step(self.s1, 13, 19, 4_294_967_294, 12);
        self.s2 = step(self.s2, 2, 25, 4_294_967_288, 4);
        self.s3 = step(self.s3, 3, 11, 4_294_967_280, 17);
        self.s1 ^ self.s2 ^ self.s3
    }

    /// fio's `rand_between(start, end)` for a 32-bit generator: `start..=end`.
    pub fn between(&mut self, start: u32, end: u32) -> u32 {
        let r = f64::from(self.next_u32());
        let span = f64::from(end - start) + 1.0;
        start + (span * (r / 4_294_967_296.0)) as u32
    }
}

/// Which of fio's per-job seeds (`FIO_RAND_*_OFF` in fio.h) a generator takes.
pub const MIX_SEED: usize = 4;
const SEEDS: usize = 21;

/// fio's seeds of job `thread_number` (from 1) with `randseed`, as fio sets them when
/// randrepeat is on or randseed given.
pub fn job_seeds(randseed: u64, thread_number: u32) -> [u64; SEEDS] {
    let multiplier: u64 = 0x9e37_0001;
    let mut seed = randseed;
    for _ in 0..4 {
        seed = seed.wrapping_mul(multiplier);
    }
    let mut out = [0u64; SEEDS];
    for (i, s) in out.iter_mut().enumerate() {
        *s = seed
            .wrapping_mul(u64::from(thread_number))
            .wrapping_add(i as u64);
        seed = seed.wrapping_mul(multiplier);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_and_draws_are_fios() {
        // fio's mix seed of job 1 with the default randseed (0x89), and the generator's
        // first words and first draws of 1..=100 from it, computed by fio 3.33's
        // lib/rand.c built from its source (worker::rwmix's test holds the reads and
        // writes these draws give, against fio's own runs).
        assert_eq!(job_seeds(0x89, 1)[MIX_SEED], 0x22b5_8261_5b78_008d);
        let mut t = Taus88::new(job_seeds(0x89, 1)[MIX_SEED]);
        let words: Vec<u32> = (0..3).map(|_| t.next_u32()).collect();
        assert_eq!(words, [0x77c2_cda6, 0x0957_f7ee, 0x5cc8_0bbb]);
        let mut t = Taus88::new(job_seeds(0x89, 1)[MIX_SEED]);
        let draws: Vec<u32> = (0..8).map(|_| t.between(1, 100)).collect();
        assert_eq!(draws, [47, 4, 37, 78, 26, 7, 100, 55]);
    }
}
