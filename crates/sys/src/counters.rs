//! The kernel's running counters (/proc/meminfo, /proc/vmstat, /proc/diskstats, /proc/stat,
//! /proc/pressure): each file opened once and re-read with `pread` at offset 0 into a buffer
//! kept from sample to sample, so a sample costs a handful of syscalls and no allocation.

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::SysRoot;

/// Which counters file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counters {
    MemInfo,
    VmStat,
    DiskStats,
    CpuStat,
    PressureIo,
    PressureMemory,
}

impl Counters {
    /// Its path inside a root.
    pub fn path(self) -> &'static str {
        match self {
            Counters::MemInfo => "/proc/meminfo",
            Counters::VmStat => "/proc/vmstat",
            Counters::DiskStats => "/proc/diskstats",
            Counters::CpuStat => "/proc/stat",
            Counters::PressureIo => "/proc/pressure/io",
            Counters::PressureMemory => "/proc/pressure/memory",
        }
    }
}

/// One counters file, held open.
pub struct CountersFile {
    file: File,
    buf: Vec<u8>,
}

impl CountersFile {
    /// Opens `which` under `root`; None when this kernel (or fixture tree) has no such file
    /// or it cannot be read.
    pub fn open(root: &SysRoot, which: Counters) -> Option<CountersFile> {
        Some(CountersFile {
            file: File::open(root.host_path(which.path())).ok()?,
            buf: vec![0; 64 * 1024],
        })
    }

    /// The file's text now.
    pub fn read(&mut self) -> Option<&str> {
        let mut len = 0;
        loop {
            if len == self.buf.len() {
                // Rare (a machine with many disks): grow once, then keep the larger buffer.
                self.buf.resize(self.buf.len() * 2, 0);
            }
            let n = self.file.read_at(&mut self.buf[len..], len as u64).ok()?;
            if n == 0 {
                break;
            }
            len += n;
        }
        std::str::from_utf8(&self.buf[..len]).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_file_reads_the_same_text_again_and_a_missing_one_is_none() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(d.path().join("proc")).expect("dirs");
        let big = "x".repeat(100 * 1024);
        std::fs::write(d.path().join("proc/meminfo"), &big).expect("write");
        let root = SysRoot::at(d.path());
        let mut f = CountersFile::open(&root, Counters::MemInfo).expect("open");
        assert_eq!(f.read().map(str::len), Some(big.len()));
        assert_eq!(f.read().map(str::len), Some(big.len()));
        assert!(CountersFile::open(&root, Counters::PressureIo).is_none());
        let mut live = CountersFile::open(&SysRoot::live(), Counters::MemInfo).expect("live");
        assert!(live.read().is_some_and(|t| t.contains("MemTotal:")));
    }
}
