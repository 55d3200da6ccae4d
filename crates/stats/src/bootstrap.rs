//! The difference between two sets of measurements, with a confidence interval and a
//! p-value: a percentile bootstrap and a permutation test over runs (the run is the unit:
//! frames within a run are not independent, one stall drops dozens in a row), or, with one
//! run a side, a moving-block bootstrap over time within the runs. Written here because each
//! is a dozen lines over a seeded generator, and the result must be the same on every
//! machine for the same inputs (no statistics crate offers a seeded block bootstrap).

use serde::{Deserialize, Serialize};

/// `b` against `a` as a relative change of the mean, in percent, with a 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub a_mean: f64,
    pub b_mean: f64,
    pub change_pct: f64,
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    /// Runs in each set; below 3 the interval is not worth much, and the text says so.
    pub runs: (usize, usize),
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// SplitMix64: a tiny, well-known generator, seeded so intervals are reproducible.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn index(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// None when either set is empty or `a`'s mean is zero (no relative change to speak of).
pub fn relative_change(a: &[f64], b: &[f64]) -> Option<Change> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (ma, mb) = (mean(a), mean(b));
    if ma == 0.0 {
        return None;
    }
    let mut rng = SplitMix(0x5EED);
    let mut samples: Vec<f64> = (0..2000)
        .filter_map(|_| {
            let ra: f64 = (0..a.len()).map(|_| a[rng.index(a.len())]).sum::<f64>() / a.len() as f64;
            let rb: f64 = (0..b.len()).map(|_| b[rng.index(b.len())]).sum::<f64>() / b.len() as f64;
            (ra != 0.0).then(|| 100.0 * (rb - ra) / ra)
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Some(Change {
        a_mean: ma,
        b_mean: mb,
        change_pct: 100.0 * (mb - ma) / ma,
        ci_low_pct: at(0.025),
        ci_high_pct: at(0.975),
        runs: (a.len(), b.len()),
    })
}

/// Resamples drawn for an interval.
const RESAMPLES: usize = 4000;

/// `b` against `a`: the statistic of each, the absolute difference `b - a` and, when `a` is
/// not zero, the relative change, each with a 95% interval, and a two-sided p-value for "no
/// difference".
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    pub a: f64,
    pub b: f64,
    pub diff: f64,
    pub diff_ci: (f64, f64),
    pub change_pct: Option<f64>,
    pub change_ci_pct: Option<(f64, f64)>,
    pub p: f64,
    /// Runs (or seconds, for the block bootstrap) on each side.
    pub units: (usize, usize),
}

impl Difference {
    /// p below 0.05 and an interval of the difference that leaves out zero.
    pub fn significant(&self) -> bool {
        self.p < 0.05 && (self.diff_ci.0 > 0.0 || self.diff_ci.1 < 0.0)
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn difference(
    a: f64,
    b: f64,
    mut diffs: Vec<f64>,
    mut rel: Vec<f64>,
    p: f64,
    units: (usize, usize),
) -> Difference {
    diffs.sort_by(f64::total_cmp);
    rel.sort_by(f64::total_cmp);
    let relative = a != 0.0 && !rel.is_empty();
    Difference {
        a,
        b,
        diff: b - a,
        diff_ci: (quantile(&diffs, 0.025), quantile(&diffs, 0.975)),
        change_pct: relative.then(|| 100.0 * (b - a) / a),
        change_ci_pct: relative.then(|| (quantile(&rel, 0.025), quantile(&rel, 0.975))),
        p,
        units,
    }
}

/// Per-run values of two configurations: bootstrap over runs for the intervals, a
/// permutation test over runs for p (exact when the arrangements are few). The statistic is
/// the mean over runs. None when a side is empty.
pub fn over_runs(a: &[f64], b: &[f64]) -> Option<Difference> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (ma, mb) = (mean(a), mean(b));
    let mut rng = SplitMix(0x5EED);
    let mut diffs = Vec::with_capacity(RESAMPLES);
    let mut rel = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        let ra = (0..a.len()).map(|_| a[rng.index(a.len())]).sum::<f64>() / a.len() as f64;
        let rb = (0..b.len()).map(|_| b[rng.index(b.len())]).sum::<f64>() / b.len() as f64;
        diffs.push(rb - ra);
        if ra != 0.0 {
            rel.push(100.0 * (rb - ra) / ra);
        }
    }
    Some(difference(
        ma,
        mb,
        diffs,
        rel,
        permutation_p(a, b),
        (a.len(), b.len()),
    ))
}

/// Two-sided permutation test of the difference of means: every split of the pooled runs
/// when there are at most 20,000, otherwise 20,000 random ones.
fn permutation_p(a: &[f64], b: &[f64]) -> f64 {
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let (n, k) = (pooled.len(), a.len());
    let observed = (mean(b) - mean(a)).abs();
    let total: f64 = pooled.iter().sum();
    let at_least = |sum_a: f64| {
        let d = ((total - sum_a) / (n - k) as f64 - sum_a / k as f64).abs();
        d >= observed - 1e-12 * observed.max(1.0)
    };
    let splits = (0..k).fold(1.0f64, |c, i| c * (n - i) as f64 / (i + 1) as f64);
    if splits <= 20_000.0 {
        // Every k-subset of the pooled values as the first group.
        let (mut hits, mut count) = (0u64, 0u64);
        let mut idx: Vec<usize> = (0..k).collect();
        loop {
            count += 1;
            if at_least(idx.iter().map(|&i| pooled[i]).sum()) {
                hits += 1;
            }
            let Some(pos) = (0..k).rev().find(|&i| idx[i] != i + n - k) else {
                break;
            };
            idx[pos] += 1;
            for j in pos + 1..k {
                idx[j] = idx[j - 1] + 1;
            }
        }
        hits as f64 / count as f64
    } else {
        let mut rng = SplitMix(0xFACE);
        let mut order: Vec<usize> = (0..n).collect();
        let mut hits = 1u64;
        for _ in 0..20_000 {
            for i in (1..n).rev() {
                order.swap(i, rng.index(i + 1));
            }
            if at_least(order[..k].iter().map(|&i| pooled[i]).sum()) {
                hits += 1;
            }
        }
        hits as f64 / 20_001.0
    }
}

/// One configuration's run(s) as series in time (a unit a second, say; one segment a run),
/// and a statistic of any resample of them. A moving-block bootstrap: blocks of `block`
/// consecutive units of one run, drawn with replacement to the total length, keep a stall's
/// run of dropped frames together. p is two-sided, from where zero falls in the bootstrap
/// distribution of the difference.
pub fn over_time<T>(
    a: &[&[T]],
    b: &[&[T]],
    block: usize,
    stat: &dyn Fn(&[&T]) -> Option<f64>,
) -> Option<Difference> {
    let len = |v: &[&[T]]| v.iter().map(|s| s.len()).sum::<usize>();
    if len(a) == 0 || len(b) == 0 {
        return None;
    }
    fn all<'a, T>(v: &[&'a [T]]) -> Vec<&'a T> {
        v.iter().flat_map(|s| s.iter()).collect()
    }
    let (sa, sb) = (stat(&all(a))?, stat(&all(b))?);
    // Every block that lies within one run: (run, start, length).
    let blocks = |v: &[&[T]]| -> Vec<(usize, usize, usize)> {
        v.iter()
            .enumerate()
            .filter(|(_, s)| !s.is_empty())
            .flat_map(|(k, s)| {
                let l = block.clamp(1, s.len());
                (0..=s.len() - l).map(move |start| (k, start, l))
            })
            .collect()
    };
    let (ba, bb) = (blocks(a), blocks(b));
    let mut rng = SplitMix(0xB10C);
    fn resample<'a, T>(
        v: &[&'a [T]],
        bl: &[(usize, usize, usize)],
        rng: &mut SplitMix,
    ) -> Vec<&'a T> {
        let total: usize = v.iter().map(|s| s.len()).sum();
        let mut out = Vec::with_capacity(total + bl.first().map_or(1, |b| b.2));
        while out.len() < total {
            let (k, start, l) = bl[rng.index(bl.len())];
            out.extend(v[k][start..start + l].iter());
        }
        out.truncate(total);
        out
    }
    let mut diffs = Vec::with_capacity(RESAMPLES);
    let mut rel = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        let ra = stat(&resample(a, &ba, &mut rng));
        let rb = stat(&resample(b, &bb, &mut rng));
        let (Some(ra), Some(rb)) = (ra, rb) else {
            continue;
        };
        diffs.push(rb - ra);
        if ra != 0.0 {
            rel.push(100.0 * (rb - ra) / ra);
        }
    }
    if diffs.is_empty() {
        return None;
    }
    let below = diffs.iter().filter(|d| **d <= 0.0).count() as f64;
    let above = diffs.iter().filter(|d| **d >= 0.0).count() as f64;
    let n = diffs.len() as f64;
    let p = (2.0 * below.min(above) / n).clamp(1.0 / n, 1.0);
    Some(difference(sa, sb, diffs, rel, p, (len(a), len(b))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_identical_show_nothing_and_a_clear_shift_is_found_with_its_size() {
        let a = [10.0, 11.0, 12.0, 10.5, 11.5];
        let same = over_runs(&a, &a).expect("difference");
        assert_eq!(same.diff, 0.0);
        assert!(!same.significant(), "{same:?}");
        assert!(same.p > 0.5, "{same:?}");
        let b: Vec<f64> = a.iter().map(|x| x + 5.0).collect();
        let shifted = over_runs(&a, &b).expect("difference");
        assert!((shifted.diff - 5.0).abs() < 1e-9);
        assert!(
            shifted.diff_ci.0 < 5.0 && shifted.diff_ci.1 > 5.0 - 1e-9,
            "{shifted:?}"
        );
        assert!(shifted.significant());
        // 5 vs 5 runs: 252 splits, the observed one the most extreme in both directions.
        assert!((shifted.p - 2.0 / 252.0).abs() < 1e-9, "{shifted:?}");
        // Three runs a side can say no better than p = 0.1.
        let few = over_runs(&[1.0, 2.0, 3.0], &[11.0, 12.0, 13.0]).expect("difference");
        assert!((few.p - 0.1).abs() < 1e-9, "{few:?}");
    }

    #[test]
    fn over_time_keeps_blocks_and_finds_a_shift_in_a_series() {
        let a: Vec<f64> = (0..120).map(|i| 10.0 + (i % 7) as f64).collect();
        let mean_of = |v: &[&f64]| Some(v.iter().copied().sum::<f64>() / v.len() as f64);
        let same = over_time(&[&a], &[&a[..60], &a[60..]], 10, &mean_of).expect("difference");
        assert_eq!(same.diff, 0.0);
        assert!(!same.significant(), "{same:?}");
        assert!(same.p > 0.1, "{same:?}");
        let b: Vec<f64> = a.iter().map(|x| x * 0.5).collect();
        let half = over_time(&[&a], &[&b], 10, &mean_of).expect("difference");
        let (lo, hi) = half.change_ci_pct.expect("relative");
        assert!(lo < -45.0 && hi > -55.0 && hi < 0.0, "{half:?}");
        assert!(half.p < 0.001, "{half:?}");
        assert!(over_time::<f64>(&[&[]], &[&a], 10, &mean_of).is_none());
    }

    #[test]
    fn identical_sets_show_no_change_and_a_shift_lies_inside_its_interval() {
        let same = relative_change(&[10.0, 11.0, 12.0], &[10.0, 11.0, 12.0]).expect("change");
        assert_eq!(same.change_pct, 0.0);
        assert!(
            same.ci_low_pct <= 0.0 && same.ci_high_pct >= 0.0,
            "{same:?}"
        );
        let a = [100.0, 110.0, 90.0, 105.0, 95.0];
        let b: Vec<f64> = a.iter().map(|x| x * 0.5).collect();
        let half = relative_change(&a, &b).expect("change");
        assert!((half.change_pct + 50.0).abs() < 1e-9);
        assert!(
            half.ci_low_pct < -40.0 && half.ci_high_pct > -60.0 && half.ci_high_pct < 0.0,
            "{half:?}"
        );
        assert!(relative_change(&[], &[1.0]).is_none());
    }
}
