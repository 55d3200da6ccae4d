//! `sinkrate watch` as a library session: samples every interval until a duration, Ctrl-C,
//! the watched command's exit, the watched processes' end, or the observer asks to quit;
//! notes changes to the vm settings; returns the typed report. What is shown while it runs
//! (a live line, a CSV, a Prometheus file, a full-screen view) is the observer's business.

use std::process::{Child, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::live::{read_vm_settings, SamplerCore};
use crate::timeline::Timeline;
use crate::{analyse, SamplerConfig};
use sinkrate_model::causes::KernelAccount;
use sinkrate_model::timeline::Sample;
use sinkrate_model::watch::{SettingsChange, SlowCall, WatchConfig, WatchReport};
#[cfg(target_os = "linux")]
use sinkrate_sys::tracefs::{self, TraceRequest, TraceSession};

#[cfg(target_os = "linux")]
use crate::causes::{CallTag, LiveAnalysis, Target};

/// Elsewhere the kernel's trace events are not read.
#[cfg(not(target_os = "linux"))]
struct Tracing;

#[cfg(not(target_os = "linux"))]
fn start_tracing(_cfg: &WatchConfig) -> Result<Tracing, String> {
    Err("the kernel's trace events are read on Linux only".into())
}

#[cfg(not(target_os = "linux"))]
fn explain_calls(
    tracing: Result<Tracing, String>,
    _cfg: &WatchConfig,
    _started: Instant,
    _watched: &[u32],
) -> TracedCalls {
    TracedCalls::inferred(tracing.err().unwrap_or_default())
}

/// The shortest interval watch samples at.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// The longest a sleep lasts before the stop flag and the watched command are checked again.
const WAKE_EVERY: Duration = Duration::from_millis(50);

/// What a running watch shows; each call may end the watch by returning `Ok(false)`.
pub trait WatchObserver {
    type Error: std::fmt::Display;
    fn started(&mut self, devices: &[String], notes: &[String]) -> Result<(), Self::Error>;
    /// A new sample, with everything sampled so far (the last is `sample`).
    fn sample(&mut self, view: &View<'_>) -> Result<bool, Self::Error>;
    fn settings_changed(&mut self, change: &SettingsChange);
}

/// What an observer sees at each sample.
pub struct View<'a> {
    pub timeline: &'a [Sample],
    pub elapsed: Duration,
    pub throttled_seconds: f64,
    pub top_hog: Option<&'a (String, f64)>,
    pub core: &'a SamplerCore,
}

#[derive(Debug, thiserror::Error)]
pub enum WatchError<E> {
    #[error("{0}: cannot run it: {1}")]
    Spawn(String, std::io::Error),
    #[error("{0}")]
    Observer(E),
}

/// Whether every pid names a running process; the first that does not, if any.
pub fn first_not_running(pids: &[u32]) -> Option<u32> {
    pids.iter()
        .copied()
        .find(|p| !sinkrate_sys::process::alive(*p))
}

/// The first pid that belongs to another user, with that user's uid, when this run is not
/// root: its I/O counters and its calls are not ours to read (the kernel refuses
/// /proc/PID/io and tracing to another user), so watching it would show nothing of it.
pub fn first_not_ours(pids: &[u32]) -> Option<(u32, u32)> {
    if sinkrate_sys::is_root() {
        return None;
    }
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    // The kernel lets a user read another process's counters only when its real,
    // effective and saved uids are the user's.
    pids.iter().find_map(|&pid| {
        let uid = sinkrate_sys::process::uids(pid)?
            .into_iter()
            .find(|u| *u != me)?;
        Some((pid, uid))
    })
}

fn exit_code(s: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

/// Sleeps until `until`, waking every [`WAKE_EVERY`] to look at `stop`; false if stopped.
fn sleep_until(until: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        std::thread::sleep((until - now).min(WAKE_EVERY));
    }
}

pub fn run<O: WatchObserver>(
    cfg: &WatchConfig,
    stop: &AtomicBool,
    observer: &mut O,
) -> Result<WatchReport, WatchError<O::Error>> {
    let mut core = SamplerCore::new(&SamplerConfig {
        interval: cfg.interval,
        devices: cfg.devices.clone(),
        hogs: true,
        ..SamplerConfig::default()
    });
    // Started before the command, on this thread: the command it forks is followed.
    let tracing = start_tracing(cfg);
    let mut child: Option<Child> = match cfg.command.split_first() {
        Some((program, rest)) => Some(
            std::process::Command::new(program)
                .args(rest)
                .spawn()
                .map_err(|e| WatchError::Spawn(program.clone(), e))?,
        ),
        None => None,
    };
    if let Some(c) = &child {
        // A second Ctrl-C stops it too, and names it.
        sinkrate_sys::children::started(c.id(), &cfg.command.join(" "));
    }
    observer
        .started(core.devices(), &core.notes)
        .map_err(WatchError::Observer)?;
    let mut settings = read_vm_settings();
    let mut settings_checked = Instant::now();
    let mut changes = Vec::new();
    let expected_samples = cfg
        .duration
        .map(|d| (d.as_nanos() / cfg.interval.as_nanos().max(1)) as usize + 16)
        .unwrap_or(4096);
    // A watch with no end (a service, or until a command or process ends) keeps a soak's
    // budget: its memory is flat after the first hour however many weeks it runs.
    let mut timeline = Timeline::for_run(
        core.mem_total_bytes(),
        expected_samples,
        cfg.duration.unwrap_or(crate::timeline::SOAK_FROM),
    );
    let started = Instant::now();
    let deadline = cfg.duration.map(|d| started + d);
    let mut throttled_s = 0.0;
    let mut status: Option<ExitStatus> = None;
    let mut failure: Option<String> = None;
    let mut k: u32 = 0;
    // False once the observer has failed: the watch then only waits for the watched
    // command, which is never stopped or signalled for sinkrate's own failure.
    let mut observing = true;
    loop {
        if !observing {
            match child.as_mut().map(|c| c.try_wait()) {
                Some(Ok(None)) if !stop.load(Ordering::Relaxed) => {
                    sleep_until(Instant::now() + WAKE_EVERY, stop);
                    continue;
                }
                Some(Ok(Some(st))) => status = Some(st),
                _ => {}
            }
            break;
        }
        let s = core.sample();
        if s.throttled {
            if let Some(prev) = timeline.last() {
                throttled_s += s.t_ns.saturating_sub(prev.t_ns) as f64 / 1e9;
            }
        }
        // The sysctls rarely change; a read a second notices when someone tunes them.
        if settings_checked.elapsed() >= Duration::from_secs(1) {
            let now = read_vm_settings();
            if now != settings {
                let change = SettingsChange {
                    t_ns: s.t_ns,
                    from: settings,
                    to: now,
                };
                observer.settings_changed(&change);
                changes.push(change);
                settings = now;
            }
            settings_checked = Instant::now();
        }
        timeline.push(s);
        let go_on = match observer.sample(&View {
            timeline: timeline.samples(),
            elapsed: started.elapsed(),
            throttled_seconds: throttled_s,
            top_hog: core.top_hog.as_ref(),
            core: &core,
        }) {
            Ok(go_on) => go_on,
            // The watch ends; what it saw until now is still the result, and a watched
            // command runs on to its own end.
            Err(e) => {
                failure = Some(format!("{e:#}"));
                observing = false;
                continue;
            }
        };
        if let Some(c) = child.as_mut() {
            if let Ok(Some(st)) = c.try_wait() {
                status = Some(st);
                break;
            }
        }
        if !go_on || stop.load(Ordering::Relaxed) {
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if !cfg.pids.is_empty() && cfg.pids.iter().all(|p| !sinkrate_sys::process::alive(*p)) {
            break;
        }
        k += 1;
        // The next sample is due on an absolute schedule, but never after the deadline:
        // an interval longer than the duration still ends the watch on time.
        let next = started + cfg.interval * k;
        let wake = deadline.map_or(next, |d| next.min(d));
        if !sleep_until(wake, stop) {
            // Ctrl-C: one last sample so the summary covers up to the stop.
            timeline.push(core.sample());
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) && wake < next {
            timeline.push(core.sample());
            break;
        }
    }
    if let (Some(c), None) = (child.as_mut(), status) {
        // Interrupted: pass the interrupt on, then wait for the command to finish.
        // SAFETY: signalling the child this process started.
        unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
        status = c.wait().ok();
    }
    if let Some(c) = &child {
        sinkrate_sys::children::ended(c.id());
    }
    let summary = analyse(timeline.samples(), settings);
    let mut config = cfg.clone();
    config.devices = core.devices().to_vec();
    let mut notes = core.notes.clone();
    notes.extend(timeline.note());
    let watched: Vec<u32> = cfg
        .pids
        .iter()
        .copied()
        .chain(child.as_ref().map(|c| c.id()))
        .collect();
    let traced = explain_calls(tracing, cfg, started, &watched);
    Ok(WatchReport {
        config,
        command_exit_code: status.map(exit_code),
        command_signal: status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s)),
        failure,
        notes,
        vm_settings_changes: changes,
        summary,
        hogs: core.top_hogs(10),
        timeline: timeline.into_samples(),
        slow_calls: traced.slow,
        slow_calls_not_listed: traced.not_listed,
        write_calls: traced.write_calls,
        kernel: traced.kernel,
    })
}

/// The watched program's traced write calls: the slow ones explained, how many more were
/// slow than listed, how many there were, and the kernel's account.
struct TracedCalls {
    slow: Vec<SlowCall>,
    not_listed: u64,
    write_calls: u64,
    kernel: KernelAccount,
}

impl TracedCalls {
    fn inferred(why: String) -> TracedCalls {
        TracedCalls {
            slow: Vec::new(),
            not_listed: 0,
            write_calls: 0,
            kernel: KernelAccount::inferred(why),
        }
    }
}

#[cfg(target_os = "linux")]
/// A watch's tracing: the session and the analysis its events stream into.
struct Tracing {
    session: TraceSession,
    analysis: LiveAnalysis,
}

#[cfg(target_os = "linux")]
/// The device the watch explains stalls against, as trace events number it: the one
/// `--device` given.
fn watched_device(cfg: &WatchConfig) -> Option<(u32, u32)> {
    match cfg.devices.as_slice() {
        [one] => tracefs::block_dev_numbers(one),
        _ => None,
    }
}

#[cfg(target_os = "linux")]
/// The kernel's events of the watched program's threads (their write calls, pauses, waits
/// and scheduling) and of the watched device, explained as they come (a watch of days
/// keeps a minute of events); why not, when they cannot be read or nothing is watched.
fn start_tracing(cfg: &WatchConfig) -> Result<Tracing, String> {
    if let Some(why) = &cfg.kernel_events_off {
        return Err(why.clone());
    }
    let threads: Vec<i32> = if cfg.command.is_empty() {
        cfg.pids
            .iter()
            .flat_map(|p| tracefs::threads_of(*p))
            .collect()
    } else {
        vec![sinkrate_platform::cpu::thread_id()]
    };
    if threads.is_empty() {
        return Err("no program is watched (--pid or a command)".into());
    }
    let device = watched_device(cfg);
    let kernel = device.map(|(ma, mi)| sinkrate_procparse::trace::kernel_dev(ma, mi));
    let target = Target {
        disk: kernel,
        fs_dev: kernel,
        bdi: kernel.map(sinkrate_procparse::trace::dev_name),
        page_bytes: sinkrate_sys::page_size(),
    };
    // The watch's own thread (it writes the CSV and the metrics) is not the program's.
    let analysis = LiveAnalysis::watching_syscalls(
        target,
        cfg.stall_threshold.as_nanos() as u64,
        vec![sinkrate_platform::cpu::thread_id()],
    );
    let session = TraceSession::start(
        &TraceRequest {
            threads,
            disk: device,
            fs_dev: device,
            syscalls: tracefs::write_syscalls().iter().map(|(n, _)| *n).collect(),
            all_devices: false,
        },
        analysis.sink(),
    )?;
    Ok(Tracing { session, analysis })
}

#[cfg(target_os = "linux")]
/// The watched program's write calls slower than the threshold, each explained; how many
/// write calls were seen; the kernel's account.
fn explain_calls(
    tracing: Result<Tracing, String>,
    _cfg: &WatchConfig,
    started: Instant,
    watched: &[u32],
) -> TracedCalls {
    let Tracing { session, analysis } = match tracing {
        Ok(t) => t,
        Err(why) => return TracedCalls::inferred(why),
    };
    let started_ns = sinkrate_platform::cpu::monotonic_ns_of(started);
    let trace = session.finish();
    let names = tracefs::write_syscalls();
    let owner = |tid: i32| -> (u32, String) {
        for pid in watched {
            if let Some(name) = tracefs::thread_name(*pid, tid) {
                return (*pid, name);
            }
        }
        (
            watched.first().copied().unwrap_or(0),
            format!("thread {tid}"),
        )
    };
    // Threads are named once the analysis has found which made slow calls.
    let finished = analysis.finish(&trace, None, &std::collections::HashMap::new());
    let owners: std::collections::HashMap<i32, (u32, String)> = finished
        .explained
        .iter()
        .map(|e| (e.call.tid, owner(e.call.tid)))
        .collect();
    let mut kernel = finished.account;
    for t in &mut kernel.throttled_threads {
        if let Some((_, name)) = owners.get(&t.tid) {
            t.name = name.clone();
        }
    }
    let slow = finished
        .explained
        .into_iter()
        .filter_map(|e| {
            let (pid, thread) = owners.get(&e.call.tid).cloned().unwrap_or_default();
            let nr = match e.tag {
                CallTag::Syscall(nr) => nr,
                CallTag::Caller(_) => return None,
            };
            Some(SlowCall {
                pid,
                tid: e.call.tid,
                thread,
                call: names
                    .iter()
                    .find(|(n, _)| *n == nr)
                    .map_or_else(|| format!("syscall {nr}"), |(_, name)| name.to_string()),
                file: None,
                at_s: e.call.start_ns.saturating_sub(started_ns) as f64 / 1e9,
                duration_ms: e.call.end_ns.saturating_sub(e.call.start_ns) as f64 / 1e6,
                causes: e.causes?,
            })
        })
        .collect();
    TracedCalls {
        slow,
        not_listed: finished.not_listed,
        write_calls: finished.syscalls_seen,
        kernel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Count(usize);

    impl WatchObserver for Count {
        type Error = String;
        fn started(&mut self, _: &[String], _: &[String]) -> Result<(), String> {
            Ok(())
        }
        fn sample(&mut self, _: &View<'_>) -> Result<bool, String> {
            self.0 += 1;
            Ok(true)
        }
        fn settings_changed(&mut self, _: &SettingsChange) {}
    }

    #[test]
    fn a_long_interval_still_ends_at_the_duration() {
        let cfg = WatchConfig {
            interval: Duration::from_secs(3600),
            duration: Some(Duration::from_millis(300)),
            devices: Vec::new(),
            pids: Vec::new(),
            command: Vec::new(),
            stall_threshold: Duration::from_millis(100),
            kernel_events_off: None,
        };
        let t0 = Instant::now();
        let r = run(&cfg, &AtomicBool::new(false), &mut Count(0)).expect("runs");
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        assert_eq!(r.timeline.len(), 2);
        let json = serde_json::to_string(&r).expect("serialize");
        assert!(json.contains("\"interval_ns\":3600000000000"), "{json}");
        let back: WatchReport = serde_json::from_str(&json).expect("read back");
        assert_eq!(back, r);
    }

    #[test]
    fn a_stop_ends_the_sleep_at_once() {
        let cfg = WatchConfig {
            interval: Duration::from_secs(3600),
            duration: None,
            devices: Vec::new(),
            pids: Vec::new(),
            command: Vec::new(),
            stall_threshold: Duration::from_millis(100),
            kernel_events_off: None,
        };
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            flag.store(true, Ordering::Relaxed);
        });
        let t0 = Instant::now();
        run(&cfg, &stop, &mut Count(0)).expect("runs");
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    }
}
