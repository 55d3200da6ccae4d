//! Replacing a small state file (a journal, an emulated device's state) so that a kill or a
//! power cut leaves the old file or the whole new one: written beside it, synced, renamed
//! over it, and the directory synced. For sinkrate's own files in its own directories; a
//! user's output goes through `sinkrate_sys::output`, which also refuses what it must not
//! replace.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Replaces `path` with `bytes`. A file that is there keeps its permissions (an fstab made
/// private stays so); a new one gets `new_mode`. The temporary file is removed on failure.
pub fn replace(path: &Path, bytes: &[u8], new_mode: u32) -> std::io::Result<()> {
    let tmp = temporary_name(path);
    // The mode of the file itself, never of what a link at the name points to.
    let mode = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(new_mode);
    // A temporary left by a killed run (or anything planted at its name, a symlink
    // included) is unlinked, never opened: the new one is created exclusively, so no
    // link is followed.
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)?;
        // The mode given at creation is narrowed by the umask; the file's own is restored.
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// `.NAME.tmp` beside `path`.
fn temporary_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_keeps_its_mode() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("journal.json");
        replace(&p, b"one", 0o600).expect("new");
        assert_eq!(std::fs::read(&p).expect("read"), b"one");
        assert_eq!(
            std::fs::metadata(&p).expect("meta").permissions().mode() & 0o777,
            0o600
        );
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        replace(&p, b"two", 0o600).expect("again");
        assert_eq!(std::fs::read(&p).expect("read"), b"two");
        assert_eq!(
            std::fs::metadata(&p).expect("meta").permissions().mode() & 0o777,
            0o640
        );
        let names: Vec<_> = std::fs::read_dir(d.path()).expect("ls").collect();
        assert_eq!(names.len(), 1, "no temporary file is left");
    }

    #[test]
    fn a_symlink_planted_at_the_temporary_name_is_not_followed() {
        let d = tempfile::tempdir().expect("tempdir");
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"a user's file").expect("write");
        let p = d.path().join("state.json");
        std::os::unix::fs::symlink(&victim, d.path().join(".state.json.tmp")).expect("link");
        replace(&p, b"state", 0o644).expect("replaced");
        assert_eq!(std::fs::read(&victim).expect("read"), b"a user's file");
        assert_eq!(std::fs::read(&p).expect("read"), b"state");
    }

    #[test]
    fn a_failed_replace_leaves_the_old_file_and_no_temporary() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("state.json");
        replace(&p, b"old", 0o644).expect("new");
        // A directory where the file's temporary name must go makes the write fail.
        std::fs::create_dir(d.path().join(".state.json.tmp")).expect("mkdir");
        assert!(replace(&p, b"new", 0o644).is_err());
        assert_eq!(std::fs::read(&p).expect("read"), b"old");
    }
}
