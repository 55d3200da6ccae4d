//! What is watched while a job runs: bandwidth/IOPS samples, fio-format logs, rate_min,
//! steady state and the latency target.

use super::io_loop::Loop;
use super::io_loop::Planned;
use super::NS_PER_S;
use super::SAMPLE_PERIOD_NS;
use sinkrate_jobspec::options::SteadyMetric;
use sinkrate_jobspec::JobOptions;
use sinkrate_model::SteadyStateResult;

/// fio's settle period: rate_min and rate_iops_min are not checked in a job's first 2 s.
const RATE_SETTLE_NS: u64 = 2 * NS_PER_S;

/// Where a rate_min window began: when, and the direction's completed bytes and I/Os then.
#[derive(Clone, Copy, Debug)]
pub(super) struct RateMark {
    at_ns: u64,
    bytes: u64,
    ios: u64,
}

/// Bandwidth/IOPS sampling period: fio's 500 ms, or log_avg_msec when that is shorter.
pub(super) fn sample_period_ns(o: &JobOptions) -> u64 {
    o.bw_sample_period_ns()
}

/// The first tick of a `period` grid after `now`, the grid running through `due`: fio's
/// helper thread samples rates and closes averaged log windows on fixed ticks from the
/// job's start, so one sample taken late (after a slow I/O) does not move the ones after it.
pub(super) fn next_tick(due: u64, period: u64, now: u64) -> u64 {
    let period = period.max(1);
    if now < due {
        return due;
    }
    due + ((now - due) / period + 1) * period
}

pub(super) fn steady_state_criterion(ss: &sinkrate_jobspec::options::SteadyState) -> String {
    let metric = match ss.metric {
        SteadyMetric::Iops => "iops",
        SteadyMetric::Bw => "bw",
        SteadyMetric::Lat => "lat",
    };
    let limit = if ss.percent {
        ss.limit * 100.0
    } else {
        ss.limit
    };
    let unit = if ss.percent { "%" } else { "" };
    format!(
        "{metric}{}:{limit}{unit}",
        if ss.slope { "_slope" } else { "" }
    )
}

impl Loop<'_> {
    /// A log line's time in ms at run-clock `at`: from the job's start, or the Unix time
    /// with log_unix_epoch.
    fn log_time_ms(&self, at: u64) -> u64 {
        match self.logs.unix_base_ms {
            Some(base) => base + at / 1_000_000,
            None => at.saturating_sub(self.start_ns) / 1_000_000,
        }
    }

    /// The log entries of one finished I/O: per I/O without `log_avg_msec` (bandwidth as
    /// fio's, the I/O's bytes * 10^6 over its completion latency in ns; IOPS 1), else its
    /// latencies into the window.
    pub(super) fn log_io(
        &mut self,
        d: usize,
        [clat, lat, slat]: [u64; 3],
        bytes: u64,
        p: &Planned,
        now: u64,
    ) {
        let t_ms = self.log_time_ms(now);
        let dir = d as u8;
        // As the slat figure: a synchronous engine's I/O has no submission latency of its
        // own, and fio's slat log stays empty for it.
        let has_slat = self.records_slat && slat > 0;
        let (len, offset, prio) = (p.len as u64, p.offset, p.ioprio);
        if let Some(h) = &mut self.logs.hist {
            h.add(d, clat, len, t_ms);
        }
        if self.logs.avg_msec == 0 {
            if let Some(l) = &mut self.logs.clat {
                l.entry(t_ms, clat, dir, len, offset, prio);
            }
            if let Some(l) = &mut self.logs.lat {
                l.entry(t_ms, lat, dir, len, offset, prio);
            }
            if let (Some(l), true) = (&mut self.logs.slat, has_slat) {
                l.entry(t_ms, slat, dir, len, offset, prio);
            }
            if let Some(l) = &mut self.logs.bw {
                let rate = (bytes * 1_000_000).checked_div(clat).unwrap_or(0);
                l.entry(t_ms, rate, dir, len, offset, prio);
            }
            if let Some(l) = &mut self.logs.iops {
                l.entry(t_ms, 1, dir, len, offset, prio);
            }
        } else if self.logs.lat.is_some() {
            let w = &mut self.log_window;
            w.clat[d].add(clat);
            w.lat[d].add(lat);
            if has_slat {
                w.slat[d].add(slat);
            }
        }
    }

    /// Writes the `log_avg_msec` window closed at `now`: per direction, the mean (or
    /// largest) of each latency, and `on_tick` the window's bandwidth and IOPS too; then
    /// starts the next window. A window closed on its tick is logged at the tick, as fio's
    /// helper thread logs it (500, 1000, 1500 ms, however late the I/O that noticed it);
    /// the job's last, partial window is logged at the job's end, latencies only, as fio's.
    pub(super) fn flush_log_window(&mut self, now: u64, on_tick: bool) {
        let at = if on_tick {
            self.log_window_end.min(now)
        } else {
            now
        };
        let t_ms = self.log_time_ms(at);
        let w = std::mem::take(&mut self.log_window);
        let max = self.logs.max_value;
        let span = now.saturating_sub(w.start_ns).max(1) as f64;
        for (d, active) in self.o.rw.active().into_iter().enumerate() {
            let dir = d as u8;
            for (log, window) in [
                (&mut self.logs.lat, &w.lat[d]),
                (&mut self.logs.clat, &w.clat[d]),
                (&mut self.logs.slat, &w.slat[d]),
            ] {
                if let (Some(l), Some(v)) = (log.as_mut(), window.value(max)) {
                    l.entry(t_ms, v, dir, 0, 0, 0);
                }
            }
            if on_tick && active {
                if let Some(l) = &mut self.logs.bw {
                    l.entry(
                        t_ms,
                        (w.bytes[d] as f64 * 1e9 / span / 1024.0) as u64,
                        dir,
                        0,
                        0,
                        0,
                    );
                }
                if let Some(l) = &mut self.logs.iops {
                    l.entry(t_ms, (w.ios[d] as f64 * 1e9 / span) as u64, dir, 0, 0, 0);
                }
            }
        }
        self.log_window.start_ns = now;
        self.log_window_end = next_tick(self.log_window_end, self.logs.avg_msec * 1_000_000, now);
    }

    /// Closes the current sampling interval(s) up to `now`, and with `close_log_window` the
    /// averaged logs' window whose tick has come.
    pub(super) fn take_samples(&mut self, now: u64, close_log_window: bool) {
        let span = now - self.last_sample_ns;
        if span == 0 {
            return;
        }
        for (d, active) in self.o.rw.active().into_iter().enumerate() {
            let t = &mut self.tally[d];
            if active {
                let bw = t.window_bytes as f64 * 1e9 / span as f64;
                let iops = t.window_ios as f64 * 1e9 / span as f64;
                self.results[d].bw_samples.push(bw);
                self.results[d].iops_samples.push(iops);
                if self.logs.avg_msec > 0 {
                    self.log_window.bytes[d] += t.window_bytes;
                    self.log_window.ios[d] += t.window_ios;
                }
                if d == 0 || !self.o.rw.reads() || self.o.rw.writes() {
                    self.ss_window_value += match self.o.ss.map(|s| s.metric) {
                        Some(SteadyMetric::Bw) => t.window_bytes as f64,
                        Some(SteadyMetric::Lat) => 0.0,
                        _ => t.window_ios as f64,
                    };
                }
            }
            t.window_bytes = 0;
            t.window_ios = 0;
        }
        // A tick at the runtime's end is the job's end, which closes no rate window.
        let tick_before_end = self.end_ns.is_none_or(|end| self.log_window_end < end);
        if close_log_window
            && self.logs.avg_msec > 0
            && now >= self.log_window_end
            && tick_before_end
        {
            self.flush_log_window(now, true);
        }
        self.last_sample_ns = now;
        self.next_sample_ns = next_tick(self.next_sample_ns, sample_period_ns(self.o), now);
        if self.o.ss.is_some() && now >= self.ss_next_ns {
            self.steady_state_tick(now);
        }
    }

    /// Whether the job has a floor (rate_min, rate_iops_min) in any direction.
    pub(super) fn has_rate_floor(&self) -> bool {
        self.o.rate_min != [0; 3] || self.o.rate_iops_min != [0; 3]
    }

    /// rate_min and rate_iops_min as fio checks them, once per turn of the I/O loop (after
    /// the last completions and thinktime, before the next I/O): nothing in the first 2 s
    /// (fio's settle period), then the first turn with I/O done in a direction marks the
    /// start of a window, and each turn at least rate_cycle later measures the rate over the
    /// window (whole bytes or I/Os per second over whole milliseconds, as fio's) and starts
    /// the next. A job that slows down fails within a window, whatever it did before.
    pub(super) fn check_rate_floor(&mut self, now: u64) {
        let o = self.o;
        if self.ramping
            || now.saturating_sub(self.start_ns) < RATE_SETTLE_NS
            || self.error.is_some()
        {
            return;
        }
        for d in 0..3 {
            let (bytes_min, iops_min) = (o.rate_min[d], o.rate_iops_min[d]);
            let (bytes, ios) = (self.tally[d].bytes, self.tally[d].ios);
            if (bytes_min == 0 && iops_min == 0) || bytes == 0 {
                continue;
            }
            if let Some(mark) = self.rate_floor_marks[d] {
                let spent_ms = (now - mark.at_ns) / 1_000_000;
                if spent_ms < o.rate_cycle_ms || spent_ms == 0 {
                    continue;
                }
                let failed = if bytes_min > 0 {
                    let got = (bytes - mark.bytes) * 1000 / spent_ms;
                    (got < bytes_min)
                        .then(|| format!("rate_min={bytes_min}B/s not met, got {got}B/s"))
                } else {
                    let got = (ios - mark.ios) * 1000 / spent_ms;
                    (got < iops_min)
                        .then(|| format!("rate_iops_min={iops_min} not met, got {got} IOPS"))
                };
                if let Some(text) = failed {
                    self.error = Some((libc::EIO, text));
                    return;
                }
            }
            self.rate_floor_marks[d] = Some(RateMark {
                at_ns: now,
                bytes,
                ios,
            });
        }
    }

    pub(super) fn steady_state_tick(&mut self, now: u64) {
        let Some(ss) = self.o.ss else { return };
        let interval_ns = self.o.ss_interval.as_nanos().max(1) as u64;
        // The interval ending now began at the previous tick (the job's start for the first).
        let interval_start = self.ss_next_ns.saturating_sub(interval_ns);
        // On the same grid as the samples and the averaged logs' windows: an interval and
        // the log window of the same span close at the same sample.
        self.ss_next_ns = next_tick(self.ss_next_ns, interval_ns, now);
        let (lat_sum, lat_count) = std::mem::take(&mut self.ss_lat);
        // IOPS and bandwidth per second whatever the interval; latency as the interval's mean.
        let value = match ss.metric {
            SteadyMetric::Lat if lat_count == 0 => return,
            SteadyMetric::Lat => (lat_sum / lat_count as u128) as f64,
            _ => std::mem::take(&mut self.ss_window_value) * NS_PER_S as f64 / interval_ns as f64,
        };
        // As fio: samples start with the first interval that begins once ss_ramp is over.
        if interval_start.saturating_sub(self.start_ns) < self.o.ss_ramp.as_nanos() as u64 {
            return;
        }
        let window = self
            .o
            .ss_dur
            .map(|d| (d.as_nanos() as u64 / interval_ns).max(1) as usize)
            .unwrap_or(30);
        self.ss_samples.push(value);
        if self.ss_samples.len() > window {
            self.ss_samples.remove(0);
        }
        let mean = self.ss_samples.iter().sum::<f64>() / self.ss_samples.len() as f64;
        let max_dev = self
            .ss_samples
            .iter()
            .map(|v| (v - mean).abs())
            .fold(0.0, f64::max);
        let slope = sinkrate_stats::slope(&self.ss_samples);
        let measure = if ss.slope { slope.abs() } else { max_dev };
        let limit = if ss.percent {
            ss.limit * mean
        } else {
            ss.limit
        };
        let attained = self.ss_samples.len() >= window && mean > 0.0 && measure <= limit;
        self.ss_result = Some(SteadyStateResult {
            attained,
            criterion: steady_state_criterion(&ss),
            max_deviation: max_dev,
            slope,
            samples: self.ss_samples.clone(),
        });
    }

    pub(super) fn latency_target_tick(&mut self, now: u64) {
        let (Some(target), Some(lt)) = (self.o.latency_target, self.lt.as_mut()) else {
            return;
        };
        self.lt_window_end = now + self.o.latency_window.as_nanos().max(1) as u64;
        if self.lt_window.count() == 0 {
            return;
        }
        let p = self
            .lt_window
            .value_at_percentile(self.o.latency_percentile);
        lt.windows += 1;
        if p <= target.as_nanos() as u64 {
            lt.windows_met += 1;
            self.depth_cap = (self.depth_cap + 1).min(self.o.iodepth.max(1));
        } else {
            self.depth_cap = (self.depth_cap * 3 / 4).max(1);
        }
        self.lt_window.reset();
    }

    /// The job's end: its last samples, and the averaged logs' last window. The end closes
    /// no rate window (fio's helper thread logs rates on its ticks while the job runs; a
    /// tick at the job's last instant finds it gone): latencies log their last, partial
    /// window, as fio's.
    pub(super) fn finish_samples(&mut self, end: u64) {
        if end > self.last_sample_ns + SAMPLE_PERIOD_NS / 2 {
            self.take_samples(end, false);
        }
        if self.logs.avg_msec > 0 && !self.ramping {
            self.flush_log_window(end, false);
        }
    }
}
