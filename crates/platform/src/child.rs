//! Stopping a process this one started, one way everywhere: a signal, a grace period to
//! end in, then the next stronger signal (INT, then TERM, then KILL). A caller starts where
//! its program's contract says (fio's exec engine at TERM, a watched recorder at INT) and
//! names the grace.

use std::time::{Duration, Instant};

/// The signals of the escalation, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Signal {
    Int,
    Term,
    Kill,
}

impl Signal {
    fn number(self) -> libc::c_int {
        match self {
            Signal::Int => libc::SIGINT,
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Signal::Int => "SIGINT",
            Signal::Term => "SIGTERM",
            Signal::Kill => "SIGKILL",
        }
    }

    fn stronger(self) -> Option<Signal> {
        match self {
            Signal::Int => Some(Signal::Term),
            Signal::Term => Some(Signal::Kill),
            Signal::Kill => None,
        }
    }
}

/// How a stop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It had ended before any signal.
    AlreadyEnded,
    /// It ended after this signal, the strongest one sent.
    By(Signal),
    /// Still running after SIGKILL and its grace (a write the kernel holds).
    StillRunning,
}

/// Waits up to `grace` for `alive` to say the process ended; true when it did.
pub fn wait_for_end(grace: Duration, alive: &mut dyn FnMut() -> bool) -> bool {
    let since = Instant::now();
    while alive() {
        if since.elapsed() >= grace {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Stops `pid`: sends `first`, waits up to `grace` for `alive` to turn false, and goes on
/// to each stronger signal in turn. `alive` should reap the process when it is a child
/// (`Child::try_wait`), so that an ended child does not linger as a zombie that looks alive.
pub fn stop(pid: i32, first: Signal, grace: Duration, alive: &mut dyn FnMut() -> bool) -> Stopped {
    if pid <= 0 {
        // kill(0 or -1, ...) would signal a whole process group or every process.
        return Stopped::StillRunning;
    }
    if !alive() {
        return Stopped::AlreadyEnded;
    }
    let mut signal = Some(first);
    while let Some(s) = signal {
        // SAFETY: kill(2) on a positive pid of a process this one started; a pid that has
        // ended meanwhile gets ESRCH, which changes nothing.
        unsafe { libc::kill(pid, s.number()) };
        if wait_for_end(grace, alive) {
            return Stopped::By(s);
        }
        signal = s.stronger();
    }
    Stopped::StillRunning
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn alive_child(child: &mut std::process::Child) -> impl FnMut() -> bool + '_ {
        move || matches!(child.try_wait(), Ok(None))
    }

    #[test]
    fn a_program_that_ignores_int_and_term_is_killed_in_three_steps() {
        let mut child = Command::new("sh")
            .args(["-c", "trap '' INT TERM; while :; do sleep 0.05; done"])
            .spawn()
            .expect("sh");
        let pid = child.id() as i32;
        std::thread::sleep(Duration::from_millis(100));
        let how = stop(
            pid,
            Signal::Int,
            Duration::from_millis(200),
            &mut alive_child(&mut child),
        );
        assert_eq!(how, Stopped::By(Signal::Kill));
    }

    #[test]
    fn a_program_that_ends_on_term_is_not_killed() {
        let mut child = Command::new("sleep").arg("30").spawn().expect("sleep");
        let pid = child.id() as i32;
        let how = stop(
            pid,
            Signal::Term,
            Duration::from_secs(5),
            &mut alive_child(&mut child),
        );
        assert_eq!(how, Stopped::By(Signal::Term));
    }

    #[test]
    fn an_ended_program_gets_no_signal_and_no_pid_is_a_group() {
        let mut child = Command::new("true").spawn().expect("true");
        let _ = child.wait();
        let pid = child.id() as i32;
        assert_eq!(
            stop(pid, Signal::Term, Duration::from_millis(10), &mut || false),
            Stopped::AlreadyEnded
        );
        assert_eq!(
            stop(0, Signal::Kill, Duration::from_millis(10), &mut || true),
            Stopped::StillRunning
        );
    }
}
