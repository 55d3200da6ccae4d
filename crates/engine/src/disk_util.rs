//! fio's `disk_util`: what each disk under the jobs' files did during the run, from
//! /proc/diskstats read at the start and at the end. As fio, a partition counts as its
//! whole disk (the one with a request queue), and a file on tmpfs has no disk.

use std::path::Path;
use std::time::Instant;

use sinkrate_model::{DiskUtil, TargetFacts};
use sinkrate_procparse::diskstats::{self, DiskCounters};

pub struct DiskWatch {
    disks: Vec<(String, DiskCounters)>,
    started: Instant,
}

/// The whole disk that `name` (a disk or a partition) is, by its sysfs entry.
fn whole_disk(name: &str) -> Option<String> {
    let entry = Path::new("/sys/class/block").join(name);
    if entry.join("partition").exists() {
        let real = std::fs::canonicalize(&entry).ok()?;
        return Some(real.parent()?.file_name()?.to_string_lossy().into_owned());
    }
    entry.exists().then(|| name.to_string())
}

fn read_all() -> Option<String> {
    std::fs::read_to_string("/proc/diskstats").ok()
}

impl DiskWatch {
    /// Starts counting for the disks under `targets` (none for targets without one).
    pub fn start(targets: &[TargetFacts]) -> DiskWatch {
        let mut names: Vec<String> = Vec::new();
        for t in targets {
            let name = t
                .device
                .as_deref()
                .filter(|d| d.starts_with("/dev/"))
                .and_then(|d| std::fs::canonicalize(d).ok())
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .and_then(|n| whole_disk(&n));
            if let Some(n) = name.filter(|n| !names.contains(n)) {
                names.push(n);
            }
        }
        let text = read_all().unwrap_or_default();
        DiskWatch {
            disks: names
                .into_iter()
                .filter_map(|n| diskstats::device(&text, &n).map(|c| (n, c)))
                .collect(),
            started: Instant::now(),
        }
    }

    /// The disks' counts since [`DiskWatch::start`].
    pub fn finish(self) -> Vec<DiskUtil> {
        let ms = self.started.elapsed().as_secs_f64() * 1000.0;
        let text = read_all().unwrap_or_default();
        self.disks
            .into_iter()
            .filter_map(|(name, before)| {
                let after = diskstats::device(&text, &name)?;
                Some(between(name, &before, &after, ms))
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
