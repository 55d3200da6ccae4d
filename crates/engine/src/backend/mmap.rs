//! `mmap`: maps each file and copies to or from the mapping; fsync becomes msync.

use std::io;
use std::os::fd::RawFd;

use super::{Backend, IoRequest, Submitted};

#[derive(Default)]
pub struct Mmap {
    maps: Vec<Option<(*mut u8, usize)>>,
}

impl Backend for Mmap {
    fn name(&self) -> &'static str {
        "mmap"
    }

    fn attach_file(
        &mut self,
        file_index: usize,
        fd: RawFd,
        size: u64,
        write: bool,
    ) -> io::Result<()> {
        if self.maps.len() <= file_index {
            self.maps.resize(file_index + 1, None);
        }
        let len = usize::try_from(size).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        if len == 0 {
            return Ok(());
        }
        let prot = libc::PROT_READ | if write { libc::PROT_WRITE } else { 0 };
        // SAFETY: mapping a file descriptor the worker owns; the result is checked.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        self.maps[file_index] = Some((p.cast(), len));
        Ok(())
    }

    fn submit(&mut self, req: &IoRequest) -> io::Result<Submitted> {
        if req.dir == super::IoDir::Trim {
            return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
        }
        match self.maps.get(req.file_index).copied() {
            Some(Some((base, len))) => super::copy_with_memory(base, len, req),
            _ => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        }
    }

    fn sync_file(&mut self, file_index: usize, _fd: RawFd, _data_only: bool) -> io::Result<()> {
        if let Some(Some((base, len))) = self.maps.get(file_index).copied() {
            // SAFETY: msync on a live mapping.
            if unsafe { libc::msync(base.cast(), len, libc::MS_SYNC) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    fn detach_file(&mut self, file_index: usize) {
        if let Some(slot) = self.maps.get_mut(file_index) {
            if let Some((base, len)) = slot.take() {
                // SAFETY: unmapping a mapping this backend made.
                unsafe { libc::munmap(base.cast(), len) };
            }
        }
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        for i in 0..self.maps.len() {
            self.detach_file(i);
        }
    }
}
