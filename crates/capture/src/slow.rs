//! The recorder's slow calls, each explained from the kernel's events
//! (`sinkrate_sampler::causes`): tracing starts before the recorder runs, each call over the
//! threshold is handed to the analysis as it ends and explained against the device of the
//! file it wrote while the recorder goes on (a capture of hours keeps a minute of events);
//! the first [`SLOW_CALLS_KEPT`] are listed.

#[cfg(target_os = "linux")]
use std::time::Instant;

use sinkrate_model::capture::SLOW_CALLS_KEPT;
#[cfg(target_os = "linux")]
use sinkrate_model::causes::KernelAccount;
use sinkrate_model::causes::StallCauses;
use sinkrate_model::watch::SlowCall;

use crate::trace::{Call, Op};

/// The calls over the threshold, the first [`SLOW_CALLS_KEPT`] of them, listed with their
/// causes once explained.
pub(crate) struct SlowCalls {
    calls: Vec<Kept>,
    pub(crate) not_listed: u64,
    #[cfg(target_os = "linux")]
    analysis: sinkrate_sampler::causes::LiveAnalysis,
    /// Where the capture's clock (the calls' `t_ns`) started on CLOCK_MONOTONIC.
    #[cfg(target_os = "linux")]
    t0_ns: u64,
}

struct Kept {
    t_ns: u64,
    dur_ns: u64,
    tid: i32,
    call: &'static str,
    file: Option<String>,
}

/// The call's name as the recorder made it (a write by its system call's name).
fn call_name(op: &Op) -> &'static str {
    match op {
        Op::Write { call, .. } => match call.as_str() {
            "pwrite64" => "pwrite64",
            "writev" => "writev",
            "pwritev" => "pwritev",
            "pwritev2" => "pwritev2",
            "sendfile" => "sendfile",
            "copy_file_range" => "copy_file_range",
            "splice" => "splice",
            _ => "write",
        },
        Op::Open { .. } => "open",
        Op::Fsync { .. } => "fsync",
        Op::Fdatasync { .. } => "fdatasync",
        Op::SyncFileRange { .. } => "sync_file_range",
        Op::Ftruncate { .. } => "ftruncate",
        Op::Fallocate { .. } => "fallocate",
        Op::Close { .. } => "close",
        Op::Rename { .. } => "rename",
        Op::SetFlags { .. } => "fcntl",
        Op::Unlink { .. } => "unlink",
        Op::MappedForWrite { .. } => "mmap",
        Op::IoUring => "io_uring_setup",
    }
}

/// The tag of a call handed over but not listed (past [`SLOW_CALLS_KEPT`]).
#[cfg(target_os = "linux")]
const NOT_LISTED: u64 = u64::MAX;

impl SlowCalls {
    #[cfg(target_os = "linux")]
    pub(crate) fn new(t0: Instant) -> SlowCalls {
        SlowCalls {
            calls: Vec::new(),
            not_listed: 0,
            // Explained against the device of each call's own file; the account against
            // that of the file the recorder wrote most to, once known.
            analysis: sinkrate_sampler::causes::LiveAnalysis::new(
                sinkrate_sampler::causes::Target {
                    page_bytes: sinkrate_sys::page_size(),
                    ..Default::default()
                },
            ),
            t0_ns: sinkrate_platform::cpu::monotonic_ns_of(t0),
        }
    }

    /// A call over the threshold, as it ends: handed to the analysis (on the tracer's
    /// thread: a push, the analysis runs on the trace reader's) and listed while there is
    /// room.
    #[cfg(target_os = "linux")]
    pub(crate) fn add(&mut self, c: &Call) {
        let file = c.op.file().map(str::to_string);
        let tag = if self.calls.len() < SLOW_CALLS_KEPT {
            self.calls.push(Kept {
                t_ns: c.t_ns,
                dur_ns: c.dur_ns,
                tid: c.tid,
                call: call_name(&c.op),
                file: file.clone(),
            });
            self.calls.len() as u64 - 1
        } else {
            self.not_listed += 1;
            NOT_LISTED
        };
        let dir = file
            .as_deref()
            .and_then(|f| std::path::Path::new(f).parent());
        self.analysis.hand_over(
            tag,
            sinkrate_sampler::causes::SlowCall {
                tid: c.tid,
                start_ns: self.t0_ns + c.t_ns,
                end_ns: self.t0_ns + c.t_ns + c.dur_ns,
            },
            dir,
        );
    }

    fn listed(self, causes: Vec<Option<StallCauses>>) -> Vec<SlowCall> {
        self.calls
            .into_iter()
            .zip(causes)
            .filter_map(|(k, causes)| {
                Some(SlowCall {
                    pid: 0,
                    tid: k.tid,
                    thread: String::new(),
                    call: k.call.to_string(),
                    file: k.file,
                    at_s: k.t_ns as f64 / 1e9,
                    duration_ms: k.dur_ns as f64 / 1e6,
                    causes: causes?,
                })
            })
            .collect()
    }

    /// Each listed call with its causes; the run's account on the target of `busiest` (the
    /// file the recorder wrote most to).
    #[cfg(target_os = "linux")]
    pub(crate) fn explain(
        self,
        tracing: Tracing,
        busiest: Option<&str>,
    ) -> (Vec<SlowCall>, KernelAccount) {
        use sinkrate_sampler::causes::CallTag;
        let session = match tracing.session() {
            Ok(s) => s,
            // Listed only with their causes: the durations are in the calls file.
            Err(why) => return (Vec::new(), KernelAccount::inferred(why)),
        };
        let trace = session.finish();
        let target = busiest
            .and_then(|f| std::path::Path::new(f).parent())
            .map(sinkrate_sampler::target::target_of);
        // The recorder's threads are gone by now: named by what their calls were on.
        let finished = self
            .analysis
            .finish(&trace, target, &std::collections::HashMap::new());
        let mut causes = vec![None; self.calls.len()];
        for e in finished.explained {
            if let CallTag::Caller(i) = e.tag {
                if let Some(slot) = causes.get_mut(i as usize) {
                    *slot = e.causes;
                }
            }
        }
        // Calls whose events were no longer kept are not listed, and counted in the account.
        (self.listed(causes), finished.account)
    }
}

/// Tracing for the recorder: this thread (the command it starts is its child, followed by
/// `options/event-fork`), before it starts; or, attached, the recorder's threads, on a
/// thread of its own so that the attach is not delayed by it (a recorder that execs just
/// then must be seized at once). Every device, since the recorder's target is known only
/// once it has written.
pub(crate) enum Tracing {
    Started(Result<sinkrate_sys::tracefs::TraceSession, String>),
    Starting(std::thread::JoinHandle<Result<sinkrate_sys::tracefs::TraceSession, String>>),
}

impl Tracing {
    pub(crate) fn start(
        recorder: &crate::Recorder<'_>,
        explain: &crate::Explain,
        slow: &SlowCalls,
    ) -> Tracing {
        use sinkrate_sys::tracefs::{threads_of, TraceRequest, TraceSession};
        if let Some(why) = &explain.kernel_events_off {
            return Tracing::Started(Err(why.clone()));
        }
        let sink = slow.analysis.sink();
        let request = |threads| TraceRequest {
            threads,
            all_devices: true,
            ..TraceRequest::default()
        };
        match recorder {
            crate::Recorder::Run { .. } => Tracing::Started(TraceSession::start(
                &request(vec![sinkrate_platform::cpu::thread_id()]),
                sink,
            )),
            crate::Recorder::Attach { pid, .. } => {
                let pid = *pid as u32;
                Tracing::Starting(std::thread::spawn(move || {
                    TraceSession::start(&request(threads_of(pid)), sink)
                }))
            }
        }
    }

    fn session(self) -> Result<sinkrate_sys::tracefs::TraceSession, String> {
        match self {
            Tracing::Started(s) => s,
            Tracing::Starting(handle) => handle
                .join()
                .unwrap_or_else(|_| Err("the thread starting the trace failed".into())),
        }
    }
}
