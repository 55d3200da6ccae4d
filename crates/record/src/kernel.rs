//! The kernel's account of a recording: tracing started before the writers, and each stall
//! explained from the events once they are done (`sinkrate_sampler::causes`). Without
//! tracefs the run goes on as before, and the report says why causes are inferred.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use sinkrate_model::causes::{CauseSeconds, KernelAccount};
use sinkrate_model::record::StallReport;
use sinkrate_sampler::causes::{Account, SlowCall, Target};
use sinkrate_sys::tracefs::kernel_dev;
use sinkrate_sys::tracefs::{TraceRequest, TraceSession};

/// A recording's tracing: the session when it started, or why it did not.
pub struct Tracing {
    session: Result<TraceSession, String>,
    target: Target,
}

/// The devices a directory is stored on, as trace events name them: its filesystem's
/// device, the whole disk, the backing device's bdi name.
pub fn target_of(dir: &Path) -> Target {
    let mut target = Target {
        page_bytes: sinkrate_sys::page_size(),
        ..Target::default()
    };
    let root = sinkrate_sys::SysRoot::live();
    let Some(path) = std::fs::canonicalize(dir).ok() else {
        return target;
    };
    let Ok(mount) = sinkrate_sys::mounts::resolve(&root, &path.to_string_lossy()) else {
        return target;
    };
    target.fs_dev = Some(kernel_dev(mount.major, mount.minor));
    let mut disk = (mount.major, mount.minor);
    if let Some(sys) = root.canonical(&format!("/sys/dev/block/{}:{}", mount.major, mount.minor)) {
        if root.exists(&format!("{sys}/partition")) {
            let parent = sys
                .rsplit_once('/')
                .map_or(sys.as_str(), |(p, _)| p)
                .to_string();
            if let Some((ma, mi)) = root
                .attr(&format!("{parent}/dev"))
                .and_then(|d| {
                    d.split_once(':')
                        .map(|(a, b)| (a.to_string(), b.to_string()))
                })
                .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
            {
                disk = (ma, mi);
            }
        }
        target.disk = Some(kernel_dev(disk.0, disk.1));
    }
    target.bdi = Some(format!("{}:{}", disk.0, disk.1));
    target
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
        let account = Account::new(&trace, self.target);
        let mut total = CauseSeconds::default();
        let mut not_explained = 0;
        for stall in stalls.iter_mut() {
            let Some(tid) = stall.tid else { continue };
            let start_ns = clock_mono_ns + (stall.at_s * 1e9) as u64;
            let call = SlowCall {
                tid,
                start_ns,
                end_ns: start_ns + (stall.duration_ms * 1e6) as u64,
            };
            // Past the events kept: no breakdown rather than a wrong one.
            if trace.kept_until_ns.is_some_and(|t| call.end_ns >= t) {
                not_explained += 1;
                continue;
            }
            let causes = account.explain(&call);
            for c in sinkrate_model::causes::Cause::ALL {
                total.add(c, causes.seconds.get(c));
            }
            stall.causes = Some(causes);
        }
        let mut summary = account.summary(names);
        summary.stall_seconds = total;
        summary.stalls_not_explained = not_explained;
        summary
    }
}
