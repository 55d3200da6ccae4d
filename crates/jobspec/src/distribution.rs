//! fio's `random_distribution` (where random I/O lands) and the `rw=MODE:N` offset
//! modifier with `rw_sequencer`, parsed into typed values.

use serde::{Deserialize, Serialize};

use crate::fio_numbers::parse_size;
use sinkrate_units::fio::KbBase;

/// fio's `random_distribution=`, for one data direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RandomDistribution {
    /// Uniform, through the random map unless `norandommap`.
    Random,
    /// `zipf:THETA[:CENTER]`.
    Zipf { theta: f64, center: Option<f64> },
    /// `pareto:H[:CENTER]`.
    Pareto { h: f64, center: Option<f64> },
    /// `normal:DEVIATION[:CENTER]`, the deviation in percent of the range.
    Normal { deviation: f64, center: Option<f64> },
    /// `zoned:ACCESS%/SIZE%:...`: each zone takes its share of the accesses.
    Zoned { zones: Vec<Zone> },
    /// `zoned_abs:ACCESS%/SIZE:...`: zones of absolute sizes from the start of the file.
    ZonedAbs { zones: Vec<Zone> },
    /// `sequence:I,J,K`: these block indices, in this order (newer fio; see `random_sequence_stride`).
    Sequence { blocks: Vec<u64> },
}

/// One zone: the share of accesses it gets and its size (percent of the region for
/// `zoned`, bytes for `zoned_abs`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Zone {
    pub access_pct: f64,
    pub size: f64,
}

impl RandomDistribution {
    pub fn is_uniform(&self) -> bool {
        matches!(self, RandomDistribution::Random)
    }

    /// Parses fio's syntax into the read and write distributions (a third, trim, set is
    /// accepted and has no direction here).
    pub fn parse(text: &str, kb: KbBase) -> Result<[RandomDistribution; 2], String> {
        let text = text.trim();
        let (kind, rest) = match text.split_once(':') {
            Some((k, r)) => (k.trim(), Some(r.trim())),
            None => (text, None),
        };
        let one = |d: RandomDistribution| Ok([d.clone(), d]);
        match kind {
            "random" => match rest {
                None => one(RandomDistribution::Random),
                Some(_) => Err("'random' takes no value".into()),
            },
            "zipf" => {
                let (theta, center) = value_and_center(rest, 1.1)?;
                if theta <= 0.0 || theta == 1.0 {
                    return Err(format!(
                        "zipf theta {theta} is out of range (above 0, and not 1.0)"
                    ));
                }
                one(RandomDistribution::Zipf { theta, center })
            }
            "pareto" => {
                let (h, center) = value_and_center(rest, 0.2)?;
                if h <= 0.0 || h >= 1.0 {
                    return Err(format!(
                        "pareto power {h} is out of range (0 < h < 1)"
                    ));
                }
                one(RandomDistribution::Pareto { h, center })
            }
            "normal" => {
                let (deviation, center) = value_and_center(rest, 0.0)?;
                if !(0.0..100.0).contains(&deviation) {
                    return Err(format!(
                        "normal deviation {deviation} is out of range (0 <= deviation < 100)"
                    ));
                }
                one(RandomDistribution::Normal { deviation, center })
            }
            "zoned" | "zoned_abs" => {
                let absolute = kind == "zoned_abs";
                let rest = rest.filter(|r| !r.is_empty()).ok_or_else(|| {
                    format!("'{kind}' needs zones (e.g. {kind}:60/10:40/90)")
                })?;
                let sets: Vec<&str> = rest.split(',').collect();
                if sets.len() > 3 {
                    return Err(format!(
                        "'{rest}' has more than three comma-separated sets (read,write,trim)"
                    ));
                }
                let read = parse_zones(sets[0], absolute, kb)?;
                let write = match sets.get(1) {
                    Some(s) if !s.trim().is_empty() => parse_zones(s, absolute, kb)?,
                    _ => read.clone(),
                };
                let wrap = |zones| {
                    if absolute {
                        RandomDistribution::ZonedAbs { zones }
                    } else {
                        RandomDistribution::Zoned { zones }
                    }
                };
                Ok([wrap(read), wrap(write)])
            }
            "sequence" => {
                let rest = rest
                    .filter(|r| !r.is_empty())
                    .ok_or("'sequence' needs block indices (e.g. sequence:2,0,1)")?;
                let blocks = rest
                    .split(',')
                    .map(|b| {
                        b.trim().parse::<u64>().map_err(|_| {
                            format!("'{b}' in '{rest}' is not a block index (expected 0, 1, 2, ...)")
                        })
                    })
                    .collect::<Result<Vec<u64>, String>>()?;
                one(RandomDistribution::Sequence { blocks })
            }
            other => Err(format!(
                "'{other}' is not a distribution (accepted: random, zipf, pareto, normal, zoned, zoned_abs, sequence)"
            )),
        }
    }
}

fn value_and_center(rest: Option<&str>, default: f64) -> Result<(f64, Option<f64>), String> {
    let Some(rest) = rest.filter(|r| !r.is_empty()) else {
        return Ok((default, None));
    };
    let (value, center) = match rest.split_once(':') {
        Some((v, c)) => (v, Some(c)),
        None => (rest, None),
    };
    let value: f64 = value
        .trim()
        .parse()
        .map_err(|_| format!("'{value}' is not a number"))?;
    let center = match center {
        None => None,
        Some(c) => {
            let c: f64 = c
                .trim()
                .parse()
                .map_err(|_| format!("center '{c}' is not a number (expected 0 to 1)"))?;
            if !(0.0..=1.0).contains(&c) {
                return Err(format!("center {c} is out of range (expected 0 to 1)"));
            }
            Some(c)
        }
    };
    Ok((value, center))
}

/// `A/S:A/S:...`; an empty access or size shares what the others leave, as fio's.
fn parse_zones(text: &str, absolute: bool, kb: KbBase) -> Result<Vec<Zone>, String> {
    let mut parsed: Vec<(Option<f64>, Option<f64>)> = Vec::new();
    for entry in text.split(':') {
        let (access, size) = entry
            .split_once('/')
            .ok_or_else(|| format!("zone '{entry}' is not ACCESS%/SIZE (e.g. 60/10)"))?;
        let access = match access.trim() {
            "" => None,
            a => Some(
                a.trim_end_matches('%')
                    .parse::<f64>()
                    .map_err(|_| format!("'{a}' in zone '{entry}' is not a percentage"))?,
            ),
        };
        let size = match size.trim() {
            "" => None,
            s if absolute => Some(parse_size(s, kb)? as f64),
            s => Some(
                s.trim_end_matches('%')
                    .parse::<f64>()
                    .map_err(|_| format!("'{s}' in zone '{entry}' is not a percentage"))?,
            ),
        };
        parsed.push((access, size));
    }
    if parsed.len() > 256 {
        return Err(format!("{} zones (at most 256)", parsed.len()));
    }
    let given: f64 = parsed.iter().filter_map(|z| z.0).sum();
    let missing = parsed.iter().filter(|z| z.0.is_none()).count();
    if given > 100.0 + 1e-9 || (missing == 0 && (given - 100.0).abs() > 1e-9) {
        return Err(format!(
            "zone access percentages in '{text}' add up to {given}% (they must make 100%)"
        ));
    }
    let access_share = if missing > 0 {
        (100.0 - given) / missing as f64
    } else {
        0.0
    };
    let sizes_given: f64 = parsed.iter().filter_map(|z| z.1).sum();
    let sizes_missing = parsed.iter().filter(|z| z.1.is_none()).count();
    if !absolute && sizes_given > 100.0 + 1e-9 {
        return Err(format!(
            "zone sizes in '{text}' add up to {sizes_given}% (at most 100%)"
        ));
    }
    if absolute && sizes_missing > 0 {
        return Err(format!(
            "zone '{text}' lacks a size (zoned_abs needs every zone's size, e.g. 50/10g)"
        ));
    }
    let size_share = if sizes_missing > 0 {
        (100.0 - sizes_given) / sizes_missing as f64
    } else {
        0.0
    };
    Ok(parsed
        .into_iter()
        .map(|(a, s)| Zone {
            access_pct: a.unwrap_or(access_share),
            size: s.unwrap_or(size_share),
        })
        .collect())
}

/// How `rw=MODE:N` changes offsets (fio's `rw_sequencer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum RwSequencer {
    /// Between random offsets, I/O continues sequentially.
    #[default]
    Sequential,
    /// Between random offsets, I/O repeats the same offset.
    Identical,
}

/// The `:N` of `rw=MODE:N`: for random modes, a new random offset every N I/Os; for
/// sequential modes, N bytes added to each next offset (negative reads backwards).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffsetModifier {
    pub random_every: u64,
    pub add: i64,
}

impl Default for OffsetModifier {
    fn default() -> Self {
        OffsetModifier {
            random_every: 1,
            add: 0,
        }
    }
}

impl OffsetModifier {
    pub fn parse(text: &str, random: bool, kb: KbBase) -> Result<OffsetModifier, String> {
        let t = text.trim();
        if random {
            let n: u64 = t.parse().map_err(|_| {
                format!("':{t}' is not a count of I/Os (e.g. rw=randread:8, a new random offset every 8 I/Os)")
            })?;
            if n == 0 {
                return Err("':0' (expected a count of 1 or more I/Os)".into());
            }
            return Ok(OffsetModifier {
                random_every: n,
                add: 0,
            });
        }
        let (negative, magnitude) = match t.strip_prefix('-') {
            Some(m) => (true, m),
            None => (false, t.strip_prefix('+').unwrap_or(t)),
        };
        let bytes = parse_size(magnitude, kb)
            .map_err(|e| format!("':{t}': {e} (e.g. rw=write:4k skips 4k after each write)"))?;
        let add = i64::try_from(bytes).map_err(|_| format!("':{t}' is too large"))?;
        Ok(OffsetModifier {
            random_every: 1,
            add: if negative { -add } else { add },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_parse_with_fios_defaults_and_ranges() {
        let kb = KbBase::Compat1024;
        assert_eq!(
            RandomDistribution::parse("zipf", kb).map(|d| d[0].clone()),
            Ok(RandomDistribution::Zipf {
                theta: 1.1,
                center: None
            })
        );
        assert_eq!(
            RandomDistribution::parse("pareto:0.3:0.25", kb).map(|d| d[1].clone()),
            Ok(RandomDistribution::Pareto {
                h: 0.3,
                center: Some(0.25)
            })
        );
        assert!(RandomDistribution::parse("zipf:1.0", kb).is_err());
        assert!(RandomDistribution::parse("pareto:1.5", kb).is_err());
        assert!(RandomDistribution::parse("normal:100", kb).is_err());
        assert!(RandomDistribution::parse("zipf:1.2:2", kb).is_err());
        assert!(RandomDistribution::parse("gamma:1", kb).is_err());
    }

    #[test]
    fn zones_fill_what_is_left_and_must_make_100_percent() {
        let kb = KbBase::Compat1024;
        let d = RandomDistribution::parse("zoned:50/5:30/15:20/", kb).expect("parses");
        assert_eq!(
            d[0],
            RandomDistribution::Zoned {
                zones: vec![
                    Zone {
                        access_pct: 50.0,
                        size: 5.0
                    },
                    Zone {
                        access_pct: 30.0,
                        size: 15.0
                    },
                    Zone {
                        access_pct: 20.0,
                        size: 80.0
                    },
                ]
            }
        );
        let split = RandomDistribution::parse("zoned:50/5:50/95,10/50:90/50", kb).expect("parses");
        assert_ne!(split[0], split[1]);
        let abs = RandomDistribution::parse("zoned_abs:60/1m:40/3m", kb).expect("parses");
        assert_eq!(
            abs[0],
            RandomDistribution::ZonedAbs {
                zones: vec![
                    Zone {
                        access_pct: 60.0,
                        size: 1048576.0
                    },
                    Zone {
                        access_pct: 40.0,
                        size: 3145728.0
                    },
                ]
            }
        );
        assert!(RandomDistribution::parse("zoned:50/5:30/15", kb).is_err());
        assert!(RandomDistribution::parse("zoned:50/60:50/60", kb).is_err());
        assert!(RandomDistribution::parse("zoned_abs:50/1m:50/", kb).is_err());
    }

    #[test]
    fn offset_modifiers_are_counts_for_random_and_signed_sizes_for_sequential() {
        let kb = KbBase::Compat1024;
        assert_eq!(
            OffsetModifier::parse("8", true, kb),
            Ok(OffsetModifier {
                random_every: 8,
                add: 0
            })
        );
        assert_eq!(
            OffsetModifier::parse("-8k", false, kb),
            Ok(OffsetModifier {
                random_every: 1,
                add: -8192
            })
        );
        assert_eq!(
            OffsetModifier::parse("112k", false, kb),
            Ok(OffsetModifier {
                random_every: 1,
                add: 114688
            })
        );
        assert!(OffsetModifier::parse("0", true, kb).is_err());
        assert!(OffsetModifier::parse("x", false, kb).is_err());
    }
}
