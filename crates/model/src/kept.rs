//! A part of a result that sinkrate writes from its type and that no command reads back
//! typed: on the way back in it is kept as the JSON it was, so that a result still goes
//! through its type unchanged. Its deserializer is never built: serde's visitors for a
//! struct of some twenty fields cost the board builds several KB of their 5 MB budget
//! (bench/README.md), for a reader that nothing calls.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, PartialEq)]
pub enum Kept<T> {
    /// Made by this run.
    Typed(T),
    /// Read back from a result file.
    Json(serde_json::Value),
}

impl<T> Kept<T> {
    /// The value, when this run made it (None when read back from a file).
    pub fn typed(&self) -> Option<&T> {
        match self {
            Kept::Typed(t) => Some(t),
            Kept::Json(_) => None,
        }
    }

    pub fn typed_mut(&mut self) -> Option<&mut T> {
        match self {
            Kept::Typed(t) => Some(t),
            Kept::Json(_) => None,
        }
    }
}

impl<T> From<T> for Kept<T> {
    fn from(t: T) -> Self {
        Kept::Typed(t)
    }
}

impl<T: Serialize> Serialize for Kept<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Kept::Typed(t) => t.serialize(serializer),
            Kept::Json(v) => v.serialize(serializer),
        }
    }
}

impl<'de, T> Deserialize<'de> for Kept<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde_json::Value::deserialize(deserializer).map(Kept::Json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize)]
    struct Figures {
        a: f64,
        b: Option<String>,
    }

    #[test]
    fn written_typed_and_read_back_as_the_same_json() {
        let made = Kept::Typed(Figures {
            a: 1.5,
            b: Some("x".into()),
        });
        let text = serde_json::to_string(&made).unwrap();
        assert_eq!(text, r#"{"a":1.5,"b":"x"}"#);
        let back: Kept<Figures> = serde_json::from_str(&text).unwrap();
        assert!(back.typed().is_none());
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        assert_eq!(made.typed().map(|f| f.a), Some(1.5));
    }
}
