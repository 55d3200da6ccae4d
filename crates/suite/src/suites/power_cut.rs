//! `power-cut`: what a power cut costs a recording, for each way of writing it. Every row
//! records on a fresh emulated card of the suite's model with an 8 MiB volatile write cache,
//! cuts its power three quarters into the recording (nothing the host sends afterwards
//! reaches the card), brings it back, mounts it (journal replay) and counts the frames that
//! are really there. One table: what each fdatasync cadence or write mode costs in write
//! latency, and what it saves when the power goes.

use sinkrate_model::record::WriteMode;
use sinkrate_model::settings::Setting;
use sinkrate_model::tunables::Assignment;
use sinkrate_platform::power::PowerSwitch;
use sinkrate_record::session::Session;
use sinkrate_settings::{Journal, Temporary};
use std::sync::Arc;
use std::time::Duration;

use crate::devices::{self, FsSpec, Maker};
use crate::suites::recording;
use crate::{Ctx, SuiteConfig, SuiteError};
use sinkrate_model::suite::table::{Better, Column, Table, Unit};

struct Condition {
    label: &'static str,
    about: &'static str,
    change: fn(&mut Session),
    /// Writeback settings for the row (sysctl name under /proc/sys, value), journaled and
    /// restored after it.
    sysctls: &'static [(&'static str, &'static str)],
}

fn sync_every(s: &mut Session, every: Duration) {
    s.record.fdatasync_every = Some(every);
    s.record.fdatasync_every_frames = None;
}

const CONDITIONS: &[Condition] = &[
    Condition { label: "buffered", about: "write(2) into the page cache, the kernel's writeback settings as they are", change: |s| s.record.write_mode = WriteMode::Buffered, sysctls: &[] },
    Condition {
        label: "buffered, expire 1 s",
        about: "write(2), with vm.dirty_expire_centisecs and vm.dirty_writeback_centisecs at 100 (1 s) for the row",
        change: |s| s.record.write_mode = WriteMode::Buffered,
        sysctls: &[("vm/dirty_expire_centisecs", "100"), ("vm/dirty_writeback_centisecs", "100")],
    },
    Condition { label: "fdatasync 1 s", about: "write(2), fdatasync every second", change: |s| { s.record.write_mode = WriteMode::Buffered; sync_every(s, Duration::from_secs(1)) }, sysctls: &[] },
    Condition { label: "fdatasync 0.2 s", about: "write(2), fdatasync every 200 ms", change: |s| { s.record.write_mode = WriteMode::Buffered; sync_every(s, Duration::from_millis(200)) }, sysctls: &[] },
    Condition { label: "direct", about: "O_DIRECT, no sync: the card acknowledges from its volatile cache", change: |s| s.record.write_mode = WriteMode::Direct, sysctls: &[] },
    Condition { label: "direct, fdatasync 1 s", about: "O_DIRECT, fdatasync every second (a cache flush)", change: |s| { s.record.write_mode = WriteMode::Direct; sync_every(s, Duration::from_secs(1)) }, sysctls: &[] },
    Condition { label: "dsync", about: "O_DSYNC: every write returns once the card has it on flash", change: |s| s.record.write_mode = WriteMode::Dsync, sysctls: &[] },
];

/// The cache every card of the suite has: a few seconds of an SD card's writes.
const VOLATILE_CACHE_BYTES: u64 = 8 << 20;
const DEVICE_BYTES: u64 = 512 << 20;

pub fn estimate_s(cfg: &SuiteConfig) -> f64 {
    let runs = cfg.runs_each();
    runs as f64 * CONDITIONS.len() as f64 * (recording::duration(cfg).as_secs_f64() * 0.75 + 4.0)
}

pub fn run(ctx: &mut Ctx) -> Result<Vec<Table>, SuiteError> {
    let cfg = ctx.cfg;
    let duration = recording::duration(cfg);
    let cut_at = duration.mul_f64(0.75);
    let mut card = devices::card_for(&cfg.dir, &cfg.model).map_err(SuiteError::Usage)?;
    card.device.volatile_cache_bytes = VOLATILE_CACHE_BYTES;
    let maker = Maker::Emulated(Box::new(card));
    ctx.made_on = Some(format!(
        "{} with an 8 MiB volatile write cache, ext4, {} each; power cut at {:.1} s",
        maker.describe(),
        sinkrate_units::fio::bytes_iec(DEVICE_BYTES as f64),
        cut_at.as_secs_f64()
    ));
    let mut table = Table::new(
        &format!(
            "{}: power cut at {:.1} s of {} s, frames on the card afterwards",
            cfg.recording.label,
            cut_at.as_secs_f64(),
            duration.as_secs()
        ),
        vec![
            Column::new("write_p99_s", "write p99", Unit::Seconds, Better::Lower),
            Column::new("write_max_s", "worst write", Unit::Seconds, Better::Lower),
            Column::new("frames_dropped", "dropped", Unit::Count, Better::Lower),
            Column::new(
                "frames_believed_written",
                "believed written",
                Unit::Count,
                Better::Neither,
            ),
            Column::new("frames_survived", "survived", Unit::Count, Better::Higher),
            Column::new("frames_lost", "lost", Unit::Count, Better::Lower),
            Column::new(
                "frames_durable_lost",
                "synced yet lost",
                Unit::Count,
                Better::Lower,
            ),
            Column::new(
                "recording_lost_s",
                "recording lost",
                Unit::Seconds,
                Better::Lower,
            ),
        ],
    );
    for c in CONDITIONS {
        table.row(c.label, c.about);
    }
    let spec = FsSpec {
        fs: "ext4",
        mkfs_opts: vec!["-E".into(), "lazy_itable_init=0,lazy_journal_init=0".into()],
        mount_opts: String::new(),
    };
    for run in 0..ctx.runs() {
        for c in CONDITIONS {
            ctx.check_stop()?;
            ctx.phase(&format!("run {}: {}", run + 1, c.label));
            let made = devices::make(&maker, &spec, DEVICE_BYTES)
                .map_err(|e| SuiteError::Failed(format!("{}: {e}", c.label)))?;
            let switch: Arc<dyn PowerSwitch> = Arc::new(
                sinkrate_emulate::power::card_holding(&made.dir)
                    .map_err(|e| SuiteError::Failed(format!("{}: {e}", c.label)))?,
            );
            // Journaled before the change; put back when `_guard` drops, whatever happens.
            let settings: Vec<Assignment> = c
                .sysctls
                .iter()
                .map(|(name, value)| {
                    Assignment::new(
                        Setting::Sysctl {
                            name: (*name).into(),
                        },
                        *value,
                    )
                })
                .collect();
            let _guard = (!settings.is_empty())
                .then(|| Temporary::apply(&Journal::live(), &settings))
                .transpose()
                .map_err(|e| SuiteError::Failed(format!("{}: {e}", c.label)))?;
            let rec = recording::record(
                ctx,
                &cfg.recording,
                &made.dir,
                &|s| {
                    (c.change)(s);
                    s.record.power_cut_at = Some(cut_at);
                    s.power_switch = Some(switch.clone());
                },
                c.label,
                run,
            )?;
            drop(made);
            let t = &rec.result.totals;
            table.add(c.label, "write_p99_s", t.write_latency_ns.p99 as f64 / 1e9);
            table.add(c.label, "write_max_s", t.write_latency_ns.max as f64 / 1e9);
            table.add(c.label, "frames_dropped", t.frames_dropped as f64);
            let Some(cut) = &rec.result.power_cut else {
                return Err(SuiteError::Failed(format!(
                    "{}: the recording ended before its power cut",
                    c.label
                )));
            };
            if !cut.mounted_after {
                table.row(c.label, c.about).mark = Some(format!(
                    "the filesystem did not mount after the cut: {}",
                    cut.mount_notes.join("; ")
                ));
            }
            let sum = |f: fn(&sinkrate_model::record::StreamSurvival) -> f64| -> f64 {
                cut.streams.iter().map(f).sum()
            };
            table.add(
                c.label,
                "frames_believed_written",
                sum(|s| s.frames_believed_written as f64),
            );
            table.add(
                c.label,
                "frames_survived",
                sum(|s| s.frames_survived as f64),
            );
            table.add(c.label, "frames_lost", sum(|s| s.frames_lost as f64));
            table.add(
                c.label,
                "frames_durable_lost",
                sum(|s| s.frames_durable_lost as f64),
            );
            table.add(
                c.label,
                "recording_lost_s",
                cut.streams
                    .iter()
                    .map(|s| s.recording_lost_s)
                    .fold(0.0, f64::max),
            );
        }
    }
    ctx.notes.push("believed written: frames whose write call had returned before the cut; survived: of those, found whole (header and crc32c) on the card after it was mounted again; synced yet lost: frames a completed fdatasync or O_DSYNC write had reported on the card that are not on it; recording lost: from the first frame missing to the cut, the longest of the streams".into());
    Ok(vec![table])
}
