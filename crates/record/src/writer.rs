//! The writing side of a recording: one `StreamWriter` per stream holds that stream's files,
//! segments, sync policy and results; `drive` runs one or several of them on the calling
//! thread, taking filled capture buffers in order, writing them and returning them to the
//! stream's pool. One thread per stream, or one shared thread for all, is the caller's choice.

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError};
use std::time::{Duration, Instant};

use sinkrate_platform::buf::AlignedBuf;

use crate::segments::Segments;
use crate::sink::Sink;
use crate::stream::{
    Frame, FrameRecord, Shared, Stall, StreamProgress, StreamResult, SyncPoint, WindowCount,
    MAX_FRAME_RECORDS,
};
use crate::uring_sink::{drain_eventfd, DoneFrame, PendingFrame, UringSink};
use sinkrate_model::record::{RecordConfig, StreamSpec, WriteMode};

enum Output {
    Sync(Sink),
    Uring(Box<UringSink>),
}

pub(crate) struct StreamWriter<'a> {
    spec: &'a StreamSpec,
    cfg: &'a RecordConfig,
    progress: std::sync::Arc<StreamProgress>,
    buffers: Vec<AlignedBuf>,
    free: SyncSender<usize>,
    output: Option<Output>,
    segments: Segments,
    null: bool,
    interval_ns: u64,
    /// `RecordConfig::window`, in ns.
    window_ns: u64,
    /// The run's last window: a write that returns after the recording's end (a writer
    /// behind drains its pool) counts there, so the run has as many windows as its
    /// length holds, not one more of a few late frames.
    last_window: u64,
    /// Per-frame records kept (`frame_record_cap`).
    frame_cap: usize,
    max_frame: usize,
    since_sync_frames: u64,
    last_sync: Duration,
    latencies: Vec<u64>,
    done: Vec<DoneFrame>,
    /// io_uring mode: frames holding their capture buffer until a staging slot is free.
    waiting: VecDeque<Frame>,
    /// Time spent in synchronous write and sync calls (io_uring adds its in-flight time).
    busy_ns: u64,
    pub result: StreamResult,
}

impl<'a> StreamWriter<'a> {
    pub(crate) fn new(
        spec: &'a StreamSpec,
        cfg: &'a RecordConfig,
        progress: std::sync::Arc<StreamProgress>,
        buffers: Vec<AlignedBuf>,
        free: SyncSender<usize>,
        shared: &Shared,
    ) -> StreamWriter<'a> {
        let null = cfg.write_mode == WriteMode::Null;
        let segments = Segments::new(&cfg.dir, &spec.name, cfg.segments, 0);
        let mut w = StreamWriter {
            spec,
            cfg,
            progress,
            buffers,
            free,
            output: None,
            null,
            interval_ns: (1e9 / spec.fps) as u64,
            window_ns: (cfg.window().as_nanos() as u64).max(1),
            last_window: (cfg.duration.as_nanos() as u64).saturating_sub(1)
                / (cfg.window().as_nanos() as u64).max(1),
            frame_cap: crate::stream::frame_record_cap(cfg, spec.fps),
            max_frame: spec.max_frame_bytes() as usize,
            since_sync_frames: 0,
            last_sync: shared.clock.elapsed(),
            latencies: Vec::with_capacity(64),
            done: Vec::new(),
            waiting: VecDeque::new(),
            busy_ns: 0,
            segments,
            result: StreamResult::default(),
        };
        let first = if null {
            PathBuf::new()
        } else {
            w.segments.current.clone()
        };
        match w.open(&first) {
            Ok(o) => {
                w.output = Some(o);
                w.result.file = first;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => w.fail(
                format!(
                    "{} exists (another recording into the same directory?): a recording never overwrites a file",
                    first.display()
                ),
                shared,
            ),
            Err(e) => w.fail(format!("{}: {e}", first.display()), shared),
        }
        w
    }

    fn open(&self, path: &std::path::Path) -> std::io::Result<Output> {
        let file = Sink::create(path, self.cfg, self.max_frame)?;
        Ok(match self.cfg.write_mode {
            WriteMode::Uring => Output::Uring(Box::new(UringSink::new(
                file,
                self.cfg.queue_depth,
                self.max_frame,
            )?)),
            _ => Output::Sync(file),
        })
    }

    fn fail(&mut self, message: String, shared: &Shared) {
        self.result.error.get_or_insert(message);
        shared.halt();
    }

    fn release(&mut self, buffer: usize) {
        self.progress.in_use.fetch_sub(1, Ordering::Relaxed);
        // Once the camera has stopped nobody takes buffers back, but every frame already
        // captured is still written.
        let _ = self.free.send(buffer);
    }

    /// The eventfd the ring signals on completions (io_uring mode).
    pub(crate) fn completion_fd(&self) -> Option<RawFd> {
        match &self.output {
            Some(Output::Uring(u)) => Some(u.event_fd()),
            _ => None,
        }
    }

    /// Whether this writer has frames it is still working on.
    pub(crate) fn busy(&self) -> bool {
        !self.waiting.is_empty() || matches!(&self.output, Some(Output::Uring(u)) if u.in_flight())
    }

    /// Takes one filled buffer: written now (synchronous modes) or queued (io_uring).
    pub(crate) fn accept(&mut self, frame: Frame, shared: &Shared) {
        if self.result.error.is_some() || self.output.is_none() {
            self.release(frame.buffer);
            return;
        }
        self.stamp(&frame);
        match self.output {
            Some(Output::Uring(_)) => {
                self.waiting.push_back(frame);
                self.pump(false, shared);
            }
            _ => self.write_now(frame, shared),
        }
    }

    fn bytes_in_current(&self) -> u64 {
        match &self.output {
            Some(Output::Sync(s)) => s.offset + s.carry as u64,
            Some(Output::Uring(u)) => u.file.offset + u.file.carry as u64,
            None => 0,
        }
    }

    fn sync_due(&mut self, shared: &Shared) -> bool {
        self.since_sync_frames += 1;
        self.cfg
            .fdatasync_every_frames
            .is_some_and(|n| self.since_sync_frames >= n)
            || self
                .cfg
                .fdatasync_every
                .is_some_and(|t| shared.clock.elapsed() - self.last_sync >= t)
    }

    /// Closes the current segment and opens the next, deleting old ones for loop recording.
    /// Rotation, preallocation and deletion happen in the frame's time, as in a recorder's
    /// write path.
    fn rotate(&mut self, now_ns: u64, shared: &Shared) -> std::io::Result<()> {
        let bytes = match self.output.as_mut() {
            Some(Output::Sync(s)) => {
                s.finish(false)?;
                s.offset
            }
            Some(Output::Uring(u)) => {
                u.drain(&shared.clock, &mut self.latencies, &mut self.done)?;
                u.file.finish(false)?;
                self.busy_ns += u.busy_ns;
                u.file.offset
            }
            None => 0,
        };
        if self.cfg.verify_every.is_some() && !self.null {
            self.queue_for_read_back(shared, bytes);
        }
        let next = self.segments.rotate(bytes, now_ns).to_path_buf();
        // The old output closes (its descriptors) before the next opens.
        self.output = None;
        self.output = Some(self.open(&next)?);
        self.result.file = next;
        self.segments.enforce_fill().map(|_| ())
    }

    /// With `--power-cut-at`, the frame's header, so it can be found and checked after the
    /// cut. Stamped when the writer takes the frame, outside the write call's timing.
    fn stamp(&mut self, frame: &Frame) {
        if !self.cfg.stamps_frames() {
            return;
        }
        let Some(bytes) = self.buffers[frame.buffer]
            .as_mut_slice()
            .get_mut(..frame.size as usize)
            .filter(|b| b.len() >= crate::frame_header::HEADER_LEN)
        else {
            return;
        };
        crate::frame_header::stamp(
            bytes,
            &crate::frame_header::FrameHeader {
                run_tag: self.cfg.run_tag,
                frame: frame.index,
                size: frame.size,
                capture_ns: frame.capture_ns,
            },
        );
    }

    /// A periodic sync returned at `now` (`ok`: without an error), after `last_frame`.
    fn synced(&mut self, last_frame: u64, now: Duration, ok: bool) {
        self.since_sync_frames = 0;
        self.last_sync = now;
        if ok && self.result.syncs.len() < MAX_FRAME_RECORDS {
            self.result.syncs.push(SyncPoint {
                end_ns: self.last_sync.as_nanos() as u64,
                last_frame,
            });
        }
    }

    fn write_now(&mut self, frame: Frame, shared: &Shared) {
        let t0 = shared.clock.elapsed().as_nanos() as u64;
        self.latencies.clear();
        let mut outcome = Ok(());
        if !self.null && self.segments.rotation_due(self.bytes_in_current(), t0) {
            outcome = self.rotate(t0, shared);
        }
        if outcome.is_ok() {
            if let Some(Output::Sync(sink)) = self.output.as_mut() {
                let data = &self.buffers[frame.buffer].as_mut_slice()[..frame.size as usize];
                outcome = sink.write_frame(data, &mut self.latencies, &shared.clock);
            }
        }
        if outcome.is_ok() && self.sync_due(shared) {
            if let Some(Output::Sync(sink)) = self.output.as_ref() {
                outcome = sink.datasync();
            }
            self.synced(frame.index, shared.clock.elapsed(), outcome.is_ok());
        }
        let t1 = shared.clock.elapsed().as_nanos() as u64;
        self.busy_ns += t1 - t0;
        let pending = PendingFrame {
            index: frame.index,
            size: frame.size,
            capture_ns: frame.capture_ns,
            accepted_ns: t0,
        };
        self.account(pending, t1, outcome, shared);
        self.release(frame.buffer);
    }

    /// io_uring mode: moves waiting frames into free staging slots (waiting for one when
    /// `block`), handling rotation and the sync policy on the way.
    fn pump(&mut self, block: bool, shared: &Shared) {
        while let Some(frame) = self.waiting.front().copied() {
            if self.result.error.is_some() {
                self.waiting.pop_front();
                self.release(frame.buffer);
                continue;
            }
            let now = shared.clock.elapsed().as_nanos() as u64;
            if let Err(e) = self.step_uring(frame, now, block, shared) {
                let file = self.result.file.display().to_string();
                self.fail(format!("{file}: {e}"), shared);
                continue;
            }
            if self.waiting.front().is_some_and(|f| f.index == frame.index) {
                break; // no slot free and not blocking
            }
        }
        self.settle(shared);
    }

    /// One waiting frame's step: rotation if due, then submit if a slot is free.
    fn step_uring(
        &mut self,
        frame: Frame,
        now: u64,
        block: bool,
        shared: &Shared,
    ) -> std::io::Result<()> {
        if self.segments.rotation_due(self.bytes_in_current(), now) {
            self.rotate(now, shared)?;
        }
        let Some(Output::Uring(u)) = self.output.as_mut() else {
            return Err(std::io::Error::from_raw_os_error(libc::EBADF));
        };
        if !u.has_free_slot() && !block {
            return Ok(());
        }
        // A slot frees only when all of its chunks are done, which may take several
        // completions.
        while !u.has_free_slot() {
            u.reap(true, &shared.clock, &mut self.latencies, &mut self.done)?;
        }
        let data = &self.buffers[frame.buffer].as_mut_slice()[..frame.size as usize];
        let pending = PendingFrame {
            index: frame.index,
            size: frame.size,
            capture_ns: frame.capture_ns,
            accepted_ns: now,
        };
        let immediate = u.submit(data, pending, &shared.clock)?;
        self.waiting.pop_front();
        self.done.extend(immediate);
        self.release(frame.buffer);
        if self.sync_due(shared) {
            let t0 = shared.clock.elapsed();
            if let Some(Output::Uring(u)) = self.output.as_mut() {
                u.drain(&shared.clock, &mut self.latencies, &mut self.done)?;
                u.file.datasync()?;
            }
            self.synced(frame.index, shared.clock.elapsed(), true);
            self.busy_ns += (self.last_sync - t0).as_nanos() as u64;
        }
        Ok(())
    }

    /// io_uring mode: collects completions without waiting and moves waiting frames on.
    pub(crate) fn poll(&mut self, shared: &Shared) {
        if let Some(Output::Uring(u)) = self.output.as_mut() {
            if let Err(e) = u.reap(false, &shared.clock, &mut self.latencies, &mut self.done) {
                self.fail(format!("{}: {e}", self.result.file.display()), shared);
            }
        }
        if !self.waiting.is_empty() {
            self.pump(false, shared);
        } else {
            self.settle(shared);
        }
    }

    /// Accounts for frames whose writes finished.
    fn settle(&mut self, shared: &Shared) {
        for l in self.latencies.drain(..) {
            self.result.write_latency.record(l);
        }
        let done: Vec<DoneFrame> = self.done.drain(..).collect();
        for d in done {
            self.account(d.frame, d.end_ns, d.result, shared);
        }
    }

    fn account(
        &mut self,
        frame: PendingFrame,
        t1: u64,
        outcome: std::io::Result<()>,
        shared: &Shared,
    ) {
        for l in self.latencies.drain(..) {
            self.result.write_latency.record(l);
        }
        let t0 = frame.accepted_ns;
        let r = &mut self.result;
        match outcome {
            Ok(()) => {
                r.frames_written += 1;
                r.bytes_written += frame.size;
                let window = (t1 / self.window_ns).min(self.last_window) as usize;
                if r.windows.len() <= window {
                    r.windows.resize(window + 1, WindowCount::default());
                }
                let w = &mut r.windows[window];
                w.frames += 1;
                w.bytes += frame.size;
                w.worst_ns = w.worst_ns.max(t1.saturating_sub(t0));
                if self.cfg.frame_records && r.frames.len() < self.frame_cap {
                    r.frames.push(FrameRecord {
                        frame: frame.index,
                        size: frame.size,
                        capture_ns: frame.capture_ns,
                        write_start_ns: Some(t0),
                        write_end_ns: Some(t1),
                    });
                }
                let p = &self.progress;
                p.frames_written.store(r.frames_written, Ordering::Relaxed);
                p.bytes_written.store(r.bytes_written, Ordering::Relaxed);
                p.worst_write_ns
                    .fetch_max(t1.saturating_sub(t0), Ordering::Relaxed);
                r.lateness
                    .record(t1.saturating_sub(frame.capture_ns + self.interval_ns));
                if t1.saturating_sub(t0) > self.cfg.stall_threshold.as_nanos() as u64 {
                    shared.stalled(t0, t1);
                    r.stalls.push(Stall {
                        stream: self.spec.name.clone(),
                        frame: Some(frame.index),
                        tid: sinkrate_platform::cpu::thread_id(),
                        at_s: t0 as f64 / 1e9,
                        duration_ms: t1.saturating_sub(t0) as f64 / 1e6,
                    });
                }
            }
            Err(e) => {
                let file = r.file.display().to_string();
                self.fail(format!("{file}: {e}"), shared);
            }
        }
    }

    /// Hands the current segment, closed with `bytes` in it, to `--verify-every`'s reader.
    fn queue_for_read_back(&self, shared: &Shared, bytes: u64) {
        shared
            .closed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(crate::stream::ClosedSegment {
                stream: self.spec.name.clone(),
                path: self.segments.current.clone(),
                bytes,
            });
    }

    /// Writes what is still queued, closes the files (flushing the file system) and returns
    /// the stream's writing results.
    pub(crate) fn finish(mut self, shared: &Shared) -> StreamResult {
        self.result.writer_tid = Some(sinkrate_platform::cpu::thread_id());
        while !self.waiting.is_empty() {
            let before = self.waiting.len();
            self.pump(true, shared);
            if self.waiting.len() == before && self.result.error.is_none() {
                break;
            }
        }
        let mut closing = Ok(());
        if let Some(Output::Uring(u)) = self.output.as_mut() {
            closing = u.drain(&shared.clock, &mut self.latencies, &mut self.done);
        }
        self.settle(shared);
        if let Err(e) = closing {
            self.fail(format!("{}: {e}", self.result.file.display()), shared);
        }
        let t0 = Instant::now();
        let finished = match self.output.as_mut() {
            Some(Output::Sync(s)) => s.finish(true),
            Some(Output::Uring(u)) => {
                self.busy_ns += u.busy_ns;
                u.file.finish(true)
            }
            None => Ok(()),
        };
        if let Err(e) = finished {
            let file = self.result.file.display().to_string();
            self.result.error.get_or_insert(format!("{file}: {e}"));
        }
        // The last segment, closed now, is read back too (after a power cut what the card
        // holds is the power-cut report's to judge, and a failed stream's file is not whole).
        if self.cfg.verify_every.is_some()
            && self.cfg.power_cut_at.is_none()
            && !self.null
            && self.result.error.is_none()
        {
            let bytes = match self.output.as_ref() {
                Some(Output::Sync(s)) => Some(s.offset),
                Some(Output::Uring(u)) => Some(u.file.offset),
                None => None,
            };
            if let Some(bytes) = bytes {
                self.queue_for_read_back(shared, bytes);
            }
        }
        let r = &mut self.result;
        r.final_sync_ns = t0.elapsed().as_nanos() as u64;
        r.writer_busy_ns = self.busy_ns;
        if !self.null {
            r.files = self.segments.files();
        }
        r.segments_created = self.segments.created;
        r.segments_deleted = self.segments.deleted;
        r.bytes_deleted = self.segments.bytes_deleted;
        // Waiting frames left by an error still hold buffers: give them back.
        while let Some(f) = self.waiting.pop_front() {
            self.release(f.buffer);
        }
        std::mem::take(&mut self.result)
    }
}

/// Runs `writers` on this thread until every producer has hung up: frames arrive on
/// `filled` tagged with their stream's index. In io_uring mode the thread sleeps on the
/// producers' `frames_ready` eventfd and the rings' completion eventfds together.
pub(crate) fn drive(
    mut writers: Vec<StreamWriter<'_>>,
    filled: Receiver<(usize, Frame)>,
    frames_ready: Option<&OwnedFd>,
    shared: &Shared,
) -> Vec<StreamResult> {
    let cpu_start = thread_cpu_ns();
    let mut polled: Vec<libc::pollfd> = Vec::with_capacity(writers.len() + 1);
    loop {
        let waiting = match filled.try_recv() {
            Ok(next) => Some(next),
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) => None,
        };
        // Completions first: they free staging slots for the frame about to be taken.
        for w in writers.iter_mut().filter(|w| w.busy()) {
            w.poll(shared);
        }
        let (stream, frame) = match (waiting, frames_ready) {
            (Some(next), _) => next,
            (None, Some(ready)) if writers.iter().any(|w| w.busy()) => {
                let fds = std::iter::once(ready.as_raw_fd())
                    .chain(writers.iter().filter_map(|w| w.completion_fd()));
                wait_readable(&mut polled, fds);
                drain_eventfd(ready.as_raw_fd());
                continue;
            }
            (None, _) => match filled.recv() {
                Ok(next) => next,
                Err(_) => break,
            },
        };
        if let Some(w) = writers.get_mut(stream) {
            w.accept(frame, shared);
        }
    }
    let mut results: Vec<StreamResult> = writers.into_iter().map(|w| w.finish(shared)).collect();
    // A shared thread's CPU is split between its streams by the bytes each wrote.
    let cpu = thread_cpu_ns().saturating_sub(cpu_start);
    let bytes: u64 = results.iter().map(|r| r.bytes_written).sum();
    let n = results.len().max(1) as u64;
    for r in &mut results {
        r.writer_cpu_ns = if bytes > 0 {
            (cpu as u128 * r.bytes_written as u128 / bytes as u128) as u64
        } else {
            cpu / n
        };
    }
    results
}

/// Sleeps until one of `fds` is readable (or a second passes, as a safety net); `polled`
/// is reused from call to call.
fn wait_readable(polled: &mut Vec<libc::pollfd>, fds: impl Iterator<Item = RawFd>) {
    polled.clear();
    polled.extend(fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }));
    // SAFETY: polled is a valid array of pollfd for its length.
    unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, 1000) };
}

/// User + system CPU time of the calling thread, in ns.
fn thread_cpu_ns() -> u64 {
    sinkrate_platform::cpu::thread_usage().map_or(0, |u| u.cpu_ns())
}
