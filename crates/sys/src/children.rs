//! The programs this process started and still runs (`watch -- CMD`): what a second Ctrl-C
//! stops before the process exits at once, so that no way of stopping sinkrate leaves a
//! watched command running orphaned and unnamed.

use std::sync::Mutex;
use std::time::Duration;

static RUNNING: Mutex<Vec<(i32, String)>> = Mutex::new(Vec::new());

/// How long a program has after each signal before the next, stronger one.
pub const GRACE: Duration = Duration::from_secs(2);

/// Notes a program this process started (its pid and how to name it).
pub fn started(pid: u32, name: &str) {
    let mut r = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    r.push((pid as i32, name.to_string()));
}

/// The program ended (it was waited for).
pub fn ended(pid: u32) {
    let mut r = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    r.retain(|(p, _)| *p != pid as i32);
}

fn running(pid: i32) -> bool {
    // A zombie has ended; waitpid without blocking reaps it if it is ours.
    // SAFETY: waitpid with WNOHANG on a pid; no memory is passed.
    let reaped = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
    // SAFETY: signal 0 only asks whether the process exists.
    reaped == 0 || (reaped < 0 && unsafe { libc::kill(pid, 0) } == 0)
}

/// Stops every program still running: SIGTERM, then SIGKILL after [`GRACE`] (each had its
/// SIGINT from the first Ctrl-C). Returns a line for each: its name, pid and how it ended.
pub fn stop_all() -> Vec<String> {
    let list: Vec<(i32, String)> =
        std::mem::take(&mut *RUNNING.lock().unwrap_or_else(|e| e.into_inner()));
    let mut said = Vec::new();
    for (pid, name) in list {
        use sinkrate_platform::child::{stop, Signal, Stopped};
        let line = match stop(pid, Signal::Term, GRACE, &mut || running(pid)) {
            Stopped::AlreadyEnded => "ended, stopped".to_string(),
            Stopped::By(signal) => format!("{}, stopped", signal.name()),
            Stopped::StillRunning => "SIGKILL, still running".to_string(),
        };
        said.push(format!("{name} (pid {pid}): {line}"));
    }
    said
}
