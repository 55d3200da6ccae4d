//! A result file read through the types that wrote it, keyed by its run kind: what `compare`
//! and `report` take in. fio's own `--output-format=json` reads as a bench result without
//! the envelope.

use serde::Deserialize;
use serde_json::Value;

use crate::audit::AuditReport;
use crate::check::CheckReport;
use crate::envelope::ReadError;
use crate::fio::BenchReport;
use crate::record::{FindMaxReport, RecordReport};
use crate::search::SearchReport;
use crate::suite::SuiteReport;
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
    /// A kind read as its fields: one without a picture of its own (tune, compare, verify,
    /// capacity), or one whose fields do not match its type (`problem` says how, and the
    /// fields are still shown).
    Fields {
        kind: RunKind,
        value: Value,
        problem: Option<String>,
    },
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
            let output = BenchReport::deserialize(&value)
                .map_err(|e| format!("{name}: fio's JSON, but not as fio writes it ({e})"))?;
            return Ok(Document::Fio {
                ours,
                output: Box::new(output),
                value,
            });
        }
        let bad = |e: ReadError| format!("{name}: {e}");
        let kind_name = value
            .get("kind")
            .and_then(|k| k.as_str())
            .ok_or_else(|| {
                format!("{name}: neither a sinkrate result (no \"kind\") nor fio's JSON (no \"fio version\")")
            })?
            .to_string();
        let schema = value.get("schema").and_then(|s| s.as_str());
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
        let fields = |value: Value, problem: Option<ReadError>| Document::Fields {
            kind,
            value,
            problem: problem.map(|e| e.to_string()),
        };
        // A copy of the document, kept for its fields should it not match its type.
        fn typed<T: serde::de::DeserializeOwned>(
            value: &Value,
            kind: RunKind,
        ) -> Result<Box<Envelope<T>>, ReadError> {
            Envelope::<T>::from_value(value.clone(), kind).map(Box::new)
        }
        Ok(match kind {
            // Read without a copy: these two have no fallback to their fields.
            RunKind::Record => {
                Document::Record(Box::new(Envelope::from_value(value, kind).map_err(bad)?))
            }
            RunKind::Check => {
                Document::Check(Box::new(Envelope::from_value(value, kind).map_err(bad)?))
            }
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
            RunKind::Bench
            | RunKind::Tune
            | RunKind::Compare
            | RunKind::Verify
            | RunKind::Capacity => fields(value, None),
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
            Document::Fields { kind, .. } => *kind,
        })
    }

    /// The kind's name as results write it, `fio` for fio's own JSON.
    pub fn kind_name(&self) -> &'static str {
        self.kind().map_or("fio", RunKind::name)
    }
}
