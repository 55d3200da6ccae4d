//! One verify block: a 64-byte header, then a pseudo-random payload unique to the run, the
//! generation and the block (so neither compression nor deduplication can fake it). Pure: no
//! I/O.
//!
//! Header layout (little-endian):
//! `0..8` magic, `8..10` version, `10..12` header length, `12..16` crc32c of the header (this
//! field zeroed), `16..24` run id, `24..28` generation, `28..32` crc32c of the payload,
//! `32..40` block number, `40..48` byte offset, `48..56` blocks in the run, `56..60` block
//! length, `60..64` write time (seconds since the Unix epoch, low 32 bits).

use sinkrate_model::verify::Finding;

pub const MAGIC: [u8; 8] = *b"SNKRVRFY";
pub const VERSION: u16 = 1;
pub const HEADER_LEN: usize = 64;
/// The smallest block: a sector-aligned header and some payload.
pub const MIN_BLOCK: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub run_id: u64,
    pub generation: u32,
    pub payload_crc: u32,
    pub block: u64,
    pub offset: u64,
    pub total_blocks: u64,
    pub length: u32,
    pub written_unix_s: u32,
}

fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn get_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn get_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}
fn get_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn header_crc(h: &[u8]) -> u32 {
    let c = crc32c::crc32c(&h[..12]);
    let c = crc32c::crc32c_append(c, &[0u8; 4]);
    crc32c::crc32c_append(c, &h[16..HEADER_LEN])
}

impl Header {
    fn encode(&self, b: &mut [u8]) {
        b[..8].copy_from_slice(&MAGIC);
        put_u16(b, 8, VERSION);
        put_u16(b, 10, HEADER_LEN as u16);
        put_u32(b, 12, 0);
        put_u64(b, 16, self.run_id);
        put_u32(b, 24, self.generation);
        put_u32(b, 28, self.payload_crc);
        put_u64(b, 32, self.block);
        put_u64(b, 40, self.offset);
        put_u64(b, 48, self.total_blocks);
        put_u32(b, 56, self.length);
        put_u32(b, 60, self.written_unix_s);
        let crc = header_crc(&b[..HEADER_LEN]);
        put_u32(b, 12, crc);
    }

    /// The header at the start of `b`: None when there is no magic; Err when the magic is
    /// there but the header does not match its checksum.
    pub fn decode(b: &[u8]) -> Option<Result<Header, ()>> {
        if b.len() < HEADER_LEN || b[..8] != MAGIC {
            return None;
        }
        if get_u16(b, 8) != VERSION
            || get_u16(b, 10) as usize != HEADER_LEN
            || get_u32(b, 12) != header_crc(&b[..HEADER_LEN])
        {
            return Some(Err(()));
        }
        Some(Ok(Header {
            run_id: get_u64(b, 16),
            generation: get_u32(b, 24),
            payload_crc: get_u32(b, 28),
            block: get_u64(b, 32),
            offset: get_u64(b, 40),
            total_blocks: get_u64(b, 48),
            length: get_u32(b, 56),
            written_unix_s: get_u32(b, 60),
        }))
    }
}

/// What a block at a place should be.
#[derive(Debug, Clone, Copy)]
pub struct Expected {
    pub run_id: u64,
    pub generation: u32,
    pub block: u64,
    pub offset: u64,
    pub total_blocks: u64,
}

/// The seed of a block's payload: unique to the run, the block and the generation.
pub fn payload_seed(e: &Expected) -> u64 {
    e.run_id
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(e.block.rotate_left(17))
        ^ u64::from(e.generation)
}

/// Fills `buf` (the whole block) with the block `e` describes: `payload` fills the bytes after
/// the header from the block's [`payload_seed`] (the generator is the caller's, so that this
/// crate stays free of anything but layouts), then the header is written over its checksum.
pub fn fill(
    buf: &mut [u8],
    e: &Expected,
    written_unix_s: u32,
    payload: impl FnOnce(u64, &mut [u8]),
) {
    payload(payload_seed(e), &mut buf[HEADER_LEN..]);
    let header = Header {
        run_id: e.run_id,
        generation: e.generation,
        payload_crc: crc32c::crc32c(&buf[HEADER_LEN..]),
        block: e.block,
        offset: e.offset,
        total_blocks: e.total_blocks,
        length: buf.len() as u32,
        written_unix_s,
    };
    header.encode(buf);
}

/// What the block read back into `buf` is, against what belongs there.
pub fn check(buf: &[u8], e: &Expected) -> Finding {
    let h = match Header::decode(buf) {
        None if buf.iter().all(|&b| b == 0) => return Finding::Zeros,
        None => return Finding::Garbage,
        Some(Err(())) => return Finding::Corrupt { header: true },
        Some(Ok(h)) => h,
    };
    if h.run_id != e.run_id {
        return Finding::Stale {
            run_id: h.run_id,
            generation: h.generation,
            written_unix_s: h.written_unix_s,
        };
    }
    if h.offset != e.offset || h.block != e.block {
        return Finding::Misplaced {
            from_block: h.block,
            from_offset: h.offset,
        };
    }
    if h.generation != e.generation {
        return Finding::Stale {
            run_id: h.run_id,
            generation: h.generation,
            written_unix_s: h.written_unix_s,
        };
    }
    if h.length as usize != buf.len() || crc32c::crc32c(&buf[HEADER_LEN..]) != h.payload_crc {
        return Finding::Corrupt { header: false };
    }
    Finding::Ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expected(block: u64) -> Expected {
        Expected {
            run_id: 0xfeed,
            generation: 2,
            block,
            offset: block * 8192,
            total_blocks: 16,
        }
    }

    fn block(e: &Expected) -> Vec<u8> {
        let mut b = vec![0u8; 8192];
        // Any generator will do for the layout: splitmix64, one word at a time.
        fill(&mut b, e, 1_700_000_000, |mut seed, payload| {
            for chunk in payload.chunks_mut(8) {
                seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let z = (seed ^ (seed >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB) ^ (z >> 31);
                chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
            }
        });
        b
    }

    #[test]
    fn each_kind_of_bad_block_is_told_apart() {
        let e = expected(5);
        assert_eq!(check(&block(&e), &e), Finding::Ok);
        assert_eq!(check(&vec![0u8; 8192], &e), Finding::Zeros);
        assert_eq!(check(&vec![0xa5u8; 8192], &e), Finding::Garbage);

        let other_run = Expected {
            run_id: 0xbeef,
            ..e
        };
        assert!(matches!(
            check(&block(&other_run), &e),
            Finding::Stale { run_id: 0xbeef, .. }
        ));
        let older = Expected { generation: 1, ..e };
        assert!(matches!(
            check(&block(&older), &e),
            Finding::Stale { generation: 1, .. }
        ));
        // Block 0's data read where block 5 belongs: a wrap-around.
        assert_eq!(
            check(&block(&expected(0)), &e),
            Finding::Misplaced {
                from_block: 0,
                from_offset: 0
            }
        );
        let mut flipped = block(&e);
        flipped[5000] ^= 0x10;
        assert_eq!(check(&flipped, &e), Finding::Corrupt { header: false });
        let mut bad_header = block(&e);
        bad_header[20] ^= 1;
        assert_eq!(check(&bad_header, &e), Finding::Corrupt { header: true });
    }

    #[test]
    fn payloads_differ_between_blocks_runs_and_generations() {
        let a = block(&expected(1));
        let b = block(&expected(2));
        let c = block(&Expected {
            generation: 3,
            ..expected(1)
        });
        assert_ne!(a[HEADER_LEN..], b[HEADER_LEN..]);
        assert_ne!(a[HEADER_LEN..], c[HEADER_LEN..]);
        let h = Header::decode(&a).expect("magic").expect("crc");
        assert_eq!((h.block, h.offset, h.length), (1, 8192, 8192));
    }
}
