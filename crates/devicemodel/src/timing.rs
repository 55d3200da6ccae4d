//! When a request completes on a device that serves one request at a time.
//!
//! A token bucket (nbdkit's rate filter) lets a writer paced below the rate pass at memory
//! speed; a card does not: each request occupies it for a service time plus its length at the
//! current rate, and a request that arrives while it is busy waits. Garbage collection adds
//! pauses, and an SLC cache takes writes at its own rate until it is full, then empties into
//! the slow cells at the card's rate while the card is idle. A card's busy time varies from
//! write to write (a distribution of extra busy drawn for each), and a write that does not
//! follow the previous one costs what the card's random-write IOPS say.

use std::time::Duration;

/// Garbage-collection pauses: one of `pause` after every `every_bytes` written, or (random)
/// after a number of bytes drawn from an exponential distribution with that mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GcPauses {
    pub pause: Duration,
    pub every_bytes: u64,
    pub random: bool,
}

/// A fast region in front of the slow cells.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlcCache {
    pub bytes: u64,
    pub write_bytes_per_s: f64,
}

/// One step of a card's distribution of busy time: this share of writes takes `extra` on
/// top of its transfer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BusyStep {
    pub share: f64,
    pub extra: Duration,
}

/// A card's random writes of one size: `iops` of them a second, one at a time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomWrites {
    pub bytes: u64,
    pub iops: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TimingSettings {
    /// The sustained write rate of the cells (after the SLC cache, when there is one).
    pub write_bytes_per_s: f64,
    pub read_bytes_per_s: f64,
    /// Time every request costs on top of its transfer (command, programming overhead).
    pub service_time: Duration,
    pub gc: Option<GcPauses>,
    pub slc: Option<SlcCache>,
    /// The distribution of extra busy per write (shares sum to 1); empty: none.
    pub busy: Vec<BusyStep>,
    /// Random-write IOPS by size, smallest first; empty: a random write costs what a
    /// sequential one does.
    pub random_writes: Vec<RandomWrites>,
    /// Writes in the first bytes of the card (where a FAT and its directory live) take this
    /// much more: (region bytes, extra).
    pub metadata: Option<(u64, Duration)>,
}

impl TimingSettings {
    /// A card that only has a rate and a service time.
    pub fn plain(write_bytes_per_s: f64, read_bytes_per_s: f64, service_time: Duration) -> Self {
        TimingSettings {
            write_bytes_per_s,
            read_bytes_per_s,
            service_time,
            gc: None,
            slc: None,
            busy: Vec::new(),
            random_writes: Vec::new(),
            metadata: None,
        }
    }

    /// The time one random write of `len` bytes takes by the IOPS table: the listed size's
    /// 1/IOPS, interpolated between sizes, and in proportion beyond the largest.
    pub fn random_write_seconds(&self, len: u64) -> Option<f64> {
        let table = &self.random_writes;
        let first = table.first()?;
        let per = |r: &RandomWrites| 1.0 / r.iops.max(1e-9);
        if len <= first.bytes {
            return Some(per(first));
        }
        for w in table.windows(2) {
            let (a, b) = (w[0], w[1]);
            if len <= b.bytes {
                let t = (len - a.bytes) as f64 / (b.bytes - a.bytes).max(1) as f64;
                return Some(per(&a) + t * (per(&b) - per(&a)));
            }
        }
        let last = table.last()?;
        Some(per(last) * len as f64 / last.bytes.max(1) as f64)
    }
}

/// What the model decided for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    /// When the device starts on it (it waits while the device is busy).
    pub start_ns: u64,
    /// When it completes.
    pub done_ns: u64,
    /// A garbage-collection pause was part of it.
    pub gc_pause: bool,
}

/// The device's clock of work. Times are nanoseconds on any monotonic clock.
#[derive(Debug, Clone)]
pub struct Timeline {
    settings: TimingSettings,
    busy_until_ns: u64,
    slc_used_bytes: f64,
    written_since_gc: u64,
    next_gc_bytes: u64,
    rng_state: u64,
    /// Where the previous write ended: a write that starts there is sequential.
    last_write_end: Option<u64>,
    /// Totals, for the device's own account of itself.
    pub busy_ns: u64,
    pub gc_pauses: u64,
}

impl Timeline {
    pub fn new(settings: TimingSettings, seed: u64) -> Timeline {
        let mut t = Timeline {
            settings,
            busy_until_ns: 0,
            slc_used_bytes: 0.0,
            written_since_gc: 0,
            next_gc_bytes: 0,
            rng_state: seed | 1,
            last_write_end: None,
            busy_ns: 0,
            gc_pauses: 0,
        };
        t.next_gc_bytes = t.draw_gc_interval();
        t
    }

    /// xorshift64*: a device model needs a cheap, seeded draw, not a cryptographic one.
    fn next_unit(&mut self) -> f64 {
        let mut x = self.rng_state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng_state = x;
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        // 53 random bits in (0, 1].
        ((r >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    fn draw_gc_interval(&mut self) -> u64 {
        match self.settings.gc {
            Some(gc) if gc.random => {
                let u = self.next_unit();
                ((-u.ln()) * gc.every_bytes as f64).max(1.0) as u64
            }
            Some(gc) => gc.every_bytes.max(1),
            None => u64::MAX,
        }
    }

    fn seconds_ns(s: f64) -> u64 {
        (s * 1e9).round().max(0.0) as u64
    }

    /// The device folds its SLC cache into the slow cells while it has nothing else to do.
    fn idle_until(&mut self, now_ns: u64) {
        if now_ns > self.busy_until_ns && self.slc_used_bytes > 0.0 {
            let idle_s = (now_ns - self.busy_until_ns) as f64 / 1e9;
            self.slc_used_bytes =
                (self.slc_used_bytes - idle_s * self.settings.write_bytes_per_s).max(0.0);
        }
    }

    /// A write that follows the previous one (sequential).
    pub fn write(&mut self, now_ns: u64, len: u64) -> Served {
        let at = self.last_write_end.unwrap_or(0);
        self.write_at(now_ns, at, len)
    }

    /// The extra busy this write draws from the card's distribution.
    fn draw_busy(&mut self) -> f64 {
        if self.settings.busy.is_empty() {
            return 0.0;
        }
        let u = self.next_unit();
        let mut below = 0.0;
        for step in &self.settings.busy {
            below += step.share;
            if u <= below {
                return step.extra.as_secs_f64();
            }
        }
        self.settings
            .busy
            .last()
            .map_or(0.0, |s| s.extra.as_secs_f64())
    }

    /// A write of `len` bytes at `offset`.
    pub fn write_at(&mut self, now_ns: u64, offset: u64, len: u64) -> Served {
        self.idle_until(now_ns);
        let sequential = self.last_write_end.is_none_or(|end| end == offset);
        self.last_write_end = Some(offset.saturating_add(len));
        let start_ns = now_ns.max(self.busy_until_ns);
        let mut seconds = self.settings.service_time.as_secs_f64();
        let mut slow_bytes = len as f64;
        if let Some(slc) = self.settings.slc {
            let room = (slc.bytes as f64 - self.slc_used_bytes).max(0.0);
            let fast = slow_bytes.min(room);
            self.slc_used_bytes += fast;
            slow_bytes -= fast;
            seconds += fast / slc.write_bytes_per_s.max(1.0);
        }
        seconds += slow_bytes / self.settings.write_bytes_per_s.max(1.0);
        if !sequential {
            if let Some(random) = self.settings.random_write_seconds(len) {
                seconds = seconds.max(random);
            }
        }
        seconds += self.draw_busy();
        if let Some((region, extra)) = self.settings.metadata {
            if offset < region {
                seconds += extra.as_secs_f64();
            }
        }
        let mut gc_pause = false;
        if let Some(gc) = self.settings.gc {
            self.written_since_gc = self.written_since_gc.saturating_add(len);
            if self.written_since_gc >= self.next_gc_bytes {
                self.written_since_gc = 0;
                self.next_gc_bytes = self.draw_gc_interval();
                seconds += gc.pause.as_secs_f64();
                self.gc_pauses += 1;
                gc_pause = true;
            }
        }
        self.finish(start_ns, seconds, gc_pause)
    }

    pub fn read(&mut self, now_ns: u64, len: u64) -> Served {
        self.idle_until(now_ns);
        let start_ns = now_ns.max(self.busy_until_ns);
        let seconds = self.settings.service_time.as_secs_f64()
            + len as f64 / self.settings.read_bytes_per_s.max(1.0);
        self.finish(start_ns, seconds, false)
    }

    /// A flush, trim or zero: the command's service time.
    pub fn command(&mut self, now_ns: u64) -> Served {
        self.idle_until(now_ns);
        let start_ns = now_ns.max(self.busy_until_ns);
        let seconds = self.settings.service_time.as_secs_f64();
        self.finish(start_ns, seconds, false)
    }

    fn finish(&mut self, start_ns: u64, seconds: f64, gc_pause: bool) -> Served {
        let took = Self::seconds_ns(seconds);
        let done_ns = start_ns.saturating_add(took);
        self.busy_until_ns = done_ns;
        self.busy_ns = self.busy_ns.saturating_add(took);
        Served {
            start_ns,
            done_ns,
            gc_pause,
        }
    }

    pub fn slc_used_bytes(&self) -> u64 {
        self.slc_used_bytes as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(rate: f64) -> TimingSettings {
        TimingSettings::plain(rate, rate * 2.0, Duration::from_millis(1))
    }

    #[test]
    fn a_busy_distribution_gives_each_share_its_extra() {
        let mut s = card(100e6);
        s.service_time = Duration::ZERO;
        s.busy = vec![
            BusyStep {
                share: 0.9,
                extra: Duration::ZERO,
            },
            BusyStep {
                share: 0.1,
                extra: Duration::from_millis(200),
            },
        ];
        let mut t = Timeline::new(s, 3);
        let mut slow = 0;
        let mut now = 0;
        for _ in 0..10_000 {
            let w = t.write(now, 100_000);
            // 1 ms at 100 MB/s, or 201 ms.
            let took = w.done_ns - w.start_ns;
            assert!(took == 1_000_000 || took == 201_000_000, "{took}");
            slow += usize::from(took > 1_000_000);
            now = w.done_ns;
        }
        assert!(
            (800..=1200).contains(&slow),
            "{slow} of 10000 slow, a tenth expected"
        );
    }

    #[test]
    fn a_write_among_the_cards_tables_costs_the_metadata_update() {
        let mut s = card(10e6);
        s.service_time = Duration::ZERO;
        s.metadata = Some((4 << 20, Duration::from_millis(20)));
        let mut t = Timeline::new(s, 1);
        let table = t.write_at(0, 4096, 512);
        assert_eq!(table.done_ns - table.start_ns, 20_051_200);
        let data = t.write_at(table.done_ns, 8 << 20, 512);
        assert_eq!(data.done_ns - data.start_ns, 51_200);
    }

    #[test]
    fn a_write_that_jumps_costs_the_random_iops_and_one_that_follows_does_not() {
        let mut s = card(20e6);
        s.service_time = Duration::ZERO;
        s.random_writes = vec![
            RandomWrites {
                bytes: 4096,
                iops: 34.0,
            },
            RandomWrites {
                bytes: 16384,
                iops: 5.0,
            },
        ];
        let mut t = Timeline::new(s.clone(), 1);
        let first = t.write_at(0, 0, 4096);
        let next = t.write_at(first.done_ns, 4096, 4096);
        assert_eq!(
            next.done_ns - next.start_ns,
            204_800,
            "sequential: its length at the rate"
        );
        let jump = t.write_at(next.done_ns, 1 << 20, 4096);
        assert_eq!(
            jump.done_ns - jump.start_ns,
            (1e9 / 34.0_f64).round() as u64
        );
        // Between the sizes, the time per write is interpolated; beyond, in proportion.
        let mid = s.random_write_seconds(10240).expect("table");
        assert!(mid > 1.0 / 34.0 && mid < 1.0 / 5.0, "{mid}");
        let big = s.random_write_seconds(32768).expect("table");
        assert!((big - 0.4).abs() < 1e-9, "{big}");
    }

    #[test]
    fn a_request_paced_below_the_rate_still_takes_its_length_at_the_rate() {
        let mut t = Timeline::new(card(10e6), 1);
        // 1 MB every second on a 10 MB/s card: 1 ms + 100 ms each, never waiting.
        for i in 0..5u64 {
            let now = i * 1_000_000_000;
            let s = t.write(now, 1_000_000);
            assert_eq!(s.start_ns, now);
            assert_eq!(s.done_ns - s.start_ns, 101_000_000);
        }
        assert_eq!(t.busy_ns, 5 * 101_000_000);
    }

    #[test]
    fn requests_arriving_together_wait_for_each_other() {
        let mut t = Timeline::new(card(10e6), 1);
        let a = t.write(0, 100_000);
        let b = t.write(0, 100_000);
        assert_eq!(a.done_ns, 11_000_000);
        assert_eq!(b.start_ns, a.done_ns);
        assert_eq!(b.done_ns, 22_000_000);
        let r = t.read(0, 200_000);
        assert_eq!(r.start_ns, b.done_ns);
        assert_eq!(r.done_ns - r.start_ns, 11_000_000);
    }

    #[test]
    fn gc_pauses_come_after_the_bytes_they_are_set_for() {
        let mut s = card(100e6);
        s.gc = Some(GcPauses {
            pause: Duration::from_millis(300),
            every_bytes: 4_000_000,
            random: false,
        });
        let mut t = Timeline::new(s, 1);
        let pauses: Vec<bool> = (0..8).map(|_| t.write(0, 1_000_000).gc_pause).collect();
        assert_eq!(
            pauses,
            [false, false, false, true, false, false, false, true]
        );
        assert_eq!(t.gc_pauses, 2);
    }

    #[test]
    fn random_gc_pauses_average_their_interval() {
        let mut s = card(100e6);
        s.gc = Some(GcPauses {
            pause: Duration::from_millis(100),
            every_bytes: 1_000_000,
            random: true,
        });
        let mut t = Timeline::new(s, 7);
        for _ in 0..20_000 {
            t.write(0, 10_000);
        }
        // 200 MB at a mean of 1 MB: about 200 pauses.
        assert!((150..=250).contains(&t.gc_pauses), "{}", t.gc_pauses);
    }

    #[test]
    fn the_slc_cache_is_fast_until_full_and_empties_while_idle() {
        let mut s = card(10e6);
        s.service_time = Duration::ZERO;
        s.slc = Some(SlcCache {
            bytes: 2_000_000,
            write_bytes_per_s: 100e6,
        });
        let mut t = Timeline::new(s, 1);
        let fast = t.write(0, 1_000_000);
        assert_eq!(fast.done_ns, 10_000_000);
        // 1 MB left in the cache, then 1 MB at the cells' rate.
        let mixed = t.write(fast.done_ns, 2_000_000);
        assert_eq!(mixed.done_ns - mixed.start_ns, 110_000_000);
        assert_eq!(t.slc_used_bytes(), 2_000_000);
        // 0.1 s idle folds 1 MB at 10 MB/s.
        let later = t.write(mixed.done_ns + 100_000_000, 1_000_000);
        assert_eq!(later.done_ns - later.start_ns, 10_000_000);
    }
}
