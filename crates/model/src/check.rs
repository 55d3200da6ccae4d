//! `sinkrate check`'s result: the sustained write, the audit and the recording test, judged
//! together; and the sustained write probe's figure, which `record --find-max` also uses.

use serde::{Deserialize, Serialize};

use crate::audit::{AuditReport, StreamRate};
use crate::record::RecordRun;
use crate::{Envelope, Verdict};

/// How the rate was measured, in words a table can print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeMethod {
    /// O_DIRECT writes, fsync at the end.
    Direct,
    /// The filesystem refused O_DIRECT (or ignored it): buffered writes, the final fsync
    /// inside the timed span.
    BufferedFsynced,
}

impl ProbeMethod {
    pub fn label(self) -> &'static str {
        match self {
            ProbeMethod::Direct => "direct I/O, fsync'd",
            ProbeMethod::BufferedFsynced => "buffered, every byte fsync'd in the timed span",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SustainedWrite {
    /// Bytes written over the time from the first write to the end of the final fsync.
    pub bytes_per_s: f64,
    pub bytes_written: u64,
    /// Seconds from the first write to the end of the final fsync.
    pub seconds: f64,
    pub method: ProbeMethod,
    /// Bytes the device counted as written meanwhile (its sectors in /proc/diskstats), for
    /// the devices behind the directory; None where it has none (tmpfs, network).
    pub device_bytes_written: Option<u64>,
    /// Ended before its span: the device's rate had held (every further byte would only
    /// have cost the card).
    #[serde(default)]
    pub stopped_steady: bool,
    /// What the confirmation found, when it does not simply agree.
    pub notes: Vec<String>,
}

/// A check's result inside the run envelope.
pub type CheckRun = Envelope<CheckReport>;

/// How long each phase runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub sustained_s: u64,
    pub record_s: u64,
}

impl Plan {
    pub fn of(quick: bool) -> Plan {
        if quick {
            Plan {
                sustained_s: 4,
                record_s: 8,
            }
        } else {
            Plan {
                sustained_s: 15,
                record_s: 40,
            }
        }
    }
    /// Seconds the whole check is expected to take, for a progress bar.
    pub fn expected_s(&self) -> u64 {
        self.sustained_s + self.record_s + 3
    }
}

/// The sustained write phase: its figure, how it was measured, and the device's own count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawWrite {
    /// The figure the verdict used (bytes written over writes + final fsync).
    pub bytes_per_s: Option<f64>,
    /// O_DIRECT was used (false: buffered, every byte fsync'd in the timed span).
    pub direct: bool,
    /// What was measured, in words.
    #[serde(default)]
    pub method: Option<String>,
    /// The planned length of the phase.
    pub seconds: u64,
    #[serde(default)]
    pub measured: Option<SustainedWrite>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    pub verdict: Verdict,
    pub exit_code: u8,
    pub elapsed_s: f64,
    pub quick: bool,
    pub stream: StreamRate,
    pub headroom: Option<f64>,
    pub raw_write: RawWrite,
    /// The ids of the findings shown under FIX FIRST.
    pub top_findings: Vec<String>,
    pub audit: AuditReport,
    pub record: Option<RecordRun>,
    /// What the check cost the card: the bytes its devices wrote under the sustained write
    /// and the recording together (their own counts); None where neither was counted.
    #[serde(default)]
    pub device_bytes_written: Option<u64>,
    pub notes: Vec<String>,
    /// Where the full report was written (set by the caller that writes it).
    #[serde(default)]
    pub report_file: Option<String>,
}
