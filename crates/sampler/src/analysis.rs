//! From a timeline to the summary a user acts on. Pure: no I/O.

use sinkrate_model::timeline::Sample;

use sinkrate_model::timeline::{Recommendation, Summary};
use sinkrate_procparse::vmsettings::VmSettings;

/// Headroom asked of the recommendation: room for 30% more dirty data than the peak seen.
const HEADROOM: f64 = 1.3;
/// The smallest dirty limit advised: below it, a device's ordinary pauses (an SD card's
/// garbage collection) throttle a writer almost at once.
const MIN_DIRTY_BYTES: u64 = 32 << 20;
/// Less dirty data than this at the peak means nothing much was written: no recording to
/// size limits from.
const MIN_PEAK_BYTES: u64 = 16 << 20;
/// A writeback cycle when the settings are unknown: the kernel's defaults, 30 s + 5 s.
const DEFAULT_CYCLE_S: f64 = 35.0;

fn mib_ceil(bytes: f64) -> u64 {
    ((bytes / 1048576.0).ceil() as u64).max(1) << 20
}

fn human(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.2} GB", bytes as f64 / 1e9)
    } else {
        format!("{:.0} MB", bytes as f64 / 1e6)
    }
}

pub fn analyse(timeline: &[Sample], settings: VmSettings) -> Summary {
    let mut s = Summary {
        samples: timeline.len() as u64,
        settings,
        ..Summary::default()
    };
    let (Some(first), Some(last)) = (timeline.first(), timeline.last()) else {
        return s;
    };
    s.duration_s = (last.t_ns.saturating_sub(first.t_ns)) as f64 / 1e9;
    let mut busy_sum = 0.0;
    let mut busy_n = 0u64;
    for (i, x) in timeline.iter().enumerate() {
        if let Some(a) = x.mem_available_bytes {
            s.min_mem_available_bytes = Some(s.min_mem_available_bytes.map_or(a, |m| m.min(a)));
        }
        if let Some(dw) = x.dirty_writeback_bytes() {
            if s.peak_dirty_writeback_bytes.is_none_or(|p| dw > p) {
                s.peak_dirty_writeback_bytes = Some(dw);
                s.freerun_ceiling_bytes = x.freerun_ceiling_bytes;
                s.dirty_threshold_bytes = x.dirty_threshold_bytes;
                s.peak_ceiling_pct = x.ceiling_pct();
            }
        }
        if x.throttled {
            s.throttled_samples += 1;
            if i > 0 {
                s.throttled_seconds += x.t_ns.saturating_sub(timeline[i - 1].t_ns) as f64 / 1e9;
            }
            if s.first_throttled_at_s.is_none() {
                s.first_throttled_at_s = Some(x.t_ns.saturating_sub(first.t_ns) as f64 / 1e9);
            }
        }
        if let Some(w) = x.disk_write_bytes_per_s {
            s.device_write_bytes_per_s_max =
                Some(s.device_write_bytes_per_s_max.map_or(w, |m| m.max(w)));
            if x.disk_util_pct.is_some_and(|u| u >= 50.0) {
                busy_sum += w;
                busy_n += 1;
            }
        }
    }
    if busy_n > 0 {
        s.device_write_bytes_per_s_busy_mean = Some(busy_sum / busy_n as f64);
    }
    if let (Some(peak), Some(avail), Some(r), Some(br)) = (
        s.peak_dirty_writeback_bytes,
        s.min_mem_available_bytes,
        settings.dirty_ratio,
        settings.dirty_background_ratio,
    ) {
        if settings.dirty_bytes.unwrap_or(0) == 0
            && settings.dirty_background_bytes.unwrap_or(0) == 0
        {
            s.seed000_rule_held = Some((peak as f64) <= (r + br) as f64 / 200.0 * avail as f64);
        }
    }
    match recommend(&s) {
        Ok(r) => s.recommendation = r,
        Err(why) => s.recommendation_withheld = Some(why),
    }
    s
}

/// Why the timeline is too thin to size limits from, if it is: throttling is evidence at
/// any length; otherwise the watch must span one writeback cycle (dirty_expire + the
/// writeback interval) and see a recording's worth of dirty data.
fn too_little_data(s: &Summary, peak: u64) -> Option<String> {
    if s.throttled_samples > 0 {
        return None;
    }
    let cycle_s = match (
        s.settings.dirty_expire_centisecs,
        s.settings.dirty_writeback_centisecs,
    ) {
        (Some(e), Some(w)) => (e + w) as f64 / 100.0,
        _ => DEFAULT_CYCLE_S,
    };
    if s.duration_s < cycle_s {
        return Some(format!(
            "too little data to size the dirty limits: watched {:.0} s, less than one writeback cycle ({cycle_s:.0} s: dirty_expire + the writeback interval); watch a whole recording, e.g. sinkrate watch --duration {:.0}s -- ./my_recorder",
            s.duration_s,
            (cycle_s * 2.0).max(60.0)
        ));
    }
    if peak < MIN_PEAK_BYTES {
        return Some(format!(
            "too little data to size the dirty limits: dirty + writeback peaked at {} in {:.0} s, so nothing much was being written; watch while the recorder runs",
            human(peak),
            s.duration_s
        ));
    }
    None
}

fn recommend(s: &Summary) -> Result<Option<Recommendation>, String> {
    let Some(peak) = s.peak_dirty_writeback_bytes else {
        return Ok(None);
    };
    if let Some(why) = too_little_data(s, peak) {
        return Err(why);
    }
    // The freerun ceiling is midway between the two thresholds; with the background limit at
    // half the hard limit it is 3/4 of the hard limit.
    let dirty_bytes = mib_ceil(peak as f64 * HEADROOM / 0.75).max(MIN_DIRTY_BYTES);
    let background = dirty_bytes / 2;
    let rate = s
        .device_write_bytes_per_s_busy_mean
        .or(s.device_write_bytes_per_s_max)
        .filter(|r| *r > 0.0);
    let at_risk_seconds = rate.map(|r| dirty_bytes as f64 / r);
    let ratio = |b: u64| {
        s.min_mem_available_bytes
            .filter(|a| *a > 0)
            .map(|a| ((100 * b).div_ceil(a)).max(1))
    };
    let cost = match at_risk_seconds {
        Some(t) => format!(
            "up to {} lost on a power cut = {:.1} s of writes at {:.1} MB/s",
            human(dirty_bytes),
            t,
            rate.unwrap_or(0.0) / 1e6
        ),
        None => format!("up to {} lost on a power cut", human(dirty_bytes)),
    };
    let text = if s.throttled_samples > 0 {
        format!(
            "writers were throttled for {:.1} s (first after {:.1} s): dirty + writeback peaked at {}. dirty_bytes >= {} would have kept them below the kernel's ceiling ({cost}); if the device drains slower than the writers fill the cache, a larger limit only postpones the throttling.",
            s.throttled_seconds,
            s.first_throttled_at_s.unwrap_or(0.0),
            human(peak),
            human(dirty_bytes)
        )
    } else {
        let now = s
            .dirty_threshold_bytes
            .map(|t| format!(" (the kernel's limit is now {})", human(t)))
            .unwrap_or_default();
        format!(
            "never throttled (peak {} = {:.0}% of the freerun ceiling). Limits down to dirty_bytes = {}{now} would still leave 30% headroom over this peak; lower limits keep less data at risk ({cost}) and make writeback smoother.",
            human(peak),
            s.peak_ceiling_pct.unwrap_or(0.0),
            human(dirty_bytes)
        )
    };
    Ok(Some(Recommendation {
        text,
        dirty_bytes,
        dirty_background_bytes: background,
        dirty_ratio: ratio(dirty_bytes),
        dirty_background_ratio: ratio(background),
        at_risk_bytes: dirty_bytes,
        at_risk_seconds,
        commands: vec![
            format!(
                "sysctl -w vm.dirty_bytes={dirty_bytes} vm.dirty_background_bytes={background}"
            ),
            sinkrate_sys::sysctl_conf::merge_command(
                sinkrate_sys::sysctl_conf::FILE,
                &[
                    ("vm.dirty_bytes", dirty_bytes.to_string()),
                    ("vm.dirty_background_bytes", background.to_string()),
                ],
            ),
        ],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t_s: f64, dirty_mib: u64, ceiling_mib: u64, write_mb_s: f64) -> Sample {
        let dirty = dirty_mib << 20;
        let ceiling = ceiling_mib << 20;
        Sample {
            t_ns: (t_s * 1e9) as u64,
            mem_available_bytes: Some((1000 - dirty_mib) << 20),
            dirty_bytes: Some(dirty),
            writeback_bytes: Some(0),
            freerun_ceiling_bytes: Some(ceiling),
            throttled: dirty > ceiling,
            disk_write_bytes_per_s: Some(write_mb_s * 1e6),
            disk_util_pct: Some(100.0),
            ..Sample::default()
        }
    }

    #[test]
    fn throttling_is_counted_and_a_limit_recommended() {
        let t: Vec<Sample> = (0..=10)
            .map(|i| sample(i as f64 * 0.5, i * 20, 150, 10.0))
            .collect();
        let settings = VmSettings {
            dirty_ratio: Some(20),
            dirty_background_ratio: Some(10),
            dirty_bytes: Some(0),
            dirty_background_bytes: Some(0),
            ..VmSettings::default()
        };
        let s = analyse(&t, settings);
        assert_eq!(s.samples, 11);
        assert_eq!(s.peak_dirty_writeback_bytes, Some(200 << 20));
        assert_eq!(s.min_mem_available_bytes, Some(800 << 20));
        // 160, 180 and 200 MiB are above the 150 MiB ceiling.
        assert_eq!(s.throttled_samples, 3);
        assert!((s.throttled_seconds - 1.5).abs() < 1e-9);
        assert_eq!(s.first_throttled_at_s, Some(4.0));
        let r = s.recommendation.expect("recommendation");
        // 200 MiB * 1.3 / 0.75 = 346.7 MiB, rounded up to whole MiB.
        assert_eq!(r.dirty_bytes, 347 << 20);
        assert_eq!(r.dirty_background_bytes, r.dirty_bytes / 2);
        assert_eq!(r.dirty_ratio, Some(44));
        assert!(r
            .at_risk_seconds
            .is_some_and(|t| (t - 347.0 * 1048576.0 / 10e6).abs() < 1e-6));
        assert!(r.text.contains("throttled for 1.5 s"));
        assert_eq!(s.seed000_rule_held, Some(false));
    }

    #[test]
    fn calm_runs_and_empty_timelines() {
        let defaults = VmSettings {
            dirty_expire_centisecs: Some(3000),
            dirty_writeback_centisecs: Some(500),
            ..VmSettings::default()
        };
        // 4 s: shorter than one writeback cycle, so nothing is advised.
        let t: Vec<Sample> = (0..5).map(|i| sample(i as f64, 10, 150, 0.0)).collect();
        let s = analyse(&t, defaults);
        assert_eq!(s.throttled_samples, 0);
        assert!(s.recommendation.is_none());
        assert!(s
            .recommendation_withheld
            .as_deref()
            .is_some_and(|w| w.contains("less than one writeback cycle (35 s")));
        // 40 s of an idle host: too little written to size limits from.
        let idle: Vec<Sample> = (0..41).map(|i| sample(i as f64, 2, 150, 0.0)).collect();
        let s = analyse(&idle, defaults);
        assert!(s.recommendation.is_none());
        assert!(s
            .recommendation_withheld
            .as_deref()
            .is_some_and(|w| w.contains("nothing much was being written")));
        // 40 s of a recording peaking at 17 MiB: advised, and no lower than the floor.
        let rec: Vec<Sample> = (0..41).map(|i| sample(i as f64, 17, 150, 3.0)).collect();
        let s = analyse(&rec, defaults);
        let r = s.recommendation.expect("advised");
        assert!(r.text.starts_with("never throttled"), "{}", r.text);
        assert_eq!(r.dirty_bytes, MIN_DIRTY_BYTES);
        assert!(r.commands[1].contains(">> /etc/sysctl.d/60-sinkrate.conf"));
        assert!(!r.commands[1].contains(" > "), "{}", r.commands[1]);
        let empty = analyse(&[], VmSettings::default());
        assert_eq!(empty.samples, 0);
        assert!(empty.recommendation.is_none());
    }
}
