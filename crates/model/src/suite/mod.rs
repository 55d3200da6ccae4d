//! `sinkrate suite`'s result: one suite's tables (rows of measured cells, each with its
//! spread over runs) and how they were made.

pub mod format;
pub mod table;

use serde::{Deserialize, Serialize};

pub use table::{Better, Cell, Column, Row, Table, Unit};

use crate::{Envelope, TargetFacts};

/// A suite's result inside the run envelope.
pub type SuiteRun = Envelope<SuiteReport>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteReport {
    pub suite: String,
    pub source: String,
    pub about: String,
    pub dir: String,
    pub target: TargetFacts,
    /// The devices the suite made, when it made any (card model and settings).
    #[serde(default)]
    pub made_on: Option<String>,
    pub quick: bool,
    pub runs: usize,
    pub estimate_s: f64,
    pub elapsed_s: f64,
    pub tables: Vec<Table>,
    /// Settings changed for the run (journaled first) and put back after it.
    #[serde(default)]
    pub settings_changed: Vec<String>,
    pub notes: Vec<String>,
    /// The JSON of every run, where `runs_dir` was given.
    #[serde(default)]
    pub run_files: Vec<String>,
    /// What the suite cost the directory's device: the bytes it counted as written over the
    /// suite (diskstats; other writers count too). None without a device (tmpfs).
    #[serde(default)]
    pub device_bytes_written: Option<u64>,
}
