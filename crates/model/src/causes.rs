//! Why a write call stalled, in the kernel's own words: each slow call's time split by what
//! its thread was doing (paused by dirty throttling, waiting for a page under writeback, for
//! a journal commit or for the device, waiting for a CPU, running), with the evidence, and
//! the run's account of those events. Filled from tracefs where the kernel's events can be
//! read; where they cannot, `KernelAccount::inferred_because` says why and no stall carries
//! a breakdown.

use serde::{Deserialize, Serialize};

/// What a stalled call's time went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Paused in balance_dirty_pages: the page cache was over its dirty setpoint.
    Throttled,
    /// Waiting for a page under writeback (stable pages, or a sync waiting for its data).
    WritebackWait,
    /// Asleep while the filesystem's journal committed.
    Journal,
    /// Asleep while the device served requests (the call's own, or those ahead of them).
    Device,
    /// Runnable but not running: another task had the CPU.
    Cpu,
    /// On the CPU (copying, allocating, reclaiming memory).
    Running,
    /// Asleep with no event that explains it.
    Unexplained,
}

impl Cause {
    pub const ALL: [Cause; 7] = [
        Cause::Throttled,
        Cause::WritebackWait,
        Cause::Journal,
        Cause::Device,
        Cause::Cpu,
        Cause::Running,
        Cause::Unexplained,
    ];

    /// The cause in words, as the text and the report say it.
    pub fn name(self) -> &'static str {
        match self {
            Cause::Throttled => "throttled",
            Cause::WritebackWait => "waiting for writeback",
            Cause::Journal => "journal commit",
            Cause::Device => "device",
            Cause::Cpu => "waiting for a CPU",
            Cause::Running => "running",
            Cause::Unexplained => "unexplained",
        }
    }

    /// What shortens this cause's waits, in a line (docs/causes.md has the longer story).
    pub fn fix(self) -> &'static str {
        match self {
            Cause::Cpu => "give the recorder's writer a CPU of its own or a higher priority (nice, chrt, a cpuset); no storage setting shortens a wait for the CPU",
            Cause::Running => "the writer was busy on the CPU inside its calls (copying, reclaiming memory): smaller writes, or memory kept free (vm.min_free_kbytes)",
            Cause::Journal => "fewer journal commits in the stream's path: a longer commit interval (commit=), data=ordered instead of data=journal, fewer syncs",
            Cause::WritebackWait => "fewer waits for writeback: sync less often, or a device that does not require stable pages",
            Cause::Throttled => "a per-device dirty limit sized to the card (bdi max_bytes) or a smaller machine-wide one",
            Cause::Device => "a faster card, or a lower bitrate",
            Cause::Unexplained => "the kernel's events do not say: run again with `sinkrate watch` beside it",
        }
    }
}

/// A stalled call's time, by cause, in seconds; the parts add up to the call's duration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CauseSeconds {
    pub throttled_s: f64,
    pub writeback_wait_s: f64,
    pub journal_s: f64,
    pub device_s: f64,
    pub cpu_s: f64,
    pub running_s: f64,
    pub unexplained_s: f64,
}

impl CauseSeconds {
    pub fn get(&self, c: Cause) -> f64 {
        match c {
            Cause::Throttled => self.throttled_s,
            Cause::WritebackWait => self.writeback_wait_s,
            Cause::Journal => self.journal_s,
            Cause::Device => self.device_s,
            Cause::Cpu => self.cpu_s,
            Cause::Running => self.running_s,
            Cause::Unexplained => self.unexplained_s,
        }
    }

    pub fn add(&mut self, c: Cause, s: f64) {
        let slot = match c {
            Cause::Throttled => &mut self.throttled_s,
            Cause::WritebackWait => &mut self.writeback_wait_s,
            Cause::Journal => &mut self.journal_s,
            Cause::Device => &mut self.device_s,
            Cause::Cpu => &mut self.cpu_s,
            Cause::Running => &mut self.running_s,
            Cause::Unexplained => &mut self.unexplained_s,
        };
        *slot += s;
    }

    pub fn total(&self) -> f64 {
        Cause::ALL.iter().map(|c| self.get(*c)).sum()
    }

    /// The cause that took most of the time (ties: the first in `Cause::ALL`).
    pub fn largest(&self) -> Cause {
        let mut best = Cause::Unexplained;
        let mut most = -1.0;
        for c in Cause::ALL {
            if self.get(c) > most {
                most = self.get(c);
                best = c;
            }
        }
        best
    }
}

/// What the kernel said about a stalled call, and the evidence for its largest cause.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StallCauses {
    pub seconds: CauseSeconds,
    pub largest: Option<Cause>,
    /// The throttle pauses inside the call: how many, and the page cache against its
    /// setpoint at the longest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttle: Option<ThrottleEvidence>,
    /// The journal commit the call waited behind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<CommitEvidence>,
    /// The device's requests in flight during the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceEvidence>,
    /// Events were lost while the call ran: the split may miss part of it.
    #[serde(default)]
    pub partial: bool,
}

impl StallCauses {
    /// One line for a stall: its largest cause with the evidence, e.g. "throttled 1.10 s in
    /// balance_dirty_pages, bdi 7:0 at 412 MB dirty against a 380 MB setpoint; the device took
    /// up to 900 ms per 512 KiB request".
    pub fn evidence(&self) -> String {
        let c = self;
        let Some(largest) = c.largest else {
            return String::new();
        };
        let s = c.seconds.get(largest);
        let mb = |b: u64| b as f64 / 1e6;
        let mut text = match largest {
            // The machine's dirty data under its setpoint means the device's own share (a
            // per-device limit, strict_limit) is what throttled it: that figure leads.
            Cause::Throttled => match &c.throttle {
                Some(t) if t.dirty_bytes < t.setpoint_bytes => format!(
                    "throttled {s:.2} s in balance_dirty_pages ({} pause(s)): bdi {} held {:.1} MB dirty against its own {:.1} MB setpoint (the machine's {:.0} MB was under its {:.0} MB)",
                    t.pauses,
                    t.bdi,
                    mb(t.wb_dirty_bytes),
                    mb(t.wb_setpoint_bytes),
                    mb(t.dirty_bytes),
                    mb(t.setpoint_bytes)
                ),
                Some(t) => format!(
                    "throttled {s:.2} s in balance_dirty_pages ({} pause(s)): bdi {} at {:.0} MB dirty against a {:.0} MB setpoint (limit {:.0} MB)",
                    t.pauses,
                    t.bdi,
                    mb(t.dirty_bytes),
                    mb(t.setpoint_bytes),
                    mb(t.limit_bytes)
                ),
                None => format!("throttled {s:.2} s in balance_dirty_pages"),
            },
            Cause::WritebackWait => {
                format!("waited {s:.2} s for pages under writeback (folio_wait_writeback)")
            }
            Cause::Journal => match &c.journal {
                Some(j) => format!(
                    "waited {s:.2} s for journal commit {} on {}{}{}",
                    j.transaction,
                    j.dev,
                    j.took_ms
                        .map(|t| format!(", which took {t:.0} ms"))
                        .unwrap_or_default(),
                    j.blocks
                        .map(|b| format!(" for {b} blocks"))
                        .unwrap_or_default()
                ),
                None => format!("waited {s:.2} s for a journal commit"),
            },
            Cause::Device => format!("waited {s:.2} s for the device"),
            Cause::Cpu => format!("waited {s:.2} s for a CPU (runnable, not running)"),
            Cause::Running => format!("ran {s:.2} s on the CPU"),
            Cause::Unexplained => format!("slept {s:.2} s with no kernel event that explains it"),
        };
        if let Some(d) = &c.device {
            if d.max_service_ms >= 1.0 {
                let what = if d.max_request_bytes == 0 {
                    "for a cache flush".to_string()
                } else {
                    format!(
                        "per {} request",
                        sinkrate_units::fio::bytes_iec(d.max_request_bytes as f64)
                    )
                };
                text.push_str(&format!(
                    "; the device took up to {:.0} ms {what} ({} request(s) in flight during the call)",
                    d.max_service_ms, d.requests
                ));
            }
        }
        if c.partial {
            text.push_str(" (events were lost: the split may be partial)");
        }
        text
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThrottleEvidence {
    pub bdi: String,
    pub pauses: u64,
    /// The kernel's chosen pauses, summed.
    pub pause_s: f64,
    pub dirty_bytes: u64,
    pub setpoint_bytes: u64,
    pub limit_bytes: u64,
    /// The device's own share (its writeback domain) against its setpoint.
    pub wb_dirty_bytes: u64,
    pub wb_setpoint_bytes: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CommitEvidence {
    pub dev: String,
    pub transaction: u32,
    /// Start of the commit to its end; null when the run ended before it did.
    pub took_ms: Option<f64>,
    pub blocks: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceEvidence {
    pub dev: String,
    pub requests: u64,
    pub bytes: u64,
    /// The longest service time (issue to completion) among them.
    pub max_service_ms: f64,
    /// The size of that request.
    pub max_request_bytes: u64,
}

/// How far behind the newest events the analysis keeps them while a run goes on: a call
/// that took longer, or began before events were let go sooner to bound memory, has no
/// breakdown (`KernelAccount::stalls_not_explained`).
pub const KEPT_BEHIND_S: u64 = 60;

/// The run's account from the kernel's events, or why there is none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelAccount {
    /// Null when the kernel's events were read; else why causes were inferred from /proc
    /// samples instead.
    pub inferred_because: Option<String>,
    /// The tracefs mount and instances the events came from.
    #[serde(default)]
    pub source: String,
    /// When the events were traced, on CLOCK_MONOTONIC in nanoseconds: [from, to].
    #[serde(default)]
    pub traced_mono_ns: Option<[u64; 2]>,
    #[serde(default)]
    pub events: u64,
    /// Events the kernel could not store, or this reader did not keep.
    #[serde(default)]
    pub lost_events: u64,
    /// Events that were lost in an unknown number.
    #[serde(default)]
    pub lost_unknown: bool,
    /// Events let go sooner than [`KEPT_BEHIND_S`] behind the run, to keep memory bounded,
    /// and the stalls that began before the events they needed, left without a breakdown.
    #[serde(default)]
    pub events_not_kept: u64,
    #[serde(default)]
    pub stalls_not_explained: u64,
    /// The reader thread's CPU time over the run: what reading the events cost.
    #[serde(default)]
    pub reader_cpu_s: Option<f64>,
    /// Events not used, each with why (not on this kernel, a format this reader cannot read).
    #[serde(default)]
    pub missing: Vec<String>,
    /// Dirty throttling, per traced thread.
    #[serde(default)]
    pub throttled_threads: Vec<ThreadThrottle>,
    #[serde(default)]
    pub journal_commits: u64,
    #[serde(default)]
    pub journal_commit_max_ms: Option<f64>,
    #[serde(default)]
    pub device_requests: u64,
    #[serde(default)]
    pub device_service_p50_ms: Option<f64>,
    #[serde(default)]
    pub device_service_p99_ms: Option<f64>,
    #[serde(default)]
    pub device_service_max_ms: Option<f64>,
    /// The flusher's work on the target's device, by reason (periodic, background, sync).
    #[serde(default)]
    pub flushes: Vec<FlushCount>,
    /// All stalls together, by cause.
    #[serde(default)]
    pub stall_seconds: CauseSeconds,
}

impl KernelAccount {
    pub fn inferred(why: impl Into<String>) -> Self {
        KernelAccount {
            inferred_because: Some(why.into()),
            ..Default::default()
        }
    }

    /// A result written before runs read the kernel's events.
    pub fn absent() -> Self {
        Self::inferred("this result was written by a version that did not read them")
    }

    pub fn from_kernel(&self) -> bool {
        self.inferred_because.is_none()
    }

    /// Every traced thread's throttle pauses, summed.
    pub fn throttle_pause_s(&self) -> f64 {
        self.throttled_threads
            .iter()
            .fold(0.0, |sum, t| sum + t.pause_s)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadThrottle {
    pub tid: i32,
    pub name: String,
    pub pauses: u64,
    /// The kernel's chosen pauses, summed (positive ones: a pause of 0 or less is none).
    pub pause_s: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlushCount {
    pub reason: String,
    /// Pieces of flusher work begun for this reason (writeback_start).
    pub count: u64,
}

impl KernelAccount {
    /// The causes of all stalls with the time each cost, largest first; causes under a
    /// millisecond are left out. Empty without the kernel's events.
    pub fn causes_by_time(&self) -> Vec<(Cause, f64)> {
        if !self.from_kernel() {
            return Vec::new();
        }
        let mut parts: Vec<(Cause, f64)> = Cause::ALL
            .iter()
            .map(|c| (*c, self.stall_seconds.get(*c)))
            .filter(|(_, s)| *s >= 0.001)
            .collect();
        parts.sort_by(|a, b| b.1.total_cmp(&a.1));
        parts
    }

    /// The causes of all stalls together, largest first, in words: "throttled 4.47 s,
    /// device 0.20 s"; causes under a millisecond are left out.
    pub fn stall_causes_text(&self) -> String {
        self.causes_by_time()
            .iter()
            .map(|(c, s)| format!("{} {s:.2} s", c.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl crate::record::StallReport {
    /// "cam0 frame 1043 waited 1.21 s: throttled 1.10 s in balance_dirty_pages, ...": the
    /// stall with its kernel cause, or None where the events were not read.
    pub fn explained(&self) -> Option<String> {
        let causes = self.causes.as_ref()?;
        Some(format!(
            "{}{} waited {:.2} s at {:.1} s: {}",
            self.stream,
            self.frame
                .map(|f| format!(" frame {f}"))
                .unwrap_or_default(),
            self.duration_ms / 1e3,
            self.at_s,
            causes.evidence()
        ))
    }
}
