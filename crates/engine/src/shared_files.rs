//! Files that several jobs of one run use (the same `filename=`, across stonewalls and
//! `wait_for`): the last job to close one removes it, and only if it was not there before
//! the run (or an earlier run made and kept it), so a later job reads what an earlier one
//! wrote, as in fio.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::files::PlannedFile;

#[derive(Debug, Default)]
pub struct SharedFiles {
    users: Mutex<HashMap<PathBuf, Users>>,
    /// Directories the run made for its files (as fio makes a file's missing directories),
    /// in the order they were made.
    made_dirs: Mutex<Vec<PathBuf>>,
    /// Files the run has created so far (the first job to open a file creates it).
    created: Mutex<std::collections::HashSet<PathBuf>>,
}

#[derive(Debug)]
struct Users {
    remaining: usize,
    /// There before the run and not kept by an earlier one: never removed.
    not_sinkrates: bool,
}

impl SharedFiles {
    /// Counts the jobs that plan each file; plans are made before any I/O, so the first
    /// plan of a path tells whether it existed before the run.
    pub fn new<'a>(plans: impl IntoIterator<Item = &'a [PlannedFile]>) -> SharedFiles {
        let mut users: HashMap<PathBuf, Users> = HashMap::new();
        for files in plans {
            for f in files.iter().filter(|f| !f.is_block_device && !f.special) {
                users
                    .entry(f.path.clone())
                    .or_insert(Users {
                        remaining: 0,
                        not_sinkrates: f.existing_size.is_some() && !f.kept_from_earlier,
                    })
                    .remaining += 1;
            }
        }
        SharedFiles {
            users: Mutex::new(users),
            made_dirs: Mutex::new(Vec::new()),
            created: Mutex::new(std::collections::HashSet::new()),
        }
    }

    /// Makes the directories missing on the way to `path`, noting each for
    /// [`SharedFiles::remove_made_dirs`].
    pub fn make_parent_dirs(&self, path: &Path) -> std::io::Result<()> {
        let Some(parent) = path.parent() else {
            return Ok(());
        };
        let missing: Vec<&Path> = parent
            .ancestors()
            .take_while(|p| !p.as_os_str().is_empty() && !p.exists())
            .collect();
        let Ok(mut made) = self.made_dirs.lock() else {
            return Err(std::io::Error::other("directory list poisoned"));
        };
        for dir in missing.into_iter().rev() {
            match std::fs::create_dir(dir) {
                Ok(()) => made.push(dir.to_path_buf()),
                // Another job made it meanwhile.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Creates `path`, a file the plan found absent, unless a job of this run already did:
    /// exclusively (a file or symlink that appeared at the name since the plan is never
    /// opened), listed among the run's own files (a killed run's are removed by the next;
    /// the run itself removes it, or lists it as kept, at its end).
    pub fn create(&self, path: &Path) -> std::io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut created = self
            .created
            .lock()
            .map_err(|_| std::io::Error::other("file list poisoned"))?;
        if created.contains(path) {
            return Ok(());
        }
        let mut how = std::fs::OpenOptions::new();
        how.write(true).custom_flags(libc::O_CLOEXEC);
        match sinkrate_sys::owned::create_new(path, &mut how) {
            Ok(_) => {
                created.insert(path.to_path_buf());
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(std::io::Error::new(
                e.kind(),
                "appeared after the run planned its files (another program made it); not written",
            )),
            Err(e) => Err(e),
        }
    }

    /// Removes the directories the run made, deepest first, those left empty only (files
    /// kept with --keep or unlink=0 keep theirs).
    pub fn remove_made_dirs(&self) {
        if let Ok(mut made) = self.made_dirs.lock() {
            for dir in made.drain(..).rev() {
                let _ = std::fs::remove_dir(&dir);
            }
        }
    }

    /// One job is done with `path`: whether it was the last to use a file the run made or
    /// an earlier run kept (a path no other job planned counts as this job's alone).
    pub fn release(&self, path: &Path, created_by_this_job: bool) -> bool {
        let Ok(mut users) = self.users.lock() else {
            return false;
        };
        match users.get_mut(path) {
            Some(u) => {
                u.remaining = u.remaining.saturating_sub(1);
                u.remaining == 0 && !u.not_sinkrates
            }
            None => created_by_this_job,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(path: &str, existing: Option<u64>) -> PlannedFile {
        PlannedFile {
            path: PathBuf::from(path),
            existing_size: existing,
            ..PlannedFile::default()
        }
    }

    #[test]
    fn the_last_user_removes_only_what_the_run_made() {
        let a = [plan("made", None), plan("there", Some(4096))];
        let b = [plan("made", None), plan("there", Some(4096))];
        let shared = SharedFiles::new([&a[..], &b[..]]);
        assert!(!shared.release(Path::new("made"), true));
        assert!(shared.release(Path::new("made"), false));
        assert!(!shared.release(Path::new("there"), false));
        assert!(!shared.release(Path::new("there"), false));
        assert!(shared.release(Path::new("alone"), true));
    }

    #[test]
    fn made_directories_are_removed_when_empty() {
        let d = tempfile::tempdir().expect("tmp");
        let shared = SharedFiles::default();
        let file = d.path().join("dev/disk/one");
        shared.make_parent_dirs(&file).expect("mkdir");
        std::fs::write(&file, b"x").expect("write");
        shared
            .make_parent_dirs(&d.path().join("dev/two"))
            .expect("again");
        shared.remove_made_dirs();
        assert!(d.path().join("dev/disk").is_dir(), "not empty: kept");
        std::fs::remove_file(&file).expect("rm");
        shared.make_parent_dirs(&file).expect("mkdir");
        shared.remove_made_dirs();
        assert!(d.path().join("dev").is_dir(), "made before: not this one's");
    }
}
