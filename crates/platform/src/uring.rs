//! Whether this system can run io_uring at all, asked once before any file is laid out: a
//! kernel without it (before 5.1, most boards' vendor kernels), one with it disabled, or
//! qemu-user refuses an io_uring job or recording at once, in words a refusal can print.

/// Why io_uring cannot be used here; `None` when it can.
#[cfg(target_os = "linux")]
pub fn unavailable() -> Option<String> {
    match io_uring::IoUring::new(1) {
        Ok(_) => None,
        Err(e) => Some(match e.raw_os_error() {
            Some(libc::ENOSYS) => {
                "the kernel has no io_uring (Linux before 5.1, or an emulator such as qemu-user)"
                    .to_string()
            }
            Some(libc::EPERM) | Some(libc::EACCES) => {
                "io_uring is disabled here (sysctl kernel.io_uring_disabled, or a seccomp policy)"
                    .to_string()
            }
            _ => format!("io_uring cannot be set up: {e}"),
        }),
    }
}

#[cfg(not(target_os = "linux"))]
pub fn unavailable() -> Option<String> {
    Some("io_uring exists only on Linux".to_string())
}
