//! The charts a report can hold, each with its title, axes (with units) and what it says.

use crate::figures::Chart;

pub type Make = fn() -> Chart;

/// The order charts appear in.
pub const ORDER: [&str; 9] = [
    "throughput",
    "page_cache",
    "write_latency",
    "lateness",
    "stall_causes",
    "write_cdf",
    "job_latency_cdf",
    "cpu",
    "device",
];

pub const THROUGHPUT: (&str, Make) = ("throughput", || {
    let mut c = Chart::new("throughput", "Throughput", "time (s)", "rate (MB/s)");
    c.caption = "What the application wrote and what reached the device, per interval.".into();
    c
});

pub const PAGE_CACHE: (&str, Make) = ("page_cache", || {
    let mut c = Chart::new(
        "page_cache",
        "Page cache: dirty and writeback data against the kernel's thresholds",
        "time (s)",
        "data (MB)",
    );
    c.caption = "Writers are throttled while dirty + writeback is above the freerun ceiling \
                 (shaded); they block at the hard limit."
        .into();
    c
});

pub const WRITE_LATENCY: (&str, Make) = ("write_latency", || {
    let mut c = Chart::new(
        "write_latency",
        "Write time over the run",
        "time (s)",
        "write time (ms, log)",
    );
    c.y_log = true;
    c.caption =
        "How long each frame's writes took (first write call to last), by capture time.".into();
    c
});

pub const WRITE_CDF: (&str, Make) = ("write_cdf", || {
    let mut c = Chart::new(
        "write_cdf",
        "Write time distribution",
        "write time (ms, log)",
        "writes at or below (%)",
    );
    c.x_log = true;
    c.caption = "Read across at 99 for the p99; the right end is the worst write.".into();
    c
});

pub const LATENESS: (&str, Make) = ("lateness", || {
    let mut c = Chart::new(
        "lateness",
        "Per-frame lateness, drops and stalls",
        "time (s)",
        "late by (ms)",
    );
    c.caption = "How late each frame reached the disk against its deadline; red ticks are \
                 dropped frames, numbered lines the stalls listed below."
        .into();
    c
});

pub const STALL_CAUSES: (&str, Make) = ("stall_causes", || {
    let mut c = Chart::new(
        "stall_causes",
        "Why each stall took its time (the kernel's events)",
        "time (s)",
        "stalled (ms)",
    );
    c.caption = "A bar per stalled write call, as long as the call and as high as the time                  each cause took in it: throttled, waiting for writeback, a journal commit,                  the device, waiting for a CPU, running, unexplained."
        .into();
    c
});

pub const CPU: (&str, Make) = ("cpu", || {
    let mut c = Chart::new("cpu", "CPU", "time (s)", "CPU (%)");
    c.caption = "User, system and iowait: share of all CPUs; the flusher threads: share of one \
                 core (seed 001's spikes)."
        .into();
    c
});

pub const DEVICE: (&str, Make) = ("device", || {
    let mut c = Chart::new(
        "device",
        "Device utilisation",
        "time (s)",
        "busy (% of time)",
    );
    c.caption = "Share of each interval the device had I/O in flight (/proc/diskstats).".into();
    c
});

pub const JOB_LATENCY_CDF: (&str, Make) = ("job_latency_cdf", || {
    let mut c = Chart::new(
        "job_latency_cdf",
        "Completion latency distribution",
        "completion latency (ms, log)",
        "I/Os at or below (%)",
    );
    c.x_log = true;
    c.caption = "From each job's latency histogram (fio's clat).".into();
    c
});
