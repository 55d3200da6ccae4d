//! The kernel's own words about a failure: the messages it logged (/dev/kmsg) since a mark.
//! A failed mount(8) says only "dmesg(1) may have more information"; the filesystem's
//! reason ("ext4: Unknown parameter 'bogus'") is in the kernel log.

use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;

/// A reader positioned at the end of the kernel log when it was made.
pub struct KernelLog {
    file: File,
}

impl KernelLog {
    /// Marks the current end of the log; None where it cannot be read (not root, no
    /// /dev/kmsg): the caller then does without the kernel's words.
    pub fn mark() -> Option<KernelLog> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .ok()?;
        file.seek(SeekFrom::End(0)).ok()?;
        Some(KernelLog { file })
    }

    /// The messages logged since the mark, oldest first (each read of /dev/kmsg returns
    /// one record, `priority,sequence,timestamp,flags;message`).
    pub fn since(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 8192];
        loop {
            match self.file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let record = String::from_utf8_lossy(&buf[..n]);
                    let first = record.lines().next().unwrap_or_default();
                    if let Some((_, message)) = first.split_once(';') {
                        out.push(message.trim().to_string());
                    }
                }
                // EPIPE: records were overwritten since the mark; the next read goes on.
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => break,
            }
        }
        out
    }
}
