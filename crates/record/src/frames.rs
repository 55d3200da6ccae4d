//! Frame sizes: fixed, or a bitrate with a GOP (an I-frame every N frames, R times larger than
//! a P-frame) and a seeded jitter, chosen so that the mean rate is exact over every GOP.

use sinkrate_model::record::FrameSizes;
use sinkrate_platform::rng::Rng;

/// Produces frame sizes in order; over each whole GOP the total is exact (to the byte).
pub struct FrameSource {
    sizes: FrameSizes,
    fps: f64,
    rng: Rng,
    index: u64,
    gop_target: f64,
    gop_sum: f64,
}

impl FrameSource {
    pub fn new(sizes: FrameSizes, fps: f64, seed: u64) -> FrameSource {
        FrameSource {
            sizes,
            fps,
            rng: Rng::new(seed),
            index: 0,
            gop_target: 0.0,
            gop_sum: 0.0,
        }
    }

    pub fn next_size(&mut self) -> u64 {
        let i = self.index;
        self.index += 1;
        match &self.sizes {
            FrameSizes::Fixed { bytes } => *bytes,
            FrameSizes::Bitrate { gop, jitter, .. } => {
                let gop = (*gop).max(1) as u64;
                let pos = i % gop;
                let (isz, psz) = self.sizes.i_and_p(self.fps);
                if pos == 0 {
                    self.gop_target = self.sizes.mean_bytes(self.fps) * gop as f64;
                    self.gop_sum = 0.0;
                }
                let nominal = if pos == 0 && gop > 1 { isz } else { psz };
                let remaining_nominal = if pos == 0 {
                    isz + (gop - 1) as f64 * psz
                } else {
                    (gop - pos) as f64 * psz
                };
                let remaining = self.gop_target - self.gop_sum;
                // Each frame takes its share of what the GOP still has to carry, jittered; the
                // last takes the rest, so every GOP is exact.
                let size = if pos == gop - 1 {
                    remaining
                } else {
                    remaining * nominal / remaining_nominal
                        * (1.0 + jitter * (2.0 * self.rng.unit() - 1.0))
                };
                let size = size
                    .round()
                    .clamp(1.0, self.sizes.max_bytes(self.fps) as f64);
                self.gop_sum += size;
                size as u64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_sizes() {
        let mut s = FrameSource::new(FrameSizes::Fixed { bytes: 3_500_000 }, 30.0, 1);
        assert_eq!(s.next_size(), 3_500_000);
        assert_eq!(FrameSizes::Fixed { bytes: 7 }.max_bytes(30.0), 7);
    }

    #[test]
    fn bitrate_with_gop_is_exact_per_gop_and_i_frames_are_larger() {
        let sizes = FrameSizes::Bitrate {
            bits_per_s: 12_000_000,
            gop: 30,
            i_to_p: 8.0,
            jitter: 0.2,
        };
        let max = sizes.max_bytes(30.0);
        let mut s = FrameSource::new(sizes, 30.0, 42);
        for _gop in 0..10 {
            let frames: Vec<u64> = (0..30).map(|_| s.next_size()).collect();
            let total: u64 = frames.iter().sum();
            // 12 Mbit/s at 30 fps: 50,000 bytes a frame, 1,500,000 a GOP.
            assert!((total as i64 - 1_500_000).abs() <= 1, "{total}");
            assert!(frames[0] > 4 * frames[1], "{frames:?}");
            assert!(frames.iter().all(|f| *f <= max), "{frames:?} > {max}");
        }
    }
}
