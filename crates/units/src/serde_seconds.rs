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

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};
    use std::time::Duration;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct T {
        #[serde(with = "super::seconds", alias = "duration")]
        duration_s: Duration,
        #[serde(with = "super::opt_seconds", default)]
        every_s: Option<Duration>,
    }

    #[test]
    fn seconds_in_the_key_and_the_old_object_form_still_reads() {
        let t = T {
            duration_s: Duration::from_millis(1500),
            every_s: None,
        };
        let json = serde_json::to_string(&t).expect("serialize");
        assert_eq!(json, r#"{"duration_s":1.5,"every_s":null}"#);
        assert_eq!(serde_json::from_str::<T>(&json).expect("read"), t);
        let old = r#"{"duration":{"secs":30,"nanos":0},"every_s":{"secs":1,"nanos":500000000}}"#;
        let back: T = serde_json::from_str(old).expect("old form");
        assert_eq!(back.duration_s, Duration::from_secs(30));
        assert_eq!(back.every_s, Some(Duration::from_millis(1500)));
        assert!(serde_json::from_str::<T>(r#"{"duration_s":-1}"#).is_err());
    }
}
