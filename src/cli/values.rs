//! Values of sinkrate's own flags (fio job options have their own rules in jobspec):
//! durations with a unit (seconds when bare), sizes in dd's convention.

use std::time::Duration;

use anyhow::{anyhow, Result};

/// `--flag 30s`, `--flag 100ms`, `--flag 5m`: one error line naming the flag.
pub fn duration(flag: &str, text: &str) -> Result<Duration> {
    sinkrate_units::fio::parse_time(text, sinkrate_units::fio::TimeUnit::Seconds)
        .map_err(|e| anyhow!("--{flag}: {e}"))
}

/// A clap value parser for durations (the flag's name is added by clap).
pub fn duration_value(text: &str) -> Result<Duration, String> {
    sinkrate_units::fio::parse_time(text, sinkrate_units::fio::TimeUnit::Seconds)
        .map_err(|e| e.to_string())
}

/// `--flag 3M` (3 MiB), `--flag 3MB` (3 MB).
pub fn size(flag: &str, text: &str) -> Result<u64> {
    sinkrate_units::product::parse_size(text).map_err(|e| anyhow!("--{flag}: {e}"))
}

/// `--live`, `--progress`, `--color`: on a terminal by default, or always, or never.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum When {
    Auto,
    Always,
    Never,
}

impl When {
    /// Whether to show it, given whether the stream it goes to is a terminal.
    pub fn wanted(self, terminal: bool) -> bool {
        match self {
            When::Always => true,
            When::Never => false,
            When::Auto => terminal,
        }
    }
}

/// `--write-mode` of record and check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WriteModeArg {
    Buffered,
    Direct,
    Dsync,
    Uring,
    Null,
}

impl From<WriteModeArg> for sinkrate_model::record::WriteMode {
    fn from(w: WriteModeArg) -> Self {
        use sinkrate_model::record::WriteMode;
        match w {
            WriteModeArg::Buffered => WriteMode::Buffered,
            WriteModeArg::Direct => WriteMode::Direct,
            WriteModeArg::Dsync => WriteMode::Dsync,
            WriteModeArg::Uring => WriteMode::Uring,
            WriteModeArg::Null => WriteMode::Null,
        }
    }
}

/// `--writers`: a writer thread per stream, or one for all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Writers {
    PerStream,
    Shared,
}

/// `--preallocate-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PreallocArg {
    Fallocate,
    Ftruncate,
    Pregrow,
}

impl From<PreallocArg> for sinkrate_model::record::PreallocMode {
    fn from(p: PreallocArg) -> Self {
        use sinkrate_model::record::PreallocMode;
        match p {
            PreallocArg::Fallocate => PreallocMode::Fallocate,
            PreallocArg::Ftruncate => PreallocMode::Ftruncate,
            PreallocArg::Pregrow => PreallocMode::Pregrow,
        }
    }
}

/// `tune search --objective`: what ranks the candidates that keep up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ObjectiveArg {
    /// The worst write, then lateness, throttling, CPU and data at risk
    Latency,
    /// The device's bytes per hour of recording (what wears the card), then latency
    Wear,
}

/// `--find-max`: what the search varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FindMaxArg {
    Streams,
    Bitrate,
    Fps,
    /// A replay's pace (with --replay)
    Speed,
}

impl From<FindMaxArg> for sinkrate_model::record::Searched {
    fn from(f: FindMaxArg) -> Self {
        use sinkrate_model::record::Searched;
        match f {
            FindMaxArg::Streams => Searched::Streams,
            FindMaxArg::Bitrate => Searched::Bitrate,
            FindMaxArg::Fps => Searched::Fps,
            FindMaxArg::Speed => Searched::Speed,
        }
    }
}

/// `emulate up --fs`: the filesystems emulate can make (mkfs.NAME must be installed, and the
/// kernel must support it: both are checked before anything is set up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EmulateFs {
    Ext4,
    Xfs,
    Btrfs,
    /// FAT32 (what SDHC cards ship with); through FUSE (fusefat) where the kernel has no vfat
    Vfat,
    F2fs,
    /// exFAT (SDXC cards); through FUSE (exfat-fuse) where the kernel has none
    Exfat,
    /// No filesystem: the device is left raw and MOUNTPOINT becomes a link to it (for
    /// verify --capacity, or bench on a device)
    None,
}

/// `emulate up --error`: the errno a failing request returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "UPPER")]
pub enum InjectedError {
    Eio,
    Enospc,
    Eperm,
    Enomem,
    Einval,
    Eshutdown,
}

/// `emulate up --error-on`: which requests fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ErrorOn {
    All,
    Writes,
    Reads,
}

/// The name a value has on the command line (and in emulate's device state).
pub fn value_name(v: impl clap::ValueEnum) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

/// `--endurance` and `--hours-per-day` as the recording session takes them. An endurance
/// needs its unit: a bare number could be bytes, gigabytes or hours.
pub fn endurance(
    args: &super::EnduranceArgs,
) -> Result<(Option<sinkrate_model::health::Endurance>, f64)> {
    let hours = args.hours_per_day;
    if !(hours > 0.0 && hours <= 24.0) {
        return Err(anyhow::anyhow!(
            "--hours-per-day {hours}: a day has 24 hours (give more than 0, at most 24)"
        ));
    }
    let Some(text) = args.endurance.as_deref() else {
        return Ok((None, hours));
    };
    let bad = |why: &str| {
        anyhow::anyhow!(
            "--endurance {text}: {why} (give bytes with a unit, e.g. 40TB or 2TiB, or hours of video at a bitrate, e.g. 20000h@26M)"
        )
    };
    let t = text.trim();
    let bytes = if let Some((h, rate)) = t.split_once('@') {
        let h = h
            .strip_suffix('h')
            .ok_or_else(|| bad("hours end in h"))?
            .parse::<f64>()
            .map_err(|_| bad("the hours are not a number"))?;
        // Cards are rated in hours at a bitrate in Mbit/s: a bare number would be read as
        // bits a second, a million times too little.
        if rate.trim().chars().all(|c| c.is_ascii_digit() || c == '.') {
            return Err(bad(&format!(
                "the bitrate '{rate}' needs its unit ({rate}M for {rate} Mbit/s)"
            )));
        }
        let bits = sinkrate_units::product::parse_bitrate(rate).map_err(|e| bad(&e))?;
        h * 3600.0 * bits as f64 / 8.0
    } else {
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| bad("a number needs its unit"))?;
        let (number, unit) = t.split_at(split);
        let number: f64 = number.parse().map_err(|_| bad("not a number"))?;
        let scale: f64 = match unit.trim() {
            "PB" => 1e15,
            "TB" => 1e12,
            "GB" => 1e9,
            "MB" => 1e6,
            "PiB" => (1u64 << 50) as f64,
            "TiB" => (1u64 << 40) as f64,
            "GiB" => (1u64 << 30) as f64,
            "MiB" => (1u64 << 20) as f64,
            _ => {
                return Err(bad(
                    "the unit is one of TB, GB, MB, PB or TiB, GiB, MiB, PiB",
                ))
            }
        };
        number * scale
    };
    if !(bytes >= 1.0 && bytes.is_finite()) {
        return Err(bad("it must be above zero"));
    }
    Ok((
        Some(sinkrate_model::health::Endurance {
            remaining_bytes: bytes as u64,
            source: format!("--endurance {text}"),
        }),
        hours,
    ))
}
