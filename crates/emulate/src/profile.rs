//! Card profiles: a card's behaviour as a versioned JSON document, served by the nbdkit device
//! (`sinkrate emulate up --profile NAME|FILE`). The shipped profiles are calibrated from
//! published measurements, each naming its source and how its figures were derived.
//!
//! The format, `sinkrate.card-profile/1`:
//!
//! | field | meaning |
//! | --- | --- |
//! | `format` | `sinkrate.card-profile/1` |
//! | `name`, `about` | the profile's name and what card it stands for |
//! | `sources` | where the figures come from |
//! | `capacity` | the size of the card it stands for (said; `--size` sets the emulated card's) |
//! | `write_rate`, `read_rate` | sustained sequential rates (`10MB`, `20M`) |
//! | `service_time` | what every request costs on top of its length at the rate (`1ms`) |
//! | `busy` | the distribution of extra busy per write: `[{"share": 0.98, "extra": "0ms"}, ...]`, shares summing to 1 |
//! | `pauses` | garbage collection: `PAUSE/BYTES` after every BYTES written, or `PAUSE/~BYTES` at random with that mean |
//! | `random_writes` | random-write IOPS by size: `[{"size": "4k", "iops": 34}, ...]`, sizes rising |
//! | `slc_cache` | `SIZE@RATE`: a fast region that takes writes until full, then the card's rate |
//! | `metadata` | `{"region": "4M", "extra": "20ms"}`: writes in the card's first bytes (where a FAT and its directory live) take this much more |
//!
//! Every field but `format`, `name` and `write_rate` is optional; an unknown field is an
//! error (a typo would otherwise leave a behaviour out without a word).

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The format this sinkrate reads.
pub const FORMAT: &str = "sinkrate.card-profile/1";
const FORMAT_PREFIX: &str = "sinkrate.card-profile/";
/// A profile file is small; a larger one is not a profile.
const MAX_FILE_BYTES: u64 = 256 << 10;

/// The profiles shipped with sinkrate: (name, document).
pub const SHIPPED: &[(&str, &str)] = &[
    (
        "px4-sandisk-extreme-u3-32g",
        include_str!("../profiles/px4-sandisk-extreme-u3-32g.json"),
    ),
    (
        "px4-sandisk-ultra-c10-8g",
        include_str!("../profiles/px4-sandisk-ultra-c10-8g.json"),
    ),
    (
        "px4-sandisk-class4-8g",
        include_str!("../profiles/px4-sandisk-class4-8g.json"),
    ),
    (
        "px4-sandisk-high-endurance-32g",
        include_str!("../profiles/px4-sandisk-high-endurance-32g.json"),
    ),
    (
        "px4-sandisk-ultra-plus-16g",
        include_str!("../profiles/px4-sandisk-ultra-plus-16g.json"),
    ),
    (
        "px4-sandisk-pixtor-16g",
        include_str!("../profiles/px4-sandisk-pixtor-16g.json"),
    ),
    (
        "v10-just-meets",
        include_str!("../profiles/v10-just-meets.json"),
    ),
    (
        "c10-gc-misses",
        include_str!("../profiles/c10-gc-misses.json"),
    ),
];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BusyShare {
    pub share: f64,
    pub extra: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeIops {
    pub size: String,
    pub iops: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    pub region: String,
    pub extra: String,
}

/// A profile as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardProfile {
    pub format: String,
    pub name: String,
    #[serde(default)]
    pub about: String,
    #[serde(default)]
    pub sources: Vec<String>,
    #[serde(default)]
    pub capacity: Option<String>,
    pub write_rate: String,
    #[serde(default)]
    pub read_rate: Option<String>,
    #[serde(default)]
    pub service_time: Option<String>,
    #[serde(default)]
    pub busy: Vec<BusyShare>,
    #[serde(default)]
    pub pauses: Option<String>,
    #[serde(default)]
    pub random_writes: Vec<SizeIops>,
    #[serde(default)]
    pub slc_cache: Option<String>,
    #[serde(default)]
    pub metadata: Option<Metadata>,
}

/// A profile checked and in the device model's numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub name: String,
    pub about: String,
    pub sources: Vec<String>,
    pub capacity_bytes: Option<u64>,
    pub write_bytes_per_s: u64,
    pub read_bytes_per_s: Option<u64>,
    pub service_time_us: u64,
    /// (share, microseconds)
    pub busy: Vec<(f64, u64)>,
    /// (pause µs, every bytes, random)
    pub pauses: Option<(u64, u64, bool)>,
    /// (bytes, IOPS)
    pub random_iops: Vec<(u64, f64)>,
    /// (bytes, bytes/s)
    pub slc: Option<(u64, u64)>,
    /// (region bytes, extra µs)
    pub metadata: Option<(u64, u64)>,
}

/// What no real card does: beyond it a value is a mistake, not a card.
const MAX_RATE: u64 = 20_000_000_000;
const MAX_DELAY: Duration = Duration::from_secs(60);

fn delay(field: &str, text: &str) -> Result<u64, String> {
    let d = sinkrate_units::product::parse_latency(text).map_err(|e| format!("{field}: {e}"))?;
    if d > MAX_DELAY {
        return Err(format!("{field} {text}: over 60 s, which no card takes"));
    }
    Ok(d.as_micros() as u64)
}

fn rate(field: &str, text: &str) -> Result<u64, String> {
    let r = sinkrate_units::product::parse_rate(text).map_err(|e| format!("{field}: {e}"))?;
    if r == 0 || r > MAX_RATE {
        return Err(format!("{field} {text}: above 0 and at most 20 GB/s"));
    }
    Ok(r)
}

fn size(field: &str, text: &str) -> Result<u64, String> {
    let s = sinkrate_units::product::parse_size(text).map_err(|e| format!("{field}: {e}"))?;
    if s == 0 {
        return Err(format!("{field} {text}: above 0"));
    }
    Ok(s)
}

impl CardProfile {
    /// Parses and checks a profile document.
    pub fn parse(text: &str) -> Result<Resolved, String> {
        // The format first: a newer document may have fields this sinkrate does not know.
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not a card profile (JSON: {e})"))?;
        let format = value
            .get("format")
            .and_then(|f| f.as_str())
            .ok_or("not a card profile: no \"format\" (sinkrate.card-profile/1)")?;
        match format.strip_prefix(FORMAT_PREFIX).map(str::parse::<u32>) {
            Some(Ok(1)) => {}
            Some(Ok(n)) if n > 1 => {
                return Err(format!(
                    "format {format}: written by a newer sinkrate (this one reads {FORMAT})"
                ))
            }
            _ => return Err(format!("format {format}: not {FORMAT}")),
        }
        let p: CardProfile =
            serde_json::from_value(value).map_err(|e| format!("not a card profile: {e}"))?;
        p.resolve()
    }

    fn resolve(&self) -> Result<Resolved, String> {
        if self.name.trim().is_empty() {
            return Err("name: empty".into());
        }
        let write = rate("write_rate", &self.write_rate)?;
        let read = self
            .read_rate
            .as_deref()
            .map(|r| rate("read_rate", r))
            .transpose()?;
        let mut busy = Vec::new();
        for b in &self.busy {
            if !(b.share.is_finite() && b.share > 0.0 && b.share <= 1.0) {
                return Err(format!(
                    "busy: share {} is not above 0 and at most 1",
                    b.share
                ));
            }
            busy.push((b.share, delay("busy extra", &b.extra)?));
        }
        let total: f64 = busy.iter().map(|(s, _)| s).sum();
        if !busy.is_empty() && (total - 1.0).abs() > 1e-6 {
            let shown = (total * 1e6).round() / 1e6;
            return Err(format!("busy: the shares sum to {shown}, not 1"));
        }
        let pauses = self
            .pauses
            .as_deref()
            .map(|g| -> Result<(u64, u64, bool), String> {
                let (pause, every) = g.split_once('/').ok_or_else(|| {
                    format!("pauses {g}: PAUSE/BYTES or PAUSE/~BYTES (250ms/32M)")
                })?;
                let (random, every) = match every.strip_prefix('~') {
                    Some(rest) => (true, rest),
                    None => (false, every),
                };
                let us = delay("pauses", pause)?;
                if us == 0 {
                    return Err(format!("pauses {g}: the pause is above 0"));
                }
                Ok((us, size("pauses", every)?, random))
            })
            .transpose()?;
        let mut random_iops: Vec<(u64, f64)> = Vec::new();
        for r in &self.random_writes {
            let bytes = size("random_writes size", &r.size)?;
            if !(r.iops.is_finite() && r.iops > 0.0 && r.iops <= 10_000_000.0) {
                return Err(format!(
                    "random_writes: {} IOPS is not above 0 and at most 10 million",
                    r.iops
                ));
            }
            if random_iops.last().is_some_and(|(b, _)| *b >= bytes) {
                return Err("random_writes: sizes rise".into());
            }
            random_iops.push((bytes, r.iops));
        }
        let slc = self
            .slc_cache
            .as_deref()
            .map(|c| -> Result<(u64, u64), String> {
                let (bytes, r) = c
                    .split_once('@')
                    .ok_or_else(|| format!("slc_cache {c}: SIZE@RATE (512M@90M)"))?;
                Ok((size("slc_cache", bytes)?, rate("slc_cache", r)?))
            })
            .transpose()?;
        let metadata = self
            .metadata
            .as_ref()
            .map(|m| -> Result<(u64, u64), String> {
                Ok((
                    size("metadata region", &m.region)?,
                    delay("metadata extra", &m.extra)?,
                ))
            })
            .transpose()?;
        Ok(Resolved {
            name: self.name.clone(),
            about: self.about.clone(),
            sources: self.sources.clone(),
            capacity_bytes: self
                .capacity
                .as_deref()
                .map(|c| size("capacity", c))
                .transpose()?,
            write_bytes_per_s: write,
            read_bytes_per_s: read,
            service_time_us: self
                .service_time
                .as_deref()
                .map(|t| delay("service_time", t))
                .transpose()?
                .unwrap_or(0),
            busy,
            pauses,
            random_iops,
            slc,
            metadata,
        })
    }
}

/// The profile `name_or_path` names: a shipped profile by its name, else a file (read
/// without following a link someone else could have planted, at most 256 KiB).
pub fn load(name_or_path: &str) -> Result<Resolved, String> {
    if let Some((_, text)) = SHIPPED.iter().find(|(n, _)| *n == name_or_path) {
        return CardProfile::parse(text).map_err(|e| format!("--profile {name_or_path}: {e}"));
    }
    let path = Path::new(name_or_path);
    if !name_or_path.contains('/') && !path.exists() {
        return Err(format!(
            "--profile {name_or_path}: no such profile (shipped: {}; or a file's path)",
            SHIPPED
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if let Some(why) = sinkrate_sys::owned::planted_symlink(path) {
        return Err(format!("--profile {}: {why}", path.display()));
    }
    let bytes = sinkrate_sys::input::read_capped(path, MAX_FILE_BYTES)
        .map_err(|e| format!("--profile {}: {e}", path.display()))?;
    let text = sinkrate_sys::input::text(bytes)
        .map_err(|e| format!("--profile {}: {e}", path.display()))?;
    CardProfile::parse(&text).map_err(|e| format!("--profile {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_profile_reads_and_names_its_source() {
        for (name, text) in SHIPPED {
            let p = CardProfile::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(&p.name, name);
            assert!(!p.sources.is_empty(), "{name} cites its source");
        }
    }

    fn doc(extra: &str) -> String {
        format!(
            r#"{{"format": "sinkrate.card-profile/1", "name": "t", "write_rate": "10MB"{extra}}}"#
        )
    }

    #[test]
    fn bad_profiles_are_refused_with_what_is_wrong() {
        let cases = [
            (
                r#"{"format": "sinkrate.card-profile/2", "name": "t", "write_rate": "10MB", "new": 1}"#.to_string(),
                "written by a newer sinkrate",
            ),
            (doc(r#", "busy": [{"share": 0.5, "extra": "0ms"}, {"share": 0.4, "extra": "9ms"}]"#), "sum to 0.9"),
            (doc(r#", "busy": [{"share": -0.5, "extra": "0ms"}]"#), "not above 0"),
            (doc(r#", "service_time": "-1ms""#), "service_time"),
            (doc(r#", "pauses": "400ms/0""#), "out of range"),
            (doc(r#", "pauses": "61s/8M""#), "out of range"),
            (doc(r#", "random_writes": [{"size": "16k", "iops": 5}, {"size": "4k", "iops": 34}]"#), "sizes rise"),
            (doc(r#", "random_writes": [{"size": "4k", "iops": 0}]"#), "IOPS"),
            (doc(r#", "speed": "fast""#), "unknown field"),
        ];
        for (text, says) in cases {
            let err = CardProfile::parse(&text).expect_err(&text);
            assert!(err.contains(says), "{text}: {err}");
        }
        let err = CardProfile::parse(
            r#"{"format": "sinkrate.card-profile/1", "name": "t", "write_rate": "100GB"}"#,
        )
        .expect_err("absurd");
        assert!(err.contains("at most 20 GB/s"), "{err}");
    }

    #[test]
    fn a_profile_is_the_device_models_numbers() {
        let p = CardProfile::parse(&doc(
            r#", "service_time": "2ms", "busy": [{"share": 0.98, "extra": "0ms"}, {"share": 0.02, "extra": "120ms"}],
                "pauses": "400ms/~64M", "random_writes": [{"size": "4k", "iops": 34}], "metadata": {"region": "4M", "extra": "20ms"}"#,
        ))
        .expect("parses");
        assert_eq!(p.write_bytes_per_s, 10_000_000);
        assert_eq!(p.service_time_us, 2000);
        assert_eq!(p.busy, [(0.98, 0), (0.02, 120_000)]);
        assert_eq!(p.pauses, Some((400_000, 64 << 20, true)));
        assert_eq!(p.random_iops, [(4096, 34.0)]);
        assert_eq!(p.metadata, Some((4 << 20, 20_000)));
    }
}
