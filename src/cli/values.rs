//! Values of sinkrate's own flags (fio job options have their own rules in jobspec):
//! durations with a unit (seconds when bare), sizes in dd's convention.

use std::time::Duration;

use anyhow::{anyhow, Result};

/// `--flag 30s`, `--flag 100ms`, `--flag 5m`: one error line naming the flag.
pub fn duration(flag: &str, text: &str) -> Result<Duration> {
    sinkrate_jobspec::units::parse_time(text, sinkrate_jobspec::units::TimeUnit::Seconds)
        .map_err(|e| anyhow!("--{flag}: {e}"))
}

/// `--flag 3M` (3 MiB), `--flag 3MB` (3 MB).
pub fn size(flag: &str, text: &str) -> Result<u64> {
    sinkrate_emulate::units::parse_size(text).map_err(|e| anyhow!("--{flag}: {e}"))
}
