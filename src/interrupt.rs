//! Ctrl-C, SIGTERM and SIGHUP (an SSH session to a board dropping). The first asks the running command to stop cleanly and still
//! report; a second one, later than [`SAME_EVENT`], ends the process at once with 130,
//! after removing the files sinkrate made and putting back the settings it changed.
//!
//! Signals are read on a thread of their own (signal-hook's iterator), not in a handler,
//! because removing files and writing sysctls is not async-signal-safe.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Signals this close together are one event: `timeout -s INT` signals its child and then
/// the child's process group, and a terminal's Ctrl-C reaches every process of the group.
pub const SAME_EVENT: Duration = Duration::from_millis(1000);

/// Held by whichever ends the process first: the second interrupt's exit or `main`'s
/// return; the other then waits for the process to end. So a run interrupted twice exits
/// 130, never with the status of a watched command it killed on the way out (137), and a run
/// that is returning is not cut short halfway through its last writes.
static ENDING: Mutex<()> = Mutex::new(());

/// Called by `main` when the command has returned: from here on a second interrupt waits.
pub fn claim_exit() -> MutexGuard<'static, ()> {
    ENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// The flag the first signal sets. Installed once per process.
pub fn flag() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let mut signals =
        Signals::new([SIGINT, SIGTERM, SIGHUP]).context("installing the Ctrl-C handler")?;
    let flag = stop.clone();
    std::thread::Builder::new()
        .name("sinkrate-signals".into())
        .spawn(move || {
            let mut first: Option<Instant> = None;
            for _ in signals.forever() {
                match first {
                    None => {
                        first = Some(Instant::now());
                        flag.store(true, Ordering::SeqCst);
                    }
                    Some(at) if at.elapsed() < SAME_EVENT => {}
                    Some(_) => exit_now(),
                }
            }
        })
        .context("starting the Ctrl-C handler")?;
    Ok(stop)
}

/// The second interrupt: the run's own files go, changed settings come back, exit 130.
fn exit_now() -> ! {
    // Held until the process exits below; `main`, if it returns meanwhile, waits for it.
    let _ending = claim_exit();
    let removed = sinkrate_sys::owned::remove_all();
    let mut line = "sinkrate: interrupted again: stopping at once".to_string();
    for stopped in sinkrate_sys::children::stop_all() {
        line.push_str(&format!("; the watched command {stopped}"));
    }
    if removed > 0 {
        line.push_str(&format!("; removed its {removed} test file(s)"));
    }
    // This process's own temporary changes (its guard will not get to drop).
    let own = std::process::id();
    if std::path::Path::new(sinkrate_model::settings::DEFAULT_JOURNAL).exists() {
        match sinkrate_settings::Journal::live()
            .restore(&|e| e.mode == sinkrate_model::settings::Mode::Temporary && e.pid == own)
        {
            Ok(o) if !o.is_empty() => line.push_str(&format!("; {}", o.describe())),
            Ok(_) => {}
            Err(e) => line.push_str(&format!("; {e}")),
        }
    }
    // A write the kernel has already taken (an fsync waiting for the device) cannot be
    // cancelled: the process ends when the device finishes it.
    line.push_str(
        "; a write already in the kernel may hold the exit until the device completes it",
    );
    eprintln!("{line}");
    std::process::exit(130)
}
