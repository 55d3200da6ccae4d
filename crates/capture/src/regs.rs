//! A stopped thread's system call: its number and arguments at the seccomp stop, its return
//! value at the syscall-exit stop. Read with PTRACE_GETREGSET (NT_PRSTATUS), which every
//! board architecture has; the layouts are the kernel's (asm/ptrace.h), written out here so
//! that one path serves x86_64, aarch64 and armv7 alike (nix reads registers on the first
//! two only).

use nix::unistd::Pid;

#[cfg(target_arch = "x86_64")]
type Word = u64;
#[cfg(target_arch = "x86_64")]
const WORDS: usize = 27;
#[cfg(target_arch = "aarch64")]
type Word = u64;
#[cfg(target_arch = "aarch64")]
const WORDS: usize = 34;
#[cfg(target_arch = "arm")]
type Word = u32;
#[cfg(target_arch = "arm")]
const WORDS: usize = 18;

/// Where the number, the arguments and the return value are in the register set.
#[cfg(target_arch = "x86_64")]
mod at {
    pub const NR: usize = 15; // orig_rax
    pub const ARGS: [usize; 6] = [14, 13, 12, 7, 9, 8]; // rdi rsi rdx r10 r8 r9
    pub const RET: usize = 10; // rax
}
#[cfg(target_arch = "aarch64")]
mod at {
    pub const NR: usize = 8; // x8
    pub const ARGS: [usize; 6] = [0, 1, 2, 3, 4, 5];
    pub const RET: usize = 0;
}
#[cfg(target_arch = "arm")]
mod at {
    pub const NR: usize = 7; // r7 (EABI)
    pub const ARGS: [usize; 6] = [0, 1, 2, 3, 4, 5];
    pub const RET: usize = 0;
}

const NT_PRSTATUS: libc::c_int = 1;

fn regset(tid: Pid) -> nix::Result<[Word; WORDS]> {
    let mut regs = [0 as Word; WORDS];
    let mut iov = libc::iovec {
        iov_base: regs.as_mut_ptr().cast(),
        iov_len: std::mem::size_of_val(&regs),
    };
    // SAFETY: the kernel writes at most iov_len bytes into `regs`, which outlives the call.
    let rc = unsafe {
        libc::ptrace(
            libc::PTRACE_GETREGSET as _,
            tid.as_raw(),
            NT_PRSTATUS as usize as *mut libc::c_void,
            &mut iov as *mut libc::iovec as *mut libc::c_void,
        )
    };
    if rc == -1 {
        return Err(nix::errno::Errno::last());
    }
    Ok(regs)
}

/// A call as the seccomp stop shows it: its number and six arguments.
pub fn entry(tid: Pid) -> nix::Result<(libc::c_long, [u64; 6])> {
    let r = regset(tid)?;
    let mut args = [0u64; 6];
    for (a, i) in args.iter_mut().zip(at::ARGS) {
        *a = r[i] as u64;
    }
    Ok((r[at::NR] as libc::c_long, args))
}

/// The return value at the syscall-exit stop: the result, or minus the errno.
pub fn result(tid: Pid) -> nix::Result<i64> {
    let r = regset(tid)?;
    // Sign-extended from the register's width (a 32-bit board's -1 is -1).
    #[cfg(target_arch = "arm")]
    return Ok(r[at::RET] as i32 as i64);
    #[cfg(not(target_arch = "arm"))]
    Ok(r[at::RET] as i64)
}
