//! Files a user names for results (`--output`, `--csv`, `--frames-log`, `--prometheus`, fio's
//! log names): written only when the path is a regular file or does not exist. A device node,
//! a FIFO, a directory or a socket is never opened for writing, truncated or renamed over.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

fn not_regular(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {what}, not a regular file: results are written only to a regular file or a new one",
            path.display()
        ),
    )
}

fn kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Whether `path` may receive results: absent, or a regular file (through a symlink that
/// [`followable`] allows).
pub fn check(path: &Path) -> io::Result<()> {
    followable(path)?;
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) => Err(not_regular(path, kind(&m))),
        // A link to nothing: where the result would land is not known before the work.
        Err(e)
            if e.kind() == io::ErrorKind::NotFound && std::fs::symlink_metadata(path).is_ok() =>
        {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{} is a symbolic link to a name that does not exist",
                    path.display()
                ),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Refuses a symbolic link that someone else could have planted: one in a sticky directory
/// that others may write (such as /tmp), owned by neither this user nor the directory's
/// owner. That is the kernel's `fs.protected_symlinks` rule, kept here because boards
/// without systemd leave it off.
pub fn followable(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(link) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !link.file_type().is_symlink() {
        return Ok(());
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir_meta = std::fs::metadata(dir)?;
    let sticky_shared = dir_meta.mode() & 0o1000 != 0 && dir_meta.mode() & 0o002 != 0;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if sticky_shared && link.uid() != me && link.uid() != dir_meta.uid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is a symbolic link another user owns in the shared directory {}: not followed",
                path.display(),
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// Whether two paths name one file: the same device and inode where both exist, else the
/// same absolute path once their directories are resolved (an output not written yet).
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        (Err(_), Err(_)) => resolved(a) == resolved(b),
        _ => false,
    }
}

/// `path` with its directory resolved (links followed) and its own name kept.
fn resolved(path: &Path) -> PathBuf {
    let abs = crate::owned::absolute(path);
    match (abs.parent(), abs.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .map(|d| d.join(name))
            .unwrap_or(abs.clone()),
        _ => abs,
    }
}

/// Everything that would stop a result being written to `path`, asked before any work: a
/// name ending in `/`, a missing directory, something other than a regular file at the
/// name, a symlink someone else planted ([`followable`]), a NUL, and whether a file can be
/// made there at all (a probe file created and removed: /proc, a read-only mount and a
/// directory without permission all answer, even to root).
pub fn writable_here(path: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let refuse = |why: String| Err(io::Error::new(io::ErrorKind::InvalidInput, why));
    if bytes.contains(&0) {
        return refuse("the path contains a NUL byte".into());
    }
    if bytes.ends_with(b"/") || path.file_name().is_none() {
        return refuse("names a directory, not a file".into());
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return refuse(format!("the directory {} does not exist", dir.display()));
    }
    check(path)?;
    if std::fs::metadata(path).is_ok() {
        // There already: opened to write without changing a byte.
        return std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map(drop);
    }
    let (probe, f) = temporary_beside(path)?;
    drop(f);
    crate::owned::remove(&probe).map(drop)
}

/// Opens `path` for writing from the start, creating it if absent. The file is opened
/// without truncation and without blocking (a FIFO without a reader fails at once), its type
/// checked on the open descriptor, and only then truncated: nothing but a regular file is
/// ever changed.
pub fn create(path: &Path) -> io::Result<File> {
    let f = open_regular(
        path,
        std::fs::OpenOptions::new().write(true).truncate(false),
    )?;
    f.set_len(0)?;
    Ok(f)
}

/// Opens `path` to add to its end, creating it if absent, with [`create`]'s checks: only a
/// regular file is ever written (fio opens its write_iolog this way).
pub fn append(path: &Path) -> io::Result<File> {
    open_regular(path, std::fs::OpenOptions::new().append(true))
}

/// Opens `path` with `how`, creating it, without blocking; an error unless it is a regular
/// file (checked on the open descriptor, so a swap for something else is caught too).
fn open_regular(path: &Path, how: &mut std::fs::OpenOptions) -> io::Result<File> {
    followable(path)?;
    let f = how
        .create(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .mode(0o644)
        .open(path)
        .map_err(|e| match std::fs::metadata(path) {
            Ok(m) if !m.is_file() => not_regular(path, kind(&m)),
            _ => e,
        })?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(path, kind(&meta)));
    }
    Ok(f)
}

/// Writes `bytes` to `path` as [`create`] allows.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = create(path)?;
    f.write_all(bytes)?;
    f.flush()
}

/// Replaces `path` atomically and durably: a new temporary file beside it (created
/// exclusively, listed among this run's files), written, synced, renamed over it, and the
/// directory synced, so a reader, a killed run or a power cut leaves the old file or the
/// whole new one, never half of it. Through a symbolic link ([`followable`] only), the
/// link's target is replaced and the link kept. Anything but a regular file or a new name
/// is refused, and the temporary file is removed on any failure.
pub fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_with(path, |w| w.write_all(bytes))
}

/// As [`replace`], with the content written by `fill` as it is made (a result of many
/// megabytes is never held whole in memory first).
pub fn replace_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    check(path)?;
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path)?,
        _ => path.to_path_buf(),
    };
    let (tmp, f) = temporary_beside(&target)?;
    let mut w = io::BufWriter::with_capacity(1 << 16, f);
    let written = fill(&mut w)
        .and_then(|()| w.into_inner().map_err(|e| e.into_error()))
        .and_then(|f| f.sync_all())
        .and_then(|()| std::fs::rename(&tmp, &target));
    if written.is_err() {
        let _ = crate::owned::remove(&tmp);
    }
    crate::owned::forget(&tmp);
    written?;
    sync_dir_of(&target);
    Ok(())
}

/// Writes a result: [`replace`]. (One policy for every output flag.)
pub fn result(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes)
}

/// Writes a result as it is made: [`replace_with`].
pub fn result_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    replace_with(path, fill)
}

/// Writes `bytes` as a new file under a name of its own in `dir`: `STEM.EXT`, or
/// `STEM-2.EXT`, `STEM-3.EXT`, ... when that is taken, each created exclusively, so a name
/// someone else made first (a file, or a symlink planted in /tmp) is never written through.
/// `fill` gets the chosen path and gives the bytes (a report that names its own file).
pub fn new_file(
    dir: &Path,
    stem: &str,
    ext: &str,
    fill: impl FnOnce(&Path) -> io::Result<Vec<u8>>,
) -> io::Result<PathBuf> {
    for n in 1..1000 {
        let name = if n == 1 {
            format!("{stem}.{ext}")
        } else {
            format!("{stem}-{n}.{ext}")
        };
        let path = dir.join(name);
        let mut f = match crate::owned::create_new(
            &path,
            std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_CLOEXEC),
        ) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        let written = fill(&path).and_then(|bytes| {
            f.write_all(&bytes)?;
            f.sync_all()
        });
        drop(f);
        if let Err(e) = written {
            let _ = crate::owned::remove(&path);
            return Err(e);
        }
        crate::owned::forget(&path);
        sync_dir_of(&path);
        return Ok(path);
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{}: no free name for {stem}.{ext}", dir.display()),
    ))
}

/// Creates `path` for an output written as it is made and kept whatever happens to the run
/// (a capture's trace: what was written before a Ctrl-C or a kill is the trace so far).
/// Created exclusively, as every file sinkrate makes ([`crate::owned::create_new`]): a name
/// already taken is `AlreadyExists`, unless `replace` allows removing a regular file there
/// first (never a symlink someone else could have planted, nor anything but a file).
pub fn new_stream(path: &Path, replace: bool) -> io::Result<File> {
    let how = || {
        let mut o = std::fs::OpenOptions::new();
        o.write(true).custom_flags(libc::O_CLOEXEC);
        o
    };
    let f = match crate::owned::create_new(path, &mut how()) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && replace => {
            followable(path)?;
            let m = std::fs::symlink_metadata(path)?;
            if !m.is_file() {
                return Err(not_regular(path, kind(&m)));
            }
            std::fs::remove_file(path)?;
            crate::owned::create_new(path, &mut how())?
        }
        other => other?,
    };
    // Kept: not among the files a cut-short run removes.
    crate::owned::forget(path);
    Ok(f)
}

/// A new temporary file beside `path`, created exclusively under a name no other process
/// uses (this one's PID and a counter), listed among this run's files.
fn temporary_beside(path: &Path) -> io::Result<(PathBuf, File)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let mut name = std::ffi::OsString::from(".");
        name.push(path.file_name().unwrap_or_default());
        name.push(format!(
            ".{}.{}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let tmp = path.with_file_name(name);
        match crate::owned::create_new(
            &tmp,
            std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_CLOEXEC),
        ) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Makes a rename in the directory of `path` durable; a directory that cannot be synced
/// (some FUSE file systems) keeps the rename all the same.
fn sync_dir_of(path: &Path) {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn regular_and_new_files_are_written() {
        let _one = crate::registry_test();
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("r.json");
        write(&p, b"first, longer").expect("new");
        write(&p, b"second").expect("existing");
        assert_eq!(std::fs::read(&p).expect("read"), b"second");
        replace(&p, b"third").expect("replace");
        assert_eq!(std::fs::read(&p).expect("read"), b"third");
        assert_eq!(std::fs::read_dir(d.path()).expect("list").count(), 1);
    }

    #[test]
    fn a_result_written_as_it_is_made_fails_whole() {
        let _one = crate::registry_test();
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("r.json");
        write(&p, b"old").expect("new");
        // In pieces, more than the buffer holds.
        result_with(&p, |w| {
            for _ in 0..100 {
                w.write_all(&[b'x'; 1000])?;
            }
            Ok(())
        })
        .expect("streamed");
        assert_eq!(std::fs::read(&p).expect("read").len(), 100_000);
        // A writer that fails half way leaves the file as it was, and no temporary file.
        let err = result_with(&p, |w| {
            w.write_all(&[b'y'; 200_000])?;
            Err(io::Error::other("the serializer failed"))
        })
        .expect_err("failed");
        assert!(err.to_string().contains("serializer"), "{err}");
        assert_eq!(std::fs::read(&p).expect("read").len(), 100_000);
        assert_eq!(std::fs::read_dir(d.path()).expect("list").count(), 1);
    }

    #[test]
    fn a_new_file_never_takes_a_name_that_exists() {
        let _one = crate::registry_test();
        let d = tempfile::tempdir().expect("tempdir");
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"mine").expect("write");
        std::os::unix::fs::symlink(&victim, d.path().join("r.json")).expect("plant");
        let p = new_file(d.path(), "r", "json", |p| {
            Ok(p.display().to_string().into_bytes())
        })
        .expect("new");
        assert_eq!(p, d.path().join("r-2.json"));
        assert_eq!(
            std::fs::read(&p).expect("read"),
            p.display().to_string().as_bytes()
        );
        assert_eq!(std::fs::read(&victim).expect("read"), b"mine");
    }

    #[test]
    fn a_result_through_a_link_replaces_the_target_whole() {
        let _one = crate::registry_test();
        let d = tempfile::tempdir().expect("tempdir");
        let target = d.path().join("t.json");
        std::fs::write(&target, b"old").expect("write");
        let link = d.path().join("l.json");
        std::os::unix::fs::symlink(&target, &link).expect("link");
        result(&link, b"new").expect("result");
        assert!(std::fs::symlink_metadata(&link)
            .expect("link")
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).expect("read"), b"new");
        assert_eq!(std::fs::read_dir(d.path()).expect("list").count(), 2);
    }

    #[test]
    fn directories_and_fifos_are_refused_and_left_alone() {
        let _one = crate::registry_test();
        let d = tempfile::tempdir().expect("tempdir");
        let err = write(d.path(), b"x").expect_err("a directory");
        assert!(err.to_string().contains("a directory"), "{err}");
        let fifo = d.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf8")).expect("cstring");
        // SAFETY: mkfifo on a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let err = write(&fifo, b"x").expect_err("a FIFO");
        assert!(err.to_string().contains("FIFO"), "{err}");
        let err = replace(&fifo, b"x").expect_err("never renamed over");
        assert!(err.to_string().contains("FIFO"), "{err}");
        assert!(std::fs::symlink_metadata(&fifo)
            .expect("still there")
            .file_type()
            .is_fifo());
        assert_eq!(
            std::fs::read_dir(d.path()).expect("list").count(),
            1,
            "no temporary file left"
        );
        assert!(check(&fifo).is_err());
        assert!(check(&d.path().join("new.json")).is_ok());
    }
}
