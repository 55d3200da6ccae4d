//! The objective as an order: runs of a candidate scored, candidates ranked (no failed run,
//! no drops, proven in full-length runs, then latency by noise band, throttling, CPU, data
//! at risk), and the winner set against the baseline with bootstrap intervals.

use sinkrate_model::Verdict;
use sinkrate_stats::bootstrap::relative_change;

use sinkrate_model::search::Candidate;
use sinkrate_model::search::{Comparison, Objective, Scored, Trial};

/// Latencies up to this many milliseconds are alike, and above it those within this share
/// of each other (by band): run-to-run noise on a card, not a difference between candidates.
const NOISE_MS: f64 = 5.0;
const NOISE_SHARE: f64 = 0.2;

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

pub(crate) fn score(candidate: Candidate, trials: Vec<Trial>, screened_only: bool) -> Scored {
    let n = trials.len().max(1) as f64;
    let offered: u64 = trials.iter().map(|t| t.frames_offered).sum();
    let dropped: u64 = trials.iter().map(|t| t.frames_dropped).sum();
    Scored {
        drops_per_run: dropped as f64 / n,
        dropped_share: if offered > 0 {
            dropped as f64 / offered as f64
        } else {
            dropped as f64 / n
        },
        worst_write_ms: median(trials.iter().filter_map(|t| t.worst_write_ms).collect()),
        p99_lateness_ms: median(trials.iter().filter_map(|t| t.p99_lateness_ms).collect()),
        cpu_s: median(trials.iter().map(|t| t.cpu_s).collect()).unwrap_or(0.0),
        peak_dirty_bytes: trials.iter().filter_map(|t| t.peak_dirty_bytes).max(),
        unacknowledged_worst_s: trials
            .iter()
            .map(|t| t.unacknowledged_worst_s)
            .try_fold(0.0f64, |worst, s| s.map(|s| worst.max(s)))
            .filter(|_| !trials.is_empty()),
        device_bytes_per_hour: median(
            trials
                .iter()
                .filter_map(|t| t.device_bytes_per_hour)
                .collect(),
        ),
        candidate,
        trials,
        screened_only,
    }
}

fn fell_behind(s: &Scored) -> usize {
    s.trials
        .iter()
        .filter(|t| t.verdict == Verdict::FallingBehind)
        .count()
}

/// Device bytes per hour within this share of each other are a tie: a journal's commits
/// and the sampler's interval move the count a few percent from run to run.
const WEAR_NOISE_SHARE: f64 = 0.05;

/// Fewer device bytes per hour first, by bands of [`WEAR_NOISE_SHARE`]; unknown last.
fn wear(a: Option<f64>, b: Option<f64>) -> std::cmp::Ordering {
    let band = |x: f64| (x.max(1.0).ln() / (1.0 + WEAR_NOISE_SHARE).ln()) as i64;
    match (a, b) {
        (Some(x), Some(y)) => band(x).cmp(&band(y)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    }
}

/// The objective, in order: no failed run; within `--max-loss` (when given); no dropped
/// frames (and no falling behind); the lowest worst write, then p99 lateness (when known);
/// the least throttling; the least writer + flusher CPU; the least data at risk. With
/// `--objective wear`, the fewest device bytes per hour come before latency.
pub(crate) fn better(a: &Scored, b: &Scored, objective: &Objective) -> std::cmp::Ordering {
    let runs = objective.runs;
    let failed = |s: &Scored| s.trials.iter().any(|t| t.verdict == Verdict::Failed);
    let opt = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        _ => std::cmp::Ordering::Equal,
    };
    // Latencies in the same band of run-to-run noise are a tie: a 2 ms and a 3 ms worst
    // write say the same, and a search that chased the difference would confirm neither.
    // Bands (not a tolerance between pairs) keep the order total, as sorting needs.
    let band = |x: f64| {
        if x <= NOISE_MS {
            0
        } else {
            1 + ((x / NOISE_MS).ln() / (1.0 + NOISE_SHARE).ln()) as i64
        }
    };
    let latency = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => band(x).cmp(&band(y)),
        _ => std::cmp::Ordering::Equal,
    };
    let throttled = |s: &Scored| median(s.trials.iter().map(|t| t.throttled_s).collect());
    let confirmed = |s: &Scored| s.trials.iter().filter(|t| t.confirmation).count().min(runs);
    failed(a)
        .cmp(&failed(b))
        .then(objective.within_loss(b).cmp(&objective.within_loss(a)))
        .then(a.dropped_share.total_cmp(&b.dropped_share))
        .then(fell_behind(a).cmp(&fell_behind(b)))
        // Equally free of drops: the one proven in its full-length runs comes before one
        // that only looked better in fewer (it is confirmed next, if time is left).
        .then(confirmed(b).cmp(&confirmed(a)))
        // --objective wear: of those that keep up, the fewest device bytes per hour.
        .then(if objective.wear {
            wear(a.device_bytes_per_hour, b.device_bytes_per_hour)
        } else {
            std::cmp::Ordering::Equal
        })
        .then(latency(a.worst_write_ms, b.worst_write_ms))
        .then(latency(a.p99_lateness_ms, b.p99_lateness_ms))
        .then(opt(throttled(a), throttled(b)))
        .then(a.cpu_s.total_cmp(&b.cpu_s))
        .then(a.peak_dirty_bytes.cmp(&b.peak_dirty_bytes))
}

/// Candidate indices that have run, best first, by the objective over their runs so far.
pub(crate) fn rank(
    chosen: &[Candidate],
    trials: &[Vec<Trial>],
    objective: &Objective,
) -> Vec<usize> {
    let scored: Vec<Scored> = chosen
        .iter()
        .zip(trials)
        .map(|(c, t)| score(c.clone(), t.clone(), false))
        .collect();
    let mut order: Vec<usize> = (0..chosen.len())
        .filter(|k| !trials[*k].is_empty())
        .collect();
    order.sort_by(|a, b| better(&scored[*a], &scored[*b], objective));
    if order.is_empty() {
        order.push(0);
    }
    order
}

pub(crate) fn compare(base: &Scored, winner: &Scored) -> Option<Comparison> {
    if base.candidate == winner.candidate {
        return Some(Comparison {
            baseline: base.candidate.label.clone(),
            winner: winner.candidate.label.clone(),
            drops: (base.drops_per_run, winner.drops_per_run),
            worst_write: None,
            p99_lateness: None,
            text: "no candidate did better than the configuration as it is".into(),
        });
    }
    // Full-length runs against full-length runs; screening runs only when there are none.
    let runs_of = |s: &Scored| -> Vec<Trial> {
        let full: Vec<Trial> = s
            .trials
            .iter()
            .filter(|t| t.confirmation)
            .cloned()
            .collect();
        if full.is_empty() {
            s.trials.clone()
        } else {
            full
        }
    };
    let (base_runs, winner_runs) = (runs_of(base), runs_of(winner));
    let of = |t: &[Trial], f: fn(&Trial) -> Option<f64>| t.iter().filter_map(f).collect::<Vec<_>>();
    let worst = relative_change(
        &of(&base_runs, |t| t.worst_write_ms),
        &of(&winner_runs, |t| t.worst_write_ms),
    );
    let late = relative_change(
        &of(&base_runs, |t| t.p99_lateness_ms),
        &of(&winner_runs, |t| t.p99_lateness_ms),
    );
    let offered = |t: &[Trial]| t.iter().map(|t| t.frames_offered).sum::<u64>();
    let dropped = |t: &[Trial]| t.iter().map(|t| t.frames_dropped).sum::<u64>();
    let seconds = |t: &[Trial]| t.iter().map(|t| t.duration_s).sum::<f64>();
    let mut text = if offered(&base_runs) > 0 {
        format!(
            "{} against the baseline: {} of {} frames dropped in {} run(s) of {:.0} s vs {} of {} in {}",
            winner.candidate.label,
            dropped(&winner_runs),
            offered(&winner_runs),
            winner_runs.len(),
            seconds(&winner_runs) / winner_runs.len().max(1) as f64,
            dropped(&base_runs),
            offered(&base_runs),
            base_runs.len(),
        )
    } else {
        format!(
            "{} against the baseline ({} vs {} run(s))",
            winner.candidate.label,
            winner_runs.len(),
            base_runs.len()
        )
    };
    if let Some(w) = &worst {
        text.push_str(&format!(
            "; worst write {:+.0}% (95% CI {:+.0}% to {:+.0}%, {} vs {} runs)",
            w.change_pct, w.ci_low_pct, w.ci_high_pct, w.runs.1, w.runs.0
        ));
        if w.runs.0 < 3 || w.runs.1 < 3 {
            text.push_str(", too few runs for the interval to mean much");
        }
    }
    // Lateness under a millisecond on both sides is no lateness to speak of.
    if let Some(l) = late.as_ref().filter(|l| l.a_mean.max(l.b_mean) >= 1.0) {
        text.push_str(&format!(
            "; p99 lateness {:+.0}% (95% CI {:+.0}% to {:+.0}%)",
            l.change_pct, l.ci_low_pct, l.ci_high_pct
        ));
    }
    Some(Comparison {
        baseline: base.candidate.label.clone(),
        winner: winner.candidate.label.clone(),
        drops: (base.drops_per_run, winner.drops_per_run),
        worst_write: worst,
        p99_lateness: late,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const THREE_RUNS: Objective = Objective {
        runs: 3,
        max_loss_s: None,
        wear: false,
    };

    fn trial(dropped: u64, worst_ms: f64, confirmation: bool) -> Trial {
        Trial {
            verdict: if dropped > 0 {
                Verdict::Drops
            } else {
                Verdict::KeepsUp
            },
            frames_offered: 1800,
            frames_dropped: dropped,
            worst_write_ms: Some(worst_ms),
            p99_write_ms: Some(1.0),
            p99_lateness_ms: Some(0.0),
            cpu_s: 0.1,
            peak_dirty_bytes: Some(1 << 20),
            unacknowledged_worst_s: None,
            throttled_s: 0.0,
            duration_s: 60.0,
            confirmation,
            stopped_early: false,
            error: None,
            device_bytes_per_hour: None,
            device_bytes_written: None,
            device_rate_while_busy_bytes_per_s: None,
            diagnosis: None,
        }
    }

    fn scored(label: &str, trials: Vec<Trial>) -> Scored {
        let c = Candidate {
            label: label.into(),
            system: Vec::new(),
            recorder: Vec::new(),
        };
        score(c, trials, false)
    }

    #[test]
    fn drops_first_then_proof_then_latency_by_noise_band() {
        let proven = scored("proven", vec![trial(0, 50.0, true); 3]);
        let glimpse = scored("glimpse", vec![trial(0, 2.0, false)]);
        let dropping = scored("dropping", vec![trial(5, 1.0, true); 3]);
        let mut all = [dropping, glimpse, proven];
        all.sort_by(|a, b| better(a, b, &THREE_RUNS));
        let order: Vec<&str> = all.iter().map(|s| s.candidate.label.as_str()).collect();
        assert_eq!(order, ["proven", "glimpse", "dropping"]);
        // 2 ms and 4 ms are the same band: the cheaper on CPU wins; 2 ms and 40 ms are not.
        let mut a = scored("a", vec![trial(0, 4.0, true)]);
        let b = scored("b", vec![trial(0, 2.0, true)]);
        a.cpu_s = 0.05;
        assert_eq!(better(&a, &b, &THREE_RUNS), std::cmp::Ordering::Less);
        let c = scored("c", vec![trial(0, 40.0, true)]);
        assert_eq!(better(&b, &c, &THREE_RUNS), std::cmp::Ordering::Less);
    }

    #[test]
    fn with_a_loss_bound_a_candidate_within_it_comes_before_one_that_drops_nothing() {
        let with = |worst: Option<f64>, dropped: u64| {
            let mut t = trial(dropped, 2.0, true);
            t.unacknowledged_worst_s = worst;
            t
        };
        let unbounded = scored("buffered", vec![with(None, 0); 3]);
        let too_slow = scored("fdatasync 2 s", vec![with(Some(2.1), 0); 3]);
        let within = scored(
            "fdatasync 0.5 s",
            vec![with(Some(0.6), 0), with(Some(0.7), 3)],
        );
        let bound = Objective {
            runs: 3,
            max_loss_s: Some(1.0),
            wear: false,
        };
        let mut all = [unbounded.clone(), too_slow.clone(), within.clone()];
        all.sort_by(|a, b| better(a, b, &bound));
        let order: Vec<&str> = all.iter().map(|s| s.candidate.label.as_str()).collect();
        assert_eq!(order[0], "fdatasync 0.5 s");
        assert!((within.unacknowledged_worst_s.unwrap_or(0.0) - 0.7).abs() < 1e-12);
        assert_eq!(unbounded.unacknowledged_worst_s, None);
        // Without a bound, frames come first.
        let mut all = [within, too_slow, unbounded];
        all.sort_by(|a, b| better(a, b, &THREE_RUNS));
        assert_ne!(all[0].candidate.label, "fdatasync 0.5 s");
    }

    #[test]
    fn for_wear_the_fewest_device_bytes_come_first_among_those_that_keep_up() {
        let with = |dropped: u64, worst_ms: f64, per_hour: f64| {
            let mut t = trial(dropped, worst_ms, true);
            t.device_bytes_per_hour = Some(per_hour);
            t
        };
        let fast = scored("commit=5", vec![with(0, 2.0, 13.0e9); 3]);
        let frugal = scored("commit=60", vec![with(0, 40.0, 10.9e9); 3]);
        let frugal_drops = scored("data=writeback", vec![with(4, 2.0, 9.0e9); 3]);
        let wear = Objective {
            wear: true,
            ..THREE_RUNS
        };
        let mut all = [fast.clone(), frugal_drops.clone(), frugal.clone()];
        all.sort_by(|a, b| better(a, b, &wear));
        let order: Vec<&str> = all.iter().map(|s| s.candidate.label.as_str()).collect();
        assert_eq!(order, ["commit=60", "commit=5", "data=writeback"]);
        // By latency, the other way round among those that keep up.
        let mut all = [fast, frugal_drops, frugal];
        all.sort_by(|a, b| better(a, b, &THREE_RUNS));
        assert_eq!(all[0].candidate.label, "commit=5");
        // Within 5% is a tie, left to latency.
        let a = scored("a", vec![with(0, 2.0, 10.0e9)]);
        let b = scored("b", vec![with(0, 40.0, 10.2e9)]);
        assert_eq!(better(&a, &b, &wear), std::cmp::Ordering::Less);
    }
}
