//! `filesystems` (seed 003): one recording on emulated cards of one model (or a scratch
//! device), formatted with each filesystem a recorder might use. Beyond the seed's
//! bandwidth: frames dropped, the worst write, how many bytes the device wrote per byte of
//! frames (write amplification, from the device's own counters) and CPU.

use crate::devices::{self, FsSpec};
use crate::suites::{metadata, recording};
use crate::{Ctx, SuiteConfig, SuiteError};
use sinkrate_model::suite::table::{Better, Column, Table, Unit};

struct Variant {
    label: &'static str,
    about: &'static str,
    fs: &'static str,
    mkfs: &'static [&'static str],
    mount: &'static str,
}

/// ext4 zeroes its inode tables and journal in the background after the first mount unless
/// told to at mkfs: the device would count that as the recording's writes.
const EXT4_EAGER: &[&str] = &["-E", "lazy_itable_init=0,lazy_journal_init=0"];

const VARIANTS: &[Variant] = &[
    Variant {
        label: "ext4 ordered",
        about: "ext4, data=ordered (the default)",
        fs: "ext4",
        mkfs: EXT4_EAGER,
        mount: "data=ordered",
    },
    Variant {
        label: "ext4 writeback",
        about: "ext4, data=writeback",
        fs: "ext4",
        mkfs: EXT4_EAGER,
        mount: "data=writeback",
    },
    Variant {
        label: "ext4 no journal",
        about: "ext4 made with -O ^has_journal",
        fs: "ext4",
        mkfs: &["-O", "^has_journal", "-E", "lazy_itable_init=0"],
        mount: "",
    },
    Variant {
        label: "xfs",
        about: "xfs",
        fs: "xfs",
        mkfs: &[],
        mount: "",
    },
    Variant {
        label: "btrfs",
        about: "btrfs",
        fs: "btrfs",
        mkfs: &[],
        mount: "",
    },
    Variant {
        label: "f2fs",
        about: "f2fs (made for flash)",
        fs: "f2fs",
        mkfs: &[],
        mount: "",
    },
    Variant {
        label: "FAT32",
        about: "FAT32, as SDHC cards ship",
        fs: "vfat",
        mkfs: &["-F", "32"],
        mount: "",
    },
    Variant {
        label: "exFAT",
        about: "exFAT, as SDXC cards ship",
        fs: "exfat",
        mkfs: &[],
        mount: "",
    },
];

const DEVICE_BYTES: u64 = 512 << 20;

/// The packages the suite's filesystems need here, as one `apt-get install` line; None when
/// nothing is missing. (A filesystem no package can bring to this kernel is listed in the
/// table with the reason instead.)
pub fn missing_packages() -> Option<String> {
    let mut commands: Vec<&str> = Vec::new();
    let mut packages: Vec<&str> = Vec::new();
    for v in VARIANTS {
        for (cmd, pkg) in devices::missing_packages(v.fs) {
            if !commands.contains(&cmd) {
                commands.push(cmd);
            }
            if !packages.contains(&pkg) {
                packages.push(pkg);
            }
        }
    }
    (!commands.is_empty()).then(|| {
        format!(
            "suite filesystems: missing {} (fix: apt-get install -y {})",
            commands.join(", "),
            packages.join(" ")
        )
    })
}

pub fn estimate_s(cfg: &SuiteConfig) -> f64 {
    let runs = cfg.runs_each();
    runs as f64 * VARIANTS.len() as f64 * (recording::duration(cfg).as_secs_f64() + 4.0)
}

pub fn run(ctx: &mut Ctx) -> Result<Vec<Table>, SuiteError> {
    let cfg = ctx.cfg;
    let mut columns = recording::columns();
    columns.insert(
        3,
        Column::new(
            "device_bytes_per_frame_byte",
            "device B per frame B",
            Unit::Ratio,
            Better::Lower,
        ),
    );
    let mut table = Table::new(
        &format!(
            "{} on each filesystem, {} s",
            cfg.recording.label,
            recording::duration(cfg).as_secs()
        ),
        columns,
    );
    // Each filesystem once: whether it can be made here, and by whom.
    let mut usable = Vec::new();
    for v in VARIANTS {
        match devices::unavailable(v.fs) {
            Some(why) => table.not_run(v.label, v.about, &why),
            None => {
                let row = table.row(v.label, v.about);
                if let Some(program) = devices::fuse_driver(v.fs) {
                    row.mark = Some(format!(
                        "through FUSE ({program}): the kernel here has no {}; a board's kernel driver behaves differently",
                        v.fs
                    ));
                }
                usable.push(v);
            }
        }
    }
    let maker = metadata::maker(cfg)?;
    ctx.made_on = Some(format!(
        "{}, {} each",
        maker.describe(),
        sinkrate_units::fio::bytes_iec(DEVICE_BYTES as f64)
    ));
    let base = cfg.recording.clone();
    for run in 0..ctx.runs() {
        for v in &usable {
            ctx.check_stop()?;
            ctx.phase(&format!("run {}: {}", run + 1, v.label));
            let spec = FsSpec {
                fs: v.fs,
                mkfs_opts: v.mkfs.iter().map(|s| s.to_string()).collect(),
                mount_opts: v.mount.into(),
            };
            let made = devices::make(&maker, &spec, DEVICE_BYTES)
                .map_err(|e| SuiteError::Failed(format!("{}: {e}", v.label)))?;
            let before = made.disk.as_deref().and_then(devices::disk_written_bytes);
            let rec = recording::record(ctx, &base, &made.dir, &|_| {}, v.label, run)?;
            made.unmount_and_flush()
                .map_err(|e| SuiteError::Failed(format!("{}: {e}", v.label)))?;
            let after = made.disk.as_deref().and_then(devices::disk_written_bytes);
            recording::add(&mut table, v.label, &rec);
            let frame_bytes = rec.result.totals.bytes_written;
            if let (Some(b), Some(a)) = (before, after) {
                if frame_bytes > 0 {
                    table.add(
                        v.label,
                        "device_bytes_per_frame_byte",
                        a.saturating_sub(b) as f64 / frame_bytes as f64,
                    );
                }
            }
            drop(made);
        }
    }
    ctx.notes.push("device B per frame B: what the device's own counter (/proc/diskstats) says it wrote over the recording and the unmount that followed it, per byte of frames written: journal, metadata and allocation included".into());
    Ok(vec![table])
}
