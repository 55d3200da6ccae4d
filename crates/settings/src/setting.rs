//! How each setting sinkrate may change is read and written: sysctls under /proc/sys,
//! block-queue attributes under /sys/block/DEV/queue, per-device writeback limits under
//! /sys/class/bdi, and mount options changed by a remount. Which settings those are, and
//! how a user names them, is the model's table (`sinkrate_model::tunables`).

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::Error;

/// Where the settings live: the live system, or a tree standing in for its /proc/sys and
/// /sys/block in tests (mount options are live only).
#[derive(Debug, Clone)]
pub struct Host {
    root: sinkrate_sys::SysRoot,
}

impl Host {
    pub fn live() -> Host {
        Host::at(sinkrate_sys::SysRoot::live())
    }

    pub fn at(root: sinkrate_sys::SysRoot) -> Host {
        Host { root }
    }

    /// The tree the settings are read from.
    pub fn root(&self) -> &sinkrate_sys::SysRoot {
        &self.root
    }

    /// Whether the kernel has this setting (a bdi attribute of a kernel before 6.2 is not).
    pub fn has(&self, s: &Setting) -> bool {
        match s {
            Setting::Mount { .. } | Setting::File { .. } => true,
            _ => self.path(s).is_some_and(|p| p.exists()),
        }
    }

    /// A sysctl's file under /proc/sys (`vm/dirty_bytes`).
    pub fn sysctl_path(&self, name: &str) -> PathBuf {
        self.root.host_path(&format!("/proc/sys/{name}"))
    }

    fn path(&self, s: &Setting) -> Option<PathBuf> {
        match s {
            Setting::Sysctl { name } => Some(self.sysctl_path(name)),
            Setting::Queue { device, attr } => Some(sinkrate_sys::device::queue_attr_path(
                &self.root, device, attr,
            )),
            Setting::Bdi { bdi, attr } => {
                Some(self.root.host_path(&format!("/sys/class/bdi/{bdi}/{attr}")))
            }
            Setting::Mount { .. } => None,
            Setting::File { path } => Some(PathBuf::from(path)),
        }
    }

    /// The value in force, as it would be written back: a queue's scheduler without the
    /// brackets, a mount family's member in force.
    pub fn read(&self, s: &Setting) -> Result<String, Error> {
        if let Setting::Mount {
            mount_point,
            family,
        } = s
        {
            return mount_value(mount_point, family);
        }
        let path = self.path(s).ok_or_else(|| Error::Unknown(s.to_string()))?;
        if let Setting::File { .. } = s {
            return read_file(&path);
        }
        let text = std::fs::read_to_string(&path).map_err(|e| Error::Io(path.clone(), e))?;
        let text = text.trim();
        Ok(match s {
            Setting::Queue { attr, .. } if attr == "scheduler" => {
                bracketed(text).unwrap_or(text).to_string()
            }
            _ => text.to_string(),
        })
    }

    /// Writes `value`; the kernel's refusal comes back with what it accepts where that is
    /// knowable (a queue's schedulers).
    pub fn write(&self, s: &Setting, value: &str) -> Result<(), Error> {
        if let Setting::Mount { mount_point, .. } = s {
            return remount(mount_point, value);
        }
        let path = self.path(s).ok_or_else(|| Error::Unknown(s.to_string()))?;
        if let Setting::File { .. } = s {
            return write_file(&path, value);
        }
        std::fs::write(&path, value).map_err(|e| {
            let accepted = match s {
                Setting::Queue { attr, .. } if attr == "scheduler" => {
                    std::fs::read_to_string(&path).ok().map(|t| {
                        format!(
                            " (accepted: {})",
                            t.split_whitespace()
                                .map(|w| w.trim_matches(|c| c == '[' || c == ']'))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    })
                }
                _ => None,
            };
            Error::Refused {
                setting: s.to_string(),
                value: value.to_string(),
                why: format!("{e}{}", accepted.unwrap_or_default()),
            }
        })
    }
}

/// A configuration file's text, [`ABSENT`] when there is none. Opened without following a
/// symlink, so what a link planted at the name points to is never read (nor kept in the
/// journal to be written back later as this file).
fn read_file(path: &Path) -> Result<String, Error> {
    use std::io::Read;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let mut f = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ABSENT.to_string()),
        Err(e) => {
            return Err(match replaceable(path) {
                Err(refused) => refused,
                Ok(()) => Error::Io(path.to_path_buf(), e),
            })
        }
    };
    let meta = f.metadata().map_err(|e| Error::Io(path.to_path_buf(), e))?;
    if !meta.is_file() {
        return Err(not_replaceable(path, "not a regular file".into()));
    }
    let mut text = String::new();
    f.read_to_string(&mut text)
        .map_err(|e| Error::Io(path.to_path_buf(), e))?;
    Ok(text)
}

fn not_replaceable(path: &Path, why: String) -> Error {
    Error::NotReplaceable {
        path: path.to_path_buf(),
        why,
    }
}

/// Why the configuration file at `path` (a sysctl.d file, a udev rule, an fstab) must not be
/// replaced, checked before any setting changes: a symlink or anything but a regular file
/// there (a link planted at the name would have sinkrate read its target into the journal),
/// a directory users other than root may write (where one could plant it), or a directory
/// on a read-only filesystem (the write would fail after the settings had changed).
pub fn replaceable(path: &Path) -> Result<(), Error> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let d = std::fs::metadata(dir).map_err(|e| Error::Io(dir.to_path_buf(), e))?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let others_write = d.mode() & 0o002 != 0 || (d.mode() & 0o020 != 0 && d.gid() != 0);
    if others_write || (d.uid() != 0 && d.uid() != me) {
        return Err(not_replaceable(
            path,
            format!(
                "its directory {} (owner {}, mode {:04o}) may be written by others than root, who could plant a file there",
                dir.display(),
                d.uid(),
                d.mode() & 0o7777
            ),
        ));
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            let to = std::fs::read_link(path)
                .map(|t| format!(" (to {})", t.display()))
                .unwrap_or_default();
            return Err(not_replaceable(
                path,
                format!("a symbolic link{to}: sinkrate replaces only a regular file, and never follows a link"),
            ));
        }
        Ok(m) if !m.is_file() => {
            return Err(not_replaceable(path, "not a regular file".into()));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::Io(path.to_path_buf(), e)),
    }
    // access(2) answers EROFS for a read-only filesystem, also to root. (Its other answers
    // are a user's, whose dry run may still show the plan; root's write says them.)
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| not_replaceable(path, "a NUL byte in its name".into()))?;
    // SAFETY: `c` is a valid NUL-terminated path for the call's duration.
    let refused = unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0;
    if refused && std::io::Error::last_os_error().raw_os_error() == Some(libc::EROFS) {
        return Err(not_replaceable(
            path,
            format!(
                "{} is on a read-only filesystem (without --persist the settings last until reboot)",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// A configuration file replaced whole through a temporary file and a rename (or removed,
/// for [`ABSENT`]), readable by all as /etc's files are.
fn write_file(path: &std::path::Path, value: &str) -> Result<(), Error> {
    let io = |e| Error::Io(path.to_path_buf(), e);
    if value == ABSENT {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
            _ => Ok(()),
        };
    }
    // A file that is there keeps its mode (an fstab or rules file made private stays so).
    sinkrate_platform::durable::replace(path, value.as_bytes(), 0o644).map_err(io)
}

fn bracketed(text: &str) -> Option<&str> {
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(&text[start + 1..end])
}

/// The mount on top at exactly `mount_point`, asked of the system layer.
fn mount_at(mount_point: &str) -> Result<sinkrate_procparse::mountinfo::Mount, Error> {
    sinkrate_sys::mounts::stacked_at(&sinkrate_sys::SysRoot::live(), mount_point)
        .pop()
        .ok_or_else(|| Error::Unknown(format!("{mount_point} is not a mount point")))
}

/// The member of `family` in force at `mount_point` (`relatime`, `async`, `commit=5`).
fn mount_value(mount_point: &str, family: &str) -> Result<String, Error> {
    let m = mount_at(mount_point)?;
    let options: Vec<&str> = m
        .mount_options
        .iter()
        .chain(m.super_options.iter())
        .map(String::as_str)
        .collect();
    if family == "commit" {
        // Absent means the filesystem's default; commit=0 asks for it again.
        return Ok(options
            .iter()
            .find(|o| o.starts_with("commit="))
            .map(|o| o.to_string())
            .unwrap_or_else(|| "commit=0".into()));
    }
    let members = sinkrate_model::tunables::mount_members(family);
    if members.is_empty() {
        return Err(Error::Unknown(format!("mount option family {family}")));
    }
    if let Some(found) = options.iter().find(|o| members.contains(o)) {
        return Ok(found.to_string());
    }
    // What the kernel does when none is given.
    Ok(match family {
        "atime" => "strictatime",
        "sync" => "async",
        "discard" => "nodiscard",
        _ => "barrier",
    }
    .to_string())
}

fn remount(mount_point: &str, option: &str) -> Result<(), Error> {
    // mount(8) passes "relatime" to the kernel as no atime flag at all (it is the default),
    // and a remount without atime flags keeps noatime: going through strictatime first
    // clears it.
    if option == "relatime" {
        remount_once(mount_point, "strictatime")?;
    }
    remount_once(mount_point, option)
}

fn remount_once(mount_point: &str, option: &str) -> Result<(), Error> {
    let options = format!("remount,{option}");
    let out = std::process::Command::new("mount")
        .args(["-o", &options])
        .arg(mount_point)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Error::Io(PathBuf::from("mount"), e))?;
    if out.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(Error::Refused {
            setting: format!("{mount_point} mount options"),
            value: option.to_string(),
            why: err
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
        })
    }
}

use sinkrate_model::settings::{Setting, ABSENT};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scheduler_reads_as_the_one_in_brackets() {
        assert_eq!(bracketed("mq-deadline [none] bfq"), Some("none"));
        assert_eq!(bracketed("none"), None);
    }

    #[test]
    fn a_link_or_a_directory_others_write_is_never_replaced_or_read_through() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().expect("tempdir");
        let secret = d.path().join("secret");
        std::fs::write(&secret, "not for the journal\n").expect("secret");
        let rules = d.path().join("rules.d");
        std::fs::create_dir(&rules).expect("dir");
        std::fs::set_permissions(&rules, std::fs::Permissions::from_mode(0o755)).expect("755");
        let file = rules.join("60-sinkrate.rules");
        // Absent, then a regular file: both fine, and read as they are.
        assert!(replaceable(&file).is_ok());
        assert_eq!(read_file(&file).expect("absent"), ABSENT);
        std::fs::write(&file, "# mine\n").expect("file");
        assert!(replaceable(&file).is_ok());
        assert_eq!(read_file(&file).expect("read"), "# mine\n");
        // A link planted at the name: refused by both, its target never read.
        std::fs::remove_file(&file).expect("rm");
        std::os::unix::fs::symlink(&secret, &file).expect("link");
        let refused = replaceable(&file).expect_err("a link").to_string();
        assert!(
            refused.contains("symbolic link") && refused.contains("nothing was changed"),
            "{refused}"
        );
        let read = read_file(&file).expect_err("not read through").to_string();
        assert!(
            read.contains("symbolic link") && !read.contains("journal"),
            "{read}"
        );
        // A directory in its place, and a FIFO (opened without blocking).
        std::fs::remove_file(&file).expect("rm");
        std::fs::create_dir(&file).expect("dir at the name");
        assert!(replaceable(&file).is_err());
        assert!(read_file(&file).is_err());
        std::fs::remove_dir(&file).expect("rmdir");
        let fifo = std::ffi::CString::new(file.as_os_str().as_bytes()).expect("c");
        // SAFETY: a valid path for the call.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        assert!(read_file(&file)
            .expect_err("a fifo")
            .to_string()
            .contains("regular"));
        std::fs::remove_file(&file).expect("rm fifo");
        // A directory anyone may write (as /tmp): refused even with nothing there yet.
        std::fs::set_permissions(&rules, std::fs::Permissions::from_mode(0o1777)).expect("1777");
        let refused = replaceable(&file).expect_err("shared dir").to_string();
        assert!(refused.contains("may be written by others"), "{refused}");
    }
}
