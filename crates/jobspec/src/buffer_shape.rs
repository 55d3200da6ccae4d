//! How compressible and how deduplicable written data is, as fio's
//! `buffer_compress_percentage`/`buffer_compress_chunk` and
//! `dedupe_percentage`/`dedupe_mode`/`dedupe_working_set_percentage`/`dedupe_global`.
//! Some SSDs and USB controllers compress or deduplicate; a benchmark's data must be as
//! compressible as the recording's, no more.

use serde::{Deserialize, Serialize};

use crate::fio_numbers::parse_size;
use crate::options::{bad, flag, need, one_of, ApplyError};
use sinkrate_units::fio::{parse_int, KbBase};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DedupeMode {
    /// A deduplicable write repeats the job's last unique one.
    #[default]
    Repeat,
    /// A deduplicable write repeats one of a set of buffers sized as a share of the file.
    WorkingSet,
}

/// `Default` is every field unset; a job's defaults are the option table's, which an
/// older result missing a field reads too.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default = "BufferShape::declared")]
pub struct BufferShape {
    /// Percent of each chunk that is the fixed pattern (zeros, or buffer_pattern).
    pub compress_percentage: u32,
    pub compress_chunk: u64,
    /// Percent of writes that repeat an earlier buffer.
    pub dedupe_percentage: u32,
    pub dedupe_mode: DedupeMode,
    pub dedupe_working_set_percentage: u32,
    /// The working set is the same for every job.
    pub dedupe_global: bool,
}

/// A whole percentage; the option table's range keeps it within 0 to 100.
fn percent(key: &str, value: Option<&str>) -> Result<u32, ApplyError> {
    Ok(parse_int(need(key, value)?).map_err(|e| bad(key, e))? as u32)
}

impl BufferShape {
    /// The option table's defaults.
    fn declared() -> Self {
        crate::JobOptions::default().buffer_shape
    }

    pub fn apply(&mut self, key: &str, value: Option<&str>, kb: KbBase) -> Result<(), ApplyError> {
        match key {
            "buffer_compress_percentage" => self.compress_percentage = percent(key, value)?,
            "buffer_compress_chunk" => {
                self.compress_chunk = parse_size(need(key, value)?, kb).map_err(|e| bad(key, e))?
            }
            "dedupe_percentage" => self.dedupe_percentage = percent(key, value)?,
            "dedupe_working_set_percentage" => {
                self.dedupe_working_set_percentage = percent(key, value)?
            }
            "dedupe_mode" => {
                self.dedupe_mode = one_of(
                    key,
                    value,
                    &[
                        ("repeat", DedupeMode::Repeat),
                        ("working_set", DedupeMode::WorkingSet),
                    ],
                )?
            }
            "dedupe_global" => self.dedupe_global = flag(key, value)?,
            _ => return Err(ApplyError::Unsupported),
        }
        Ok(())
    }

    /// Whether written data is shaped at all (fio then refills every buffer).
    pub fn shapes(&self) -> bool {
        self.compress_percentage > 0 || self.dedupe_percentage > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_values() {
        let mut s = BufferShape::default();
        assert!(!s.shapes());
        s.apply("buffer_compress_percentage", Some("50"), KbBase::Compat1024)
            .expect("pct");
        s.apply("buffer_compress_chunk", Some("4k"), KbBase::Compat1024)
            .expect("chunk");
        s.apply("dedupe_mode", Some("working_set"), KbBase::Compat1024)
            .expect("mode");
        assert!(s.shapes());
        assert_eq!(s.compress_chunk, 4096);
        assert_eq!(s.dedupe_mode, DedupeMode::WorkingSet);
        // The option table's range, checked as the job takes the option.
        assert!(crate::JobOptions::default()
            .apply("dedupe_percentage", Some("101"))
            .is_err());
        assert!(s
            .apply("dedupe_mode", Some("often"), KbBase::Compat1024)
            .is_err());
    }
}
