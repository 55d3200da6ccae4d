//! The kernel's account of a recording: tracing started before the writers, each stall
//! handed over by its writer as it ends and explained from the events while the recording
//! goes on (`sinkrate_sampler::causes`), so a recording of hours is explained to its end.
//! Without tracefs the run goes on as before, and the report says why causes are inferred.

use std::collections::HashMap;
use std::time::Instant;

use sinkrate_model::causes::{KernelAccount, StallCauses};
use sinkrate_model::record::StallReport;
use sinkrate_sampler::causes::{CallTag, LiveAnalysis, SlowCall};
use sinkrate_sampler::target::target_of_mount;
use sinkrate_sys::tracefs::{TraceRequest, TraceSession};

/// A recording's tracing: the session and its analysis when it started, or why it did not.
pub struct Tracing {
    session: Result<(TraceSession, LiveAnalysis), String>,
    /// The card's bdi (`MAJ:MIN`), resolved once for the trace and the sizes.
    pub bdi: Option<String>,
}

/// Where a writer hands its slow calls over: their times on the recording's clock.
#[derive(Clone)]
pub struct StallSink {
    analysis: LiveAnalysis,
    clock_mono_ns: u64,
}

impl StallSink {
    /// A write of thread `tid` from `start_ns` to `end_ns` on the recording's clock.
    pub fn hand_over(&self, tid: i32, start_ns: u64, end_ns: u64) {
        self.analysis.hand_over(
            start_ns,
            SlowCall {
                tid,
                start_ns: self.clock_mono_ns + start_ns,
                end_ns: self.clock_mono_ns + end_ns,
            },
            None,
        );
    }
}

impl Tracing {
    /// Starts tracing this thread (the writers it starts are followed) and the devices of
    /// the recording's mount (resolved once for the run); `why_not` when the user turned it
    /// off.
    pub fn start(mount: Option<&sinkrate_model::facts::Target>, why_not: Option<&str>) -> Tracing {
        let target = target_of_mount(mount);
        let session = match why_not {
            Some(why) => Err(why.to_string()),
            None => {
                let analysis = LiveAnalysis::new(target.clone());
                TraceSession::start(
                    &TraceRequest {
                        threads: vec![sinkrate_platform::cpu::thread_id()],
                        disk: target.disk.map(|d| (d >> 20, d & 0xfffff)),
                        fs_dev: target.fs_dev.map(|d| (d >> 20, d & 0xfffff)),
                        syscalls: Vec::new(),
                        all_devices: false,
                    },
                    analysis.sink(),
                )
                .map(|s| (s, analysis))
            }
        };
        Tracing {
            session,
            bdi: target.bdi,
        }
    }

    /// Where the writers of a recording on `clock` hand their stalls over; None when
    /// nothing is traced.
    pub fn stall_sink(&self, clock: Instant) -> Option<StallSink> {
        let (_, analysis) = self.session.as_ref().ok()?;
        Some(StallSink {
            analysis: analysis.clone(),
            clock_mono_ns: sinkrate_platform::cpu::monotonic_ns_of(clock),
        })
    }

    /// Stops tracing and gives each stall its causes (the stall handed over by the same
    /// thread at the same time on the recording's clock).
    pub fn finish(self, stalls: &mut [StallReport], names: &HashMap<i32, String>) -> KernelAccount {
        let (session, analysis) = match self.session {
            Ok(s) => s,
            Err(why) => return KernelAccount::inferred(why),
        };
        let trace = session.finish();
        let finished = analysis.finish(&trace, None, names);
        // Sorted by thread and start, each stall looked up (a hash map would cost the board
        // binary more than the search).
        let mut causes: Vec<((i32, u64), Option<StallCauses>)> = finished
            .explained
            .into_iter()
            .filter_map(|e| match e.tag {
                CallTag::Caller(start_ns) => Some(((e.call.tid, start_ns), e.causes)),
                CallTag::Syscall(_) => None,
            })
            .collect();
        causes.sort_unstable_by_key(|(key, _)| *key);
        for stall in stalls.iter_mut() {
            let Some(tid) = stall.tid else { continue };
            // The writer's whole nanoseconds, as it handed them over: at_s holds them
            // exactly for any run shorter than 104 days.
            let start_ns = (stall.at_s * 1e9).round() as u64;
            if let Ok(i) = causes.binary_search_by_key(&(tid, start_ns), |(key, _)| *key) {
                stall.causes = causes[i].1.take();
            }
        }
        finished.account
    }
}
