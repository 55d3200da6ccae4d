//! The files this process made and means to remove when it ends: what a second Ctrl-C
//! removes before the process exits at once, so that no way of stopping sinkrate leaves
//! its test files behind. Files that existed before the run are never entered here.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

// A set: file-operation jobs track tens of thousands of files.
static FILES: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

fn files() -> MutexGuard<'static, Option<HashSet<PathBuf>>> {
    // A panic elsewhere while holding the set leaves it as valid as before.
    FILES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Notes a file this process is about to create and will remove.
pub fn track(path: &Path) {
    files()
        .get_or_insert_with(HashSet::new)
        .insert(path.to_path_buf());
}

/// Notes several files at once (one lock), before a loop that creates them.
pub fn track_all<'a>(paths: impl IntoIterator<Item = &'a Path>) {
    let mut f = files();
    let set = f.get_or_insert_with(HashSet::new);
    set.extend(paths.into_iter().map(Path::to_path_buf));
}

/// The file was removed, or is kept on purpose (`--keep`): no longer this registry's.
pub fn forget(path: &Path) {
    if let Some(set) = files().as_mut() {
        set.remove(path);
    }
}

/// Removes every tracked file that still exists; returns how many were removed.
pub fn remove_all() -> usize {
    let paths: Vec<PathBuf> = files().take().into_iter().flatten().collect();
    paths
        .iter()
        .filter(|p| std::fs::remove_file(p).is_ok())
        .count()
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
}
