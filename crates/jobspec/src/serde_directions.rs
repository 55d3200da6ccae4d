//! Per-direction values (read, write, trim) in JSON: written as three, read from three or
//! from the two (read, write) that results written before trims carry, trims then taking
//! the write value as fio's per-direction options do.

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
