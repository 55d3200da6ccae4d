//! The seccomp filter that makes the kernel stop the recorder for its tracer on file
//! operations only (SECCOMP_RET_TRACE), and let every other system call run untouched: the
//! recorder pays for a stop only where a write, a sync or an open is.
//!
//! Written as classic BPF by hand: the filter is a dozen instructions (the architecture,
//! then the call's number against a list), and the crates that build seccomp filters do not
//! cover all of the board targets (armv7 among them).

/// Which of a call's stops the tracer needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    Always,
    /// Only an open that may write (its flags, argument `n`, ask for write access, creation
    /// or truncation): the recorder's reads of its libraries and settings run untouched.
    OpensForWrite(u32),
    /// Only a mapping that is shared and writable (a file written through memory).
    SharedWritableMap,
    /// Unless its sixth argument register holds [`MARK`]: the interposer's own calls
    /// ([`crate::preload`]), which it reports itself. None of these calls has a sixth
    /// argument.
    Unmarked,
    /// Only fcntl(F_SETFL), whose command is argument `n`: a flag such as O_DIRECT set after
    /// the open. The recorder's other fcntl calls run untouched.
    SetFlags(u32),
}

/// What the interposer leaves in a call's sixth argument register (preload/interpose.c has
/// the same): a value no register left over from other work is likely to hold.
#[cfg(target_pointer_width = "64")]
pub const MARK: u64 = 0x51f4_a7e5_c0de_0001;
#[cfg(target_pointer_width = "32")]
pub const MARK: u64 = 0xf1a7_c0de;

/// The system calls stopped for the tracer, by name: what a recorder does to its files.
pub const TRACED: &[(&str, libc::c_long, Rule)] = &[
    #[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
    ("open", libc::SYS_open, Rule::OpensForWrite(1)),
    #[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
    ("creat", libc::SYS_creat, Rule::Always),
    ("openat", libc::SYS_openat, Rule::OpensForWrite(2)),
    // Its flags are in a struct the filter cannot read.
    ("openat2", libc::SYS_openat2, Rule::Always),
    ("close", libc::SYS_close, Rule::Always),
    ("write", libc::SYS_write, Rule::Unmarked),
    #[cfg(not(target_arch = "arm"))]
    ("pwrite64", libc::SYS_pwrite64, Rule::Unmarked),
    // On 32-bit ARM its offset takes the sixth argument register: never marked.
    #[cfg(target_arch = "arm")]
    ("pwrite64", libc::SYS_pwrite64, Rule::Always),
    ("writev", libc::SYS_writev, Rule::Unmarked),
    ("pwritev", libc::SYS_pwritev, Rule::Unmarked),
    ("pwritev2", libc::SYS_pwritev2, Rule::Always),
    ("fsync", libc::SYS_fsync, Rule::Unmarked),
    ("fdatasync", libc::SYS_fdatasync, Rule::Unmarked),
    #[cfg(not(target_arch = "arm"))]
    ("sync_file_range", libc::SYS_sync_file_range, Rule::Unmarked),
    // sync_file_range2 (its arguments in the order 32-bit ARM needs), libc's name for it.
    #[cfg(target_arch = "arm")]
    (
        "sync_file_range2",
        libc::SYS_arm_sync_file_range,
        Rule::Always,
    ),
    ("ftruncate", libc::SYS_ftruncate, Rule::Always),
    #[cfg(target_arch = "arm")]
    ("ftruncate64", libc::SYS_ftruncate64, Rule::Always),
    ("fallocate", libc::SYS_fallocate, Rule::Always),
    #[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
    ("rename", libc::SYS_rename, Rule::Always),
    ("renameat", libc::SYS_renameat, Rule::Always),
    ("renameat2", libc::SYS_renameat2, Rule::Always),
    #[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
    ("unlink", libc::SYS_unlink, Rule::Always),
    ("unlinkat", libc::SYS_unlinkat, Rule::Always),
    // Calls that change what a descriptor is without a close: the tracer reads the
    // interposer's records before they run, while each descriptor is still the file the
    // records were on. (An exit stops for the same reason: PTRACE_O_TRACEEXIT.)
    #[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
    ("dup2", libc::SYS_dup2, Rule::Always),
    ("dup3", libc::SYS_dup3, Rule::Always),
    ("close_range", CLOSE_RANGE, Rule::Always),
    ("execve", libc::SYS_execve, Rule::Always),
    ("execveat", libc::SYS_execveat, Rule::Always),
    // Writes from another descriptor or a pipe: traced as writes of the file they fill.
    ("sendfile", libc::SYS_sendfile, Rule::Always),
    #[cfg(target_arch = "arm")]
    ("sendfile64", libc::SYS_sendfile64, Rule::Always),
    ("copy_file_range", libc::SYS_copy_file_range, Rule::Always),
    ("splice", libc::SYS_splice, Rule::Always),
    ("fcntl", libc::SYS_fcntl, Rule::SetFlags(1)),
    #[cfg(target_arch = "arm")]
    ("fcntl64", libc::SYS_fcntl64, Rule::SetFlags(1)),
    // Seen only to say what cannot be seen: a file written through memory, io_uring, or
    // Linux native AIO.
    ("mmap", MMAP, Rule::SharedWritableMap),
    ("io_uring_setup", libc::SYS_io_uring_setup, Rule::Always),
    ("io_submit", libc::SYS_io_submit, Rule::Always),
];

/// The calls of the other ABI a 64-bit kernel runs (i386 on x86_64, 32-bit ARM on
/// aarch64: a 32-bit program, or `int 0x80` from a 64-bit one) that write a file: stopped
/// only to say that the trace does not hold them ([`FOREIGN_ABI`]). Their numbers are that
/// ABI's (arch/x86/entry/syscalls/syscall_32.tbl, arch/arm/tools/syscall.tbl): write,
/// writev, pwrite64, pwritev, pwritev2, sendfile, sendfile64, splice, copy_file_range.
#[cfg(target_arch = "x86_64")]
pub const FOREIGN_WRITES: &[u32] = &[4, 146, 181, 334, 379, 187, 239, 313, 377];
#[cfg(target_arch = "aarch64")]
pub const FOREIGN_WRITES: &[u32] = &[4, 146, 181, 362, 393, 187, 239, 340, 391];
#[cfg(target_arch = "arm")]
pub const FOREIGN_WRITES: &[u32] = &[];

/// The data a foreign ABI's write stops with (SECCOMP_RET_DATA, read with
/// PTRACE_GETEVENTMSG): the tracer says what it cannot see and lets the call run.
pub const FOREIGN_ABI: u32 = 0x32;

/// What the trace says of a foreign ABI's writes.
pub const FOREIGN_ABI_UNSEEN: &str = "the recorder wrote through the 32-bit system-call ABI (a 32-bit program, or int 0x80 from a 64-bit one): those writes are not in the trace";

/// close_range(2), the same number on every architecture (libc has no name for it on all).
const CLOSE_RANGE: libc::c_long = 436;

#[cfg(target_arch = "arm")]
const MMAP: libc::c_long = libc::SYS_mmap2;
#[cfg(not(target_arch = "arm"))]
const MMAP: libc::c_long = libc::SYS_mmap;

/// Whether a call stops for the tracer, as [`program`] decides in the kernel: asked in the
/// tracer itself when no filter can be installed (a recorder already running, `--pid`).
pub fn wanted(nr: libc::c_long, args: &[u64; 6]) -> bool {
    match TRACED.iter().find(|(_, n, _)| *n == nr) {
        None => false,
        Some((_, _, Rule::Always)) => true,
        Some((_, _, Rule::OpensForWrite(i))) => {
            args[*i as usize] as u32 & (libc::O_ACCMODE | libc::O_CREAT | libc::O_TRUNC) as u32 != 0
        }
        Some((_, _, Rule::SharedWritableMap)) => {
            args[2] as u32 & libc::PROT_WRITE as u32 != 0
                && args[3] as u32 & libc::MAP_SHARED as u32 != 0
        }
        Some((_, _, Rule::Unmarked)) => args[5] != MARK,
        Some((_, _, Rule::SetFlags(i))) => args[*i as usize] as i32 == libc::F_SETFL,
    }
}

/// The name of a traced call's number.
pub fn name(nr: libc::c_long) -> Option<&'static str> {
    TRACED.iter().find(|(_, n, _)| *n == nr).map(|(s, _, _)| *s)
}

/// The architecture seccomp sees for this build's system calls (linux/audit.h); a call made
/// through another ABI (a 32-bit program on a 64-bit kernel) is let through untraced.
#[cfg(target_arch = "x86_64")]
pub const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
pub const AUDIT_ARCH: u32 = 0xC000_00B7;
#[cfg(target_arch = "arm")]
pub const AUDIT_ARCH: u32 = 0x4000_0028;

/// The opcodes used (linux/bpf_common.h): class | size or operation | source.
const BPF_LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const BPF_ALU_AND_K: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K
const BPF_JMP_JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_RET_K: u16 = 0x06; // BPF_RET | BPF_K
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_TRACE: u32 = 0x7ff0_0000;
/// Offsets in struct seccomp_data: the call's number, the architecture, and argument n's
/// low 32 bits (little-endian boards).
const NR_AT: u32 = 0;
const ARCH_AT: u32 = 4;
const fn arg_at(n: u32) -> u32 {
    16 + 8 * n
}

fn insn(code: u16, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The instructions after a call's number matched: each ends in a return.
fn block(rule: Rule) -> Vec<libc::sock_filter> {
    let trace = insn(BPF_RET_K, 0, 0, SECCOMP_RET_TRACE);
    let allow = insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW);
    match rule {
        Rule::Always => vec![trace],
        Rule::OpensForWrite(n) => vec![
            insn(BPF_LD_W_ABS, 0, 0, arg_at(n)),
            insn(
                BPF_ALU_AND_K,
                0,
                0,
                (libc::O_ACCMODE | libc::O_CREAT | libc::O_TRUNC) as u32,
            ),
            // Read-only, no creation, no truncation: let it run.
            insn(BPF_JMP_JEQ_K, 1, 0, 0),
            trace,
            allow,
        ],
        // The argument's 32-bit words against the mark's (two on a 64-bit board, the low
        // first; one on a 32-bit board): the first that differs jumps past the rest to trace.
        Rule::Unmarked => {
            let words = std::mem::size_of::<libc::c_long>() / 4;
            let mut v = Vec::with_capacity(2 * words + 2);
            for i in 0..words {
                let left = (2 * (words - i - 1) + 1) as u8;
                v.push(insn(BPF_LD_W_ABS, 0, 0, arg_at(5) + 4 * i as u32));
                v.push(insn(BPF_JMP_JEQ_K, 0, left, (MARK >> (32 * i)) as u32));
            }
            v.push(allow);
            v.push(trace);
            v
        }
        Rule::SetFlags(n) => vec![
            insn(BPF_LD_W_ABS, 0, 0, arg_at(n)),
            insn(BPF_JMP_JEQ_K, 0, 1, libc::F_SETFL as u32),
            trace,
            allow,
        ],
        Rule::SharedWritableMap => vec![
            insn(BPF_LD_W_ABS, 0, 0, arg_at(2)),
            insn(BPF_ALU_AND_K, 0, 0, libc::PROT_WRITE as u32),
            insn(BPF_JMP_JEQ_K, 4, 0, 0),
            insn(BPF_LD_W_ABS, 0, 0, arg_at(3)),
            insn(BPF_ALU_AND_K, 0, 0, libc::MAP_SHARED as u32),
            insn(BPF_JMP_JEQ_K, 1, 0, 0),
            trace,
            allow,
        ],
    }
}

/// The program: the architecture, then the call's number against [`TRACED`], each with its
/// rule; ALLOW for everything else. Another ABI's calls go to a second list, whose writes
/// stop with [`FOREIGN_ABI`] as their data.
pub fn program() -> Vec<libc::sock_filter> {
    let mut p = vec![
        insn(BPF_LD_W_ABS, 0, 0, ARCH_AT),
        // Another ABI's call: to its own list after the first (its offset set below).
        insn(BPF_JMP_JEQ_K, 0, 0, AUDIT_ARCH),
        insn(BPF_LD_W_ABS, 0, 0, NR_AT),
    ];
    for (_, nr, rule) in TRACED {
        let b = block(*rule);
        // Jumps are counted in instructions after the jump, in a byte.
        assert!(b.len() < 256);
        p.push(insn(BPF_JMP_JEQ_K, 0, b.len() as u8, *nr as u32));
        p.extend(b);
    }
    p.push(insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW));
    let to_foreign = p.len() - 2;
    assert!(to_foreign < 256, "too many calls for one filter's jumps");
    p[1].jf = to_foreign as u8;
    p.push(insn(BPF_LD_W_ABS, 0, 0, NR_AT));
    for nr in FOREIGN_WRITES {
        p.push(insn(BPF_JMP_JEQ_K, 0, 1, *nr));
        p.push(insn(BPF_RET_K, 0, 0, SECCOMP_RET_TRACE | FOREIGN_ABI));
    }
    p.push(insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program over a call as the kernel would.
    fn run(p: &[libc::sock_filter], arch: u32, nr: u32, args: [u32; 6]) -> u32 {
        run_wide(p, arch, nr, args.map(u64::from))
    }

    /// As [`run`], with arguments of 64 bits (the filter reads each half on its own).
    fn run_wide(p: &[libc::sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let i = &p[pc];
            match i.code {
                BPF_LD_W_ABS => {
                    acc = match i.k {
                        ARCH_AT => arch,
                        NR_AT => nr,
                        k => (args[((k - 16) / 8) as usize] >> (8 * ((k - 16) % 8))) as u32,
                    }
                }
                BPF_ALU_AND_K => acc &= i.k,
                BPF_JMP_JEQ_K => {
                    pc += if acc == i.k { i.jt } else { i.jf } as usize;
                }
                BPF_RET_K => return i.k,
                other => panic!("opcode {other:#x}"),
            }
            pc += 1;
        }
    }

    #[test]
    fn file_calls_stop_for_the_tracer_and_others_and_other_abis_run() {
        let p = program();
        let any = [0u32; 6];
        for (name, nr, rule) in TRACED {
            if matches!(rule, Rule::Always | Rule::Unmarked) {
                assert_eq!(
                    run(&p, AUDIT_ARCH, *nr as u32, any),
                    SECCOMP_RET_TRACE,
                    "{name}"
                );
            }
        }
        let openat = libc::SYS_openat as u32;
        let flags = |f: i32| [0, 0, f as u32, 0, 0, 0];
        assert_eq!(
            run(
                &p,
                AUDIT_ARCH,
                openat,
                flags(libc::O_RDONLY | libc::O_CLOEXEC)
            ),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(
            run(&p, AUDIT_ARCH, openat, flags(libc::O_WRONLY)),
            SECCOMP_RET_TRACE
        );
        assert_eq!(
            run(&p, AUDIT_ARCH, openat, flags(libc::O_RDWR)),
            SECCOMP_RET_TRACE
        );
        assert_eq!(
            run(
                &p,
                AUDIT_ARCH,
                openat,
                flags(libc::O_RDONLY | libc::O_CREAT)
            ),
            SECCOMP_RET_TRACE
        );
        let mmap = MMAP as u32;
        let map = |prot: i32, flags: i32| [0, 4096, prot as u32, flags as u32, 3, 0];
        assert_eq!(
            run(
                &p,
                AUDIT_ARCH,
                mmap,
                map(libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED)
            ),
            SECCOMP_RET_TRACE
        );
        assert_eq!(
            run(
                &p,
                AUDIT_ARCH,
                mmap,
                map(libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE)
            ),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(
            run(&p, AUDIT_ARCH, mmap, map(libc::PROT_READ, libc::MAP_SHARED)),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(
            run(&p, AUDIT_ARCH, libc::SYS_getpid as u32, any),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(
            run(&p, AUDIT_ARCH, libc::SYS_read as u32, any),
            SECCOMP_RET_ALLOW
        );
        // Another ABI: its writes stop with their mark, everything else of it runs.
        for nr in FOREIGN_WRITES {
            assert_eq!(
                run(&p, 0x4000_0003, *nr, any),
                SECCOMP_RET_TRACE | FOREIGN_ABI
            );
        }
        assert_eq!(run(&p, 0x4000_0003, 3, any), SECCOMP_RET_ALLOW);
        // fcntl stops only to set a file's flags.
        let fcntl = libc::SYS_fcntl as u32;
        let cmd = |c: i32| [3, c as u32, libc::O_DIRECT as u32, 0, 0, 0];
        assert_eq!(
            run(&p, AUDIT_ARCH, fcntl, cmd(libc::F_SETFL)),
            SECCOMP_RET_TRACE
        );
        assert_eq!(
            run(&p, AUDIT_ARCH, fcntl, cmd(libc::F_GETFL)),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(
            run(&p, AUDIT_ARCH, fcntl, cmd(libc::F_SETFD)),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(name(libc::SYS_fsync), Some("fsync"));
        // The interposer's calls carry the mark and run; half of it, or none, stops.
        let write = libc::SYS_write as u32;
        let marked = [3, 0, 4096, 0, 0, MARK];
        assert_eq!(run_wide(&p, AUDIT_ARCH, write, marked), SECCOMP_RET_ALLOW);
        let fsync = libc::SYS_fsync as u32;
        assert_eq!(run_wide(&p, AUDIT_ARCH, fsync, marked), SECCOMP_RET_ALLOW);
        for other in [0, MARK & 0xffff_ffff, MARK ^ 1, MARK ^ (1 << 40), u64::MAX] {
            let args = [3, 0, 4096, 0, 0, other];
            if other != MARK {
                assert_eq!(run_wide(&p, AUDIT_ARCH, write, args), SECCOMP_RET_TRACE);
                assert!(wanted(write as libc::c_long, &args));
            }
        }
        assert!(!wanted(write as libc::c_long, &marked));
        // Opens, closes and renames are never taken on the interposer's word.
        assert_eq!(
            run_wide(&p, AUDIT_ARCH, libc::SYS_close as u32, marked),
            SECCOMP_RET_TRACE
        );
        // The tracer's own check agrees with the filter's.
        for (nr, args) in [
            (openat, flags(libc::O_RDONLY)),
            (openat, flags(libc::O_WRONLY | libc::O_CREAT)),
            (mmap, map(libc::PROT_WRITE, libc::MAP_SHARED)),
            (mmap, map(libc::PROT_WRITE, libc::MAP_PRIVATE)),
            (libc::SYS_fsync as u32, any),
            (libc::SYS_read as u32, any),
        ] {
            let wide = args.map(u64::from);
            assert_eq!(
                wanted(nr as libc::c_long, &wide),
                run(&p, AUDIT_ARCH, nr, args) == SECCOMP_RET_TRACE,
                "{nr} {args:?}"
            );
        }
    }
}
