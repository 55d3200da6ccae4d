//! The envelope every run's JSON shares: what wrote it, when, on which host, whether it
//! completed, and the warnings that qualify its figures. What a run was stored on is part of
//! each kind's own result (`target` for record, the audit's richer `target`, bench's
//! `targets`), so that every kind keeps one `target` key. The run kind's
//! own result is flattened beside these keys, so a `record` result reads
//! `{"schema": ..., "kind": "record", ..., "verdict": ..., "totals": ...}`.

use serde::{Deserialize, Serialize};

use crate::{HostFacts, Warning, SCHEMA, TOOL_VERSION};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    Bench,
    Record,
    /// Written as `record.find_max` before this name.
    #[serde(alias = "record.find_max")]
    FindMax,
    Check,
    Audit,
    Watch,
    Tune,
    TuneSearch,
    Compare,
    Verify,
    /// `verify --capacity`: is the capacity real?
    Capacity,
    Suite,
    /// `capture`: a recorder's file operations.
    Capture,
    /// `verify --class`: does the card keep its speed class?
    Class,
}

impl RunKind {
    /// Earlier names of the same kind, still read.
    fn aliases(self) -> &'static [&'static str] {
        match self {
            RunKind::FindMax => &["record.find_max"],
            _ => &[],
        }
    }

    /// Every kind, in the order the manual lists them.
    pub const ALL: [RunKind; 14] = [
        RunKind::Bench,
        RunKind::Record,
        RunKind::FindMax,
        RunKind::Check,
        RunKind::Audit,
        RunKind::Watch,
        RunKind::Tune,
        RunKind::TuneSearch,
        RunKind::Compare,
        RunKind::Verify,
        RunKind::Capacity,
        RunKind::Suite,
        RunKind::Capture,
        RunKind::Class,
    ];

    /// The kind a result's `"kind"` names, by its name or an earlier one.
    pub fn from_name(name: &str) -> Option<RunKind> {
        RunKind::ALL
            .into_iter()
            .find(|k| k.name() == name || k.aliases().contains(&name))
    }

    pub fn name(self) -> &'static str {
        match self {
            RunKind::Bench => "bench",
            RunKind::Record => "record",
            RunKind::FindMax => "find_max",
            RunKind::Check => "check",
            RunKind::Audit => "audit",
            RunKind::Watch => "watch",
            RunKind::Tune => "tune",
            RunKind::TuneSearch => "tune_search",
            RunKind::Compare => "compare",
            RunKind::Verify => "verify",
            RunKind::Capacity => "capacity",
            RunKind::Suite => "suite",
            RunKind::Capture => "capture",
            RunKind::Class => "class",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

impl Default for Tool {
    fn default() -> Self {
        Tool {
            name: "sinkrate".into(),
            version: TOOL_VERSION.into(),
        }
    }
}

/// What made a run fail, and when.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunError {
    /// One line: what failed, where, and what to do.
    pub what: String,
    /// Seconds into the run, when known.
    pub at_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Envelope<T> {
    pub schema: String,
    pub kind: RunKind,
    #[serde(default)]
    pub tool: Tool,
    /// RFC 3339, UTC.
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub timestamp_ms: u64,
    /// The machine the run happened on; null for an audit of a fixture tree.
    #[serde(default)]
    pub host: Option<HostFacts>,
    #[serde(default)]
    pub interrupted: bool,
    /// Null for a run that completed.
    #[serde(default)]
    pub error: Option<RunError>,
    #[serde(default)]
    pub warnings: Vec<Warning>,
    #[serde(default)]
    pub notices: Vec<String>,
    #[serde(flatten)]
    pub result: T,
}

/// Why a document cannot be read as a run of the expected kind.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReadError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("no \"schema\" key: not a sinkrate result")]
    NoSchema,
    #[error("schema {found} is not one this version reads (it reads {SCHEMA})")]
    UnknownSchema { found: String },
    #[error("a {found} result, not a {expected} result")]
    WrongKind { found: String, expected: String },
    #[error("{0}")]
    Shape(String),
}

impl<T> Envelope<T> {
    /// A new envelope for a result of `kind`, with the tool's schema and version.
    pub fn new(kind: RunKind, host: HostFacts, started_unix_ms: u64, result: T) -> Self {
        Envelope {
            schema: SCHEMA.into(),
            kind,
            tool: Tool::default(),
            started_at: rfc3339(started_unix_ms),
            timestamp_ms: started_unix_ms,
            host: Some(host),
            interrupted: false,
            error: None,
            warnings: Vec::new(),
            notices: Vec::new(),
            result,
        }
    }
}

impl<T: serde::de::DeserializeOwned> Envelope<T> {
    /// Reads a run of `kind` from its JSON, checking the schema and the kind first so that
    /// the error names what is wrong with the document rather than a missing field.
    pub fn from_json(bytes: &[u8], kind: RunKind) -> Result<Self, ReadError> {
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| ReadError::NotJson(e.to_string()))?;
        Self::from_value(value, kind)
    }

    /// [`Envelope::from_json`] for a document already parsed.
    pub fn from_value(value: serde_json::Value, kind: RunKind) -> Result<Self, ReadError> {
        let schema = value
            .get("schema")
            .and_then(|s| s.as_str())
            .ok_or(ReadError::NoSchema)?;
        if schema != SCHEMA {
            return Err(ReadError::UnknownSchema {
                found: schema.to_string(),
            });
        }
        let found = value.get("kind").and_then(|k| k.as_str()).unwrap_or("?");
        if found != kind.name() && !kind.aliases().contains(&found) {
            return Err(ReadError::WrongKind {
                found: found.to_string(),
                expected: kind.name().to_string(),
            });
        }
        Self::split(value).map_err(ReadError::Shape)
    }

    // The envelope's keys and the result's are read apart rather than through
    // `#[serde(flatten)]`, whose buffering deserializer is instantiated once per result kind
    // and made up a tenth of the board binaries' size.
    fn split(value: serde_json::Value) -> Result<Self, String> {
        let serde_json::Value::Object(mut result) = value else {
            return Err("a run is a JSON object".into());
        };
        let mut head = serde_json::Map::new();
        for key in ENVELOPE_KEYS {
            if let Some(v) = result.remove(*key) {
                head.insert((*key).to_string(), v);
            }
        }
        let head: Head =
            serde_json::from_value(serde_json::Value::Object(head)).map_err(|e| e.to_string())?;
        let result: T =
            serde_json::from_value(serde_json::Value::Object(result)).map_err(|e| e.to_string())?;
        Ok(Envelope {
            schema: head.schema,
            kind: head.kind,
            tool: head.tool,
            started_at: head.started_at,
            timestamp_ms: head.timestamp_ms,
            host: head.host,
            interrupted: head.interrupted,
            error: head.error,
            warnings: head.warnings,
            notices: head.notices,
            result,
        })
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Envelope<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Self::split(value).map_err(serde::de::Error::custom)
    }
}

/// The keys the envelope owns; every other key of a run's JSON belongs to its result.
const ENVELOPE_KEYS: &[&str] = &[
    "schema",
    "kind",
    "tool",
    "started_at",
    "timestamp_ms",
    "host",
    "interrupted",
    "error",
    "warnings",
    "notices",
];

/// The envelope's own fields as read from a run's JSON.
#[derive(Deserialize)]
struct Head {
    schema: String,
    kind: RunKind,
    #[serde(default)]
    tool: Tool,
    #[serde(default)]
    started_at: String,
    #[serde(default)]
    timestamp_ms: u64,
    #[serde(default)]
    host: Option<HostFacts>,
    #[serde(default)]
    interrupted: bool,
    #[serde(default)]
    error: Option<RunError>,
    #[serde(default)]
    warnings: Vec<Warning>,
    #[serde(default)]
    notices: Vec<String>,
}

/// Milliseconds since the epoch as RFC 3339 in UTC, e.g. `2026-11-22T12:44:33.120Z`.
// Formatted field by field: chrono's strftime engine (its format-string parser) cost the
// board binary tens of KB for three fixed formats.
pub fn rfc3339(unix_ms: u64) -> String {
    utc(unix_ms)
        .map(|t| {
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                t.year, t.month, t.day, t.hour, t.minute, t.second, t.millisecond
            )
        })
        .unwrap_or_default()
}

/// A UTC instant's calendar fields (chrono's calendar).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    pub year: i32,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millisecond: u32,
    /// 0 = Monday.
    pub weekday: u32,
}

/// Milliseconds since the epoch in UTC, field by field; None out of chrono's range.
pub fn utc(unix_ms: u64) -> Option<Utc> {
    use chrono::{Datelike, Timelike};
    let t = chrono::DateTime::from_timestamp_millis(i64::try_from(unix_ms).ok()?)?;
    Some(Utc {
        year: t.year(),
        month: t.month(),
        day: t.day(),
        hour: t.hour(),
        minute: t.minute(),
        second: t.second(),
        millisecond: t.timestamp_subsec_millis(),
        weekday: t.weekday().num_days_from_monday(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
    struct Body {
        verdict: crate::Verdict,
    }

    #[test]
    fn round_trip_and_refusals() {
        let env = Envelope::new(
            RunKind::Record,
            HostFacts::default(),
            1_795_000_000_000,
            Body {
                verdict: crate::Verdict::Failed,
            },
        );
        let json = serde_json::to_vec(&env).expect("serialize");
        let back: Envelope<Body> = Envelope::from_json(&json, RunKind::Record).expect("read");
        assert_eq!(back, env);
        assert!(matches!(
            Envelope::<Body>::from_json(&json, RunKind::Check),
            Err(ReadError::WrongKind { .. })
        ));
        assert_eq!(
            Envelope::<Body>::from_json(b"{}", RunKind::Record),
            Err(ReadError::NoSchema)
        );
        assert!(matches!(
            Envelope::<Body>::from_json(br#"{"schema":"sinkrate.run/9"}"#, RunKind::Record),
            Err(ReadError::UnknownSchema { .. })
        ));
    }

    #[test]
    fn the_envelope_keys_are_the_envelopes_fields() {
        // The reader splits a run's JSON by ENVELOPE_KEYS: they must be every field the
        // envelope writes besides its result's.
        #[derive(Serialize)]
        struct Nothing {}
        let env = Envelope::new(RunKind::Check, HostFacts::default(), 0, Nothing {});
        let value = serde_json::to_value(&env).expect("serialize");
        let mut written: Vec<&str> = value
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        let mut keys = ENVELOPE_KEYS.to_vec();
        written.sort_unstable();
        keys.sort_unstable();
        assert_eq!(written, keys);
    }

    #[test]
    fn floats_read_back_exactly() {
        // serde_json's default float parser is off by an ulp on some values; results must
        // read back as they were written (the workspace enables float_roundtrip).
        for v in [
            98.305_084_745_762_71_f64,
            0.1 + 0.2,
            1.0 / 3.0,
            5102606.541115471,
        ] {
            let text = serde_json::to_string(&v).expect("serialize");
            let back: f64 = serde_json::from_str(&text).expect("parse");
            assert_eq!(back.to_bits(), v.to_bits(), "{text}");
        }
    }

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
    }
}
