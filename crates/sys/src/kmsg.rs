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

/// Whether a kernel message reports a failure of one of `devices` (kernel names, whole disks
/// or partitions: `loop0`, `mmcblk0`, `sda`): a failed request ("I/O error, dev sda, sector
/// ..."), a page the kernel could not write back ("Buffer I/O error on device mmcblk0p1"), a
/// filesystem's error or its journal aborted, a remount read-only, a medium error, a
/// write-protected device. Notices that are not failures ("operation not supported error" of
/// a WRITE_ZEROES the device does not offer) are not.
pub fn reports_device_failure(message: &str, devices: &[String]) -> bool {
    let lower = message.to_ascii_lowercase();
    let failure = [
        "i/o error",
        "medium error",
        "critical target error",
        "remounting filesystem read-only",
        "aborting journal",
        "ext4-fs error",
        "write protect is on",
    ]
    .iter()
    .any(|p| lower.contains(p));
    failure && names_device(&lower, devices)
}

/// Whether the message names one of `devices` or one of their partitions as a word
/// (`loop1` is not `loop10`; `mmcblk0p2` is `mmcblk0`'s).
fn names_device(lower: &str, devices: &[String]) -> bool {
    lower
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .any(|word| {
            devices.iter().any(|d| {
                let Some(rest) = word.strip_prefix(d.to_ascii_lowercase().as_str()) else {
                    return false;
                };
                let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
                // A partition: sda1 of sda, mmcblk0p1 of mmcblk0, nvme0n1p1 of nvme0n1.
                let ends_in_digit = d.bytes().last().is_some_and(|b| b.is_ascii_digit());
                rest.is_empty()
                    || (!ends_in_digit && digits(rest))
                    || (ends_in_digit && rest.strip_prefix('p').is_some_and(digits))
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_failure_messages_name_their_device() {
        let devices = vec![
            "loop0".to_string(),
            "mmcblk0".to_string(),
            "sda".to_string(),
        ];
        for failure in [
            "I/O error, dev loop0, sector 376832 op 0x1:(WRITE) flags 0x4000 phys_seg 20 prio class 2",
            "Buffer I/O error on device loop0, logical block 47104",
            "EXT4-fs warning (device loop0): ext4_end_bio:368: I/O error 10 writing to inode 12 starting block 49024)",
            "Aborting journal on device loop0-8.",
            "EXT4-fs (mmcblk0p2): Remounting filesystem read-only",
            "EXT4-fs error (device mmcblk0p2): ext4_journal_check_start:83: comm rec: Detected aborted journal",
            "blk_update_request: I/O error, dev mmcblk0, sector 2048 op 0x1:(WRITE) flags 0x0",
            "sd 0:0:0:0: [sda] Write Protect is on",
            "sd 0:0:0:0: [sda] tag#0 Sense Key : Medium Error [current]",
        ] {
            assert!(reports_device_failure(failure, &devices), "{failure}");
        }
        for other in [
            "operation not supported error, dev loop0, sector 21640 op 0x9:(WRITE_ZEROES) flags 0x800",
            "I/O error, dev loop10, sector 8 op 0x1:(WRITE)",
            "I/O error, dev sdb, sector 8 op 0x1:(WRITE)",
            "EXT4-fs (loop0): mounted filesystem with ordered data mode",
            "Buffer I/O error on device mmcblk1p1, logical block 3",
        ] {
            assert!(!reports_device_failure(other, &devices), "{other}");
        }
    }
}
