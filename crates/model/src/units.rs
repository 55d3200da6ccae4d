//! Serde forms for durations with the unit in the key (`duration_s`, `interval_ms`), never
//! serde's `{secs, nanos}`; they live beside the unit parsers in `sinkrate_jobspec::units`
//! (the lowest crate that needs them) and are named here for the result types.

pub use sinkrate_jobspec::units::serde_seconds::{opt_seconds, seconds};

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
