//! What a fleet's monitoring needs from `watch`, in Prometheus' conventions: counters that
//! only grow (the rate is the query's `rate()`, not a gauge sampled at the watch's interval,
//! which a 15 s scrape would see one time in 150), one series per device under the names
//! /proc/diskstats gives (so they join with node_exporter's `node_disk_*{device=...}`), the
//! device's stalls counted as they happen, and when the figures were last brought up to
//! date. Pure: fed one sample at a time, no I/O.

use std::time::Duration;

use sinkrate_procparse::diskstats::DiskCounters;

use sinkrate_model::timeline::Sample;

/// A device with requests in flight that completes none for this long has stalled: an SD
/// card's garbage collection, a USB bridge's reset, an eMMC's cache flush. A recorder with a
/// few frames of capture buffer at 30 fps drops frames from about here on.
pub const STALL_MIN: Duration = Duration::from_millis(250);

/// One device's counters and stalls.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceMetrics {
    /// The name as in /proc/diskstats (sda, mmcblk0, nvme0n1).
    pub device: String,
    /// The kernel's counters at the last sample: cumulative since boot, as node_exporter
    /// reports them, so that a restart of the watch is no reset of the series.
    pub counters: DiskCounters,
    /// Stalls of at least [`STALL_MIN`] since the watch started, counted when they reach it.
    pub stalls: u64,
    /// How long the device has been stalled at the last sample (0 when it is not).
    pub stalled_now_s: f64,
    /// The longest stall since the watch started, and when it was last seen (Unix seconds).
    pub longest_stall_s: f64,
    pub longest_stall_at_unix_s: Option<f64>,
    /// Sample time (ns) of the last sample at which the device completed an I/O or had none
    /// in flight: a stall is measured from there.
    last_progress_ns: Option<u64>,
    /// Whether the stall under way has been counted.
    counted: bool,
}

impl DeviceMetrics {
    fn new(device: &str, counters: DiskCounters, t_ns: u64) -> DeviceMetrics {
        DeviceMetrics {
            device: device.to_string(),
            counters,
            stalls: 0,
            stalled_now_s: 0.0,
            longest_stall_s: 0.0,
            longest_stall_at_unix_s: None,
            last_progress_ns: Some(t_ns),
            counted: false,
        }
    }

    fn observe(&mut self, now: DiskCounters, t_ns: u64, unix_s: f64) {
        let completed = |c: &DiskCounters| c.reads + c.writes;
        let progressed = completed(&now) != completed(&self.counters) || now.in_flight == 0;
        self.counters = now;
        if progressed {
            self.last_progress_ns = Some(t_ns);
            self.stalled_now_s = 0.0;
            self.counted = false;
            return;
        }
        let since = self.last_progress_ns.unwrap_or(t_ns);
        self.stalled_now_s = t_ns.saturating_sub(since) as f64 / 1e9;
        if self.stalled_now_s >= self.longest_stall_s {
            self.longest_stall_s = self.stalled_now_s;
            self.longest_stall_at_unix_s = Some(unix_s);
        }
        if !self.counted && self.stalled_now_s >= STALL_MIN.as_secs_f64() {
            self.stalls += 1;
            self.counted = true;
        }
    }
}

/// Everything the textfile holds, brought up to date one sample at a time.
#[derive(Debug, Clone, Default)]
pub struct FleetMetrics {
    pub devices: Vec<DeviceMetrics>,
    /// Seconds the machine's dirty + writeback data stood above the freerun ceiling (writers
    /// throttled), and how many times it went above.
    pub throttled_seconds: f64,
    pub throttled_episodes: u64,
    /// The last sample: the gauges of the moment.
    pub last: Option<Sample>,
    pub started_unix_s: f64,
    /// When the figures were last brought up to date (Unix seconds).
    pub updated_unix_s: Option<f64>,
}

impl FleetMetrics {
    pub fn new(started_unix_s: f64) -> FleetMetrics {
        FleetMetrics {
            started_unix_s,
            ..FleetMetrics::default()
        }
    }

    /// Takes one sample and the devices' counters read with it; `unix_s` is the wall clock
    /// at the sample.
    pub fn observe<'a>(
        &mut self,
        sample: &Sample,
        unix_s: f64,
        devices: impl IntoIterator<Item = (&'a str, &'a DiskCounters)>,
    ) {
        if sample.throttled {
            if let Some(prev) = &self.last {
                self.throttled_seconds += sample.t_ns.saturating_sub(prev.t_ns) as f64 / 1e9;
                if !prev.throttled {
                    self.throttled_episodes += 1;
                }
            } else {
                self.throttled_episodes += 1;
            }
        }
        for (name, counters) in devices {
            match self.devices.iter_mut().find(|d| d.device == name) {
                Some(d) => d.observe(*counters, sample.t_ns, unix_s),
                None => self
                    .devices
                    .push(DeviceMetrics::new(name, *counters, sample.t_ns)),
            }
        }
        self.last = Some(*sample);
        self.updated_unix_s = Some(unix_s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(completed: u64, in_flight: u64, written: u64) -> DiskCounters {
        DiskCounters {
            writes: completed,
            write_bytes: written,
            in_flight,
            ..DiskCounters::default()
        }
    }

    fn sample(ms: u64, throttled: bool) -> Sample {
        Sample {
            t_ns: ms * 1_000_000,
            throttled,
            ..Sample::default()
        }
    }

    /// Feeds (ms, completed, in flight) for one device "mmcblk0".
    fn feed(steps: &[(u64, u64, u64)]) -> FleetMetrics {
        let mut m = FleetMetrics::new(1_000.0);
        for &(ms, done, in_flight) in steps {
            let c = disk(done, in_flight, done * 4096);
            m.observe(
                &sample(ms, false),
                1_000.0 + ms as f64 / 1e3,
                [("mmcblk0", &c)],
            );
        }
        m
    }

    #[test]
    fn a_device_that_keeps_completing_never_stalls() {
        let m = feed(&[
            (0, 0, 1),
            (100, 5, 1),
            (200, 9, 2),
            (300, 12, 1),
            (400, 12, 0),
        ]);
        let d = &m.devices[0];
        assert_eq!(d.stalls, 0);
        assert_eq!(d.longest_stall_s, 0.0);
        assert_eq!(d.counters.write_bytes, 12 * 4096);
    }

    #[test]
    fn an_idle_device_is_not_stalled() {
        let m = feed(&[(0, 3, 0), (500, 3, 0), (1000, 3, 0), (1500, 3, 0)]);
        assert_eq!(m.devices[0].stalls, 0);
    }

    #[test]
    fn requests_in_flight_and_none_completed_is_a_stall_counted_once() {
        // Completions up to 100 ms, then 600 ms with requests waiting, then progress again,
        // then a second stall of 200 ms: below STALL_MIN, so not counted.
        let m = feed(&[
            (0, 0, 1),
            (100, 4, 1),
            (200, 4, 2),
            (300, 4, 2),
            (400, 4, 2),
            (500, 4, 2),
            (600, 4, 2),
            (700, 4, 2),
            (800, 9, 0),
            (900, 10, 1),
            (1000, 10, 1),
            (1100, 10, 1),
            (1200, 11, 0),
        ]);
        let d = &m.devices[0];
        assert_eq!(d.stalls, 1);
        assert!(
            (d.longest_stall_s - 0.6).abs() < 1e-9,
            "{}",
            d.longest_stall_s
        );
        assert_eq!(d.longest_stall_at_unix_s, Some(1000.7));
        assert_eq!(d.stalled_now_s, 0.0);
    }

    #[test]
    fn a_stall_under_way_shows_its_length_and_is_counted_before_it_ends() {
        let m = feed(&[
            (0, 2, 1),
            (100, 2, 1),
            (200, 2, 1),
            (300, 2, 1),
            (400, 2, 1),
        ]);
        let d = &m.devices[0];
        assert_eq!(d.stalls, 1);
        assert!((d.stalled_now_s - 0.4).abs() < 1e-9);
        assert!((d.longest_stall_s - 0.4).abs() < 1e-9);
    }

    #[test]
    fn throttled_time_and_episodes_count_from_the_samples() {
        let mut m = FleetMetrics::new(0.0);
        for (ms, t) in [
            (0, false),
            (100, true),
            (200, true),
            (300, false),
            (400, true),
        ] {
            m.observe(&sample(ms, t), ms as f64 / 1e3, std::iter::empty());
        }
        assert_eq!(m.throttled_episodes, 2);
        assert!((m.throttled_seconds - 0.3).abs() < 1e-9);
        assert_eq!(m.updated_unix_s, Some(0.4));
    }

    #[test]
    fn each_device_keeps_its_own_series() {
        let mut m = FleetMetrics::new(0.0);
        let (a, b) = (disk(1, 0, 512), disk(7, 0, 8192));
        m.observe(&sample(0, false), 0.0, [("sda", &a), ("mmcblk0", &b)]);
        let b2 = disk(9, 0, 16384);
        m.observe(&sample(100, false), 0.1, [("sda", &a), ("mmcblk0", &b2)]);
        let names: Vec<&str> = m.devices.iter().map(|d| d.device.as_str()).collect();
        assert_eq!(names, ["sda", "mmcblk0"]);
        assert_eq!(m.devices[1].counters.write_bytes, 16384);
    }
}
