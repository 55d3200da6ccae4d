//! Pacing: rate and rate_iops (linear or Poisson arrivals) and think time.

use std::sync::atomic::Ordering;

use super::io_loop::Loop;
use super::NS_PER_S;
use sinkrate_jobspec::options::{JobOptions, RateProcess, ThinktimeBlocksType};

impl Loop<'_> {
    /// Sleeps until the rate limit lets direction `d` issue; returns false if the job ended
    /// while waiting.
    pub(super) fn wait_for_rate(&mut self, d: usize, len: u64) -> bool {
        match self.rate_due(d, len) {
            Some(due) => self.sleep_until_due(due),
            None => true,
        }
    }

    /// When the rate limit lets the next I/O of direction `d` go (run clock, ns); `None`
    /// without a limit. Called once per I/O (a Poisson arrival draws its next gap here).
    pub(super) fn rate_due(&mut self, d: usize, len: u64) -> Option<u64> {
        // A replayed I/O waits for its time in the trace instead.
        if let Some(cursor) = &self.replay {
            return cursor.last_due();
        }
        let o = self.o;
        if o.rate[d] == 0 && o.rate_iops[d] == 0 {
            return None;
        }
        let now = self.clock.now_ns();
        let due = match o.rate_process {
            RateProcess::Linear => {
                let issued = self.issued_total[d] - self.rate_anchor_counts[d];
                let by_iops = if o.rate_iops[d] > 0 {
                    issued as u128 * NS_PER_S as u128 / o.rate_iops[d] as u128
                } else {
                    0
                };
                // Paced by what was issued since the anchor (job start, then the end of
                // ramp_time), so the ramp is paced too and queued I/O is paced at issue.
                let by_bytes = if o.rate[d] > 0 {
                    let bytes = self.issued_bytes[d] - self.rate_anchor_bytes[d];
                    bytes as u128 * NS_PER_S as u128 / o.rate[d] as u128
                } else {
                    0
                };
                self.rate_anchor_ns + by_iops.max(by_bytes) as u64
            }
            RateProcess::Poisson => {
                let due = self.rate_next_ns[d];
                let mean_gap = if o.rate_iops[d] > 0 {
                    NS_PER_S as f64 / o.rate_iops[d] as f64
                } else {
                    len as f64 * NS_PER_S as f64 / o.rate[d] as f64
                };
                let u = self.rng.unit().max(1e-12);
                self.rate_next_ns[d] =
                    due.max(now.saturating_sub(NS_PER_S)) + (-u.ln() * mean_gap) as u64;
                due
            }
        };
        Some(due)
    }

    /// Sleeps until `due`; false if the job ended while waiting. A slot that comes at or
    /// after the runtime's end is not taken: fio asks whether the runtime is over after the
    /// wait, before the I/O.
    pub(super) fn sleep_until_due(&mut self, due: u64) -> bool {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            let now = self.clock.now_ns();
            if self.end_ns.is_some_and(|end| now >= end) {
                return false;
            }
            if now >= due {
                return true;
            }
            self.clock.sleep_until(due.min(now + 100_000_000));
        }
    }

    /// Counts an I/O issued toward thinktime_blocks (thinktime_blocks_type=issue).
    pub(super) fn think_issued(&mut self) {
        self.think.issued += 1;
    }

    /// Counts an I/O completed toward thinktime_blocks (the default type, complete).
    pub(super) fn think_completed(&mut self) {
        self.think.completed += 1;
    }

    /// Whether a thinktime pause is due, checked once per turn of the I/O loop as fio's
    /// handle_thinktime: after thinktime_blocks blocks since the last pause (counted at
    /// issue or at completion), or after thinktime_iotime of I/O. The count it was due at,
    /// which becomes the next pause's base (fio's last_thinktime_blocks): taken before the
    /// queue is drained, so the I/Os that complete while draining count toward the next one.
    pub(super) fn think_due(&self) -> Option<u64> {
        let o = self.o;
        if o.thinktime.is_zero() {
            return None;
        }
        let count = match o.thinktime_blocks_type {
            ThinktimeBlocksType::Issue => self.think.issued,
            ThinktimeBlocksType::Complete => self.think.completed,
        };
        // As fio's: without thinktime_blocks, thinktime_iotime alone sets the pauses.
        let blocks = o
            .thinktime_blocks
            .or(o.thinktime_iotime.is_zero().then_some(1));
        let by_blocks = blocks.is_some_and(|n| count >= self.think.last_blocks + n);
        let by_time =
            !o.thinktime_iotime.is_zero() && self.clock.now_ns() >= self.think.next_by_time_ns;
        (by_blocks || by_time).then_some(count)
    }

    /// The thinktime pause (thinktime_spin spinning, the rest asleep), with nothing in
    /// flight. The pause is whole, as fio 3.33's: one that runs past the runtime's end ends
    /// the job at its end.
    pub(super) fn think_pause(&mut self, due_at: u64) {
        let o = self.o;
        let spin = o.thinktime_spin.min(o.thinktime).as_nanos() as u64;
        if spin > 0 {
            self.clock.spin(spin);
        }
        let rest = o.thinktime.as_nanos() as u64 - spin;
        if rest > 0 {
            let until = self.clock.now_ns() + rest;
            self.clock.sleep_until(until);
        }
        self.think.last_blocks = due_at;
        self.think.next_by_time_ns = self.clock.now_ns() + o.thinktime_iotime.as_nanos() as u64;
    }

    /// A synchronous loop's turn: its one I/O issued and completed, then the pause if one
    /// is due; whether it paused.
    pub(super) fn think_after_sync_io(&mut self) -> bool {
        if self.o.thinktime.is_zero() {
            return false;
        }
        self.think_issued();
        self.think_completed();
        match self.think_due() {
            Some(count) => {
                self.think_pause(count);
                true
            }
            None => false,
        }
    }
}

/// fio's thinktime bookkeeping for one job.
#[derive(Debug, Default)]
pub(super) struct ThinkCounts {
    issued: u64,
    completed: u64,
    /// The count the last pause was due at (fio's last_thinktime_blocks).
    last_blocks: u64,
    /// When thinktime_iotime next pauses (run clock, ns).
    next_by_time_ns: u64,
}

impl ThinkCounts {
    /// A job starting at `start_ns`. As fio 3.33 does (measured beside it), the first
    /// thinktime_iotime pause comes after thinktime_iotime plus thinktime of I/O, each later
    /// one after thinktime_iotime from the end of the pause before.
    pub(super) fn new(o: &JobOptions, start_ns: u64) -> Self {
        ThinkCounts {
            next_by_time_ns: start_ns + (o.thinktime_iotime + o.thinktime).as_nanos() as u64,
            ..Self::default()
        }
    }
}
