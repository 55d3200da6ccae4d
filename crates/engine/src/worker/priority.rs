//! Which priority each I/O gets (fio's cmdprio: a share of the I/Os, overall or per block
//! size, issued with a priority of their own), the job thread's own priority (prio and
//! prioclass), and the completion latencies per priority that fio reports as `prios`.

use sinkrate_jobspec::priority::Priorities;
use sinkrate_stats::LatencyRecorder;

use crate::rng::Rng;

/// Per-command priorities of one job.
pub(super) struct CommandPriority {
    config: Priorities,
    /// The priority of an I/O not chosen: the job's own, or none.
    default: u16,
    rng: Rng,
}

impl CommandPriority {
    /// `None` when no I/O gets a priority of its own.
    pub(super) fn new(p: &Priorities, seed: u64) -> Option<CommandPriority> {
        p.per_command().then(|| CommandPriority {
            config: p.clone(),
            default: p.job_ioprio().unwrap_or(0),
            // Its own stream: choosing priorities leaves the offsets as they would be.
            rng: Rng::new(seed ^ 0x9e10_9e10),
        })
    }

    /// The priority of the next I/O of direction `d` and `len` bytes. Trims have none, as
    /// fio's.
    #[inline]
    pub(super) fn choose(&mut self, d: usize, len: u64) -> u16 {
        if d > 1 {
            return self.default;
        }
        let percent = self.config.cmdprio_percentage[d];
        if percent > 0 {
            return if self.rng.below(100) < u64::from(percent) {
                self.config.command_ioprio(d)
            } else {
                self.default
            };
        }
        let split = &self.config.cmdprio_bssplit[d];
        if split.iter().any(|e| e.bs == len) {
            // The entries for this size share 0..100 in their order.
            let draw = self.rng.below(100);
            let mut upto = 0;
            for e in split.iter().filter(|e| e.bs == len) {
                upto += u64::from(e.percent);
                if draw < upto {
                    return self.config.split_ioprio(d, e);
                }
            }
        }
        self.default
    }
}

/// Completion (or, with lat_percentiles, total) latency per priority and direction, for
/// jobs whose I/Os can have several priorities.
pub(super) struct PriorityLatency {
    total_latency: bool,
    /// In fio's order (the job's own priority first); per direction.
    pub(super) by_prio: Vec<(u16, [LatencyRecorder; 3])>,
}

impl PriorityLatency {
    pub(super) fn new(p: &Priorities, total_latency: bool) -> Option<PriorityLatency> {
        p.per_command().then(|| PriorityLatency {
            total_latency,
            by_prio: p
                .all_ioprios()
                .into_iter()
                .map(|prio| (prio, Default::default()))
                .collect(),
        })
    }

    #[inline]
    pub(super) fn record(&mut self, d: usize, ioprio: u16, clat: u64, lat: u64) {
        if let Some((_, per_dir)) = self.by_prio.iter_mut().find(|(p, _)| *p == ioprio) {
            per_dir[d].record(if self.total_latency { lat } else { clat });
        }
    }

    pub(super) fn reset(&mut self) {
        for (_, per_dir) in &mut self.by_prio {
            *per_dir = Default::default();
        }
    }
}

/// Sets the calling thread's I/O priority, as fio's job threads do for prio/prioclass.
#[cfg(target_os = "linux")]
pub(super) fn set_thread_ioprio(ioprio: u16) -> std::io::Result<()> {
    const IOPRIO_WHO_PROCESS: libc::c_long = 1;
    // SAFETY: ioprio_set takes plain integers; `who` 0 is the calling thread.
    let r = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0 as libc::c_long,
            libc::c_long::from(ioprio),
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn set_thread_ioprio(_ioprio: u16) -> std::io::Result<()> {
    Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkrate_units::fio::KbBase;

    fn priorities(pairs: &[(&str, &str)]) -> Priorities {
        let mut p = Priorities::default();
        for (k, v) in pairs {
            p.apply(k, Some(v), KbBase::Compat1024).expect("applies");
        }
        p
    }

    #[test]
    fn a_percentage_of_ios_get_the_command_priority() {
        let p = priorities(&[("prioclass", "3"), ("cmdprio_percentage", "30")]);
        let mut c = CommandPriority::new(&p, 1).expect("per command");
        let chosen: Vec<u16> = (0..10_000).map(|_| c.choose(0, 4096)).collect();
        let high = chosen.iter().filter(|p| **p == 0x2000).count();
        assert!((2_800..3_200).contains(&high), "{high}");
        assert_eq!(
            high + chosen.iter().filter(|p| **p == 0x6000).count(),
            10_000
        );
        assert_eq!(c.choose(2, 4096), 0x6000, "trims have none of their own");
    }

    #[test]
    fn bssplit_entries_share_their_block_size() {
        let p = priorities(&[("cmdprio_bssplit", "64k/25/1/1:64k/75/3/2:1m/0")]);
        let mut c = CommandPriority::new(&p, 2).expect("per command");
        let mut counts = [0u32; 3];
        for _ in 0..10_000 {
            match c.choose(1, 65536) {
                0x2001 => counts[0] += 1,
                0x6002 => counts[1] += 1,
                _ => counts[2] += 1,
            }
        }
        assert!((2_300..2_700).contains(&counts[0]), "{counts:?}");
        assert_eq!(counts[2], 0, "{counts:?}");
        assert!((0..100).all(|_| c.choose(0, 1 << 20) == 0), "1m/0: never");
        assert!(CommandPriority::new(&priorities(&[("prio", "2")]), 3).is_none());
    }
}
