//! A result file read through the types that wrote it, keyed by its run kind: what `compare`
//! and `report` take in. fio's own `--output-format=json` reads as a bench result without
//! the envelope.

use serde_json::Value;

use crate::audit::AuditReport;
use crate::check::CheckReport;
use crate::envelope::{ReadError, RunError};
use crate::fio::BenchReport;
use crate::record::{FindMaxReport, RecordReport};
use crate::search::SearchReport;
use crate::settings::TuneReport;
use crate::suite::SuiteReport;
use crate::verify::{CapacityReport, VerifyReport};
use crate::watch::WatchReport;
use crate::{Envelope, RunKind, SCHEMA};

pub enum Document {
    /// fio's JSON: fio's own (`ours` false), or `sinkrate bench`'s, which carries fio's keys
    /// inside the run envelope. `value` keeps the document as read, for the envelope's words.
    Fio {
        ours: bool,
        output: Box<BenchReport>,
        value: Value,
    },
    Record(Box<Envelope<RecordReport>>),
    Check(Box<Envelope<CheckReport>>),
    FindMax(Box<Envelope<FindMaxReport>>),
    Audit(Box<Envelope<AuditReport>>),
    Watch(Box<Envelope<WatchReport>>),
    TuneSearch(Box<Envelope<SearchReport>>),
    Suite(Box<Envelope<SuiteReport>>),
    Tune(Box<Envelope<TuneReport>>),
    Verify(Box<Envelope<VerifyReport>>),
    Capacity(Box<Envelope<CapacityReport>>),
    /// A kind read as its fields: one without a picture of its own (compare, capture),
    /// or one whose fields do not match its type (`problem` says how, and the fields are
    /// still shown).
    Fields {
        kind: RunKind,
        value: Value,
        problem: Option<String>,
    },
    /// A run that failed before it had a result of its kind: its envelope and its error. A
    /// lab writes one for a board it could not reach, install on or run on (`kind` is the
    /// command it was running, None before any); sinkrate, for a run stopped at its start.
    Failed {
        kind: Option<RunKind>,
        error: RunError,
        value: Value,
    },
}

/// The error a result carries, when its run failed. Read from an owned copy, as every
/// result type is (`Envelope::from_value`): one deserializer's instances in the binary, not
/// two (the board binaries' budget).
fn run_error(value: &Value) -> Option<RunError> {
    serde_json::from_value(value.get("error")?.clone()).ok()
}

impl Document {
    /// Reads a result's JSON (`name` says where it came from in messages). Record and check
    /// results must match their types (their runs are compared); any other kind that does
    /// not is kept as its fields.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<Document, String> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            format!(
                "{name}: not JSON ({e}); expected a sinkrate result or fio's --output-format=json"
            )
        })?;
        if value.get("fio version").is_some() && value.get("jobs").is_some() {
            let ours = value.get("schema").is_some();
            let output: BenchReport = serde_json::from_value(value.clone())
                .map_err(|e| format!("{name}: fio's JSON, but not as fio writes it ({e})"))?;
            return Ok(Document::Fio {
                ours,
                output: Box::new(output),
                value,
            });
        }
        let bad = |e: ReadError| format!("{name}: {e}");
        let schema = value.get("schema").and_then(|s| s.as_str());
        let kind_name = match value.get("kind").and_then(|k| k.as_str()) {
            Some(k) => k.to_string(),
            None => {
                if let (Some(SCHEMA), Some(error)) = (schema, run_error(&value)) {
                    return Ok(Document::Failed {
                        kind: None,
                        error,
                        value,
                    });
                }
                return Err(format!("{name}: neither a sinkrate result (no \"kind\") nor fio's JSON (no \"fio version\")"));
            }
        };
        if schema != Some(SCHEMA) {
            return Err(bad(match schema {
                None => ReadError::NoSchema,
                Some(found) => ReadError::UnknownSchema {
                    found: found.to_string(),
                },
            }));
        }
        let kind = RunKind::from_name(&kind_name).ok_or_else(|| {
            format!("{name}: a \"{kind_name}\" result, a kind this version does not know")
        })?;
        // A document that does not match its kind's type: a run that failed before it had a
        // result, when it says so; else its fields, with the problem.
        let fields = |value: Value, problem: Option<ReadError>| match (&problem, run_error(&value))
        {
            (Some(_), Some(error)) => Document::Failed {
                kind: Some(kind),
                error,
                value,
            },
            _ => Document::Fields {
                kind,
                value,
                problem: problem.map(|e| e.to_string()),
            },
        };
        // A copy of the document, kept for its fields should it not match its type.
        fn typed<T: serde::de::DeserializeOwned>(
            value: &Value,
            kind: RunKind,
        ) -> Result<Box<Envelope<T>>, ReadError> {
            Envelope::<T>::from_value(value.clone(), kind).map(Box::new)
        }
        Ok(match kind {
            // These two have no fallback to their fields (their runs are compared), only to
            // a failed run's error.
            RunKind::Record => match typed(&value, kind) {
                Ok(env) => Document::Record(env),
                Err(e) => match fields(value, Some(e.clone())) {
                    failed @ Document::Failed { .. } => failed,
                    _ => return Err(bad(e)),
                },
            },
            RunKind::Check => match typed(&value, kind) {
                Ok(env) => Document::Check(env),
                Err(e) => match fields(value, Some(e.clone())) {
                    failed @ Document::Failed { .. } => failed,
                    _ => return Err(bad(e)),
                },
            },
            RunKind::FindMax => match typed(&value, kind) {
                Ok(env) => Document::FindMax(env),
                Err(e) => fields(value, Some(e)),
            },
            RunKind::Audit => match typed(&value, kind) {
                Ok(env) => Document::Audit(env),
                Err(e) => fields(value, Some(e)),
            },
            RunKind::Watch => match typed(&value, kind) {
                Ok(env) => Document::Watch(env),
                Err(e) => fields(value, Some(e)),
            },
            RunKind::TuneSearch => match typed(&value, kind) {
                Ok(env) => Document::TuneSearch(env),
                Err(e) => fields(value, Some(e)),
            },
            RunKind::Suite => match typed(&value, kind) {
                Ok(env) => Document::Suite(env),
                Err(e) => fields(value, Some(e)),
            },
            RunKind::Tune => match typed(&value, kind) {
                Ok(env) => Document::Tune(env),
                Err(e) => fields(value, Some(e)),
            },
            RunKind::Verify => match typed(&value, kind) {
                Ok(env) => Document::Verify(env),
                Err(e) => fields(value, Some(e)),
            },
            RunKind::Capacity => match typed(&value, kind) {
                Ok(env) => Document::Capacity(env),
                Err(e) => fields(value, Some(e)),
            },
            RunKind::Bench | RunKind::Compare | RunKind::Capture => fields(value, None),
        })
    }

    /// The run's kind; None for fio's own JSON.
    pub fn kind(&self) -> Option<RunKind> {
        Some(match self {
            Document::Fio { ours: false, .. } => return None,
            Document::Fio { ours: true, .. } => RunKind::Bench,
            Document::Record(_) => RunKind::Record,
            Document::Check(_) => RunKind::Check,
            Document::FindMax(_) => RunKind::FindMax,
            Document::Audit(_) => RunKind::Audit,
            Document::Watch(_) => RunKind::Watch,
            Document::TuneSearch(_) => RunKind::TuneSearch,
            Document::Suite(_) => RunKind::Suite,
            Document::Tune(_) => RunKind::Tune,
            Document::Verify(_) => RunKind::Verify,
            Document::Capacity(_) => RunKind::Capacity,
            Document::Fields { kind, .. } => *kind,
            Document::Failed { kind, .. } => return *kind,
        })
    }

    /// The kind's name as results write it, `fio` for fio's own JSON.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Document::Failed { kind: None, .. } => "failed",
            _ => self.kind().map_or("fio", RunKind::name),
        }
    }

    /// Why the run failed, when it did: a failed run's error, or the error a result of its
    /// kind carries (a recording stopped by a full card keeps what it measured).
    pub fn error(&self) -> Option<RunError> {
        match self {
            Document::Fio { value, .. } | Document::Fields { value, .. } => run_error(value),
            Document::Record(env) => env.error.clone(),
            Document::Check(env) => env.error.clone(),
            Document::FindMax(env) => env.error.clone(),
            Document::Audit(env) => env.error.clone(),
            Document::Watch(env) => env.error.clone(),
            Document::TuneSearch(env) => env.error.clone(),
            Document::Suite(env) => env.error.clone(),
            Document::Tune(env) => env.error.clone(),
            Document::Verify(env) => env.error.clone(),
            Document::Capacity(env) => env.error.clone(),
            Document::Failed { error, .. } => Some(error.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<Document, String> {
        Document::parse("r.json", v.to_string().as_bytes())
    }

    #[test]
    fn a_run_that_failed_before_its_result_reads_as_failed_with_its_error() {
        let error = json!({"what": "sinkrate not found on the board", "at_s": null});
        // A check with no result of its kind, as a lab writes for a board that failed.
        let d = parse(json!({"schema": SCHEMA, "kind": "check", "error": error})).unwrap();
        assert!(matches!(
            &d,
            Document::Failed {
                kind: Some(RunKind::Check),
                ..
            }
        ));
        assert_eq!(d.kind_name(), "check");
        assert_eq!(d.error().unwrap().what, "sinkrate not found on the board");
        // Before any command (unreachable): no kind.
        let d = parse(json!({"schema": SCHEMA, "error": error})).unwrap();
        assert!(matches!(&d, Document::Failed { kind: None, .. }));
        assert_eq!(d.kind_name(), "failed");
        // Without an error, a check that does not match its type is refused, as before; and
        // a document with neither kind nor error is no result.
        assert!(parse(json!({"schema": SCHEMA, "kind": "check"})).is_err());
        assert!(parse(json!({"schema": SCHEMA, "error": null})).is_err());
        assert!(parse(json!({"schema": "other/1", "error": error})).is_err());
        // A kind read as its fields keeps its error.
        let d = parse(json!({"schema": SCHEMA, "kind": "capture", "error": error})).unwrap();
        assert!(matches!(&d, Document::Fields { .. }));
        assert_eq!(d.error().unwrap().what, "sinkrate not found on the board");
    }
}
