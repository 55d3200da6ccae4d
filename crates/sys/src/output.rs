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

/// Whether `path` may receive results: absent, or a regular file (through symlinks).
pub fn check(path: &Path) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) => Err(not_regular(path, kind(&m))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
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

/// Replaces `path` atomically (a temporary file beside it, renamed over it), so a reader
/// never sees half a file. The target must be absent or a regular file itself (not a symlink
/// to one, which the rename would replace); the temporary file is removed on any failure.
pub fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.is_file() => return Err(not_regular(path, kind(&m))),
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let tmp = temporary_beside(path);
    let written = write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() && std::fs::symlink_metadata(&tmp).is_ok_and(|m| m.is_file()) {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Writes a result: replaced atomically (see [`replace`]) when `path` is absent or a regular
/// file, so a run killed while writing leaves the old file or the whole new one, never half
/// of it; through a symbolic link, written in place (a rename would replace the link). The
/// temporary file is in the registry of files this process made, so the next run removes it
/// if this one is killed between writing and renaming.
pub fn result(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        check(path)?;
        return write(path, bytes);
    }
    let tmp = temporary_beside(path);
    crate::owned::track(&tmp);
    let written = replace(path, bytes);
    crate::owned::forget(&tmp);
    written
}

fn temporary_beside(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.tmp", std::process::id()));
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn regular_and_new_files_are_written() {
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
    fn directories_and_fifos_are_refused_and_left_alone() {
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
