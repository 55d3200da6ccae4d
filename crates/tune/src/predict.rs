//! The fix predicted from the baseline's own run: the kernel's causes of its stalls, and
//! when they came, choose what to change; the run's measured rates size it. The search then
//! proves the prediction in full-length runs against the baseline, and falls back to trying
//! every candidate when the proof fails.

use sinkrate_model::causes::Cause;
use sinkrate_model::record::WriteMode;
use sinkrate_model::search::{Candidate, RecorderChange, Trial};
use sinkrate_model::tunables::Assignment;

/// What a prediction may change.
#[derive(Debug, Clone, Default)]
pub struct Allowed {
    /// System settings (root): sysctls, the card's bdi, its mount.
    pub system: bool,
    /// The recorder's own choices (a recording in this process).
    pub recorder: bool,
    /// The kernel has per-device limits for the card's bdi (`strict_limit`, `max_bytes`).
    pub bdi_limits: bool,
    /// The card's mount point and filesystem, when mount options may change there.
    pub mount: Option<(String, String)>,
}

/// A predicted candidate and what it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    pub candidate: Candidate,
    pub because: String,
}

/// How many times the stall one periodic flush causes a pool rides out: the writer may
/// wait behind a flush that began just before its own, and the device's rate varies.
const FLUSH_MARGIN: f64 = 2.0;

/// The writeback interval and expiry a fast-writeback candidate sets, centiseconds (seed
/// 001's fix).
const FAST_WRITEBACK_CS: u64 = 100;

/// The candidate the baseline's run points to, or why it points to none (the search then
/// tries every candidate).
pub fn predict(baseline: &Trial, allowed: &Allowed) -> Result<Predicted, String> {
    let d = baseline
        .diagnosis
        .as_ref()
        .and_then(|k| k.typed())
        .ok_or("the workload is not a recording in this process: its stalls are not seen")?;
    if baseline.frames_dropped == 0 {
        return Err("the baseline dropped no frame: there is no stall to fix".into());
    }
    let causes = d.stall_causes.as_ref().ok_or_else(|| {
        format!(
            "the kernel's account of the baseline's stalls was not read ({})",
            d.causes_unread.as_deref().unwrap_or("no reason given")
        )
    })?;
    if let Some(first) = d.first_flush_s.filter(|f| d.run_s < *f) {
        return Err(format!(
            "the baseline's run ({:.0} s) ended before the first flush of expired data ({first:.0} s in): a longer --confirm-duration meets it",
            d.run_s
        ));
    }
    if causes.total() <= 0.0 {
        return Err("the kernel's events explain none of the baseline's stalls".into());
    }
    let largest = causes.largest();
    let share = |c: Cause| causes.get(c) / causes.total();
    let at_flush = d.stall_s > 0.0 && d.stall_at_first_flush_s / d.stall_s >= 0.5;
    let rested = format!(
        "the baseline dropped {} frame(s); its stalls were {} ({:.0}% of {:.2} s)",
        baseline.frames_dropped,
        largest.name(),
        share(largest) * 100.0,
        causes.total()
    );
    let slower_than_stream = d
        .device_bytes_per_s
        .is_some_and(|dev| dev < d.stream_bytes_per_s * 1.1);
    if slower_than_stream {
        return Err(format!(
            "{rested}, and the card wrote {} while busy against the streams' {}: no setting keeps up, a faster card or a lower bitrate does",
            rate(d.device_bytes_per_s.unwrap_or(0.0)),
            rate(d.stream_bytes_per_s)
        ));
    }
    match largest {
        // The first flush of expired data took the device for seconds: written back every
        // second instead, each flush is one second of stream, and the pool rides out that.
        Cause::Device | Cause::Journal | Cause::WritebackWait if at_flush && allowed.system => {
            let interval_s = FAST_WRITEBACK_CS as f64 / 100.0;
            let mut recorder = Vec::new();
            let mut sized = String::new();
            if let (Some(dev), true) = (d.device_bytes_per_s.filter(|r| *r > 0.0), allowed.recorder) {
                let per_flush_s = d.stream_bytes_per_s * interval_s / dev;
                let ride_out_s = (per_flush_s * FLUSH_MARGIN).max(d.worst_other_stall_s);
                let frames = (ride_out_s * d.fps).ceil() as usize + 1;
                if frames > d.buffers {
                    recorder.push(RecorderChange::Buffers { buffers: frames });
                    sized = format!(
                        " and {frames} capture buffers ({:.2} s of stream: {FLUSH_MARGIN}x the {:.2} s the card takes for each second of it at {})",
                        frames as f64 / d.fps.max(1.0),
                        per_flush_s,
                        rate(dev)
                    );
                }
            }
            let system = vec![
                Assignment::sysctl("vm.dirty_expire_centisecs", FAST_WRITEBACK_CS),
                Assignment::sysctl("vm.dirty_writeback_centisecs", FAST_WRITEBACK_CS),
            ];
            let label = match &recorder[..] {
                [RecorderChange::Buffers { buffers }] => {
                    format!("writeback 100/100 cs + {buffers} capture buffers")
                }
                _ => "writeback 100/100 cs".to_string(),
            };
            Ok(Predicted {
                because: format!(
                    "{rested}, {:.0}% of them in the first flush of expired data ({:.0} s in): writeback every second{sized}",
                    d.stall_at_first_flush_s / d.stall_s * 100.0,
                    d.first_flush_s.unwrap_or(0.0)
                ),
                candidate: Candidate {
                    label,
                    system,
                    recorder,
                },
            })
        }
        Cause::Throttled if allowed.system => match (&d.device_limit, allowed.bdi_limits) {
            (Some((bdi, max_bytes)), true)
                if d.held_device_limit_bytes.is_some_and(|held| held <= *max_bytes) =>
            {
                Err(format!(
                    "{rested}, though bdi {bdi} already holds the card to {} (strict), within the {} its pool rides out: the machine's own dirty limit throttles it",
                    sinkrate_units::product::bytes_binary(d.held_device_limit_bytes.unwrap_or(0)),
                    sinkrate_units::product::bytes_binary(*max_bytes)
                ))
            }
            (Some((bdi, max_bytes)), true) => Ok(Predicted {
                because: format!(
                    "{rested}: the card's own dirty limit, {} on bdi {bdi} (the run's sizes: its rate times the stall its pool rides out){}, keeps each of the kernel's throttle pauses (up to {:.2} s) inside the pool",
                    sinkrate_units::product::bytes_binary(*max_bytes),
                    match (d.held_device_limit_bytes, d.device_bytes_per_s) {
                        (Some(held), Some(rate)) => format!(
                            ", in place of the {} it holds, whose pauses (up to {:.2} s, several in one write) outlast it",
                            sinkrate_units::product::bytes_binary(held),
                            sinkrate_model::record::DeviceLimit::longest_throttle_pause_s(held, rate)
                        ),
                        _ => String::new(),
                    },
                    sinkrate_model::record::DeviceLimit::longest_throttle_pause_s(
                        *max_bytes,
                        d.device_bytes_per_s.unwrap_or(0.0)
                    )
                ),
                candidate: Candidate {
                    label: format!(
                        "per-device limit {} (strict)",
                        sinkrate_units::product::bytes_binary(*max_bytes)
                    ),
                    system: vec![
                        Assignment::bdi(bdi, "strict_limit", 1),
                        Assignment::bdi(bdi, "max_bytes", max_bytes),
                    ],
                    recorder: Vec::new(),
                },
            }),
            _ => Err(format!(
                "{rested}, but this kernel or card has no per-device limit to size (bdi max_bytes, Linux 6.2)"
            )),
        },
        Cause::Journal if allowed.system => match &allowed.mount {
            Some((mount_point, fs)) if fs == "ext4" => {
                let commit = Assignment::mount(mount_point, "commit=60")
                    .ok_or("commit= is not a mount option sinkrate changes")?;
                Ok(Predicted {
                    because: format!("{rested}: fewer journal commits (every 60 s)"),
                    candidate: Candidate {
                        label: "journal commit every 60 s".into(),
                        system: vec![commit],
                        recorder: Vec::new(),
                    },
                })
            }
            _ => Err(format!(
                "{rested}, on a filesystem whose commit interval sinkrate does not change"
            )),
        },
        Cause::WritebackWait if allowed.recorder => Ok(Predicted {
            because: format!(
                "{rested}: writes that skip the page cache wait for no page under writeback"
            ),
            candidate: Candidate {
                label: "O_DIRECT writes".into(),
                system: Vec::new(),
                recorder: vec![RecorderChange::WriteMode {
                    mode: WriteMode::Direct,
                }],
            },
        }),
        Cause::Device if allowed.recorder => match d.pool_frames.filter(|f| *f > d.buffers) {
            Some(frames) => Ok(Predicted {
                because: format!(
                    "{rested}: the card's own pauses, which a pool of {frames} frames (the run's sizes: the smallest that would have dropped nothing) rides out"
                ),
                candidate: Candidate {
                    label: format!("{frames} capture buffers"),
                    system: Vec::new(),
                    recorder: vec![RecorderChange::Buffers { buffers: frames }],
                },
            }),
            None => Err(format!(
                "{rested}, and the run sized no larger pool to ride them out"
            )),
        },
        Cause::Cpu | Cause::Running | Cause::Unexplained => Err(format!(
            "{rested}: {}",
            largest.fix()
        )),
        _ => Err(format!(
            "{rested}: its fix ({}) is not one this search may change (root for system settings, a recording in this process for the recorder's)",
            largest.fix()
        )),
    }
}

fn rate(bytes_per_s: f64) -> String {
    sinkrate_units::product::mb_per_s(bytes_per_s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkrate_model::causes::CauseSeconds;
    use sinkrate_model::search::Diagnosis;
    use sinkrate_model::Verdict;

    /// Seed 001's baseline on the 10.5 MB/s card: two 30 fps streams of 80 KB (4.8 MB/s),
    /// 4 buffers, a 1.5 s stall at the first flush of expired data 35 s in.
    fn seed001(causes: CauseSeconds, at_flush_s: f64) -> Trial {
        Trial {
            verdict: Verdict::Drops,
            frames_offered: 3600,
            frames_dropped: 104,
            worst_write_ms: Some(1510.0),
            p99_write_ms: Some(3.0),
            p99_lateness_ms: Some(400.0),
            cpu_s: 0.3,
            peak_dirty_bytes: Some(150 << 20),
            unacknowledged_worst_s: None,
            throttled_s: 0.0,
            duration_s: 60.0,
            confirmation: true,
            stopped_early: false,
            error: None,
            device_bytes_per_hour: None,
            device_bytes_written: None,
            device_rate_while_busy_bytes_per_s: Some(10.5e6),
            diagnosis: Some(
                Diagnosis {
                    stall_causes: Some(causes),
                    causes_unread: None,
                    stall_s: 1.6,
                    stall_at_first_flush_s: at_flush_s,
                    worst_other_stall_s: 0.05,
                    first_flush_s: Some(35.0),
                    page_cache: true,
                    writeback_interval_s: Some(5.0),
                    run_s: 60.0,
                    fps: 30.0,
                    buffers: 4,
                    pool_frames: Some(47),
                    device_limit: Some(("254:0".into(), 2 << 20)),
                    held_device_limit_bytes: None,
                    stream_bytes_per_s: 4.8e6,
                    device_bytes_per_s: Some(10.5e6),
                }
                .into(),
            ),
        }
    }

    fn all() -> Allowed {
        Allowed {
            system: true,
            recorder: true,
            bdi_limits: true,
            mount: Some(("/mnt/card".into(), "ext4".into())),
        }
    }

    fn seconds(c: Cause, s: f64) -> CauseSeconds {
        let mut out = CauseSeconds::default();
        out.add(c, s);
        out.add(Cause::Running, 0.01);
        out
    }

    #[test]
    fn a_first_flush_stall_predicts_writeback_every_second_with_a_pool_for_each_flush() {
        let p = predict(&seed001(seconds(Cause::Device, 1.55), 1.5), &all()).expect("predicted");
        // Each second of 4.8 MB/s takes the 10.5 MB/s card 0.457 s; twice that at 30 fps is
        // 27.4 frames, one more for the frame being written: 29.
        assert_eq!(
            p.candidate.label,
            "writeback 100/100 cs + 29 capture buffers"
        );
        assert_eq!(
            p.candidate.settings_args(),
            [
                "vm.dirty_expire_centisecs=100",
                "vm.dirty_writeback_centisecs=100"
            ]
        );
        assert_eq!(
            p.candidate.recorder,
            [RecorderChange::Buffers { buffers: 29 }]
        );
        assert!(
            p.because.contains("first flush of expired data (35 s in)"),
            "{}",
            p.because
        );
        assert!(p.because.contains("0.46 s"), "{}", p.because);
        // Without the recorder's own knobs (an outside recorder), the settings alone.
        let p = predict(
            &seed001(seconds(Cause::Device, 1.55), 1.5),
            &Allowed {
                recorder: false,
                ..all()
            },
        )
        .expect("predicted");
        assert_eq!(p.candidate.label, "writeback 100/100 cs");
    }

    #[test]
    fn each_cause_away_from_the_flush_predicts_its_own_fix() {
        let away = |c: Cause| predict(&seed001(seconds(c, 1.55), 0.0), &all());
        let throttled = away(Cause::Throttled).expect("throttled");
        assert_eq!(
            throttled.candidate.settings_args(),
            ["bdi:strict_limit=1", "bdi:max_bytes=2097152"]
        );
        assert_eq!(
            away(Cause::Journal)
                .expect("journal")
                .candidate
                .settings_args(),
            ["mount:commit=60"]
        );
        assert_eq!(
            away(Cause::WritebackWait).expect("wb").candidate.recorder,
            [RecorderChange::WriteMode {
                mode: WriteMode::Direct
            }]
        );
        // The device's own pauses: the pool the run sized.
        assert_eq!(
            away(Cause::Device).expect("device").candidate.recorder,
            [RecorderChange::Buffers { buffers: 47 }]
        );
        for c in [Cause::Cpu, Cause::Unexplained] {
            let why = away(c).expect_err("no storage fix");
            assert!(why.contains(c.fix()), "{why}");
        }
    }

    #[test]
    fn a_strict_cap_larger_than_the_pool_rides_out_is_replaced_and_a_smaller_one_is_not_blamed() {
        // The card held a 16 MiB strict cap (a udev rule's fixed figure): its pauses, up to
        // 0.2 s on this 10.5 MB/s card, outlast the pool; the run's own size replaces it.
        let mut t = seed001(seconds(Cause::Throttled, 1.55), 0.0);
        if let Some(d) = t.diagnosis.as_mut().and_then(|k| k.typed_mut()) {
            d.held_device_limit_bytes = Some(16 << 20);
        }
        let p = predict(&t, &all()).expect("predicted");
        assert_eq!(
            p.candidate.settings_args(),
            ["bdi:strict_limit=1", "bdi:max_bytes=2097152"]
        );
        assert!(
            p.because
                .contains("in place of the 16.0 MiB it holds, whose pauses (up to 0.20 s, several")
                && p.because.contains("(up to 0.03 s) inside the pool"),
            "{}",
            p.because
        );
        // A cap within the size throttled it all the same: not the card's limit, so no
        // prediction (the search tries the candidates, the machine's dirty limit among them).
        if let Some(d) = t.diagnosis.as_mut().and_then(|k| k.typed_mut()) {
            d.held_device_limit_bytes = Some(1 << 20);
        }
        let why = predict(&t, &all()).expect_err("the card's cap is not the cause");
        assert!(why.contains("already holds the card to 1.0 MiB"), "{why}");
    }

    #[test]
    fn no_prediction_without_the_kernels_account_a_long_enough_run_or_a_card_that_can_keep_up() {
        let mut t = seed001(seconds(Cause::Device, 1.55), 1.5);
        if let Some(d) = t.diagnosis.as_mut().and_then(|k| k.typed_mut()) {
            d.run_s = 20.0;
        }
        let why = predict(&t, &all()).expect_err("short");
        assert!(why.contains("ended before the first flush"), "{why}");
        let mut t = seed001(seconds(Cause::Device, 1.55), 1.5);
        if let Some(d) = t.diagnosis.as_mut().and_then(|k| k.typed_mut()) {
            d.stall_causes = None;
            d.causes_unread = Some("not root".into());
        }
        let why = predict(&t, &all()).expect_err("unread");
        assert!(why.contains("not root"), "{why}");
        let mut t = seed001(seconds(Cause::Device, 1.55), 1.5);
        if let Some(d) = t.diagnosis.as_mut().and_then(|k| k.typed_mut()) {
            d.device_bytes_per_s = Some(4.0e6);
        }
        let why = predict(&t, &all()).expect_err("slow card");
        assert!(why.contains("faster card"), "{why}");
        let mut t = seed001(seconds(Cause::Device, 1.55), 1.5);
        t.frames_dropped = 0;
        assert!(predict(&t, &all()).is_err());
        // Throttled without per-device limits on this kernel.
        let t = seed001(seconds(Cause::Throttled, 1.55), 0.0);
        let why = predict(
            &t,
            &Allowed {
                bdi_limits: false,
                ..all()
            },
        )
        .expect_err("no bdi");
        assert!(why.contains("6.2"), "{why}");
    }
}
