//! Counters a worker publishes for the live status line. Workers store (not add) their own
//! totals, so the hot path pays a plain store, never a locked instruction.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

#[derive(Debug, Default)]
pub struct JobProgress {
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
