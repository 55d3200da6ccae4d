//! The one verdict every recording judgement ends in: `record`, `check`, and whatever
//! compares or tunes them read the same values.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No frame dropped and the device drained what the streams produced.
    KeepsUp,
    /// No frame dropped yet, but the device cannot drain what the streams produce.
    FallingBehind,
    /// Frames were dropped.
    Drops,
    /// The run did not complete (an I/O error, a missing device, an interrupted setup):
    /// nothing can be said about keeping up.
    Failed,
    /// The target has no storage device behind it (tmpfs, ramfs): the run measured memory,
    /// so nothing can be said about a card or drive keeping up.
    NotStorage,
    /// Too few frames in a stream to say anything (one frame from `--duration 1ns`):
    /// nothing to judge, as bench's `run.too_short`.
    TooShort,
}

impl Verdict {
    /// The words the text output prints.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::KeepsUp => "KEEPS UP",
            Verdict::FallingBehind => "FALLING BEHIND",
            Verdict::Drops => "DROPS FRAMES",
            Verdict::Failed => "FAILED",
            Verdict::NotStorage => "NOT STORAGE",
            Verdict::TooShort => "TOO SHORT TO JUDGE",
        }
    }

    /// The key in JSON (`"verdict": "keeps_up"`).
    pub fn key(self) -> &'static str {
        match self {
            Verdict::KeepsUp => "keeps_up",
            Verdict::FallingBehind => "falling_behind",
            Verdict::Drops => "drops",
            Verdict::Failed => "failed",
            Verdict::NotStorage => "not_storage",
            Verdict::TooShort => "too_short",
        }
    }

    /// The process exit code a command with this verdict ends with: 0 keeps up, 1 does not,
    /// 2 failed, 3 nothing to judge (not storage, too short).
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::KeepsUp => 0,
            Verdict::FallingBehind | Verdict::Drops => 1,
            Verdict::Failed => 2,
            Verdict::NotStorage | Verdict::TooShort => 3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_serialized_names() {
        for v in [
            Verdict::KeepsUp,
            Verdict::FallingBehind,
            Verdict::Drops,
            Verdict::Failed,
            Verdict::NotStorage,
            Verdict::TooShort,
        ] {
            let json = serde_json::to_string(&v).expect("serialize");
            assert_eq!(json, format!("\"{}\"", v.key()));
            let back: Verdict = serde_json::from_str(&json).expect("deserialize");
            assert_eq!(back, v);
        }
    }
}
