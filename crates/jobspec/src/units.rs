//! fio's spelling of sizes, times, percentages and numbers: the one units crate's, under the
//! name the job grammar has always used; and the per-direction serde form of its options.

pub use sinkrate_units::fio::*;
pub use sinkrate_units::serde_seconds;

/// Per-direction values (read, write, trim) in JSON: written as three, read from three or
/// from the two (read, write) that results written before trims carry, trims then taking
/// the write value as fio's per-direction options do.
pub mod serde_directions {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer, T: Serialize>(v: &[T; 3], s: S) -> Result<S::Ok, S::Error> {
        v.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de> + Copy>(
        d: D,
    ) -> Result<[T; 3], D::Error> {
        let v: Vec<T> = Vec::deserialize(d)?;
        match v[..] {
            [read, write] => Ok([read, write, write]),
            [read, write, trim] => Ok([read, write, trim]),
            _ => Err(serde::de::Error::invalid_length(
                v.len(),
                &"two or three values (read, write, trim)",
            )),
        }
    }
}
