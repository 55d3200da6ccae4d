//! Which processes and kernel threads take the CPU (seed 002's `hogs`), from /proc/PID/stat
//! once a second: the flusher threads (`kworker/u*:*+flush-*`) show up here when writeback
//! wakes, as in seed 001.

use std::collections::HashMap;

use sinkrate_model::timeline::Hog;
use sinkrate_sys::process;

/// The ended processes whose totals are kept, the busiest: a soak of hours on a busy
/// machine sees thousands of processes come and go, and keeping each one's figures (and its
/// last counters) would grow the recorder's memory without end.
const KEPT_ENDED: usize = 64;

#[derive(Default)]
pub struct HogTracker {
    last_ticks: HashMap<u32, u64>,
    last_written: HashMap<u32, u64>,
    totals: HashMap<u32, Hog>,
    /// The processes the last scan found.
    alive: std::collections::HashSet<u32>,
    procs: process::Scanner,
    /// The scanned process's name, kept between scans.
    comm: String,
    ticks_per_s: f64,
    flusher_pct: f64,
}

impl HogTracker {
    pub fn new() -> HogTracker {
        HogTracker {
            ticks_per_s: sinkrate_sys::clock_ticks_per_s() as f64,
            ..HogTracker::default()
        }
    }

    /// Scans every process; returns the top CPU user of the interval since the last scan.
    pub fn scan(&mut self, interval_s: f64) -> Option<(String, f64)> {
        let mut top: Option<(u32, f64)> = None;
        self.flusher_pct = 0.0;
        self.alive.clear();
        for pid in process::all_pids() {
            let Some(st) = self.procs.stat(pid) else {
                continue;
            };
            let ticks = st.utime + st.stime;
            self.comm.clear();
            self.comm.push_str(st.comm);
            self.alive.insert(pid);
            let prev = self.last_ticks.insert(pid, ticks);
            let written = self.procs.io(pid).map(|io| io.write_bytes);
            let prev_written = match written {
                Some(w) => self.last_written.insert(pid, w),
                None => None,
            };
            let Some(prev) = prev else { continue };
            let delta = ticks.saturating_sub(prev);
            let wrote = match (written, prev_written) {
                (Some(w), Some(p)) => w.saturating_sub(p),
                _ => 0,
            };
            if delta == 0 && wrote == 0 {
                continue;
            }
            let pct = 100.0 * delta as f64 / self.ticks_per_s / interval_s.max(1e-3);
            let entry = self.totals.entry(pid).or_insert_with(|| Hog {
                pid,
                name: self.comm.clone(),
                cpu_seconds: 0.0,
                peak_cpu_pct: 0.0,
                write_bytes: 0,
            });
            entry.write_bytes += wrote;
            entry.cpu_seconds += delta as f64 / self.ticks_per_s;
            entry.peak_cpu_pct = entry.peak_cpu_pct.max(pct);
            if self.comm != entry.name {
                // Kernel workers rename themselves with what they work on (+flush-8:0).
                entry.name.clone_from(&self.comm);
            }
            if is_flusher(&entry.name) {
                self.flusher_pct += pct;
            }
            if delta > 0 && top.is_none_or(|(_, p)| pct > p) {
                top = Some((pid, pct));
            }
        }
        self.forget_ended();
        let (pid, pct) = top?;
        Some((
            self.totals
                .get(&pid)
                .map(|h| h.name.clone())
                .unwrap_or_default(),
            pct,
        ))
    }

    /// Drops the counters of processes that have ended, and the totals of all but the
    /// busiest [`KEPT_ENDED`] of them.
    fn forget_ended(&mut self) {
        let alive = &self.alive;
        self.last_ticks.retain(|pid, _| alive.contains(pid));
        self.last_written.retain(|pid, _| alive.contains(pid));
        if self.totals.len() <= alive.len() + 2 * KEPT_ENDED {
            return;
        }
        let mut ended: Vec<(u32, f64)> = self
            .totals
            .iter()
            .filter(|(pid, _)| !alive.contains(pid))
            .map(|(pid, h)| (*pid, h.cpu_seconds))
            .collect();
        ended.sort_by(|a, b| b.1.total_cmp(&a.1));
        for (pid, _) in ended.into_iter().skip(KEPT_ENDED) {
            self.totals.remove(&pid);
        }
    }

    /// The flusher threads' CPU over the last scan's interval, percent of one core.
    pub fn flusher_pct(&self) -> f64 {
        self.flusher_pct
    }

    pub fn top(&self, n: usize) -> Vec<Hog> {
        let mut v: Vec<Hog> = self.totals.values().cloned().collect();
        v.sort_by(|a, b| b.cpu_seconds.total_cmp(&a.cpu_seconds));
        v.truncate(n);
        v
    }
}

/// The kernel's writeback workers name what they flush (`kworker/u8:2+flush-8:0`).
pub fn is_flusher(name: &str) -> bool {
    name.contains("flush")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hog(pid: u32, cpu_seconds: f64) -> Hog {
        Hog {
            pid,
            name: format!("p{pid}"),
            cpu_seconds,
            peak_cpu_pct: 0.0,
            write_bytes: 0,
        }
    }

    #[test]
    fn ended_processes_are_forgotten_but_the_busiest() {
        let mut t = HogTracker::default();
        // 10,000 processes came and went; 3 are alive.
        for pid in 1..=10_000 {
            t.last_ticks.insert(pid, 1);
            t.last_written.insert(pid, 1);
            t.totals.insert(pid, hog(pid, f64::from(pid)));
        }
        t.alive.extend([5, 6, 7]);
        t.forget_ended();
        assert_eq!(t.last_ticks.len(), 3);
        assert_eq!(t.last_written.len(), 3);
        assert_eq!(t.totals.len(), 3 + KEPT_ENDED);
        // The live ones stay whatever their CPU; the busiest of the ended ones stay.
        assert!([5, 6, 7, 10_000, 9_937]
            .iter()
            .all(|p| t.totals.contains_key(p)));
        assert!(!t.totals.contains_key(&9_936));
        assert_eq!(t.top(1)[0].pid, 10_000);
        // Few enough: nothing is dropped from the totals.
        let mut t = HogTracker::default();
        for pid in 1..=20 {
            t.totals.insert(pid, hog(pid, 1.0));
        }
        t.forget_ended();
        assert_eq!(t.totals.len(), 20);
    }
}
