//! The difference between two small sets of runs, with a confidence interval from a
//! percentile bootstrap over runs (the run is the unit: frames within a run are not
//! independent). Written here because it is a dozen lines over a seeded generator, and the
//! result must be the same on every machine for the same runs.

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

#[cfg(test)]
mod tests {
    use super::*;

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
