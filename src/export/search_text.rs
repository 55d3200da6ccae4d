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
            "sinkrate tune search  {}  ({}; screening runs of {:.0} s past the first flush, full-length runs of {:.0} s, {} per leader and baseline; {:.0} of {:.0} s budget used)\n\n",
            r.dir,
            r.label,
            r.screen_duration_s,
            r.run_duration_s,
            r.runs_per_candidate,
            r.spent_s,
            r.budget_s
        );
        s.push_str(&format!(
            "{:<4} {:<62} {:>8} {:>11} {:>10} {:>8} {:>16} {:>6}\n",
            "rank",
            "candidate",
            "drops",
            "worst write",
            "p99 late",
            "CPU s",
            "data at risk",
            "runs"
        ));
        let ms = |v: Option<f64>, width: usize| match v {
            Some(v) => format!("{:>w$.1} ms", v, w = width - 3),
            None => format!("{:>width$}", "-"),
        };
        let counted = r.workload != "job";
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
            let at_risk = match c.peak_dirty_bytes {
                Some(b) if r.rate_bytes_per_s > 0.0 => format!(
                    "{:.0} MB ({:.0} s)",
                    b as f64 / 1e6,
                    b as f64 / r.rate_bytes_per_s
                ),
                Some(b) => format!("{:.0} MB", b as f64 / 1e6),
                None => "?".into(),
            };
            s.push_str(&format!(
                "{:<4} {:<62} {:>8} {} {} {:>8.2} {:>16} {:>6}\n",
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
        s.push_str("runs: Ns = screening runs (past the first flush), +N = full-length runs; ! = stopped early, already worse than the best\n");
        if r.workload == "exec" {
            s.push_str("drops: as the recorder wrote them to --drops-file (0 without one); write latency is not seen from outside the recorder\n");
        }
        if let Some(why) = &r.failed {
            s.push_str(&format!("\nFAILED: {why}\n"));
        }
        if let Some(c) = &r.comparison {
            s.push_str(&format!("\n{}\n", c.text));
        }
        if let Some(w) = r.winner() {
            let mut settings = w.candidate.settings_args();
            if !settings.is_empty() {
                if settings
                    .iter()
                    .any(|a| a.starts_with("queue:") || a.starts_with("mount:"))
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
