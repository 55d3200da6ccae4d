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
}
