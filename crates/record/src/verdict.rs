//! The verdict: KEEPS UP, FALLING BEHIND or DROPS, with its cause. Pure: no I/O.

use serde::Serialize;

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    KeepsUp,
    FallingBehind,
    Drops,
}

impl Verdict {
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::KeepsUp => "KEEPS UP",
            Verdict::FallingBehind => "FALLING BEHIND",
            Verdict::Drops => "DROPS",
        }
    }
}

/// What the verdict is decided from.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    pub duration_s: f64,
    pub requested_bytes_per_s: f64,
    pub frames_dropped: u64,
    pub first_drop_s: Option<f64>,
    /// Share of the run the busiest writer spent in write/sync calls.
    pub writer_busy_fraction: f64,
    /// Buffered writes return once in the page cache, so the writer's busy share says
    /// nothing about the device: no headroom figure then.
    pub buffered: bool,
    /// Dirty + writeback at the start and the end of the run.
    pub unwritten_start_bytes: Option<u64>,
    pub unwritten_end_bytes: Option<u64>,
    pub freerun_ceiling_bytes: Option<u64>,
    pub first_throttled_s: Option<f64>,
    /// The devices' mean write rate over the run (diskstats).
    pub device_bytes_per_s: Option<f64>,
    /// Mean share of the run the devices were busy.
    pub device_busy_fraction: Option<f64>,
    /// The freerun ceiling a board with 1 GB of RAM would have with this host's dirty
    /// settings, for the "on a 1 GB board" estimate.
    pub board_1g_ceiling_bytes: Option<u64>,
    pub longest_stall: Option<(f64, f64)>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Outcome {
    pub verdict: Verdict,
    pub text: String,
    /// How far below the limit the run was: 1 / the busiest writer's busy share.
    pub headroom: Option<f64>,
    pub backlog_growth_bytes_per_s: Option<f64>,
    pub throttled_after_s: Option<f64>,
}

fn mb(v: f64) -> String {
    format!("{:.1} MB/s", v / 1e6)
}

pub fn decide(e: &Evidence) -> Outcome {
    if e.frames_dropped > 0 {
        let at = e.first_drop_s.unwrap_or(0.0);
        let cause = match (e.first_throttled_s, e.longest_stall) {
            (Some(t), _) if t <= at + 0.5 => format!(
                "the page cache reached the kernel's dirty limit at {t:.1} s and the writer was throttled"
            ),
            (_, Some((stall_at, ms))) if ms >= 50.0 => {
                format!("a write call stalled for {ms:.0} ms at {stall_at:.1} s while the capture pool filled")
            }
            _ => match e.device_bytes_per_s {
                Some(d) if d < e.requested_bytes_per_s => format!(
                    "the device drains {} while the streams produce {}",
                    mb(d),
                    mb(e.requested_bytes_per_s)
                ),
                _ => "the writer could not keep up with the capture rate".into(),
            },
        };
        return Outcome {
            verdict: Verdict::Drops,
            text: format!(
                "{} frames dropped, the first at {at:.2} s: {cause}",
                e.frames_dropped
            ),
            headroom: None,
            backlog_growth_bytes_per_s: None,
            throttled_after_s: e.first_throttled_s,
        };
    }
    if let (Some(start), Some(end)) = (e.unwritten_start_bytes, e.unwritten_end_bytes) {
        let growth = (end as f64 - start as f64) / e.duration_s.max(1e-9);
        let drains_slower = e
            .device_bytes_per_s
            .is_none_or(|d| d < e.requested_bytes_per_s * 0.98);
        if growth > (e.requested_bytes_per_s * 0.05).max(256.0 * 1024.0) && drains_slower {
            let after = e
                .freerun_ceiling_bytes
                .map(|c| (c.saturating_sub(end)) as f64 / growth);
            let text = format!(
                "no frame dropped yet, but dirty data grows {} in RAM: the device drains {} while the streams produce {}{}",
                mb(growth),
                e.device_bytes_per_s.map(mb).unwrap_or_else(|| "less".into()),
                mb(e.requested_bytes_per_s),
                after
                    .map(|a| format!("; at this rate writers will be throttled after {a:.0} s more on this host"))
                    .unwrap_or_default()
            ) + &e
                .board_1g_ceiling_bytes
                .map(|c| format!(", after {:.0} s on a board with 1 GB of RAM (--ram-limit 1G)", c as f64 / growth))
                .unwrap_or_default();
            let text = match e.device_busy_fraction {
                Some(b) if b < 0.5 => format!(
                    "{text}. The device was busy only {:.0}% of the time: the kernel defers writeback until dirty data passes the background threshold or ages past dirty_expire_centisecs, so the backlog is the kernel's choice as much as the device's limit (a longer run, or lower dirty_background_bytes / dirty_expire_centisecs, shows which)",
                    100.0 * b
                ),
                _ => text,
            };
            return Outcome {
                verdict: Verdict::FallingBehind,
                text,
                headroom: None,
                backlog_growth_bytes_per_s: Some(growth),
                throttled_after_s: after,
            };
        }
    }
    let headroom =
        (!e.buffered && e.writer_busy_fraction > 0.0).then(|| 1.0 / e.writer_busy_fraction);
    let text = match headroom {
        Some(h) => format!(
            "no frame dropped; the busiest writer spent {:.0}% of the time writing ({h:.1}x headroom)",
            100.0 * e.writer_busy_fraction
        ),
        None => "no frame dropped, and the device drained what the page cache took (buffered writes: the headroom needs the device's raw rate, which direct or dsync writes measure)".to_string(),
    };
    Outcome {
        verdict: Verdict::KeepsUp,
        text,
        headroom,
        backlog_growth_bytes_per_s: None,
        throttled_after_s: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Evidence {
        Evidence {
            duration_s: 10.0,
            requested_bytes_per_s: 3e6,
            writer_busy_fraction: 0.25,
            unwritten_start_bytes: Some(1 << 20),
            unwritten_end_bytes: Some(2 << 20),
            freerun_ceiling_bytes: Some(1 << 30),
            device_bytes_per_s: Some(3e6),
            ..Evidence::default()
        }
    }

    #[test]
    fn keeps_up_with_headroom() {
        let o = decide(&base());
        assert_eq!(o.verdict, Verdict::KeepsUp);
        assert_eq!(o.headroom, Some(4.0));
    }

    #[test]
    fn falling_behind_when_the_backlog_grows() {
        let e = Evidence {
            unwritten_end_bytes: Some((1 << 20) + 10_000_000),
            device_bytes_per_s: Some(2e6),
            ..base()
        };
        let o = decide(&e);
        assert_eq!(o.verdict, Verdict::FallingBehind);
        assert!(o
            .backlog_growth_bytes_per_s
            .is_some_and(|g| (g - 1e6).abs() < 1.0));
        assert!(o.throttled_after_s.is_some_and(|t| t > 1000.0));
    }

    #[test]
    fn drops_name_their_first_cause() {
        let e = Evidence {
            frames_dropped: 12,
            first_drop_s: Some(3.0),
            first_throttled_s: Some(2.8),
            ..base()
        };
        let o = decide(&e);
        assert_eq!(o.verdict, Verdict::Drops);
        assert!(o.text.contains("throttled"), "{}", o.text);
        let e = Evidence {
            frames_dropped: 1,
            first_drop_s: Some(1.0),
            device_bytes_per_s: Some(1e6),
            ..base()
        };
        assert!(decide(&e).text.contains("drains 1.0 MB/s"));
    }
}
