//! Each stalled call's time split by cause, from the kernel's events (`sinkrate_sys::tracefs`).
//! Pure: events and stalls in, the breakdown and the run's account out.
//!
//! A thread's time inside a call is walked through its scheduler events: on the CPU
//! (running), switched out while runnable or woken and not yet running (waiting for a
//! CPU), or asleep. An asleep stretch takes its cause from the event the thread emitted just
//! before it slept (a balance_dirty_pages pause: throttled; folio_wait_writeback: waiting for
//! writeback); without one, from what the target was doing meanwhile (a journal commit
//! covering most of it: the journal; requests in flight: the device); else unexplained.
//!
//! The analysis streams: [`Live`] takes the events as the trace reader hands them over (in
//! time order), explains each call it is handed once the events up to a little past its
//! end are in, and lets go of the events behind it, so a watch of hours keeps about a
//! minute of events ([`KEEP_BEHIND_NS`], at most [`MAX_KEPT`]) and its account covers the
//! whole run.
//!
//! (The larger functions are kept out of line: each is called from two places, and the
//! board binary has a size budget.)

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use sinkrate_model::causes::{
    Cause, CauseSeconds, CommitEvidence, DeviceEvidence, FlushCount, KernelAccount, StallCauses,
    ThreadThrottle, ThrottleEvidence,
};
use sinkrate_procparse::trace::{dev_name, KernelEvent, TimedEvent};
use sinkrate_stats::LatencyRecorder;
use sinkrate_sys::tracefs::{EventSink, KernelTrace};

/// How far behind the newest settled event the events are kept for calls still to be handed
/// over: a call is handed over when it ends, so one that took up to this long is explained.
pub const KEEP_BEHIND_NS: u64 = sinkrate_model::causes::KEPT_BEHIND_S * 1_000_000_000;
/// Events kept at most (scheduler events, requests, commits; some 100 bytes each). A thread
/// that makes more than this in [`KEEP_BEHIND_NS`] has its oldest let go sooner, and the
/// calls that began before them are counted as not explained.
pub const MAX_KEPT: usize = 64_000;
/// Calls listed with their breakdown; later ones are still summed by cause and counted.
pub const MAX_LISTED: usize = 10_000;
/// A call is explained once the events up to this long after its end are in: the requests
/// and commits it waited on have completed by then, and say how long they took.
const EXPLAIN_AFTER_NS: u64 = 2_000_000_000;
/// Requests a device may have in flight before the oldest are taken for lost completions.
const MAX_IN_FLIGHT: usize = 4096;

/// Whether a thread that switched out was still runnable (preempted), from sched_switch's
/// prev_state: the sleeping states are the low seven bits (S D T t X Z P) on every kernel
/// from 4.4; a preempted task reports none of them, only a marker above (TASK_REPORT_MAX,
/// 0x100 from 4.14; TASK_STATE_MAX, 0x800 on 4.4).
fn runnable(prev_state: i64) -> bool {
    prev_state & 0x7f == 0
}

/// Where flush requests are filed: the sector their completion reports (-1).
const FLUSH: u64 = u64::MAX;

/// A slow call to explain: which thread, and when on the monotonic clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowCall {
    pub tid: i32,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// What the analysis needs to know of the target.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// The whole disk, as trace events number devices (`kernel_dev`).
    pub disk: Option<u32>,
    /// The filesystem's device, for its journal.
    pub fs_dev: Option<u32>,
    /// The backing device's name as writeback events give it ("7:0").
    pub bdi: Option<String>,
    pub page_bytes: u64,
}

#[derive(Debug, Clone, Copy)]
struct Request {
    issue: u64,
    complete: Option<u64>,
    bytes: u64,
}

#[derive(Debug, Clone, Copy)]
struct Commit {
    transaction: u32,
    start: u64,
    end: Option<u64>,
    blocks: Option<u32>,
}

/// A stretch of one thread's time.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Running,
    Runnable,
    /// Asleep, with the cause its last marker event gave (None: decided by overlap).
    Asleep(Option<Cause>),
}

/// One device's requests: those in flight by sector, those completed (in the order they
/// completed, kept while a call may still ask about them) and every service time.
#[derive(Default)]
struct DeviceLog {
    in_flight: HashMap<u64, Vec<(u64, u64)>>,
    in_flight_count: usize,
    done: VecDeque<Request>,
    service: LatencyRecorder,
}

/// One filesystem's journal commits, kept while a call may ask about them, and counted.
#[derive(Default)]
struct JournalLog {
    commits: VecDeque<Commit>,
    started: u64,
    longest_ms: Option<f64>,
}

/// Logs by device number: a run sees one or two devices (a capture a few more), so a list
/// is searched (and keeps the board binary smaller than a hash map of each kind would).
struct ByDevice<V>(Vec<(u32, V)>);

impl<V: Default> Default for ByDevice<V> {
    fn default() -> Self {
        ByDevice(Vec::new())
    }
}

impl<V: Default> ByDevice<V> {
    fn get(&self, dev: u32) -> Option<&V> {
        self.0.iter().find(|(d, _)| *d == dev).map(|(_, v)| v)
    }

    fn get_mut(&mut self, dev: u32) -> Option<&mut V> {
        self.0.iter_mut().find(|(d, _)| *d == dev).map(|(_, v)| v)
    }

    fn entry(&mut self, dev: u32) -> &mut V {
        let at = match self.0.iter().position(|(d, _)| *d == dev) {
            Some(at) => at,
            None => {
                self.0.push((dev, V::default()));
                self.0.len() - 1
            }
        };
        &mut self.0[at].1
    }

    fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.0.iter_mut().map(|(_, v)| v)
    }
}

/// The run's events, indexed for the questions asked per stall, fed in time order; what
/// lies behind `kept_from_ns` has been let go, and the account's totals cover every event.
#[derive(Default)]
pub struct Account {
    /// Per thread, the events that concern it (its scheduling, throttle pauses and
    /// writeback waits), in time order.
    threads: HashMap<i32, VecDeque<(u64, KernelEvent)>>,
    thread_events: usize,
    /// Per device as trace events number them.
    devices: ByDevice<DeviceLog>,
    journals: ByDevice<JournalLog>,
    /// Throttle pauses per thread: (tid, pauses, seconds). A run has a few threads, so a
    /// list is searched (and costs the board binary less than another map type).
    throttles: Vec<(i32, u64, f64)>,
    /// The flusher's work by (bdi, reason).
    flushes: Vec<(String, String, u64)>,
    events: u64,
    kept_from_ns: u64,
    /// Events let go before [`KEEP_BEHIND_NS`] to stay within [`MAX_KEPT`].
    let_go_early: u64,
}

impl Account {
    /// Takes one event; events come in time order.
    #[inline(never)]
    pub fn add(&mut self, e: &TimedEvent) {
        self.events += 1;
        let mut to_thread = |tid: i32, threads: &mut HashMap<i32, VecDeque<(u64, KernelEvent)>>| {
            threads
                .entry(tid)
                .or_default()
                .push_back((e.ts_ns, e.event.clone()));
            self.thread_events += 1;
        };
        match &e.event {
            KernelEvent::Switch {
                prev_pid, next_pid, ..
            } => {
                to_thread(*prev_pid, &mut self.threads);
                if next_pid != prev_pid {
                    to_thread(*next_pid, &mut self.threads);
                }
            }
            KernelEvent::Wakeup { pid } => to_thread(*pid, &mut self.threads),
            // A throttle that did not put the writer to sleep explains nothing.
            KernelEvent::Throttle { pause_ms, .. } if *pause_ms > 0 => {
                let s = *pause_ms as f64 / 1e3;
                match self.throttles.iter_mut().find(|t| t.0 == e.pid) {
                    Some(t) => {
                        t.1 += 1;
                        t.2 += s;
                    }
                    None => self.throttles.push((e.pid, 1, s)),
                }
                to_thread(e.pid, &mut self.threads);
            }
            KernelEvent::WritebackWait { .. } => to_thread(e.pid, &mut self.threads),
            KernelEvent::RequestIssue {
                dev,
                sector,
                sectors,
                ..
            } => {
                let d = self.devices.entry(*dev);
                // A sector has one request in flight: a second issue is the first
                // requeued. Flushes (no sectors) queue up under their own key.
                let key = if *sectors == 0 { FLUSH } else { *sector };
                let waiting = d.in_flight.entry(key).or_default();
                if *sectors > 0 {
                    d.in_flight_count -= waiting.len();
                    waiting.clear();
                }
                waiting.push((e.ts_ns, u64::from(*sectors) * 512));
                d.in_flight_count += 1;
                if d.in_flight_count > MAX_IN_FLIGHT {
                    d.forget_oldest_in_flight();
                }
            }
            // A flush completes at sector -1; the empty completion that follows a write with
            // a pre-flush (0 sectors at 0) ends no request of its own.
            KernelEvent::RequestComplete {
                dev,
                sector,
                sectors,
                ..
            } if *sectors > 0 || *sector == FLUSH => {
                if let Some(d) = self.devices.get_mut(*dev) {
                    if let Some(waiting) = d.in_flight.get_mut(sector) {
                        if !waiting.is_empty() {
                            let (issue, bytes) = waiting.remove(0);
                            if waiting.is_empty() {
                                d.in_flight.remove(sector);
                            }
                            d.in_flight_count -= 1;
                            d.service.record(e.ts_ns.saturating_sub(issue));
                            d.done.push_back(Request {
                                issue,
                                complete: Some(e.ts_ns),
                                bytes,
                            });
                        }
                    }
                }
            }
            KernelEvent::CommitStart { dev, transaction } => {
                let j = self.journals.entry(*dev);
                j.started += 1;
                j.commits.push_back(Commit {
                    transaction: *transaction,
                    start: e.ts_ns,
                    end: None,
                    blocks: None,
                });
            }
            KernelEvent::CommitEnd { dev, transaction } => {
                if let Some(j) = self.journals.get_mut(*dev) {
                    if let Some(c) = j.find(*transaction) {
                        c.end = Some(e.ts_ns);
                        let ms = e.ts_ns.saturating_sub(c.start) as f64 / 1e6;
                        j.longest_ms = Some(j.longest_ms.map_or(ms, |m: f64| m.max(ms)));
                    }
                }
            }
            KernelEvent::CommitStats {
                dev,
                transaction,
                blocks,
                ..
            } => {
                if let Some(c) = self
                    .journals
                    .get_mut(*dev)
                    .and_then(|j| j.find(*transaction))
                {
                    c.blocks = Some(*blocks);
                }
            }
            KernelEvent::FlushStart { bdi, reason } => {
                match self
                    .flushes
                    .iter_mut()
                    .find(|f| f.0 == *bdi && f.1 == *reason)
                {
                    Some(f) => f.2 += 1,
                    None => self.flushes.push((bdi.clone(), reason.clone(), 1)),
                }
            }
            _ => {}
        }
    }

    /// Events kept now (scheduler events, completed requests, commits).
    fn kept(&self) -> usize {
        self.thread_events
            + self.devices.values().map(|d| d.done.len()).sum::<usize>()
            + self
                .journals
                .values()
                .map(|j| j.commits.len())
                .sum::<usize>()
    }

    /// Lets go of what no call starting at or after `horizon_ns` asks about. Each thread
    /// keeps its last switch onto a CPU before the horizon and what followed: where the
    /// thread was at the horizon, and the marker it left before sleeping. Returns how many
    /// events went.
    #[inline(never)]
    fn let_go_before(&mut self, horizon_ns: u64) -> usize {
        if horizon_ns <= self.kept_from_ns {
            return 0;
        }
        let before = self.kept();
        self.threads.retain(|tid, events| {
            // A thread silent for a whole window before the horizon (one that ended, or
            // one running all along) goes: a call it makes later begins after a switch onto
            // a CPU that will be kept, and a thread with no events reads as running.
            if events
                .back()
                .is_none_or(|(ts, _)| ts.saturating_add(KEEP_BEHIND_NS) < horizon_ns)
            {
                return false;
            }
            let behind = events.partition_point(|(ts, _)| *ts < horizon_ns);
            let switch_in = events.range(..behind).rposition(
                |(_, e)| matches!(e, KernelEvent::Switch { next_pid, .. } if next_pid == tid),
            );
            let any_switch = events
                .range(..behind)
                .rposition(|(_, e)| matches!(e, KernelEvent::Switch { .. }));
            let keep_from = switch_in.or(any_switch).unwrap_or(behind);
            events.drain(..keep_from);
            !events.is_empty()
        });
        self.thread_events = self.threads.values().map(VecDeque::len).sum();
        for d in self.devices.values_mut() {
            while d
                .done
                .front()
                .is_some_and(|r| r.complete.is_some_and(|c| c < horizon_ns))
            {
                d.done.pop_front();
            }
        }
        for j in self.journals.values_mut() {
            while j
                .commits
                .front()
                .is_some_and(|c| c.end.is_some_and(|e| e < horizon_ns))
            {
                j.commits.pop_front();
            }
        }
        self.kept_from_ns = horizon_ns;
        before.saturating_sub(self.kept())
    }

    fn bytes(pages: u64, target: &Target) -> u64 {
        pages.saturating_mul(target.page_bytes.max(1))
    }

    /// Whether the events a call needs are still kept.
    fn can_explain(&self, call: &SlowCall) -> bool {
        call.start_ns >= self.kept_from_ns
    }

    /// The call's time by cause, with the evidence for what it waited on, against `target`.
    #[inline(never)]
    pub fn explain(&self, call: &SlowCall, target: &Target) -> StallCauses {
        let (a, b) = (call.start_ns, call.end_ns.max(call.start_ns));
        let mut out = StallCauses::default();
        let empty = VecDeque::new();
        let mine = self.threads.get(&call.tid).unwrap_or(&empty);
        // Where the thread was at the call's start: its last scheduler event before it.
        let first_inside = mine.partition_point(|(ts, _)| *ts < a);
        let mut state = State::Running;
        let mut marker: Option<Cause> = None;
        let mut saw_scheduler = false;
        // Woken after its last switch but not yet running: waiting for a CPU at the start.
        let mut woken = false;
        for (_, e) in mine.range(..first_inside).rev() {
            match e {
                KernelEvent::Wakeup { .. } => woken = true,
                KernelEvent::Switch {
                    prev_pid,
                    prev_state,
                    ..
                } => {
                    saw_scheduler = true;
                    state = if *prev_pid == call.tid {
                        if runnable(*prev_state) || woken {
                            State::Runnable
                        } else {
                            State::Asleep(None)
                        }
                    } else {
                        State::Running
                    };
                    break;
                }
                _ => {}
            }
        }
        // A marker emitted before the call and before the thread slept still names it.
        if let State::Asleep(_) = state {
            for (_, e) in mine.range(..first_inside).rev() {
                match e {
                    KernelEvent::Throttle { pause_ms, .. } if *pause_ms > 0 => {
                        state = State::Asleep(Some(Cause::Throttled));
                        break;
                    }
                    KernelEvent::WritebackWait { .. } => {
                        state = State::Asleep(Some(Cause::WritebackWait));
                        break;
                    }
                    KernelEvent::Switch { next_pid, .. } if *next_pid == call.tid => break,
                    _ => {}
                }
            }
        }
        let mut since = a;
        let mut throttle = ThrottleEvidence::default();
        let mut longest_pause = -1i64;
        let mut journal_at: Option<(f64, Commit)> = None;
        let mut close = |state: State, from: u64, to: u64, out: &mut StallCauses| {
            self.part(state, from, to, target, out, &mut journal_at)
        };
        for (ts, e) in mine.range(first_inside..) {
            let ts = *ts;
            if ts > b {
                break;
            }
            match e {
                KernelEvent::Switch {
                    prev_pid,
                    prev_state,
                    next_pid,
                } => {
                    saw_scheduler = true;
                    if *prev_pid == call.tid && *next_pid != call.tid {
                        close(state, since, ts, &mut out);
                        since = ts;
                        state = if runnable(*prev_state) {
                            State::Runnable
                        } else {
                            State::Asleep(marker.take())
                        };
                    } else if *next_pid == call.tid {
                        close(state, since, ts, &mut out);
                        since = ts;
                        state = State::Running;
                        marker = None;
                    }
                }
                KernelEvent::Wakeup { .. } => {
                    if let State::Asleep(_) = state {
                        close(state, since, ts, &mut out);
                        since = ts;
                        state = State::Runnable;
                    }
                }
                KernelEvent::Throttle {
                    bdi,
                    limit_pages,
                    setpoint_pages,
                    dirty_pages,
                    wb_setpoint_pages,
                    wb_dirty_pages,
                    pause_ms,
                    ..
                } if *pause_ms > 0 => {
                    marker = Some(Cause::Throttled);
                    throttle.pauses += 1;
                    throttle.pause_s += *pause_ms as f64 / 1e3;
                    if *pause_ms > longest_pause {
                        longest_pause = *pause_ms;
                        throttle.bdi = bdi.clone();
                        throttle.dirty_bytes = Self::bytes(*dirty_pages, target);
                        throttle.setpoint_bytes = Self::bytes(*setpoint_pages, target);
                        throttle.limit_bytes = Self::bytes(*limit_pages, target);
                        throttle.wb_dirty_bytes = Self::bytes(*wb_dirty_pages, target);
                        throttle.wb_setpoint_bytes = Self::bytes(*wb_setpoint_pages, target);
                    }
                }
                KernelEvent::WritebackWait { .. } => marker = Some(Cause::WritebackWait),
                _ => {}
            }
        }
        close(state, since, b, &mut out);
        if !saw_scheduler {
            // No scheduler events for this thread: only the throttle pauses can be placed.
            let total = (b - a) as f64 / 1e9;
            let throttled = throttle.pause_s.min(total);
            out.seconds = CauseSeconds {
                throttled_s: throttled,
                unexplained_s: total - throttled,
                ..Default::default()
            };
            out.partial = true;
        }
        if throttle.pauses > 0 {
            out.throttle = Some(throttle);
        }
        if let Some((_, c)) = journal_at {
            out.journal = Some(CommitEvidence {
                dev: target.fs_dev.map(dev_name).unwrap_or_default(),
                transaction: c.transaction,
                took_ms: c.end.map(|e| e.saturating_sub(c.start) as f64 / 1e6),
                blocks: c.blocks,
            });
        }
        let (requests, bytes, longest) = self.requests_over(target, a, b);
        if requests > 0 {
            out.device = Some(DeviceEvidence {
                dev: target.disk.map(dev_name).unwrap_or_default(),
                requests,
                bytes,
                max_service_ms: longest.map_or(0.0, |(ns, _)| ns as f64 / 1e6),
                max_request_bytes: longest.map_or(0, |(_, b)| b),
            });
        }
        out.largest = Some(out.seconds.largest());
        out
    }

    /// Books [from, to] of the call to the cause its state gives; an asleep stretch with no
    /// marker to the journal commit covering most of it, else the device if it had requests
    /// in flight. Out of line: the walk calls it from four places.
    #[inline(never)]
    fn part(
        &self,
        state: State,
        from: u64,
        to: u64,
        target: &Target,
        out: &mut StallCauses,
        journal_at: &mut Option<(f64, Commit)>,
    ) {
        if to <= from {
            return;
        }
        let s = (to - from) as f64 / 1e9;
        let cause = match state {
            State::Running => Cause::Running,
            State::Runnable => Cause::Cpu,
            State::Asleep(Some(c)) => c,
            State::Asleep(None) => match self.commit_over(target, from, to) {
                Some(c) => {
                    if journal_at.is_none_or(|(longest, _)| s > longest) {
                        *journal_at = Some((s, c));
                    }
                    Cause::Journal
                }
                None if self.requests_over(target, from, to).0 > 0 => Cause::Device,
                None => Cause::Unexplained,
            },
        };
        out.seconds.add(cause, s);
    }

    /// The journal commit that covers most of [from, to], if one covers at least half.
    fn commit_over(&self, target: &Target, from: u64, to: u64) -> Option<Commit> {
        let span = to - from;
        let journal = self.journals.get(target.fs_dev?)?;
        journal
            .commits
            .iter()
            .map(|c| {
                let end = c.end.unwrap_or(u64::MAX);
                (c, end.min(to).saturating_sub(c.start.max(from)))
            })
            .filter(|(_, overlap)| *overlap * 2 >= span)
            .max_by_key(|(_, overlap)| *overlap)
            .map(|(c, _)| *c)
    }

    /// Requests in flight on the target at some point in [from, to]: how many, their bytes,
    /// and the longest service time with that request's size (one still in flight counts
    /// until `to`).
    fn requests_over(&self, target: &Target, from: u64, to: u64) -> (u64, u64, Option<(u64, u64)>) {
        let Some(d) = target.disk.and_then(|k| self.devices.get(k)) else {
            return (0, 0, None);
        };
        let first = d
            .done
            .partition_point(|r| r.complete.is_some_and(|c| c < from));
        let in_flight = d
            .in_flight
            .values()
            .flatten()
            .map(|&(issue, bytes)| Request {
                issue,
                complete: None,
                bytes,
            });
        let mut n = 0;
        let mut bytes = 0;
        let mut longest: Option<(u64, u64)> = None;
        for r in d.done.range(first..).copied().chain(in_flight) {
            if r.issue > to {
                continue;
            }
            n += 1;
            bytes += r.bytes;
            let service = r.complete.unwrap_or(to).saturating_sub(r.issue);
            if longest.is_none_or(|(l, _)| service > l) {
                longest = Some((service, r.bytes));
            }
        }
        (n, bytes, longest)
    }

    /// The run's account on `target`: throttling per thread, journal commits, the device's
    /// service times, the flusher's work; `stall_seconds` is left for the caller to sum.
    #[inline(never)]
    pub fn summary(
        &self,
        trace: &KernelTrace,
        target: &Target,
        names: &HashMap<i32, String>,
    ) -> KernelAccount {
        let device = target.disk.and_then(|k| self.devices.get(k));
        let journal = target.fs_dev.and_then(|k| self.journals.get(k));
        let service = device.map(|d| &d.service).filter(|s| s.count() > 0);
        let ms = |ns: u64| ns as f64 / 1e6;
        let mut throttles = self.throttles.clone();
        throttles.sort_unstable_by_key(|t| t.0);
        // The target's flushes by reason, in the order of the kernel's names for them.
        let mut flushes: Vec<FlushCount> = Vec::new();
        for (bdi, reason, n) in &self.flushes {
            if target.bdi.as_deref().is_some_and(|t| t != bdi) {
                continue;
            }
            match flushes.iter_mut().find(|f| f.reason == *reason) {
                Some(f) => f.count += n,
                None => flushes.push(FlushCount {
                    reason: reason.clone(),
                    count: *n,
                }),
            }
        }
        flushes.sort_unstable_by(|a, b| a.reason.cmp(&b.reason));
        KernelAccount {
            inferred_because: None,
            source: trace.source.clone(),
            traced_mono_ns: Some([trace.window_ns.0, trace.window_ns.1]),
            events: self.events,
            lost_events: trace.lost,
            lost_unknown: trace.lost_unknown,
            events_not_kept: self.let_go_early,
            stalls_not_explained: 0,
            reader_cpu_s: trace.reader_cpu_s,
            missing: trace.missing.clone(),
            throttled_threads: throttles
                .iter()
                .map(|(tid, pauses, pause_s)| ThreadThrottle {
                    tid: *tid,
                    name: names
                        .get(tid)
                        .cloned()
                        .unwrap_or_else(|| format!("thread {tid}")),
                    pauses: *pauses,
                    pause_s: *pause_s,
                })
                .collect(),
            journal_commits: journal.map_or(0, |j| j.started),
            journal_commit_max_ms: journal.and_then(|j| j.longest_ms),
            device_requests: device.map_or(0, |d| d.service.count() + d.in_flight_count as u64),
            device_service_p50_ms: service.map(|s| ms(s.value_at_percentile(50.0))),
            device_service_p99_ms: service.map(|s| ms(s.value_at_percentile(99.0))),
            device_service_max_ms: service.map(|s| ms(s.summary(&[]).max_ns)),
            flushes,
            stall_seconds: CauseSeconds::default(),
        }
    }
}

impl DeviceLog {
    /// Drops the request in flight longest: its completion was lost.
    fn forget_oldest_in_flight(&mut self) {
        let oldest = self
            .in_flight
            .iter()
            .filter_map(|(k, v)| v.first().map(|(issue, _)| (*issue, *k)))
            .min();
        if let Some((_, key)) = oldest {
            if let Some(v) = self.in_flight.get_mut(&key) {
                v.remove(0);
                if v.is_empty() {
                    self.in_flight.remove(&key);
                }
                self.in_flight_count -= 1;
            }
        }
    }
}

impl JournalLog {
    /// The newest commit of this transaction (they are searched from the newest: the one
    /// asked about is the latest).
    fn find(&mut self, transaction: u32) -> Option<&mut Commit> {
        self.commits
            .iter_mut()
            .rev()
            .find(|c| c.transaction == transaction)
    }
}

/// Who handed a call over: the caller's own number for it, or the traced system call (by
/// its number) that the analysis found slow itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallTag {
    Caller(u64),
    Syscall(i64),
}

/// A call handed over, explained (None: the events it needed were no longer kept).
#[derive(Debug, Clone)]
pub struct Explained {
    pub tag: CallTag,
    pub call: SlowCall,
    pub causes: Option<StallCauses>,
}

struct Pending {
    tag: CallTag,
    call: SlowCall,
    /// The directory of the file the call wrote, when its target is that file's, not the
    /// run's (a captured recorder writes anywhere).
    dir: Option<PathBuf>,
}

/// Traced write calls of another program, paired enter to exit per thread as they come.
struct Syscalls {
    threshold_ns: u64,
    /// The watch's own threads.
    ignore: Vec<i32>,
    open: HashMap<i32, (i64, u64)>,
    seen: u64,
}

/// The analysis while the run goes on: the events as the reader hands them over, the calls
/// as the run hands them over, each explained once its events are in.
pub struct Live {
    account: Account,
    target: Target,
    /// Targets by directory, for calls that name theirs.
    targets: Vec<(PathBuf, Target)>,
    pending: Vec<Pending>,
    explained: Vec<Explained>,
    not_listed: u64,
    not_explained: u64,
    stall_seconds: CauseSeconds,
    settled_ns: u64,
    syscalls: Option<Syscalls>,
}

impl Live {
    fn new(target: Target) -> Live {
        Live {
            account: Account::default(),
            target,
            targets: Vec::new(),
            pending: Vec::new(),
            explained: Vec::new(),
            not_listed: 0,
            not_explained: 0,
            stall_seconds: CauseSeconds::default(),
            settled_ns: 0,
            syscalls: None,
        }
    }

    #[inline(never)]
    fn take(&mut self, events: &[TimedEvent], settled_ns: u64) {
        for e in events {
            if let Some(s) = &mut self.syscalls {
                s.add(e, &mut self.pending);
            }
            self.account.add(e);
        }
        self.settled_ns = self.settled_ns.max(settled_ns);
        self.explain_settled();
        if settled_ns != u64::MAX {
            self.let_go();
        }
    }

    /// Explains the calls whose events are all in.
    #[inline(never)]
    fn explain_settled(&mut self) {
        let settled = self.settled_ns;
        let (ready, waiting): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| {
                settled == u64::MAX || p.call.end_ns.saturating_add(EXPLAIN_AFTER_NS) <= settled
            });
        self.pending = waiting;
        for p in ready {
            let causes = if self.account.can_explain(&p.call) {
                let target = match &p.dir {
                    Some(dir) => self.target_of(dir),
                    None => self.target.clone(),
                };
                let causes = self.account.explain(&p.call, &target);
                for c in Cause::ALL {
                    self.stall_seconds.add(c, causes.seconds.get(c));
                }
                Some(causes)
            } else {
                self.not_explained += 1;
                None
            };
            if self.explained.len() < MAX_LISTED {
                self.explained.push(Explained {
                    tag: p.tag,
                    call: p.call,
                    causes,
                });
            } else {
                self.not_listed += 1;
            }
        }
    }

    /// The target of a directory a call wrote in, resolved once per directory.
    fn target_of(&mut self, dir: &Path) -> Target {
        if let Some((_, t)) = self.targets.iter().find(|(d, _)| d == dir) {
            return t.clone();
        }
        let t = crate::target::target_of(dir);
        self.targets.push((dir.to_path_buf(), t.clone()));
        t
    }

    /// Lets go of the events behind every call still to come, and more while over
    /// [`MAX_KEPT`].
    fn let_go(&mut self) {
        let settled = self.settled_ns;
        let mut horizon = self
            .pending
            .iter()
            .map(|p| p.call.start_ns)
            .fold(settled.saturating_sub(KEEP_BEHIND_NS), u64::min);
        self.account.let_go_before(horizon);
        while self.account.kept() > MAX_KEPT && horizon < settled {
            horizon += (settled - horizon).div_ceil(2);
            let n = self.account.let_go_before(horizon);
            self.account.let_go_early += n as u64;
        }
    }
}

impl Syscalls {
    fn add(&mut self, e: &TimedEvent, pending: &mut Vec<Pending>) {
        if self.ignore.contains(&e.pid) {
            return;
        }
        match e.event {
            KernelEvent::SyscallEnter { nr } => {
                self.open.insert(e.pid, (nr, e.ts_ns));
            }
            KernelEvent::SyscallExit { nr, .. } => {
                // A call still running at the end, or whose exit was lost, is left out.
                if let Some((entered, at)) = self.open.remove(&e.pid) {
                    if entered == nr {
                        self.seen += 1;
                        if e.ts_ns.saturating_sub(at) >= self.threshold_ns {
                            pending.push(Pending {
                                tag: CallTag::Syscall(nr),
                                call: SlowCall {
                                    tid: e.pid,
                                    start_ns: at,
                                    end_ns: e.ts_ns,
                                },
                                dir: None,
                            });
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// A run's analysis, shared between the trace reader (which hands it the events) and the
/// run's threads (which hand it their slow calls).
#[derive(Clone)]
pub struct LiveAnalysis {
    live: Arc<Mutex<Live>>,
    /// Calls handed over and not yet taken in: a run's thread only ever waits for a push
    /// here, never for an explanation under way (capture's tracer holds a stopped
    /// recorder while it hands a call over).
    inbox: Arc<Mutex<Vec<Pending>>>,
}

/// What a finished analysis found: each call handed over, explained, and the run's account.
pub struct Finished {
    pub explained: Vec<Explained>,
    /// Calls past [`MAX_LISTED`], summed in the account but not listed.
    pub not_listed: u64,
    /// Traced write calls seen (`watching_syscalls`).
    pub syscalls_seen: u64,
    pub account: KernelAccount,
}

struct Feed(LiveAnalysis);

impl EventSink for Feed {
    fn events(&mut self, events: &[TimedEvent], settled_ns: u64) {
        let handed = std::mem::take(&mut *self.0.inbox());
        let mut live = self.0.lock();
        live.pending.extend(handed);
        live.take(events, settled_ns);
    }
}

impl LiveAnalysis {
    /// An analysis of calls on `target`.
    pub fn new(target: Target) -> LiveAnalysis {
        LiveAnalysis::of(Live::new(target))
    }

    /// An analysis that also finds the slow calls itself among the traced system calls of
    /// the threads not in `ignore`: each taking `threshold_ns` or longer is explained.
    pub fn watching_syscalls(target: Target, threshold_ns: u64, ignore: Vec<i32>) -> LiveAnalysis {
        let mut live = Live::new(target);
        live.syscalls = Some(Syscalls {
            threshold_ns,
            ignore,
            open: HashMap::new(),
            seen: 0,
        });
        LiveAnalysis::of(live)
    }

    fn of(live: Live) -> LiveAnalysis {
        LiveAnalysis {
            live: Arc::new(Mutex::new(live)),
            inbox: Arc::new(Mutex::new(Vec::new())),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn inbox(&self) -> std::sync::MutexGuard<'_, Vec<Pending>> {
        self.inbox.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the trace session hands its events to.
    pub fn sink(&self) -> Box<dyn EventSink> {
        Box::new(Feed(self.clone()))
    }

    /// Hands over a slow call, once it has ended: explained against the run's target, or
    /// that of `dir` (the directory of the file it wrote) when given.
    pub fn hand_over(&self, tag: u64, call: SlowCall, dir: Option<&Path>) {
        let mut inbox = self.inbox();
        // The reader takes the calls in every 100 ms; more than this many waiting means it
        // does not (the trace never started): they are counted, not kept.
        if inbox.len() >= MAX_KEPT {
            drop(inbox);
            self.lock().not_explained += 1;
            return;
        }
        inbox.push(Pending {
            tag: CallTag::Caller(tag),
            call,
            dir: dir.map(Path::to_path_buf),
        });
    }

    /// Explains what is still pending (call it after the trace session has finished, so
    /// that every event is in) and gives the run's account on `summary_target` (the run's
    /// own target when None). A trace that lost events marks every breakdown partial.
    pub fn finish(
        &self,
        trace: &KernelTrace,
        summary_target: Option<Target>,
        names: &HashMap<i32, String>,
    ) -> Finished {
        let handed = std::mem::take(&mut *self.inbox());
        let mut live = self.lock();
        live.pending.extend(handed);
        live.settled_ns = u64::MAX;
        live.explain_settled();
        let target = summary_target.unwrap_or_else(|| live.target.clone());
        let mut account = live.account.summary(trace, &target, names);
        account.stall_seconds = live.stall_seconds.clone();
        account.stalls_not_explained = live.not_explained;
        let partial = trace.lost > 0 || trace.lost_unknown;
        let mut explained = std::mem::take(&mut live.explained);
        if partial {
            for c in explained.iter_mut().filter_map(|e| e.causes.as_mut()) {
                c.partial = true;
            }
        }
        Finished {
            explained,
            not_listed: live.not_listed,
            syscalls_seen: live.syscalls.as_ref().map_or(0, |s| s.seen),
            account,
        }
    }
}

/// Each slow call explained from a whole run's events at once (None where the events it
/// needed were let go), and the run's account with every cause's time summed over them: the
/// reference the streaming analysis is tested against.
#[cfg(test)]
pub fn explain_all(
    trace: &KernelTrace,
    events: &[TimedEvent],
    target: Target,
    calls: &[SlowCall],
    names: &HashMap<i32, String>,
) -> (Vec<Option<StallCauses>>, KernelAccount) {
    let analysis = LiveAnalysis::new(target);
    for (i, call) in calls.iter().enumerate() {
        analysis.hand_over(i as u64, *call, None);
    }
    analysis.sink().events(events, u64::MAX);
    let finished = analysis.finish(trace, None, names);
    let mut causes = vec![None; calls.len()];
    for e in finished.explained {
        if let CallTag::Caller(i) = e.tag {
            if let Some(slot) = causes.get_mut(i as usize) {
                *slot = e.causes;
            }
        }
    }
    (causes, finished.account)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkrate_procparse::trace::TimedEvent;

    fn at(ts_ns: u64, pid: i32, event: KernelEvent) -> TimedEvent {
        TimedEvent {
            ts_ns,
            cpu: 0,
            pid,
            event,
        }
    }

    fn throttle(pause_ms: i64) -> KernelEvent {
        KernelEvent::Throttle {
            bdi: "7:0".into(),
            limit_pages: 1000,
            setpoint_pages: 900,
            dirty_pages: 950,
            wb_setpoint_pages: 90,
            wb_dirty_pages: 95,
            pause_ms,
            paused_ms: 0,
        }
    }

    fn switch(prev_pid: i32, prev_state: i64, next_pid: i32) -> KernelEvent {
        KernelEvent::Switch {
            prev_pid,
            prev_state,
            next_pid,
        }
    }

    /// Running, then paused by the throttle until woken, then waiting for the CPU, then
    /// running again; preempted while running later (a CPU wait), a sleep with nothing
    /// behind it (unexplained): every part booked, adding up to the call.
    #[test]
    fn a_call_is_split_by_what_its_thread_did() {
        let ms = 1_000_000u64;
        let mut account = Account::default();
        for e in [
            at(100 * ms, 5, throttle(200)),
            at(100 * ms, 5, switch(5, 2, 0)),
            at(300 * ms, 0, KernelEvent::Wakeup { pid: 5 }),
            at(350 * ms, 0, switch(0, 0, 5)),
            at(400 * ms, 5, switch(5, 0x100, 9)),
            at(420 * ms, 9, switch(9, 1, 5)),
            at(450 * ms, 5, switch(5, 1, 0)),
            at(480 * ms, 0, switch(0, 0, 5)),
        ] {
            account.add(&e);
        }
        let target = Target {
            page_bytes: 4096,
            ..Default::default()
        };
        let c = account.explain(
            &SlowCall {
                tid: 5,
                start_ns: 50 * ms,
                end_ns: 500 * ms,
            },
            &target,
        );
        let s = &c.seconds;
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(s.throttled_s, 0.200), "{s:?}");
        assert!(close(s.cpu_s, 0.050 + 0.020), "{s:?}");
        assert!(close(s.unexplained_s, 0.030), "{s:?}");
        assert!(close(s.running_s, 0.050 + 0.050 + 0.030 + 0.020), "{s:?}");
        assert!(close(s.total(), 0.450), "{s:?}");
        assert_eq!(c.largest, Some(Cause::Throttled));
        let t = c.throttle.as_ref().expect("evidence");
        assert_eq!((t.pauses, t.wb_dirty_bytes), (1, 95 * 4096));
        assert!(
            c.evidence()
                .starts_with("throttled 0.20 s in balance_dirty_pages"),
            "{}",
            c.evidence()
        );
        // A thread already woken when the call begins waits for the CPU, not the sleep.
        let c = account.explain(
            &SlowCall {
                tid: 5,
                start_ns: 320 * ms,
                end_ns: 350 * ms,
            },
            &target,
        );
        assert!(close(c.seconds.cpu_s, 0.030), "{:?}", c.seconds);
    }

    /// A writer thread on device 7:0 for `seconds`: every 100 ms it writes for 2 ms, issues
    /// a request that the device completes 30 ms later, and sleeps; every 10 s a write is
    /// throttled for 80 ms. Returns the events and the throttled calls.
    fn a_long_recording(seconds: u64) -> (Vec<TimedEvent>, Vec<SlowCall>) {
        let ms = 1_000_000u64;
        let dev = 7 << 20;
        let mut events = Vec::new();
        let mut calls = Vec::new();
        for k in 0..seconds * 10 {
            let t = 1_000 * ms + k * 100 * ms;
            events.push(at(t, 0, switch(0, 0, 5)));
            let issue = KernelEvent::RequestIssue {
                dev,
                sector: k * 8,
                sectors: 8,
                rwbs: "W".into(),
            };
            events.push(at(t + ms, 5, issue));
            if k % 100 == 50 {
                events.push(at(t + 2 * ms, 5, throttle(80)));
                events.push(at(t + 2 * ms, 5, switch(5, 2, 0)));
                events.push(at(t + 82 * ms, 0, KernelEvent::Wakeup { pid: 5 }));
                events.push(at(t + 82 * ms, 0, switch(0, 0, 5)));
                calls.push(SlowCall {
                    tid: 5,
                    start_ns: t,
                    end_ns: t + 83 * ms,
                });
            }
            let complete = KernelEvent::RequestComplete {
                dev,
                sector: k * 8,
                sectors: 8,
                error: 0,
            };
            events.push(at(t + 31 * ms, 0, complete));
            let sleep_at = if k % 100 == 50 {
                t + 83 * ms
            } else {
                t + 2 * ms
            };
            events.push(at(sleep_at, 5, switch(5, 1, 0)));
        }
        events.sort_by_key(|e| e.ts_ns);
        (events, calls)
    }

    /// Hours of events fed as the reader hands them over, each call handed over as it ends:
    /// every call explained as the whole run explains it, the account the same, and never
    /// more than a minute and a half of events kept.
    #[test]
    fn a_long_run_is_explained_while_it_goes_on_and_keeps_a_window_of_events() {
        let (events, calls) = a_long_recording(2 * 3600);
        let target = Target {
            disk: Some(7 << 20),
            page_bytes: 4096,
            ..Default::default()
        };
        let trace = KernelTrace::default();
        let names = HashMap::new();
        let (whole, whole_account) = explain_all(&trace, &events, target.clone(), &calls, &names);
        let live = LiveAnalysis::new(target);
        let mut sink = live.sink();
        let mut handed = 0;
        let mut peak = 0;
        // Batches of 100 ms, settled at the start of the one before, as the reader does.
        let mut from = 0;
        let mut settled = 0;
        let batch_ns = 100_000_000;
        let mut until = events[0].ts_ns;
        while from < events.len() {
            until += batch_ns;
            let to = events.partition_point(|e| e.ts_ns < until);
            while handed < calls.len() && calls[handed].end_ns < until {
                live.hand_over(handed as u64, calls[handed], None);
                handed += 1;
            }
            sink.events(&events[from..to], settled);
            peak = peak.max(live.lock().account.kept());
            settled = until - batch_ns;
            from = to;
        }
        sink.events(&[], u64::MAX);
        let finished = live.finish(&trace, None, &names);
        assert_eq!(finished.explained.len(), calls.len());
        for e in &finished.explained {
            let CallTag::Caller(i) = e.tag else {
                panic!("a caller's tag")
            };
            assert_eq!(e.causes, whole[i as usize], "call {i}");
        }
        let c = finished.explained[3].causes.as_ref().expect("explained");
        assert_eq!(c.largest, Some(Cause::Throttled), "{c:?}");
        assert!(c.device.is_some(), "{c:?}");
        assert_eq!(finished.account.events, whole_account.events);
        assert_eq!(finished.account.device_requests, 72_000);
        assert_eq!(
            finished.account.device_service_p99_ms,
            whole_account.device_service_p99_ms
        );
        assert_eq!(finished.account.stall_seconds, whole_account.stall_seconds);
        assert_eq!(finished.account.stalls_not_explained, 0);
        // 60 s behind, plus the 2 s a call waits for its requests, at about 50 events a
        // second: some 3,100 events, of 360,000.
        assert!(peak < 4_000, "kept at most {peak} events");
    }

    /// Threads that ended (each a few events, long ago) are let go, not kept forever for
    /// their last switch onto a CPU.
    #[test]
    fn threads_that_ended_long_ago_are_let_go() {
        let ms = 1_000_000u64;
        let live = LiveAnalysis::new(Target::default());
        let mut sink = live.sink();
        // A thread a second for 10 minutes, each running 10 ms and ending.
        for k in 0..600u64 {
            let t = 1_000 * ms + k * 1_000 * ms;
            let tid = 1_000 + k as i32;
            sink.events(
                &[
                    at(t, 0, switch(0, 0, tid)),
                    at(t + 10 * ms, tid, switch(tid, 0x10, 0)),
                ],
                t,
            );
        }
        let threads = live.lock().account.threads.len();
        assert!(threads <= 130, "{threads} threads kept");
    }

    /// More events than may be kept in the window: the oldest go sooner, a call that
    /// began before them is counted as not explained, and what is kept stays bounded.
    #[test]
    fn too_many_events_let_the_oldest_go_and_say_which_calls_lost_theirs() {
        let ms = 1_000_000u64;
        let live = LiveAnalysis::new(Target::default());
        let mut sink = live.sink();
        // A call of 30 s, handed over when it ends, behind 3,000 switches a second.
        let long = SlowCall {
            tid: 5,
            start_ns: 1_000 * ms,
            end_ns: 31_000 * ms,
        };
        let mut t = 1_000 * ms;
        let mut peak = 0;
        while t < 40_000 * ms {
            let batch: Vec<TimedEvent> = (0..300)
                .map(|i| at(t + i * ms / 3, 0, switch(9, 1, 9 + (i % 7) as i32)))
                .collect();
            sink.events(&batch, t);
            if t == 31_000 * ms {
                live.hand_over(0, long, None);
            }
            peak = peak.max(live.lock().account.kept());
            t += 100 * ms;
        }
        let finished = live.finish(&KernelTrace::default(), None, &HashMap::new());
        assert!(peak <= MAX_KEPT + 600, "kept {peak}");
        assert_eq!(finished.explained.len(), 1);
        assert!(finished.explained[0].causes.is_none());
        assert_eq!(finished.account.stalls_not_explained, 1);
        assert!(finished.account.events_not_kept > 0);
    }

    /// Another program's traced write calls are paired enter to exit per thread, and the
    /// slow ones found and explained without being handed over.
    #[test]
    fn slow_traced_calls_are_found_in_the_stream() {
        let ms = 1_000_000u64;
        let live = LiveAnalysis::watching_syscalls(Target::default(), 100 * ms, vec![99]);
        let mut sink = live.sink();
        let events = vec![
            at(10 * ms, 7, KernelEvent::SyscallEnter { nr: 1 }),
            at(11 * ms, 7, KernelEvent::SyscallExit { nr: 1, ret: 4096 }),
            at(20 * ms, 7, KernelEvent::SyscallEnter { nr: 1 }),
            at(20 * ms, 7, switch(7, 2, 0)),
            at(270 * ms, 0, KernelEvent::Wakeup { pid: 7 }),
            at(270 * ms, 0, switch(0, 0, 7)),
            at(271 * ms, 7, KernelEvent::SyscallExit { nr: 1, ret: 4096 }),
            // The watch's own thread, however slow, is not the program's.
            at(300 * ms, 99, KernelEvent::SyscallEnter { nr: 1 }),
            at(900 * ms, 99, KernelEvent::SyscallExit { nr: 1, ret: 1 }),
        ];
        sink.events(&events, u64::MAX);
        let finished = live.finish(&KernelTrace::default(), None, &HashMap::new());
        assert_eq!(finished.syscalls_seen, 2);
        assert_eq!(finished.explained.len(), 1);
        let e = &finished.explained[0];
        assert_eq!(e.tag, CallTag::Syscall(1));
        assert_eq!((e.call.start_ns, e.call.end_ns), (20 * ms, 271 * ms));
        let c = e.causes.as_ref().expect("explained");
        assert!((c.seconds.unexplained_s - 0.250).abs() < 1e-9, "{c:?}");
    }
}
