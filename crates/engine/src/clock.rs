//! The run's monotonic clock: nanoseconds since the run started. `Instant` reads
//! CLOCK_MONOTONIC through the vDSO (about 20 ns here), cheap enough for two reads per I/O.

use std::time::Instant;

#[derive(Clone, Copy, Debug)]
pub struct Clock {
    base: Instant,
}

impl Clock {
    pub fn start() -> Clock {
        Clock {
            base: Instant::now(),
        }
    }

    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// Sleeps until `deadline_ns` on this clock; returns at once if it has passed.
    pub fn sleep_until(&self, deadline_ns: u64) {
        let now = self.now_ns();
        if deadline_ns > now {
            std::thread::sleep(std::time::Duration::from_nanos(deadline_ns - now));
        }
    }

    /// Busy-waits for `nanos` (fio's thinktime_spin: a CPU-bound pause).
    pub fn spin(&self, nanos: u64) {
        let end = self.now_ns() + nanos;
        while self.now_ns() < end {
            std::hint::spin_loop();
        }
    }
}
