//! `sinkrate watch`: arguments to a watch session (crates/sampler), what it shows while it
//! runs (live line, CSV, Prometheus file, full-screen view), and its report rendered.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use sinkrate_model::timeline::Sample;
use sinkrate_model::watch::{SettingsChange, WatchConfig};
use sinkrate_model::{Envelope, RunKind};
use sinkrate_sampler::watch::{self, View, WatchObserver};

use crate::cli::WatchArgs;
use crate::export::plan::Style;
use crate::export::samples_csv::{csv_header, csv_line};
use crate::export::watch_text::gb;
use crate::export::{prometheus::write_prometheus, Exporter, Json};
use sinkrate_sampler::fleet::FleetMetrics;

const MB: f64 = 1e6;

/// The live line, once a second.
fn live_line(s: &Sample, elapsed: Duration, device: &str, hog: Option<&(String, f64)>) -> String {
    let hog = hog.map(|(n, p)| format!("{n} {p:.0}%")).unwrap_or_default();
    let rate = |v: Option<f64>| {
        v.map(|r| format!("{:.1}MB/s", r / MB))
            .unwrap_or_else(|| "-".into())
    };
    format!(
        "{:02}:{:02}  {:>9} {:>9} {:>9} {:>7} {:>9}  {:>5} r {:>8} w {:>8} util {:>4}  {}",
        elapsed.as_secs() / 60,
        elapsed.as_secs() % 60,
        gb(s.mem_available_bytes),
        gb(s.dirty_bytes),
        gb(s.writeback_bytes),
        s.ceiling_pct()
            .map(|p| format!("{p:.0}%"))
            .unwrap_or_else(|| "-".into()),
        if s.throttled { "THROTTLED" } else { "no" },
        device,
        rate(s.disk_read_bytes_per_s),
        rate(s.disk_write_bytes_per_s),
        s.disk_util_pct
            .map(|u| format!("{u:.0}%"))
            .unwrap_or_else(|| "-".into()),
        hog
    )
}

const LIVE_HEADER: &str =
    "time       avail     dirty        wb ceiling throttled  disk                        top hog";

/// Everything watch shows while it samples.
struct Outputs {
    live: bool,
    last_live: Instant,
    device_label: String,
    /// Unbuffered: each sample's line is one write, so a failure is one line's.
    csv: Option<std::fs::File>,
    csv_path: Option<PathBuf>,
    prometheus: Option<PathBuf>,
    /// The fleet's counters and stalls, for --prometheus.
    fleet: FleetMetrics,
    prometheus_every: Duration,
    prometheus_written: Option<Instant>,
    tui: Option<super::watch_tui::Tui>,
    last_draw: Option<Instant>,
    command: String,
    /// When the watch started: side-output failures are dated from it.
    started: Instant,
    /// Side outputs that failed while the watch ran, each told once per failure.
    side: SideOutputs,
}

/// What went wrong with the side outputs (--csv, --prometheus) while the watch ran. Such a
/// failure never ends the watch nor touches the watched command: it is said on standard
/// error when it starts and when it clears, and ends as a warning in the result.
#[derive(Default)]
struct SideOutputs {
    /// Per flag: how many writes failed, the first failure (when and why), and whether the
    /// last write failed (a failure under way, said once).
    failed: Vec<SideFailure>,
}

struct SideFailure {
    flag: &'static str,
    path: PathBuf,
    count: u64,
    first_at: Duration,
    first_error: String,
    failing: bool,
}

impl SideOutputs {
    fn failed(&mut self, flag: &'static str, path: &Path, at: Duration, error: &anyhow::Error) {
        let entry = match self.failed.iter_mut().position(|f| f.flag == flag) {
            Some(i) => &mut self.failed[i],
            None => {
                self.failed.push(SideFailure {
                    flag,
                    path: path.to_path_buf(),
                    count: 0,
                    first_at: at,
                    first_error: format!("{error:#}"),
                    failing: false,
                });
                self.failed.last_mut().expect("just pushed")
            }
        };
        entry.count += 1;
        if !entry.failing {
            entry.failing = true;
            eprintln!(
                "sinkrate: warning: {error:#} at {}; the watch and the watched command go on, and it is tried again at the next {}",
                clock(at),
                if flag == "--csv" { "sample" } else { "interval" }
            );
        }
    }

    fn succeeded(&mut self, flag: &'static str, at: Duration) {
        if let Some(f) = self.failed.iter_mut().find(|f| f.flag == flag && f.failing) {
            f.failing = false;
            eprintln!(
                "sinkrate: note: {flag} {} is written again from {}",
                f.path.display(),
                clock(at)
            );
        }
    }

    /// The first side output that failed, as a line.
    fn first_failure(&self) -> Option<String> {
        self.failed.first().map(|f| {
            format!(
                "{} {}: {} write(s) failed, the first at {}: {}",
                f.flag,
                f.path.display(),
                f.count,
                clock(f.first_at),
                f.first_error
            )
        })
    }

    fn warnings(&self) -> Vec<sinkrate_model::Warning> {
        self.failed
            .iter()
            .map(|f| sinkrate_model::Warning {
                id: if f.flag == "--csv" {
                    "watch.csv_not_written".into()
                } else {
                    "watch.prometheus_not_written".into()
                },
                job: None,
                text: format!(
                    "{} {}: {} write(s) failed, the first at {} ({}){}; the watch and the watched command went on",
                    f.flag,
                    f.path.display(),
                    f.count,
                    clock(f.first_at),
                    f.first_error,
                    if f.failing {
                        " and it was still failing at the end"
                    } else {
                        ""
                    }
                ),
            })
            .collect()
    }
}

/// mm:ss since the watch started.
fn clock(at: Duration) -> String {
    format!("{:02}:{:02}", at.as_secs() / 60, at.as_secs() % 60)
}

impl Outputs {
    /// Every side output made and written once before the watched command starts: a place
    /// that cannot be written at all (a full filesystem, a read-only directory) is refused
    /// then, never found out after the command runs.
    fn prepare(&mut self) -> Result<()> {
        if let Some(p) = &self.csv_path {
            let mut f = sinkrate_sys::output::create(p)
                .with_context(|| format!("--csv {}: cannot create", p.display()))?;
            f.write_all(format!("{}\n", csv_header()).as_bytes())
                .with_context(|| format!("--csv {}: cannot write", p.display()))?;
            self.csv = Some(f);
        }
        if let Some(p) = &self.prometheus {
            write_prometheus(p, &self.fleet, true)?;
        }
        Ok(())
    }
}

impl WatchObserver for Outputs {
    type Error = anyhow::Error;

    fn started(&mut self, devices: &[String], notes: &[String]) -> Result<()> {
        for n in notes {
            eprintln!("sinkrate: note: {n}");
        }
        self.device_label = if devices.len() == 1 {
            devices[0].clone()
        } else {
            "disks".into()
        };
        if self.live {
            eprintln!("{LIVE_HEADER}");
        }
        Ok(())
    }

    fn sample(&mut self, v: &View<'_>) -> Result<bool> {
        let Some(s) = v.timeline.last() else {
            return Ok(true);
        };
        let at = self.started.elapsed();
        if let Some(f) = self.csv.as_mut() {
            // Each line reaches the file as it is made: a line that cannot be written is
            // said, and the next one is tried.
            let path = self.csv_path.as_deref().unwrap_or(Path::new("-"));
            match f.write_all(format!("{}\n", csv_line(s)).as_bytes()) {
                Ok(()) => self.side.succeeded("--csv", at),
                Err(e) => {
                    let e = anyhow!(e).context(format!("--csv {}: cannot write", path.display()));
                    self.side.failed("--csv", path, at, &e);
                }
            }
        }
        if let Some(p) = &self.prometheus {
            self.fleet.observe(
                s,
                sinkrate_sys::host::unix_ms_now() as f64 / 1e3,
                v.core.device_counters(),
            );
            if self
                .prometheus_written
                .is_none_or(|w| w.elapsed() >= self.prometheus_every)
            {
                // A failed rewrite leaves the last good file in place (it is replaced by
                // rename), which node_exporter keeps serving with its timestamp.
                match write_prometheus(p, &self.fleet, true) {
                    Ok(()) => self.side.succeeded("--prometheus", at),
                    Err(e) => self.side.failed("--prometheus", p, at, &e),
                }
                self.prometheus_written = Some(Instant::now());
            }
        }
        if self.live && self.last_live.elapsed() >= Duration::from_secs(1) {
            eprintln!("{}", live_line(s, v.elapsed, &self.device_label, v.top_hog));
            self.last_live = Instant::now();
        }
        if let Some(t) = self.tui.as_mut() {
            if self
                .last_draw
                .is_none_or(|d| d.elapsed() >= Duration::from_millis(250))
            {
                let hogs = v.core.top_hogs(8);
                let frame = super::watch_tui::Frame {
                    elapsed: v.elapsed,
                    devices: &self.device_label,
                    throttled_seconds: v.throttled_seconds,
                    hogs: &hogs,
                    command: &self.command,
                };
                t.draw(v.timeline, &frame)?;
                self.last_draw = Some(Instant::now());
            }
            // q in the full-screen view: a normal end, unlike Ctrl-C.
            if t.quit_requested() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn settings_changed(&mut self, change: &SettingsChange) {
        if self.live {
            eprintln!("sinkrate: note: vm dirty settings changed: {:?}", change.to);
        }
    }
}

/// How often the --prometheus file is rewritten: [`PROMETHEUS_EVERY`] unless asked.
fn prometheus_every(args: &WatchArgs) -> Result<Duration> {
    match (args.prometheus_every, &args.prometheus) {
        (None, _) => Ok(PROMETHEUS_EVERY),
        (Some(_), None) => Err(anyhow!(
            "--prometheus-every: only with --prometheus FILE (it says how often FILE is rewritten)"
        )),
        (Some(every), Some(_)) if every < Duration::from_secs(1) => Err(anyhow!(
            "--prometheus-every: {} ms is below the 1s minimum",
            every.as_millis()
        )),
        (Some(every), Some(_)) => Ok(every),
    }
}

/// A scrape every 15 s (Prometheus' default) sees a figure at most 5 s old.
const PROMETHEUS_EVERY: Duration = Duration::from_secs(5);

fn config(args: &WatchArgs) -> Result<WatchConfig> {
    let interval = args.interval;
    if interval < watch::MIN_INTERVAL {
        return Err(anyhow!(
            "--interval: {} ms is below the 10ms minimum",
            interval.as_secs_f64() * 1e3
        ));
    }
    let duration = args.duration;
    if duration.is_some_and(|d| d.is_zero()) {
        return Err(anyhow!("--duration: must be above zero (e.g. 30s)"));
    }
    if let Some(pid) = watch::first_not_running(&args.pids) {
        return Err(anyhow!("--pid {pid}: no such running process"));
    }
    if let Some((pid, uid)) = watch::first_not_ours(&args.pids) {
        return Err(anyhow!(
            "--pid {pid}: belongs to another user (uid {uid}); watching another user's process needs root"
        ));
    }
    for d in &args.devices {
        if !sinkrate_sys::device::exists(&sinkrate_sys::SysRoot::live(), d) {
            return Err(anyhow!("--device {d}: no such block device (names as in /proc/diskstats, e.g. sda, mmcblk0)"));
        }
    }
    Ok(WatchConfig {
        interval,
        duration,
        devices: args.devices.clone(),
        pids: args.pids.clone(),
        command: args.command.clone(),
        stall_threshold: args.stall_threshold,
        kernel_events_off: args
            .no_kernel_events
            .then(|| "--no-kernel-events was given".to_string()),
    })
}

pub fn run(args: WatchArgs) -> Result<ExitCode> {
    let prometheus_every = prometheus_every(&args)?;
    crate::check_outputs(
        &[
            ("--output", args.out.output.as_deref()),
            ("--csv", args.csv.as_deref()),
            ("--prometheus", args.prometheus.as_deref()),
            ("--report", args.report.as_deref()),
        ],
        &[],
    )?;
    let cfg = config(&args)?;
    let stop = crate::interrupt_flag()?;
    let tui = if args.tui {
        if !std::io::stderr().is_terminal() {
            return Err(anyhow!(
                "--tui needs a terminal on standard error (use --live=always to log lines instead)"
            ));
        }
        Some(super::watch_tui::Tui::start().context("starting the full-screen view")?)
    } else {
        None
    };
    let mut outputs = Outputs {
        live: args.live.wanted(std::io::stderr().is_terminal()) && tui.is_none(),
        last_live: Instant::now(),
        device_label: String::new(),
        csv: None,
        csv_path: args.csv.clone(),
        prometheus: args.prometheus.clone(),
        fleet: FleetMetrics::new(sinkrate_sys::host::unix_ms_now() as f64 / 1e3),
        prometheus_every,
        prometheus_written: None,
        tui,
        last_draw: None,
        command: args.command.join(" "),
        started: Instant::now(),
        side: SideOutputs::default(),
    };
    outputs.prepare()?;
    let started = sinkrate_sys::host::unix_ms_now();
    let report = watch::run(&cfg, &stop, &mut outputs).map_err(|e| anyhow!("{e}"))?;
    drop(outputs.tui.take());
    let at_end = outputs.started.elapsed();
    // The file left behind says the watch has ended, with the counters as they stood.
    if let Some(p) = &args.prometheus {
        match write_prometheus(p, &outputs.fleet, false) {
            Ok(()) => outputs.side.succeeded("--prometheus", at_end),
            Err(e) => outputs.side.failed("--prometheus", p, at_end, &e),
        }
    }
    let interrupted = stop.load(Ordering::Relaxed);
    let exit_code = report.command_exit_code;
    let failure = report.failure.clone();
    // Without a watched command the side outputs are the watch's own product: one that could
    // not be written fails the run (after its whole duration, with every figure it took). With
    // a command, the exit code stays the command's and the failure is the warning alone.
    let side_failed = args
        .command
        .is_empty()
        .then(|| outputs.side.first_failure())
        .flatten();
    let killed_by = report.command_signal;
    let mut run = Envelope::new(
        RunKind::Watch,
        sinkrate_sys::host::host_facts(),
        started,
        report,
    );
    run.interrupted = interrupted;
    run.warnings = outputs.side.warnings();
    run.error = failure
        .clone()
        .or_else(|| side_failed.clone())
        .map(|what| sinkrate_model::RunError { what, at_s: None });
    // A watch of weeks holds a timeline of up to 16 MiB: its JSON goes out as it is made.
    args.out.print(&run, &Style::default())?;
    if let Some(p) = &args.report {
        super::report::write_for_run(&Json.export(&run)?, "watch", p)?;
    }
    for w in &run.warnings {
        eprintln!("sinkrate: warning: {}", w.text);
    }
    if let (None, Some(what)) = (&failure, &side_failed) {
        eprintln!("sinkrate: error: {what}");
        return Ok(ExitCode::from(2));
    }
    if let Some(what) = &failure {
        eprintln!("sinkrate: error: the watch stopped early: {what}");
        return Ok(ExitCode::from(2));
    }
    if let Some(sig) = killed_by.filter(|_| !interrupted) {
        eprintln!(
            "sinkrate: error: the watched command ({}) was killed by signal {sig}",
            args.command.join(" ")
        );
    }
    Ok(match exit_code {
        Some(c) => ExitCode::from(c.clamp(0, 255) as u8),
        None if interrupted => ExitCode::from(130),
        None => ExitCode::SUCCESS,
    })
}
