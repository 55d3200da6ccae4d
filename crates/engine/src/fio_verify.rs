//! fio's `verify=` for bench jobs: every block written carries a header (its offset, its
//! write's sequence number, the checksum of the rest of the block by the job's method), one
//! per `verify_interval` bytes when that is set, or with `verify=pattern` only the pattern;
//! a `verify_pattern` with a header method fills the data after each header. A job that
//! writes reads its blocks back after the writing (`do_verify`) or every `verify_backlog`
//! blocks, and checks them against its own writes (the last write to each place; a block
//! that an overlapping later write cut is dropped). A job that only reads checks every
//! block it reads on its own terms (magic, header checksum, offset, data), as fio's verify
//! of data an earlier job or run wrote.

use std::collections::{BTreeMap, VecDeque};

use md5::Digest as _;
use sinkrate_jobspec::options::VerifyMethod;
use sinkrate_jobspec::JobOptions;

const MAGIC: &[u8; 4] = b"SRvf";
/// Where the header's checksum of the data starts; the fields before it are sinkrate's.
const DIGEST_AT: usize = 32;

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
    /// Bytes of the header at the start of each piece (the method's).
    header: usize,
    /// The offsets of the last writes completed in each file, the newest last, at most
    /// iodepth each: what a saved verify state keeps (fio's `last_write_comp`).
    completed: BTreeMap<usize, VecDeque<u64>>,
    depth: usize,
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
            header: method.header_bytes() as usize,
            completed: BTreeMap::new(),
            depth: o.iodepth.max(1) as usize,
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
        let header = self.header;
        if !self.pattern.is_empty() {
            fill_pattern(&mut piece[header..], &self.pattern);
        }
        let sum = checksum(self.method, &piece[header..]);
        let len = piece.len() as u32;
        let h = &mut piece[..header];
        h.fill(0);
        h[..4].copy_from_slice(MAGIC);
        h[4] = method_id(self.method);
        h[8..12].copy_from_slice(&len.to_le_bytes());
        h[16..24].copy_from_slice(&offset.to_le_bytes());
        h[24..32].copy_from_slice(&self.seq.to_le_bytes());
        h[DIGEST_AT..DIGEST_AT + sum.len()].copy_from_slice(&sum);
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

    /// A write to `file` at `offset` completed.
    pub fn write_completed(&mut self, file: usize, offset: u64) {
        let last = self.completed.entry(file).or_default();
        if last.len() == self.depth {
            last.pop_front();
        }
        last.push_back(offset);
    }

    /// The job's write state as fio saves it: writes issued, and each file's last
    /// completions, the newest first.
    pub fn write_state(
        &self,
        name: &str,
        index: u64,
        files: usize,
        seed: u64,
    ) -> sinkrate_formats::fio_verify_state::JobWriteState {
        sinkrate_formats::fio_verify_state::JobWriteState {
            name: name.to_string(),
            index,
            iodepth: self.depth as u32,
            files: files as u32,
            writes_issued: self.seq,
            completions: self
                .completed
                .iter()
                .flat_map(|(f, offsets)| offsets.iter().rev().map(move |o| (*f as u64, *o)))
                .collect(),
            random_state: [seed, 0, 0, 0, 0, 0],
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
        let header = self.header;
        if piece.len() < header {
            return Some(format!(
                "short read: {} bytes, less than a header",
                piece.len()
            ));
        }
        let h = &piece[..header];
        if &h[..4] != MAGIC {
            return Some(format!(
                "bad magic header {:02x?}, wanted {MAGIC:02x?}",
                &h[..4]
            ));
        }
        let mut copy = h.to_vec();
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
        let data = &piece[header..];
        if !self.pattern.is_empty() {
            if let Some(i) = pattern_mismatch(data, &self.pattern) {
                return Some(format!(
                    "pattern mismatch at byte {} of the block",
                    i + header
                ));
            }
        }
        let sum = checksum(self.method, data);
        (h[DIGEST_AT..DIGEST_AT + sum.len()] != sum[..])
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
        VerifyMethod::Crc64 => 6,
        VerifyMethod::Crc32 => 7,
        VerifyMethod::Crc16 => 8,
        VerifyMethod::Crc7 => 9,
        VerifyMethod::Xxhash => 10,
        VerifyMethod::Sha1 => 11,
        VerifyMethod::Sha512 => 12,
        VerifyMethod::Sha3_224 => 13,
        VerifyMethod::Sha3_256 => 14,
        VerifyMethod::Sha3_384 => 15,
        VerifyMethod::Sha3_512 => 16,
    }
}

/// fio's crc32 (`crc/crc32.c`): the POSIX cksum polynomial, not reflected, starting from 0
/// and without cksum's final inversion or length, so no catalogue entry is exactly it.
const FIO_CRC32: crc::Algorithm<u32> = crc::Algorithm {
    width: 32,
    poly: 0x04c1_1db7,
    init: 0,
    refin: false,
    refout: false,
    xorout: 0,
    // CRC-32/CKSUM's check value (0x765e7680) with its final inversion undone.
    check: 0x89a1_897f,
    residue: 0,
};

/// fio's seed for XXH32 (`verify.c`: `XXH32_init(1)`).
const FIO_XXHASH_SEED: u32 = 1;

static CRC7: crc::Crc<u8> = crc::Crc::<u8>::new(&crc::CRC_7_MMC);
static CRC16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_ARC);
static CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&FIO_CRC32);
static CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);

/// The method's checksum of `data`, as fio computes it for the same bytes: crc32c without
/// its final inversion, crc7 the
/// MMC CRC-7 (`crc/crc7.c`), crc16 CRC-16/ARC (`crc/crc16.c`), crc64 the Jones
/// polynomial reflected from 0 (`crc/crc64.c`, the catalogue's CRC-64/REDIS), xxhash
/// XXH32 seeded with 1; the digests are the standard ones.
fn checksum(m: VerifyMethod, data: &[u8]) -> Vec<u8> {
    match m {
        VerifyMethod::Crc32c => sinkrate_formats::fio_verify_state::fio_crc32c(data)
            .to_le_bytes()
            .to_vec(),
        VerifyMethod::Md5 => md5::Md5::digest(data).to_vec(),
        VerifyMethod::Sha256 => sha2::Sha256::digest(data).to_vec(),
        VerifyMethod::Sha512 => sha2::Sha512::digest(data).to_vec(),
        VerifyMethod::Sha1 => sha1::Sha1::digest(data).to_vec(),
        VerifyMethod::Sha3_224 => sha3::Sha3_224::digest(data).to_vec(),
        VerifyMethod::Sha3_256 => sha3::Sha3_256::digest(data).to_vec(),
        VerifyMethod::Sha3_384 => sha3::Sha3_384::digest(data).to_vec(),
        VerifyMethod::Sha3_512 => sha3::Sha3_512::digest(data).to_vec(),
        VerifyMethod::Crc7 => vec![CRC7.checksum(data)],
        VerifyMethod::Crc16 => CRC16.checksum(data).to_le_bytes().to_vec(),
        VerifyMethod::Crc32 => CRC32.checksum(data).to_le_bytes().to_vec(),
        VerifyMethod::Crc64 => CRC64.checksum(data).to_le_bytes().to_vec(),
        VerifyMethod::Xxhash => xxhash_rust::xxh32::xxh32(data, FIO_XXHASH_SEED)
            .to_le_bytes()
            .to_vec(),
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
        for (m, _, _) in sinkrate_jobspec::options::VERIFY_METHODS.iter().copied() {
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
    fn the_checksums_are_the_numbers_fios_own_code_computes() {
        // Computed by fio 3.33's crc/crc32c.c, crc7.c, crc16.c, crc32.c, crc64.c and xxhash.c (with
        // verify.c's seed 1), built from fio's source, on the catalogue's check string and
        // on a 4096-byte block of (i * 7) as u8.
        let block: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        let expected: [(VerifyMethod, u64, u64); 6] = [
            (VerifyMethod::Crc32c, 0x1cf9_6d7c, 0x3feb_c590),
            (VerifyMethod::Crc7, 0x75, 0x40),
            (VerifyMethod::Crc16, 0xbb3d, 0x7ace),
            (VerifyMethod::Crc32, 0x89a1_897f, 0x49ff_c1c9),
            (
                VerifyMethod::Crc64,
                0xe9c6_d914_c4b8_d9ca,
                0x12c9_967c_c093_edd4,
            ),
            (VerifyMethod::Xxhash, 0xf261_918c, 0xa6fc_b557),
        ];
        let as_number = |bytes: Vec<u8>| {
            let mut w = [0u8; 8];
            w[..bytes.len()].copy_from_slice(&bytes);
            u64::from_le_bytes(w)
        };
        for (m, check, of_block) in expected {
            assert_eq!(as_number(checksum(m, b"123456789")), check, "{m:?}");
            assert_eq!(as_number(checksum(m, &block)), of_block, "{m:?}");
        }
        for (m, _, _) in sinkrate_jobspec::options::VERIFY_METHODS {
            assert_eq!(checksum(*m, &block).len() as u64, m.digest_bytes(), "{m:?}");
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
