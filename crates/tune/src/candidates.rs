//! The configurations a search tries, in families: the kernel's writeback knobs, the
//! recorder's own choices (which a user changes in the app), and the two together.

use std::time::Duration;

use sinkrate_model::record::WriteMode;
use sinkrate_model::search::{Candidate, RecorderChange};
use sinkrate_model::settings::Setting;
use sinkrate_model::tunables::Assignment;
use sinkrate_record::session::Session;

/// The user's session with `candidate`'s recorder changes.
pub fn session_for(candidate: &Candidate, base: &Session) -> Session {
    let mut s = base.clone();
    // A trial's lifetime is read for its device bytes per hour, which needs no endurance:
    // the device's account is not asked for in every run (smartctl may take 10 s).
    if s.endurance == sinkrate_record::session::EnduranceFrom::Device {
        s.endurance = sinkrate_record::session::EnduranceFrom::Known(None);
    }
    for c in &candidate.recorder {
        match c {
            RecorderChange::WriteMode { mode } => s.record.write_mode = *mode,
            RecorderChange::Buffers { buffers } => s.record.buffers = *buffers,
            RecorderChange::FdatasyncEvery { every_s } => s.record.fdatasync_every = Some(*every_s),
            RecorderChange::Preallocate => {
                // The busiest stream's share for the whole run, and a tenth more.
                let secs = s.record.duration.as_secs_f64();
                let per_stream = s
                    .record
                    .streams
                    .iter()
                    .map(|st| st.bytes_per_s() * secs * 1.1)
                    .fold(0.0, f64::max);
                s.record.preallocate = Some(per_stream as u64);
            }
            RecorderChange::WholeFrameWrites => s.record.write_size = None,
        }
    }
    s
}

/// The queue and mount of the directory searched, when their knobs may be tried (root, and
/// not the system's own disk), with the values in force.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueMount {
    pub device: Option<String>,
    pub mount_point: String,
    pub fs_type: String,
    /// The scheduler in force and the ones the queue offers.
    pub scheduler: Option<(String, Vec<String>)>,
    pub max_sectors_kb: Option<u64>,
    /// The atime option in force (noatime, relatime, strictatime).
    pub atime: Option<String>,
}

impl QueueMount {
    /// The queue and mount under `dir` with the values in force, or why their knobs are
    /// not tried (the system's own disk, no block device behind it).
    pub fn of(
        dir: &std::path::Path,
        journal: &sinkrate_settings::Journal,
    ) -> Result<QueueMount, String> {
        use crate::apply as tune;
        let t = tune::target(dir, None, None).map_err(|e| e.to_string())?;
        if let Some(why) = tune::holds_system(&t, journal.path()) {
            return Err(format!(
                "{why}: queue and mount knobs were not tried there (sinkrate tune apply --device/--mount-point changes them by name)"
            ));
        }
        let fs_type = sinkrate_sys::host::target_facts(dir, false)
            .fs_type
            .unwrap_or_default();
        let host = journal.host();
        let queue = |attr: &str| {
            t.device.as_ref().and_then(|d| {
                host.read(&Setting::Queue {
                    device: d.clone(),
                    attr: attr.into(),
                })
                .ok()
            })
        };
        let offered = t.device.as_ref().and_then(|d| {
            sinkrate_sys::device::queue_attr(&sinkrate_sys::SysRoot::live(), d, "scheduler")
        });
        let scheduler = queue("scheduler").zip(offered).map(|(now, list)| {
            let names = list
                .split_whitespace()
                .map(|s| s.trim_matches(|c| c == '[' || c == ']').to_string())
                .collect();
            (now, names)
        });
        let atime = host
            .read(&Setting::Mount {
                mount_point: t.mount_point.clone(),
                family: "atime".into(),
            })
            .ok();
        Ok(QueueMount {
            max_sectors_kb: queue("max_sectors_kb").and_then(|v| v.trim().parse().ok()),
            device: t.device,
            mount_point: t.mount_point,
            fs_type,
            scheduler,
            atime,
        })
    }
}

/// What may vary: `system` (root) allows the writeback sysctls, `target` the queue and
/// mount; `recorder` is the user's recording when the recorder's own knobs can vary (not a
/// bench job or an outside recorder).
pub struct Knobs<'a> {
    pub system: bool,
    pub recorder: Option<&'a Session>,
    /// Whether the workload writes through the page cache (the writeback knobs matter).
    pub buffered: bool,
    /// The workload's write rate, bytes a second, to size small dirty limits.
    pub rate: f64,
    pub target: Option<&'a QueueMount>,
    /// `--max-loss`: the most recording a power cut may cost. Adds the data-at-risk family
    /// (the recorder's fdatasync cadence and write mode, with the buffers and writeback that
    /// let it keep up) first.
    pub max_loss: Option<Duration>,
    /// The fdatasync cadence for `max_loss`, once sized from a run ([`sized_cadence`]);
    /// before, [`cadence_for`]'s first guess.
    pub cadence: Option<Duration>,
}

/// The fdatasync cadence that keeps a recording within `bound`: the frame waiting longest
/// waits a cadence, then the sync itself; half the bound leaves the other half to the sync
/// (a tenth of a second at least, a second at most: longer is the plain candidate's).
pub fn cadence_for(bound: Duration) -> Duration {
    let ms = (bound.as_millis() as u64 / 2).clamp(100, 1000);
    Duration::from_millis(ms / 50 * 50)
}

/// The fdatasync cadence sized from a run that measured the device: a sync after a cadence
/// `c` of buffered recording writes `c x stream` bytes at the device's rate while busy, so
/// the frame that waits longest is unacknowledged for about `c x (1 + stream / device)`.
/// That is held to half the bound; the other half is for what the rate does not show (a
/// card's volatile cache drained by the sync, a device slowed by other writers). Within
/// [`cadence_for`]'s range, in steps of 50 ms; at most its first guess.
pub fn sized_cadence(
    bound: Duration,
    stream_bytes_per_s: f64,
    device_bytes_per_s: f64,
) -> Duration {
    let guess = cadence_for(bound);
    if !(stream_bytes_per_s > 0.0 && device_bytes_per_s > 0.0) {
        return guess;
    }
    let share = stream_bytes_per_s / device_bytes_per_s;
    let ms = (bound.as_secs_f64() / 2.0 / (1.0 + share) * 1000.0) as u64;
    Duration::from_millis(ms.clamp(100, 1000) / 50 * 50).min(guess)
}

/// The data-at-risk family: ways for the recorder to have its frames acknowledged on the
/// device within `bound`, and what lets each keep up (more capture buffers ride out a sync's
/// wait; small dirty limits keep each sync short).
fn data_at_risk(
    every: Duration,
    base: &Session,
    writeback: bool,
    small_limits: Vec<Assignment>,
) -> Vec<Candidate> {
    let secs = every.as_secs_f64();
    let sync = RecorderChange::FdatasyncEvery { every_s: every };
    let more = (base.record.buffers * 4).max(16);
    let buffers = RecorderChange::Buffers { buffers: more };
    let mode = |mode: WriteMode| RecorderChange::WriteMode { mode };
    // Most likely to keep up first (a short budget leaves out the last): writes that skip
    // the page cache leave each sync little to wait for, and more buffers ride out the wait.
    let mut out = Vec::new();
    let mut add = |label: String, system: Vec<Assignment>, recorder: Vec<RecorderChange>| {
        out.push(Candidate {
            label,
            system,
            recorder,
        })
    };
    if base.record.write_mode == WriteMode::Buffered {
        add(
            format!("O_DIRECT writes + fdatasync every {secs} s + {more} capture buffers"),
            Vec::new(),
            vec![mode(WriteMode::Direct), sync.clone(), buffers.clone()],
        );
    }
    if base.record.write_mode != WriteMode::Dsync {
        add(
            format!("O_DSYNC writes + {more} capture buffers"),
            Vec::new(),
            vec![mode(WriteMode::Dsync), buffers.clone()],
        );
    }
    add(
        format!("fdatasync every {secs} s + {more} capture buffers"),
        Vec::new(),
        vec![sync.clone(), buffers.clone()],
    );
    if writeback {
        add(
            format!("small dirty limits + fdatasync every {secs} s + {more} capture buffers"),
            small_limits,
            vec![sync.clone(), buffers],
        );
    }
    add(format!("fdatasync every {secs} s"), Vec::new(), vec![sync]);
    if base.record.write_mode != WriteMode::Dsync {
        add(
            "O_DSYNC writes".into(),
            Vec::new(),
            vec![mode(WriteMode::Dsync)],
        );
    }
    out
}

/// Whether the recorder asks the device to acknowledge its frames with this candidate: a
/// sync cadence or O_DSYNC, its own or the user's. Without, no run can show a bound on what
/// a power cut loses.
pub fn acknowledges(c: &Candidate, base: &Session) -> bool {
    let s = session_for(c, base);
    s.record.write_mode == WriteMode::Dsync
        || s.record.fdatasync_every.is_some()
        || s.record.fdatasync_every_frames.is_some()
}

fn baseline() -> Candidate {
    Candidate {
        label: "baseline (as configured)".into(),
        system: Vec::new(),
        recorder: Vec::new(),
    }
}

/// The candidates, the baseline first, the most likely to help earliest (a budget that
/// cannot fit them all leaves out the last).
pub fn candidates(k: &Knobs) -> Vec<Candidate> {
    let rate = k.rate.max(1.0);
    let fast_writeback = vec![
        Assignment::sysctl("vm.dirty_expire_centisecs", 100),
        Assignment::sysctl("vm.dirty_writeback_centisecs", 100),
    ];
    // Background writeback from about one second of the stream, the hard limit at four:
    // the flusher starts early and writes little at a time.
    let background = ((rate as u64).max(4 << 20) >> 20 << 20).max(4 << 20);
    let small_limits = vec![
        Assignment::sysctl("vm.dirty_background_bytes", background),
        Assignment::sysctl("vm.dirty_bytes", (background * 4).max(16 << 20)),
    ];
    let mut out = vec![baseline()];
    // A family may propose what another already holds (fdatasync every 1 s for a 2 s
    // bound): tried once, under the first label.
    let mut add = |label: &str, system: Vec<Assignment>, recorder: Vec<RecorderChange>| {
        if !out
            .iter()
            .any(|c| c.system == system && c.recorder == recorder)
        {
            out.push(Candidate {
                label: label.into(),
                system,
                recorder,
            })
        }
    };
    let writeback = k.system && k.buffered;
    if let (Some(bound), Some(base)) = (k.max_loss, k.recorder) {
        let every = k.cadence.unwrap_or_else(|| cadence_for(bound));
        for c in data_at_risk(every, base, writeback, small_limits.clone()) {
            add(&c.label, c.system, c.recorder);
        }
    }
    if writeback {
        add("writeback 100/100 cs", fast_writeback.clone(), Vec::new());
        add(
            "writeback 100/100 cs + small dirty limits",
            [fast_writeback.clone(), small_limits.clone()].concat(),
            Vec::new(),
        );
    }
    if let Some(base) = k.recorder {
        let more_buffers = (base.record.buffers * 4).max(16);
        let buffered = base.record.write_mode == WriteMode::Buffered;
        if buffered {
            add(
                "O_DIRECT writes",
                Vec::new(),
                vec![RecorderChange::WriteMode {
                    mode: WriteMode::Direct,
                }],
            );
        }
        add(
            &format!("{more_buffers} capture buffers"),
            Vec::new(),
            vec![RecorderChange::Buffers {
                buffers: more_buffers,
            }],
        );
        if buffered {
            add(
                "fdatasync every 1 s",
                Vec::new(),
                vec![RecorderChange::FdatasyncEvery {
                    every_s: Duration::from_secs(1),
                }],
            );
        }
        if writeback {
            add(
                &format!("writeback 100/100 cs + {more_buffers} capture buffers"),
                fast_writeback.clone(),
                vec![RecorderChange::Buffers {
                    buffers: more_buffers,
                }],
            );
            add(
                "writeback 100/100 cs + small dirty limits + fdatasync every 1 s",
                [fast_writeback.clone(), small_limits].concat(),
                vec![RecorderChange::FdatasyncEvery {
                    every_s: Duration::from_secs(1),
                }],
            );
        }
        // The recorder's other choices; a short budget leaves these (and the queue and mount
        // after them) out first.
        if buffered {
            add(
                "io_uring writes",
                Vec::new(),
                vec![RecorderChange::WriteMode {
                    mode: WriteMode::Uring,
                }],
            );
        }
        if base.record.preallocate.is_none() {
            add(
                "preallocated files",
                Vec::new(),
                vec![RecorderChange::Preallocate],
            );
        }
        if base.record.write_size.is_some_and(|w| w < 64 << 10) {
            add(
                "whole-frame writes",
                Vec::new(),
                vec![RecorderChange::WholeFrameWrites],
            );
        }
    }
    if let Some(t) = k.target.filter(|_| k.system) {
        // Queue and mount knobs on top of the fast writeback where it applies: alone, the
        // first flush's stall would hide what they change.
        let (prefix, with) = if writeback {
            ("writeback 100/100 cs + ", fast_writeback.clone())
        } else {
            ("", Vec::new())
        };
        let mut also = |label: String, setting: Setting, value: String| {
            let mut system = with.clone();
            system.push(Assignment::new(setting, value));
            add(&format!("{prefix}{label}"), system, Vec::new());
        };
        if let Some(dev) = &t.device {
            let queue = |attr: &str| Setting::Queue {
                device: dev.clone(),
                attr: attr.into(),
            };
            if let Some((now, offered)) = &t.scheduler {
                let other = if now == "none" { "mq-deadline" } else { "none" };
                if offered.iter().any(|s| s == other) {
                    also(
                        format!("scheduler {other}"),
                        queue("scheduler"),
                        other.into(),
                    );
                }
            }
            if t.max_sectors_kb.is_some_and(|kb| kb > 128) {
                also(
                    "requests of at most 128 KiB".into(),
                    queue("max_sectors_kb"),
                    "128".into(),
                );
            }
        }
        let mount = |family: &str| Setting::Mount {
            mount_point: t.mount_point.clone(),
            family: family.into(),
        };
        if t.atime.as_deref().is_some_and(|a| a != "noatime") {
            also("noatime".into(), mount("atime"), "noatime".into());
        }
        if t.fs_type == "ext4" {
            also(
                "journal commit every 60 s".into(),
                mount("commit"),
                "commit=60".into(),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs<'a>(system: bool, target: Option<&'a QueueMount>) -> Knobs<'a> {
        Knobs {
            system,
            recorder: None,
            buffered: true,
            rate: 5e6,
            target,
            max_loss: None,
            cadence: None,
        }
    }

    #[test]
    fn without_root_no_system_setting_is_a_candidate() {
        let t = QueueMount {
            device: Some("loop3".into()),
            mount_point: "/mnt/card".into(),
            fs_type: "ext4".into(),
            scheduler: Some(("none".into(), vec!["none".into(), "mq-deadline".into()])),
            max_sectors_kb: Some(1024),
            atime: Some("relatime".into()),
        };
        let list = candidates(&knobs(false, Some(&t)));
        assert_eq!(list.len(), 1, "only the baseline: {list:?}");
        let list = candidates(&knobs(true, Some(&t)));
        let labels: Vec<&str> = list.iter().map(|c| c.label.as_str()).collect();
        for want in [
            "writeback 100/100 cs + scheduler mq-deadline",
            "writeback 100/100 cs + requests of at most 128 KiB",
            "writeback 100/100 cs + noatime",
            "writeback 100/100 cs + journal commit every 60 s",
        ] {
            assert!(labels.contains(&want), "{want} missing from {labels:?}");
        }
        let sched = list
            .iter()
            .find(|c| c.label.ends_with("mq-deadline"))
            .expect("scheduler candidate");
        assert_eq!(sched.system.len(), 3);
        assert_eq!(
            sched.settings_args().last().map(String::as_str),
            Some("queue:scheduler=mq-deadline")
        );
    }

    #[test]
    fn a_loss_bound_gives_a_sync_cadence_of_half_of_it_within_a_tenth_and_a_second() {
        let ms = |d: Duration| cadence_for(d).as_millis();
        assert_eq!(ms(Duration::from_secs(1)), 500);
        assert_eq!(ms(Duration::from_millis(300)), 150);
        assert_eq!(ms(Duration::from_millis(50)), 100);
        assert_eq!(ms(Duration::from_secs(10)), 1000);
    }

    #[test]
    fn a_cadence_sized_from_the_device_leaves_half_the_bound_to_spare() {
        let ms = |bound: f64, stream: f64, device: f64| {
            sized_cadence(Duration::from_secs_f64(bound), stream, device).as_millis()
        };
        // 4.8 MB/s to a card that writes 10 MB/s while busy: 0.65 s of recording and its
        // sync (0.31 s) fill 0.96 s of a 2 s bound.
        assert_eq!(ms(2.0, 4.8e6, 10e6), 650);
        let c = 0.65;
        assert!(c * (1.0 + 4.8 / 10.0) <= 1.0);
        // A device far faster than the stream: the first guess (half the bound).
        assert_eq!(ms(2.0, 1e6, 1e9), 950);
        assert_eq!(ms(1.0, 1e6, 1e9), 450);
        // A device no faster than the stream: the shortest cadence.
        assert_eq!(ms(0.5, 10e6, 5e6), 100);
        // Nothing measured: the first guess.
        assert_eq!(ms(2.0, 4.8e6, 0.0), 1000);
        assert_eq!(ms(2.0, 0.0, f64::NAN), 1000);
    }

    #[test]
    fn a_knob_already_in_force_is_not_a_candidate() {
        let t = QueueMount {
            device: Some("sdb".into()),
            mount_point: "/mnt/card".into(),
            fs_type: "vfat".into(),
            scheduler: Some(("mq-deadline".into(), vec!["mq-deadline".into()])),
            max_sectors_kb: Some(128),
            atime: Some("noatime".into()),
        };
        let list = candidates(&knobs(true, Some(&t)));
        assert!(
            list.iter().all(|c| !c
                .system
                .iter()
                .any(|a| matches!(a.setting, Setting::Queue { .. } | Setting::Mount { .. }))),
            "{list:?}"
        );
    }
}
