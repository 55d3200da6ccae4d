//! fio's `sync_file_range=FLAGS:N`: every N writes, sync_file_range(2) over the range of the
//! file written since the last call (fio tracks the lowest and highest byte written).

use sinkrate_jobspec::options::SyncFileRange;

pub(super) struct RangeSync {
    config: SyncFileRange,
    writes: u64,
    due: Option<usize>,
    /// Per file, the bytes written since its last call: (first, end).
    ranges: Vec<Option<(u64, u64)>>,
}

impl RangeSync {
    pub(super) fn new(config: SyncFileRange, files: usize) -> RangeSync {
        RangeSync {
            config,
            writes: 0,
            due: None,
            ranges: vec![None; files],
        }
    }

    pub(super) fn count_write(&mut self, file: usize, offset: u64, len: u64) {
        let Some(range) = self.ranges.get_mut(file) else {
            return;
        };
        let end = offset + len;
        *range = Some(match *range {
            Some((first, last)) => (first.min(offset), last.max(end)),
            None => (offset, end),
        });
        self.writes += 1;
        if self.writes >= self.config.every {
            self.writes = 0;
            self.due = Some(file);
        }
    }

    /// The file and range to sync now, if a call is due.
    pub(super) fn take_due(&mut self) -> Option<(usize, u64, u64)> {
        let file = self.due.take()?;
        let (first, end) = self.ranges.get_mut(file)?.take()?;
        Some((file, first, end - first))
    }

    /// sync_file_range(2) with the job's flags.
    #[cfg(target_os = "linux")]
    pub(super) fn sync(
        &self,
        fd: std::os::fd::RawFd,
        offset: u64,
        len: u64,
    ) -> std::io::Result<()> {
        let c = &self.config;
        let flags = if c.wait_before {
            libc::SYNC_FILE_RANGE_WAIT_BEFORE
        } else {
            0
        } | if c.write {
            libc::SYNC_FILE_RANGE_WRITE
        } else {
            0
        } | if c.wait_after {
            libc::SYNC_FILE_RANGE_WAIT_AFTER
        } else {
            0
        };
        // SAFETY: a plain syscall on a descriptor the worker owns.
        let r = unsafe {
            libc::sync_file_range(fd, offset as libc::off64_t, len as libc::off64_t, flags)
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// sync_file_range(2) is Linux's; fio's option is too.
    #[cfg(not(target_os = "linux"))]
    pub(super) fn sync(
        &self,
        _fd: std::os::fd::RawFd,
        _offset: u64,
        _len: u64,
    ) -> std::io::Result<()> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "sync_file_range needs Linux's sync_file_range(2)",
        ))
    }
}
