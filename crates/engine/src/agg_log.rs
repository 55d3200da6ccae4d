//! fio's `--bandwidth-log`: the run's aggregate bandwidth, every jobs' bytes together, in
//! `agg-read_bw.log`, `agg-write_bw.log` and `agg-trim_bw.log` (fio's names and line
//! format: `time_ms, KiB/s, direction, 0, 0`), one line per direction every 500 ms.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::clock::Clock;
use crate::error::EngineError;
use crate::logs::LogFile;
use crate::progress::JobProgress;

const PERIOD_MS: u64 = 500;

/// Writes the logs in `dir` until `done`, then returns their paths.
pub fn spawn(
    dir: &Path,
    progress: Vec<Arc<JobProgress>>,
    clock: Clock,
    done: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<Result<Vec<PathBuf>, EngineError>>, EngineError> {
    let mut logs = Vec::with_capacity(3);
    for name in ["read", "write", "trim"] {
        logs.push(LogFile::create(
            dir.join(format!("agg-{name}_bw.log")),
            false,
            false,
            false,
        )?);
    }
    Ok(std::thread::spawn(move || {
        let mut last = [0u64; 3];
        let mut last_ns = clock.now_ns();
        while !done.load(Ordering::Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(PERIOD_MS));
            let now = clock.now_ns();
            let bytes = progress.iter().fold([0u64; 3], |mut sum, p| {
                sum[0] += p.read_bytes.load(Ordering::Relaxed);
                sum[1] += p.write_bytes.load(Ordering::Relaxed);
                sum[2] += p.trim_bytes.load(Ordering::Relaxed);
                sum
            });
            let span = now.saturating_sub(last_ns).max(1) as f64;
            for (d, log) in logs.iter_mut().enumerate() {
                let kib_s = bytes[d].saturating_sub(last[d]) as f64 * 1e9 / span / 1024.0;
                log.entry(now / 1_000_000, kib_s as u64, d as u8, 0, 0, 0);
            }
            last = bytes;
            last_ns = now;
        }
        logs.into_iter().map(LogFile::finish).collect()
    }))
}
