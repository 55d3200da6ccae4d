//! Latency recording and summaries. A [`LatencyRecorder`] records nanosecond latencies into
//! an HDR histogram (no allocation per value) and keeps exact min/max/mean/stddev beside it,
//! so the summary is exact and the percentiles are within the histogram's precision.

pub mod bootstrap;
pub mod fio_bins;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Largest latency the histogram tracks with full precision: one hour. Longer values are
/// clamped into the top bucket but still counted exactly in min/max/mean.
const MAX_TRACKABLE_NS: u64 = 3_600_000_000_000;
/// Three significant digits: percentiles within 0.1% of the true value.
const SIGNIFICANT_DIGITS: u8 = 3;

#[derive(Clone, Debug)]
pub struct LatencyRecorder {
    /// Made at the first value: a recorder that is never used costs no histogram.
    histogram: Option<Histogram<u64>>,
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
    sum_squares: f64,
    mean_running: f64,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyRecorder {
    pub fn new() -> LatencyRecorder {
        LatencyRecorder {
            histogram: None,
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_squares: 0.0,
            mean_running: 0.0,
        }
    }

    /// The histogram, made on first use at its smallest (16 KiB); it grows only as far as
    /// the values recorded need (at most 270 KiB, for one hour). A job holds eight recorders,
    /// most of them never used, and thousands of jobs must fit in memory.
    fn histogram_mut(&mut self) -> &mut Histogram<u64> {
        self.histogram.get_or_insert_with(|| {
            // Bounds are constants within hdrhistogram's documented limits: cannot fail.
            let mut h = Histogram::new_with_bounds(1, 2, SIGNIFICANT_DIGITS)
                .unwrap_or_else(|_| unreachable!("constant histogram bounds are valid"));
            h.auto(true);
            h
        })
    }

    /// Records one latency in nanoseconds.
    #[inline]
    pub fn record(&mut self, nanos: u64) {
        let value = nanos.clamp(1, MAX_TRACKABLE_NS);
        let h = self.histogram_mut();
        // `record` grows an auto-sizing histogram (saturating_record would clamp instead);
        // within the one-hour bound it cannot fail but by running out of memory.
        if h.record(value).is_err() {
            h.saturating_record(value);
        }
        self.count += 1;
        self.min = self.min.min(nanos);
        self.max = self.max.max(nanos);
        self.sum += nanos as u128;
        // Welford's update keeps the variance exact without a second pass.
        let x = nanos as f64;
        let delta = x - self.mean_running;
        self.mean_running += delta / self.count as f64;
        self.sum_squares += delta * (x - self.mean_running);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn merge(&mut self, other: &LatencyRecorder) {
        if other.count == 0 {
            return;
        }
        if let Some(h) = &other.histogram {
            let _ = self.histogram_mut().add(h);
        }
        let n1 = self.count as f64;
        let n2 = other.count as f64;
        let delta = other.mean_running - self.mean_running;
        let total = n1 + n2;
        self.sum_squares += other.sum_squares + delta * delta * n1 * n2 / total;
        self.mean_running += delta * n2 / total;
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
    }

    pub fn reset(&mut self) {
        *self = LatencyRecorder::new();
    }

    pub fn summary(&self, percentiles: &[f64]) -> LatencySummary {
        if self.count == 0 {
            return LatencySummary::default();
        }
        let stddev = if self.count > 1 {
            (self.sum_squares / (self.count - 1) as f64).sqrt()
        } else {
            0.0
        };
        LatencySummary {
            count: self.count,
            min_ns: self.min,
            max_ns: self.max,
            mean_ns: self.sum as f64 / self.count as f64,
            stddev_ns: stddev,
            percentiles_ns: percentiles
                .iter()
                .map(|&p| (p, self.value_at_percentile(p)))
                .collect(),
        }
    }

    /// The value at or below which `p` percent of the recorded latencies fall, clamped to the
    /// exact observed range.
    pub fn value_at_percentile(&self, p: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        match &self.histogram {
            Some(h) => h
                .highest_equivalent(h.value_at_percentile(p))
                .clamp(self.min, self.max),
            None => 0,
        }
    }

    /// Share of latencies in fio's buckets: see [`FIO_LATENCY_BUCKETS`]. As fio's
    /// stat_calc_lat, a bucket holding any latency shows at least 0.01%, so a rare slow
    /// I/O is not printed as 0.00%.
    pub fn bucket_distribution(&self) -> Vec<(LatencyBucket, f64)> {
        let total = self.count.max(1) as f64;
        let mut out = Vec::with_capacity(FIO_LATENCY_BUCKETS.len());
        let mut below_prev = 0u64;
        for bucket in FIO_LATENCY_BUCKETS {
            let below = match bucket.upper_ns {
                Some(upper) => self.count_at_or_below(upper),
                None => self.count,
            };
            let n = below.saturating_sub(below_prev);
            let share = 100.0 * n as f64 / total;
            out.push((bucket, if n > 0 { share.max(0.01) } else { share }));
            below_prev = below;
        }
        out
    }

    fn count_at_or_below(&self, value: u64) -> u64 {
        if value == 0 {
            return 0;
        }
        self.histogram
            .as_ref()
            .map_or(0, |h| h.count_between(0, value.saturating_sub(1)))
    }

    /// The counts in fio's 1856 bins, as (the bin's value, fio's midpoint; count) for the
    /// bins that hold any, in order: json+'s `bins`. Exact, not an approximation: each HDR
    /// bucket lies inside one fio bin ([`fio_bins`]).
    pub fn fio_bins(&self) -> Vec<(u64, u64)> {
        let mut counts: Vec<(usize, u64)> = Vec::new();
        for v in self.histogram.iter().flat_map(|h| h.iter_recorded()) {
            let index = fio_bins::plat_index(v.value_iterated_to());
            match counts.last_mut() {
                Some((last, n)) if *last == index => *n += v.count_since_last_iteration(),
                _ => counts.push((index, v.count_since_last_iteration())),
            }
        }
        counts
            .into_iter()
            .map(|(index, n)| (fio_bins::plat_value(index), n))
            .collect()
    }

    /// Raw histogram bins as (upper bound in ns, count): sinkrate's own finer histogram.
    pub fn bins(&self) -> Vec<(u64, u64)> {
        self.histogram
            .iter()
            .flat_map(|h| h.iter_recorded())
            .map(|v| (v.value_iterated_to(), v.count_since_last_iteration()))
            .collect()
    }
}

/// One latency series as a result carries it: the percentiles scripts read (`p50`, `p99`,
/// ...), exact count, mean and max, and the histogram itself as `[value_ns, count]` pairs so
/// that pictures and statistics can be drawn from a saved result. The unit (ns) is in the
/// key that holds it (`write_latency_ns`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencyDistribution {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    pub mean: f64,
    pub count: u64,
    #[serde(default)]
    pub min: u64,
    #[serde(default)]
    pub stddev: f64,
    /// `[highest value in the bucket, count]`, for the buckets that hold any values.
    #[serde(default)]
    pub histogram: Vec<(u64, u64)>,
}

impl LatencyDistribution {
    pub fn of(r: &LatencyRecorder) -> LatencyDistribution {
        let s = r.summary(&[50.0, 90.0, 99.0, 99.9]);
        let at = |p: f64| s.percentile(p).unwrap_or(0);
        LatencyDistribution {
            p50: at(50.0),
            p90: at(90.0),
            p99: at(99.0),
            p999: at(99.9),
            max: s.max_ns,
            mean: s.mean_ns,
            count: s.count,
            min: s.min_ns,
            stddev: s.stddev_ns,
            histogram: r.bins(),
        }
    }
}

/// Exact summary plus histogram percentiles of one latency series.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LatencySummary {
    pub count: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub mean_ns: f64,
    pub stddev_ns: f64,
    pub percentiles_ns: Vec<(f64, u64)>,
}

impl LatencySummary {
    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.percentiles_ns
            .iter()
            .find(|(q, _)| (q - p).abs() < 1e-9)
            .map(|(_, v)| *v)
    }
}

/// One of fio's latency-distribution buckets: values below `upper_ns` (and at or above the
/// previous bucket's bound); `None` is the open top bucket (`>=2000` ms).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatencyBucket {
    pub unit: BucketUnit,
    /// The label fio prints, in `unit`.
    pub label: &'static str,
    pub upper_ns: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BucketUnit {
    Nanos,
    Micros,
    Millis,
}

macro_rules! buckets {
    ($($unit:ident $label:literal $upper:expr),* $(,)?) => {
        [$(LatencyBucket { unit: BucketUnit::$unit, label: $label, upper_ns: $upper }),*]
    };
}

/// fio's `latency_ns`/`latency_us`/`latency_ms` buckets, in order.
pub const FIO_LATENCY_BUCKETS: [LatencyBucket; 32] = buckets![
    Nanos "2" Some(2), Nanos "4" Some(4), Nanos "10" Some(10), Nanos "20" Some(20),
    Nanos "50" Some(50), Nanos "100" Some(100), Nanos "250" Some(250), Nanos "500" Some(500),
    Nanos "750" Some(750), Nanos "1000" Some(1000),
    Micros "2" Some(2_000), Micros "4" Some(4_000), Micros "10" Some(10_000), Micros "20" Some(20_000),
    Micros "50" Some(50_000), Micros "100" Some(100_000), Micros "250" Some(250_000),
    Micros "500" Some(500_000), Micros "750" Some(750_000), Micros "1000" Some(1_000_000),
    Millis "2" Some(2_000_000), Millis "4" Some(4_000_000), Millis "10" Some(10_000_000),
    Millis "20" Some(20_000_000), Millis "50" Some(50_000_000), Millis "100" Some(100_000_000),
    Millis "250" Some(250_000_000), Millis "500" Some(500_000_000), Millis "750" Some(750_000_000),
    Millis "1000" Some(1_000_000_000), Millis "2000" Some(2_000_000_000), Millis ">=2000" None,
];

/// min/max/mean/stddev of a series of samples (bandwidth or IOPS per interval).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SampleSummary {
    pub samples: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub stddev: f64,
}

impl SampleSummary {
    pub fn of(values: &[f64]) -> SampleSummary {
        if values.is_empty() {
            return SampleSummary::default();
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = if values.len() > 1 {
            values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        SampleSummary {
            samples: values.len() as u64,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            mean,
            stddev: var.sqrt(),
        }
    }
}

/// Least-squares slope of `values` against their index (units per sample).
pub fn slope(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    if values.len() < 2 {
        return 0.0;
    }
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = values.iter().sum::<f64>() / n;
    let mut num = 0.0;
    let mut den = 0.0;
    for (i, y) in values.iter().enumerate() {
        let dx = i as f64 - mean_x;
        num += dx * (y - mean_y);
        den += dx * dx;
    }
    if den == 0.0 {
        0.0
    } else {
        num / den
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unused_recorder_has_no_histogram_and_a_used_one_grows_to_an_hour() {
        let idle = LatencyRecorder::new();
        assert!(idle.histogram.is_none());
        assert_eq!(idle.value_at_percentile(99.0), 0);
        let mut r = LatencyRecorder::new();
        r.record(1_000);
        r.record(MAX_TRACKABLE_NS);
        r.record(u64::MAX);
        assert_eq!(r.count(), 3);
        let p50 = r.value_at_percentile(50.0);
        assert!(
            (MAX_TRACKABLE_NS..=MAX_TRACKABLE_NS + MAX_TRACKABLE_NS / 1000).contains(&p50),
            "{p50}"
        );
        assert_eq!(r.value_at_percentile(0.0), 1_000);
    }

    /// Reference percentile: the smallest value with at least p% of values at or below it.
    fn reference_percentile(sorted: &[u64], p: f64) -> u64 {
        let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
        sorted[rank.min(sorted.len()) - 1]
    }

    #[test]
    fn percentiles_agree_with_a_sorted_reference_within_precision() {
        let mut state = 0x2545F4914F6CDD1Du64;
        let mut values = Vec::new();
        let mut rec = LatencyRecorder::new();
        for _ in 0..100_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Log-uniform between 1 us and 100 ms, like real I/O latencies.
            let v = (1_000.0 * (1e5f64).powf((state % 1_000_000) as f64 / 1e6)) as u64;
            values.push(v);
            rec.record(v);
        }
        values.sort_unstable();
        for p in [1.0, 50.0, 90.0, 99.0, 99.9, 99.99] {
            let want = reference_percentile(&values, p) as f64;
            let got = rec.value_at_percentile(p) as f64;
            assert!(
                (got - want).abs() / want < 0.002,
                "p{p}: got {got}, want {want}"
            );
        }
        let s = rec.summary(&[50.0]);
        assert_eq!(s.min_ns, values[0]);
        assert_eq!(s.max_ns, values[values.len() - 1]);
        let mean = values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64;
        assert!((s.mean_ns - mean).abs() < 1e-6 * mean);
    }

    #[test]
    fn stddev_and_merge_are_exact() {
        let mut a = LatencyRecorder::new();
        let mut b = LatencyRecorder::new();
        for v in [2u64, 4, 4, 4] {
            a.record(v);
        }
        for v in [5u64, 5, 7, 9] {
            b.record(v);
        }
        a.merge(&b);
        let s = a.summary(&[]);
        assert_eq!(s.count, 8);
        assert_eq!(s.mean_ns, 5.0);
        // Sample standard deviation of 2,4,4,4,5,5,7,9 is sqrt(32/7).
        assert!((s.stddev_ns - (32.0f64 / 7.0).sqrt()).abs() < 1e-9);
        assert_eq!((s.min_ns, s.max_ns), (2, 9));
    }

    #[test]
    fn bucket_distribution_matches_fio_boundaries() {
        let mut r = LatencyRecorder::new();
        r.record(1); // < 2 ns
        r.record(150); // 100..250 ns
        r.record(3_000); // 2..4 us
        r.record(5_000_000_000); // >= 2000 ms
        let d = r.bucket_distribution();
        let share = |unit: BucketUnit, label: &str| {
            d.iter()
                .find(|(b, _)| b.unit == unit && b.label == label)
                .map(|(_, s)| *s)
                .unwrap_or(-1.0)
        };
        assert_eq!(share(BucketUnit::Nanos, "2"), 25.0);
        assert_eq!(share(BucketUnit::Nanos, "250"), 25.0);
        assert_eq!(share(BucketUnit::Micros, "4"), 25.0);
        assert_eq!(share(BucketUnit::Millis, ">=2000"), 25.0);
        let total: f64 = d.iter().map(|(_, s)| s).sum();
        assert!((total - 100.0).abs() < 1e-9);
    }

    #[test]
    fn a_rare_latency_shows_as_fios_floor_of_a_hundredth_of_a_percent() {
        let mut r = LatencyRecorder::new();
        for _ in 0..99_999 {
            r.record(3_000);
        }
        r.record(30_000);
        let d = r.bucket_distribution();
        let share = |label: &str| {
            d.iter()
                .find(|(b, _)| b.unit == BucketUnit::Micros && b.label == label)
                .map(|(_, s)| *s)
        };
        assert_eq!(share("50"), Some(0.01));
        assert_eq!(share("100"), Some(0.0));
        assert_eq!(share("4"), Some(99.999));
    }

    #[test]
    fn empty_recorder_is_all_zero() {
        let r = LatencyRecorder::new();
        assert_eq!(r.summary(&[50.0]), LatencySummary::default());
        assert_eq!(r.value_at_percentile(99.0), 0);
    }

    #[test]
    fn sample_summary_and_slope() {
        let s = SampleSummary::of(&[1.0, 2.0, 3.0]);
        assert_eq!((s.min, s.max, s.mean, s.samples), (1.0, 3.0, 2.0, 3));
        assert!((s.stddev - 1.0).abs() < 1e-12);
        assert!((slope(&[1.0, 3.0, 5.0, 7.0]) - 2.0).abs() < 1e-12);
        assert_eq!(slope(&[4.0]), 0.0);
    }
}
