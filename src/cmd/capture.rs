//! `sinkrate capture -- COMMAND`: the recorder's program found and the trace's two files
//! made before anything runs, a capture session (crates/capture), its summary rendered.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Result};
use sinkrate_capture::trace::{sidecar_path, Header, SIDECAR_VERSION};
use sinkrate_model::{Envelope, RunKind, TOOL_VERSION};

use crate::cli::CaptureArgs;
use crate::export::plan::{self, Style};

/// The trace's two files, made exclusively: TRACE as given (replaced only with --force), or
/// the first free capture.iolog, capture-2.iolog... here.
fn open_trace(
    given: Option<&Path>,
    force: bool,
) -> Result<(PathBuf, std::fs::File, std::fs::File)> {
    use sinkrate_sys::output::new_stream;
    let taken = |p: &Path| {
        anyhow!(
            "{} exists: a trace is never replaced without --force (or give --output another name)",
            p.display()
        )
    };
    if let Some(path) = given {
        let sidecar = sidecar_path(path);
        crate::check_outputs(
            &[("--output", Some(path)), ("--output", Some(&sidecar))],
            &[],
        )?;
        if !force {
            for p in [path, sidecar.as_path()] {
                if std::fs::symlink_metadata(p).is_ok() {
                    return Err(taken(p));
                }
            }
        }
        let made = |p: &Path| {
            new_stream(p, force).map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => taken(p),
                _ => anyhow!("--output {}: {e}", p.display()),
            })
        };
        let iolog = made(path)?;
        let calls = match made(&sidecar) {
            Ok(f) => f,
            Err(e) => {
                remove_if_still(path, &iolog);
                return Err(e);
            }
        };
        return Ok((path.to_path_buf(), iolog, calls));
    }
    for n in 1..1000 {
        let path = PathBuf::from(if n == 1 {
            "capture.iolog".to_string()
        } else {
            format!("capture-{n}.iolog")
        });
        let sidecar = sidecar_path(&path);
        let iolog = match new_stream(&path, false) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(anyhow!("{}: {e}", path.display())),
        };
        match new_stream(&sidecar, false) {
            Ok(calls) => return Ok((path, iolog, calls)),
            Err(e) => {
                remove_if_still(&path, &iolog);
                if e.kind() != std::io::ErrorKind::AlreadyExists {
                    return Err(anyhow!("{}: {e}", sidecar.display()));
                }
            }
        }
    }
    Err(anyhow!(
        "no free name for capture.iolog here: give --output TRACE"
    ))
}

/// A running process's command line, or why it cannot be captured.
fn running(pid: i32) -> Result<Vec<String>> {
    use sinkrate_sys::process::{describe, Process};
    if pid <= 0 || pid as u32 == std::process::id() {
        return Err(anyhow!("--pid {pid}: not a process sinkrate can capture"));
    }
    match describe(pid as u32) {
        Process::Running(words) => Ok(words),
        Process::Gone => Err(anyhow!("--pid {pid}: no such running process")),
        Process::KernelThread => Err(anyhow!(
            "--pid {pid}: a kernel thread, which has no program to capture"
        )),
        Process::Ended => Err(anyhow!(
            "--pid {pid}: the process has ended (not yet reaped by its parent)"
        )),
    }
}

/// Removes the file just made at `path` (its other half could not be), only while it is
/// still the one `made` holds open.
fn remove_if_still(path: &Path, made: &std::fs::File) {
    use std::os::unix::fs::MetadataExt;
    let ours = made.metadata().ok().map(|m| (m.dev(), m.ino()));
    let there = std::fs::symlink_metadata(path)
        .ok()
        .map(|m| (m.dev(), m.ino()));
    if ours.is_some() && ours == there {
        let _ = std::fs::remove_file(path);
    }
}

pub fn run(args: CaptureArgs) -> Result<ExitCode> {
    let (program, command) = match args.pid {
        Some(pid) => (None, running(pid)?),
        None => (
            Some(sinkrate_capture::find_program(&args.command[0]).map_err(|e| anyhow!(e))?),
            args.command.clone(),
        ),
    };
    let (trace, iolog, calls) = open_trace(args.output.as_deref(), args.force)?;
    let stop = crate::interrupt_flag()?;
    let started_ms = sinkrate_sys::host::unix_ms_now();
    let host = sinkrate_sys::host::host_facts();
    let header = Header {
        sinkrate_trace: SIDECAR_VERSION,
        command: command.clone(),
        started_at: sinkrate_model::envelope::rfc3339(started_ms),
        arch: std::env::consts::ARCH.to_string(),
        kernel: host.kernel.clone(),
        tool_version: TOOL_VERSION.to_string(),
    };
    let line = command.join(" ");
    let mut pid = None;
    let recorder = match (&program, args.pid) {
        (Some(program), _) => sinkrate_capture::Recorder::Run {
            program,
            command: &command,
            interpose: !args.ptrace_only,
        },
        (None, Some(p)) => sinkrate_capture::Recorder::Attach {
            pid: p,
            command: &command,
        },
        (None, None) => return Err(anyhow!("no recorder to capture")),
    };
    let attached = args.pid.is_some();
    let explain = sinkrate_capture::Explain {
        stall_threshold: args.stall_threshold,
        kernel_events_off: args
            .no_kernel_events
            .then(|| "--no-kernel-events was given".to_string()),
    };
    let captured = sinkrate_capture::session(
        &recorder,
        iolog,
        calls,
        &header,
        &stop,
        &explain,
        &mut |p| {
            // A recorder sinkrate started is its own to stop on a second Ctrl-C; one it
            // attached to is the user's, and runs on.
            if !attached {
                pid = Some(p);
                sinkrate_sys::children::started(p, &line);
            }
        },
    );
    if let Some(p) = pid {
        sinkrate_sys::children::ended(p);
    }
    let (mut report, _) = captured.map_err(|e| {
        anyhow!(
            "{e} (the trace so far is in {} and {})",
            trace.display(),
            sidecar_path(&trace).display()
        )
    })?;
    report.trace = trace.display().to_string();
    report.sidecar = sidecar_path(&trace).display().to_string();
    let interrupted = report.interrupted;
    let exit_code = report.exit_code;
    let signal = report.signal;
    let mut run = Envelope::new(RunKind::Capture, host, started_ms, report);
    run.interrupted = interrupted;
    if exit_code == Some(127) && run.result.calls == 0 && !attached {
        run.error = Some(sinkrate_model::RunError {
            what: format!("{}: could not be started", command[0]),
            at_s: None,
        });
    }
    // The recorder ran to its end; the capture did not: a trace cut short is a failed run.
    if let Some(cut) = &run.result.trace_cut_short {
        run.error = Some(sinkrate_model::RunError {
            what: format!(
                "the trace could not be written from {:.2} s on ({}): {} holds the first {} calls only; the recorder ran on to its end ({})",
                cut.at_s,
                cut.error,
                trace.display(),
                cut.calls_written,
                match (exit_code, signal) {
                    (Some(c), _) => format!("exit {c}"),
                    (None, Some(s)) => format!("signal {s}"),
                    (None, None) => "still running, let go".into(),
                }
            ),
            at_s: Some(cut.at_s),
        });
    }
    plan::print_stdout(&run, args.output_format, &Style::default())?;
    if let Some(e) = &run.error {
        eprintln!("sinkrate: error: {}", e.what);
        return Ok(ExitCode::from(2));
    }
    Ok(match (exit_code, signal) {
        // Attached: the capture ends with Ctrl-C while the recorder runs on.
        (None, None) if attached && interrupted => ExitCode::SUCCESS,
        // Interrupted (Ctrl-C, or a signal to the capture alone, which then waited for its
        // recorder's own end): 130, whatever the recorder's code, as the docs say.
        _ if interrupted && !attached => ExitCode::from(130),
        (Some(c), _) => ExitCode::from(c.clamp(0, 255) as u8),
        (None, _) if interrupted => ExitCode::from(130),
        (None, Some(s)) => ExitCode::from((128 + s).clamp(0, 255) as u8),
        (None, None) => ExitCode::from(2),
    })
}
