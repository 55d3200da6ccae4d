//! The search: every candidate run a few times in this process (its system settings
//! applied through the journal as temporary changes, put back after), each run long enough
//! to pass the first flush of expired data, ranked by the objective, the winner confirmed
//! in full-length runs and set against the baseline.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sinkrate_model::Verdict;
use sinkrate_settings::{Journal, Temporary};

use crate::candidates::{candidates, Knobs, QueueMount};

use crate::rank::{better, compare, rank, score};
pub use crate::workload::{SearchError, Workload};
use sinkrate_model::search::{Candidate, PowerCutProof, Prediction, Scored, SearchReport, Trial};

/// Seconds past the first flush of expired data that a screening run records.
const PAST_FIRST_FLUSH_S: f64 = 10.0;
/// The shortest screening run: with writeback every second the first flush comes at once,
/// and the stalls that remain (hundreds of ms every few seconds) need some seconds to show.
const MIN_SCREEN_S: f64 = 20.0;
/// Set-up and final flush around each run, for the estimate.
const OVERHEAD_PER_RUN_S: f64 = 3.0;
/// Bringing a card's power back and mounting it again after a cut, for the estimate.
const CUT_RESTORE_S: f64 = 5.0;

#[derive(Debug, Clone)]
pub struct SearchConfig {
    pub workload: Workload,
    /// Full-length runs of the winner and the baseline.
    pub runs: usize,
    pub budget: Duration,
    /// The length of a confirmation run (at least one writeback cycle past the first flush);
    /// None: past the baseline's first flush of expired data by [`PAST_FIRST_FLUSH_S`].
    pub confirm: Option<Duration>,
    /// Predict the fix from the baseline's stalls and prove it before trying the rest.
    pub predict: bool,
    /// Whether system settings may be tried (root).
    pub system: bool,
    /// The queue and mount of the directory, when their knobs may be tried.
    pub target: Option<QueueMount>,
    /// The journal temporary settings go through.
    pub journal: Journal,
    /// `--max-loss`: the most recording a power cut may cost (record workloads).
    pub max_loss: Option<Duration>,
    /// `--objective wear`: rank what keeps up by the device's bytes per hour of recording.
    pub wear: bool,
    /// `--power-cut`: the emulated card under the directory, to cut the power of the
    /// winner's and the baseline's recordings once each and count what they lost.
    pub power_switch: Option<Arc<dyn sinkrate_platform::power::PowerSwitch>>,
}

/// What the search tells its caller as it goes (a progress bar, or a line each).
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Plan {
        candidates: usize,
        estimate_s: f64,
        budget_s: f64,
    },
    Run {
        label: String,
        /// 1-based, among this candidate's runs.
        run: usize,
        seconds: f64,
        confirmation: bool,
    },
    Ran {
        label: String,
        trial: Box<Trial>,
    },
}

/// The power cuts that prove a `--max-loss` winner (and the baseline beside it): each
/// candidate's recording of a screening run's length, its power cut a quarter before the
/// end (past the first flush of expired data, where buffered data starts to leave), and
/// what the card held after.
struct PowerCuts<'a> {
    cfg: &'a SearchConfig,
    base: &'a sinkrate_record::session::Session,
    switch: &'a Arc<dyn sinkrate_platform::power::PowerSwitch>,
    seconds: f64,
    stop: &'a Arc<AtomicBool>,
}

impl PowerCuts<'_> {
    /// Cuts each of `proved` in turn, adding its proof (or why it could not run) to
    /// `power_cuts` and `notes`. True when the search was stopped meanwhile.
    fn prove(
        &self,
        proved: &[&Scored],
        power_cuts: &mut Vec<PowerCutProof>,
        notes: &mut Vec<String>,
        progress: &mut dyn FnMut(&Event),
    ) -> Result<bool, SearchError> {
        let seconds = self.seconds;
        let cut_at = Duration::from_secs_f64(seconds * 0.75);
        for s in proved {
            let c = &s.candidate;
            let _settings = settings_for_the_run(&self.cfg.journal, c)?;
            progress(&Event::Run {
                label: format!("{} (power cut at {:.1} s)", c.label, cut_at.as_secs_f64()),
                run: 1,
                seconds,
                confirmation: false,
            });
            let run = crate::workload::power_cut_run(
                self.base,
                c,
                Duration::from_secs_f64(seconds),
                cut_at,
                self.switch,
                self.stop,
            );
            let (trial, cut) = match run {
                Ok(Some(done)) => done,
                Ok(None) => return Ok(true),
                // The ranking stands; the proof that could not run is named.
                Err(e) => {
                    notes.push(format!("{}: the power cut could not run: {e}", c.label));
                    continue;
                }
            };
            power_cuts.push(proof_of(&c.label, &trial, &cut));
            if !cut.mounted_after {
                notes.push(format!(
                    "{}: the card did not mount after the power came back: {}",
                    c.label,
                    cut.mount_notes.join("; ")
                ));
            }
        }
        Ok(false)
    }
}

/// A candidate's power cut in the search's terms: the most recording any stream lost, and
/// the frames over all streams.
fn proof_of(
    label: &str,
    trial: &Trial,
    cut: &sinkrate_model::record::PowerCutReport,
) -> PowerCutProof {
    let sum = |f: fn(&sinkrate_model::record::StreamSurvival) -> u64| {
        cut.streams.iter().map(f).sum::<u64>()
    };
    PowerCutProof {
        label: label.to_string(),
        at_s: cut.at_s,
        recording_lost_s: cut
            .streams
            .iter()
            .map(|st| st.recording_lost_s)
            .fold(0.0, f64::max),
        frames_believed_written: sum(|st| st.frames_believed_written),
        frames_acknowledged_durable: sum(|st| st.frames_acknowledged_durable),
        frames_survived: sum(|st| st.frames_survived),
        frames_durable_lost: sum(|st| st.frames_durable_lost),
        unacknowledged_worst_s: trial.unacknowledged_worst_s,
        frames_dropped: trial.frames_dropped,
    }
}

/// What a search will try, before it runs anything: the lengths of its runs, the workload's
/// rate, the notes on what is not tried and why, and the candidates (the baseline first),
/// less those already in force or, with `--max-loss`, unbounded.
struct Plan {
    len: Lengths,
    rate: f64,
    notes: Vec<String>,
    candidates: Vec<Candidate>,
}

fn plan(
    cfg: &SearchConfig,
    base_session: Option<&sinkrate_record::session::Session>,
    cadence: Option<Duration>,
) -> Plan {
    let vm = sinkrate_sampler::live::read_vm_settings();
    let expire_cs = vm.dirty_expire_centisecs.unwrap_or(3000);
    let every_cs = vm.dirty_writeback_centisecs.unwrap_or(500);
    // Past the first flush of expired data as the machine is set, where the stalls are.
    let default_confirm_s = cfg.confirm.map_or(
        ((expire_cs + every_cs) as f64 / 100.0 + PAST_FIRST_FLUSH_S).max(MIN_SCREEN_S),
        |d| d.as_secs_f64(),
    );
    let fixed_s = match &cfg.workload {
        Workload::Job { jobs, .. } => Some(
            jobs.jobs
                .iter()
                .filter_map(|j| j.options.runtime)
                .max()
                .map(|d| d.as_secs_f64())
                .unwrap_or(default_confirm_s),
        ),
        _ => None,
    };
    let len = Lengths {
        expire_cs,
        every_cs,
        confirm_s: default_confirm_s,
        fixed_s,
    };
    let mut notes = Vec::new();
    let buffered = match &cfg.workload {
        Workload::Record(s) => s.record.write_mode == sinkrate_model::record::WriteMode::Buffered,
        Workload::Job { jobs, .. } => jobs.jobs.iter().any(|j| !j.options.direct),
        Workload::Exec { .. } => true,
    };
    let rate = match &cfg.workload {
        Workload::Record(s) => s.record.requested_bytes_per_s(),
        Workload::Job { jobs, .. } => jobs.jobs.iter().map(|j| j.options.rate[1] as f64).sum(),
        Workload::Exec { .. } => 0.0,
    };
    if !cfg.system {
        notes.push(
            "not root: the writeback sysctls (dirty_expire/writeback_centisecs, dirty_bytes), the queue (scheduler, max_sectors_kb) and the mount (noatime, commit=) were not tried; they need root"
                .to_string(),
        );
    }
    if !matches!(cfg.workload, Workload::Record(_)) {
        notes.push(
            "the recorder's own knobs (write mode, buffers, fdatasync) are the application's: only system settings were tried".into(),
        );
    }
    if let Some(f) = fixed_s {
        let cycle = (len.expire_cs + len.every_cs) as f64 / 100.0;
        if f < cycle + PAST_FIRST_FLUSH_S {
            notes.push(format!(
                "the job runs {f:.0} s, less than the first flush of expired data ({cycle:.0} s): the stalls there are not seen; give it runtime= and time_based"
            ));
        }
    }
    if cfg.system && buffered && cfg.target.as_ref().is_some_and(|t| t.fs_type == "ext4") {
        notes.push(
            "data=writeback was not tried: it cannot change on a remount (mount the card with it to try it, and it loses the order of data and metadata on a power cut)".into(),
        );
    }
    let all = candidates(&Knobs {
        system: cfg.system,
        // A replay's calls are the captured recorder's: its own knobs are not the trace's
        // to change, only the system's settings are searched.
        recorder: match &cfg.workload {
            Workload::Record(s) if s.record.replay.is_none() => Some(s),
            _ => None,
        },
        buffered,
        rate,
        target: cfg.target.as_ref(),
        max_loss: cfg.max_loss,
        cadence,
    });
    // A candidate whose every setting is already in force is the baseline again.
    let host = cfg.journal.host();
    let in_force = |c: &Candidate| {
        c.recorder.is_empty()
            && c.system
                .iter()
                .all(|a| host.read(&a.setting).is_ok_and(|now| now.trim() == a.value))
    };
    let mut kept = Vec::with_capacity(all.len());
    let mut unbounded = Vec::new();
    for (k, c) in all.into_iter().enumerate() {
        if k > 0 && in_force(&c) {
            notes.push(format!(
                "{}: already in force, the same as the baseline",
                c.label
            ));
        } else if k > 0
            && cfg.max_loss.is_some()
            && base_session.is_some_and(|b| !crate::candidates::acknowledges(&c, b))
        {
            unbounded.push(c.label);
        } else {
            kept.push(c);
        }
    }
    let all = kept;
    if !unbounded.is_empty() {
        notes.push(format!(
            "not tried, as nothing in them bounds what a power cut loses (no fdatasync, no O_DSYNC) and --max-loss asks for a bound: {}",
            unbounded.join("; ")
        ));
    }
    Plan {
        len,
        rate,
        notes,
        candidates: all,
    }
}

/// A run of `secs` with the time around it (settings, start, stop).
fn run_s(secs: f64) -> f64 {
    secs + OVERHEAD_PER_RUN_S
}

/// How many of `all` fit `budget_s` (never fewer than the baseline and one candidate), and
/// the seconds they are expected to take. The baseline runs at full length from the start
/// (every candidate is compared with it); the others are screened once, and the leader then
/// confirmed in full-length runs. Those after the first `planned` are screened only if time
/// is left once the leader is confirmed.
fn fit_budget(all: &[Candidate], len: &Lengths, runs: usize, budget_s: f64) -> (usize, f64) {
    let screening = |list: &[Candidate]| -> f64 {
        run_s(len.confirm(&list[0])) + list[1..].iter().map(|c| run_s(len.screen(c))).sum::<f64>()
    };
    let confirming = |list: &[Candidate]| -> f64 {
        let longest = list.iter().map(|c| len.confirm(c)).fold(0.0, f64::max);
        (runs - 1) as f64 * run_s(len.confirm(&list[0])) + runs as f64 * run_s(longest)
    };
    let mut planned = all.len();
    while planned > 2 && screening(&all[..planned]) + confirming(&all[..planned]) > budget_s {
        planned -= 1;
    }
    let chosen = &all[..planned];
    (planned, screening(chosen) + confirming(chosen))
}

/// How long each kind of run of a candidate lasts.
struct Lengths {
    expire_cs: u64,
    every_cs: u64,
    confirm_s: f64,
    /// A bench job runs as written: every run is as long as its runtime.
    fixed_s: Option<f64>,
}

impl Lengths {
    fn screen(&self, c: &Candidate) -> f64 {
        self.fixed_s.unwrap_or_else(|| {
            (c.writeback_cycle_s(self.expire_cs, self.every_cs) + PAST_FIRST_FLUSH_S)
                .max(MIN_SCREEN_S)
                .min(self.confirm(c))
        })
    }
    fn confirm(&self, c: &Candidate) -> f64 {
        self.fixed_s.unwrap_or_else(|| {
            self.confirm_s
                .max(c.writeback_cycle_s(self.expire_cs, self.every_cs) + PAST_FIRST_FLUSH_S)
        })
    }
}

/// The candidate's system settings for one run, put back when the guard is dropped.
fn settings_for_the_run(
    journal: &Journal,
    c: &Candidate,
) -> Result<Option<Temporary>, SearchError> {
    if c.system.is_empty() {
        return Ok(None);
    }
    Temporary::apply(journal, &c.system)
        .map(Some)
        .map_err(|e| SearchError::Settings(e.to_string()))
}

fn workload_name(w: &Workload) -> &'static str {
    match w {
        Workload::Record(_) => "record",
        Workload::Job { .. } => "job",
        Workload::Exec { .. } => "exec",
    }
}

/// Runs the search. `progress` hears of the plan and of each run. A refusal of the
/// workload (no space, a bad directory) comes before any run.
pub fn search(
    cfg: &SearchConfig,
    stop: Arc<AtomicBool>,
    progress: &mut dyn FnMut(&Event),
) -> Result<SearchReport, SearchError> {
    let (label, dir) = workload_label(cfg)?;
    let base_session = match &cfg.workload {
        Workload::Record(s) => Some(s.as_ref()),
        _ => None,
    };
    let started = Instant::now();
    let Plan {
        len,
        rate,
        mut notes,
        candidates: all,
    } = plan(cfg, base_session, None);
    let objective = sinkrate_model::search::Objective {
        runs: cfg.runs.max(1),
        max_loss_s: cfg.max_loss.map(|d| d.as_secs_f64()),
        wear: cfg.wear,
    };
    // The power cuts at the end (the winner's and the baseline's) come out of the budget.
    let proof_s = if cfg.power_switch.is_some() {
        2.0 * (len.screen(&all[0]) + OVERHEAD_PER_RUN_S + CUT_RESTORE_S)
    } else {
        0.0
    };
    let budget_s = (cfg.budget.as_secs_f64() - proof_s).max(0.0);
    let runs = cfg.runs.max(1);
    let (planned, estimate_s) = fit_budget(&all, &len, runs, budget_s);
    if estimate_s > budget_s {
        notes.push(format!(
            "--budget {:.0} s is shorter than the baseline and one candidate with their confirmation runs{} ({:.0} s)",
            cfg.budget.as_secs_f64(),
            if proof_s > 0.0 { " and the power cuts" } else { "" },
            estimate_s + proof_s
        ));
    }
    progress(&Event::Plan {
        candidates: planned,
        estimate_s: estimate_s + proof_s,
        budget_s: cfg.budget.as_secs_f64(),
    });
    let mut runner = Runner {
        cfg,
        trials: vec![Vec::new(); all.len()],
        all,
        len: &len,
        stop: &stop,
        progress,
        interrupted: false,
        failed: None,
    };
    runner.screen(0..1)?;
    // The baseline measured the device: a `--max-loss` sync cadence is sized from it, and
    // the candidates that sync are the family at that cadence.
    let mut planned = planned;
    if let Some(sized) = runner.sized_cadence(rate) {
        let resized = plan(cfg, base_session, Some(sized.cadence)).candidates;
        notes.push(sized.note);
        runner.trials.resize(resized.len(), Vec::new());
        runner.all = resized;
        planned = fit_budget(&runner.all, &len, runs, budget_s).0;
    }
    let fits = |seconds: f64| started.elapsed().as_secs_f64() + seconds <= budget_s;
    let prediction = cfg
        .predict
        .then(|| runner.predict_and_prove(base_session, runs, &objective, &mut planned, &fits))
        .transpose()?;
    let proven = prediction.as_ref().is_some_and(|p| p.proven);
    if !proven {
        runner.screen(1..planned)?;
    }
    let (next_extra, left_unconfirmed) = if proven {
        let others = runner.all.len().saturating_sub(2);
        if others > 0 {
            notes.push(format!(
                "{others} other candidate(s) not run: the predicted fix was proven (--no-predict tries them all)"
            ));
        }
        (runner.all.len(), false)
    } else {
        runner.confirm(planned, runs, &objective, fits)?
    };
    let Runner {
        all,
        trials,
        mut interrupted,
        failed,
        progress,
        ..
    } = runner;
    for c in &all[next_extra..] {
        notes.push(format!("not tried within the budget: {}", c.label));
    }
    if left_unconfirmed {
        notes.push(format!(
            "the budget ended before the leader and the baseline had {runs} full-length runs each; a larger --budget confirms them"
        ));
    }
    let mut scored: Vec<Scored> = all
        .iter()
        .zip(trials)
        .filter(|(_, t)| !t.is_empty())
        .map(|(c, t)| {
            let short = confirmations(&t) < runs;
            score(c.clone(), t, short)
        })
        .collect();
    scored.sort_by(|a, b| better(a, b, &objective));
    let baseline = scored
        .iter()
        .position(|s| s.candidate.system.is_empty() && s.candidate.recorder.is_empty());
    let comparison = baseline
        .filter(|_| failed.is_none())
        .and_then(|b| compare(&scored[b], scored.first()?));
    let mut power_cuts = Vec::new();
    if let (Some(switch), Some(base), Some(b), None, false) = (
        &cfg.power_switch,
        base_session,
        baseline,
        &failed,
        interrupted,
    ) {
        let mut proved = vec![&scored[0]];
        if b != 0 {
            proved.push(&scored[b]);
        }
        let cuts = PowerCuts {
            cfg,
            base,
            switch,
            seconds: len.screen(&all[0]),
            stop: &stop,
        };
        interrupted = cuts.prove(&proved, &mut power_cuts, &mut notes, progress)?;
    }
    let mut report = SearchReport {
        label,
        dir: dir.display().to_string(),
        workload: workload_name(&cfg.workload).into(),
        runs_per_candidate: runs,
        rate_bytes_per_s: rate,
        run_duration_s: len.confirm(&all[0]),
        screen_duration_s: len.screen(&all[0]),
        budget_s: cfg.budget.as_secs_f64(),
        estimate_s: estimate_s + proof_s,
        spent_s: started.elapsed().as_secs_f64(),
        ranked: scored,
        baseline,
        comparison,
        notes,
        interrupted,
        failed,
        max_loss_s: objective.max_loss_s,
        power_cuts,
        max_loss_met: None,
        rank_by: if objective.wear { "wear" } else { "latency" }.into(),
        device_bytes_written: None,
        applied: Vec::new(),
        prediction,
    };
    report.max_loss_met = report.loss_bound_met();
    report.device_bytes_written = report.runs_device_bytes();
    Ok(report)
}

/// The workload's label and directory; `--max-loss` and `--power-cut` refused where the
/// recording is not in this process (its syncs would not be seen).
fn workload_label(cfg: &SearchConfig) -> Result<(String, std::path::PathBuf), SearchError> {
    let (label, dir) = match &cfg.workload {
        Workload::Record(s) => {
            sinkrate_record::session::preflight(s)?;
            return Ok((s.label.clone(), s.record.dir.clone()));
        }
        Workload::Job { dir, file, .. } => (format!("job file {}", file.display()), dir.clone()),
        Workload::Exec { argv, dir, .. } => (argv.join(" "), dir.clone()),
    };
    for (given, flag) in [
        (cfg.max_loss.is_some(), "--max-loss"),
        (cfg.power_switch.is_some(), "--power-cut"),
        (cfg.wear, "--objective wear"),
    ] {
        if given {
            return Err(SearchError::Workload(format!(
                "{flag} needs the recording in process (record flags after --): what a job or your own recorder asks of the device (its syncs, its bytes per hour of recording) is not seen"
            )));
        }
    }
    Ok((label, dir))
}

/// How many of a candidate's runs were full-length.
fn confirmations(t: &[Trial]) -> usize {
    t.iter().filter(|t| t.confirmation).count()
}

/// Why a failed run failed.
fn failure(t: &Trial) -> Option<String> {
    (t.verdict == Verdict::Failed).then(|| {
        t.error
            .clone()
            .unwrap_or_else(|| "the workload failed".into())
    })
}

/// Runs the candidates' trials: the screening pass, then full-length runs while the budget
/// lasts. Stops at the first interruption or when the baseline fails.
struct Runner<'a, 'p> {
    cfg: &'a SearchConfig,
    all: Vec<Candidate>,
    len: &'a Lengths,
    stop: &'a Arc<AtomicBool>,
    progress: &'p mut dyn FnMut(&Event),
    /// Each candidate's runs so far, in the order of `all`.
    trials: Vec<Vec<Trial>>,
    interrupted: bool,
    failed: Option<String>,
}

/// A `--max-loss` cadence sized from the baseline's run, and the note that says from what.
struct SizedCadence {
    cadence: Duration,
    note: String,
}

impl Runner<'_, '_> {
    /// With `--max-loss` and a recording in process: the sync cadence sized from the
    /// device's rate while busy in the baseline's run against the stream's `rate`. None
    /// without a bound; with a note and the first guess kept when the run did not measure
    /// the device (no diskstats, too little written).
    fn sized_cadence(&self, rate: f64) -> Option<SizedCadence> {
        let bound = self.cfg.max_loss?;
        let Workload::Record(s) = &self.cfg.workload else {
            return None;
        };
        if s.record.replay.is_some() {
            return None;
        }
        let guess = crate::candidates::cadence_for(bound);
        let measured = self.trials[0]
            .first()
            .filter(|t| t.verdict != Verdict::Failed)
            .and_then(|t| t.device_rate_while_busy_bytes_per_s)
            .filter(|d| *d > 0.0);
        let Some(device) = measured else {
            return Some(SizedCadence {
                cadence: guess,
                note: format!(
                    "fdatasync every {} s (half the {} s bound): the baseline's run did not measure the device's rate, which would size it",
                    guess.as_secs_f64(),
                    bound.as_secs_f64()
                ),
            });
        };
        let cadence = crate::candidates::sized_cadence(bound, rate, device);
        let sync_s = cadence.as_secs_f64() * rate / device;
        Some(SizedCadence {
            cadence,
            note: format!(
                "fdatasync every {} s, sized from the baseline's run: the device wrote {} while busy against the recording's {}, so a sync of {} s of recording takes about {:.2} s, and the two fill at most half the {} s bound (the rest for a card's cache and other writers)",
                cadence.as_secs_f64(),
                sinkrate_units::product::mb_per_s(device),
                sinkrate_units::product::mb_per_s(rate),
                cadence.as_secs_f64(),
                sync_s,
                bound.as_secs_f64()
            ),
        })
    }

    /// One run of candidate `k`, its settings applied for the run and put back after.
    /// `Ok(false)` when it was interrupted.
    fn run_one(&mut self, k: usize, confirmation: bool) -> Result<bool, SearchError> {
        let c = &self.all[k];
        let seconds = if confirmation {
            self.len.confirm(c)
        } else {
            self.len.screen(c)
        };
        // A run of any candidate but the baseline is given up on once it drops more frames
        // than the best candidate's worst run so far: it is already clearly worse, and a
        // leader that fails its full-length run frees the time for the next.
        let bar: Option<u64> = (k != 0)
            .then(|| {
                self.trials
                    .iter()
                    .enumerate()
                    .filter(|(j, t)| *j != k && !t.is_empty() && t.iter().all(|t| !t.stopped_early))
                    .filter(|(_, t)| t.iter().all(|t| t.verdict != Verdict::Failed))
                    .map(|(_, t)| t.iter().map(|t| t.frames_dropped).max().unwrap_or(0))
                    .min()
            })
            .flatten();
        let _settings = settings_for_the_run(&self.cfg.journal, c)?;
        (self.progress)(&Event::Run {
            label: c.label.clone(),
            run: self.trials[k].len() + 1,
            seconds,
            confirmation,
        });
        let mut give_up = |dropped: u64| bar.is_some_and(|bar| dropped > bar);
        let Some(mut trial) = crate::workload::run(
            &self.cfg.workload,
            c,
            Duration::from_secs_f64(seconds),
            self.stop,
            &mut give_up,
        )?
        else {
            return Ok(false);
        };
        // A run as long as a confirmation run is one, whatever it was started as.
        trial.confirmation =
            !trial.stopped_early && (confirmation || seconds >= self.len.confirm(c) - 1e-9);
        (self.progress)(&Event::Ran {
            label: c.label.clone(),
            trial: Box::new(trial.clone()),
        });
        self.trials[k].push(trial);
        Ok(true)
    }

    /// The screening pass over `which` of the candidates: the baseline's (0) full-length
    /// run, then one screening run of each other. Fails the search when the baseline (or
    /// every candidate) fails.
    fn screen(&mut self, which: std::ops::Range<usize>) -> Result<(), SearchError> {
        if self.interrupted || self.failed.is_some() {
            return Ok(());
        }
        for k in which.clone() {
            // (a predicted candidate has had its runs already)
            if k > 0 && !self.trials[k].is_empty() {
                continue;
            }
            if !self.run_one(k, k == 0)? {
                self.interrupted = true;
                break;
            }
            // The baseline is what every candidate is compared with: if it fails, stop.
            if let Some(why) = self.trials[0].first().and_then(failure).filter(|_| k == 0) {
                self.failed = Some(format!(
                    "the workload as configured failed, so nothing can be compared: {why}"
                ));
                break;
            }
        }
        let every_run_failed = self
            .trials
            .iter()
            .flatten()
            .all(|t| t.verdict == Verdict::Failed);
        // (judged once every planned candidate has run: the baseline is run alone first)
        if which.start > 0 && self.failed.is_none() && !self.interrupted && every_run_failed {
            let why = self
                .trials
                .iter()
                .flatten()
                .find_map(failure)
                .unwrap_or_default();
            self.failed = Some(format!("every candidate failed: {why}"));
        }
        Ok(())
    }

    /// The fix the baseline's run predicts, run full-length against the baseline in turn
    /// until each has `runs` runs (or the prediction drops a frame): proven when every run
    /// of it kept up and the baseline's dropped frames. A predicted candidate not among the
    /// planned ones joins them second (`planned` grows by one).
    fn predict_and_prove(
        &mut self,
        base_session: Option<&sinkrate_record::session::Session>,
        runs: usize,
        objective: &sinkrate_model::search::Objective,
        planned: &mut usize,
        fits: &dyn Fn(f64) -> bool,
    ) -> Result<Prediction, SearchError> {
        let none = |because: String| Prediction {
            label: None,
            because,
            proven: false,
            proof: None,
        };
        if self.interrupted || self.failed.is_some() {
            return Ok(none("the baseline's run did not complete".into()));
        }
        if objective.max_loss_s.is_some() {
            return Ok(none(
                "--max-loss asks for a bound on what a power cut loses, which a fix for the stalls does not size: the candidates were searched as without one".into(),
            ));
        }
        if objective.wear {
            return Ok(none(
                "--objective wear ranks by the device's bytes, which the stalls do not predict: the candidates were searched as without one".into(),
            ));
        }
        let Some(baseline) = self.trials[0].first() else {
            return Ok(none("the baseline has no run".into()));
        };
        let host = self.cfg.journal.host();
        let bdi_limits = baseline
            .diagnosis
            .as_ref()
            .and_then(|k| k.typed())
            .and_then(|d| d.device_limit.as_ref())
            .is_some_and(|(bdi, _)| {
                ["strict_limit", "max_bytes"].iter().all(|attr| {
                    host.has(&sinkrate_model::settings::Setting::Bdi {
                        bdi: bdi.clone(),
                        attr: (*attr).into(),
                    })
                })
            });
        let allowed = crate::predict::Allowed {
            system: self.cfg.system,
            recorder: base_session.is_some_and(|s| s.record.replay.is_none()),
            bdi_limits,
            mount: self
                .cfg
                .target
                .as_ref()
                .filter(|_| self.cfg.system)
                .map(|t| (t.mount_point.clone(), t.fs_type.clone())),
        };
        let predicted = match crate::predict::predict(baseline, &allowed) {
            Ok(p) => p,
            Err(why) => {
                return Ok(none(format!(
                    "{why}; the candidates were searched as without one"
                )))
            }
        };
        let k = match self.all.iter().position(|c| {
            c.system == predicted.candidate.system && c.recorder == predicted.candidate.recorder
        }) {
            Some(k) => k,
            None => {
                let at = 1.min(self.all.len());
                self.all.insert(at, predicted.candidate.clone());
                self.trials.insert(at, Vec::new());
                *planned += 1;
                at
            }
        };
        let disproved = |t: &[Trial]| {
            t.iter()
                .any(|t| t.frames_dropped > 0 || t.verdict != Verdict::KeepsUp || t.stopped_early)
        };
        while !self.interrupted && self.failed.is_none() && !disproved(&self.trials[k]) {
            let (mine, base) = (
                confirmations(&self.trials[k]),
                confirmations(&self.trials[0]),
            );
            if mine >= runs && base >= runs {
                break;
            }
            // In turn, the prediction first: both sides meet the same drift of the card.
            let next = if mine <= base && mine < runs { k } else { 0 };
            if !fits(run_s(self.len.confirm(&self.all[next]))) {
                break;
            }
            self.interrupted = !self.run_one(next, true)?;
        }
        // (an equal candidate already planned keeps its own label)
        let label = self.all[k].label.clone();
        let sum = |t: &[Trial], f: fn(&Trial) -> u64| -> u64 {
            t.iter().filter(|t| t.confirmation).map(f).sum()
        };
        let (mine, base) = (&self.trials[k], &self.trials[0]);
        let proven = !disproved(mine)
            && confirmations(mine) >= runs
            && confirmations(base) >= runs
            && sum(base, |t| t.frames_dropped) > 0;
        let proof = format!(
            "{label}: {} of {} frames dropped in {} full-length run(s), against the baseline's {} of {} in {}{}",
            sum(mine, |t| t.frames_dropped),
            sum(mine, |t| t.frames_offered),
            confirmations(mine),
            sum(base, |t| t.frames_dropped),
            sum(base, |t| t.frames_offered),
            confirmations(base),
            if proven {
                ""
            } else if disproved(mine) {
                ": the prediction did not hold, so the search went on to the other candidates"
            } else {
                ": the budget or an interruption left too few runs to prove it, so the search went on to the other candidates"
            }
        );
        Ok(Prediction {
            label: Some(label),
            because: predicted.because,
            proven,
            proof: Some(proof),
        })
    }

    /// Full-length runs while `fits` says the budget has time: the leader and the
    /// baseline, candidates left out of screening, then the runners-up. Returns the first
    /// candidate never tried and whether the leader and baseline were left unconfirmed.
    fn confirm(
        &mut self,
        planned: usize,
        runs: usize,
        objective: &sinkrate_model::search::Objective,
        fits: impl Fn(f64) -> bool,
    ) -> Result<(usize, bool), SearchError> {
        let mut next_extra = planned;
        while !self.interrupted && self.failed.is_none() {
            let ranked = rank(&self.all, &self.trials, objective);
            let trials = &self.trials;
            // A leader given up on during screening is not confirmed: it was clearly worse.
            let leader = ranked
                .iter()
                .copied()
                .find(|k| trials[*k].iter().all(|t| !t.stopped_early))
                .unwrap_or(0);
            // The leader and the baseline it is compared with, in turn (the one with fewer
            // full-length runs; the leader on a tie), so a leader that changes does not
            // starve the baseline of its runs.
            let next = [leader, 0]
                .into_iter()
                .filter(|k| confirmations(&trials[*k]) < runs)
                .min_by_key(|k| confirmations(&trials[*k]));
            if let Some(k) = next {
                if !fits(run_s(self.len.confirm(&self.all[k]))) {
                    return Ok((next_extra, true));
                }
                self.interrupted = !self.run_one(k, true)?;
                continue;
            }
            // Both confirmed: a candidate left out is screened if there is time to confirm
            // it too, should it lead.
            if let Some(extra) = self.all.get(next_extra) {
                let len = self.len;
                if fits(run_s(len.screen(extra)) + runs as f64 * run_s(len.confirm(extra))) {
                    self.interrupted = !self.run_one(next_extra, false)?;
                    next_extra += 1;
                    continue;
                }
            }
            // Then the runners-up that were not clearly worse, best first, get their
            // full-length runs while time is left.
            let runner_up = ranked.iter().copied().find(|k| {
                *k != leader
                    && confirmations(&trials[*k]) < runs
                    && trials[*k]
                        .iter()
                        .all(|t| !t.stopped_early && t.verdict != Verdict::Failed)
            });
            match runner_up {
                Some(k) if fits(run_s(self.len.confirm(&self.all[k]))) => {
                    self.interrupted = !self.run_one(k, true)?;
                }
                _ => break,
            }
        }
        Ok((next_extra, false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scored(label: &str, worst: Option<f64>) -> Scored {
        let trial = Trial {
            verdict: Verdict::KeepsUp,
            frames_offered: 600,
            frames_dropped: 0,
            worst_write_ms: Some(2.0),
            p99_write_ms: Some(1.0),
            p99_lateness_ms: Some(0.0),
            cpu_s: 0.1,
            peak_dirty_bytes: None,
            unacknowledged_worst_s: worst,
            throttled_s: 0.0,
            duration_s: 20.0,
            confirmation: true,
            stopped_early: false,
            error: None,
            device_bytes_per_hour: None,
            device_bytes_written: None,
            device_rate_while_busy_bytes_per_s: None,
            diagnosis: None,
        };
        let candidate = Candidate {
            label: label.into(),
            system: Vec::new(),
            recorder: Vec::new(),
        };
        score(candidate, vec![trial], false)
    }

    fn cut(label: &str, lost: f64, durable_lost: u64) -> PowerCutProof {
        PowerCutProof {
            label: label.into(),
            at_s: 15.0,
            recording_lost_s: lost,
            frames_believed_written: 450,
            frames_acknowledged_durable: 440,
            frames_survived: 445,
            frames_durable_lost: durable_lost,
            unacknowledged_worst_s: Some(0.5),
            frames_dropped: 0,
        }
    }

    #[test]
    fn a_bound_is_met_only_in_the_runs_and_on_the_card() {
        let mut r = SearchReport {
            runs_per_candidate: 1,
            ranked: vec![scored("sync", Some(0.6))],
            ..SearchReport::default()
        };
        assert_eq!(r.loss_bound_met(), None, "no bound, no verdict");
        r.max_loss_s = Some(1.0);
        assert_eq!(r.loss_bound_met(), Some(true));
        r.power_cuts = vec![cut("sync", 0.4, 0)];
        assert_eq!(r.loss_bound_met(), Some(true));
        // The card lost more than the runs promised, or broke a promise.
        r.power_cuts = vec![cut("sync", 1.3, 0)];
        assert_eq!(r.loss_bound_met(), Some(false));
        r.power_cuts = vec![cut("sync", 0.4, 2)];
        assert_eq!(r.loss_bound_met(), Some(false));
        // The best candidate was over the bound, or never asked the device.
        r.power_cuts.clear();
        r.ranked = vec![scored("late", Some(1.4))];
        assert_eq!(r.loss_bound_met(), Some(false));
        r.ranked = vec![scored("buffered", None)];
        assert_eq!(r.loss_bound_met(), Some(false));
    }
}
