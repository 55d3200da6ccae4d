//! fio's verify state file (`verify_state_save`, `verify_state_load`), in fio 3.33's own
//! layout so that fio's `t/verify-state` reader shows sinkrate's files and sinkrate reads
//! fio's. Little-endian throughout:
//!
//! - a 24-byte header: version (3), the size of what follows, its crc32c as fio computes
//!   it (Castagnoli from all ones, without the final inversion) (each a u64);
//! - one job's record (`struct thread_io_list`): completions kept (u64), iodepth (u32),
//!   number of files (u32), writes issued (u64), the job's index in the run (u64), the
//!   random generator's state (a u64 flag and 48 bytes), the job's name (64 bytes, NUL
//!   padded), then room for iodepth x files completions of (file number, offset) (two u64),
//!   the newest first, of which the first "completions kept" hold data.
//!
//! fio names the file `<prefix>-<job name with '/' as '.'>-<index>-verify.state`, the
//! prefix being `local` (in the current directory or fio's `--aux-path`).

pub const VERSION: u64 = 3;
const HEADER: usize = 24;
/// `struct thread_io_list` without its completions.
const RECORD: usize = 152;
const NAME_AT: usize = 88;
const NAME_LEN: usize = 64;
const COMPLETION: usize = 16;
/// A bound on what a state file may claim, so a damaged size cannot make a reader
/// allocate without limit: fio's iodepth is at most 65536, and files per job are few.
const MOST_COMPLETIONS: u64 = 1 << 24;

/// One job's write state at the moment it was saved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JobWriteState {
    pub name: String,
    /// The job's place among the run's jobs, from 0 (fio's thread number less one).
    pub index: u64,
    pub iodepth: u32,
    pub files: u32,
    /// Writes issued when the state was saved (fio's `numberio`).
    pub writes_issued: u64,
    /// The last write completions, the newest first: (file number, offset), at most
    /// iodepth per file.
    pub completions: Vec<(u64, u64)>,
    /// fio keeps its random generator's state here; sinkrate writes its job's seed as the
    /// first word (flag 1: 64-bit state) and reads the field back without using it.
    pub random_state: [u64; 6],
}

/// The file name fio gives a job's state (before the directory).
pub fn file_name(job_name: &str, index: u64) -> String {
    format!("local-{}-{index}-verify.state", job_name.replace('/', "."))
}

/// The bytes of a state file for one job.
pub fn encode(s: &JobWriteState) -> Vec<u8> {
    let room = s.iodepth as usize * s.files as usize;
    let size = RECORD + room.max(s.completions.len()) * COMPLETION;
    let mut rec = vec![0u8; size];
    put(&mut rec, 0, s.completions.len() as u64);
    rec[8..12].copy_from_slice(&s.iodepth.to_le_bytes());
    rec[12..16].copy_from_slice(&s.files.to_le_bytes());
    put(&mut rec, 16, s.writes_issued);
    put(&mut rec, 24, s.index);
    put(&mut rec, 32, 1);
    for (i, w) in s.random_state.iter().enumerate() {
        put(&mut rec, 40 + 8 * i, *w);
    }
    let name = s.name.as_bytes();
    let n = name.len().min(NAME_LEN - 1);
    rec[NAME_AT..NAME_AT + n].copy_from_slice(&name[..n]);
    for (i, (file, offset)) in s.completions.iter().enumerate() {
        put(&mut rec, RECORD + COMPLETION * i, *file);
        put(&mut rec, RECORD + COMPLETION * i + 8, *offset);
    }
    let mut out = Vec::with_capacity(HEADER + size);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(size as u64).to_le_bytes());
    out.extend_from_slice(&u64::from(fio_crc32c(&rec)).to_le_bytes());
    out.extend_from_slice(&rec);
    out
}

/// Reads a state file; the error says what is wrong in a few words.
pub fn decode(bytes: &[u8]) -> Result<JobWriteState, String> {
    if bytes.len() < HEADER {
        return Err(format!(
            "{} bytes, shorter than the state's {HEADER}-byte header",
            bytes.len()
        ));
    }
    let version = get(bytes, 0);
    if version != VERSION {
        return Err(format!(
            "version {version}, not fio's {VERSION} (fio 3.x's layout)"
        ));
    }
    let size = get(bytes, 8);
    let rec = &bytes[HEADER..];
    if size != rec.len() as u64 {
        return Err(format!(
            "the header gives {size} bytes of state, the file holds {}",
            rec.len()
        ));
    }
    if u64::from(fio_crc32c(rec)) != get(bytes, 16) {
        return Err("its crc32c does not match: the state is damaged".into());
    }
    if rec.len() < RECORD {
        return Err(format!(
            "{} bytes of state, less than one job's {RECORD}",
            rec.len()
        ));
    }
    let kept = get(rec, 0);
    let room = (rec.len() - RECORD) / COMPLETION;
    if kept > MOST_COMPLETIONS || kept as usize > room {
        return Err(format!(
            "it claims {kept} completions and has room for {room}"
        ));
    }
    let name_bytes = &rec[NAME_AT..NAME_AT + NAME_LEN];
    let end = name_bytes.iter().position(|b| *b == 0).unwrap_or(NAME_LEN);
    let mut random_state = [0u64; 6];
    for (i, w) in random_state.iter_mut().enumerate() {
        *w = get(rec, 40 + 8 * i);
    }
    Ok(JobWriteState {
        name: String::from_utf8_lossy(&name_bytes[..end]).into_owned(),
        index: get(rec, 24),
        iodepth: u32::from_le_bytes([rec[8], rec[9], rec[10], rec[11]]),
        files: u32::from_le_bytes([rec[12], rec[13], rec[14], rec[15]]),
        writes_issued: get(rec, 16),
        completions: (0..kept as usize)
            .map(|i| {
                (
                    get(rec, RECORD + COMPLETION * i),
                    get(rec, RECORD + COMPLETION * i + 8),
                )
            })
            .collect(),
        random_state,
    })
}

impl JobWriteState {
    /// fio's `verify_state_should_stop`: whether a verifying read of `offset` in file
    /// `file`, after `reads_done` reads, goes past what the writing job had completed.
    /// Reads well before the last iodepth writes go on; within them, only the offsets
    /// seen completing are read.
    pub fn read_goes_past(&self, reads_done: u64, file: u64, offset: u64) -> bool {
        let depth = u64::from(self.iodepth);
        let before_window =
            reads_done < depth || self.writes_issued.saturating_sub(reads_done) > depth;
        if before_window && self.writes_issued > depth {
            return false;
        }
        !self
            .completions
            .iter()
            .any(|(f, o)| *f == file && *o == offset)
    }
}

/// fio's crc32c (`crc/crc32c.c`): Castagnoli from all ones, without the final inversion
/// the standard one ends with. fio's verify headers and state files both use it.
pub fn fio_crc32c(data: &[u8]) -> u32 {
    !crc32c::crc32c(data)
}

fn put(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn get(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state fio 3.33 saved (`fio --trigger-timeout=1 --aux-path=DIR`) for a job 'cut'
    /// writing 4 KiB blocks in order at 1 MiB/s: 231 writes issued, the last at 942080.
    fn fios_file() -> Vec<u8> {
        let mut b = vec![0u8; 192];
        b[0] = 3;
        b[8] = 0xa8;
        b[16..20].copy_from_slice(&[0x97, 0x1e, 0x66, 0x0c]);
        b[0x18] = 1;
        b[0x20] = 1;
        b[0x24] = 1;
        b[0x28] = 0xe7;
        b[0x70..0x73].copy_from_slice(b"cut");
        b[0xb8..0xbc].copy_from_slice(&[0x00, 0x60, 0x0e, 0x00]);
        b
    }

    #[test]
    fn reads_the_state_fio_saved() {
        let s = decode(&fios_file()).expect("fio's file reads");
        assert_eq!(s.name, "cut");
        assert_eq!((s.index, s.iodepth, s.files), (0, 1, 1));
        assert_eq!(s.writes_issued, 231);
        assert_eq!(s.completions, vec![(0, 942_080)]);
        // Its reads stop where fio's did: 231 blocks.
        let stops_at = (0..1000u64)
            .find(|n| s.read_goes_past(*n, 0, n * 4096))
            .expect("stops");
        assert_eq!(stops_at, 231);
    }

    #[test]
    fn writes_what_it_reads_and_fios_layout_byte_for_byte() {
        let s = decode(&fios_file()).expect("fio's file reads");
        let mut again = encode(&s);
        // fio's generator flag was 0 (32-bit state); sinkrate always writes 1.
        assert_eq!(again[0x38], 1);
        again[0x38] = 0;
        let mut fio = fios_file();
        fio[16..24].fill(0);
        again[16..24].fill(0);
        assert_eq!(again, fio);
        let s2 = JobWriteState {
            name: "a/b".into(),
            index: 3,
            iodepth: 4,
            files: 2,
            writes_issued: 99,
            completions: vec![(1, 8192), (0, 4096)],
            random_state: [5, 0, 0, 0, 0, 0],
        };
        assert_eq!(decode(&encode(&s2)), Ok(s2));
        assert_eq!(file_name("a/b", 3), "local-a.b-3-verify.state");
    }

    #[test]
    fn damage_is_named_and_never_panics() {
        let good = encode(&JobWriteState {
            name: "j".into(),
            iodepth: 2,
            files: 1,
            completions: vec![(0, 0)],
            ..JobWriteState::default()
        });
        for cut in 0..good.len() {
            assert!(decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut flipped = good.clone();
        flipped[HEADER + 30] ^= 1;
        assert!(decode(&flipped).unwrap_err().contains("crc32c"));
        let mut old = good.clone();
        old[0] = 2;
        assert!(decode(&old).unwrap_err().contains("version 2"));
        // A count of completions beyond the record, with a crc made to match.
        let mut lying = good;
        lying[HEADER] = 9;
        let crc = u64::from(fio_crc32c(&lying[HEADER..]));
        lying[16..24].copy_from_slice(&crc.to_le_bytes());
        assert!(decode(&lying).unwrap_err().contains("claims 9"));
    }
}
