//! A bar over a whole run in tenths of a second, moved by the clock from its own thread
//! (a phase can last minutes without an event); off a terminal with `--progress always`,
//! one line per step instead.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::values::When;

pub struct TimeBar {
    bar: ProgressBar,
    lines: bool,
    /// What each line starts with (`sinkrate check`).
    who: &'static str,
    total_s: f64,
    started: Instant,
    ticker: Option<JoinHandle<()>>,
    done: Arc<AtomicBool>,
}

impl TimeBar {
    pub fn new(who: &'static str, when: When, total_s: f64) -> TimeBar {
        let terminal = std::io::stderr().is_terminal();
        let show = when.wanted(terminal);
        let bar = ProgressBar::with_draw_target(
            Some((total_s * 10.0) as u64),
            if show && terminal {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        if let Ok(style) =
            ProgressStyle::with_template("{msg:<40} [{bar:30}] {elapsed_precise} ({eta} left)")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        let started = Instant::now();
        let done = Arc::new(AtomicBool::new(false));
        let ticker = {
            let (bar, done) = (bar.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    bar.set_position((started.elapsed().as_millis() / 100) as u64);
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        };
        TimeBar {
            bar,
            lines: show && !terminal,
            who,
            total_s,
            started,
            ticker: Some(ticker),
            done,
        }
    }

    /// A new step: the bar's message, or a line with the time left.
    pub fn step(&self, what: &str) {
        self.bar.set_message(what.to_string());
        if self.lines {
            let left = (self.total_s - self.started.elapsed().as_secs_f64()).max(0.0);
            eprintln!("{}: {what}, about {left:.0} s left", self.who);
        }
    }

    /// A line that stays above the bar (or is printed as it is, off a terminal).
    pub fn say(&self, line: &str) {
        if self.bar.is_hidden() {
            if self.lines {
                eprintln!("{}: {line}", self.who);
            }
        } else {
            self.bar.println(format!("{}: {line}", self.who));
        }
    }

    /// A new estimate of the whole run.
    pub fn set_total(&mut self, total_s: f64) {
        self.total_s = total_s;
        self.bar.set_length((total_s * 10.0) as u64);
    }
}

impl Drop for TimeBar {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        self.bar.finish_and_clear();
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
    }
}

/// `tune search`'s events: one line per event for the progress bar (or the lines off a terminal).
pub fn tune_search_event(bar: &mut TimeBar, e: &sinkrate_tune::search::Event) {
    match e {
        sinkrate_tune::search::Event::Plan {
            candidates,
            estimate_s,
            budget_s,
        } => {
            bar.set_total(estimate_s.min(*budget_s).max(1.0));
            bar.say(&format!(
                "{candidates} candidate(s), about {:.0} s ({budget_s:.0} s budget): a screening run each, then full-length runs of the leader and the baseline",
                estimate_s.min(*budget_s)
            ));
        }
        sinkrate_tune::search::Event::Run {
            label,
            run,
            seconds,
            confirmation,
        } => bar.step(&format!(
            "{label}: {} run {run}, {seconds:.0} s",
            if *confirmation {
                "full-length"
            } else {
                "screening"
            }
        )),
        sinkrate_tune::search::Event::Ran { label, trial } => {
            let dropped = if trial.frames_offered > 0 || trial.frames_dropped > 0 {
                format!("{} dropped", trial.frames_dropped)
            } else {
                trial.verdict.key().to_string()
            };
            let worst = trial
                .worst_write_ms
                .map(|w| format!(", worst write {w:.0} ms"))
                .unwrap_or_default();
            let early = if trial.stopped_early {
                " (stopped: already worse than the best)"
            } else {
                ""
            };
            bar.say(&format!(
                "{label}: {dropped}{worst} in {:.0} s{early}",
                trial.duration_s
            ));
        }
    }
}
