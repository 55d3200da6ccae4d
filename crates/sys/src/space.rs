//! statvfs: size, free space and inodes of the filesystem holding a path.

use sinkrate_model::facts::FsSpace;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub fn space(dir: &Path) -> std::io::Result<FsSpace> {
    let c = CString::new(dir.as_os_str().as_bytes()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path contains a NUL byte",
        )
    })?;
    // SAFETY: statvfs fills the struct; zeroed is a valid initial value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let frsize = st.f_frsize as u64;
    Ok(FsSpace {
        total_bytes: st.f_blocks as u64 * frsize,
        available_bytes: st.f_bavail as u64 * frsize,
        inodes: st.f_files as u64,
        inodes_free: st.f_ffree as u64,
    })
}

/// Whether the file system holding `dir` is mounted read-only now (a worn card the kernel
/// remounted read-only after errors, a write-protect switch, `ro`).
pub fn read_only(dir: &Path) -> bool {
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statvfs fills the struct; zeroed is a valid initial value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a struct of the right type.
    (unsafe { libc::statvfs(c.as_ptr(), &mut st) }) == 0 && st.f_flag & libc::ST_RDONLY != 0
}

/// Free bytes for unprivileged writers on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    space(dir).map(|s| s.available_bytes)
}
