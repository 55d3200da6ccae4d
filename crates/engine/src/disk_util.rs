//! fio's `disk_util`: what each disk under the jobs' files did during the run, from
//! /proc/diskstats read at the start and at the end. As fio, a partition counts as its
//! whole disk (the one with a request queue), and a file on tmpfs has no disk.

use std::time::Instant;

use sinkrate_model::{DiskUtil, TargetFacts};
use sinkrate_procparse::diskstats::DiskCounters;
use sinkrate_sys::root::SysRoot;
use sinkrate_sys::{device, disks};

pub struct DiskWatch {
    disks: Vec<(String, DiskCounters)>,
    started: Instant,
}

/// The whole disk under a target's device (a partition's disk), from the system layer's
/// sysfs walk.
fn whole_disk(t: &TargetFacts) -> Option<String> {
    let dev = std::fs::canonicalize(t.device.as_deref()?).ok()?;
    let root = SysRoot::live();
    let sys = device::sysfs_dir(&root, 0, 0, &dev.to_string_lossy())?;
    Some(device::read(&root, &sys).disk)
}

impl DiskWatch {
    /// Starts counting for the disks under `targets` (none for targets without one).
    pub fn start(targets: &[TargetFacts]) -> DiskWatch {
        let mut names: Vec<String> = Vec::new();
        for t in targets {
            let name = whole_disk(t);
            if let Some(n) = name.filter(|n| !names.contains(n)) {
                names.push(n);
            }
        }
        DiskWatch {
            disks: disks::counters(&SysRoot::live(), &names),
            started: Instant::now(),
        }
    }

    /// The disks' counts since [`DiskWatch::start`] (a status report's, and the end's).
    pub fn so_far(&self) -> Vec<DiskUtil> {
        let ms = self.started.elapsed().as_secs_f64() * 1000.0;
        let names: Vec<String> = self.disks.iter().map(|(n, _)| n.clone()).collect();
        let now = disks::counters(&SysRoot::live(), &names);
        self.disks
            .iter()
            .filter_map(|(name, before)| {
                let (_, after) = now.iter().find(|(n, _)| n == name)?;
                Some(between(name.clone(), before, after, ms))
            })
            .collect()
    }
}

fn between(name: String, a: &DiskCounters, b: &DiskCounters, ms: f64) -> DiskUtil {
    let busy = b.busy_ms.saturating_sub(a.busy_ms) as f64;
    DiskUtil {
        name,
        read_ios: b.reads.saturating_sub(a.reads),
        write_ios: b.writes.saturating_sub(a.writes),
        read_merges: b.read_merges.saturating_sub(a.read_merges),
        write_merges: b.write_merges.saturating_sub(a.write_merges),
        read_ticks: b.read_ms.saturating_sub(a.read_ms),
        write_ticks: b.write_ms.saturating_sub(a.write_ms),
        in_queue: b.weighted_ms.saturating_sub(a.weighted_ms),
        util: if ms > 0.0 {
            (100.0 * busy / ms).min(100.0)
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_differences_and_util_the_busy_share() {
        let a = DiskCounters {
            reads: 1,
            writes: 10,
            write_merges: 2,
            write_ms: 100,
            busy_ms: 1000,
            weighted_ms: 50,
            ..DiskCounters::default()
        };
        let b = DiskCounters {
            reads: 1,
            writes: 110,
            write_merges: 7,
            write_ms: 400,
            busy_ms: 1500,
            weighted_ms: 450,
            ..DiskCounters::default()
        };
        let d = between("sda".into(), &a, &b, 2000.0);
        assert_eq!((d.read_ios, d.write_ios, d.write_merges), (0, 100, 5));
        assert_eq!((d.write_ticks, d.in_queue), (300, 400));
        assert!((d.util - 25.0).abs() < 1e-9);
    }
}
