//! A flash card's behaviour as data: the nbdkit plugin (`sinkrate-nbdkit`) serves it, and
//! `sinkrate emulate up` writes its settings. No I/O here.

pub mod cache;
pub mod fake;
pub mod timing;

use std::path::PathBuf;
use std::time::Duration;

pub use fake::{FakeCapacity, FakeMode};
pub use timing::{BusyStep, GcPauses, RandomWrites, SlcCache, TimingSettings};

/// Everything the plugin is told on nbdkit's command line (`key=value`). Values are plain
/// numbers (bytes, bytes per second, microseconds): `emulate` parses what the user typed.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// What the device reports.
    pub size_bytes: u64,
    /// Where the flash's data is kept; memory when absent.
    pub file: Option<PathBuf>,
    pub timing: TimingSettings,
    pub fake: Option<FakeCapacity>,
    pub volatile_cache_bytes: Option<u64>,
    /// When this file exists the power is cut: the flash keeps what it held at that instant,
    /// the cache is lost and every later request fails.
    pub power_cut_file: Option<PathBuf>,
    /// The device's account of itself (busy time, pauses, bytes lost), rewritten as it runs.
    pub stats_file: Option<PathBuf>,
    /// Bad sectors: a request touching [offset, offset + length) fails with EIO once
    /// `armed_file` exists (a filesystem is made and mounted first).
    pub bad_range: Option<(u64, u64)>,
    pub armed_file: Option<PathBuf>,
    /// The card wears out after this many bytes written once `armed_file` exists (mkfs and
    /// mount are not counted), in the given way.
    pub wear_out: Option<WearOut>,
}

/// How a card at the end of its life behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WearMode {
    /// Every later write fails (many SD cards lock themselves read-only).
    ReadOnly,
    /// Writes fail ever more often: none at the threshold, all at twice it.
    Errors,
    /// Writes succeed and are lost: reads return what was there before.
    Stale,
}

impl WearMode {
    pub const NAMES: &'static str = "read-only, errors, stale";

    pub fn parse(text: &str) -> Option<WearMode> {
        match text {
            "read-only" => Some(WearMode::ReadOnly),
            "errors" => Some(WearMode::Errors),
            "stale" => Some(WearMode::Stale),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            WearMode::ReadOnly => "read-only",
            WearMode::Errors => "errors",
            WearMode::Stale => "stale",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WearOut {
    pub after_bytes: u64,
    pub mode: WearMode,
}

impl WearOut {
    /// The chance that a write fails once `written` bytes have been written (armed).
    pub fn failure_chance(&self, written: u64) -> f64 {
        if written < self.after_bytes {
            return 0.0;
        }
        match self.mode {
            WearMode::ReadOnly => 1.0,
            WearMode::Stale => 0.0,
            WearMode::Errors => {
                ((written - self.after_bytes) as f64 / self.after_bytes.max(1) as f64).min(1.0)
            }
        }
    }
}

impl Settings {
    /// Whether a request of `len` bytes at `offset` touches the bad sectors (armed or not).
    pub fn touches_bad(&self, offset: u64, len: u64) -> bool {
        self.bad_range
            .is_some_and(|(at, n)| offset < at.saturating_add(n) && at < offset.saturating_add(len))
    }
}

pub const KEYS: &str = "size, file, write-rate, read-rate, service-time-us, busy, random-iops, metadata, gc-pause-us, gc-every, gc-random, slc-bytes, slc-rate, volatile-cache, real-size, fake-mode, power-cut-file, stats-file, bad-offset, bad-length, armed-file, wear-out-bytes, wear-out-mode";

#[derive(Debug, Default)]
pub struct SettingsBuilder {
    values: Vec<(String, String)>,
}

impl SettingsBuilder {
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        if !KEYS.split(", ").any(|k| k == key) {
            return Err(format!("unknown key '{key}' (accepted: {KEYS})"));
        }
        self.values.retain(|(k, _)| k != key);
        self.values.push((key.to_string(), value.to_string()));
        Ok(())
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn number(&self, key: &str) -> Result<Option<u64>, String> {
        self.get(key)
            .map(|v| {
                v.parse::<u64>()
                    .map_err(|_| format!("{key}={v}: not a whole number"))
            })
            .transpose()
    }

    pub fn build(&self) -> Result<Settings, String> {
        let size_bytes = self
            .number("size")?
            .filter(|s| *s > 0)
            .ok_or("size= is required (bytes, above zero)")?;
        let write = self
            .number("write-rate")?
            .filter(|r| *r > 0)
            .ok_or("write-rate= is required (bytes per second, above zero)")?;
        let read = self
            .number("read-rate")?
            .filter(|r| *r > 0)
            .unwrap_or(write);
        let us = |key: &str| -> Result<Duration, String> {
            Ok(Duration::from_micros(self.number(key)?.unwrap_or(0)))
        };
        let gc = match self.number("gc-every")? {
            Some(every) if every > 0 => Some(GcPauses {
                pause: us("gc-pause-us")?,
                every_bytes: every,
                random: self.get("gc-random") == Some("1"),
            }),
            _ => None,
        };
        let slc = match (self.number("slc-bytes")?, self.number("slc-rate")?) {
            (Some(bytes), Some(rate)) if bytes > 0 && rate > 0 => Some(SlcCache {
                bytes,
                write_bytes_per_s: rate as f64,
            }),
            (None, None) => None,
            _ => return Err("slc-bytes= and slc-rate= go together, both above zero".into()),
        };
        let fake = match self.number("real-size")? {
            Some(real) if real > 0 && real < size_bytes => Some(FakeCapacity {
                real_bytes: real,
                mode: match self.get("fake-mode").unwrap_or("wrap") {
                    "wrap" => FakeMode::Wrap,
                    "drop" => FakeMode::Drop,
                    other => return Err(format!("fake-mode={other}: accepted: wrap, drop")),
                },
            }),
            Some(real) => {
                return Err(format!(
                    "real-size={real}: must be above zero and below size={size_bytes}"
                ))
            }
            None => None,
        };
        Ok(Settings {
            size_bytes,
            file: self.get("file").map(PathBuf::from),
            timing: TimingSettings {
                write_bytes_per_s: write as f64,
                read_bytes_per_s: read as f64,
                service_time: us("service-time-us")?,
                gc,
                slc,
                busy: self
                    .get("busy")
                    .map(parse_busy)
                    .transpose()?
                    .unwrap_or_default(),
                random_writes: self
                    .get("random-iops")
                    .map(parse_random_iops)
                    .transpose()?
                    .unwrap_or_default(),
                metadata: match self.get("metadata") {
                    Some(m) => {
                        let bad = || format!("metadata={m}: REGION_BYTES:MICROSECONDS");
                        let (region, us) = m.split_once(':').ok_or_else(bad)?;
                        let region: u64 = region.parse().map_err(|_| bad())?;
                        let us: u64 = us.parse().map_err(|_| bad())?;
                        Some((region, Duration::from_micros(us)))
                    }
                    None => None,
                },
            },
            fake,
            volatile_cache_bytes: self.number("volatile-cache")?.filter(|b| *b > 0),
            power_cut_file: self.get("power-cut-file").map(PathBuf::from),
            stats_file: self.get("stats-file").map(PathBuf::from),
            bad_range: match (self.number("bad-offset")?, self.number("bad-length")?) {
                (Some(at), Some(n)) if n > 0 => Some((at, n)),
                (None, None) => None,
                _ => {
                    return Err(
                        "bad-offset= and bad-length= go together (bytes; length above zero)".into(),
                    )
                }
            },
            armed_file: self.get("armed-file").map(PathBuf::from),
            wear_out: match (self.number("wear-out-bytes")?, self.get("wear-out-mode")) {
                (Some(after_bytes), mode) if after_bytes > 0 => Some(WearOut {
                    after_bytes,
                    mode: match mode {
                        None => WearMode::ReadOnly,
                        Some(m) => WearMode::parse(m).ok_or_else(|| {
                            format!("wear-out-mode={m}: accepted: {}", WearMode::NAMES)
                        })?,
                    },
                }),
                (None, None) => None,
                _ => {
                    return Err(
                        "wear-out-bytes= is required with wear-out-mode= (bytes, above zero)"
                            .into(),
                    )
                }
            },
        })
    }
}

/// `busy=SHARE:US,...`: the shares of writes and the extra busy (microseconds) each takes;
/// the shares sum to 1.
pub fn parse_busy(text: &str) -> Result<Vec<BusyStep>, String> {
    let mut steps = Vec::new();
    for part in text.split(',') {
        let (share, us) = part
            .split_once(':')
            .ok_or_else(|| format!("busy={text}: SHARE:MICROSECONDS pairs, comma-separated"))?;
        let share: f64 = share
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s <= 1.0)
            .ok_or_else(|| format!("busy={text}: a share is above 0 and at most 1"))?;
        let us: u64 = us
            .parse()
            .map_err(|_| format!("busy={text}: microseconds are a whole number"))?;
        steps.push(BusyStep {
            share,
            extra: Duration::from_micros(us),
        });
    }
    let total: f64 = steps.iter().map(|s| s.share).sum();
    if (total - 1.0).abs() > 1e-6 {
        return Err(format!("busy={text}: the shares sum to {total}, not 1"));
    }
    Ok(steps)
}

/// `random-iops=BYTES:IOPS,...`, sizes rising.
pub fn parse_random_iops(text: &str) -> Result<Vec<RandomWrites>, String> {
    let mut table: Vec<RandomWrites> = Vec::new();
    for part in text.split(',') {
        let (bytes, iops) = part
            .split_once(':')
            .ok_or_else(|| format!("random-iops={text}: BYTES:IOPS pairs, comma-separated"))?;
        let bytes: u64 = bytes.parse().ok().filter(|b| *b > 0).ok_or_else(|| {
            format!("random-iops={text}: a size is a whole number of bytes above 0")
        })?;
        let iops: f64 = iops
            .parse()
            .ok()
            .filter(|i: &f64| i.is_finite() && *i > 0.0)
            .ok_or_else(|| format!("random-iops={text}: IOPS are above 0"))?;
        if table.last().is_some_and(|l| l.bytes >= bytes) {
            return Err(format!("random-iops={text}: sizes rise"));
        }
        table.push(RandomWrites { bytes, iops });
    }
    Ok(table)
}

impl Settings {
    /// The bytes of flash that hold data.
    pub fn media_bytes(&self) -> u64 {
        self.fake.map_or(self.size_bytes, |f| f.real_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_read_from_nbdkit_keys() {
        let mut b = SettingsBuilder::default();
        for (k, v) in [
            ("size", "8589934592"),
            ("write-rate", "10000000"),
            ("service-time-us", "1500"),
            ("gc-every", "33554432"),
            ("gc-pause-us", "250000"),
            ("gc-random", "1"),
            ("real-size", "1073741824"),
            ("volatile-cache", "4194304"),
        ] {
            b.set(k, v).unwrap();
        }
        let s = b.build().unwrap();
        assert_eq!(s.media_bytes(), 1 << 30);
        assert_eq!(s.timing.read_bytes_per_s, 10e6);
        assert_eq!(s.timing.service_time, Duration::from_micros(1500));
        assert!(s.timing.gc.is_some_and(|g| g.random));
        assert_eq!(s.fake.map(|f| f.mode), Some(FakeMode::Wrap));
        assert_eq!(s.volatile_cache_bytes, Some(4 << 20));
    }

    #[test]
    fn a_card_wears_out_in_the_way_it_is_told() {
        let mut b = SettingsBuilder::default();
        b.set("size", "100").unwrap();
        b.set("write-rate", "10").unwrap();
        b.set("wear-out-bytes", "1000").unwrap();
        let w = b.build().unwrap().wear_out.unwrap();
        assert_eq!(w.mode, WearMode::ReadOnly);
        assert_eq!((w.failure_chance(999), w.failure_chance(1000)), (0.0, 1.0));
        b.set("wear-out-mode", "errors").unwrap();
        let w = b.build().unwrap().wear_out.unwrap();
        assert_eq!(w.failure_chance(1500), 0.5);
        assert_eq!(w.failure_chance(5000), 1.0);
        b.set("wear-out-mode", "stale").unwrap();
        assert_eq!(
            b.build().unwrap().wear_out.unwrap().failure_chance(5000),
            0.0
        );
        b.set("wear-out-mode", "melts").unwrap();
        assert!(b.build().unwrap_err().contains("read-only, errors, stale"));
    }

    #[test]
    fn bad_settings_say_what_is_accepted() {
        let mut b = SettingsBuilder::default();
        assert!(b.set("speed", "1").unwrap_err().contains("write-rate"));
        b.set("size", "100").unwrap();
        assert!(b.build().unwrap_err().contains("write-rate"));
        b.set("write-rate", "10").unwrap();
        b.set("real-size", "200").unwrap();
        assert!(b.build().unwrap_err().contains("below size"));
        b.set("real-size", "50").unwrap();
        b.set("fake-mode", "spin").unwrap();
        assert!(b.build().unwrap_err().contains("wrap, drop"));
    }
}
