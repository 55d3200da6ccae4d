//! fio's zone options: `zonemode=strided` with `zonesize`, `zonerange` and `zoneskip` (I/O
//! stays in one zone for zonesize bytes, then moves zonerange + zoneskip on, wrapping at
//! the end of the file). `zonemode=zbd` (zoned block devices) is not supported.

use serde::{Deserialize, Serialize};

use crate::fio_numbers::parse_size;
use crate::options::{bad, need, one_of, ApplyError};
use sinkrate_units::fio::KbBase;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ZoneMode {
    #[default]
    None,
    Strided,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Zones {
    pub mode: ZoneMode,
    pub size: u64,
    pub range: u64,
    pub skip: u64,
}

/// A strided job's zones: bytes per zone visit, zone length, bytes skipped after a zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strided {
    pub size: u64,
    pub range: u64,
    pub skip: u64,
}

impl Zones {
    pub fn apply(&mut self, key: &str, value: Option<&str>, kb: KbBase) -> Result<(), ApplyError> {
        let v = need(key, value)?.trim();
        match key {
            "zonemode" if v == "zbd" => return Err(bad(
                key,
                "zbd (zoned block devices) is not supported by sinkrate (supported: none, strided)",
            )),
            "zonemode" => {
                self.mode = one_of(
                    key,
                    value,
                    &[("none", ZoneMode::None), ("strided", ZoneMode::Strided)],
                )?
            }
            "zonesize" => self.size = parse_size(v, kb).map_err(|e| bad(key, e))?,
            "zonerange" => self.range = parse_size(v, kb).map_err(|e| bad(key, e))?,
            "zoneskip" => self.skip = parse_size(v, kb).map_err(|e| bad(key, e))?,
            _ => return Err(ApplyError::Unsupported),
        }
        Ok(())
    }

    /// The strided zones, when the job has them.
    pub fn strided(&self) -> Option<Strided> {
        (self.mode == ZoneMode::Strided && self.size > 0).then_some(Strided {
            size: self.size,
            range: if self.range > 0 {
                self.range
            } else {
                self.size
            },
            skip: self.skip,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_as_fio_reads_it() {
        let kb = KbBase::Compat1024;
        let mut z = Zones::default();
        z.apply("zonesize", Some("256k"), kb).expect("size");
        assert_eq!(
            z.strided(),
            None,
            "zonesize alone: refused by validate, as fio 3.33"
        );
        z.apply("zonemode", Some("strided"), kb).expect("strided");
        assert_eq!(
            z.strided(),
            Some(Strided {
                size: 262144,
                range: 262144,
                skip: 0
            })
        );
        assert!(z.apply("zonemode", Some("zbd"), kb).is_err());
    }
}
