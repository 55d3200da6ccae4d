//! `--status-interval`: a running job's figures so far, published when the run asks, in the
//! shape of its final result.

use std::sync::atomic::Ordering;

use super::io_loop::Loop;
use super::shares;
use sinkrate_model::{JobResult, PriorityLatency};

impl Loop<'_> {
    /// Publishes the figures if the run asked for them since the last time.
    #[inline]
    pub(super) fn snapshot_if_wanted(&self, now: u64) {
        if self.progress.snapshot_wanted.load(Ordering::Relaxed) {
            self.publish_snapshot(now);
        }
    }

    fn publish_snapshot(&self, now: u64) {
        let mut r = JobResult::default();
        // During ramp_time nothing is measured yet: zeros, as fio's report then.
        if !self.ramping {
            let runtime = now.saturating_sub(self.start_ns).max(1);
            let mut dirs = self.results.clone();
            for (d, dir) in dirs.iter_mut().enumerate() {
                let t = &self.tally[d];
                dir.io_bytes = t.bytes;
                dir.total_ios = t.ios;
                dir.short_ios = t.short;
                dir.runtime_ns = if t.ios > 0 { runtime } else { 0 };
                if let Some(p) = &self.prio_latency {
                    dir.prios = p
                        .by_prio
                        .iter()
                        .map(|(ioprio, per_dir)| PriorityLatency {
                            ioprio: *ioprio,
                            latency: per_dir[d].clone(),
                        })
                        .collect();
                }
            }
            let [read, write, trim] = dirs;
            r.read = read;
            r.write = write;
            r.trim = trim;
            r.sync = self.sync.clone();
            r.sync_file_ranges = self.sync_file_ranges;
            (r.total_err, r.first_error) = self.ignored_errors;
            r.iodepth_level = shares(&self.depth_hist);
            r.iodepth_submit = shares(&self.submit_hist);
            r.iodepth_complete = shares(&self.complete_hist);
            r.elapsed_ns = runtime;
        }
        self.progress.publish(r);
    }
}
