//! The files this process made and means to remove when it ends: what a second Ctrl-C
//! removes before the process exits at once, so that no way of stopping sinkrate leaves
//! its test files behind. Files that existed before the run are never entered here.
//!
//! Each entry is also appended to a journal of this process's (`/run/sinkrate/owned/PID`
//! as root, else under the temporary directory), written before the file is created and
//! never buffered, so a run killed with SIGKILL leaves a list: the next sinkrate run removes
//! what it names ([`sweep_left_over`]) and says so.

use std::collections::HashSet;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

// A set: file-operation jobs track tens of thousands of files.
static FILES: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
static JOURNAL: Mutex<Option<std::fs::File>> = Mutex::new(None);

fn files() -> MutexGuard<'static, Option<HashSet<PathBuf>>> {
    // A panic elsewhere while holding the set leaves it as valid as before.
    FILES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where the journals live: one directory per user, not shared with others.
pub fn journal_dir() -> PathBuf {
    if crate::is_root() {
        PathBuf::from("/run/sinkrate/owned")
    } else {
        // SAFETY: getuid cannot fail.
        let uid = unsafe { libc::getuid() };
        std::env::temp_dir().join(format!("sinkrate-{uid}-owned"))
    }
}

fn journal_path() -> PathBuf {
    journal_dir().join(std::process::id().to_string())
}

/// The journal directory, made if absent, and trusted only if it is a real directory of this
/// user's that nobody else can write: the sweep removes the files its journals name.
fn trusted_dir() -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let dir = journal_dir();
    let _ = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir);
    let m = std::fs::symlink_metadata(&dir).ok()?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    (m.is_dir() && m.uid() == me && m.mode() & 0o022 == 0).then_some(dir)
}

/// Appends records (`+path\0` made, `-path\0` removed or kept) to this process's journal.
/// Without a journal (a read-only /run), the in-memory registry still works.
fn note(records: &[u8]) {
    let mut j = JOURNAL.lock().unwrap_or_else(|e| e.into_inner());
    if j.is_none() {
        use std::os::unix::fs::OpenOptionsExt;
        *j = trusted_dir().and_then(|dir| {
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(dir.join(std::process::id().to_string()))
                .ok()
        });
    }
    if let Some(f) = j.as_mut() {
        let _ = f.write_all(records);
    }
}

fn record(sign: u8, path: &Path, out: &mut Vec<u8>) {
    out.push(sign);
    out.extend_from_slice(path.as_os_str().as_bytes());
    out.push(0);
}

/// Notes a file this process is about to create and will remove.
pub fn track(path: &Path) {
    let mut r = Vec::new();
    record(b'+', path, &mut r);
    note(&r);
    files()
        .get_or_insert_with(HashSet::new)
        .insert(path.to_path_buf());
}

/// Notes several files at once (one lock, one journal write), before a loop that creates
/// them.
pub fn track_all<'a>(paths: impl IntoIterator<Item = &'a Path>) {
    let paths: Vec<&Path> = paths.into_iter().collect();
    let mut r = Vec::new();
    for p in &paths {
        record(b'+', p, &mut r);
    }
    note(&r);
    let mut f = files();
    let set = f.get_or_insert_with(HashSet::new);
    set.extend(paths.into_iter().map(Path::to_path_buf));
}

/// Notes a directory this process made for itself alone (a suite's work directory): a
/// killed run's is removed with what it holds.
pub fn track_dir(path: &Path) {
    let mut r = Vec::new();
    record(b'D', path, &mut r);
    note(&r);
}

/// The directory was removed: no longer listed.
pub fn forget_dir(path: &Path) {
    let mut r = Vec::new();
    record(b'-', path, &mut r);
    note(&r);
}

/// The file was removed, or is kept on purpose (`--keep`): no longer this registry's.
pub fn forget(path: &Path) {
    if let Some(set) = files().as_mut() {
        if set.remove(path) {
            let mut r = Vec::new();
            record(b'-', path, &mut r);
            note(&r);
        }
    }
}

/// Removes every tracked file that still exists; returns how many were removed.
pub fn remove_all() -> usize {
    let paths: Vec<PathBuf> = files().take().into_iter().flatten().collect();
    let removed = paths
        .iter()
        .filter(|p| std::fs::remove_file(p).is_ok())
        .count();
    finish();
    removed
}

/// The process is ending normally: its journal goes (what it still lists was removed or
/// kept by the command itself).
pub fn finish() {
    if JOURNAL
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .is_some()
    {
        let _ = std::fs::remove_file(journal_path());
    }
}

/// What a killed run had left, and what became of it.
#[derive(Debug, Default, PartialEq)]
pub struct LeftOver {
    pub pid: u32,
    pub removed: Vec<PathBuf>,
    /// Listed, still there, and not removable (named so the user can).
    pub kept: Vec<(PathBuf, String)>,
}

/// The files (and directories, `true`) a journal still lists as made and not yet removed.
pub fn listed(journal: &[u8]) -> Vec<(PathBuf, bool)> {
    let mut live: Vec<(PathBuf, bool)> = Vec::new();
    let mut gone: HashSet<PathBuf> = HashSet::new();
    // A record torn by the kill (no terminating NUL) is not trusted.
    let whole = journal
        .iter()
        .rposition(|b| *b == 0)
        .map_or(&[][..], |end| &journal[..end]);
    for rec in whole.split(|b| *b == 0).filter(|r| r.len() > 1) {
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(&rec[1..]));
        match rec[0] {
            b'+' | b'D' => {
                gone.remove(&path);
                live.push((path, rec[0] == b'D'));
            }
            b'-' => {
                gone.insert(path);
            }
            _ => {}
        }
    }
    let mut seen = HashSet::new();
    live.into_iter()
        .filter(|(p, _)| !gone.contains(p) && seen.insert(p.clone()))
        .collect()
}

fn is_work_dir(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(".sinkrate-suite-"))
}

/// Removes the files that runs killed before they could (their process gone) left listed,
/// and their journals.
pub fn sweep_left_over() -> Vec<LeftOver> {
    let mut out = Vec::new();
    let Some(Ok(entries)) = trusted_dir().map(std::fs::read_dir) else {
        return out;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        // SAFETY: signal 0 only asks whether the process exists.
        let alive = pid == std::process::id()
            || unsafe { libc::kill(pid as libc::pid_t, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if alive {
            continue;
        }
        let Ok(bytes) = std::fs::read(e.path()) else {
            continue;
        };
        let mut left = LeftOver {
            pid,
            ..LeftOver::default()
        };
        for (path, is_dir) in listed(&bytes) {
            let removed = match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_file() && !is_dir => std::fs::remove_file(&path),
                // Only sinkrate's own work directories, whatever a journal says.
                Ok(m) if m.is_dir() && is_dir && is_work_dir(&path) => {
                    std::fs::remove_dir_all(&path)
                }
                _ => continue,
            };
            match removed {
                Ok(()) => left.removed.push(path),
                Err(err) => left.kept.push((path, err.to_string())),
            }
        }
        let _ = std::fs::remove_file(e.path());
        if !left.removed.is_empty() || !left.kept.is_empty() {
            out.push(left);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracked_files_are_removed_and_forgotten_ones_are_left() {
        let d = tempfile::tempdir().expect("tempdir");
        let mine = d.path().join("mine");
        let kept = d.path().join("kept");
        for p in [&mine, &kept] {
            track(p);
            std::fs::write(p, b"x").expect("write");
        }
        forget(&kept);
        assert_eq!(remove_all(), 1);
        assert!(!mine.exists());
        assert!(kept.exists());
        assert_eq!(remove_all(), 0);
    }

    #[test]
    fn a_journal_lists_what_was_made_and_not_removed() {
        let mut j = Vec::new();
        record(b'+', Path::new("/a"), &mut j);
        record(b'+', Path::new("/b\nc"), &mut j);
        record(b'-', Path::new("/a"), &mut j);
        record(b'+', Path::new("/d"), &mut j);
        record(b'D', Path::new("/w"), &mut j);
        j.extend_from_slice(b"+/torn");
        assert_eq!(
            listed(&j),
            vec![
                (PathBuf::from("/b\nc"), false),
                (PathBuf::from("/d"), false),
                (PathBuf::from("/w"), true)
            ]
        );
        assert!(listed(b"").is_empty());
    }
}
