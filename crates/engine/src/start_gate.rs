//! The jobs that start together (a stonewall segment's, less those waiting for others) begin
//! their I/O together once every one has laid out and opened its files, as fio's do: a job
//! whose neighbour is still writing out a large file does not get a head start.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

#[derive(Debug)]
pub struct StartGate {
    not_ready: Mutex<usize>,
    all_ready: Condvar,
}

impl StartGate {
    pub fn new(jobs: usize) -> Arc<StartGate> {
        Arc::new(StartGate {
            not_ready: Mutex::new(jobs),
            all_ready: Condvar::new(),
        })
    }

    fn arrive(&self) {
        if let Ok(mut n) = self.not_ready.lock() {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.all_ready.notify_all();
            }
        }
    }
}

/// One job's place at the gate; a job that never gets ready (its files could not be
/// opened) gives its place up when the ticket is dropped, so the others do not wait for it.
#[derive(Debug)]
pub struct GateTicket {
    gate: Arc<StartGate>,
    used: AtomicBool,
}

impl GateTicket {
    pub fn new(gate: Arc<StartGate>) -> GateTicket {
        GateTicket {
            gate,
            used: AtomicBool::new(false),
        }
    }

    /// This job is ready: waits until every job of the gate is, or `stop` is set.
    pub fn ready_and_wait(&self, stop: &AtomicBool) {
        if self.used.swap(true, Ordering::AcqRel) {
            return;
        }
        self.gate.arrive();
        let Ok(mut n) = self.gate.not_ready.lock() else {
            return;
        };
        while *n > 0 && !stop.load(Ordering::Relaxed) {
            match self
                .gate
                .all_ready
                .wait_timeout(n, Duration::from_millis(50))
            {
                Ok((guard, _)) => n = guard,
                Err(_) => return,
            }
        }
    }
}

impl Drop for GateTicket {
    fn drop(&mut self) {
        if !self.used.swap(true, Ordering::AcqRel) {
            self.gate.arrive();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_wait_for_each_other_and_not_for_one_that_gave_up() {
        let gate = StartGate::new(3);
        let stop = AtomicBool::new(false);
        let given_up = GateTicket::new(gate.clone());
        let late = GateTicket::new(gate.clone());
        let t0 = std::time::Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(100));
                late.ready_and_wait(&stop);
            });
            drop(given_up);
            GateTicket::new(gate.clone()).ready_and_wait(&stop);
            assert!(t0.elapsed() >= Duration::from_millis(100));
        });
    }
}
