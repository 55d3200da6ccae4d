//! `sinkrate tune search`'s text: the ranked table, the winner against the baseline with
//! its interval, and the commands that apply the winner.

use anyhow::Result;
use sinkrate_model::Envelope;
use sinkrate_tune::search::SearchReport;

use super::Exporter;

pub struct SearchText;

impl Exporter<Envelope<SearchReport>> for SearchText {
    fn export(&self, run: &Envelope<SearchReport>) -> Result<Vec<u8>> {
        let r = &run.result;
        let mut s = format!(
            "sinkrate tune search  {}  ({}; {} run(s) per candidate, {:.0} s each past the first flush; {:.0} of {:.0} s budget used)\n\n",
            r.dir,
            r.label,
            r.runs_per_candidate,
            r.run_duration_s,
            r.spent_s,
            r.budget_s
        );
        s.push_str(&format!(
            "{:<4} {:<62} {:>8} {:>11} {:>10} {:>8} {:>10} {:>5}\n",
            "rank", "candidate", "drops", "worst write", "p99 late", "CPU s", "peak dirty", "runs"
        ));
        for (i, c) in r.ranked.iter().enumerate() {
            let runs = if c.screened_only {
                format!("{}*", c.trials.len())
            } else {
                c.trials.len().to_string()
            };
            s.push_str(&format!(
                "{:<4} {:<62} {:>8.1} {:>8.0} ms {:>7.1} ms {:>8.2} {:>7} MB {:>5}\n",
                i + 1,
                c.candidate.label,
                c.drops_per_run,
                c.worst_write_ms,
                c.p99_lateness_ms,
                c.cpu_s,
                c.peak_dirty_bytes
                    .map(|b| format!("{:.0}", b as f64 / 1e6))
                    .unwrap_or_else(|| "?".into()),
                runs
            ));
        }
        if r.ranked.iter().any(|c| c.screened_only) {
            s.push_str(
                "* screened only: fewer runs, as it was neither the leader nor the baseline\n",
            );
        }
        if let Some(why) = &r.failed {
            s.push_str(&format!("\nFAILED: {why}\n"));
        }
        if let Some(c) = &r.comparison {
            s.push_str(&format!("\n{}\n", c.text));
        }
        if let Some(w) = r.winner() {
            let settings = w.candidate.settings_args();
            if !settings.is_empty() {
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
