//! The capacity probe's sector tag: every 512-byte sector says which run wrote it and the
//! address it was written to, so a sector found elsewhere tells where it was meant to be.
//! Layout (little-endian): `0..8` magic, `8..16` run id, `16..24` address, `24..28` crc32c
//! of bytes 0..24, then a filler derived from the address (no two sectors alike, so neither
//! deduplication nor compression can fake them).

pub const SECTOR: usize = 512;
const MAGIC: [u8; 8] = *b"SNKRCAP1";

pub fn tag_sector(s: &mut [u8], run_id: u64, addr: u64) {
    s[..8].copy_from_slice(&MAGIC);
    s[8..16].copy_from_slice(&run_id.to_le_bytes());
    s[16..24].copy_from_slice(&addr.to_le_bytes());
    let crc = crc32c::crc32c(&s[..24]);
    s[24..28].copy_from_slice(&crc.to_le_bytes());
    let mut x = addr ^ run_id.rotate_left(17) ^ 0x9E37_79B9_7F4A_7C15;
    for w in s[28..].chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let b = x.to_le_bytes();
        w.copy_from_slice(&b[..w.len()]);
    }
}

/// Tags every sector of a unit written at `addr`.
pub fn fill_unit(unit: &mut [u8], run_id: u64, addr: u64) {
    for (i, s) in unit.chunks_exact_mut(SECTOR).enumerate() {
        tag_sector(s, run_id, addr + (i * SECTOR) as u64);
    }
}

/// The (run id, address) of a tagged sector, or None for anything else.
pub fn read_tag(s: &[u8]) -> Option<(u64, u64)> {
    if s.len() < 28 || s[..8] != MAGIC {
        return None;
    }
    let crc = u32::from_le_bytes([s[24], s[25], s[26], s[27]]);
    if crc != crc32c::crc32c(&s[..24]) {
        return None;
    }
    let mut run = [0u8; 8];
    run.copy_from_slice(&s[8..16]);
    let mut addr = [0u8; 8];
    addr.copy_from_slice(&s[16..24]);
    Some((u64::from_le_bytes(run), u64::from_le_bytes(addr)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tagged_sector_names_its_run_and_address_and_damage_is_not_read_as_a_tag() {
        let mut unit = vec![0u8; 4096];
        fill_unit(&mut unit, 7, 8192);
        assert_eq!(read_tag(&unit[512..1024]), Some((7, 8704)));
        assert_ne!(unit[100..200], unit[612..712]);
        unit[17] ^= 1;
        assert_eq!(read_tag(&unit[..512]), None);
        assert_eq!(read_tag(&[0u8; 512]), None);
    }
}
