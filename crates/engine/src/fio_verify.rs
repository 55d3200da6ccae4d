//! fio's `verify=` for bench jobs: every block written carries a header (its offset, its
//! write's sequence number, the checksum of the rest of the block by the job's method), one
//! per `verify_interval` bytes when that is set, or with `verify=pattern` only the pattern;
//! a `verify_pattern` with a header method fills the data after each header. A job that
//! writes reads its blocks back after the writing (`do_verify`) or every `verify_backlog`
//! blocks, and checks them against its own writes (the last write to each place; a block
//! that an overlapping later write cut is dropped). A job that only reads checks every
//! block it reads on its own terms (magic, header checksum, offset, data), as fio's verify
//! of data an earlier job or run wrote.

use std::collections::BTreeMap;

use md5::Digest as _;
use sinkrate_jobspec::options::VerifyMethod;
use sinkrate_jobspec::JobOptions;

const HEADER: usize = sinkrate_jobspec::VERIFY_HEADER_BYTES as usize;
const MAGIC: &[u8; 4] = b"SRvf";

/// One block as it was last written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub len: u32,
    pub seq: u64,
}

pub struct VerifyState {
    method: VerifyMethod,
    pattern: Vec<u8>,
    /// (file, offset) -> the last write there.
    blocks: BTreeMap<(usize, u64), Written>,
    /// Blocks written since the last backlog check, in order.
    recent: Vec<(usize, u64)>,
    seq: u64,
    pub backlog: u64,
    pub at_end: bool,
    /// Bytes per header (0: the whole block).
    interval: usize,
    /// The job only reads: each block read is checked as it arrives.
    pub reads_only: bool,
}

impl VerifyState {
    pub fn from_options(o: &JobOptions) -> Option<VerifyState> {
        let method = o.verify?;
        Some(VerifyState {
            method,
            pattern: o.verify_pattern.clone().unwrap_or_default(),
            blocks: BTreeMap::new(),
            recent: Vec::new(),
            seq: 0,
            backlog: o.verify_backlog,
            at_end: o.do_verify,
            interval: sinkrate_jobspec::verify_interval(o) as usize,
            // As fio: a read job checks what it reads only with do_verify.
            reads_only: !o.rw.writes() && o.do_verify,
        })
    }

    /// The header-carrying pieces of a block of `len` bytes: (start, length).
    fn pieces(&self, len: usize) -> impl Iterator<Item = (usize, usize)> {
        let step = if self.interval == 0 {
            len.max(1)
        } else {
            self.interval
        };
        (0..len)
            .step_by(step)
            .map(move |at| (at, step.min(len - at)))
    }

    /// Fills in the block about to be written at (file, offset) and remembers it.
    pub fn stamp(&mut self, block: &mut [u8], file: usize, offset: u64) {
        self.seq += 1;
        let len = block.len();
        if self.method == VerifyMethod::Pattern {
            fill_pattern(block, &self.pattern);
        } else {
            let pieces: Vec<(usize, usize)> = self.pieces(len).collect();
            for (at, n) in pieces {
                self.stamp_piece(&mut block[at..at + n], offset + at as u64);
            }
        }
        self.remember(file, offset, len as u32);
    }

    /// One header and its data: the pattern after the header when there is one.
    fn stamp_piece(&self, piece: &mut [u8], offset: u64) {
        if !self.pattern.is_empty() {
            fill_pattern(&mut piece[HEADER..], &self.pattern);
        }
        let sum = checksum(self.method, &piece[HEADER..]);
        let len = piece.len() as u32;
        let h = &mut piece[..HEADER];
        h.fill(0);
        h[..4].copy_from_slice(MAGIC);
        h[4] = method_id(self.method);
        h[8..12].copy_from_slice(&len.to_le_bytes());
        h[16..24].copy_from_slice(&offset.to_le_bytes());
        h[24..32].copy_from_slice(&self.seq.to_le_bytes());
        h[32..32 + sum.len()].copy_from_slice(&sum);
        let crc = crc32c::crc32c(&h[..]);
        h[12..16].copy_from_slice(&crc.to_le_bytes());
    }

    fn remember(&mut self, file: usize, offset: u64, len: u32) {
        let end = offset + u64::from(len);
        // A later write that overlaps an earlier one leaves neither block whole but itself.
        let before = self
            .blocks
            .range(..(file, offset))
            .next_back()
            .filter(|((f, o), w)| *f == file && o + u64::from(w.len) > offset)
            .map(|(k, _)| *k);
        let inside: Vec<(usize, u64)> = self
            .blocks
            .range((file, offset)..(file, end))
            .map(|(k, _)| *k)
            .collect();
        for k in before.into_iter().chain(inside) {
            self.blocks.remove(&k);
        }
        self.blocks
            .insert((file, offset), Written { len, seq: self.seq });
        if self.backlog > 0 {
            self.recent.push((file, offset));
        }
    }

    /// Whether `verify_backlog` writes were issued since the last backlog check.
    pub fn backlog_is_due(&self) -> bool {
        self.backlog > 0 && self.recent.len() as u64 >= self.backlog
    }

    /// The blocks a backlog check reads now (every `verify_backlog` writes), or none.
    pub fn backlog_due(&mut self) -> Vec<((usize, u64), Written)> {
        if self.backlog == 0 || (self.recent.len() as u64) < self.backlog {
            return Vec::new();
        }
        let recent = std::mem::take(&mut self.recent);
        recent
            .into_iter()
            .filter_map(|k| self.blocks.get(&k).map(|w| (k, *w)))
            .collect()
    }

    /// The blocks written since the last backlog check (checked at the end).
    pub fn backlog_rest(&mut self) -> Vec<((usize, u64), Written)> {
        let recent = std::mem::take(&mut self.recent);
        recent
            .into_iter()
            .filter_map(|k| self.blocks.get(&k).map(|w| (k, *w)))
            .collect()
    }

    /// Every block, in file and offset order, for the check after the writing.
    pub fn all(&self) -> Vec<((usize, u64), Written)> {
        self.blocks.iter().map(|(k, w)| (*k, *w)).collect()
    }

    /// What is wrong with `data`, read back from `offset`, against what was written there.
    pub fn check(&self, data: &[u8], offset: u64, w: Written) -> Option<String> {
        if data.len() < w.len as usize {
            return Some(format!("short read: {} of {} bytes", data.len(), w.len));
        }
        self.check_block(&data[..w.len as usize], offset, Some(w.seq))
    }

    /// What is wrong with `data`, read from `offset` by a job that only reads: each header
    /// must be sinkrate's, whole, for this place, and match its data (which write it was
    /// is not known).
    pub fn check_read(&self, data: &[u8], offset: u64) -> Option<String> {
        self.check_block(data, offset, None)
    }

    fn check_block(&self, data: &[u8], offset: u64, seq: Option<u64>) -> Option<String> {
        if self.method == VerifyMethod::Pattern {
            return pattern_mismatch(data, &self.pattern)
                .map(|at| format!("pattern mismatch at byte {at} of the block"));
        }
        self.pieces(data.len()).find_map(|(at, n)| {
            let piece_at = offset + at as u64;
            self.check_piece(&data[at..at + n], piece_at, seq)
                .map(|why| match self.interval {
                    0 => why,
                    i => format!("in the {i}-byte interval at offset {piece_at}: {why}"),
                })
        })
    }

    fn check_piece(&self, piece: &[u8], offset: u64, seq: Option<u64>) -> Option<String> {
        if piece.len() < HEADER {
            return Some(format!(
                "short read: {} bytes, less than a header",
                piece.len()
            ));
        }
        let h = &piece[..HEADER];
        if &h[..4] != MAGIC {
            return Some(format!(
                "bad magic header {:02x?}, wanted {MAGIC:02x?}",
                &h[..4]
            ));
        }
        let mut copy = [0u8; HEADER];
        copy.copy_from_slice(h);
        copy[12..16].fill(0);
        if crc32c::crc32c(&copy) != le32(h, 12) {
            return Some("the block's header does not match its own checksum".into());
        }
        let (at, written) = (le64(h, 16), le64(h, 24));
        if at != offset {
            return Some(format!(
                "the block written for offset {at} is here (a misdirected or wrapped write)"
            ));
        }
        if let Some(last) = seq.filter(|last| *last != written) {
            return Some(format!(
                "stale block: write #{written} is here, write #{last} was the last to this place"
            ));
        }
        if h[4] != method_id(self.method) || le32(h, 8) as usize != piece.len() {
            return Some("the header names another method or length".into());
        }
        let data = &piece[HEADER..];
        if !self.pattern.is_empty() {
            if let Some(i) = pattern_mismatch(data, &self.pattern) {
                return Some(format!(
                    "pattern mismatch at byte {} of the block",
                    i + HEADER
                ));
            }
        }
        let sum = checksum(self.method, data);
        (h[32..32 + sum.len()] != sum[..])
            .then(|| format!("{} mismatch in the block's data", self.method.fio_name()))
    }
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

fn method_id(m: VerifyMethod) -> u8 {
    match m {
        VerifyMethod::Crc32c => 1,
        VerifyMethod::Md5 => 2,
        VerifyMethod::Sha256 => 3,
        VerifyMethod::Pattern => 4,
        VerifyMethod::Meta => 5,
    }
}

fn checksum(m: VerifyMethod, data: &[u8]) -> Vec<u8> {
    match m {
        VerifyMethod::Crc32c => crc32c::crc32c(data).to_le_bytes().to_vec(),
        VerifyMethod::Md5 => md5::Md5::digest(data).to_vec(),
        VerifyMethod::Sha256 => sha2::Sha256::digest(data).to_vec(),
        VerifyMethod::Pattern | VerifyMethod::Meta => Vec::new(),
    }
}

fn fill_pattern(block: &mut [u8], pattern: &[u8]) {
    for (i, b) in block.iter_mut().enumerate() {
        *b = pattern[i % pattern.len()];
    }
}

fn pattern_mismatch(data: &[u8], pattern: &[u8]) -> Option<usize> {
    data.iter()
        .enumerate()
        .position(|(i, b)| *b != pattern[i % pattern.len()])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(method: VerifyMethod) -> VerifyState {
        let o = JobOptions {
            verify: Some(method),
            verify_pattern: (method == VerifyMethod::Pattern).then(|| vec![0xde, 0xad]),
            ..JobOptions::default()
        };
        VerifyState::from_options(&o).expect("verify set")
    }

    #[test]
    fn intervals_carry_their_own_headers_and_reads_check_them_alone() {
        let o = JobOptions {
            verify: Some(VerifyMethod::Meta),
            verify_pattern: Some(vec![0xaa, 0x55, 0x5a, 0xa5]),
            verify_interval: 512,
            ..JobOptions::default()
        };
        let mut v = VerifyState::from_options(&o).expect("verify set");
        let mut block = vec![0u8; 4096];
        v.stamp(&mut block, 0, 65536);
        for at in (0..4096).step_by(512) {
            assert_eq!(&block[at..at + 4], MAGIC, "a header at {at}");
            assert_eq!(le64(&block, at + 16), 65536 + at as u64);
        }
        assert_eq!(v.check_read(&block, 65536), None);
        // With a pattern, meta checks the data too.
        block[1000] ^= 1;
        let why = v.check_read(&block, 65536).expect("caught");
        assert!(why.contains("interval at offset 66048"), "{why}");
        block[1000] ^= 1;
        let why = v.check_read(&block, 0).expect("elsewhere");
        assert!(why.contains("offset 65536 is here"), "{why}");
    }

    #[test]
    fn every_method_passes_its_own_block_and_catches_a_flipped_bit() {
        for m in [
            VerifyMethod::Crc32c,
            VerifyMethod::Md5,
            VerifyMethod::Sha256,
            VerifyMethod::Pattern,
            VerifyMethod::Meta,
        ] {
            let mut v = state(m);
            let mut block: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
            v.stamp(&mut block, 0, 8192);
            let w = v.all()[0].1;
            assert_eq!(v.check(&block, 8192, w), None, "{m:?}");
            block[100] ^= 1;
            let caught = v.check(&block, 8192, w).is_some();
            assert_eq!(
                caught,
                m != VerifyMethod::Meta,
                "{m:?}: meta checks the header only"
            );
        }
    }

    #[test]
    fn a_block_elsewhere_or_older_is_named() {
        let mut v = state(VerifyMethod::Crc32c);
        let mut first = vec![1u8; 4096];
        v.stamp(&mut first, 0, 0);
        let mut second = vec![2u8; 4096];
        v.stamp(&mut second, 0, 4096);
        let all = v.all();
        let why = v.check(&second, 0, all[0].1).expect("misplaced");
        assert!(why.contains("offset 4096"), "{why}");
        let mut again = vec![3u8; 4096];
        v.stamp(&mut again, 0, 0);
        let latest = v.all()[0].1;
        let why = v.check(&first, 0, latest).expect("stale");
        assert!(why.starts_with("stale block"), "{why}");
    }

    #[test]
    fn an_overlapping_write_replaces_what_it_cuts() {
        let mut v = state(VerifyMethod::Crc32c);
        let mut b = vec![0u8; 8192];
        v.stamp(&mut b, 0, 0);
        let mut c = vec![0u8; 4096];
        v.stamp(&mut c, 0, 4096);
        let offsets: Vec<u64> = v.all().iter().map(|((_, o), _)| *o).collect();
        assert_eq!(offsets, vec![4096]);
    }
}
