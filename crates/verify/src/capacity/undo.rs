//! The capacity probe's undo journal: before the probe overwrites a place on a device, what
//! was there is appended here and made durable. At the end the journal is played back,
//! newest first (so a place written twice, or two addresses of one wrapped cell, end as they
//! began), and removed. A run killed half-way leaves its journal, and the next
//! `sinkrate verify` plays it back.
//!
//! Layout (little-endian): `SNKRUNDO`, u32 version, u64 run id, u64 device size, u64 device
//! number (st_rdev), u32 path length, the path; then records: u64 offset, u32 length,
//! u32 crc32c of the data, the data. A record cut short (the run was killed while writing
//! it) was never followed by its write and is ignored.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sinkrate_platform::buf::AlignedBuf;

use super::probe::{BeforeWrite, Device};
use sinkrate_formats::undo_journal::{parse, Saved, MAGIC, VERSION};

pub const SUFFIX: &str = ".undo";

/// A probe's undo journal, locked (`flock`, exclusive) for as long as the probe runs: the
/// kernel lets the lock go when the process ends, killed or not, so a journal another run
/// can lock is a killed probe's, and one it cannot is a running probe's (see [`claim`]).
pub struct Journal {
    file: File,
    pub path: PathBuf,
    pub saved_bytes: u64,
}

/// Where journals live: beside the settings journal (under `SINKRATE_STATE_DIR` when that
/// is set, as the test suite does).
pub fn default_dir() -> PathBuf {
    sinkrate_sys::state_dir_override()
        .map(|d| d.join("capacity-undo"))
        .unwrap_or_else(|| PathBuf::from("/var/lib/sinkrate/capacity-undo"))
}

impl Journal {
    pub fn create(dir: &Path, device: &Path, size: u64, run_id: u64) -> std::io::Result<Journal> {
        std::fs::create_dir_all(dir)?;
        let rdev = std::fs::metadata(device)?.rdev();
        let path = dir.join(format!("{run_id:016x}{SUFFIX}"));
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        if !try_lock(&file)? {
            return Err(std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                format!("{}: locked by another run", path.display()),
            ));
        }
        let dev = device.as_os_str().as_bytes();
        let mut head = Vec::with_capacity(40 + dev.len());
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&run_id.to_le_bytes());
        head.extend_from_slice(&size.to_le_bytes());
        head.extend_from_slice(&rdev.to_le_bytes());
        head.extend_from_slice(&(dev.len() as u32).to_le_bytes());
        head.extend_from_slice(dev);
        file.write_all(&head)?;
        file.sync_all()?;
        // The directory entry too: a journal lost with a crash would leave nothing to undo.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(Journal {
            file,
            path,
            saved_bytes: 0,
        })
    }
}

impl BeforeWrite for Journal {
    fn save(&mut self, dev: &mut dyn Device, places: &[(u64, u64)]) -> std::io::Result<()> {
        for &(offset, len) in places {
            let mut buf = AlignedBuf::new(len as usize);
            dev.read_at(buf.as_mut_slice(), offset)?;
            let data = buf.as_slice();
            let mut rec = Vec::with_capacity(16);
            rec.extend_from_slice(&offset.to_le_bytes());
            rec.extend_from_slice(&(len as u32).to_le_bytes());
            rec.extend_from_slice(&crc32c::crc32c(data).to_le_bytes());
            self.file.write_all(&rec)?;
            self.file.write_all(data)?;
            self.saved_bytes += len;
        }
        self.file.sync_data()
    }
}

/// An exclusive `flock` on `file`, without waiting: `Ok(false)` when another open file holds
/// one. (std's `File::try_lock` is newer than the Rust this builds with.)
fn try_lock(file: &File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor `file` owns; the lock goes when it is closed.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// The journal at `path`, locked for this run: `Ok(None)` when a probe still running holds
/// it (its own, to play back itself), `Ok(Some)` a killed probe's, now this run's alone until
/// the returned file is dropped (two runs never play one journal back at once).
pub fn claim(path: &Path) -> std::io::Result<Option<File>> {
    let file = File::open(path)?;
    Ok(try_lock(&file)?.then_some(file))
}

pub fn read(path: &Path) -> Result<Saved, String> {
    let file = File::open(path)
        .map_err(|e| format!("{}: not a usable undo journal ({e})", path.display()))?;
    parse(std::io::BufReader::new(file))
        .map_err(|why| format!("{}: not a usable undo journal ({why})", path.display()))
}

/// Plays `saved` back onto `dev`, newest first, and flushes.
/// Whether the device still holds what the probe left at every place the journal names:
/// in each sector the probe run's tag, or the bytes saved there (the kill came before that
/// write). The first place holding anything else is returned: the device was written since
/// (a new filesystem on a reused card), and playing the journal back would destroy that.
pub fn written_since(saved: &Saved, dev: &mut dyn Device) -> std::io::Result<Option<u64>> {
    use sinkrate_formats::capacity_tag::{read_tag, SECTOR};
    for (offset, data) in &saved.records {
        let mut buf = AlignedBuf::new(data.len());
        dev.read_at(buf.as_mut_slice(), *offset)?;
        let now = buf.as_slice();
        let probes = now
            .chunks(SECTOR)
            .all(|s| read_tag(s).is_some_and(|(run, _)| run == saved.run_id));
        if !probes && now != data.as_slice() {
            return Ok(Some(*offset));
        }
    }
    Ok(None)
}

pub fn play_back(saved: &Saved, dev: &mut dyn Device) -> std::io::Result<u64> {
    let mut bytes = 0;
    for (offset, data) in saved.records.iter().rev() {
        let mut buf = AlignedBuf::new(data.len());
        buf.as_mut_slice().copy_from_slice(data);
        dev.write_at(buf.as_slice(), *offset)?;
        bytes += data.len() as u64;
    }
    dev.sync()?;
    Ok(bytes)
}

/// Journals left in `dir` by runs that did not finish.
pub fn pending(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(SUFFIX))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}
