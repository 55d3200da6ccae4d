//! `sinkrate tune search`'s text: the ranked table, the winner against the baseline with
//! its interval, and the commands that apply the winner.

use anyhow::Result;
use sinkrate_model::search::SearchReport;
use sinkrate_model::Envelope;

use super::Exporter;

pub struct SearchText;

impl Exporter<Envelope<SearchReport>> for SearchText {
    fn export(&self, run: &Envelope<SearchReport>) -> Result<Vec<u8>> {
        let r = &run.result;
        let mut s = format!(
            "sinkrate tune search  {}  ({}; screening runs of {:.0} s past the first flush, full-length runs of {:.0} s, {} per leader and baseline; {:.0} of {:.0} s budget used)\n\n",
            r.dir,
            r.label,
            r.screen_duration_s,
            r.run_duration_s,
            r.runs_per_candidate,
            r.spent_s,
            r.budget_s
        );
        ranked_table(r, &mut s);
        s.push_str("runs: Ns = screening runs (past the first flush), +N = full-length runs; ! = stopped early, already worse than the best\n");
        s.push_str("data at risk: acked = the longest stretch of recording a completed fdatasync or O_DSYNC write had not yet acknowledged (a power cut at the worst instant loses that much); unsynced = the recorder never asked, and the page cache's peak dirty+writeback is what it held\n");
        if let Some(bound) = r.max_loss_s {
            s.push_str(&format!(
                "--max-loss {bound} s: candidates within it rank first; > = over it (or unbounded)\n"
            ));
        }
        power_cuts(r, &mut s);
        max_loss(r, &mut s);
        if r.workload == "exec" {
            s.push_str("drops: as the recorder wrote them to --drops-file (0 without one); write latency is not seen from outside the recorder\n");
        }
        if let Some(why) = &r.failed {
            s.push_str(&format!("\nFAILED: {why}\n"));
        }
        if let Some(p) = &r.prediction {
            prediction(p, &mut s);
        }
        if let Some(c) = &r.comparison {
            s.push_str(&format!("\n{}\n", c.text));
        }
        winner_commands(r, &mut s);
        if let Some(d) = r.device_bytes_written {
            s.push_str(&format!(
                "the search's runs wrote {} to the device (its own count)\n",
                sinkrate_units::product::bytes_si(d)
            ));
        }
        for n in &r.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        if r.interrupted {
            s.push_str(
                "interrupted: the table holds the runs that finished; every setting is back\n",
            );
        }
        Ok(s.into_bytes())
    }
}

/// The fix predicted from the baseline's stalls, what it rests on, and whether its runs
/// proved it.
fn prediction(p: &sinkrate_model::search::Prediction, s: &mut String) {
    match &p.label {
        Some(label) => {
            s.push_str(&format!(
                "\npredicted: {label}, {}\n  because {}\n",
                if p.proven { "PROVEN" } else { "not proven" },
                p.because
            ));
            if let Some(proof) = &p.proof {
                s.push_str(&format!("  runs: {proof}\n"));
            }
        }
        None => s.push_str(&format!("\nno fix predicted: {}\n", p.because)),
    }
}

/// One line per candidate, best first: drops, worst write, lateness, CPU, data at risk.
fn ranked_table(r: &SearchReport, s: &mut String) {
    let wear = r.rank_by == "wear";
    s.push_str(&format!(
        "{:<4} {:<62} {:>8} {:>11} {:>10} {:>8} {:>16} {:>6}{}\n",
        "rank",
        "candidate",
        "drops",
        "worst write",
        "p99 late",
        "CPU s",
        "data at risk",
        "runs",
        if wear { "  device per hour" } else { "" }
    ));
    let ms = |v: Option<f64>, width: usize| match v {
        Some(v) => format!("{:>w$.1} ms", v, w = width - 3),
        None => format!("{:>width$}", "-"),
    };
    let counted = r.workload != "job";
    let objective = r.objective();
    for (i, c) in r.ranked.iter().enumerate() {
        let full = c.trials.iter().filter(|t| t.confirmation).count();
        let screens = c.trials.len() - full;
        let mut runs = match (screens, full) {
            (0, n) => n.to_string(),
            (s, 0) => format!("{s}s"),
            (s, n) => format!("{s}s+{n}"),
        };
        if c.trials.iter().any(|t| t.stopped_early) {
            runs.push('!');
        }
        let drops = if counted {
            format!("{:.1}", c.drops_per_run)
        } else {
            "-".into()
        };
        let at_risk = match (c.unacknowledged_worst_s, c.peak_dirty_bytes) {
            (Some(w), _) => format!("{w:.2} s acked"),
            (None, Some(b)) => format!("{:.0} MB unsynced", b as f64 / 1e6),
            (None, None) => "?".into(),
        };
        let over = if objective.within_loss(c) { " " } else { ">" };
        let per_hour = match (wear, c.device_bytes_per_hour) {
            (false, _) => String::new(),
            (true, Some(b)) => format!("  {:>10.2} GB", b / 1e9),
            (true, None) => format!("  {:>13}", "-"),
        };
        s.push_str(&format!(
            "{:<4} {:<62} {:>8} {} {} {:>8.2} {:>16}{over}{:>6}{per_hour}\n",
            i + 1,
            c.candidate.label,
            drops,
            ms(c.worst_write_ms, 11),
            ms(c.p99_lateness_ms, 10),
            c.cpu_s,
            at_risk,
            runs
        ));
    }
}

/// What each candidate lost when the emulated card's power was cut.
fn power_cuts(r: &SearchReport, s: &mut String) {
    if let Some(first) = r.power_cuts.first() {
        s.push_str(&format!(
            "\npower cut at {:.1} s of {:.0} s (the emulated card's volatile cache lost; the card mounted again and each frame read back):\n",
            first.at_s, r.screen_duration_s
        ));
        for p in &r.power_cuts {
            s.push_str(&format!(
                "  {:<62} lost {:.2} s of recording; {} of {} frames believed written survived, {} acknowledged, {} acknowledged yet lost{}\n",
                p.label,
                p.recording_lost_s,
                p.frames_survived,
                p.frames_believed_written,
                p.frames_acknowledged_durable,
                p.frames_durable_lost,
                if p.frames_dropped > 0 {
                    format!("; {} dropped", p.frames_dropped)
                } else {
                    String::new()
                }
            ));
        }
    }
}

/// Whether `--max-loss` was met, by what the winner's runs and its power cut showed.
fn max_loss(r: &SearchReport, s: &mut String) {
    let objective = r.objective();
    if let (Some(bound), Some(met)) = (r.max_loss_s, r.max_loss_met) {
        let winner = r.winner();
        let ran = winner
            .and_then(|w| w.unacknowledged_worst_s)
            .map(|v| format!("{v:.2} s unacknowledged at worst in its runs"))
            .unwrap_or_else(|| "no bound in its runs".into());
        let cut = winner
            .and_then(|w| r.power_cuts.iter().find(|p| p.label == w.candidate.label))
            .map(|p| format!(", {:.2} s lost at the power cut", p.recording_lost_s))
            .unwrap_or_default();
        s.push_str(&format!(
            "\n--max-loss {bound} s: {} ({ran}{cut})\n",
            match (met, winner.is_some_and(|w| objective.within_loss(w))) {
                (true, _) => "MET by the winner",
                (false, true) =>
                    "NOT MET on the card: the winner lost more at the power cut than its runs promised (exit 1)",
                (false, false) =>
                    "NOT MET: no candidate kept every frame acknowledged within it (exit 1)",
            }
        ));
    }
}

/// The commands that apply the winner now and at boot, and its recorder changes.
fn winner_commands(r: &SearchReport, s: &mut String) {
    if let Some(w) = r.winner() {
        let mut settings = w.candidate.settings_args();
        if !settings.is_empty() {
            if w.candidate
                .system
                .iter()
                .any(|a| a.scope().is_some_and(|s| s.needs_target()))
            {
                settings.insert(0, format!("--path {}", r.dir));
            }
            s.push_str(&format!(
                "  now:        sinkrate tune apply {}\n  persistent: sinkrate tune apply --persist {}\n",
                settings.join(" "),
                settings.join(" ")
            ));
        }
        for change in &w.candidate.recorder {
            s.push_str(&format!("  in the recorder: {}\n", change.flag()));
        }
    }
}
