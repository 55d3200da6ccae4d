//! The search: every candidate recorded a few times in this process (its system settings
//! applied through the journal as temporary changes, put back after), each run long enough
//! to pass the first flush of expired data, ranked by the objective, the winner set against
//! the baseline.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sinkrate_model::Verdict;
use sinkrate_record::session::{self, Session, SessionError};
use sinkrate_settings::{Journal, Temporary};

use crate::candidates::{candidates, Candidate};
use crate::stats::{relative_change, Change};

/// Seconds past the first flush of expired data that each run records.
const PAST_FIRST_FLUSH_S: f64 = 10.0;
/// Set-up and final flush around each run, for the estimate.
const OVERHEAD_PER_RUN_S: f64 = 3.0;

#[derive(Debug, Clone)]
pub struct SearchConfig {
    /// The user's workload (record flags, or check's profile), in its directory.
    pub base: Session,
    /// Runs per candidate.
    pub runs: usize,
    pub budget: Duration,
    /// Whether system settings may be tried (root).
    pub system: bool,
    /// The journal temporary settings go through.
    pub journal: Journal,
}

/// One run of one candidate, as the objective reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub verdict: Verdict,
    pub frames_offered: u64,
    pub frames_dropped: u64,
    pub worst_write_ms: f64,
    pub p99_write_ms: f64,
    pub p99_lateness_ms: f64,
    /// The writers' and the kernel's flusher threads' CPU (seed 001's spikes).
    pub cpu_s: f64,
    /// The most dirty + writeback data seen: what a power cut could lose.
    pub peak_dirty_bytes: Option<u64>,
    pub duration_s: f64,
    /// What stopped the run, when its verdict is failed.
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    pub candidate: Candidate,
    pub trials: Vec<Trial>,
    /// Screened with fewer runs than `runs_per_candidate`: it was not the leader (or the
    /// baseline), so it was not confirmed.
    pub screened_only: bool,
    pub drops_per_run: f64,
    pub worst_write_ms: f64,
    pub p99_lateness_ms: f64,
    pub cpu_s: f64,
    pub peak_dirty_bytes: Option<u64>,
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchReport {
    pub label: String,
    pub dir: String,
    pub runs_per_candidate: usize,
    pub run_duration_s: f64,
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
}

impl SearchReport {
    pub fn winner(&self) -> Option<&Scored> {
        self.ranked
            .first()
            .filter(|_| self.failed.is_none())
            .filter(|w| w.trials.iter().all(|t| t.verdict != Verdict::Failed))
    }
}

fn trial(run: &sinkrate_record::report::RecordRun) -> Trial {
    let r = &run.result;
    let t = &r.totals;
    Trial {
        verdict: r.verdict,
        frames_offered: t.frames_offered,
        frames_dropped: t.frames_dropped,
        worst_write_ms: t.write_latency_ns.max as f64 / 1e6,
        p99_write_ms: t.write_latency_ns.p99 as f64 / 1e6,
        p99_lateness_ms: t.lateness_ns.p99 as f64 / 1e6,
        cpu_s: t.writer_cpu_s + t.flusher_cpu_s,
        peak_dirty_bytes: r.sampler.summary.peak_dirty_writeback_bytes,
        duration_s: t.duration_s,
        error: run.error.as_ref().map(|e| e.what.clone()),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn score(candidate: Candidate, trials: Vec<Trial>, screened_only: bool) -> Scored {
    let n = trials.len().max(1) as f64;
    Scored {
        drops_per_run: trials.iter().map(|t| t.frames_dropped as f64).sum::<f64>() / n,
        worst_write_ms: median(trials.iter().map(|t| t.worst_write_ms).collect()),
        p99_lateness_ms: median(trials.iter().map(|t| t.p99_lateness_ms).collect()),
        cpu_s: median(trials.iter().map(|t| t.cpu_s).collect()),
        peak_dirty_bytes: trials.iter().filter_map(|t| t.peak_dirty_bytes).max(),
        candidate,
        trials,
        screened_only,
    }
}

/// The objective, in order: no dropped frames; the lowest worst write, then p99 lateness;
/// the least writer + flusher CPU; the least data at risk.
fn better(a: &Scored, b: &Scored) -> std::cmp::Ordering {
    let failed = |s: &Scored| s.trials.iter().any(|t| t.verdict == Verdict::Failed);
    failed(a)
        .cmp(&failed(b))
        .then(a.drops_per_run.total_cmp(&b.drops_per_run))
        .then(a.worst_write_ms.total_cmp(&b.worst_write_ms))
        .then(a.p99_lateness_ms.total_cmp(&b.p99_lateness_ms))
        .then(a.cpu_s.total_cmp(&b.cpu_s))
        .then(a.peak_dirty_bytes.cmp(&b.peak_dirty_bytes))
}

/// Candidate indices, best first, by the objective over the runs so far.
fn rank(chosen: &[Candidate], trials: &[Vec<Trial>]) -> Vec<usize> {
    let scored: Vec<Scored> = chosen
        .iter()
        .zip(trials)
        .map(|(c, t)| score(c.clone(), t.clone(), false))
        .collect();
    let mut order: Vec<usize> = (0..chosen.len())
        .filter(|k| !trials[*k].is_empty())
        .collect();
    order.sort_by(|a, b| better(&scored[*a], &scored[*b]));
    if order.is_empty() {
        order.push(0);
    }
    order
}

/// Runs the search. `progress` hears one line as each run starts. A refusal of the workload
/// (no space, a bad directory) comes before any run.
pub fn search(
    cfg: &SearchConfig,
    stop: Arc<AtomicBool>,
    progress: &mut dyn FnMut(&str),
) -> Result<SearchReport, SessionError> {
    session::preflight(&cfg.base)?;
    let started = Instant::now();
    let vm = sinkrate_sampler::live::read_vm_settings();
    let (expire, every) = (
        vm.dirty_expire_centisecs.unwrap_or(3000),
        vm.dirty_writeback_centisecs.unwrap_or(500),
    );
    let mut notes = Vec::new();
    if !cfg.system {
        notes.push(
            "not root: only the recorder's own knobs were tried; the writeback sysctls need root"
                .to_string(),
        );
    }
    let all = candidates(&cfg.base, cfg.system);
    let base_s = cfg.base.record.duration.as_secs_f64();
    let duration_of =
        |c: &Candidate| base_s.max(c.writeback_cycle_s(expire, every) + PAST_FIRST_FLUSH_S);
    let estimate = |runs: usize, list: &[Candidate]| {
        list.iter()
            .map(|c| runs as f64 * (duration_of(c) + OVERHEAD_PER_RUN_S))
            .sum::<f64>()
    };
    // Screening: one run of every candidate that fits the budget (candidates from the end
    // are left out, and named); then confirmation: the leader and the baseline run until
    // each has `runs` runs, the leader changing as runs come in, while the budget allows.
    let budget_s = cfg.budget.as_secs_f64();
    let runs = cfg.runs.max(1);
    let mut chosen = all.clone();
    while chosen.len() > 2 && estimate(1, &chosen) > budget_s {
        if let Some(c) = chosen.pop() {
            notes.push(format!("not tried within the budget: {}", c.label));
        }
    }
    let confirm_s = |c: &Candidate| (runs - 1) as f64 * (duration_of(c) + OVERHEAD_PER_RUN_S);
    let estimate_s = estimate(1, &chosen) + confirm_s(&chosen[0]) * 2.0;
    if estimate(1, &chosen) > budget_s {
        notes.push(format!(
            "--budget {budget_s:.0} s is shorter than one run each of the baseline and one candidate ({:.0} s); they ran anyway",
            estimate(1, &chosen)
        ));
    }
    progress(&format!(
        "{} candidate(s), about {:.0} s ({:.0} s budget): one screening run each, then up to {runs} runs of the leader and the baseline",
        chosen.len(),
        estimate_s.min(budget_s.max(estimate(1, &chosen))),
        budget_s
    ));
    let mut trials: Vec<Vec<Trial>> = vec![Vec::new(); chosen.len()];
    let mut interrupted = false;
    let mut run_one = |k: usize, trials: &mut Vec<Vec<Trial>>| -> Result<bool, SessionError> {
        let c = &chosen[k];
        let mut session = c.session(&cfg.base);
        session.record.duration = Duration::from_secs_f64(duration_of(c));
        // The candidate's system settings for this run only, put back when it ends.
        let _settings = if c.system.is_empty() {
            None
        } else {
            Some(
                Temporary::apply(&cfg.journal, &c.system)
                    .map_err(|e| SessionError::Settings(e.to_string()))?,
            )
        };
        progress(&format!(
            "{} (run {} of {runs}, {:.0} s)",
            c.label,
            trials[k].len() + 1,
            duration_of(c)
        ));
        let run = session::run(&session, stop.clone(), None)?;
        if stop.load(Ordering::Relaxed) || run.interrupted {
            return Ok(false);
        }
        trials[k].push(trial(&run));
        Ok(true)
    };
    let failure = |t: &Trial| {
        (t.verdict == Verdict::Failed).then(|| {
            t.error
                .clone()
                .unwrap_or_else(|| "the recording failed".into())
        })
    };
    let mut failed = None;
    for k in 0..chosen.len() {
        if !run_one(k, &mut trials)? {
            interrupted = true;
            break;
        }
        // The baseline is what every candidate is compared with: if it fails, stop.
        if let Some(why) = trials[0].first().and_then(failure).filter(|_| k == 0) {
            failed = Some(format!(
                "the workload as configured failed, so nothing can be compared: {why}"
            ));
            break;
        }
    }
    if failed.is_none()
        && !interrupted
        && trials
            .iter()
            .flatten()
            .all(|t| t.verdict == Verdict::Failed)
    {
        let why = trials
            .iter()
            .flatten()
            .find_map(failure)
            .unwrap_or_default();
        failed = Some(format!("every candidate failed: {why}"));
    }
    let fits = |c: &Candidate| {
        started.elapsed().as_secs_f64() + duration_of(c) + OVERHEAD_PER_RUN_S <= budget_s
    };
    let mut left_unconfirmed = false;
    while !interrupted && failed.is_none() {
        let ranked = rank(&chosen, &trials);
        let leader = ranked[0];
        // The leader first, then the baseline it is compared with.
        let next = [leader, 0].into_iter().find(|k| trials[*k].len() < runs);
        let Some(k) = next else { break };
        if !fits(&chosen[k]) {
            left_unconfirmed = true;
            break;
        }
        if !run_one(k, &mut trials)? {
            interrupted = true;
        }
    }
    if left_unconfirmed {
        notes.push(format!(
            "the budget ended before the leader and the baseline had {runs} runs each; a larger --budget confirms them"
        ));
    }
    let mut scored: Vec<Scored> = chosen
        .iter()
        .zip(trials)
        .filter(|(_, t)| !t.is_empty())
        .map(|(c, t)| {
            let short = t.len() < runs;
            score(c.clone(), t, short)
        })
        .collect();
    scored.sort_by(better);
    let baseline = scored
        .iter()
        .position(|s| s.candidate.system.is_empty() && s.candidate.recorder.is_empty());
    let comparison = baseline
        .filter(|_| failed.is_none())
        .and_then(|b| compare(&scored[b], scored.first()?));
    Ok(SearchReport {
        label: cfg.base.label.clone(),
        dir: cfg.base.record.dir.display().to_string(),
        runs_per_candidate: runs,
        run_duration_s: duration_of(&all[0]),
        budget_s,
        estimate_s,
        spent_s: started.elapsed().as_secs_f64(),
        ranked: scored,
        baseline,
        comparison,
        notes,
        interrupted,
        failed,
    })
}

fn compare(base: &Scored, winner: &Scored) -> Option<Comparison> {
    if base.candidate == winner.candidate {
        return Some(Comparison {
            baseline: base.candidate.label.clone(),
            winner: winner.candidate.label.clone(),
            drops: (base.drops_per_run, winner.drops_per_run),
            worst_write: None,
            p99_lateness: None,
            text: "no candidate did better than the configuration as it is".into(),
        });
    }
    let of = |s: &Scored, f: fn(&Trial) -> f64| s.trials.iter().map(f).collect::<Vec<_>>();
    let worst = relative_change(
        &of(base, |t| t.worst_write_ms),
        &of(winner, |t| t.worst_write_ms),
    );
    let late = relative_change(
        &of(base, |t| t.p99_lateness_ms),
        &of(winner, |t| t.p99_lateness_ms),
    );
    let offered = |s: &Scored| s.trials.iter().map(|t| t.frames_offered).sum::<u64>();
    let dropped = |s: &Scored| s.trials.iter().map(|t| t.frames_dropped).sum::<u64>();
    let mut text = format!(
        "{} against the baseline: {} of {} frames dropped vs {} of {}",
        winner.candidate.label,
        dropped(winner),
        offered(winner),
        dropped(base),
        offered(base)
    );
    if let Some(w) = &worst {
        text.push_str(&format!(
            "; worst write {:+.0}% (95% CI {:+.0}% to {:+.0}%, {} vs {} runs)",
            w.change_pct, w.ci_low_pct, w.ci_high_pct, w.runs.1, w.runs.0
        ));
        if w.runs.0 < 3 || w.runs.1 < 3 {
            text.push_str(", too few runs for the interval to mean much");
        }
    }
    Some(Comparison {
        baseline: base.candidate.label.clone(),
        winner: winner.candidate.label.clone(),
        drops: (base.drops_per_run, winner.drops_per_run),
        worst_write: worst,
        p99_lateness: late,
        text,
    })
}
