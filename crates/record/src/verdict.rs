//! The verdict: KEEPS UP, FALLING BEHIND, DROPS FRAMES or FAILED, with its cause. Pure: no
//! I/O. Every rule here is stated in the README in the words the tool prints.

use serde::{Deserialize, Serialize};
use sinkrate_model::Verdict;

/// What the verdict is decided from.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    pub duration_s: f64,
    pub requested_bytes_per_s: f64,
    /// The first error that stopped a stream: the run failed.
    pub error: Option<String>,
    pub frames_dropped: u64,
    pub first_drop_s: Option<f64>,
    /// Share of the run the busiest writer spent in write/sync calls.
    pub writer_busy_fraction: f64,
    /// Buffered writes return once in the page cache, so the writer's busy share says
    /// nothing about the device: no headroom figure from it then.
    pub buffered: bool,
    /// Dirty + writeback at the start and the end of the run.
    pub unwritten_start_bytes: Option<u64>,
    pub unwritten_end_bytes: Option<u64>,
    pub freerun_ceiling_bytes: Option<u64>,
    /// The kernel's background threshold at the end of the run: below it, the flusher
    /// writes only data older than dirty_expire.
    pub background_threshold_bytes: Option<u64>,
    /// dirty_expire_centisecs + dirty_writeback_centisecs, in seconds: the most a page can
    /// wait in RAM below the background threshold.
    pub expire_and_interval_s: Option<f64>,
    pub first_throttled_s: Option<f64>,
    /// The devices' mean write rate over the run (diskstats).
    pub device_bytes_per_s: Option<f64>,
    /// Mean share of the run the devices were busy.
    pub device_busy_fraction: Option<f64>,
    /// Bytes the devices wrote per second of their busy time (diskstats' sectors written
    /// over io_ticks): how fast the device drains when it writes at all.
    pub device_rate_while_busy_bytes_per_s: Option<f64>,
    /// A sustained write rate measured with the page cache out of the way (check's probe),
    /// when one was measured before this run.
    pub sustained_bytes_per_s: Option<f64>,
    /// The freerun ceiling a board with 1 GB of RAM would have with this host's dirty
    /// settings, for the "on a 1 GB board" estimate.
    pub board_1g_ceiling_bytes: Option<u64>,
    pub longest_stall: Option<(f64, f64)>,
    /// Set when the directory has no storage device behind it ("/dev/shm is on tmpfs"):
    /// the run measured memory, and no keeps-up verdict or headroom can come from it.
    pub not_storage: Option<String>,
    /// The fewest frames any stream was offered: below [`FRAMES_TO_JUDGE`], too few to judge.
    pub fewest_frames: u64,
}

/// Frames a stream needs before a verdict on keeping up means anything.
pub const FRAMES_TO_JUDGE: u64 = 10;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Outcome {
    pub verdict: Verdict,
    pub text: String,
    /// How far below the limit the run was: the sustained rate over the stream's, or
    /// 1 / the busiest writer's busy share for writes that reach the device.
    pub headroom: Option<f64>,
    pub backlog_growth_bytes_per_s: Option<f64>,
    pub throttled_after_s: Option<f64>,
    /// Dirty data grew only because the kernel defers writeback, not because the device
    /// falls short.
    #[serde(default)]
    pub deferred_writeback: bool,
}

fn mb(v: f64) -> String {
    sinkrate_units::product::mb_per_s(v)
}

/// A device that drains at least this many times the stream, when it writes, has room.
const DRAIN_MARGIN: f64 = 1.2;

impl Evidence {
    /// The best measure of what the device can drain: the sustained rate when one was
    /// measured, else the rate it wrote at while busy during this run.
    fn capacity(&self) -> Option<f64> {
        self.sustained_bytes_per_s
            .or(self.device_rate_while_busy_bytes_per_s)
    }

    /// Whether a backlog is the kernel deferring writeback: the device sat mostly idle, can
    /// drain well above the stream, everything in RAM is below the background threshold,
    /// and no more is waiting than the stream produced in the time a page may wait
    /// (dirty_expire + the writeback interval), so nothing older than that is left behind.
    fn deferred(&self, end_backlog: u64) -> bool {
        let idle = self.device_busy_fraction.is_some_and(|b| b < 0.5);
        let drains = self
            .capacity()
            .is_some_and(|c| c >= DRAIN_MARGIN * self.requested_bytes_per_s);
        let below_background = self
            .background_threshold_bytes
            .is_some_and(|t| end_backlog < t);
        let young = self.expire_and_interval_s.is_some_and(|w| {
            let waited = end_backlog.saturating_sub(self.unwritten_start_bytes.unwrap_or(0));
            (waited as f64) <= 1.1 * self.requested_bytes_per_s * w
        });
        idle && drains && below_background && young
    }
}

pub fn decide(e: &Evidence) -> Outcome {
    let outcome = |verdict, text| Outcome {
        verdict,
        text,
        headroom: None,
        backlog_growth_bytes_per_s: None,
        throttled_after_s: None,
        deferred_writeback: false,
    };
    if let Some(error) = &e.error {
        return outcome(
            Verdict::Failed,
            format!("the recording did not complete: {error}"),
        );
    }
    // The sustained rate over the stream's: the headroom whatever the verdict.
    let sustained_headroom = e.sustained_bytes_per_s.map(|s| s / e.requested_bytes_per_s);
    if e.frames_dropped > 0 {
        let at = e.first_drop_s.unwrap_or(0.0);
        let cause = match (e.first_throttled_s, e.longest_stall) {
            // Memory has no writeback, so the dirty limit never throttles a writer there and
            // no device drains it: frames lost writing to RAM were lost by the host itself
            // (its CPU, or a capture thread woken late), and that is what the line says.
            _ if e.not_storage.is_some() => format!(
                "{}, memory rather than storage, so the host itself fell behind (its CPU or scheduling), not a card or drive",
                e.not_storage.as_deref().unwrap_or_default()
            ),
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
            headroom: sustained_headroom.filter(|_| e.not_storage.is_none()),
            throttled_after_s: e.first_throttled_s.filter(|_| e.not_storage.is_none()),
            ..outcome(
                Verdict::Drops,
                format!(
                    "{} frames dropped, the first at {at:.2} s: {cause}",
                    e.frames_dropped
                ),
            )
        };
    }
    if e.fewest_frames < FRAMES_TO_JUDGE {
        return outcome(
            Verdict::TooShort,
            format!(
                "only {} frame(s) in a stream: too few to tell whether the storage keeps up; record at least {FRAMES_TO_JUDGE} frames a stream (a longer --duration or a higher --fps)",
                e.fewest_frames
            ),
        );
    }
    if let Some(what) = &e.not_storage {
        return outcome(
            Verdict::NotStorage,
            format!(
                "no frame dropped, but {what}, memory rather than storage: the test measured how fast RAM takes {}, which says nothing about a card or drive keeping up, so no headroom either; run it on the recording device's mount point",
                mb(e.requested_bytes_per_s)
            ),
        );
    }
    let headroom = sustained_headroom.or_else(|| {
        (!e.buffered && e.writer_busy_fraction > 0.0).then(|| 1.0 / e.writer_busy_fraction)
    });
    // Only buffered writes leave the recording's data in the page cache: direct, dsync and
    // io_uring writes return (or complete) once on the device, and what the streams made
    // beyond what the device took is in the capture pool, whose overflow is counted as drops.
    // A machine's dirty data growing beside a direct recording is another writer's.
    let page_cache = (e.unwritten_start_bytes, e.unwritten_end_bytes);
    if let (true, (Some(start), Some(end))) = (e.buffered, page_cache) {
        // /proc/meminfo's dirty data is every writer's: another program filling the page
        // cache beside the recording is not this recording's backlog, and another program's
        // data leaving it (a background writer's fsync) does not drain the recording's.
        // What the streams wrote less what their device wrote is the recording's own (the
        // device's bytes also hold metadata and other writers', so it is not more than the
        // truth); the machine's figure only where the device's is not known.
        let everyone = (end as f64 - start as f64) / e.duration_s.max(1e-9);
        let growth = match e.device_bytes_per_s {
            Some(d) => (e.requested_bytes_per_s - d).max(0.0),
            None => everyone,
        };
        let machine_end = end;
        let end = start.saturating_add((growth.max(0.0) * e.duration_s) as u64);
        let drains_slower = e
            .device_bytes_per_s
            .is_none_or(|d| d < e.requested_bytes_per_s * 0.98);
        if growth > (e.requested_bytes_per_s * 0.05).max(256.0 * 1024.0) && drains_slower {
            if e.deferred(end) {
                let capacity = e.capacity().unwrap_or(0.0);
                return Outcome {
                    headroom,
                    deferred_writeback: true,
                    backlog_growth_bytes_per_s: Some(growth),
                    ..outcome(
                        Verdict::KeepsUp,
                        format!(
                            "no frame dropped; dirty data grew {} in RAM, but the device was busy only {:.0}% of the time and drains {} ({:.1}x the stream){}: the kernel was deferring writeback (the backlog stayed below the background threshold and younger than dirty_expire), not falling short",
                            mb(growth),
                            100.0 * e.device_busy_fraction.unwrap_or(0.0),
                            mb(capacity),
                            capacity / e.requested_bytes_per_s,
                            if e.sustained_bytes_per_s.is_some() {
                                " sustained"
                            } else {
                                " while it writes"
                            }
                        ),
                    )
                };
            }
            // Throttling starts when the machine's dirty data reaches the ceiling, whoever
            // wrote it; at least as soon as this recording alone would take it there.
            let after = e
                .freerun_ceiling_bytes
                .map(|c| (c.saturating_sub(machine_end)) as f64 / growth.max(everyone));
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
                headroom: sustained_headroom,
                backlog_growth_bytes_per_s: Some(growth),
                throttled_after_s: after,
                ..outcome(Verdict::FallingBehind, text)
            };
        }
    }
    if let Some(sustained) = e
        .sustained_bytes_per_s
        .filter(|s| *s < e.requested_bytes_per_s)
    {
        return Outcome {
            headroom,
            backlog_growth_bytes_per_s: Some(e.requested_bytes_per_s - sustained),
            ..outcome(
                Verdict::FallingBehind,
                format!(
                    "no frame dropped in the test, but the device sustains only {} against the stream's {}: the page cache hid the deficit, and the backlog grows {} until writers are throttled",
                    mb(sustained),
                    mb(e.requested_bytes_per_s),
                    mb(e.requested_bytes_per_s - sustained)
                ),
            )
        };
    }
    let text = match (e.sustained_bytes_per_s, headroom) {
        (Some(s), Some(h)) => format!(
            "no frame dropped; the device sustains {} ({h:.1}x headroom over the stream)",
            mb(s)
        ),
        (None, Some(h)) => format!(
            "no frame dropped; the busiest writer spent {:.0}% of the time writing ({h:.1}x headroom)",
            100.0 * e.writer_busy_fraction
        ),
        _ => "no frame dropped, and the device drained what the page cache took (buffered writes: the headroom needs the device's raw rate, which direct or dsync writes measure)".to_string(),
    };
    Outcome {
        headroom,
        ..outcome(Verdict::KeepsUp, text)
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
            background_threshold_bytes: Some(1 << 30),
            expire_and_interval_s: Some(35.0),
            device_bytes_per_s: Some(3e6),
            fewest_frames: 300,
            buffered: true,
            ..Evidence::default()
        }
    }

    #[test]
    fn a_direct_recording_has_no_page_cache_backlog_whatever_the_machine_s_dirty_data_does() {
        // The CI run's case: 4.0 MB/s of frames written O_DIRECT to a 10 MB/s card for 3 s,
        // 3.7 MB/s counted on the device (the last frames still on their way), and the
        // machine's dirty data growing beside it from other writers.
        let direct = Evidence {
            duration_s: 3.0,
            requested_bytes_per_s: 4.0e6,
            device_bytes_per_s: Some(3.7e6),
            device_busy_fraction: Some(0.05),
            writer_busy_fraction: 0.4,
            unwritten_start_bytes: Some(100 << 20),
            unwritten_end_bytes: Some(300 << 20),
            fewest_frames: 60,
            buffered: false,
            ..base()
        };
        let o = decide(&direct);
        assert_eq!(o.verdict, Verdict::KeepsUp, "{}", o.text);
        assert!(o.backlog_growth_bytes_per_s.is_none());
        assert!(o.headroom.is_some_and(|h| (h - 2.5).abs() < 1e-9));
        // The same figures written buffered: the shortfall is the recording's own backlog.
        let o = decide(&Evidence {
            buffered: true,
            device_busy_fraction: Some(0.97),
            ..direct
        });
        assert_eq!(o.verdict, Verdict::FallingBehind, "{}", o.text);
    }

    #[test]
    fn another_writer_s_dirty_data_is_not_the_recording_s_backlog() {
        // Under a background dd: RAM's dirty data grew 106 MB/s, the recording's device
        // drained 2.1 of its 3 MB/s while idle, and sustains 739 MB/s.
        let beside_dd = Evidence {
            duration_s: 8.0,
            unwritten_start_bytes: Some(200 << 20),
            unwritten_end_bytes: Some((200 << 20) + 847 * 1_000_000),
            background_threshold_bytes: Some(2 << 30),
            device_bytes_per_s: Some(2.1e6),
            device_busy_fraction: Some(0.0),
            sustained_bytes_per_s: Some(738.8e6),
            ..base()
        };
        let o = decide(&beside_dd);
        assert_eq!(o.verdict, Verdict::KeepsUp, "{}", o.text);
        assert!(o.deferred_writeback);
        let growth = o.backlog_growth_bytes_per_s.expect("growth");
        assert!((growth - 0.9e6).abs() < 1.0, "{growth}");
        // A card that drains less than the stream while busy falls behind all the same,
        // by its own deficit rather than the machine's.
        let slow = Evidence {
            device_busy_fraction: Some(0.97),
            sustained_bytes_per_s: Some(2.2e6),
            ..beside_dd
        };
        let o = decide(&slow);
        assert_eq!(o.verdict, Verdict::FallingBehind, "{}", o.text);
        assert!((o.backlog_growth_bytes_per_s.expect("growth") - 0.9e6).abs() < 1.0);
    }

    #[test]
    fn another_writer_s_flush_does_not_drain_the_recording_s_backlog() {
        // 15 MB/s into a 10 MB/s card, busy all the time, while a background dd's fsync took
        // 400 MB out of the machine's dirty data: the recording still falls 5 MB/s behind.
        let flushed_beside = Evidence {
            duration_s: 4.0,
            requested_bytes_per_s: 15e6,
            unwritten_start_bytes: Some(600 << 20),
            unwritten_end_bytes: Some(200 << 20),
            device_bytes_per_s: Some(10e6),
            device_busy_fraction: Some(0.97),
            device_rate_while_busy_bytes_per_s: Some(10.3e6),
            ..base()
        };
        let o = decide(&flushed_beside);
        assert_eq!(o.verdict, Verdict::FallingBehind, "{}", o.text);
        assert!((o.backlog_growth_bytes_per_s.expect("growth") - 5e6).abs() < 1.0);
    }

    #[test]
    fn too_few_frames_are_not_judged_but_a_drop_still_counts() {
        let one = Evidence {
            fewest_frames: 1,
            ..base()
        };
        let o = decide(&one);
        assert_eq!(o.verdict, Verdict::TooShort);
        assert_eq!(o.headroom, None);
        assert_eq!(o.verdict.exit_code(), 3);
        // The fewest frames that are judged.
        let enough = Evidence {
            fewest_frames: FRAMES_TO_JUDGE,
            ..base()
        };
        assert_eq!(decide(&enough).verdict, Verdict::KeepsUp);
        // A dropped frame is evidence however short the run.
        let dropped = Evidence {
            frames_dropped: 1,
            first_drop_s: Some(0.0),
            ..one
        };
        assert_eq!(decide(&dropped).verdict, Verdict::Drops);
    }

    #[test]
    fn keeps_up_with_headroom() {
        // (the writer's busy share gives the headroom of writes that return on the device)
        let o = decide(&Evidence {
            buffered: false,
            ..base()
        });
        assert_eq!(o.verdict, Verdict::KeepsUp);
        assert_eq!(o.headroom, Some(4.0));
    }

    #[test]
    fn memory_gets_no_keeps_up_verdict_and_no_headroom_but_drops_still_count() {
        let tmpfs = Evidence {
            not_storage: Some("/dev/shm is on tmpfs".into()),
            sustained_bytes_per_s: Some(3e9),
            ..base()
        };
        let o = decide(&tmpfs);
        assert_eq!(o.verdict, Verdict::NotStorage);
        assert_eq!(o.headroom, None);
        assert!(o.text.contains("/dev/shm is on tmpfs"), "{}", o.text);
        let dropped = Evidence {
            frames_dropped: 3,
            first_drop_s: Some(1.0),
            ..tmpfs
        };
        let o = decide(&dropped);
        assert_eq!(o.verdict, Verdict::Drops);
        assert_eq!(o.headroom, None);
        assert!(o.text.contains("/dev/shm is on tmpfs"), "{}", o.text);
        // The machine-wide dirty figure said "throttled", but memory is never throttled.
        let throttled = Evidence {
            first_throttled_s: Some(0.5),
            ..dropped
        };
        let o = decide(&throttled);
        assert!(!o.text.contains("dirty limit"), "{}", o.text);
        assert!(o.text.contains("host itself fell behind"), "{}", o.text);
    }

    #[test]
    fn a_run_with_an_error_failed_whatever_else_it_saw() {
        let e = Evidence {
            error: Some("cam0: write: Input/output error (os error 5)".into()),
            ..base()
        };
        let o = decide(&e);
        assert_eq!(o.verdict, Verdict::Failed);
        assert_eq!(o.headroom, None);
        assert!(o.text.contains("Input/output error"), "{}", o.text);
    }

    #[test]
    fn falling_behind_when_the_backlog_grows_on_a_busy_device() {
        let e = Evidence {
            unwritten_end_bytes: Some((1 << 20) + 10_000_000),
            device_bytes_per_s: Some(2e6),
            device_busy_fraction: Some(0.95),
            device_rate_while_busy_bytes_per_s: Some(2.1e6),
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
    fn a_backlog_the_kernel_defers_on_an_idle_fast_device_keeps_up() {
        let deferred = Evidence {
            unwritten_end_bytes: Some((1 << 20) + 25_000_000),
            device_bytes_per_s: Some(0.5e6),
            device_busy_fraction: Some(0.03),
            device_rate_while_busy_bytes_per_s: Some(18e6),
            ..base()
        };
        let o = decide(&deferred);
        assert_eq!(o.verdict, Verdict::KeepsUp, "{}", o.text);
        assert!(o.deferred_writeback);
        assert!(o.text.contains("deferring writeback"), "{}", o.text);
        // The same backlog with a device that drains barely above the stream: real.
        let slow = Evidence {
            device_rate_while_busy_bytes_per_s: Some(3.2e6),
            ..deferred.clone()
        };
        assert_eq!(decide(&slow).verdict, Verdict::FallingBehind);
        // ... above the background threshold: the flusher is already writing it.
        let above = Evidence {
            background_threshold_bytes: Some(10 << 20),
            ..deferred.clone()
        };
        assert_eq!(decide(&above).verdict, Verdict::FallingBehind);
        // ... more waiting than dirty_expire lets wait: older data was left behind.
        let old = Evidence {
            expire_and_interval_s: Some(5.0),
            ..deferred.clone()
        };
        assert_eq!(decide(&old).verdict, Verdict::FallingBehind);
        // ... nothing known of what the device can drain: no claim of deferral.
        let unknown = Evidence {
            device_rate_while_busy_bytes_per_s: None,
            ..deferred
        };
        assert_eq!(decide(&unknown).verdict, Verdict::FallingBehind);
    }

    #[test]
    fn a_sustained_rate_below_the_stream_falls_behind_even_with_no_backlog() {
        let e = Evidence {
            sustained_bytes_per_s: Some(2e6),
            ..base()
        };
        let o = decide(&e);
        assert_eq!(o.verdict, Verdict::FallingBehind);
        assert!(o.text.contains("hid the deficit"), "{}", o.text);
        let fast = Evidence {
            sustained_bytes_per_s: Some(30e6),
            ..base()
        };
        let o = decide(&fast);
        assert_eq!(o.verdict, Verdict::KeepsUp);
        assert_eq!(o.headroom, Some(10.0));
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
