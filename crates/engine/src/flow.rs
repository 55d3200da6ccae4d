//! fio's token-based flow control (`flow`, `flow_id`, `flow_sleep`): the jobs of one flow
//! issue I/Os in the ratio of their weights. A job is held back while its share of the
//! flow's I/Os is above its share of the running jobs' weights.
//!
//! The counting is fio's (flow.c): the flow's counter starts at one, and a job that leaves
//! takes its own I/Os out of it with its weight. The extra one leaves a few I/Os of slack
//! in which neither job is held back; without it exactly one job is held back at almost
//! every step, and with `flow_sleep` the jobs take turns sleeping: half fio's I/Os.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One flow_id's shared counters.
#[derive(Debug)]
pub struct FlowGroup {
    issued: AtomicU64,
    total_weight: AtomicU64,
}

impl Default for FlowGroup {
    fn default() -> Self {
        FlowGroup {
            issued: AtomicU64::new(1),
            total_weight: AtomicU64::new(0),
        }
    }
}

/// A running job's place in its flow; leaving (drop) takes its weight and its I/Os out, so
/// the jobs still running share the flow among themselves.
#[derive(Debug)]
pub struct FlowMember {
    group: Arc<FlowGroup>,
    weight: u64,
    issued: u64,
    pub sleep: Duration,
}

impl FlowMember {
    pub fn join(group: Arc<FlowGroup>, weight: u64, sleep: Duration) -> FlowMember {
        group.total_weight.fetch_add(weight, Ordering::AcqRel);
        FlowMember {
            group,
            weight,
            issued: 0,
            sleep,
        }
    }

    /// Whether the next I/O must wait; when it may go, it is counted.
    pub fn held_back(&mut self) -> bool {
        // Never 0: it starts at one and a leaver takes out only what it put in.
        let total = self.group.issued.load(Ordering::Relaxed);
        let weights = self.group.total_weight.load(Ordering::Relaxed).max(1);
        let own_share = self.issued as f64 / total as f64;
        let weight_share = self.weight as f64 / weights as f64;
        if own_share > weight_share {
            return true;
        }
        self.group.issued.fetch_add(1, Ordering::Relaxed);
        self.issued += 1;
        false
    }

    /// What a held-back job does before asking again: sleep flow_sleep, or let the others
    /// run (fio retries at once; a yield keeps two cores from spinning against each other).
    pub fn pause(&self) {
        if self.sleep.is_zero() {
            std::thread::yield_now();
        } else {
            std::thread::sleep(self.sleep);
        }
    }
}

impl Drop for FlowMember {
    fn drop(&mut self) {
        self.group.issued.fetch_sub(self.issued, Ordering::AcqRel);
        self.group
            .total_weight
            .fetch_sub(self.weight, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_issue_in_the_ratio_of_their_weights() {
        let group = Arc::new(FlowGroup::default());
        let mut heavy = FlowMember::join(group.clone(), 8, Duration::ZERO);
        let mut light = FlowMember::join(group.clone(), 1, Duration::ZERO);
        for _ in 0..9000 {
            heavy.held_back();
            light.held_back();
        }
        let ratio = heavy.issued as f64 / light.issued as f64;
        assert!((ratio - 8.0).abs() < 0.1, "ratio {ratio}");
        drop(heavy);
        // The leaver's I/Os leave the flow's counter with it (fio's flow_put).
        assert_eq!(group.issued.load(Ordering::Relaxed), 1 + light.issued);
        // Alone in the flow, a member is never held back.
        assert!((0..100).all(|_| !light.held_back()));
    }

    /// fio's counter starts at one, which lets a member run up to its weight ahead of its
    /// exact share: the heavy member issues 9 alone (at 9 of 10 it is above 8/9), the light
    /// one 2, the heavy one 16 more; counted from zero it would be 1, 1 and 8.
    #[test]
    fn a_member_runs_ahead_by_fios_slack() {
        let group = Arc::new(FlowGroup::default());
        let mut heavy = FlowMember::join(group.clone(), 8, Duration::ZERO);
        let mut light = FlowMember::join(group.clone(), 1, Duration::ZERO);
        let burst = |m: &mut FlowMember| (0..100).take_while(|_| !m.held_back()).count();
        assert_eq!(burst(&mut heavy), 9);
        assert_eq!(burst(&mut light), 2);
        assert_eq!(burst(&mut heavy), 8 + 8);
    }
}
