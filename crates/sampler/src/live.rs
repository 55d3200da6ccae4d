//! Reading the live system: the system layer's counters files, opened once and re-read
//! each sample, so a sample costs a handful of syscalls and no fork.

use sinkrate_sys::counters::{Counters, CountersFile as ProcFile};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sinkrate_procparse::{cpustat, diskstats, meminfo, pressure, vmstat};

use sinkrate_model::timeline::Hog;

use crate::hogs::HogTracker;
use crate::sample::{self, Raw};
use crate::timeline::Timeline;
use sinkrate_model::timeline::Sample;
use sinkrate_procparse::vmsettings::VmSettings;

#[derive(Debug, Clone)]
pub struct SamplerConfig {
    pub interval: Duration,
    /// Block devices to count (names as in /proc/diskstats); empty means every whole disk
    /// with a hardware device behind it.
    pub devices: Vec<String>,
    pub hogs: bool,
    /// Where /proc and /sys are: the live system, or a fixture tree of another machine.
    pub root: sinkrate_sys::SysRoot,
    /// The memory the timeline's budget is sized to; None: this machine's MemTotal.
    pub memory_bytes: Option<u64>,
    /// Whether to watch the kernel log for failures of `devices` (a card turning read-only,
    /// I/O errors on writeback that no write call returns).
    pub device_failures: bool,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            interval: Duration::from_millis(100),
            devices: Vec::new(),
            hogs: false,
            root: sinkrate_sys::SysRoot::live(),
            memory_bytes: None,
            device_failures: false,
        }
    }
}

impl SamplerConfig {
    /// What a recording is watched with: ten samples a second of `devices`, and the busiest
    /// threads (the flushers among them).
    pub fn recording(devices: Vec<String>) -> SamplerConfig {
        SamplerConfig {
            devices,
            hogs: true,
            device_failures: true,
            ..SamplerConfig::default()
        }
    }
}

/// Reads one sample at a time; used directly by `watch` and from a thread by [`Sampler`].
pub struct SamplerCore {
    meminfo: Option<ProcFile>,
    vmstat: Option<ProcFile>,
    diskstats: Option<ProcFile>,
    stat: Option<ProcFile>,
    psi_io: Option<ProcFile>,
    psi_mem: Option<ProcFile>,
    devices: Vec<String>,
    page_size: u64,
    started: Instant,
    prev: Option<Raw>,
    pub notes: Vec<String>,
    hogs: Option<HogTracker>,
    last_hog_scan: Option<Instant>,
    pub top_hog: Option<(String, f64)>,
    kernel_log: Option<sinkrate_sys::kmsg::KernelLog>,
    /// The kernel's first messages on a failure of the sampled devices (when seen, ns from
    /// the start), at most [`MAX_DEVICE_FAILURES`], and how many there were in all.
    pub device_failures: Vec<(u64, String)>,
    pub device_failure_count: u64,
    /// Each watched device's counters at the last sample, in `devices`' order (None until
    /// /proc/diskstats has listed it).
    per_device: Vec<Option<diskstats::DiskCounters>>,
}

/// The kernel's messages on device failures kept for the report (a failing card logs
/// thousands, rate-limited).
pub const MAX_DEVICE_FAILURES: usize = 8;

/// Whole disks with hardware behind them (not loop, ram, dm), from the system layer.
pub fn physical_disks() -> Vec<String> {
    sinkrate_sys::device::physical_disks(&sinkrate_sys::SysRoot::live())
}

pub fn read_vm_settings() -> VmSettings {
    sinkrate_sys::host::vm_settings_at(&sinkrate_sys::SysRoot::live())
}

impl SamplerCore {
    pub fn new(config: &SamplerConfig) -> SamplerCore {
        let mut notes = Vec::new();
        let root = &config.root;
        let mut open = |which: Counters, what: &str| {
            let f = ProcFile::open(root, which);
            if f.is_none() {
                notes.push(format!(
                    "{} cannot be read: no {what} in the results",
                    which.path()
                ));
            }
            f
        };
        let meminfo = open(Counters::MemInfo, "memory series");
        let vmstat = open(Counters::VmStat, "dirty thresholds");
        let diskstats = open(Counters::DiskStats, "disk series");
        let stat = open(Counters::CpuStat, "CPU series");
        let psi_io = ProcFile::open(root, Counters::PressureIo);
        let psi_mem = ProcFile::open(root, Counters::PressureMemory);
        if psi_io.is_none() {
            notes.push(
                "no /proc/pressure (PSI needs Linux 4.20 with CONFIG_PSI): no stall series".into(),
            );
        }
        let devices = if config.devices.is_empty() {
            sinkrate_sys::device::physical_disks(root)
        } else {
            config.devices.clone()
        };
        let kernel_log = if config.device_failures && root.is_live() {
            let log = sinkrate_sys::kmsg::KernelLog::mark();
            if log.is_none() {
                notes.push(
                    "the kernel log (/dev/kmsg) cannot be read by this user: failures the kernel reports on the device (I/O errors in writeback, a card turned read-only) are seen only where a write call returns them".into(),
                );
            }
            log
        } else {
            None
        };
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        SamplerCore {
            kernel_log,
            device_failures: Vec::new(),
            device_failure_count: 0,
            meminfo,
            vmstat,
            diskstats,
            stat,
            psi_io,
            psi_mem,
            per_device: vec![None; devices.len()],
            devices,
            page_size: if page > 0 { page as u64 } else { 4096 },
            started: Instant::now(),
            prev: None,
            notes,
            hogs: config.hogs.then(HogTracker::new),
            last_hog_scan: None,
            top_hog: None,
        }
    }

    pub fn devices(&self) -> &[String] {
        &self.devices
    }

    /// Each watched device with its kernel counters at the last sample (cumulative since
    /// boot, as /proc/diskstats gives them).
    pub fn device_counters(&self) -> impl Iterator<Item = (&str, &diskstats::DiskCounters)> + '_ {
        self.devices
            .iter()
            .zip(&self.per_device)
            .filter_map(|(name, c)| c.as_ref().map(|c| (name.as_str(), c)))
    }

    /// The machine's memory (MemTotal), which sizes the timeline's budget.
    pub fn mem_total_bytes(&mut self) -> Option<u64> {
        let text = self.meminfo.as_mut().and_then(ProcFile::read)?;
        meminfo::parse(text).mem_total_bytes
    }

    /// Reads everything once and returns the sample derived against the previous reading.
    pub fn sample(&mut self) -> Sample {
        let t_ns = self.started.elapsed().as_nanos() as u64;
        let mut raw = Raw {
            t_ns,
            ..Raw::default()
        };
        if let Some(text) = self.meminfo.as_mut().and_then(ProcFile::read) {
            raw.mem = Some((&meminfo::parse(text)).into());
        }
        if let Some(text) = self.vmstat.as_mut().and_then(ProcFile::read) {
            raw.vm = Some((&vmstat::parse(text)).into());
        }
        if let Some(text) = self.diskstats.as_mut().and_then(ProcFile::read) {
            let mut total = diskstats::DiskCounters::default();
            let mut any = false;
            for (_, _, name, c) in diskstats::lines(text) {
                if let Some(i) = self.devices.iter().position(|d| d == name) {
                    total.add(&c);
                    any = true;
                    self.per_device[i] = Some(c);
                }
            }
            raw.disk = any.then_some(total);
        }
        if let Some(text) = self.stat.as_mut().and_then(ProcFile::read) {
            raw.cpu = cpustat::parse(text);
        }
        if let Some(text) = self.psi_io.as_mut().and_then(ProcFile::read) {
            raw.psi_io = pressure::parse(text);
        }
        if let Some(text) = self.psi_mem.as_mut().and_then(ProcFile::read) {
            raw.psi_mem = pressure::parse(text);
        }
        let mut sample = sample::derive(&raw, self.prev.as_ref(), self.page_size);
        self.prev = Some(raw);
        if let Some(log) = self.kernel_log.as_mut() {
            for message in log.since() {
                if sinkrate_sys::kmsg::reports_device_failure(&message, &self.devices) {
                    self.device_failure_count += 1;
                    if self.device_failures.len() < MAX_DEVICE_FAILURES {
                        self.device_failures.push((t_ns, message));
                    }
                }
            }
        }
        if let Some(h) = self.hogs.as_mut() {
            let due = self
                .last_hog_scan
                .is_none_or(|t| t.elapsed() >= Duration::from_secs(1));
            if due {
                let interval = self
                    .last_hog_scan
                    .map(|t| t.elapsed().as_secs_f64())
                    .unwrap_or(1.0);
                self.top_hog = h.scan(interval);
                self.last_hog_scan = Some(Instant::now());
                sample.flusher_cpu_pct = Some(h.flusher_pct());
            }
        }
        sample
    }

    pub fn top_hogs(&self, n: usize) -> Vec<Hog> {
        self.hogs.as_ref().map(|h| h.top(n)).unwrap_or_default()
    }
}

/// What a background sampler hands back.
#[derive(Debug, Clone, Default)]
pub struct SamplerOutput {
    pub timeline: Vec<Sample>,
    pub settings: VmSettings,
    pub devices: Vec<String>,
    pub notes: Vec<String>,
    pub hogs: Vec<Hog>,
    /// The kernel's first messages on failures of the sampled devices, with when they were
    /// seen (ns from the start), and their count.
    pub device_failures: Vec<(u64, String)>,
    pub device_failure_count: u64,
    /// The instant the samples' times count from (their `t_ns` is since then).
    pub started: Option<Instant>,
}

impl SamplerOutput {
    /// CPU seconds of the kernel's flusher threads among the busiest seen (seed 001's
    /// spikes).
    pub fn flusher_cpu_s(&self) -> f64 {
        self.hogs
            .iter()
            .filter(|h| crate::hogs::is_flusher(&h.name))
            .map(|h| h.cpu_seconds)
            // An empty f64 sum is -0.0, which would print as "-0.00" CPU seconds.
            .fold(0.0, |a, b| a + b)
    }

    /// Drops what the sampler saw of disks: for a target in memory (tmpfs), whose writes
    /// reach no device, the disks it watched are the host's others, and their rates and
    /// failures are not the run's.
    pub fn forget_devices(&mut self) {
        for s in &mut self.timeline {
            s.disk_read_bytes_per_s = None;
            s.disk_write_bytes_per_s = None;
            s.disk_util_pct = None;
            s.disk_in_flight = None;
            s.disk_await_ms = None;
        }
        self.devices.clear();
        self.device_failures.clear();
        self.device_failure_count = 0;
    }
}

/// The sampler on its own thread, on an absolute schedule (no drift over hours).
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<SamplerOutput>>,
}

impl Sampler {
    pub fn start(config: SamplerConfig, expected: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("sinkrate-sampler".into())
            .spawn(move || {
                let expected_samples =
                    (expected.as_nanos() / config.interval.as_nanos().max(1)) as usize + 16;
                let settings = read_vm_settings();
                let mut core = SamplerCore::new(&config);
                let memory = config.memory_bytes.or_else(|| core.mem_total_bytes());
                let mut timeline = Timeline::for_run(memory, expected_samples, expected);
                let start = Instant::now();
                let mut k: u32 = 0;
                while !flag.load(Ordering::Relaxed) {
                    timeline.push(core.sample());
                    k += 1;
                    let next = start + config.interval * k;
                    let now = Instant::now();
                    if next > now {
                        std::thread::sleep(next - now);
                    }
                }
                timeline.push(core.sample());
                let mut notes = core.notes.clone();
                notes.extend(timeline.note());
                SamplerOutput {
                    timeline: timeline.into_samples(),
                    settings,
                    devices: core.devices().to_vec(),
                    notes,
                    hogs: core.top_hogs(10),
                    device_failures: std::mem::take(&mut core.device_failures),
                    device_failure_count: core.device_failure_count,
                    started: Some(core.started),
                }
            })
            .ok();
        Sampler { stop, handle }
    }

    pub fn stop(mut self) -> SamplerOutput {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
