//! Options that change how a job runs and what it records rather than what it reads or
//! writes: the random generator, the latency and bandwidth measurements fio can switch off,
//! access hints, when files are made and opened, the queue's low-water mark, the order the
//! files are served in, and the clock.

use serde::{Deserialize, Serialize};

use crate::options::{bad, flag, need, one_of, ApplyError};
use sinkrate_units::fio::parse_int;

/// fio's random_generator. With `lfsr` every block is visited once per pass even without
/// the random map (norandommap); the tausworthe generators may repeat blocks then.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RandomGenerator {
    #[default]
    Tausworthe,
    Lfsr,
    Tausworthe64,
}

/// fio's fadvise_hint: the access pattern told to the kernel when a file is opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FadviseHint {
    None,
    /// Sequential for sequential jobs, random for random ones (fio's default, `1`).
    #[default]
    Auto,
    Sequential,
    Random,
}

/// fio's file_service_type: which of a job's files the next I/O goes to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileService {
    #[default]
    RoundRobin,
    /// One file until its part of the pass is done, then the next.
    Sequential,
    Random,
}

/// `Default` is every field unset; a job's defaults are the option table's, which an
/// older result missing a field reads too.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default = "Behaviour::declared")]
pub struct Behaviour {
    pub random_generator: RandomGenerator,
    pub disable_lat: bool,
    pub disable_clat: bool,
    pub disable_slat: bool,
    pub fadvise_hint: FadviseHint,
    /// Files are made by the job's open, not laid out beforehand.
    pub create_on_open: bool,
    /// Jobs lay out their files one at a time (fio's default), so that files written at
    /// once do not interleave on the storage.
    pub create_serialize: bool,
    pub openfiles: Option<u32>,
    /// fio's low-water mark; sinkrate takes only iodepth_low >= iodepth (refill at once).
    pub iodepth_low: Option<u32>,
    pub file_service: FileService,
    /// I/Os to one file before the next is chosen (`file_service_type=random:8`).
    pub file_service_every: u64,
    /// Every generator (mixes, sizes, buffers too) repeats across runs, even with
    /// randrepeat=0.
    pub allrandrepeat: bool,
}

impl Behaviour {
    /// The option table's defaults.
    fn declared() -> Self {
        crate::JobOptions::default().behaviour
    }

    pub fn apply(&mut self, key: &str, value: Option<&str>) -> Result<(), ApplyError> {
        match key {
            // sinkrate's jobs always are threads of one process (README: deliberate
            // differences); thread=1 asks for exactly that.
            "thread" | "threads" => {
                flag(key, value)?;
            }
            "random_generator" => {
                self.random_generator = one_of(
                    key,
                    value,
                    &[
                        ("tausworthe", RandomGenerator::Tausworthe),
                        ("lfsr", RandomGenerator::Lfsr),
                        ("tausworthe64", RandomGenerator::Tausworthe64),
                    ],
                )?
            }
            // As fio's fixup: gtod_reduce switches off every latency and bandwidth figure.
            "gtod_reduce" => {
                let on = flag(key, value)?;
                self.disable_lat = on;
                self.disable_clat = on;
                self.disable_slat = on;
            }
            "disable_lat" => self.disable_lat = flag(key, value)?,
            "disable_clat" => self.disable_clat = flag(key, value)?,
            "disable_slat" => self.disable_slat = flag(key, value)?,
            // fio 3.33 still takes its bandwidth and IOPS samples with this set (its JSON
            // shows them), and so does sinkrate.
            "disable_bw_measurement" | "disable_bw" => {
                flag(key, value)?;
            }
            "fadvise_hint" => {
                self.fadvise_hint = match need(key, value)?.trim() {
                    "0" | "false" | "off" => FadviseHint::None,
                    "1" | "true" | "on" => FadviseHint::Auto,
                    "sequential" => FadviseHint::Sequential,
                    "random" => FadviseHint::Random,
                    other => {
                        return Err(bad(
                            key,
                            format!("'{other}' is not accepted (expected 0, 1, sequential or random)"),
                        ))
                    }
                }
            }
            "create_on_open" => self.create_on_open = flag(key, value)?,
            "create_serialize" => self.create_serialize = flag(key, value)?,
            "openfiles" => {
                let n = parse_int(need(key, value)?).map_err(|e| bad(key, e))?;
                if n == 0 {
                    return Err(bad(key, "0 (expected at least one open file)"));
                }
                self.openfiles = Some(n.min(u32::MAX as u64) as u32);
            }
            "iodepth_low" => {
                let n = parse_int(need(key, value)?).map_err(|e| bad(key, e))?;
                self.iodepth_low = Some(n.min(u32::MAX as u64) as u32);
            }
            "file_service_type" => {
                let v = need(key, value)?.trim();
                let (kind, every) = match v.split_once(':') {
                    Some((k, n)) => (k, Some(parse_int(n).map_err(|e| bad(key, e))?)),
                    None => (v, None),
                };
                self.file_service = match kind {
                    "roundrobin" => FileService::RoundRobin,
                    "sequential" => FileService::Sequential,
                    "random" => FileService::Random,
                    other => {
                        return Err(bad(
                            key,
                            format!(
                                "'{other}' is not supported by sinkrate (supported: roundrobin, sequential, random, each with :N)"
                            ),
                        ))
                    }
                };
                self.file_service_every = every.unwrap_or(1).max(1);
            }
            "allrandrepeat" | "allrand_repeatable" => self.allrandrepeat = flag(key, value)?,
            "clocksource" => match need(key, value)?.trim() {
                // sinkrate reads CLOCK_MONOTONIC through the vDSO, which reads the CPU's
                // clock: fio's clock_gettime and cpu sources alike.
                "clock_gettime" | "cpu" => {}
                other => {
                    return Err(bad(
                        key,
                        format!("'{other}' is not supported by sinkrate (it times with the monotonic clock: clock_gettime or cpu)"),
                    ))
                }
            },
            _ => return Err(ApplyError::Unsupported),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_fio_takes_them() {
        let mut b = Behaviour::default();
        b.apply("gtod_reduce", None).expect("gtod_reduce");
        assert!(b.disable_lat && b.disable_clat && b.disable_slat);
        b.apply("file_service_type", Some("random:8")).expect("fst");
        assert_eq!(
            (b.file_service, b.file_service_every),
            (FileService::Random, 8)
        );
        b.apply("fadvise_hint", Some("0")).expect("fadvise");
        assert_eq!(b.fadvise_hint, FadviseHint::None);
        assert!(b.apply("file_service_type", Some("zipf:1.2")).is_err());
        assert!(b.apply("clocksource", Some("gettimeofday")).is_err());
        assert!(b.apply("openfiles", Some("0")).is_err());
        b.apply("thread", None).expect("thread");
    }
}
