//! Serde forms for durations with the unit in the key (`duration_s`, `runtime_s`), never
//! serde's `{secs, nanos}`. Reading also accepts that older object form, so results written
//! before units were in the keys still load.
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

#[derive(Deserialize)]
#[serde(untagged)]
enum SecondsForm {
    Seconds(f64),
    SecsNanos { secs: u64, nanos: u32 },
}

impl SecondsForm {
    fn duration(self) -> Result<Duration, String> {
        match self {
            SecondsForm::Seconds(s) if s.is_finite() && s >= 0.0 => Ok(Duration::from_secs_f64(s)),
            SecondsForm::Seconds(s) => Err(format!("{s} is not a duration in seconds")),
            SecondsForm::SecsNanos { secs, nanos } => Ok(Duration::new(secs, nanos)),
        }
    }
}

/// `Duration` as a number of seconds.
pub mod seconds {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        SecondsForm::deserialize(d)?
            .duration()
            .map_err(serde::de::Error::custom)
    }
}

/// `Option<Duration>` as a number of seconds or null.
pub mod opt_seconds {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<SecondsForm>::deserialize(d)?
            .map(SecondsForm::duration)
            .transpose()
            .map_err(serde::de::Error::custom)
    }
}
