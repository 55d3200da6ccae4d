//! Counters a worker publishes for the live status line. Workers store (not add) their own
//! totals, so the hot path pays a plain store, never a locked instruction.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use sinkrate_model::JobResult;

#[derive(Debug, Default)]
pub struct JobProgress {
    /// --status-interval: the run wants the job's figures so far; the job publishes them
    /// into `snapshot` at its next I/O and clears this.
    pub snapshot_wanted: AtomicBool,
    /// Set before the job starts when the run reports status as it goes: the job then also
    /// publishes its final result.
    pub snapshots_on: AtomicBool,
    /// The figures so far (only the measured ones; the runner adds the job's name and
    /// options), or the job's final result once it is done.
    pub snapshot: Mutex<Option<JobResult>>,
    pub read_bytes: AtomicU64,
    pub write_bytes: AtomicU64,
    pub read_ios: AtomicU64,
    pub write_ios: AtomicU64,
    pub trim_bytes: AtomicU64,
    pub trim_ios: AtomicU64,
    phase: AtomicU8,
    /// Measured-phase start on the run clock, ns (0 until it starts).
    pub started_ns: AtomicU64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Waiting,
    Preparing,
    Ramping,
    Running,
    Flushing,
    /// fio's verify phase: reading back what was written.
    Verifying,
    Done,
}

impl JobProgress {
    pub fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }
    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Relaxed) {
            0 => Phase::Waiting,
            1 => Phase::Preparing,
            2 => Phase::Ramping,
            3 => Phase::Running,
            4 => Phase::Flushing,
            5 => Phase::Verifying,
            _ => Phase::Done,
        }
    }
}

impl JobProgress {
    /// Publishes `figures` as the job's snapshot (a poisoned lock only means an earlier
    /// publisher panicked; the value is replaced whole).
    pub fn publish(&self, figures: JobResult) {
        let mut slot = self.snapshot.lock().unwrap_or_else(|p| p.into_inner());
        *slot = Some(figures);
        self.snapshot_wanted.store(false, Ordering::Release);
    }

    /// The last figures published.
    pub fn latest(&self) -> Option<JobResult> {
        self.snapshot
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
