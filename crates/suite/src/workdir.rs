//! The suite's own directory under the directory being tested: created new (so nothing the
//! user owns is ever in it) and removed with everything in it when the suite ends, fails or
//! is interrupted.

use std::path::{Path, PathBuf};

pub struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    pub fn new(parent: &Path, suite: &str) -> std::io::Result<WorkDir> {
        let mut n = 0u32;
        loop {
            let path = parent.join(format!(
                ".sinkrate-suite-{suite}-{}-{n}",
                std::process::id()
            ));
            sinkrate_sys::owned::track_dir(&path);
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(WorkDir { path }),
                Err(e) => {
                    // Not made here: not this run's to remove.
                    sinkrate_sys::owned::forget_dir(&path);
                    if e.kind() != std::io::ErrorKind::AlreadyExists || n >= 100 {
                        return Err(e);
                    }
                    n += 1;
                }
            }
        }
    }

    /// The suite's directory under `cfg.dir`, refused when the filesystem has less than
    /// `needed` bytes free.
    pub fn for_suite(cfg: &crate::SuiteConfig, needed: u64) -> Result<WorkDir, crate::SuiteError> {
        let fail =
            |what: String| crate::SuiteError::Failed(format!("{}: {what}", cfg.dir.display()));
        let work = WorkDir::new(&cfg.dir, cfg.suite.id())
            .map_err(|e| fail(format!("cannot make the suite's directory: {e}")))?;
        let free = work.free_bytes();
        if free < needed {
            return Err(fail(format!(
                "{free} bytes free, the suite needs {needed} (free some space, or use --quick)"
            )));
        }
        Ok(work)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes free where the suite writes.
    pub fn free_bytes(&self) -> u64 {
        sinkrate_sys::space::free_bytes(&self.path).unwrap_or(u64::MAX)
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if std::fs::remove_dir_all(&self.path).is_ok() {
            sinkrate_sys::owned::forget_dir(&self.path);
        }
    }
}
