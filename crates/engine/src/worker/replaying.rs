//! A read_iolog job's I/Os: the trace's entries in order, each at its time unless
//! replay_no_stall, its syncs done before the I/O that follows them.

use super::io_loop::Loop;
use super::io_loop::LoopError;
use super::io_loop::Planned;
use crate::backend::{Backend, IoDir};
use crate::replay::{Action, Trace};

pub(super) struct ReplayCursor {
    trace: Trace,
    next: usize,
    /// Run-clock ns the replay began, from which the entries' times count.
    start_ns: Option<u64>,
    stall: bool,
}

impl ReplayCursor {
    pub(super) fn new(trace: Trace, stall: bool) -> ReplayCursor {
        ReplayCursor {
            trace,
            next: 0,
            start_ns: None,
            stall,
        }
    }

    pub(super) fn done(&self) -> bool {
        self.next >= self.trace.entries.len()
    }

    /// When the I/O planned last is due: its time in the trace after the replay's start;
    /// `None` with replay_no_stall.
    pub(super) fn last_due(&self) -> Option<u64> {
        let e = self.trace.entries.get(self.next.checked_sub(1)?)?;
        let start = self.start_ns?;
        self.stall.then_some(start + e.at_us * 1000)
    }
}

impl Loop<'_> {
    /// The next I/O of the trace ([`ReplayCursor::last_due`] says when it is due).
    pub(super) fn plan_replayed(&mut self) -> Planned {
        let now = self.clock.now_ns();
        let Some(cursor) = self.replay.as_mut() else {
            unreachable!("plan_replayed is called for a replay job");
        };
        cursor.start_ns.get_or_insert(now);
        let e = cursor.trace.entries[cursor.next.min(cursor.trace.entries.len() - 1)];
        cursor.next += 1;
        let dir = match e.action {
            Action::Io(dir) => dir,
            // Syncs are taken off the cursor before planning (replay_syncs).
            Action::Sync { .. } => IoDir::Write,
        };
        self.files[e.file].last_start[dir.index()] = e.offset;
        let ioprio = self.ioprio_for(dir, e.len);
        Planned {
            dir,
            file: e.file,
            offset: e.offset,
            len: e.len as usize,
            ioprio,
        }
    }

    /// Does the syncs at the head of the trace, each an fsync or fdatasync of its file.
    pub(super) fn replay_syncs(&mut self, backend: &mut dyn Backend) -> Result<(), LoopError> {
        loop {
            let Some(cursor) = self.replay.as_mut() else {
                return Ok(());
            };
            let Some(e) = cursor.trace.entries.get(cursor.next).copied() else {
                return Ok(());
            };
            let Action::Sync { data_only } = e.action else {
                return Ok(());
            };
            cursor.next += 1;
            let t0 = self.clock.now_ns();
            if let Some(t) = &mut self.logs.iolog {
                let what = if data_only { "datasync" } else { "sync" };
                t.io(t0, &self.files[e.file].plan.path, what, e.offset, 0);
            }
            backend
                .sync_file(e.file, self.files[e.file].fd, data_only)
                .map_err(|err| {
                    (
                        err.raw_os_error().unwrap_or(libc::EIO),
                        format!("fsync: {err}"),
                    )
                })?;
            if !self.ramping {
                self.sync.record(self.clock.now_ns() - t0);
            }
        }
    }
}
