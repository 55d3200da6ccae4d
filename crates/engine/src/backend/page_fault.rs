//! `page_fault`: the job's "file" is anonymous memory it maps (`size=` of it, private to the
//! job); a write copies into it and a read copies out, so the first touch of each page is a
//! page fault the kernel serves (a zero page for a read, a new page for a write), as fio's
//! `page_fault` engine. Syncs have nothing to make durable.

use std::io;
use std::os::fd::RawFd;

use super::{Backend, IoRequest, Submitted};

#[derive(Default)]
pub struct PageFault {
    map: Option<(*mut u8, usize)>,
}

impl Backend for PageFault {
    fn name(&self) -> &'static str {
        "page_fault"
    }

    fn attach_file(
        &mut self,
        _file_index: usize,
        _fd: RawFd,
        size: u64,
        _write: bool,
    ) -> io::Result<()> {
        let len = usize::try_from(size).map_err(|_| io::Error::from_raw_os_error(libc::ENOMEM))?;
        if len == 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: a new private anonymous mapping; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        self.detach_file(0);
        self.map = Some((p.cast(), len));
        Ok(())
    }

    fn submit(&mut self, req: &IoRequest) -> io::Result<Submitted> {
        match self.map {
            Some((base, len)) => super::copy_with_memory(base, len, req),
            None => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        }
    }

    fn sync_file(&mut self, _file_index: usize, _fd: RawFd, _data_only: bool) -> io::Result<()> {
        Ok(())
    }

    fn detach_file(&mut self, _file_index: usize) {
        if let Some((base, len)) = self.map.take() {
            // SAFETY: unmapping a mapping this backend made, once.
            unsafe { libc::munmap(base.cast(), len) };
        }
    }
}

impl Drop for PageFault {
    fn drop(&mut self) {
        self.detach_file(0);
    }
}

#[cfg(test)]
mod tests {
    use super::super::IoDir;
    use super::*;

    fn request(dir: IoDir, offset: u64, buf: &mut [u8]) -> IoRequest {
        IoRequest {
            fd: -1,
            file_index: 0,
            dir,
            offset,
            len: buf.len(),
            buf: buf.as_mut_ptr(),
            tag: 0,
            ioprio: 0,
        }
    }

    #[test]
    fn what_is_written_reads_back_and_untouched_memory_reads_as_zeros() {
        let mut b = PageFault::default();
        b.attach_file(0, -1, 1 << 20, true).expect("maps");
        let mut data = vec![0x5au8; 8192];
        assert!(matches!(
            b.submit(&request(IoDir::Write, 4096, &mut data)),
            Ok(Submitted::Done(8192))
        ));
        let mut back = vec![0u8; 12288];
        b.submit(&request(IoDir::Read, 0, &mut back))
            .expect("reads");
        assert!(back[..4096].iter().all(|&x| x == 0));
        assert!(back[4096..].iter().all(|&x| x == 0x5a));
    }

    #[test]
    fn an_io_past_the_mapping_or_a_trim_fails_with_einval() {
        let mut b = PageFault::default();
        b.attach_file(0, -1, 8192, true).expect("maps");
        let mut data = vec![0u8; 4096];
        let past = b.submit(&request(IoDir::Write, 8192, &mut data));
        assert_eq!(
            past.err().and_then(|e| e.raw_os_error()),
            Some(libc::EINVAL)
        );
        let trim = b.submit(&request(IoDir::Trim, 0, &mut data));
        assert_eq!(
            trim.err().and_then(|e| e.raw_os_error()),
            Some(libc::EINVAL)
        );
        let mut unmapped = PageFault::default();
        let none = unmapped.submit(&request(IoDir::Read, 0, &mut data));
        assert_eq!(
            none.err().and_then(|e| e.raw_os_error()),
            Some(libc::EINVAL)
        );
    }
}
