//! The header a frame carries when its survival is to be counted (`--power-cut-at`): found
//! by its magic, checked by its own crc32c and its payload's, so a frame read back after a
//! cut is either whole and this run's, or not counted.

pub const HEADER_LEN: usize = 64;
const MAGIC: &[u8; 8] = b"SNKFRAME";
const VERSION: u16 = 1;

/// What a header says about its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Different for every run, so frames of an earlier run are not counted.
    pub run_tag: u64,
    pub frame: u64,
    /// The whole frame, header included.
    pub size: u64,
    pub capture_ns: u64,
}

fn crc_of_header(h: &[u8]) -> u32 {
    let mut copy = [0u8; HEADER_LEN];
    copy.copy_from_slice(&h[..HEADER_LEN]);
    copy[12..16].fill(0);
    crc32c::crc32c(&copy)
}

/// Writes `h` over the first bytes of `frame` (the whole frame, `h.size` bytes), with the
/// crc32c of the rest of it.
pub fn stamp(frame: &mut [u8], h: &FrameHeader) {
    let payload_crc = crc32c::crc32c(&frame[HEADER_LEN..]);
    let b = &mut frame[..HEADER_LEN];
    b.fill(0);
    b[..8].copy_from_slice(MAGIC);
    b[8..10].copy_from_slice(&VERSION.to_le_bytes());
    b[10..12].copy_from_slice(&(HEADER_LEN as u16).to_le_bytes());
    b[16..24].copy_from_slice(&h.run_tag.to_le_bytes());
    b[24..32].copy_from_slice(&h.frame.to_le_bytes());
    b[32..40].copy_from_slice(&h.size.to_le_bytes());
    b[40..48].copy_from_slice(&h.capture_ns.to_le_bytes());
    b[48..52].copy_from_slice(&payload_crc.to_le_bytes());
    let crc = crc_of_header(b);
    b[12..16].copy_from_slice(&crc.to_le_bytes());
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

/// The header at the start of `b`, if it is one whose own checksum holds. The payload's
/// checksum is returned for [`payload_ok`].
pub fn read(b: &[u8]) -> Option<(FrameHeader, u32)> {
    if b.len() < HEADER_LEN || &b[..8] != MAGIC || u32_at(b, 12) != crc_of_header(b) {
        return None;
    }
    let h = FrameHeader {
        run_tag: u64_at(b, 16),
        frame: u64_at(b, 24),
        size: u64_at(b, 32),
        capture_ns: u64_at(b, 40),
    };
    (h.size >= HEADER_LEN as u64).then_some((h, u32_at(b, 48)))
}

/// Whether the bytes after the header are the frame's as written.
pub fn payload_ok(payload: &[u8], crc: u32) -> bool {
    crc32c::crc32c(payload) == crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamped_frame_reads_back_and_any_changed_byte_is_seen() {
        let mut frame = vec![7u8; 1000];
        let h = FrameHeader {
            run_tag: 42,
            frame: 9,
            size: 1000,
            capture_ns: 300_000_000,
        };
        stamp(&mut frame, &h);
        let (got, crc) = read(&frame).expect("a header");
        assert_eq!(got, h);
        assert!(payload_ok(&frame[HEADER_LEN..], crc));
        frame[500] ^= 1;
        assert!(!payload_ok(&frame[HEADER_LEN..], crc));
        frame[20] ^= 1;
        assert!(read(&frame).is_none());
        assert!(read(&[0u8; 10]).is_none());
    }
}
