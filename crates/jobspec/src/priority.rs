//! I/O priorities as fio's: `prio`/`prioclass` for the whole job (ioprio_set on its thread),
//! the per-command `cmdprio_percentage`, `cmdprio_class`, `cmdprio` and `cmdprio_bssplit` of
//! the io_uring and libaio engines, and `log_prio` for what the logs' last column holds.
//! A priority is the kernel's 16-bit ioprio: the class in the top 3 bits, a hint in bits
//! 3..12 (`cmdprio_bssplit`'s fifth field, as newer fio) and the level in the low 3 bits.

use serde::{Deserialize, Serialize};

use crate::fio_numbers::parse_size;
use crate::options::{bad, flag, need, per_direction, ApplyError};
use sinkrate_units::fio::{parse_int, parse_percent, KbBase};

/// The kernel's real-time class, the one fio's logs mark with 1 when `log_prio` is off.
pub const CLASS_RT: u8 = 1;
/// The best-effort class: a job's class when it gives `prio` alone.
pub const CLASS_BE: u8 = 2;

/// The kernel's ioprio value of a class, level and hint.
pub fn ioprio_value(class: u8, level: u8, hint: u16) -> u16 {
    (u16::from(class) << 13) | ((hint & 0x3ff) << 3) | u16::from(level & 7)
}

/// The class of an ioprio value.
pub fn ioprio_class(ioprio: u16) -> u8 {
    (ioprio >> 13) as u8
}

/// The level (fio's `prio`) of an ioprio value.
pub fn ioprio_level(ioprio: u16) -> u8 {
    (ioprio & 7) as u8
}

/// The hint of an ioprio value (0: none).
pub fn ioprio_hint(ioprio: u16) -> u16 {
    (ioprio >> 3) & 0x3ff
}

/// A priority as fio's output names it: `class/level`, and `/hint` when it has one (as
/// newer fio).
pub fn ioprio_name(ioprio: u16) -> String {
    match ioprio_hint(ioprio) {
        0 => format!("{}/{}", ioprio_class(ioprio), ioprio_level(ioprio)),
        hint => format!("{}/{}/{hint}", ioprio_class(ioprio), ioprio_level(ioprio)),
    }
}

/// One `cmdprio_bssplit` entry: the share of I/Os of a block size issued with a priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CmdPrioSplit {
    pub bs: u64,
    pub percent: u8,
    /// The entry's own class and level (the second format), else `cmdprio_class`/`cmdprio`.
    pub class: Option<u8>,
    pub level: Option<u8>,
    pub hint: u16,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Priorities {
    /// `prio`: the job's level (0 highest, 7 lowest).
    pub prio: Option<u8>,
    /// `prioclass`: the job's class (1 real-time, 2 best-effort, 3 idle).
    pub prioclass: Option<u8>,
    /// Per direction (read, write): the percent of I/Os issued with the command priority.
    pub cmdprio_percentage: [u8; 2],
    pub cmdprio_class: [Option<u8>; 2],
    pub cmdprio: [Option<u8>; 2],
    pub cmdprio_bssplit: [Vec<CmdPrioSplit>; 2],
    /// The logs' last column is the I/O's ioprio in hex (else 1 for real-time, 0 otherwise).
    pub log_prio: bool,
}

impl Priorities {
    pub fn apply(&mut self, key: &str, value: Option<&str>, kb: KbBase) -> Result<(), ApplyError> {
        match key {
            // The option table's ranges keep both within u8: prio 0 to 7, prioclass 0 to 3.
            "prio" => self.prio = Some(whole(key, value)? as u8),
            "prioclass" => self.prioclass = Some(whole(key, value)? as u8),
            "cmdprio_percentage" => {
                self.cmdprio_percentage =
                    read_write(key, need(key, value)?, self.cmdprio_percentage, |v| {
                        let p = parse_percent(v)?;
                        if p.fract() != 0.0 {
                            return Err(format!("{p} is not a whole percentage"));
                        }
                        Ok(p as u8)
                    })?
            }
            "cmdprio_class" => {
                self.cmdprio_class = read_write(key, need(key, value)?, self.cmdprio_class, |v| {
                    in_range(v, 1, 3).map(Some)
                })?
            }
            "cmdprio" => {
                self.cmdprio = read_write(key, need(key, value)?, self.cmdprio, |v| {
                    in_range(v, 0, 7).map(Some)
                })?
            }
            "cmdprio_bssplit" => {
                let text = need(key, value)?;
                let parts: Vec<&str> = text.split(',').collect();
                if parts.len() > 3 {
                    return Err(bad(
                        key,
                        format!(
                            "'{text}' has more than three comma-separated values (read,write,trim)"
                        ),
                    ));
                }
                let read = parse_split(parts[0], kb).map_err(|e| bad(key, e))?;
                // As fio: one list applies to reads and writes; a trim list is ignored
                // (trims are issued without a priority).
                let write = match parts.get(1) {
                    Some(w) => parse_split(w, kb).map_err(|e| bad(key, e))?,
                    None => read.clone(),
                };
                self.cmdprio_bssplit = [read, write];
            }
            "log_prio" => self.log_prio = flag(key, value)?,
            _ => return Err(ApplyError::Unsupported),
        }
        Ok(())
    }

    /// Whether any I/O gets a priority of its own (the io_uring/libaio options).
    pub fn per_command(&self) -> bool {
        self.cmdprio_percentage.iter().any(|p| *p > 0)
            || self.cmdprio_bssplit.iter().any(|s| !s.is_empty())
            || self.cmdprio_class.iter().any(Option::is_some)
            || self.cmdprio.iter().any(Option::is_some)
    }

    /// The job's own priority, set on its thread: `prioclass`/`prio` as fio resolves them
    /// (a level alone is best-effort; a class alone is level 0).
    pub fn job_ioprio(&self) -> Option<u16> {
        match (self.prioclass, self.prio) {
            (None, None) => None,
            (class, level) => Some(ioprio_value(
                class.unwrap_or(CLASS_BE),
                level.unwrap_or(0),
                0,
            )),
        }
    }

    /// The command priority of direction `d` (0 read, 1 write) for `cmdprio_percentage` and
    /// the bssplit entries without their own: `cmdprio_class` (real-time unless given) and
    /// `cmdprio` (0 unless given).
    pub fn command_ioprio(&self, d: usize) -> u16 {
        ioprio_value(
            self.cmdprio_class[d].unwrap_or(CLASS_RT),
            self.cmdprio[d].unwrap_or(0),
            0,
        )
    }

    /// Every priority the job's I/Os can have, in fio's order: the job's own first, then
    /// the command priorities as the options give them.
    pub fn all_ioprios(&self) -> Vec<u16> {
        let mut all = vec![self.job_ioprio().unwrap_or(0)];
        for d in 0..2 {
            if self.cmdprio_percentage[d] > 0 {
                all.push(self.command_ioprio(d));
            }
            for e in &self.cmdprio_bssplit[d] {
                all.push(self.split_ioprio(d, e));
            }
        }
        let mut seen = Vec::with_capacity(all.len());
        for p in all {
            if !seen.contains(&p) {
                seen.push(p);
            }
        }
        seen
    }

    /// The priority a bssplit entry gives.
    pub fn split_ioprio(&self, d: usize, e: &CmdPrioSplit) -> u16 {
        ioprio_value(
            e.class.or(self.cmdprio_class[d]).unwrap_or(CLASS_RT),
            e.level.or(self.cmdprio[d]).unwrap_or(0),
            e.hint,
        )
    }

    /// Contradictions fio refuses too.
    pub fn validate(&self, async_engine: bool) -> Result<(), String> {
        if self.per_command() && !async_engine {
            return Err("cmdprio_percentage, cmdprio_bssplit, cmdprio_class and cmdprio are options of ioengine=io_uring and ioengine=libaio (fio does not know them for other engines)".into());
        }
        if self.cmdprio_percentage.iter().any(|p| *p > 0)
            && self.cmdprio_bssplit.iter().any(|s| !s.is_empty())
        {
            return Err(
                "cmdprio_percentage with cmdprio_bssplit: fio refuses both at once (use one)"
                    .into(),
            );
        }
        for list in &self.cmdprio_bssplit {
            let mut sizes: Vec<u64> = list.iter().map(|e| e.bs).collect();
            sizes.sort_unstable();
            sizes.dedup();
            for bs in sizes {
                let total: u32 = list
                    .iter()
                    .filter(|e| e.bs == bs)
                    .map(|e| u32::from(e.percent))
                    .sum();
                if total > 100 {
                    return Err(format!(
                        "cmdprio_bssplit gives {total}% of the {bs}-byte I/Os a priority (at most 100%)"
                    ));
                }
            }
        }
        Ok(())
    }
}

fn in_range(text: &str, lo: u64, hi: u64) -> Result<u8, String> {
    let v = parse_int(text)?;
    if !(lo..=hi).contains(&v) {
        return Err(format!("{v} is out of range (expected {lo} to {hi})"));
    }
    Ok(v as u8)
}

fn whole(key: &str, value: Option<&str>) -> Result<u64, ApplyError> {
    parse_int(need(key, value)?).map_err(|e| bad(key, e))
}

/// `read[,write]`: one value applies to both, an empty one keeps what was set; a trim
/// value is ignored, as fio's.
fn read_write<T: Copy>(
    key: &str,
    text: &str,
    current: [T; 2],
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<[T; 2], ApplyError> {
    let [read, write] = current;
    let all = per_direction(key, text, [read, write, write], parse)?;
    Ok([all[0], all[1]])
}

/// `bs/percent[/class/level[/hint]]:...`.
fn parse_split(text: &str, kb: KbBase) -> Result<Vec<CmdPrioSplit>, String> {
    let mut out = Vec::new();
    for item in text.split(':').filter(|s| !s.trim().is_empty()) {
        let fields: Vec<&str> = item.split('/').map(str::trim).collect();
        let expected = "expected BS/PERCENT or BS/PERCENT/CLASS/LEVEL[/HINT], e.g. 64k/25/1/0";
        if !matches!(fields.len(), 2 | 4 | 5) {
            return Err(format!(
                "'{item}' is not a cmdprio_bssplit entry ({expected})"
            ));
        }
        let percent = parse_percent(fields[1])?;
        if percent.fract() != 0.0 {
            return Err(format!("'{item}': {percent} is not a whole percentage"));
        }
        let (class, level) = if fields.len() >= 4 {
            (
                Some(in_range(fields[2], 0, 3)?),
                Some(in_range(fields[3], 0, 7)?),
            )
        } else {
            (None, None)
        };
        let hint = match fields.get(4) {
            Some(h) => u16::from(in_range(h, 0, 7)?),
            None => 0,
        };
        out.push(CmdPrioSplit {
            bs: parse_size(fields[0], kb)?,
            percent: percent as u8,
            class,
            level,
            hint,
        });
    }
    if out.is_empty() {
        return Err(format!(
            "'{text}' has no entries (expected e.g. 64k/40:1m/0)"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Result<Priorities, ApplyError> {
        let mut p = Priorities::default();
        for (k, v) in pairs {
            p.apply(k, Some(v), KbBase::Compat1024)?;
        }
        Ok(p)
    }

    #[test]
    fn values_are_the_kernels_ioprio() {
        // The values fio 3.33 logs with log_prio=1 for these options.
        let job = |pairs: &[(&str, &str)]| with(pairs).map(|p| p.job_ioprio());
        assert_eq!(job(&[("prio", "3")]), Ok(Some(0x4003)));
        assert_eq!(job(&[("prioclass", "1")]), Ok(Some(0x2000)));
        assert_eq!(job(&[("prioclass", "3"), ("prio", "5")]), Ok(Some(0x6005)));
        assert_eq!(job(&[]), Ok(None));
        let p = with(&[("cmdprio_percentage", "20")]).expect("applies");
        assert_eq!(p.command_ioprio(0), 0x2000);
        let p = with(&[("cmdprio_class", "2"), ("cmdprio", "4")]).expect("applies");
        assert_eq!(p.command_ioprio(1), 0x4004);
        assert_eq!(ioprio_value(2, 0, 3), 0x4018);
    }

    #[test]
    fn bssplit_takes_both_formats_in_fios_order() {
        let p = with(&[
            ("prioclass", "2"),
            ("prio", "7"),
            ("cmdprio_bssplit", "64k/25/1/1:64k/75/3/2:1024k/0,1024k/0"),
        ])
        .expect("applies");
        assert_eq!(p.cmdprio_bssplit[0].len(), 3);
        assert_eq!(p.all_ioprios(), vec![0x4007, 0x2001, 0x6002, 0x2000]);
        assert!(p.validate(true).is_ok());
        assert!(p.validate(false).is_err());
        let both =
            with(&[("cmdprio_percentage", "10"), ("cmdprio_bssplit", "4k/10")]).expect("applies");
        assert!(both.validate(true).is_err());
        let over = with(&[("cmdprio_bssplit", "4k/60/1/0:4k/50/2/0")]).expect("applies");
        assert!(over.validate(true).is_err());
        for bad in ["4k/10/1", "4k", "4k/10/4/0", "4k/10/1/8"] {
            assert!(with(&[("cmdprio_bssplit", bad)]).is_err(), "{bad}");
        }
        // The option table's ranges, checked as the job takes the options.
        let mut job = crate::JobOptions::default();
        assert!(job.apply("prio", Some("8")).is_err());
        assert!(job.apply("prioclass", Some("4")).is_err());
    }
}
