//! Files like real recorders keep them: one file per stream, or segments rotated every T
//! seconds or M bytes (dashcam style), with loop recording that deletes a stream's oldest
//! segments while the file system is fuller than a set level.

use sinkrate_model::record::SegmentPolicy;
use std::path::{Path, PathBuf};

/// One stream's files.
#[derive(Debug)]
pub struct Segments {
    dir: PathBuf,
    stream: String,
    policy: SegmentPolicy,
    index: u32,
    started_ns: u64,
    /// Closed segments still on disk, oldest first, with their sizes.
    closed: Vec<(PathBuf, u64)>,
    pub current: PathBuf,
    pub created: u64,
    pub deleted: u64,
    pub bytes_deleted: u64,
}

impl Segments {
    pub fn new(dir: &Path, stream: &str, policy: SegmentPolicy, now_ns: u64) -> Segments {
        let mut s = Segments {
            dir: dir.to_path_buf(),
            stream: stream.to_string(),
            policy,
            index: 0,
            started_ns: now_ns,
            closed: Vec::new(),
            current: PathBuf::new(),
            created: 1,
            deleted: 0,
            bytes_deleted: 0,
        };
        s.current = s.path_for(0);
        s
    }

    fn path_for(&self, index: u32) -> PathBuf {
        if self.policy.segmented() {
            self.dir
                .join(format!("sinkrate-record-{}-{index:05}.bin", self.stream))
        } else {
            self.dir
                .join(format!("sinkrate-record-{}.bin", self.stream))
        }
    }

    /// Whether the current segment is full, by time or by size.
    pub fn rotation_due(&self, bytes_in_current: u64, now_ns: u64) -> bool {
        self.policy.bytes.is_some_and(|m| bytes_in_current >= m)
            || self
                .policy
                .every
                .is_some_and(|t| now_ns.saturating_sub(self.started_ns) >= t.as_nanos() as u64)
    }

    /// Closes the current segment (its final size given) and names the next one.
    pub fn rotate(&mut self, closed_bytes: u64, now_ns: u64) -> &Path {
        self.closed.push((self.current.clone(), closed_bytes));
        self.index += 1;
        self.created += 1;
        self.started_ns = now_ns;
        self.current = self.path_for(self.index);
        &self.current
    }

    /// Loop recording: deletes this stream's oldest closed segments while the file system is
    /// fuller than the policy allows. Returns how many were deleted.
    pub fn enforce_fill(&mut self) -> std::io::Result<u64> {
        let Some(limit) = self.policy.loop_fill_pct else {
            return Ok(0);
        };
        let mut n = 0;
        while !self.closed.is_empty() && fill_pct(&self.dir).is_some_and(|p| p > limit) {
            let (path, bytes) = self.closed.remove(0);
            // A segment this run made and listed goes only while it is still that file; a
            // kept recording's segments (--keep, not listed) are this run's by their
            // exclusive creation.
            if !sinkrate_sys::owned::remove(&path)? && path.exists() {
                std::fs::remove_file(&path)?;
            }
            self.deleted += 1;
            self.bytes_deleted += bytes;
            n += 1;
        }
        Ok(n)
    }

    /// Every file of this stream still on disk, oldest first.
    pub fn files(&self) -> Vec<PathBuf> {
        self.closed
            .iter()
            .map(|(p, _)| p.clone())
            .chain(std::iter::once(self.current.clone()))
            .collect()
    }
}

/// How full the file system holding `dir` is, in percent of its blocks.
pub fn fill_pct(dir: &Path) -> Option<f64> {
    sinkrate_sys::space(dir).ok()?.fill_pct()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn rotation_by_size_and_time_and_names() {
        let d = std::env::temp_dir();
        let p = SegmentPolicy {
            every: Some(Duration::from_secs(60)),
            bytes: Some(1000),
            loop_fill_pct: None,
        };
        let mut s = Segments::new(&d, "cam0", p, 0);
        assert!(s.current.ends_with("sinkrate-record-cam0-00000.bin"));
        assert!(!s.rotation_due(999, 1_000_000_000));
        assert!(s.rotation_due(1000, 0));
        assert!(s.rotation_due(0, 60_000_000_000));
        s.rotate(1000, 5);
        assert!(s.current.ends_with("sinkrate-record-cam0-00001.bin"));
        assert_eq!(s.files().len(), 2);
        let single = Segments::new(
            &d,
            "cam1",
            SegmentPolicy {
                every: None,
                bytes: None,
                loop_fill_pct: None,
            },
            0,
        );
        assert!(single.current.ends_with("sinkrate-record-cam1.bin"));
        assert!(!single.rotation_due(u64::MAX, u64::MAX));
    }
}
