//! A thread's own CPU time and faults, from getrusage(RUSAGE_THREAD): what a writer or a job
//! cost, apart from the rest of the process.

const NS_PER_S: u64 = 1_000_000_000;

/// What the calling thread has used so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThreadUsage {
    pub user_ns: u64,
    pub system_ns: u64,
    /// Voluntary and involuntary context switches.
    pub context_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
}

impl ThreadUsage {
    /// User and system time together.
    pub fn cpu_ns(&self) -> u64 {
        self.user_ns + self.system_ns
    }

    /// What was used between `earlier` and `self` (counters never run backwards).
    pub fn since(&self, earlier: &ThreadUsage) -> ThreadUsage {
        ThreadUsage {
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            system_ns: self.system_ns.saturating_sub(earlier.system_ns),
            context_switches: self
                .context_switches
                .saturating_sub(earlier.context_switches),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
        }
    }
}

/// The calling thread's usage; None where the system has no per-thread accounting.
#[cfg(any(target_os = "linux", target_os = "freebsd"))]
pub fn thread_usage() -> Option<ThreadUsage> {
    // SAFETY: getrusage fills the struct; zeroed is a valid initial value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage for the call.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } < 0 {
        return None;
    }
    let ns = |tv: libc::timeval| tv.tv_sec as u64 * NS_PER_S + tv.tv_usec as u64 * 1000;
    Some(ThreadUsage {
        user_ns: ns(ru.ru_utime),
        system_ns: ns(ru.ru_stime),
        context_switches: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
        minor_faults: ru.ru_minflt as u64,
        major_faults: ru.ru_majflt as u64,
    })
}

#[cfg(not(any(target_os = "linux", target_os = "freebsd")))]
pub fn thread_usage() -> Option<ThreadUsage> {
    None
}

/// The calling thread's id: what /proc/PID/task and the kernel's trace events call its pid.
#[cfg(target_os = "linux")]
pub fn thread_id() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

#[cfg(not(target_os = "linux"))]
pub fn thread_id() -> i32 {
    std::process::id() as i32
}

/// CLOCK_MONOTONIC in nanoseconds: the clock `Instant` reads on Linux, and the one the
/// kernel's trace events are stamped with (`trace_clock` mono).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into a local timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Where `clock` started on CLOCK_MONOTONIC, in nanoseconds (to place the kernel's events
/// on a run's own clock).
pub fn monotonic_ns_of(clock: std::time::Instant) -> u64 {
    monotonic_ns().saturating_sub(clock.elapsed().as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_counts_cpu_time_and_the_difference_never_goes_negative() {
        let before = thread_usage().expect("getrusage");
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(30) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let after = thread_usage().expect("getrusage");
        assert!(after.since(&before).cpu_ns() > 0);
        assert_eq!(before.since(&after).user_ns, 0);
    }
}
