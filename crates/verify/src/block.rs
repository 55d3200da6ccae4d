//! One verify block's layout (in sinkrate_formats, where the fuzz targets reach it), filled
//! with the platform's generator.

use sinkrate_formats::verify_block::*;

/// Fills `buf` (the whole block) with the block `e` describes, its payload from the seeded
/// xorshift generator that every sinkrate run uses.
pub fn fill(buf: &mut [u8], e: &Expected, written_unix_s: u32) {
    sinkrate_formats::verify_block::fill(buf, e, written_unix_s, |seed, payload| {
        sinkrate_platform::rng::Rng::new(seed).fill(payload)
    });
}
