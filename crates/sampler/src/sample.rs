//! One sample, and the rates derived between two samples.

use sinkrate_procparse::cpustat::CpuTimes;
use sinkrate_procparse::diskstats::DiskCounters;
use sinkrate_procparse::meminfo::MemInfo;
use sinkrate_procparse::pressure::Pressure;
use sinkrate_procparse::vmstat::VmStat;

/// The raw readings of one instant (cumulative counters as the kernel gives them).
#[derive(Debug, Clone, Copy, Default)]
pub struct Raw {
    pub t_ns: u64,
    pub mem: Option<MemInfoCopy>,
    pub vm: Option<VmStatCopy>,
    pub disk: Option<DiskCounters>,
    pub cpu: Option<CpuTimes>,
    pub psi_io: Option<Pressure>,
    pub psi_mem: Option<Pressure>,
}

/// MemInfo without heap data, so a sample is `Copy`.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemInfoCopy {
    pub available: Option<u64>,
    pub dirty: Option<u64>,
    pub writeback: Option<u64>,
    pub cached: Option<u64>,
}

impl From<&MemInfo> for MemInfoCopy {
    fn from(m: &MemInfo) -> Self {
        MemInfoCopy {
            available: m.mem_available_bytes.or(m.mem_free_bytes),
            dirty: m.dirty_bytes,
            writeback: m.writeback_bytes,
            cached: m.cached_bytes,
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct VmStatCopy {
    pub dirty_threshold_pages: Option<u64>,
    pub background_threshold_pages: Option<u64>,
}

impl From<&VmStat> for VmStatCopy {
    fn from(v: &VmStat) -> Self {
        VmStatCopy {
            dirty_threshold_pages: v.nr_dirty_threshold,
            background_threshold_pages: v.nr_dirty_background_threshold,
        }
    }
}

use sinkrate_model::timeline::Sample;

/// Builds a sample from the current readings and the previous ones (for rates).
pub fn derive(now: &Raw, prev: Option<&Raw>, page_size: u64) -> Sample {
    let mut s = Sample {
        t_ns: now.t_ns,
        ..Sample::default()
    };
    if let Some(m) = &now.mem {
        s.mem_available_bytes = m.available;
        s.cached_bytes = m.cached;
        s.dirty_bytes = m.dirty;
        s.writeback_bytes = m.writeback;
    }
    if let Some(v) = &now.vm {
        s.dirty_threshold_bytes = v.dirty_threshold_pages.map(|p| p * page_size);
        s.background_threshold_bytes = v.background_threshold_pages.map(|p| p * page_size);
        if let (Some(h), Some(b)) = (s.dirty_threshold_bytes, s.background_threshold_bytes) {
            s.freerun_ceiling_bytes = Some((h + b) / 2);
        }
    }
    if let (Some(c), Some(dw)) = (s.freerun_ceiling_bytes, s.dirty_writeback_bytes()) {
        s.throttled = dw > c;
    }
    let Some(prev) = prev else { return s };
    let dt_ns = now.t_ns.saturating_sub(prev.t_ns);
    if dt_ns == 0 {
        return s;
    }
    let dt_s = dt_ns as f64 / 1e9;
    if let (Some(a), Some(b)) = (&prev.disk, &now.disk) {
        s.disk_read_bytes_per_s = Some(b.read_bytes.saturating_sub(a.read_bytes) as f64 / dt_s);
        s.disk_write_bytes_per_s = Some(b.write_bytes.saturating_sub(a.write_bytes) as f64 / dt_s);
        let busy_ms = b.busy_ms.saturating_sub(a.busy_ms) as f64;
        s.disk_util_pct = Some((100.0 * busy_ms / (dt_s * 1000.0)).min(100.0));
        s.disk_in_flight = Some(b.in_flight);
        let ios = (b.reads + b.writes).saturating_sub(a.reads + a.writes);
        let ms = (b.read_ms + b.write_ms).saturating_sub(a.read_ms + a.write_ms);
        s.disk_await_ms = (ios > 0).then(|| ms as f64 / ios as f64);
    }
    if let (Some(a), Some(b)) = (&prev.cpu, &now.cpu) {
        let total = b.total().saturating_sub(a.total()) as f64;
        if total > 0.0 {
            let pct = |x: u64, y: u64| Some(100.0 * y.saturating_sub(x) as f64 / total);
            s.cpu_user_pct = pct(a.user + a.nice, b.user + b.nice);
            s.cpu_system_pct = pct(a.system, b.system);
            s.cpu_iowait_pct = pct(a.iowait, b.iowait);
            s.cpu_irq_pct = pct(a.irq + a.softirq, b.irq + b.softirq);
            s.cpu_idle_pct = pct(a.idle, b.idle);
        }
    }
    let stall = |a: Option<u64>, b: Option<u64>| -> Option<f64> {
        Some((100.0 * b?.saturating_sub(a?) as f64 / (dt_ns as f64 / 1000.0)).min(100.0))
    };
    if let (Some(a), Some(b)) = (&prev.psi_io, &now.psi_io) {
        s.psi_io_some_pct = stall(Some(a.some_total_us), Some(b.some_total_us));
        s.psi_io_full_pct = stall(a.full_total_us, b.full_total_us);
    }
    if let (Some(a), Some(b)) = (&prev.psi_mem, &now.psi_mem) {
        s.psi_memory_some_pct = stall(Some(a.some_total_us), Some(b.some_total_us));
        s.psi_memory_full_pct = stall(a.full_total_us, b.full_total_us);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(t_s: f64, dirty_mib: u64, written_bytes: u64, busy_ms: u64) -> Raw {
        Raw {
            t_ns: (t_s * 1e9) as u64,
            mem: Some(MemInfoCopy {
                available: Some(8 << 30),
                dirty: Some(dirty_mib << 20),
                writeback: Some(0),
                cached: Some(1 << 30),
            }),
            vm: Some(VmStatCopy {
                dirty_threshold_pages: Some(51_200), // 200 MiB
                background_threshold_pages: Some(25_600),
            }),
            disk: Some(DiskCounters {
                writes: written_bytes / 4096,
                write_bytes: written_bytes,
                write_ms: written_bytes / 4096,
                busy_ms,
                ..DiskCounters::default()
            }),
            cpu: None,
            psi_io: None,
            psi_mem: None,
        }
    }

    #[test]
    fn thresholds_ceiling_and_rates() {
        let a = raw(0.0, 10, 0, 0);
        let b = raw(0.5, 160, 50 << 20, 250);
        let s = derive(&b, Some(&a), 4096);
        assert_eq!(s.freerun_ceiling_bytes, Some(150 << 20));
        assert!(s.throttled, "160 MiB dirty is above the 150 MiB ceiling");
        assert_eq!(s.disk_write_bytes_per_s, Some(100.0 * (1 << 20) as f64));
        assert_eq!(s.disk_util_pct, Some(50.0));
        assert_eq!(s.disk_await_ms, Some(1.0));
        let first = derive(&a, None, 4096);
        assert!(!first.throttled);
        assert_eq!(first.disk_write_bytes_per_s, None);
        assert!((first.ceiling_pct().unwrap_or(0.0) - 100.0 * 10.0 / 150.0).abs() < 1e-9);
    }
}
