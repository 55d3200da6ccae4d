//! Each stalled call's time split by cause, from the kernel's events (`sinkrate_sys::tracefs`).
//! Pure: events and stalls in, the breakdown and the run's account out.
//!
//! A thread's time inside a call is walked through its scheduler events: on the CPU
//! (running), switched out while runnable or woken and not yet running (waiting for a
//! CPU), or asleep. An asleep stretch takes its cause from the event the thread emitted just
//! before it slept (a balance_dirty_pages pause: throttled; folio_wait_writeback: waiting for
//! writeback); without one, from what the target was doing meanwhile (a journal commit
//! covering most of it: the journal; requests in flight: the device); else unexplained.

use std::collections::{BTreeMap, HashMap};

use sinkrate_model::causes::{
    Cause, CauseSeconds, CommitEvidence, DeviceEvidence, FlushCount, KernelAccount, StallCauses,
    ThreadThrottle, ThrottleEvidence,
};
use sinkrate_procparse::trace::{dev_name, KernelEvent};
use sinkrate_sys::tracefs::KernelTrace;

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

/// The run's events, indexed for the questions asked per stall.
pub struct Account<'a> {
    trace: &'a KernelTrace,
    target: Target,
    /// Per thread: indexes into the trace's events that concern it, in time order.
    by_thread: HashMap<i32, Vec<usize>>,
    requests: Vec<Request>,
    commits: Vec<Commit>,
}

impl<'a> Account<'a> {
    pub fn new(trace: &'a KernelTrace, target: Target) -> Self {
        let mut by_thread: HashMap<i32, Vec<usize>> = HashMap::new();
        let mut issued: HashMap<(u32, u64), Vec<(u64, u64)>> = HashMap::new();
        let mut requests = Vec::new();
        let mut open_commits: HashMap<(u32, u32), usize> = HashMap::new();
        let mut commits: Vec<Commit> = Vec::new();
        for (i, e) in trace.events.iter().enumerate() {
            match &e.event {
                KernelEvent::Switch {
                    prev_pid, next_pid, ..
                } => {
                    by_thread.entry(*prev_pid).or_default().push(i);
                    if next_pid != prev_pid {
                        by_thread.entry(*next_pid).or_default().push(i);
                    }
                }
                KernelEvent::Wakeup { pid } => by_thread.entry(*pid).or_default().push(i),
                KernelEvent::Throttle { .. } | KernelEvent::WritebackWait { .. } => {
                    by_thread.entry(e.pid).or_default().push(i)
                }
                KernelEvent::RequestIssue {
                    dev,
                    sector,
                    sectors,
                    ..
                } if Some(*dev) == target.disk => {
                    // A sector has one request in flight: a second issue is the first
                    // requeued. Flushes (no sectors) queue up under their own key.
                    let key = if *sectors == 0 { FLUSH } else { *sector };
                    let waiting = issued.entry((*dev, key)).or_default();
                    if *sectors > 0 {
                        waiting.clear();
                    }
                    waiting.push((e.ts_ns, u64::from(*sectors) * 512));
                }
                // A flush completes at sector -1; the empty completion that follows a
                // write with a pre-flush (0 sectors at 0) ends no request of its own.
                KernelEvent::RequestComplete {
                    dev,
                    sector,
                    sectors,
                    ..
                } if Some(*dev) == target.disk && (*sectors > 0 || *sector == FLUSH) => {
                    if let Some(waiting) = issued.get_mut(&(*dev, *sector)) {
                        if !waiting.is_empty() {
                            let (issue, bytes) = waiting.remove(0);
                            requests.push(Request {
                                issue,
                                complete: Some(e.ts_ns),
                                bytes,
                            });
                        }
                    }
                }
                KernelEvent::CommitStart { dev, transaction } if Some(*dev) == target.fs_dev => {
                    open_commits.insert((*dev, *transaction), commits.len());
                    commits.push(Commit {
                        transaction: *transaction,
                        start: e.ts_ns,
                        end: None,
                        blocks: None,
                    });
                }
                KernelEvent::CommitEnd { dev, transaction } if Some(*dev) == target.fs_dev => {
                    if let Some(&c) = open_commits.get(&(*dev, *transaction)) {
                        commits[c].end = Some(e.ts_ns);
                    }
                }
                KernelEvent::CommitStats {
                    dev,
                    transaction,
                    blocks,
                    ..
                } if Some(*dev) == target.fs_dev => {
                    if let Some(&c) = open_commits.get(&(*dev, *transaction)) {
                        commits[c].blocks = Some(*blocks);
                    }
                }
                _ => {}
            }
        }
        // Requests the run ended before the device completed.
        for ((_, _), waiting) in issued {
            for (issue, bytes) in waiting {
                requests.push(Request {
                    issue,
                    complete: None,
                    bytes,
                });
            }
        }
        requests.sort_by_key(|r| r.issue);
        Account {
            trace,
            target,
            by_thread,
            requests,
            commits,
        }
    }

    fn bytes(&self, pages: u64) -> u64 {
        pages.saturating_mul(self.target.page_bytes.max(1))
    }

    /// The call's time by cause, with the evidence for what it waited on.
    pub fn explain(&self, call: &SlowCall) -> StallCauses {
        let (a, b) = (call.start_ns, call.end_ns.max(call.start_ns));
        let mut out = StallCauses {
            partial: self.trace.lost > 0 || self.trace.lost_unknown,
            ..Default::default()
        };
        let empty = Vec::new();
        let mine = self.by_thread.get(&call.tid).unwrap_or(&empty);
        let events = &self.trace.events;
        // Where the thread was at the call's start: its last scheduler event before it.
        let first_inside = mine.partition_point(|&i| events[i].ts_ns < a);
        let mut state = State::Running;
        let mut marker: Option<Cause> = None;
        let mut saw_scheduler = false;
        // Woken after its last switch but not yet running: waiting for a CPU at the start.
        let mut woken = false;
        for &i in mine[..first_inside].iter().rev() {
            match events[i].event {
                KernelEvent::Wakeup { .. } => woken = true,
                KernelEvent::Switch {
                    prev_pid,
                    prev_state,
                    ..
                } => {
                    saw_scheduler = true;
                    state = if prev_pid == call.tid {
                        if runnable(prev_state) || woken {
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
            for &i in mine[..first_inside].iter().rev() {
                match &events[i].event {
                    KernelEvent::Throttle { pause_ms, .. } if *pause_ms > 0 => {
                        state = State::Asleep(Some(Cause::Throttled));
                        break;
                    }
                    KernelEvent::WritebackWait { .. } => {
                        state = State::Asleep(Some(Cause::WritebackWait));
                        break;
                    }
                    KernelEvent::Switch { .. } => {}
                    _ => {}
                }
                if matches!(events[i].event, KernelEvent::Switch { next_pid, .. } if next_pid == call.tid)
                {
                    break;
                }
            }
        }
        let mut since = a;
        let mut throttle = ThrottleEvidence::default();
        let mut longest_pause = -1i64;
        let mut journal_at: Option<(f64, usize)> = None;
        let mut close = |state: State, from: u64, to: u64, out: &mut StallCauses| {
            self.part(state, from, to, out, &mut journal_at)
        };
        for &i in &mine[first_inside..] {
            let e = &events[i];
            if e.ts_ns > b {
                break;
            }
            match &e.event {
                KernelEvent::Switch {
                    prev_pid,
                    prev_state,
                    next_pid,
                } => {
                    saw_scheduler = true;
                    if *prev_pid == call.tid && *next_pid != call.tid {
                        close(state, since, e.ts_ns, &mut out);
                        since = e.ts_ns;
                        state = if runnable(*prev_state) {
                            State::Runnable
                        } else {
                            State::Asleep(marker.take())
                        };
                    } else if *next_pid == call.tid {
                        close(state, since, e.ts_ns, &mut out);
                        since = e.ts_ns;
                        state = State::Running;
                        marker = None;
                    }
                }
                KernelEvent::Wakeup { .. } => {
                    if let State::Asleep(_) = state {
                        close(state, since, e.ts_ns, &mut out);
                        since = e.ts_ns;
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
                        throttle.dirty_bytes = self.bytes(*dirty_pages);
                        throttle.setpoint_bytes = self.bytes(*setpoint_pages);
                        throttle.limit_bytes = self.bytes(*limit_pages);
                        throttle.wb_dirty_bytes = self.bytes(*wb_dirty_pages);
                        throttle.wb_setpoint_bytes = self.bytes(*wb_setpoint_pages);
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
            let c = &self.commits[c];
            out.journal = Some(CommitEvidence {
                dev: self.target.fs_dev.map(dev_name).unwrap_or_default(),
                transaction: c.transaction,
                took_ms: c.end.map(|e| e.saturating_sub(c.start) as f64 / 1e6),
                blocks: c.blocks,
            });
        }
        let (requests, bytes, longest) = self.requests_over(a, b);
        if requests > 0 {
            out.device = Some(DeviceEvidence {
                dev: self.target.disk.map(dev_name).unwrap_or_default(),
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
        out: &mut StallCauses,
        journal_at: &mut Option<(f64, usize)>,
    ) {
        if to <= from {
            return;
        }
        let s = (to - from) as f64 / 1e9;
        let cause = match state {
            State::Running => Cause::Running,
            State::Runnable => Cause::Cpu,
            State::Asleep(Some(c)) => c,
            State::Asleep(None) => match self.commit_over(from, to) {
                Some(c) => {
                    if journal_at.is_none_or(|(longest, _)| s > longest) {
                        *journal_at = Some((s, c));
                    }
                    Cause::Journal
                }
                None if self.requests_over(from, to).0 > 0 => Cause::Device,
                None => Cause::Unexplained,
            },
        };
        out.seconds.add(cause, s);
    }

    /// The journal commit that covers most of [from, to], if one covers at least half.
    fn commit_over(&self, from: u64, to: u64) -> Option<usize> {
        let span = to - from;
        self.commits
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let end = c.end.unwrap_or(u64::MAX);
                (i, end.min(to).saturating_sub(c.start.max(from)))
            })
            .filter(|(_, overlap)| *overlap * 2 >= span)
            .max_by_key(|(_, overlap)| *overlap)
            .map(|(i, _)| i)
    }

    /// Requests in flight on the target at some point in [from, to]: how many, their bytes,
    /// and the longest service time with that request's size.
    fn requests_over(&self, from: u64, to: u64) -> (u64, u64, Option<(u64, u64)>) {
        let upto = self.requests.partition_point(|r| r.issue <= to);
        let mut n = 0;
        let mut bytes = 0;
        let mut longest: Option<(u64, u64)> = None;
        for r in &self.requests[..upto] {
            let end = r.complete.unwrap_or(u64::MAX);
            if end < from {
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

    /// The run's account: throttling per thread, journal commits, the device's service
    /// times, the flusher's work; `stall_seconds` is left for the caller to sum.
    pub fn summary(&self, names: &HashMap<i32, String>) -> KernelAccount {
        let mut throttles: BTreeMap<i32, (u64, f64)> = BTreeMap::new();
        let mut flushes: BTreeMap<String, u64> = BTreeMap::new();
        for e in &self.trace.events {
            match &e.event {
                KernelEvent::Throttle { pause_ms, .. } if *pause_ms > 0 => {
                    let t = throttles.entry(e.pid).or_default();
                    t.0 += 1;
                    t.1 += *pause_ms as f64 / 1e3;
                }
                KernelEvent::FlushStart { bdi, reason } if self.is_target(bdi) => {
                    *flushes.entry(reason.clone()).or_default() += 1;
                }
                _ => {}
            }
        }
        let mut service: Vec<u64> = self
            .requests
            .iter()
            .filter_map(|r| r.complete.map(|c| c.saturating_sub(r.issue)))
            .collect();
        service.sort_unstable();
        let pick = |p: f64| -> Option<f64> {
            if service.is_empty() {
                return None;
            }
            // Nearest rank, as trace-cmd users compute it from the same list.
            let rank = ((p * service.len() as f64).ceil() as usize).clamp(1, service.len());
            Some(service[rank - 1] as f64 / 1e6)
        };
        let finished: Vec<f64> = self
            .commits
            .iter()
            .filter_map(|c| c.end.map(|e| e.saturating_sub(c.start) as f64 / 1e6))
            .collect();
        KernelAccount {
            inferred_because: None,
            source: self.trace.source.clone(),
            traced_mono_ns: Some([self.trace.window_ns.0, self.trace.window_ns.1]),
            events: self.trace.events.len() as u64,
            lost_events: self.trace.lost,
            lost_unknown: self.trace.lost_unknown,
            events_not_kept: self.trace.not_kept,
            stalls_not_explained: 0,
            reader_cpu_s: self.trace.reader_cpu_s,
            missing: self.trace.missing.clone(),
            throttled_threads: throttles
                .into_iter()
                .map(|(tid, (pauses, pause_s))| ThreadThrottle {
                    tid,
                    name: names
                        .get(&tid)
                        .cloned()
                        .unwrap_or_else(|| format!("thread {tid}")),
                    pauses,
                    pause_s,
                })
                .collect(),
            journal_commits: self.commits.len() as u64,
            journal_commit_max_ms: finished.iter().copied().reduce(f64::max),
            device_requests: self.requests.len() as u64,
            device_service_p50_ms: pick(0.50),
            device_service_p99_ms: pick(0.99),
            device_service_max_ms: service.last().map(|ns| *ns as f64 / 1e6),
            flushes: flushes
                .into_iter()
                .map(|(reason, count)| FlushCount { reason, count })
                .collect(),
            stall_seconds: CauseSeconds::default(),
        }
    }

    fn is_target(&self, bdi: &str) -> bool {
        self.target.bdi.as_deref().is_none_or(|t| t == bdi)
    }
}

/// Each slow call explained (None past the events kept: no breakdown rather than a wrong
/// one), and the run's account with every cause's time summed over them.
pub fn explain_all(
    trace: &KernelTrace,
    target: Target,
    calls: &[SlowCall],
    names: &HashMap<i32, String>,
) -> (Vec<Option<StallCauses>>, KernelAccount) {
    let account = Account::new(trace, target);
    let mut total = CauseSeconds::default();
    let mut not_explained = 0;
    let causes = calls
        .iter()
        .map(|call| {
            if trace.kept_until_ns.is_some_and(|t| call.end_ns >= t) {
                not_explained += 1;
                return None;
            }
            let causes = account.explain(call);
            for c in Cause::ALL {
                total.add(c, causes.seconds.get(c));
            }
            Some(causes)
        })
        .collect();
    let mut summary = account.summary(names);
    summary.stall_seconds = total;
    summary.stalls_not_explained = not_explained;
    (causes, summary)
}

/// A system call as the kernel's raw_syscalls events saw it: its thread, number and times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedCall {
    pub tid: i32,
    pub nr: i64,
    pub enter_ns: u64,
    pub exit_ns: u64,
}

/// The traced calls of the threads not in `ignore` (the watch's own), paired enter to exit
/// per thread; a call still running at the end, or whose exit was lost, is left out.
pub fn traced_calls(trace: &KernelTrace, ignore: &[i32]) -> Vec<TracedCall> {
    let mut open: HashMap<i32, (i64, u64)> = HashMap::new();
    let mut out = Vec::new();
    for e in &trace.events {
        if ignore.contains(&e.pid) {
            continue;
        }
        match e.event {
            KernelEvent::SyscallEnter { nr } => {
                open.insert(e.pid, (nr, e.ts_ns));
            }
            KernelEvent::SyscallExit { nr, .. } => {
                if let Some((entered, at)) = open.remove(&e.pid) {
                    if entered == nr {
                        out.push(TracedCall {
                            tid: e.pid,
                            nr,
                            enter_ns: at,
                            exit_ns: e.ts_ns,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    out
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
        let trace = KernelTrace {
            events: vec![
                at(100 * ms, 5, throttle(200)),
                at(100 * ms, 5, switch(5, 2, 0)),
                at(300 * ms, 0, KernelEvent::Wakeup { pid: 5 }),
                at(350 * ms, 0, switch(0, 0, 5)),
                at(400 * ms, 5, switch(5, 0x100, 9)),
                at(420 * ms, 9, switch(9, 1, 5)),
                at(450 * ms, 5, switch(5, 1, 0)),
                at(480 * ms, 0, switch(0, 0, 5)),
            ],
            ..Default::default()
        };
        let account = Account::new(
            &trace,
            Target {
                page_bytes: 4096,
                ..Default::default()
            },
        );
        let c = account.explain(&SlowCall {
            tid: 5,
            start_ns: 50 * ms,
            end_ns: 500 * ms,
        });
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
        let c = account.explain(&SlowCall {
            tid: 5,
            start_ns: 320 * ms,
            end_ns: 350 * ms,
        });
        assert!(close(c.seconds.cpu_s, 0.030), "{:?}", c.seconds);
    }
}
