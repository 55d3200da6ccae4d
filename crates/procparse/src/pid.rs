//! /proc/PID/stat and /proc/PID/io.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PidStat<'a> {
    pub pid: u32,
    /// The thread or process name, e.g. `kworker/u4:2+flush-254:0`.
    pub comm: &'a str,
    pub state: char,
    pub ppid: u32,
    /// The task's flags (`PF_*` of include/linux/sched.h), the ninth field.
    pub flags: u64,
    /// Clock ticks in user and kernel mode.
    pub utime: u64,
    pub stime: u64,
}

impl PidStat<'_> {
    /// Neither a zombie (ended, not yet reaped) nor dead.
    pub fn running(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }

    /// A kernel thread (`PF_KTHREAD`): no program behind it.
    pub fn kernel_thread(&self) -> bool {
        const PF_KTHREAD: u64 = 0x0020_0000;
        self.flags & PF_KTHREAD != 0
    }
}

/// Parses `pid (comm) state ppid ...`; comm may hold spaces and parentheses, so the name ends
/// at the last `)`.
pub fn parse_stat(text: &str) -> Option<PidStat<'_>> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = &text[open + 1..close];
    let mut f = text[close + 1..].split_ascii_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    // Field 9 (flags) comes after pgrp, session, tty_nr and tpgid; fields 14 and 15 (utime,
    // stime) after minflt, cminflt, majflt and cmajflt.
    let mut rest = f.skip(4);
    let flags = rest.next()?.parse().ok()?;
    let mut rest = rest.skip(4);
    let utime = rest.next()?.parse().ok()?;
    let stime = rest.next()?.parse().ok()?;
    Some(PidStat {
        pid,
        comm,
        state,
        ppid,
        flags,
        utime,
        stime,
    })
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PidIo {
    pub rchar: u64,
    pub wchar: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub cancelled_write_bytes: u64,
}

pub fn parse_io(text: &str) -> Option<PidIo> {
    let mut io = PidIo::default();
    let mut seen = 0;
    for line in text.lines() {
        let (k, v) = line.split_once(':')?;
        let v: u64 = v.trim().parse().ok()?;
        let slot = match k {
            "rchar" => &mut io.rchar,
            "wchar" => &mut io.wchar,
            "read_bytes" => &mut io.read_bytes,
            "write_bytes" => &mut io.write_bytes,
            "cancelled_write_bytes" => &mut io.cancelled_write_bytes,
            _ => continue,
        };
        *slot = v;
        seen += 1;
    }
    (seen > 0).then_some(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines() {
        let s = parse_stat(include_str!("../fixtures/x86-vm-6.18/pid-stat")).expect("stat");
        assert_eq!(s.comm, "cat");
        let k =
            parse_stat(include_str!("../fixtures/x86-vm-6.18/pid-stat-kworker")).expect("kworker");
        assert_eq!(k.comm, "kworker/u4:2+flush-254:0");
        assert_eq!((k.state, k.ppid, k.utime, k.stime), ('I', 2, 0, 1234));
        assert!(k.kernel_thread() && !s.kernel_thread());
        assert!(k.running());
        let zombie = parse_stat("9 (py) Z 1 0 0 0 -1 4227084 0 0 0 0 1 2 0 0").expect("zombie");
        assert!(!zombie.running() && !zombie.kernel_thread());
        let odd = parse_stat("7 (a (b) c) S 1 0 0 0 -1 0 0 0 0 0 5 6 0 0").expect("odd");
        assert_eq!((odd.comm, odd.utime, odd.stime), ("a (b) c", 5, 6));
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn io_lines() {
        let io = parse_io(include_str!("../fixtures/x86-vm-6.18/pid-io")).expect("io");
        assert!(io.rchar > 0);
        assert_eq!(
            parse_io("write_bytes: 4096\n").map(|i| i.write_bytes),
            Some(4096)
        );
        assert!(parse_io("").is_none());
    }
}
