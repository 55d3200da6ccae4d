//! Pacing: rate and rate_iops (linear or Poisson arrivals) and think time.

use std::sync::atomic::Ordering;

use sinkrate_jobspec::options::RateProcess;

use super::*;

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

    /// Sleeps until `due`; false if the job ended while waiting.
    pub(super) fn sleep_until_due(&mut self, due: u64) -> bool {
        while self.clock.now_ns() < due {
            if self.stop.load(Ordering::Relaxed) {
                return false;
            }
            let now = self.clock.now_ns();
            if let Some(end) = self.end_ns {
                if now >= end {
                    return false;
                }
            }
            let until = due.min(now + 100_000_000);
            self.clock.sleep_until(until);
        }
        true
    }

    /// thinktime after an I/O (every thinktime_blocks); whether it paused. The pause is
    /// whole, as fio's: one that runs past the runtime's end ends the job at its end.
    pub(super) fn think(&mut self) -> bool {
        let o = self.o;
        if o.thinktime.is_zero() {
            return false;
        }
        self.blocks_since_think += 1;
        if self.blocks_since_think < o.thinktime_blocks {
            return false;
        }
        self.blocks_since_think = 0;
        let spin = o.thinktime_spin.min(o.thinktime).as_nanos() as u64;
        if spin > 0 {
            self.clock.spin(spin);
        }
        let rest = o.thinktime.as_nanos() as u64 - spin;
        if rest > 0 {
            let until = self.clock.now_ns() + rest;
            self.clock.sleep_until(until);
        }
        true
    }
}
