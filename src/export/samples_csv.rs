//! `watch --csv FILE`: one row per sample, every figure with its unit in the column name.

use sinkrate_model::timeline::Sample;

pub fn csv_header() -> &'static str {
    "t_s,mem_available_bytes,cached_bytes,dirty_bytes,writeback_bytes,dirty_threshold_bytes,background_threshold_bytes,freerun_ceiling_bytes,throttled,disk_read_bytes_per_s,disk_write_bytes_per_s,disk_util_pct,disk_in_flight,disk_await_ms,cpu_user_pct,cpu_system_pct,cpu_iowait_pct,cpu_irq_pct,cpu_idle_pct,psi_io_some_pct,psi_io_full_pct,psi_memory_some_pct,psi_memory_full_pct"
}

pub fn csv_line(s: &Sample) -> String {
    fn u(v: Option<u64>) -> String {
        v.map(|x| x.to_string()).unwrap_or_default()
    }
    fn f(v: Option<f64>) -> String {
        v.map(|x| format!("{x:.3}")).unwrap_or_default()
    }
    [
        format!("{:.3}", s.t_ns as f64 / 1e9),
        u(s.mem_available_bytes),
        u(s.cached_bytes),
        u(s.dirty_bytes),
        u(s.writeback_bytes),
        u(s.dirty_threshold_bytes),
        u(s.background_threshold_bytes),
        u(s.freerun_ceiling_bytes),
        u8::from(s.throttled).to_string(),
        f(s.disk_read_bytes_per_s),
        f(s.disk_write_bytes_per_s),
        f(s.disk_util_pct),
        u(s.disk_in_flight),
        f(s.disk_await_ms),
        f(s.cpu_user_pct),
        f(s.cpu_system_pct),
        f(s.cpu_iowait_pct),
        f(s.cpu_irq_pct),
        f(s.cpu_idle_pct),
        f(s.psi_io_some_pct),
        f(s.psi_io_full_pct),
        f(s.psi_memory_some_pct),
        f(s.psi_memory_full_pct),
    ]
    .join(",")
}
