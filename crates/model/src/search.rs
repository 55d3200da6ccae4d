//! `sinkrate tune search`'s result: the candidates tried (system settings and recorder
//! changes), each run of each, their scores, the winner against the baseline, and the power
//! cuts that prove a loss bound.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sinkrate_stats::bootstrap::Change;

use crate::record::WriteMode;
use crate::settings::Setting;
use crate::tunables::Assignment;
use crate::Verdict;

/// A change to the recorder itself: what the app would do differently.
///
/// Read through [`RecorderChangeFields`], as [`crate::settings::Setting`] is: serde's reader
/// of an internally tagged enum (a buffered replay per variant) was 9.7 KB of the board
/// builds' budget. The JSON is the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "knob",
    rename_all = "snake_case",
    try_from = "RecorderChangeFields"
)]
pub enum RecorderChange {
    WriteMode {
        mode: WriteMode,
    },
    Buffers {
        buffers: usize,
    },
    FdatasyncEvery {
        #[serde(with = "sinkrate_units::serde_seconds::seconds")]
        every_s: Duration,
    },
    /// Each stream's file preallocated to what the run will write (sized per run).
    Preallocate,
    /// A whole frame per write call instead of small writes (stdio-sized buffering).
    WholeFrameWrites,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Knob {
    WriteMode,
    Buffers,
    FdatasyncEvery,
    Preallocate,
    WholeFrameWrites,
}

/// A [`RecorderChange`] as its JSON holds it: the knob and every field any knob has.
#[derive(Deserialize)]
struct RecorderChangeFields {
    knob: Knob,
    mode: Option<WriteMode>,
    buffers: Option<usize>,
    #[serde(default, with = "sinkrate_units::serde_seconds::opt_seconds")]
    every_s: Option<Duration>,
}

impl TryFrom<RecorderChangeFields> for RecorderChange {
    type Error = String;

    fn try_from(f: RecorderChangeFields) -> Result<Self, String> {
        let missing = |field: &str| format!("missing field `{field}`");
        Ok(match f.knob {
            Knob::WriteMode => RecorderChange::WriteMode {
                mode: f.mode.ok_or_else(|| missing("mode"))?,
            },
            Knob::Buffers => RecorderChange::Buffers {
                buffers: f.buffers.ok_or_else(|| missing("buffers"))?,
            },
            Knob::FdatasyncEvery => RecorderChange::FdatasyncEvery {
                every_s: f.every_s.ok_or_else(|| missing("every_s"))?,
            },
            Knob::Preallocate => RecorderChange::Preallocate,
            Knob::WholeFrameWrites => RecorderChange::WholeFrameWrites,
        })
    }
}

impl RecorderChange {
    /// In the words of `sinkrate record`'s flags.
    pub fn flag(&self) -> String {
        match self {
            RecorderChange::WriteMode { mode } => {
                format!("--write-mode {}", mode.name())
            }
            RecorderChange::Buffers { buffers } => format!("--buffers {buffers}"),
            RecorderChange::FdatasyncEvery { every_s } => {
                format!("--fdatasync-every {}s", every_s.as_secs_f64())
            }
            RecorderChange::Preallocate => {
                "--preallocate SIZE (each file to what it will hold)".to_string()
            }
            RecorderChange::WholeFrameWrites => {
                "a whole frame per write call (no --write-size)".to_string()
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub label: String,
    /// System settings, applied for the candidate's runs through the journal (temporary).
    pub system: Vec<Assignment>,
    pub recorder: Vec<RecorderChange>,
}

impl Candidate {
    /// The dirty_expire + writeback interval in force for this candidate, in seconds: its
    /// runs must last past the first flush of expired data, where the stalls are.
    pub fn writeback_cycle_s(&self, expire_cs: u64, writeback_cs: u64) -> f64 {
        let get = |name: &str, default: u64| {
            self.system
                .iter()
                .find(|a| a.setting == sysctl(name))
                .and_then(|a| a.value.parse::<u64>().ok())
                .unwrap_or(default)
        };
        (get("vm/dirty_expire_centisecs", expire_cs)
            + get("vm/dirty_writeback_centisecs", writeback_cs)) as f64
            / 100.0
    }

    /// `sinkrate tune apply` arguments for the system part.
    pub fn settings_args(&self) -> Vec<String> {
        self.system.iter().map(Assignment::argument).collect()
    }
}

fn sysctl(name: &str) -> Setting {
    Setting::Sysctl { name: name.into() }
}

/// One run of one candidate, as the objective reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub verdict: Verdict,
    /// 0 when the workload does not count frames (a bench job, a recorder without a drops
    /// file).
    pub frames_offered: u64,
    pub frames_dropped: u64,
    /// Known for record and bench workloads, not for a recorder run with --exec.
    pub worst_write_ms: Option<f64>,
    pub p99_write_ms: Option<f64>,
    /// How late frames were written (record), or the p99 write latency (bench).
    pub p99_lateness_ms: Option<f64>,
    /// The writers' and the kernel's flusher threads' CPU (seed 001's spikes).
    pub cpu_s: f64,
    /// The most dirty + writeback data seen: what a power cut could lose.
    pub peak_dirty_bytes: Option<u64>,
    /// The longest stretch of recording that no completed fdatasync or O_DSYNC write had
    /// yet acknowledged (record workloads; None when the recorder never asks the device, or
    /// for a job or an outside recorder, whose acknowledgements are not seen).
    #[serde(default)]
    pub unacknowledged_worst_s: Option<f64>,
    /// Seconds the writers spent throttled by the kernel's dirty limits (the sampler's
    /// count of throttled intervals).
    #[serde(default)]
    pub throttled_s: f64,
    pub duration_s: f64,
    /// A confirmation run (full length, compared with the baseline), not a screening run.
    #[serde(default)]
    pub confirmation: bool,
    /// Stopped before its end: already clearly worse than the best candidate so far.
    #[serde(default)]
    pub stopped_early: bool,
    /// What stopped the run, when its verdict is failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Bytes the device wrote per hour of recording (record workloads): what wears the card.
    #[serde(default)]
    pub device_bytes_per_hour: Option<f64>,
    /// Bytes the device wrote in this run, its final flush included (record workloads).
    #[serde(default)]
    pub device_bytes_written: Option<u64>,
    /// Bytes the device wrote per second of its busy time in this run (record workloads,
    /// diskstats): what sizes a `--max-loss` sync cadence.
    #[serde(default)]
    pub device_rate_while_busy_bytes_per_s: Option<f64>,
    /// What the run's own account says of its stalls (record workloads): what the search
    /// predicts a fix from. Written typed, read back as its JSON (no command reads it back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<crate::kept::Kept<Diagnosis>>,
}

/// A recording's stalls as its own account gives them: the kernel's causes, when they came
/// against the first flush of expired data, and the sizes the run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Diagnosis {
    /// The stalls' time by cause, from the kernel's events; None when they were not read.
    pub stall_causes: Option<crate::causes::CauseSeconds>,
    /// Why the kernel's events were not read.
    pub causes_unread: Option<String>,
    /// Seconds of stalled calls in all, and those that began in the window of the first
    /// flush of expired data (from a second before it to ten after).
    pub stall_s: f64,
    pub stall_at_first_flush_s: f64,
    /// The longest stall outside that window, seconds.
    pub worst_other_stall_s: f64,
    /// When the first dirty data to expire is written back (expire plus one writeback
    /// interval); None for a recording that wrote through no page cache.
    pub first_flush_s: Option<f64>,
    /// The recording wrote through the page cache (buffered).
    pub page_cache: bool,
    /// The writeback interval in force, seconds.
    pub writeback_interval_s: Option<f64>,
    pub run_s: f64,
    /// Frames per second of the fastest stream, and the pool the run had.
    pub fps: f64,
    pub buffers: usize,
    /// The smallest capture pool (frames, the largest over the streams) that would have
    /// dropped nothing.
    pub pool_frames: Option<usize>,
    /// The per-device dirty limit the run sized: the card's bdi and the cap in bytes.
    pub device_limit: Option<(String, u64)>,
    /// The strict cap the card's bdi held during the run, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_device_limit_bytes: Option<u64>,
    /// The streams' rate and the device's rate while busy, bytes a second.
    pub stream_bytes_per_s: f64,
    pub device_bytes_per_s: Option<f64>,
}

/// The fix a search predicted from its baseline's run, and whether its runs proved it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The candidate predicted; None when no prediction was made (`because` says why).
    pub label: Option<String>,
    /// What the prediction rests on, or why there is none.
    pub because: String,
    /// Its full-length runs against the baseline's kept every frame and beat it: the
    /// search ended there. False when they did not (the search then ran as without one).
    pub proven: bool,
    /// What the proof's runs showed.
    #[serde(default)]
    pub proof: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    pub candidate: Candidate,
    pub trials: Vec<Trial>,
    /// Fewer confirmation runs than `runs_per_candidate`: it was not the leader (or the
    /// baseline), or was clearly worse after its screening run.
    pub screened_only: bool,
    pub drops_per_run: f64,
    /// Dropped frames as a share of those offered, over every run (0 when not counted).
    #[serde(default)]
    pub dropped_share: f64,
    pub worst_write_ms: Option<f64>,
    pub p99_lateness_ms: Option<f64>,
    pub cpu_s: f64,
    pub peak_dirty_bytes: Option<u64>,
    /// The longest unacknowledged stretch of recording over the runs; None when a run's
    /// recorder never asked the device (nothing bounds what a power cut loses).
    #[serde(default)]
    pub unacknowledged_worst_s: Option<f64>,
    /// The median over the runs of the device's bytes per hour of recording.
    #[serde(default)]
    pub device_bytes_per_hour: Option<f64>,
}

/// What "better" means for a search: the full-length runs a candidate needs to be proven,
/// and the most recording a power cut may cost (`--max-loss`), a bound a candidate meets
/// or does not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objective {
    pub runs: usize,
    pub max_loss_s: Option<f64>,
    /// `--objective wear`: among the candidates that keep up, the fewest device bytes per
    /// hour of recording come first (before latency).
    pub wear: bool,
}

impl Objective {
    /// Whether `s` keeps within `--max-loss` (true without one).
    pub fn within_loss(&self, s: &Scored) -> bool {
        self.max_loss_s.is_none_or(|bound| {
            !s.trials.is_empty() && s.unacknowledged_worst_s.is_some_and(|w| w <= bound)
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub baseline: String,
    pub winner: String,
    pub drops: (f64, f64),
    pub worst_write: Option<Change>,
    pub p99_lateness: Option<Change>,
    /// The sentence a person reads.
    pub text: String,
}

/// A candidate's recording with its power cut: what it lost, against what its runs showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerCutProof {
    pub label: String,
    pub at_s: f64,
    /// The most recording any stream lost (capture of its first missing frame to the cut).
    pub recording_lost_s: f64,
    pub frames_believed_written: u64,
    pub frames_acknowledged_durable: u64,
    pub frames_survived: u64,
    /// Acknowledged, yet not on the card: the device or the filesystem broke its promise.
    pub frames_durable_lost: u64,
    /// The run's own longest unacknowledged stretch, up to the cut.
    pub unacknowledged_worst_s: Option<f64>,
    pub frames_dropped: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchReport {
    pub label: String,
    pub dir: String,
    /// record, job or exec.
    #[serde(default)]
    pub workload: String,
    pub runs_per_candidate: usize,
    /// The workload's write rate (bytes a second; 0 when unknown): the data at risk in
    /// seconds of recording.
    #[serde(default)]
    pub rate_bytes_per_s: f64,
    /// The length of a confirmation run.
    pub run_duration_s: f64,
    /// The length of the baseline's screening run (others are shorter with a shorter
    /// writeback cycle).
    #[serde(default)]
    pub screen_duration_s: f64,
    pub budget_s: f64,
    pub estimate_s: f64,
    pub spent_s: f64,
    /// Best first.
    pub ranked: Vec<Scored>,
    /// Index in `ranked` of the baseline.
    pub baseline: Option<usize>,
    pub comparison: Option<Comparison>,
    /// What was not tried, and why (no root, the budget).
    pub notes: Vec<String>,
    pub interrupted: bool,
    /// Why the search has no answer: the workload failed as configured, or every candidate
    /// did (an I/O error, a full device). The run then failed.
    #[serde(default)]
    pub failed: Option<String>,
    /// `--max-loss`, in seconds of recording.
    #[serde(default)]
    pub max_loss_s: Option<f64>,
    /// With `--power-cut`: the winner's and the baseline's recordings with their power cut.
    #[serde(default)]
    pub power_cuts: Vec<PowerCutProof>,
    /// With `--max-loss`: whether the winner kept within it (the verdict a script reads; the
    /// run exits 1 when false). Null without a bound.
    #[serde(default)]
    pub max_loss_met: Option<bool>,
    /// What ranks the candidates that keep up: `latency` (the worst write first) or `wear`
    /// (the device's bytes per hour first).
    #[serde(default = "latency_objective")]
    pub rank_by: String,
    /// What the search cost the card: the bytes the device wrote in every run whose
    /// device was counted (record workloads; power-cut proofs not included). None when no
    /// run was.
    #[serde(default)]
    pub device_bytes_written: Option<u64>,
    /// With `--apply`: the winner's system settings as applied (`tune apply` arguments),
    /// kept until `sinkrate tune restore`; empty when nothing was applied.
    #[serde(default)]
    pub applied: Vec<String>,
    /// The fix predicted from the baseline's stalls and their causes, and its proof.
    #[serde(default)]
    pub prediction: Option<Prediction>,
}

fn latency_objective() -> String {
    "latency".into()
}

impl SearchReport {
    /// The sum of the runs' device bytes (see `device_bytes_written`).
    pub fn runs_device_bytes(&self) -> Option<u64> {
        self.ranked
            .iter()
            .flat_map(|c| &c.trials)
            .filter_map(|t| t.device_bytes_written)
            .reduce(|a, b| a + b)
    }

    pub fn winner(&self) -> Option<&Scored> {
        self.ranked
            .first()
            .filter(|_| self.failed.is_none())
            .filter(|w| w.trials.iter().all(|t| t.verdict != Verdict::Failed))
    }

    pub fn objective(&self) -> Objective {
        Objective {
            runs: self.runs_per_candidate,
            max_loss_s: self.max_loss_s,
            wear: self.rank_by == "wear",
        }
    }

    /// With `--max-loss`: whether the winner kept within it in its runs and, when its power
    /// was cut, on the card. None without a bound.
    pub fn loss_bound_met(&self) -> Option<bool> {
        let bound = self.max_loss_s?;
        let objective = self.objective();
        let Some(w) = self.winner() else {
            return Some(false);
        };
        let cut_ok = self
            .power_cuts
            .iter()
            .filter(|p| p.label == w.candidate.label)
            .all(|p| p.recording_lost_s <= bound && p.frames_durable_lost == 0);
        Some(objective.within_loss(w) && cut_ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_recorder_change_reads_back_as_it_was_written() {
        let all = [
            RecorderChange::WriteMode {
                mode: WriteMode::Direct,
            },
            RecorderChange::Buffers { buffers: 30 },
            RecorderChange::FdatasyncEvery {
                every_s: Duration::from_millis(500),
            },
            RecorderChange::Preallocate,
            RecorderChange::WholeFrameWrites,
        ];
        for change in all {
            let text = serde_json::to_string(&change).unwrap();
            let back: RecorderChange = serde_json::from_str(&text).unwrap();
            assert_eq!(back, change, "{text}");
            let value = serde_json::to_value(&change).unwrap();
            assert_eq!(
                serde_json::from_value::<RecorderChange>(value).unwrap(),
                change
            );
        }
        assert_eq!(
            serde_json::to_string(&RecorderChange::Buffers { buffers: 30 }).unwrap(),
            r#"{"knob":"buffers","buffers":30}"#
        );
        let err = serde_json::from_str::<RecorderChange>(r#"{"knob":"buffers"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing field `buffers`"), "{err}");
    }
}
