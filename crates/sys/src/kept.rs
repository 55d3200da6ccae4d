//! The files runs made and kept on purpose (fio's `unlink=0`, `sinkrate bench`'s default
//! as fio's), remembered across runs: a later run may write into one again (fio's "pre"
//! and "post" jobs, a job file run twice in the same directory) while it is still the file
//! a run left, and a later `unlink=1` job may remove it. Any other file that is already at
//! a name a job did not give stays a user's file, which sinkrate never writes into.
//!
//! "Still the file a run left" is its device, inode, the inode's generation (a number the
//! file system gives each new use of an inode, where it has one: ext4, XFS, Btrfs) and
//! birth time (the change time on a file system that keeps no birth time; a run that writes
//! into it then records it anew): a file removed since and another made at the name, even
//! on the same inode, is not taken for it. The list lives in a directory of this user's that nobody else may write
//! (`/var/lib/sinkrate/kept` as root, `$XDG_STATE_HOME/sinkrate/kept` or
//! `~/.local/state/sinkrate/kept` otherwise, `$SINKRATE_STATE_DIR/kept-UID` when set),
//! rewritten whole under a lock, and pruned of files that are gone or replaced each time.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A kept file as it was left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Left {
    dev: u64,
    ino: u64,
    /// FS_IOC_GETVERSION's inode generation; 0 where the file system has none.
    generation: u64,
    /// `b` and the birth time in nanoseconds, or `c` and the change time.
    born: (u8, i128),
}

impl Left {
    fn of(meta: &std::fs::Metadata, generation: u64) -> Left {
        let born = match meta.created() {
            Ok(t) => match t.duration_since(std::time::UNIX_EPOCH) {
                Ok(d) => (b'b', d.as_nanos() as i128),
                Err(e) => (b'b', -(e.duration().as_nanos() as i128)),
            },
            Err(_) => (
                b'c',
                i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            ),
        };
        Left {
            dev: meta.dev(),
            ino: meta.ino(),
            generation,
            born,
        }
    }

    /// The regular file at `path` now (a symlink is not followed, nor a FIFO opened).
    fn at(path: &Path) -> Option<Left> {
        use std::os::unix::fs::OpenOptionsExt;
        let meta = std::fs::symlink_metadata(path)
            .ok()
            .filter(|m| m.is_file())?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .ok();
        let generation = file
            .filter(|f| {
                f.metadata()
                    .is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino())
            })
            .and_then(|f| inode_generation(&f))
            .unwrap_or(0);
        Some(Left::of(&meta, generation))
    }
}

/// The list of kept files, as read from its directory.
#[derive(Debug, Default)]
pub struct Kept {
    files: HashMap<PathBuf, Left>,
}

impl Kept {
    /// Whether the file at `path` is one a run left and kept, and is still that file.
    pub fn holds(&self, path: &Path) -> bool {
        let path = crate::owned::absolute(path);
        self.files
            .get(&path)
            .is_some_and(|left| Left::at(&path) == Some(*left))
    }

    fn parse(bytes: &[u8]) -> Kept {
        let mut files = HashMap::new();
        // A record is `dev ino generation KIND:TIME path` and a NUL; a torn or foreign one is
        // skipped.
        for rec in bytes.split(|b| *b == 0).filter(|r| !r.is_empty()) {
            let mut parts = rec.splitn(5, |b| *b == b' ');
            fn field(p: Option<&[u8]>) -> Option<&str> {
                p.and_then(|p| std::str::from_utf8(p).ok())
            }
            let (Some(dev), Some(ino), Some(generation), Some(born), Some(path)) = (
                field(parts.next()).and_then(|s| s.parse().ok()),
                field(parts.next()).and_then(|s| s.parse().ok()),
                field(parts.next()).and_then(|s| s.parse().ok()),
                field(parts.next()).and_then(|s| {
                    let (kind, time) = s.split_once(':')?;
                    let kind = match kind {
                        "b" => b'b',
                        "c" => b'c',
                        _ => return None,
                    };
                    Some((kind, time.parse::<i128>().ok()?))
                }),
                parts.next(),
            ) else {
                continue;
            };
            let path = PathBuf::from(std::ffi::OsStr::from_bytes(path));
            if path.is_absolute() {
                files.insert(
                    path,
                    Left {
                        dev,
                        ino,
                        generation,
                        born,
                    },
                );
            }
        }
        Kept { files }
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut paths: Vec<&PathBuf> = self.files.keys().collect();
        paths.sort();
        let mut out = Vec::new();
        for path in paths {
            let left = self.files[path];
            out.extend_from_slice(
                format!(
                    "{} {} {} {}:{} ",
                    left.dev,
                    left.ino,
                    left.generation,
                    char::from(left.born.0),
                    left.born.1
                )
                .as_bytes(),
            );
            out.extend_from_slice(path.as_os_str().as_bytes());
            out.push(0);
        }
        out
    }
}

/// Where this user's list lives; `None` when no directory can hold it (no home).
fn list_dir() -> Option<PathBuf> {
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    if let Some(state) = crate::state_dir_override() {
        return Some(state.join(format!("kept-{uid}")));
    }
    if crate::is_root() {
        return Some(PathBuf::from("/var/lib/sinkrate/kept"));
    }
    Some(crate::user_state_home()?.join("sinkrate/kept"))
}

/// The list in one directory: this user's ([`KeptList::for_this_user`]) or a test's.
pub struct KeptList {
    dir: PathBuf,
}

impl KeptList {
    pub fn for_this_user() -> Option<KeptList> {
        list_dir().map(|dir| KeptList { dir })
    }

    pub fn at(dir: &Path) -> KeptList {
        KeptList {
            dir: dir.to_path_buf(),
        }
    }

    /// The directory, when it is private (the list lets a run write into the files it
    /// names): [`crate::owned::private_dir`].
    fn trusted_dir(&self) -> Option<&Path> {
        crate::owned::private_dir(&self.dir).then_some(self.dir.as_path())
    }

    /// The list as it is now (empty when there is none, or its directory is not trusted).
    pub fn load(&self) -> Kept {
        self.trusted_dir()
            .and_then(|dir| std::fs::read(dir.join("files")).ok())
            .map(|bytes| Kept::parse(&bytes))
            .unwrap_or_default()
    }

    /// Changes the list under its lock (`flock` on a file beside it, so that two runs
    /// ending at once do not each drop the other's files): `change` edits it, then files
    /// that are gone or replaced are pruned, and the list is rewritten (synced) if it
    /// changed.
    fn update(&self, change: impl FnOnce(&mut Kept)) {
        use std::os::unix::fs::OpenOptionsExt;
        use std::os::unix::io::AsRawFd;
        let Some(dir) = self.trusted_dir() else {
            return;
        };
        let Ok(lock) = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(dir.join("lock"))
        else {
            return;
        };
        // SAFETY: flock on a descriptor owned here; released when `lock` is closed.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return;
        }
        let path = dir.join("files");
        let before = std::fs::read(&path).unwrap_or_default();
        let mut kept = Kept::parse(&before);
        change(&mut kept);
        kept.files.retain(|p, left| Left::at(p) == Some(*left));
        let after = kept.to_bytes();
        if after != before {
            let _ = sinkrate_platform::durable::replace(&path, &after, 0o600);
        }
        drop(lock);
    }

    /// Records the files at `paths`, as they are now, as kept by this run: a later run may
    /// write into them again, or remove them with `unlink=1`. Called once per run with every
    /// file its jobs kept (a record for a file already listed is renewed).
    pub fn keep_all<'a>(&self, paths: impl IntoIterator<Item = &'a Path>) {
        let now: Vec<(PathBuf, Left)> = paths
            .into_iter()
            .map(crate::owned::absolute)
            .filter_map(|p| Left::at(&p).map(|left| (p, left)))
            .collect();
        if now.is_empty() {
            return;
        }
        self.update(|kept| kept.files.extend(now));
    }

    /// Removes the kept file at `path` (an `unlink=1` job's end) while it is still the file
    /// a run left: the same device, inode, generation and birth time as listed (only a
    /// change time, which the job's own writes move, may differ). `Ok(true)` when it was
    /// removed.
    pub fn remove(&self, path: &Path) -> std::io::Result<bool> {
        let path = crate::owned::absolute(path);
        let mut outcome = Ok(false);
        self.update(|kept| {
            let Some(left) = kept.files.get(&path).copied() else {
                return;
            };
            // The change time alone may have moved (the job's own writes); all else holds.
            let still = Left::at(&path).is_some_and(|now| {
                now.dev == left.dev
                    && now.ino == left.ino
                    && now.generation == left.generation
                    && (now.born == left.born || left.born.0 == b'c')
            });
            if still {
                outcome = std::fs::remove_file(&path).map(|()| true);
            }
            if outcome.is_ok() {
                kept.files.remove(&path);
            }
        });
        outcome
    }
}

/// This user's list as it is now (empty without one).
pub fn load() -> Kept {
    KeptList::for_this_user()
        .map(|l| l.load())
        .unwrap_or_default()
}

/// [`KeptList::keep_all`] on this user's list.
pub fn keep_all<'a>(paths: impl IntoIterator<Item = &'a Path>) {
    if let Some(list) = KeptList::for_this_user() {
        list.keep_all(paths);
    }
}

/// [`KeptList::remove`] on this user's list.
pub fn remove(path: &Path) -> std::io::Result<bool> {
    KeptList::for_this_user().map_or(Ok(false), |list| list.remove(path))
}

/// The inode's generation (FS_IOC_GETVERSION), where the system has it.
#[cfg(target_os = "linux")]
fn inode_generation(f: &std::fs::File) -> Option<u64> {
    use std::os::unix::io::AsRawFd;
    let mut generation: libc::c_long = 0;
    // SAFETY: FS_IOC_GETVERSION writes one long through the pointer given.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), libc::FS_IOC_GETVERSION, &mut generation) };
    (rc == 0).then_some(generation as u64)
}

#[cfg(not(target_os = "linux"))]
fn inode_generation(_: &std::fs::File) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list in a directory of the test's own.
    fn with_list<T>(f: impl FnOnce(&KeptList, &Path) -> T) -> T {
        let state = tempfile::tempdir().expect("tempdir");
        let dir = state.path().join("kept");
        f(&KeptList::at(&dir), &dir)
    }

    #[test]
    fn a_kept_file_is_held_until_it_is_replaced_even_on_the_same_name() {
        with_list(|list, _| {
            let d = tempfile::tempdir().expect("tempdir");
            let file = d.path().join("j.0.0");
            std::fs::write(&file, b"data").expect("write");
            assert!(!list.load().holds(&file), "not kept yet: a user's file");
            list.keep_all([file.as_path()]);
            assert!(list.load().holds(&file));
            // Written since (by a later job): still the same file where birth times are kept.
            std::fs::write(&file, b"more data").expect("write");
            let still = list.load().holds(&file);
            let has_birth_time = std::fs::metadata(&file).expect("stat").created().is_ok();
            assert_eq!(still, has_birth_time);
            list.keep_all([file.as_path()]);
            assert!(list.load().holds(&file), "renewed by the run that wrote it");
            // Removed, and another file made at the name at once, likely on the same inode
            // and within the same tick of the file system's clock: the inode's generation
            // tells them apart where the file system has one (ext4 here); elsewhere the
            // birth time does once the clock has moved on.
            std::fs::remove_file(&file).expect("remove");
            std::fs::write(&file, b"a user's").expect("write");
            if Left::at(&file).expect("a file").generation == 0 {
                std::thread::sleep(std::time::Duration::from_millis(20));
                std::fs::remove_file(&file).expect("remove");
                std::fs::write(&file, b"a user's").expect("write");
            }
            assert!(!list.load().holds(&file));
            assert!(
                !list.remove(&file).expect("remove"),
                "a user's file is not removed"
            );
            assert_eq!(std::fs::read(&file).expect("read"), b"a user's");
        });
    }

    #[test]
    fn removal_takes_only_the_listed_file_and_prunes_the_list() {
        with_list(|list, dir| {
            let d = tempfile::tempdir().expect("tempdir");
            let a = d.path().join("a");
            let b = d.path().join("b");
            for p in [&a, &b] {
                std::fs::write(p, b"x").expect("write");
            }
            list.keep_all([a.as_path(), b.as_path()]);
            assert!(list.remove(&a).expect("remove"));
            assert!(!a.exists());
            // b gone by other hands: pruned at the next change.
            std::fs::remove_file(&b).expect("remove");
            let c = d.path().join("c");
            std::fs::write(&c, b"x").expect("write");
            list.keep_all([c.as_path()]);
            let listed = Kept::parse(&std::fs::read(dir.join("files")).expect("list"));
            assert_eq!(listed.files.len(), 1, "{listed:?}");
            assert!(listed.holds(&c));
        });
    }

    #[test]
    fn a_symlink_a_directory_or_a_torn_record_is_never_held() {
        with_list(|list, _| {
            let d = tempfile::tempdir().expect("tempdir");
            let target = d.path().join("target");
            std::fs::write(&target, b"x").expect("write");
            let link = d.path().join("link");
            std::os::unix::fs::symlink(&target, &link).expect("symlink");
            list.keep_all([link.as_path(), d.path()]);
            assert!(!list.load().holds(&link));
            assert!(!list.load().holds(d.path()));
            let torn = Kept::parse(b"1 2 0 b:3 /x\0garbage\x001 2 0 q:3 /y\0 4 5 0 b:6 relative\0");
            assert_eq!(torn.files.len(), 1, "{torn:?}");
        });
    }
}
