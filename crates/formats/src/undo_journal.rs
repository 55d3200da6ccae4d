//! The capacity probe's undo journal as bytes: what `sinkrate_verify::capacity::undo` writes
//! before each overwrite and plays back after.
//!
//! Layout (little-endian): `SNKRUNDO`, u32 version, u64 run id, u64 device size, u64 device
//! number (st_rdev), u32 path length, the path; then records: u64 offset, u32 length,
//! u32 crc32c of the data, the data. A record cut short (the run was killed while writing
//! it) was never followed by its write and is ignored.

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

pub const MAGIC: &[u8; 8] = b"SNKRUNDO";
pub const VERSION: u32 = 1;

/// A journal read back.
pub struct Saved {
    /// The probe run that wrote the journal: its tags name it.
    pub run_id: u64,
    pub device: PathBuf,
    pub size: u64,
    pub rdev: u64,
    pub records: Vec<(u64, Vec<u8>)>,
}

fn take<const N: usize>(r: &mut impl Read) -> Option<[u8; N]> {
    let mut b = [0u8; N];
    r.read_exact(&mut b).ok().map(|_| b)
}

/// Reads a journal's records; one cut short or torn by a crash ends at its last whole record.
pub fn parse(mut r: impl Read) -> Result<Saved, String> {
    let bad = |why: &str| why.to_string();
    if take::<8>(&mut r).as_ref() != Some(MAGIC) {
        return Err(bad("no magic"));
    }
    let version = take::<4>(&mut r).map(u32::from_le_bytes);
    if version != Some(VERSION) {
        return Err(bad("unknown version"));
    }
    let run_id = take::<8>(&mut r)
        .map(u64::from_le_bytes)
        .ok_or_else(|| bad("cut short"))?;
    let size = take::<8>(&mut r)
        .map(u64::from_le_bytes)
        .ok_or_else(|| bad("cut short"))?;
    let rdev = take::<8>(&mut r)
        .map(u64::from_le_bytes)
        .ok_or_else(|| bad("cut short"))?;
    let len = take::<4>(&mut r)
        .map(u32::from_le_bytes)
        .ok_or_else(|| bad("cut short"))?;
    if len > 4096 {
        return Err(bad("device path too long"));
    }
    let mut dev = vec![0u8; len as usize];
    r.read_exact(&mut dev).map_err(|_| bad("cut short"))?;
    let device = PathBuf::from(std::ffi::OsStr::from_bytes(&dev));
    let mut records = Vec::new();
    while let (Some(off), Some(n), Some(crc)) =
        (take::<8>(&mut r), take::<4>(&mut r), take::<4>(&mut r))
    {
        let n = u32::from_le_bytes(n) as usize;
        if n > 64 << 20 {
            break;
        }
        // Grown with what is really there: a torn length does not allocate 64 MiB.
        let mut data = Vec::new();
        let complete = (&mut r)
            .take(n as u64)
            .read_to_end(&mut data)
            .is_ok_and(|got| got == n);
        if !complete || crc32c::crc32c(&data) != u32::from_le_bytes(crc) {
            break;
        }
        records.push((u64::from_le_bytes(off), data));
    }
    Ok(Saved {
        run_id,
        device,
        size,
        rdev,
        records,
    })
}
