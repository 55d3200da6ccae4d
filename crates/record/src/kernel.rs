//! The kernel's account of a recording: tracing started before the writers, and each stall
//! explained from the events once they are done (`sinkrate_sampler::causes`). Without
//! tracefs the run goes on as before, and the report says why causes are inferred.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use sinkrate_model::causes::KernelAccount;
use sinkrate_model::record::StallReport;
use sinkrate_sampler::causes::{explain_all, SlowCall, Target};
use sinkrate_sampler::target::target_of;
use sinkrate_sys::tracefs::{TraceRequest, TraceSession};

/// A recording's tracing: the session when it started, or why it did not.
pub struct Tracing {
    session: Result<TraceSession, String>,
    target: Target,
}

impl Tracing {
    /// Starts tracing this thread (the writers it starts are followed) and the devices
    /// under `dir`; `why_not` when the user turned it off.
    pub fn start(dir: &Path, why_not: Option<&str>) -> Tracing {
        let target = target_of(dir);
        let session = match why_not {
            Some(why) => Err(why.to_string()),
            None => TraceSession::start(&TraceRequest {
                threads: vec![sinkrate_platform::cpu::thread_id()],
                disk: target.disk.map(|d| (d >> 20, d & 0xfffff)),
                fs_dev: target.fs_dev.map(|d| (d >> 20, d & 0xfffff)),
                syscalls: Vec::new(),
                all_devices: false,
            }),
        };
        Tracing { session, target }
    }

    /// Stops tracing and explains each stall (their times are on `clock`, which started on
    /// the monotonic clock at `clock_mono_ns`).
    pub fn finish(
        self,
        clock: Instant,
        stalls: &mut [StallReport],
        names: &HashMap<i32, String>,
    ) -> KernelAccount {
        let session = match self.session {
            Ok(s) => s,
            Err(why) => return KernelAccount::inferred(why),
        };
        let clock_mono_ns = sinkrate_platform::cpu::monotonic_ns_of(clock);
        let trace = session.finish();
        // Stalls without a thread (none today) are not asked about.
        let asked: Vec<(usize, SlowCall)> = stalls
            .iter()
            .enumerate()
            .filter_map(|(i, stall)| {
                let tid = stall.tid?;
                let start_ns = clock_mono_ns + (stall.at_s * 1e9) as u64;
                Some((
                    i,
                    SlowCall {
                        tid,
                        start_ns,
                        end_ns: start_ns + (stall.duration_ms * 1e6) as u64,
                    },
                ))
            })
            .collect();
        let calls: Vec<SlowCall> = asked.iter().map(|(_, c)| *c).collect();
        let (causes, account) = explain_all(&trace, self.target, &calls, names);
        for ((i, _), causes) in asked.iter().zip(causes) {
            stalls[*i].causes = causes;
        }
        account
    }
}
