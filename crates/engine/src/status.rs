//! The live status line, modelled on fio's:
//! `Jobs: 1 (f=1): [W(1)][45.0%][w=123MiB/s][w=31.5k IOPS][eta 00m:05s]`.

use std::sync::atomic::Ordering;

use crate::progress::{JobProgress, Phase};

pub struct JobView<'a> {
    pub progress: &'a JobProgress,
    pub reads: bool,
    pub writes: bool,
    /// Expected measured duration in ns for time-bound jobs.
    pub runtime_ns: Option<u64>,
    /// Expected bytes for size-bound jobs.
    pub total_bytes: u64,
    /// Stonewall segment: segments run one after another, jobs within one together.
    pub segment: usize,
}

/// Rates since the previous call; the caller keeps `prev` between calls.
pub fn status_line(jobs: &[JobView<'_>], now_ns: u64, prev: &mut Vec<[u64; 7]>) -> String {
    let mut letters = String::new();
    let mut running = 0;
    let (mut rbw, mut wbw, mut tbw, mut riops, mut wiops, mut tiops) =
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let mut fraction_sum = 0.0;
    let mut eta_by_segment: Vec<u64> = Vec::new();
    // The first call's rates are since the run's clock started (a start at `now_ns` made
    // them bytes over a nanosecond: PiB/s on the first line).
    prev.resize(jobs.len(), [0; 7]);
    for (j, p) in jobs.iter().zip(prev.iter_mut()) {
        let phase = j.progress.phase();
        letters.push(match phase {
            Phase::Waiting => 'P',
            Phase::Preparing => 'p',
            Phase::Ramping => '/',
            Phase::Flushing => 'F',
            Phase::Verifying => 'V',
            Phase::Done => '_',
            Phase::Running => match (j.reads, j.writes) {
                (true, true) => 'M',
                (false, true) => 'W',
                (true, false) => 'R',
                // A trim-only job, as fio's 'D' (discard).
                (false, false) => 'D',
            },
        });
        if matches!(
            phase,
            Phase::Running | Phase::Ramping | Phase::Flushing | Phase::Verifying | Phase::Preparing
        ) {
            running += 1;
        }
        let rb = j.progress.read_bytes.load(Ordering::Relaxed);
        let wb = j.progress.write_bytes.load(Ordering::Relaxed);
        let ri = j.progress.read_ios.load(Ordering::Relaxed);
        let wi = j.progress.write_ios.load(Ordering::Relaxed);
        let tb = j.progress.trim_bytes.load(Ordering::Relaxed);
        let ti = j.progress.trim_ios.load(Ordering::Relaxed);
        let dt = now_ns.saturating_sub(p[6]).max(1) as f64 / 1e9;
        rbw += rb.saturating_sub(p[0]) as f64 / dt;
        wbw += wb.saturating_sub(p[1]) as f64 / dt;
        tbw += tb.saturating_sub(p[2]) as f64 / dt;
        riops += ri.saturating_sub(p[3]) as f64 / dt;
        wiops += wi.saturating_sub(p[4]) as f64 / dt;
        tiops += ti.saturating_sub(p[5]) as f64 / dt;
        *p = [rb, wb, tb, ri, wi, ti, now_ns];
        let done_bytes = rb + wb + tb;
        let started = j.progress.started_ns.load(Ordering::Relaxed);
        let elapsed = if started > 0 {
            now_ns.saturating_sub(started)
        } else {
            0
        };
        let (fraction, remaining) = match (phase, j.runtime_ns) {
            (Phase::Done, _) => (1.0, 0),
            (Phase::Waiting, Some(rt)) => (0.0, rt),
            (_, Some(rt)) if rt > 0 => (
                (elapsed as f64 / rt as f64).min(1.0),
                rt.saturating_sub(elapsed),
            ),
            _ => {
                let done = done_bytes as f64 / j.total_bytes.max(1) as f64;
                let rate = done_bytes as f64 / (elapsed.max(1) as f64);
                let left = if rate > 0.0 {
                    ((j.total_bytes as f64 - done_bytes as f64).max(0.0) / rate) as u64
                } else {
                    0
                };
                (done.min(1.0), left)
            }
        };
        fraction_sum += fraction;
        if eta_by_segment.len() <= j.segment {
            eta_by_segment.resize(j.segment + 1, 0);
        }
        eta_by_segment[j.segment] = eta_by_segment[j.segment].max(remaining);
    }
    let eta_ns: u64 = eta_by_segment.iter().sum();
    let pct = 100.0 * fraction_sum / jobs.len().max(1) as f64;
    let mut line = format!("Jobs: {running} (f={running}): [{letters}][{pct:.1}%]");
    let mut rates = Vec::new();
    if rbw > 0.0 {
        rates.push(format!("r={}", sinkrate_units::fio::bytes_per_s_iec(rbw)));
    }
    if wbw > 0.0 {
        rates.push(format!("w={}", sinkrate_units::fio::bytes_per_s_iec(wbw)));
    }
    if tbw > 0.0 {
        rates.push(format!("t={}", sinkrate_units::fio::bytes_per_s_iec(tbw)));
    }
    if !rates.is_empty() {
        line.push_str(&format!("[{}]", rates.join(",")));
        let mut iops = Vec::new();
        if riops > 0.0 {
            iops.push(format!("r={}", sinkrate_units::fio::count_si(riops)));
        }
        if wiops > 0.0 {
            iops.push(format!("w={}", sinkrate_units::fio::count_si(wiops)));
        }
        if tiops > 0.0 {
            iops.push(format!("t={}", sinkrate_units::fio::count_si(tiops)));
        }
        line.push_str(&format!("[{} IOPS]", iops.join(",")));
    }
    let eta_s = eta_ns / 1_000_000_000;
    line.push_str(&format!("[eta {:02}m:{:02}s]", eta_s / 60, eta_s % 60));
    line
}
