//! The samples a run keeps, within a memory budget sized to the machine: a board with 512 MB
//! cannot hold a day of samples at ten a second (some 400 MB). When the budget is reached the
//! timeline halves its resolution: each kept sample then stands for a window of intervals,
//! with the window's end as its time, the values of its sample with the most dirty and
//! writeback data (the series a recording is judged by), and throttled when any of them was.

use sinkrate_model::timeline::Sample;

/// Bounds of the budget: a small board gets a 64th of its memory (8 MB of 512 MB), never more
/// than 64 MiB (about four hours at ten samples a second before the first halving).
const MIN_BUDGET_BYTES: u64 = 1 << 20;
const MAX_BUDGET_BYTES: u64 = 64 << 20;
/// A soak's budget (a run of two hours or more): about an hour at ten samples a second
/// before the first halving, so its memory is flat from then on, not only after four hours.
const SOAK_BUDGET_BYTES: u64 = 16 << 20;
/// The length from which a run is a soak.
pub const SOAK_FROM: std::time::Duration = std::time::Duration::from_secs(7200);

#[derive(Debug, Clone)]
pub struct Timeline {
    kept: Vec<Sample>,
    max_samples: usize,
    budget_bytes: u64,
    /// Intervals per kept sample (1, then 2, 4, ...).
    stride: usize,
    /// Samples merged into the last kept one so far.
    in_window: usize,
    /// When the resolution was first halved, in the run's time.
    first_thinned_ns: Option<u64>,
}

/// The timeline's memory budget on a machine with `mem_total_bytes` (the maximum when unknown).
pub fn budget_bytes(mem_total_bytes: Option<u64>) -> u64 {
    mem_total_bytes
        .map_or(MAX_BUDGET_BYTES, |m| m / 64)
        .clamp(MIN_BUDGET_BYTES, MAX_BUDGET_BYTES)
}

impl Timeline {
    /// A timeline whose budget is a 64th of `mem_total_bytes` (or the maximum when unknown).
    pub fn for_memory(mem_total_bytes: Option<u64>, expected_samples: usize) -> Timeline {
        Timeline::for_run(mem_total_bytes, expected_samples, std::time::Duration::ZERO)
    }

    /// As [`Timeline::for_memory`], for a run expected to last `expected`: a soak's budget is
    /// at most [`SOAK_BUDGET_BYTES`].
    pub fn for_run(
        mem_total_bytes: Option<u64>,
        expected_samples: usize,
        expected: std::time::Duration,
    ) -> Timeline {
        let mut budget = budget_bytes(mem_total_bytes);
        if expected >= SOAK_FROM {
            budget = budget.min(SOAK_BUDGET_BYTES);
        }
        let max = (budget as usize / std::mem::size_of::<Sample>()).max(16);
        Timeline::with_limit(max, expected_samples, budget)
    }

    pub fn with_limit(max_samples: usize, expected_samples: usize, budget_bytes: u64) -> Timeline {
        let max_samples = max_samples.max(4);
        Timeline {
            kept: Vec::with_capacity(expected_samples.min(max_samples)),
            max_samples,
            budget_bytes,
            stride: 1,
            in_window: 0,
            first_thinned_ns: None,
        }
    }

    pub fn push(&mut self, s: Sample) {
        if self.in_window > 0 && self.in_window < self.stride {
            if let Some(rep) = self.kept.last_mut() {
                merge(rep, s);
                self.in_window += 1;
                return;
            }
        }
        if self.kept.len() >= self.max_samples {
            self.halve();
        }
        self.kept.push(s);
        self.in_window = 1;
    }

    /// Merges neighbours pairwise and doubles the window of later samples.
    fn halve(&mut self) {
        if self.first_thinned_ns.is_none() {
            self.first_thinned_ns = self.kept.last().map(|s| s.t_ns);
        }
        // In place: the samples' memory is kept for the ones to come, so a run's memory is
        // flat once the budget has filled (a new vector would be grown again from nothing,
        // with the old one still held while it is).
        let n = self.kept.len();
        let mut kept = 0;
        for read in (0..n).step_by(2) {
            let mut a = self.kept[read];
            if let Some(&b) = self.kept.get(read + 1) {
                merge(&mut a, b);
            }
            self.kept[kept] = a;
            kept += 1;
        }
        self.kept.truncate(kept);
        self.stride *= 2;
        // The last kept sample's window is full; the next sample opens a new one.
        self.in_window = self.stride;
    }

    pub fn samples(&self) -> &[Sample] {
        &self.kept
    }

    pub fn last(&self) -> Option<&Sample> {
        self.kept.last()
    }

    pub fn into_samples(self) -> Vec<Sample> {
        self.kept
    }

    /// What the user should know when the timeline was thinned.
    pub fn note(&self) -> Option<String> {
        let at = self.first_thinned_ns?;
        Some(format!(
            "the timeline holds at most {} samples ({:.1} MB, a 64th of the memory): from {:.0} s on it kept one sample per {} intervals (each the window's sample with the most dirty data, throttled if any was)",
            self.max_samples,
            self.budget_bytes as f64 / 1e6,
            at as f64 / 1e9,
            self.stride
        ))
    }
}

/// `into` absorbs `later`: the later time, the values of whichever holds more dirty and
/// writeback data, throttled if either was.
fn merge(into: &mut Sample, later: Sample) {
    let throttled = into.throttled || later.throttled;
    let t_ns = later.t_ns.max(into.t_ns);
    let weight = |s: &Sample| s.dirty_writeback_bytes().unwrap_or(0);
    if weight(&later) >= weight(into) {
        *into = later;
    }
    into.throttled = throttled;
    into.t_ns = t_ns;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_soak_keeps_a_smaller_timeline_so_its_memory_is_flat_sooner() {
        let hour = std::time::Duration::from_secs(3600);
        let short = Timeline::for_run(Some(24 << 30), 36_000, hour);
        let soak = Timeline::for_run(Some(24 << 30), 288_000, 8 * hour);
        assert_eq!(short.budget_bytes, MAX_BUDGET_BYTES);
        assert_eq!(soak.budget_bytes, SOAK_BUDGET_BYTES);
        // A small board's budget is smaller still, soak or not.
        let board = Timeline::for_run(Some(512 << 20), 288_000, 8 * hour);
        assert_eq!(board.budget_bytes, 8 << 20);
    }

    fn sample(t: u64, dirty: u64, throttled: bool) -> Sample {
        Sample {
            t_ns: t,
            dirty_bytes: Some(dirty),
            writeback_bytes: Some(0),
            throttled,
            ..Sample::default()
        }
    }

    #[test]
    fn stays_within_its_limit_and_keeps_the_peaks() {
        let mut t = Timeline::with_limit(8, 0, 0);
        for i in 0..1000u64 {
            // One peak of dirty data and one throttled instant, each in a single sample.
            let dirty = if i == 517 { 9_999 } else { i % 7 };
            t.push(sample(i, dirty, i == 733));
        }
        let kept = t.samples();
        assert!(kept.len() <= 8, "{}", kept.len());
        assert!(kept.iter().any(|s| s.dirty_bytes == Some(9_999)));
        assert!(kept.iter().any(|s| s.throttled));
        assert!(kept.windows(2).all(|w| w[0].t_ns < w[1].t_ns));
        assert_eq!(kept.last().map(|s| s.t_ns), Some(999));
        assert!(t
            .note()
            .is_some_and(|n| n.contains("one sample per 128 intervals")));
    }

    #[test]
    fn halving_keeps_the_memory_it_had_and_takes_no_more() {
        // Room for ten from the start: what the timeline holds once full is all it ever
        // holds (a new vector grown after each halving would take 16 here).
        let mut t = Timeline::with_limit(10, 10, 0);
        for i in 0..10_000u64 {
            t.push(sample(i, i % 5, false));
        }
        assert_eq!(t.kept.capacity(), 10);
        assert!(t.samples().len() <= 10);
    }

    #[test]
    fn below_the_limit_nothing_changes() {
        let mut t = Timeline::with_limit(100, 10, 0);
        for i in 0..50u64 {
            t.push(sample(i, i, false));
        }
        assert_eq!(t.samples().len(), 50);
        assert_eq!(t.note(), None);
    }

    #[test]
    fn budget_follows_the_memory() {
        let board = Timeline::for_memory(Some(512 << 20), 0);
        let host = Timeline::for_memory(Some(24 << 30), 0);
        assert_eq!(board.budget_bytes, 8 << 20);
        assert_eq!(host.budget_bytes, MAX_BUDGET_BYTES);
        assert!(board.max_samples < host.max_samples);
    }
}
