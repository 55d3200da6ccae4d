//! /proc/self/mountinfo (see proc(5)).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mount {
    pub mount_id: u32,
    pub parent_id: u32,
    pub major: u32,
    pub minor: u32,
    /// The directory of the filesystem that forms this mount's root (bind mounts).
    pub root: String,
    pub mount_point: String,
    pub mount_options: Vec<String>,
    pub fs_type: String,
    pub source: String,
    pub super_options: Vec<String>,
}

/// Parses every well-formed line; malformed lines are skipped (a kernel may add fields).
pub fn parse(text: &str) -> Vec<Mount> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Mount> {
    let (left, right) = line.split_once(" - ")?;
    let mut l = left.split(' ');
    let mount_id = l.next()?.parse().ok()?;
    let parent_id = l.next()?.parse().ok()?;
    let (major, minor) = l.next()?.split_once(':')?;
    let root = unescape(l.next()?);
    let mount_point = unescape(l.next()?);
    let mount_options = l.next()?.split(',').map(str::to_string).collect();
    let mut r = right.split(' ');
    let fs_type = r.next()?.to_string();
    let source = unescape(r.next()?);
    let super_options = r
        .next()
        .unwrap_or("")
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    Some(Mount {
        mount_id,
        parent_id,
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
        root,
        mount_point,
        mount_options,
        fs_type,
        source,
        super_options,
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo` octal.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)))
            .map(|d| d.iter().fold(0u16, |v, b| v * 8 + u16::from(b - b'0')));
        // The kernel writes one byte as \ooo, so at most \377; anything else is literal.
        if let Some(value) = octal.and_then(|v| u8::try_from(v).ok()) {
            out.push(value);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount that contains `path` (already canonical): the longest mount-point prefix,
/// the last one mounted when several stack on the same point.
pub fn mount_for_path<'a>(mounts: &'a [Mount], path: &str) -> Option<&'a Mount> {
    let mut best: Option<&Mount> = None;
    for m in mounts {
        let mp = m.mount_point.as_str();
        let contains = path == mp
            || mp == "/"
            || (path.starts_with(mp) && path.as_bytes().get(mp.len()) == Some(&b'/'));
        if contains && best.is_none_or(|b| mp.len() >= b.mount_point.len()) {
            best = Some(m);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_this_vm() {
        let mounts = parse(include_str!("../fixtures/x86-vm-6.18/mountinfo"));
        assert!(mounts.len() >= 5);
        let root = mount_for_path(&mounts, "/work/main").expect("root mount");
        assert_eq!(root.mount_point, "/");
        let shm = mount_for_path(&mounts, "/dev/shm/x").expect("shm");
        assert_eq!(shm.fs_type, "tmpfs");
    }

    #[test]
    fn octal_escapes_above_one_byte_stay_literal() {
        // Found by fuzzing: \777 overflowed a byte.
        assert_eq!(unescape("a\\040b\\777"), "a b\\777");
        assert_eq!(unescape("end\\04"), "end\\04");
    }

    #[test]
    fn parses_board_with_bind_mounts_options_and_escapes() {
        let mounts = parse(include_str!("../fixtures/arm-board-3.10/mountinfo"));
        let sd = mount_for_path(&mounts, "/media/sd/rec/a.mp4").expect("sd");
        assert_eq!((sd.major, sd.minor), (179, 33));
        assert!(sd.mount_options.iter().any(|o| o == "sync"));
        assert_eq!(sd.fs_type, "vfat");
        let bind = mount_for_path(&mounts, "/srv/export/f").expect("bind");
        assert_eq!(bind.root, "/export");
        assert_eq!(bind.source, "/dev/sda1");
        assert!(mounts.iter().any(|m| m.mount_point == "/mnt/with space"));
        assert_eq!(
            mount_for_path(&mounts, "/media/sdx").map(|m| m.mount_point.as_str()),
            Some("/")
        );
    }

    #[test]
    fn malformed_lines_are_skipped() {
        assert!(parse("garbage\n1 2 x:y / / rw - ext4 a rw\n").is_empty());
    }
}
