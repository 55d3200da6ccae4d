//! Temporary sysctl changes that are always undone. Before anything is written, the current
//! values are journaled to a file; the guard restores them when dropped (normal end, error,
//! Ctrl-C handled by the caller, panic), and [`restore_pending`] restores a journal left by a
//! process that was killed. Values go back in the order the kernel needs: a `*_ratio` written
//! back clears the matching `*_bytes`, and the other way round.

use std::path::{Path, PathBuf};

pub mod persist;

use serde::{Deserialize, Serialize};

pub const DEFAULT_JOURNAL: &str = "/run/sinkrate/sysctl-journal.json";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Entry {
    /// Name under /proc/sys, e.g. `vm/dirty_bytes`.
    pub name: String,
    pub original: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct JournalFile {
    pid: u32,
    entries: Vec<Entry>,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}", path = .0.display(), source = .1)]
    Io(PathBuf, std::io::Error),
    #[error("{}: another sinkrate run holds temporary sysctl changes (wait for it, or delete the file if no sinkrate runs)", .0.display())]
    Busy(PathBuf),
}

fn sys_path(root: &Path, name: &str) -> PathBuf {
    root.join(name)
}

fn read(root: &Path, name: &str) -> Result<String, Error> {
    let p = sys_path(root, name);
    std::fs::read_to_string(&p)
        .map(|s| s.trim().to_string())
        .map_err(|e| Error::Io(p, e))
}

fn write(root: &Path, name: &str, value: &str) -> Result<(), Error> {
    let p = sys_path(root, name);
    std::fs::write(&p, value).map_err(|e| Error::Io(p, e))
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Changes applied under a journal; dropping it restores them and removes the journal.
#[derive(Debug)]
pub struct Guard {
    root: PathBuf,
    journal: PathBuf,
    entries: Vec<Entry>,
    restored: bool,
}

impl Guard {
    /// Journals the current values of every name in `changes`, then writes the new values in
    /// order. `root` is /proc/sys (tests point it elsewhere).
    pub fn apply(root: &Path, journal: &Path, changes: &[(&str, String)]) -> Result<Guard, Error> {
        if let Ok(text) = std::fs::read_to_string(journal) {
            if let Ok(j) = serde_json::from_str::<JournalFile>(&text) {
                if alive(j.pid) && j.pid != std::process::id() {
                    return Err(Error::Busy(journal.to_path_buf()));
                }
            }
            restore_pending(root, journal)?;
        }
        let mut entries: Vec<Entry> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for (name, _) in changes {
            names.push(name.to_string());
            // The other form of the same setting is journaled too: restoring may need it.
            if let Some(c) = companion(name) {
                if root.join(&c).exists() {
                    names.push(c);
                }
            }
        }
        for name in names {
            if !entries.iter().any(|e| e.name == name) {
                let original = read(root, &name)?;
                entries.push(Entry { name, original });
            }
        }
        if let Some(dir) = journal.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::Io(dir.to_path_buf(), e))?;
        }
        let text = serde_json::to_string_pretty(&JournalFile {
            pid: std::process::id(),
            entries: entries.clone(),
        })
        .map_err(|e| Error::Io(journal.to_path_buf(), std::io::Error::other(e)))?;
        std::fs::write(journal, text).map_err(|e| Error::Io(journal.to_path_buf(), e))?;
        let mut guard = Guard {
            root: root.to_path_buf(),
            journal: journal.to_path_buf(),
            entries,
            restored: false,
        };
        for (name, value) in changes {
            if let Err(e) = write(root, name, value) {
                let _ = guard.restore();
                return Err(e);
            }
        }
        Ok(guard)
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Writes the original values back and removes the journal.
    pub fn restore(&mut self) -> Result<(), Error> {
        if self.restored {
            return Ok(());
        }
        restore_entries(&self.root, &self.entries)?;
        let _ = std::fs::remove_file(&self.journal);
        self.restored = true;
        Ok(())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.restore();
    }
}

/// The kernel keeps `vm.X_bytes` and `vm.X_ratio` as one setting in two forms: writing one
/// zeroes the other, and `X_bytes` cannot be written as 0. So each pair is restored by writing
/// the form that was in force: the bytes if they were non-zero, else the ratio.
pub(crate) fn companion(name: &str) -> Option<String> {
    if let Some(base) = name.strip_suffix("_bytes") {
        Some(format!("{base}_ratio"))
    } else {
        name.strip_suffix("_ratio")
            .map(|base| format!("{base}_bytes"))
    }
}

fn restore_entries(root: &Path, entries: &[Entry]) -> Result<(), Error> {
    let mut done: Vec<&str> = Vec::new();
    for e in entries {
        if done.contains(&e.name.as_str()) {
            continue;
        }
        let pair = companion(&e.name).and_then(|c| entries.iter().find(|x| x.name == c));
        match pair {
            Some(other) => {
                let (bytes, ratio) = if e.name.ends_with("_bytes") {
                    (e, other)
                } else {
                    (other, e)
                };
                if bytes.original != "0" {
                    write(root, &bytes.name, &bytes.original)?;
                } else {
                    write(root, &ratio.name, &ratio.original)?;
                }
                done.push(&other.name);
            }
            None => write(root, &e.name, &e.original)?,
        }
        done.push(&e.name);
    }
    Ok(())
}

/// Settings a journal holds changed: the run that made them and the values they replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    pub pid: u32,
    /// The run is still going (it restores them itself when it ends); false: it was killed,
    /// and the next run restores them.
    pub running: bool,
    pub entries: Vec<Entry>,
}

/// What `journal` holds changed, if anything. Reads only.
pub fn pending(journal: &Path) -> Option<Pending> {
    let text = std::fs::read_to_string(journal).ok()?;
    let j: JournalFile = serde_json::from_str(&text).ok()?;
    Some(Pending {
        pid: j.pid,
        running: alive(j.pid),
        entries: j.entries,
    })
}

/// Restores a journal left behind by a run that was killed. Returns what it restored.
pub fn restore_pending(root: &Path, journal: &Path) -> Result<Vec<Entry>, Error> {
    let Ok(text) = std::fs::read_to_string(journal) else {
        return Ok(Vec::new());
    };
    let Ok(j) = serde_json::from_str::<JournalFile>(&text) else {
        return Ok(Vec::new());
    };
    if alive(j.pid) && j.pid != std::process::id() {
        return Err(Error::Busy(journal.to_path_buf()));
    }
    restore_entries(root, &j.entries)?;
    std::fs::remove_file(journal).map_err(|e| Error::Io(journal.to_path_buf(), e))?;
    Ok(j.entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake /proc/sys/vm that mimics the kernel: writing a ratio zeroes the bytes and the
    /// other way round is not modelled (plain files), so the order is checked by content.
    fn fake(dir: &Path, dirty_ratio: &str, dirty_bytes: &str) {
        std::fs::create_dir_all(dir.join("vm")).expect("mkdir");
        std::fs::write(dir.join("vm/dirty_ratio"), dirty_ratio).expect("w");
        std::fs::write(dir.join("vm/dirty_bytes"), dirty_bytes).expect("w");
    }

    #[test]
    fn apply_journals_first_and_drop_restores_the_form_in_force() {
        let d = std::env::temp_dir().join(format!("sinkrate-sysctl-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        fake(&d, "20", "0");
        let journal = d.join("journal.json");
        let read = |n: &str| std::fs::read_to_string(d.join(n)).expect("read");
        {
            let g = Guard::apply(&d, &journal, &[("vm/dirty_bytes", "16777216".into())])
                .expect("apply");
            assert_eq!(g.entries().len(), 2, "the ratio form is journaled too");
            assert!(journal.exists(), "journaled while applied");
            assert_eq!(read("vm/dirty_bytes"), "16777216");
            // What the kernel does when bytes are written: the ratio reads 0.
            std::fs::write(d.join("vm/dirty_ratio"), "0").expect("w");
        }
        assert!(!journal.exists());
        assert_eq!(
            read("vm/dirty_ratio"),
            "20",
            "the ratio was in force, so it is written back"
        );
        // And when bytes were in force, bytes are written back.
        fake(&d, "0", "33554432");
        {
            let _g = Guard::apply(&d, &journal, &[("vm/dirty_ratio", "5".into())]).expect("apply");
            std::fs::write(d.join("vm/dirty_bytes"), "0").expect("w");
        }
        assert_eq!(read("vm/dirty_bytes"), "33554432");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_journal_left_by_a_killed_run_is_restored() {
        let d = std::env::temp_dir().join(format!("sinkrate-sysctl-test2-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        fake(&d, "20", "16777216");
        let journal = d.join("journal.json");
        // A journal from a process that no longer exists.
        std::fs::write(
            &journal,
            r#"{"pid": 4000000, "entries": [{"name": "vm/dirty_bytes", "original": "33554432"}]}"#,
        )
        .expect("w");
        let restored = restore_pending(&d, &journal).expect("restore");
        assert_eq!(restored.len(), 1);
        assert_eq!(
            std::fs::read_to_string(d.join("vm/dirty_bytes")).expect("r"),
            "33554432"
        );
        assert!(!journal.exists());
        let _ = std::fs::remove_dir_all(&d);
    }
}
