//! Frame sizes: fixed, or a bitrate with a GOP (an I-frame every N frames, R times larger than
//! a P-frame) and a seeded jitter, chosen so that the mean rate is exact over every GOP.

use sinkrate_platform::rng::Rng;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum FrameSizes {
    Fixed {
        bytes: u64,
    },
    Bitrate {
        bits_per_s: u64,
        fps: f64,
        gop: u32,
        i_to_p: f64,
        /// Relative jitter of each frame's size (0.1 = +-10%), compensated within the GOP.
        jitter: f64,
    },
}

impl FrameSizes {
    pub fn mean_bytes(&self) -> f64 {
        match self {
            FrameSizes::Fixed { bytes } => *bytes as f64,
            FrameSizes::Bitrate {
                bits_per_s, fps, ..
            } => *bits_per_s as f64 / 8.0 / fps,
        }
    }

    /// The largest frame this source can produce (buffers are sized for it). The residual
    /// of a GOP is spread over its remaining frames, so a late P-frame can grow to about
    /// e^(jitter x ln(gop)) of its share; 2.5x covers jitter up to 0.25 for GOPs up to 120.
    pub fn max_bytes(&self) -> u64 {
        match self {
            FrameSizes::Fixed { bytes } => *bytes,
            FrameSizes::Bitrate { jitter, .. } => {
                let (i, p) = self.i_and_p();
                (i.max(p * 2.5) * (1.0 + jitter)).ceil() as u64 + 4096
            }
        }
    }

    /// Mean sizes of I- and P-frames such that a GOP carries exactly gop * mean bytes.
    fn i_and_p(&self) -> (f64, f64) {
        match self {
            FrameSizes::Fixed { bytes } => (*bytes as f64, *bytes as f64),
            FrameSizes::Bitrate { gop, i_to_p, .. } => {
                let mean = self.mean_bytes();
                let n = (*gop).max(1) as f64;
                let p = mean * n / (i_to_p + n - 1.0);
                (p * i_to_p, p)
            }
        }
    }
}

/// Produces frame sizes in order; over each whole GOP the total is exact (to the byte).
pub struct FrameSource {
    sizes: FrameSizes,
    rng: Rng,
    index: u64,
    gop_target: f64,
    gop_sum: f64,
}

impl FrameSource {
    pub fn new(sizes: FrameSizes, seed: u64) -> FrameSource {
        FrameSource {
            sizes,
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
                let (isz, psz) = self.sizes.i_and_p();
                if pos == 0 {
                    self.gop_target = self.sizes.mean_bytes() * gop as f64;
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
                let size = size.round().clamp(1.0, self.sizes.max_bytes() as f64);
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
        let mut s = FrameSource::new(FrameSizes::Fixed { bytes: 3_500_000 }, 1);
        assert_eq!(s.next_size(), 3_500_000);
        assert_eq!(FrameSizes::Fixed { bytes: 7 }.max_bytes(), 7);
    }

    #[test]
    fn bitrate_with_gop_is_exact_per_gop_and_i_frames_are_larger() {
        let sizes = FrameSizes::Bitrate {
            bits_per_s: 12_000_000,
            fps: 30.0,
            gop: 30,
            i_to_p: 8.0,
            jitter: 0.2,
        };
        let max = sizes.max_bytes();
        let mut s = FrameSource::new(sizes, 42);
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
