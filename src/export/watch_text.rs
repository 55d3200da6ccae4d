//! `sinkrate watch`'s summary: memory, the page cache against the kernel's ceiling,
//! throttling, device writes, the vm settings, the CPU hogs and the recommendation.

use std::time::Duration;

use anyhow::Result;
use sinkrate_model::timeline::Summary;
use sinkrate_model::watch::WatchReport;

use super::Exporter;

const MB: f64 = 1e6;

pub fn gb(b: Option<u64>) -> String {
    b.map(|v| format!("{:.2} GB", v as f64 / 1e9))
        .unwrap_or_else(|| "-".into())
}

pub struct WatchText;

impl Exporter<WatchReport> for WatchText {
    fn export(&self, r: &WatchReport) -> Result<Vec<u8>> {
        let mut t = summary_text(
            &r.summary,
            r.config.interval,
            &r.config.devices,
            &r.hogs,
            r.command_exit_code,
        );
        t.push_str(&slow_calls_text(r));
        Ok(t.into_bytes())
    }
}

/// The watched program's slow write calls, from the kernel's events: how many, the longest
/// explained, all of them by cause; or why they were not traced.
fn slow_calls_text(r: &WatchReport) -> String {
    if r.config.pids.is_empty() && r.config.command.is_empty() {
        return String::new();
    }
    let k = &r.kernel;
    if let Some(why) = &k.inferred_because {
        return format!("the program's write calls were not traced (the kernel's events): {why}\n");
    }
    let threshold_ms = r.config.stall_threshold.as_secs_f64() * 1e3;
    let mut t = format!(
        "\nthe program's write calls (the kernel's events): {} in all, {} over {threshold_ms:.0} ms\n",
        r.write_calls,
        r.slow_calls.len() as u64 + r.slow_calls_not_listed
    );
    if let Some(w) = sinkrate_model::watch::SlowCall::longest(&r.slow_calls) {
        t.push_str(&format!(
            "the longest: {} (tid {}) {}() at {:.1} s took {:.0} ms: {}\n",
            w.thread,
            w.tid,
            w.call,
            w.at_s,
            w.duration_ms,
            w.causes.evidence()
        ));
        t.push_str(&format!(
            "all {} by cause: {}\n",
            r.slow_calls.len() as u64 + r.slow_calls_not_listed,
            k.stall_causes_text()
        ));
    }
    if r.slow_calls_not_listed > 0 {
        t.push_str(&format!(
            "{} more not listed (the list holds the first {})\n",
            r.slow_calls_not_listed,
            r.slow_calls.len()
        ));
    }
    for line in [super::not_explained_line(k), super::lost_events_line(k)]
        .into_iter()
        .flatten()
    {
        t.push_str(&line);
        t.push('\n');
    }
    t
}

pub fn summary_text(
    sum: &Summary,
    interval: Duration,
    devices: &[String],
    hogs: &[sinkrate_model::timeline::Hog],
    exit: Option<i32>,
) -> String {
    let mut t = String::new();
    t.push_str(&format!(
        "watched {:.1} s, {} samples every {} ms (disks: {})\n",
        sum.duration_s,
        sum.samples,
        interval.as_millis(),
        if devices.is_empty() {
            "none".to_string()
        } else {
            devices.join(", ")
        }
    ));
    if let Some(code) = exit {
        t.push_str(&format!("command exit code        {code}\n"));
    }
    t.push_str(&format!(
        "least MemAvailable       {}\n",
        gb(sum.min_mem_available_bytes)
    ));
    t.push_str(&format!(
        "peak dirty + writeback   {}{}\n",
        gb(sum.peak_dirty_writeback_bytes),
        match (sum.peak_ceiling_pct, sum.freerun_ceiling_bytes) {
            (Some(p), Some(c)) => format!(
                " = {p:.0}% of the kernel's freerun ceiling ({})",
                gb(Some(c))
            ),
            _ => String::new(),
        }
    ));
    if sum.throttled_samples == 0 {
        t.push_str("writers throttled        never\n");
    } else {
        t.push_str(&format!(
            "writers throttled        {} samples, {:.2} s, first after {:.1} s\n",
            sum.throttled_samples,
            sum.throttled_seconds,
            sum.first_throttled_at_s.unwrap_or(0.0)
        ));
    }
    if let Some(max) = sum.device_write_bytes_per_s_max {
        t.push_str(&format!(
            "device writes            {:.1} MB/s max{}\n",
            max / MB,
            sum.device_write_bytes_per_s_busy_mean
                .map(|m| format!(", {:.1} MB/s while busy", m / MB))
                .unwrap_or_default()
        ));
    }
    let st = &sum.settings;
    let limit = |bytes: Option<u64>, ratio: Option<u64>| match (bytes, ratio) {
        (Some(b), _) if b > 0 => format!("{b} bytes"),
        (_, Some(r)) => format!("{r}%"),
        _ => "?".into(),
    };
    t.push_str(&format!(
        "vm settings              dirty {} / background {}, expire {} cs, writeback every {} cs\n",
        limit(st.dirty_bytes, st.dirty_ratio),
        limit(st.dirty_background_bytes, st.dirty_background_ratio),
        st.dirty_expire_centisecs
            .map(|v| v.to_string())
            .unwrap_or_else(|| "?".into()),
        st.dirty_writeback_centisecs
            .map(|v| v.to_string())
            .unwrap_or_else(|| "?".into()),
    ));
    if let Some(held) = sum.seed000_rule_held {
        t.push_str(&format!(
            "seed 000's rule          {}\n",
            if held { "held (peak <= (dirty_ratio + dirty_background_ratio)/200 of MemAvailable)" } else { "broken: the page cache passed (dirty_ratio + dirty_background_ratio)/200 of MemAvailable" }
        ));
    }
    if !hogs.is_empty() {
        let list: Vec<String> = hogs
            .iter()
            .take(3)
            .map(|h| {
                format!(
                    "{} {:.1} s (peak {:.0}%)",
                    h.name, h.cpu_seconds, h.peak_cpu_pct
                )
            })
            .collect();
        t.push_str(&format!("top CPU                  {}\n", list.join(", ")));
    }
    if let Some(r) = &sum.recommendation {
        t.push_str(&format!("recommendation           {}\n", r.text));
        for c in &r.commands {
            t.push_str(&format!("  {c}\n"));
        }
    } else if let Some(why) = &sum.recommendation_withheld {
        t.push_str(&format!("recommendation           none: {why}\n"));
    }
    t
}
