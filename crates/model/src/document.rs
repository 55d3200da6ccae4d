//! A result file read through the types that wrote it, keyed by its run kind: what `compare`
//! and `report` take in. fio's own `--output-format=json` reads as a bench result without
//! the envelope.

use serde_json::Value;

use crate::audit::AuditReport;
use crate::capture::CaptureReport;
use crate::check::CheckReport;
use crate::compare::CompareReport;
use crate::envelope::{ReadError, RunError};
use crate::fio::BenchReport;
use crate::record::{FindMaxReport, RecordReport};
use crate::sdclass::ClassReport;
use crate::search::SearchReport;
use crate::settings::TuneReport;
use crate::suite::SuiteReport;
use crate::verify::{CapacityReport, VerifyReport};
use crate::watch::WatchReport;
use crate::{Envelope, RunKind, SCHEMA};

/// The run kinds read back through their result types, each with its type: a new kind is
/// one line here (and its section in `sinkrate report`). Record and check come first: a
/// document of theirs that does not match its type is refused (their runs are compared);
/// any other is kept as its fields.
macro_rules! typed_kinds {
    ($then:ident) => {
        $then! {
            strict: Record(RecordReport), Check(CheckReport);
            lenient: FindMax(FindMaxReport), Audit(AuditReport), Watch(WatchReport),
                TuneSearch(SearchReport), Suite(SuiteReport), Tune(TuneReport),
                Verify(VerifyReport), Capacity(CapacityReport), Compare(CompareReport),
                Capture(CaptureReport), Class(ClassReport);
        }
    };
}

macro_rules! document_enum {
    (strict: $($s:ident($st:ty)),*; lenient: $($l:ident($lt:ty)),*;) => {
        pub enum Document {
            /// fio's JSON: fio's own (`ours` false), or `sinkrate bench`'s, which carries
            /// fio's keys inside the run envelope. `value` keeps the document as read, for
            /// the envelope's words.
            Fio {
                ours: bool,
                output: Box<BenchReport>,
                value: Value,
            },
            $($s(Box<Envelope<$st>>),)*
            $($l(Box<Envelope<$lt>>),)*
            /// A kind read as its fields: bench's envelope without fio's keys, or a document
            /// whose fields do not match its type (`problem` says how, and the fields are
            /// still shown).
            Fields {
                kind: RunKind,
                value: Value,
                problem: Option<String>,
            },
            /// A run that failed before it had a result of its kind: its envelope and its
            /// error. A lab writes one for a board it could not reach, install on or run on
            /// (`kind` is the command it was running, None before any); sinkrate, for a run
            /// stopped at its start.
            Failed {
                kind: Option<RunKind>,
                error: RunError,
                value: Value,
            },
        }

        impl Document {
            /// The document read as the result type of its `kind`, or why it does not
            /// match; None for a kind without a type of its own (bench without fio's keys).
            fn typed(value: &Value, kind: RunKind) -> Option<Result<Document, ReadError>> {
                // Without `all-kinds-typed` (the board builds), compare, capture, search and
                // the verify kinds' results are read as their fields, and their readers are
                // not built (room in the x86_64 board binary for `verify --class` and card
                // profiles).
                if cfg!(not(feature = "all-kinds-typed"))
                    && matches!(
                        kind,
                        RunKind::Compare
                            | RunKind::Capture
                            | RunKind::Class
                            | RunKind::Verify
                            | RunKind::Capacity
                            | RunKind::TuneSearch
                    )
                {
                    return None;
                }
                // A copy of the document, kept for its fields should it not match its type.
                Some(match kind {
                    $(RunKind::$s => Envelope::from_value(value.clone(), kind)
                        .map(|e| Document::$s(Box::new(e))),)*
                    $(RunKind::$l => Envelope::from_value(value.clone(), kind)
                        .map(|e| Document::$l(Box::new(e))),)*
                    RunKind::Bench => return None,
                })
            }

            /// Whether a document of this kind that does not match its type is refused.
            fn strict(kind: RunKind) -> bool {
                matches!(kind, $(RunKind::$s)|*)
            }

            /// The run's kind; None for fio's own JSON.
            pub fn kind(&self) -> Option<RunKind> {
                Some(match self {
                    Document::Fio { ours: false, .. } => return None,
                    Document::Fio { ours: true, .. } => RunKind::Bench,
                    $(Document::$s(_) => RunKind::$s,)*
                    $(Document::$l(_) => RunKind::$l,)*
                    Document::Fields { kind, .. } => *kind,
                    Document::Failed { kind, .. } => return *kind,
                })
            }

            /// Why the run failed, when it did: a failed run's error, or the error a result
            /// of its kind carries (a recording stopped by a full card keeps what it
            /// measured).
            pub fn error(&self) -> Option<RunError> {
                match self {
                    Document::Fio { value, .. } | Document::Fields { value, .. } => {
                        run_error(value)
                    }
                    $(Document::$s(env) => env.error.clone(),)*
                    $(Document::$l(env) => env.error.clone(),)*
                    Document::Failed { error, .. } => Some(error.clone()),
                }
            }
        }
    };
}

typed_kinds!(document_enum);

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
        Ok(match Document::typed(&value, kind) {
            Some(Ok(typed)) => typed,
            None => fields(value, None),
            Some(Err(e)) => match fields(value, Some(e.clone())) {
                failed @ Document::Failed { .. } => failed,
                _ if Document::strict(kind) => return Err(bad(e)),
                kept => kept,
            },
        })
    }

    /// The kind's name as results write it, `fio` for fio's own JSON.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Document::Failed { kind: None, .. } => "failed",
            _ => self.kind().map_or("fio", RunKind::name),
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
        // A kind read as its fields (bench's envelope without fio's keys) keeps its error;
        // a typed kind's document with nothing of its type but an error is a failed run.
        let d = parse(json!({"schema": SCHEMA, "kind": "bench", "error": error})).unwrap();
        assert!(matches!(&d, Document::Fields { .. }));
        assert_eq!(d.error().unwrap().what, "sinkrate not found on the board");
        // (as capture's is, where it is read typed: not in the board builds)
        let d = parse(json!({"schema": SCHEMA, "kind": "capture", "error": error})).unwrap();
        if cfg!(feature = "all-kinds-typed") {
            assert!(matches!(
                &d,
                Document::Failed {
                    kind: Some(RunKind::Capture),
                    ..
                }
            ));
        } else {
            assert!(matches!(&d, Document::Fields { .. }));
        }
        assert_eq!(d.error().unwrap().what, "sinkrate not found on the board");
    }
}
