//! Facts about files and directories a run is about to use: the nearest directory that
//! exists, whether this user may write there, a block device's size.

use std::path::{Path, PathBuf};

/// The nearest existing ancestor of `path` (where a new file would be created).
pub fn existing_parent(path: &Path) -> PathBuf {
    let mut p = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    if p.as_os_str().is_empty() {
        p = PathBuf::from(".");
    }
    while !p.exists() {
        match p.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => p = parent.to_path_buf(),
            _ => return PathBuf::from("."),
        }
    }
    p
}

/// Whether this user may write `path` (a file, or a directory to create files in).
pub fn writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access() reads a valid C string.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// A block device's size in bytes (BLKGETSIZE64 on Linux).
#[cfg(target_os = "linux")]
pub fn block_device_size(path: &Path) -> std::io::Result<u64> {
    let file = std::fs::File::open(path)?;
    let mut size: u64 = 0;
    // The kernel defines BLKGETSIZE64 with size_t, so its number differs between 32- and
    // 64-bit targets; libc's _IOR computes it for the target being built.
    const BLKGETSIZE64: libc::Ioctl = libc::_IOR::<libc::size_t>(0x12, 114);
    // SAFETY: the ioctl writes one u64 into `size`.
    let r = unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&file),
            BLKGETSIZE64,
            &mut size,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(size)
}

/// Elsewhere a disk device's size is where a seek to its end lands (true of FreeBSD's and
/// QNX's disk devices; a port adds its own ioctl where that is not so).
#[cfg(not(target_os = "linux"))]
pub fn block_device_size(path: &Path) -> std::io::Result<u64> {
    use std::io::Seek;
    let mut file = std::fs::File::open(path)?;
    file.seek(std::io::SeekFrom::End(0))
}
