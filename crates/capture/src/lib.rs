//! `sinkrate capture`: a recorder's file operations, captured as it runs, with no kernel
//! module, no eBPF and no change to the recorder. The recorder runs under ptrace with a
//! seccomp filter that stops it only at its file calls ([`filter`]); each call is read at its
//! stop and at its exit ([`tracer`]) and written, as it happens, to fio's iolog v3 and a
//! sidecar of what iolog cannot say ([`trace`]).

#[cfg(target_os = "linux")]
pub mod filter;
pub mod plan;
#[cfg(target_os = "linux")]
pub mod preload;
#[cfg(target_os = "linux")]
mod regs;
#[cfg(target_os = "linux")]
mod slow;
pub mod summary;
pub mod trace;
#[cfg(target_os = "linux")]
pub mod tracer;

pub use trace::{read_sidecar, sidecar_path, Call, End, Header, Op, Seen, Trace, TraceWriter};

/// How a capture ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Ctrl-C (or SIGTERM) came during the capture.
    pub interrupted: bool,
    pub end_ns: u64,
    /// Calls written to the trace.
    pub calls: u64,
    /// Times the recorder was stopped for the tracer (two per call traced).
    pub stops: u64,
    /// Calls the interposer made and reported, without a stop.
    pub interposed: u64,
    /// What the capture could not see, each said once (a file written through a mapping,
    /// io_uring).
    pub unseen: Vec<String>,
    /// The tracer's own CPU time (user + system).
    pub tracer_cpu: std::time::Duration,
}

/// Why a capture could not run or went wrong.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("cannot start the recorder under capture: {0}")]
    Start(std::io::Error),
    #[error("{0}")]
    Setup(String),
    #[error("tracing the recorder failed: {0}")]
    Trace(std::io::Error),
    #[error("cannot write the trace: {0}")]
    Write(std::io::Error),
}

use std::ffi::CString;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use sinkrate_model::capture::{CaptureCost, CaptureReport, TraceCut};

/// The program a command names: a path as given, or the first executable file of that name
/// in a directory of PATH, as a shell finds it. (By hand: the crate that does this brings a
/// system-call library the 5 MB board build has no room for.)
pub fn find_program(name: &str) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    if name.is_empty() {
        return Err("no command given: sinkrate capture -- COMMAND [ARGS...]".into());
    }
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return if runnable(&p) {
            Ok(p)
        } else {
            Err(format!("{name}: no such program (or not executable)"))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| runnable(p))
        .ok_or_else(|| format!("{name}: command not found (not on PATH)"))
}

/// What a capture traces: a command it starts, or a recorder already running.
pub enum Recorder<'a> {
    /// The program ([`find_program`]) and the command line.
    Run {
        program: &'a std::path::Path,
        command: &'a [String],
        /// Whether a dynamically linked recorder reports its writes and syncs through the
        /// interposer ([`preload`]) instead of stopping for each.
        interpose: bool,
    },
    /// A running process (`--pid`) and its command line (/proc/PID/cmdline).
    Attach { pid: i32, command: &'a [String] },
}

/// Which of the recorder's calls are explained from the kernel's events, and whether the
/// events are read at all.
#[derive(Debug, Clone, Default)]
pub struct Explain {
    /// Calls at least this long are listed with their causes.
    pub stall_threshold: std::time::Duration,
    /// Why the kernel's events are not read (the user said so), if so.
    pub kernel_events_off: Option<String>,
}

/// Captures the recorder into an iolog and a sidecar as it runs, until it and its children
/// have ended (or, attached, until `stop`); the calls summed up per file, and the slow
/// ones explained by the kernel's events.
pub fn session<W: Write>(
    recorder: &Recorder<'_>,
    iolog: W,
    sidecar: W,
    header: &Header,
    stop: &AtomicBool,
    explain: &Explain,
    started: &mut dyn FnMut(u32),
) -> Result<(CaptureReport, Outcome), CaptureError> {
    let cstr = |s: &str| {
        CString::new(s).map_err(|_| CaptureError::Setup(format!("{s:?}: a NUL in the command")))
    };
    let command = match recorder {
        Recorder::Run { command, .. } | Recorder::Attach { command, .. } => *command,
    };
    // (Written through by the tracer's sink on Linux only.)
    #[cfg_attr(not(target_os = "linux"), allow(unused_mut))]
    let mut writer = TraceWriter::new(iolog, sidecar, header).map_err(CaptureError::Write)?;
    let mut summary = summary::Summary::default();
    let t0 = Instant::now();
    // The first call the trace could not take, and why: from then on the recorder is traced
    // as before (its filter needs a tracer to answer) but nothing more is written, so that
    // it runs on to its own end whatever happens to the trace's filesystem.
    let mut cut: Option<TraceCut> = None;
    #[cfg(target_os = "linux")]
    let threshold_ns = explain.stall_threshold.as_nanos() as u64;
    #[cfg(target_os = "linux")]
    let mut slow = slow::SlowCalls::new(t0);
    // Tracing starts before the recorder does (a command: this thread, whose child it will
    // be, followed into it); attached, beside the attach (the recorder's threads).
    #[cfg(target_os = "linux")]
    let tracing = slow::Tracing::start(recorder, explain, &slow);
    #[cfg(target_os = "linux")]
    let outcome = {
        let mut sink = |seen: Seen<'_>| {
            let (written, at_ns) = match seen {
                Seen::Call(c) => {
                    summary.add(c);
                    if c.dur_ns >= threshold_ns {
                        slow.add(c);
                    }
                    (cut.is_none().then(|| writer.call(c)), c.t_ns)
                }
                Seen::Unseen(what) => (
                    cut.is_none().then(|| writer.unseen(what)),
                    t0.elapsed().as_nanos() as u64,
                ),
            };
            if let Some(Err(e)) = written {
                cut = Some(TraceCut {
                    calls_written: writer.calls,
                    at_s: at_ns as f64 / 1e9,
                    error: e.to_string(),
                });
            }
            Ok(())
        };
        match recorder {
            Recorder::Run {
                program,
                command,
                interpose,
            } => {
                let program_c = cstr(&program.to_string_lossy())?;
                let argv: Vec<CString> =
                    command.iter().map(|a| cstr(a)).collect::<Result<_, _>>()?;
                tracer::run(&program_c, &argv, *interpose, &mut sink, stop, t0, started)?
            }
            Recorder::Attach { pid, .. } => {
                started(*pid as u32);
                tracer::attach(nix::unistd::Pid::from_raw(*pid), &mut sink, stop, t0)?
            }
        }
    };
    #[cfg(target_os = "linux")]
    let slow_calls_not_listed = slow.not_listed;
    #[cfg(target_os = "linux")]
    let (slow_calls, kernel) = slow.explain(tracing, summary.busiest_file());
    #[cfg(not(target_os = "linux"))]
    let (slow_calls, slow_calls_not_listed, kernel) = (
        Vec::new(),
        0,
        sinkrate_model::causes::KernelAccount::inferred("the kernel's trace events are Linux's"),
    );
    #[cfg(not(target_os = "linux"))]
    let outcome: Outcome = {
        let _ = (cstr, stop, t0, started, &mut summary, explain);
        Err(CaptureError::Setup(
            "capture needs Linux (ptrace and seccomp)".into(),
        ))?
    };
    let end = End {
        end_ns: outcome.end_ns,
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        interrupted: outcome.interrupted,
    };
    // A trace cut short keeps no end line: a reader takes it as cut short there.
    if cut.is_none() {
        if let Err(e) = writer.end(end) {
            cut = Some(TraceCut {
                calls_written: outcome.calls,
                at_s: outcome.end_ns as f64 / 1e9,
                error: e.to_string(),
            });
        }
    }
    let duration_s = outcome.end_ns as f64 / 1e9;
    let report = CaptureReport {
        command: command.to_vec(),
        trace: String::new(),
        sidecar: String::new(),
        duration_s,
        exit_code: outcome.exit_code,
        signal: outcome.signal,
        interrupted: outcome.interrupted,
        calls: outcome.calls,
        renames: summary.renames,
        unlinks: summary.unlinks,
        files: summary.files(),
        cost: CaptureCost {
            tracer_cpu_s: outcome.tracer_cpu.as_secs_f64(),
            tracer_cpu_pct_of_core: if duration_s > 0.0 {
                outcome.tracer_cpu.as_secs_f64() / duration_s * 100.0
            } else {
                0.0
            },
            stops: outcome.stops,
            interposed_calls: outcome.interposed,
        },
        unseen: outcome.unseen.clone(),
        trace_cut_short: cut,
        slow_calls_not_listed,
        slow_calls,
        kernel,
    };
    Ok((report, outcome))
}
