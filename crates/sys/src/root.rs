//! Every procfs and sysfs read goes through a `SysRoot`, so that a fixture tree captured from
//! another machine is audited exactly as the live system is.

use std::path::{Component, Path, PathBuf};

/// A file under a root that could not be read, and why.
#[derive(Debug)]
pub struct ReadError {
    pub path: PathBuf,
    pub error: std::io::Error,
}

impl ReadError {
    /// The file is not there (this kernel, or the fixture tree, has none).
    pub fn is_missing(&self) -> bool {
        self.error.kind() == std::io::ErrorKind::NotFound
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.error.kind() {
            std::io::ErrorKind::NotFound => write!(f, "{}: missing", self.path.display()),
            std::io::ErrorKind::PermissionDenied => write!(
                f,
                "{}: this user may not read it (root may)",
                self.path.display()
            ),
            _ => write!(f, "{}: {}", self.path.display(), self.error),
        }
    }
}

impl std::error::Error for ReadError {}

#[derive(Debug, Clone)]
pub struct SysRoot {
    base: PathBuf,
}

/// Symlink hops allowed while resolving one path (the kernel allows 40).
const MAX_HOPS: usize = 40;

impl SysRoot {
    pub fn live() -> SysRoot {
        SysRoot {
            base: PathBuf::from("/"),
        }
    }

    pub fn at(base: &Path) -> SysRoot {
        SysRoot {
            base: base.to_path_buf(),
        }
    }

    pub fn is_live(&self) -> bool {
        self.base == Path::new("/")
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    /// The host path of an absolute path inside the root.
    pub fn host_path(&self, abs: &str) -> PathBuf {
        self.base.join(abs.trim_start_matches('/'))
    }

    pub fn exists(&self, abs: &str) -> bool {
        self.host_path(abs).exists()
    }

    /// A file's contents without the trailing newline; the error names the file and tells
    /// a missing file from one this user may not read.
    pub fn read(&self, abs: &str) -> Result<String, ReadError> {
        let path = self.host_path(abs);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(text.trim_end_matches(['\n', '\r']).to_string()),
            Err(e) => Err(ReadError { path, error: e }),
        }
    }

    /// A sysfs attribute, trimmed; None when missing, unreadable or empty.
    pub fn attr(&self, abs: &str) -> Option<String> {
        let v = self.read(abs).ok()?.trim().to_string();
        (!v.is_empty()).then_some(v)
    }

    pub fn number(&self, abs: &str) -> Option<u64> {
        self.attr(abs)?.parse().ok()
    }

    /// Names in a directory, sorted; empty when missing.
    pub fn list(&self, abs: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.host_path(abs))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().to_string())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Resolves every symlink in `abs` inside the root (absolute targets are re-rooted), the
    /// way sysfs's relative links resolve on the machine they came from.
    pub fn canonical(&self, abs: &str) -> Option<String> {
        let mut todo: Vec<String> = components(abs).into_iter().rev().collect();
        let mut done: Vec<String> = Vec::new();
        let mut hops = 0;
        while let Some(part) = todo.pop() {
            if part == ".." {
                done.pop();
                continue;
            }
            done.push(part);
            let here = format!("/{}", done.join("/"));
            let host = self.host_path(&here);
            let Ok(meta) = std::fs::symlink_metadata(&host) else {
                return None;
            };
            if !meta.file_type().is_symlink() {
                continue;
            }
            hops += 1;
            if hops > MAX_HOPS {
                return None;
            }
            let target = std::fs::read_link(&host).ok()?;
            let target = target.to_string_lossy().to_string();
            done.pop();
            if target.starts_with('/') {
                done.clear();
            }
            for p in components(&target).into_iter().rev() {
                todo.push(p);
            }
        }
        Some(format!("/{}", done.join("/")))
    }
}

/// A path's normal components, with `..` kept for the resolver and `.` dropped.
fn components(path: &str) -> Vec<String> {
    Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().to_string()),
            Component::ParentDir => Some("..".to_string()),
            _ => None,
        })
        .collect()
}

/// Normalises an absolute path lexically (no filesystem access).
pub fn normalise(path: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for c in components(path) {
        if c == ".." {
            out.pop();
        } else {
            out.push(c);
        }
    }
    format!("/{}", out.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_error_names_the_file_and_tells_missing_from_denied() {
        let d = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::at(d.path());
        let missing = root.read("/proc/meminfo").expect_err("missing");
        assert!(missing.is_missing());
        assert_eq!(
            missing.to_string(),
            format!("{}: missing", d.path().join("proc/meminfo").display())
        );
        let denied = ReadError {
            path: PathBuf::from("/proc/1/io"),
            error: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        assert!(!denied.is_missing());
        assert_eq!(
            denied.to_string(),
            "/proc/1/io: this user may not read it (root may)"
        );
        std::fs::create_dir(d.path().join("proc")).expect("dir");
        std::fs::write(d.path().join("proc/meminfo"), "MemTotal: 1 kB\n\n").expect("write");
        assert_eq!(root.read("/proc/meminfo").expect("read"), "MemTotal: 1 kB");
    }

    #[test]
    fn relative_and_absolute_links_resolve_inside_the_root() {
        let d = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::at(d.path());
        std::fs::create_dir_all(d.path().join("sys/devices/pci0/block/sda/sda1")).expect("dirs");
        std::fs::create_dir_all(d.path().join("sys/dev/block")).expect("dirs");
        std::os::unix::fs::symlink(
            "../../devices/pci0/block/sda/sda1",
            d.path().join("sys/dev/block/8:1"),
        )
        .expect("link");
        std::os::unix::fs::symlink("/sys/devices/pci0", d.path().join("sys/abs")).expect("link");
        assert_eq!(
            root.canonical("/sys/dev/block/8:1/../").as_deref(),
            Some("/sys/devices/pci0/block/sda")
        );
        assert_eq!(
            root.canonical("/sys/abs/block").as_deref(),
            Some("/sys/devices/pci0/block")
        );
        assert_eq!(root.canonical("/sys/missing"), None);
        assert_eq!(normalise("/a/./b/../c"), "/a/c");
    }
}
