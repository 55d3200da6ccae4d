//! Other processes as /proc describes them: the system layer's one reader of /proc/PID for
//! questions about who a process is.

/// A process's real, effective and saved user ids (`Uid:` of /proc/PID/status); None when
/// it is gone or the line cannot be read.
pub fn uids(pid: u32) -> Option<[u32; 3]> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_uids(&status)
}

fn parse_uids(status: &str) -> Option<[u32; 3]> {
    let mut ids = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .map(|u| u.parse::<u32>().ok());
    Some([ids.next()??, ids.next()??, ids.next()??])
}

/// What /proc says a process is, for a tool about to attach to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Process {
    /// No such process (or its /proc entry cannot be read).
    Gone,
    /// A kernel thread: no program, nothing to trace.
    KernelThread,
    /// Ended, not yet reaped by its parent.
    Ended,
    /// A running program and its command line (its name in brackets when it has none).
    Running(Vec<String>),
}

/// The `PF_KTHREAD` bit of a task's flags (include/linux/sched.h), the field /proc/PID/stat
/// shows ninth.
const PF_KTHREAD: u64 = 0x0020_0000;

/// What `pid` is. A process in the middle of execve shows an empty command line for a moment
/// (its new memory has no arguments yet): read again for up to a second before naming it by
/// its `comm` alone, so that a recorder just started through a wrapper script is not taken
/// for one that has ended.
pub fn describe(pid: u32) -> Process {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    loop {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return Process::Gone;
        };
        let Some((state, flags)) = parse_state_flags(&stat) else {
            return Process::Gone;
        };
        if flags & PF_KTHREAD != 0 {
            return Process::KernelThread;
        }
        if matches!(state, 'Z' | 'X' | 'x') {
            return Process::Ended;
        }
        let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            return Process::Gone;
        };
        let words: Vec<String> = raw
            .split(|b| *b == 0)
            .filter(|w| !w.is_empty())
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        if !words.is_empty() {
            return Process::Running(words);
        }
        if std::time::Instant::now() >= deadline {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            return Process::Running(vec![format!("[{}]", comm.trim_end())]);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The state letter and the flags of a /proc/PID/stat line. The name in parentheses may hold
/// spaces and parentheses itself, so the fields are counted from its last `)`.
fn parse_state_flags(stat: &str) -> Option<(char, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // state, ppid, pgrp, session, tty_nr, tpgid, flags
    let flags = fields.nth(5)?.parse().ok()?;
    Some((state, flags))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_uid_line_gives_real_effective_and_saved() {
        let status = "Name:\tsleep\nUid:\t1000\t0\t1000\t0\nGid:\t1000\t1000\t1000\t1000\n";
        assert_eq!(parse_uids(status), Some([1000, 0, 1000]));
        assert_eq!(parse_uids("Name:\tx\n"), None);
        assert_eq!(parse_uids("Uid:\t1000\tnope\t1\t1\n"), None);
        assert_eq!(uids(std::process::id()).map(|u| u.len()), Some(3));
    }

    #[test]
    fn a_stat_line_gives_state_and_flags_past_an_awkward_name() {
        let stat = "15586 (py (3) x) Z 15583 15582 11786 0 -1 4227084 2842 6559 1 0\n";
        assert_eq!(parse_state_flags(stat), Some(('Z', 4227084)));
        let kthread = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0\n";
        assert_eq!(
            parse_state_flags(kthread).map(|(_, f)| f & PF_KTHREAD != 0),
            Some(true)
        );
        assert_eq!(parse_state_flags("12 (cut"), None);
        assert!(matches!(describe(std::process::id()), Process::Running(w) if !w.is_empty()));
    }
}
