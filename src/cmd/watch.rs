//! `sinkrate watch`: the page cache against the kernel's thresholds, writeback throttling,
//! disks and CPU hogs, sampled until Ctrl-C, a duration, or the watched command's exit.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::{Child, ExitCode};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use serde_json::json;
use sinkrate_sampler::live::{read_vm_settings, SamplerCore};
use sinkrate_sampler::{analyse, Sample, SamplerConfig, Summary};

use crate::cli::WatchArgs;

const MB: f64 = 1e6;

use crate::cli::values::duration as duration_arg;

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .is_some_and(|t| sinkrate_procparse::pid::parse_stat(&t).is_some_and(|s| s.running()))
}

fn gb(b: Option<u64>) -> String {
    b.map(|v| format!("{:.2} GB", v as f64 / 1e9))
        .unwrap_or_else(|| "-".into())
}

/// The live line, once a second.
fn live_line(s: &Sample, elapsed: Duration, device: &str, hog: Option<&(String, f64)>) -> String {
    let hog = hog.map(|(n, p)| format!("{n} {p:.0}%")).unwrap_or_default();
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
        s.disk_read_bytes_per_s
            .map(|r| format!("{:.1}MB/s", r / MB))
            .unwrap_or_else(|| "-".into()),
        s.disk_write_bytes_per_s
            .map(|w| format!("{:.1}MB/s", w / MB))
            .unwrap_or_else(|| "-".into()),
        s.disk_util_pct
            .map(|u| format!("{u:.0}%"))
            .unwrap_or_else(|| "-".into()),
        hog
    )
}

const LIVE_HEADER: &str =
    "time       avail     dirty        wb ceiling throttled  disk                        top hog";

fn csv_header() -> &'static str {
    "t_s,mem_available_bytes,cached_bytes,dirty_bytes,writeback_bytes,dirty_threshold_bytes,background_threshold_bytes,freerun_ceiling_bytes,throttled,disk_read_bytes_per_s,disk_write_bytes_per_s,disk_util_pct,disk_in_flight,disk_await_ms,cpu_user_pct,cpu_system_pct,cpu_iowait_pct,cpu_irq_pct,cpu_idle_pct,psi_io_some_pct,psi_io_full_pct,psi_memory_some_pct,psi_memory_full_pct"
}

fn csv_line(s: &Sample) -> String {
    fn u(v: Option<u64>) -> String {
        v.map(|x| x.to_string()).unwrap_or_default()
    }
    fn f(v: Option<f64>) -> String {
        v.map(|x| format!("{x:.3}")).unwrap_or_default()
    }
    [
        format!("{:.3}", s.t_ns as f64 / 1e9),
        u(s.mem_available_bytes),
        u(s.cached_bytes),
        u(s.dirty_bytes),
        u(s.writeback_bytes),
        u(s.dirty_threshold_bytes),
        u(s.background_threshold_bytes),
        u(s.freerun_ceiling_bytes),
        u8::from(s.throttled).to_string(),
        f(s.disk_read_bytes_per_s),
        f(s.disk_write_bytes_per_s),
        f(s.disk_util_pct),
        u(s.disk_in_flight),
        f(s.disk_await_ms),
        f(s.cpu_user_pct),
        f(s.cpu_system_pct),
        f(s.cpu_iowait_pct),
        f(s.cpu_irq_pct),
        f(s.cpu_idle_pct),
        f(s.psi_io_some_pct),
        f(s.psi_io_full_pct),
        f(s.psi_memory_some_pct),
        f(s.psi_memory_full_pct),
    ]
    .join(",")
}

/// node_exporter textfile format: HELP and TYPE for every metric, written to a temporary file
/// and renamed over the target so a scrape never sees half a file.
fn write_prometheus(path: &Path, s: &Sample, throttled_seconds: f64, devices: &str) -> Result<()> {
    let mut out = String::with_capacity(4096);
    let mut metric = |name: &str, kind: &str, help: &str, labels: &str, value: Option<f64>| {
        if let Some(v) = value {
            out.push_str(&format!("# HELP sinkrate_{name} {help}\n# TYPE sinkrate_{name} {kind}\nsinkrate_{name}{labels} {v}\n"));
        }
    };
    let b = |v: Option<u64>| v.map(|x| x as f64);
    metric(
        "mem_available_bytes",
        "gauge",
        "MemAvailable from /proc/meminfo.",
        "",
        b(s.mem_available_bytes),
    );
    metric(
        "dirty_bytes",
        "gauge",
        "Dirty page cache (/proc/meminfo Dirty).",
        "",
        b(s.dirty_bytes),
    );
    metric(
        "writeback_bytes",
        "gauge",
        "Page cache under writeback (/proc/meminfo Writeback).",
        "",
        b(s.writeback_bytes),
    );
    metric(
        "dirty_threshold_bytes",
        "gauge",
        "The kernel's hard dirty threshold (nr_dirty_threshold).",
        "",
        b(s.dirty_threshold_bytes),
    );
    metric(
        "background_threshold_bytes",
        "gauge",
        "The kernel's background writeback threshold.",
        "",
        b(s.background_threshold_bytes),
    );
    metric(
        "freerun_ceiling_bytes",
        "gauge",
        "Dirty + writeback above this throttle writers.",
        "",
        b(s.freerun_ceiling_bytes),
    );
    metric(
        "throttled",
        "gauge",
        "1 while dirty + writeback is above the freerun ceiling.",
        "",
        Some(f64::from(u8::from(s.throttled))),
    );
    metric(
        "throttled_seconds_total",
        "counter",
        "Seconds writers spent above the freerun ceiling since watch started.",
        "",
        Some(throttled_seconds),
    );
    let dl = format!("{{devices=\"{devices}\"}}");
    metric(
        "disk_read_bytes_per_second",
        "gauge",
        "Bytes read from the watched disks per second.",
        &dl,
        s.disk_read_bytes_per_s,
    );
    metric(
        "disk_write_bytes_per_second",
        "gauge",
        "Bytes written to the watched disks per second.",
        &dl,
        s.disk_write_bytes_per_s,
    );
    metric(
        "disk_utilisation_ratio",
        "gauge",
        "Share of the interval the watched disks were busy.",
        &dl,
        s.disk_util_pct.map(|p| p / 100.0),
    );
    metric(
        "cpu_iowait_ratio",
        "gauge",
        "Share of CPU time in iowait.",
        "",
        s.cpu_iowait_pct.map(|p| p / 100.0),
    );
    metric(
        "psi_io_full_ratio",
        "gauge",
        "Share of the interval all tasks stalled on I/O (PSI).",
        "",
        s.psi_io_full_pct.map(|p| p / 100.0),
    );
    let tmp = path.with_extension("prom.tmp");
    std::fs::write(&tmp, out).with_context(|| format!("{}: cannot write", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("{}: cannot replace", path.display()))?;
    Ok(())
}

fn summary_text(
    sum: &Summary,
    interval: Duration,
    devices: &[String],
    hogs: &[sinkrate_sampler::hogs::Hog],
    exit: Option<i32>,
) -> String {
    let mut t = String::new();
    t.push_str(&format!(
        "watched {:.1} s, {} samples every {} ms (disks: {})\n",
        sum.duration_s,
        sum.samples,
        interval.as_millis(),
        if devices.is_empty() {
            "none".to_string()
        } else {
            devices.join(", ")
        }
    ));
    if let Some(code) = exit {
        t.push_str(&format!("command exit code        {code}\n"));
    }
    t.push_str(&format!(
        "least MemAvailable       {}\n",
        gb(sum.min_mem_available_bytes)
    ));
    t.push_str(&format!(
        "peak dirty + writeback   {}{}\n",
        gb(sum.peak_dirty_writeback_bytes),
        match (sum.peak_ceiling_pct, sum.freerun_ceiling_bytes) {
            (Some(p), Some(c)) => format!(
                " = {p:.0}% of the kernel's freerun ceiling ({})",
                gb(Some(c))
            ),
            _ => String::new(),
        }
    ));
    if sum.throttled_samples == 0 {
        t.push_str("writers throttled        never\n");
    } else {
        t.push_str(&format!(
            "writers throttled        {} samples, {:.2} s, first after {:.1} s\n",
            sum.throttled_samples,
            sum.throttled_seconds,
            sum.first_throttled_at_s.unwrap_or(0.0)
        ));
    }
    if let Some(max) = sum.device_write_bytes_per_s_max {
        t.push_str(&format!(
            "device writes            {:.1} MB/s max{}\n",
            max / MB,
            sum.device_write_bytes_per_s_busy_mean
                .map(|m| format!(", {:.1} MB/s while busy", m / MB))
                .unwrap_or_default()
        ));
    }
    let st = &sum.settings;
    let limit = |bytes: Option<u64>, ratio: Option<u64>| match (bytes, ratio) {
        (Some(b), _) if b > 0 => format!("{b} bytes"),
        (_, Some(r)) => format!("{r}%"),
        _ => "?".into(),
    };
    t.push_str(&format!(
        "vm settings              dirty {} / background {}, expire {} cs, writeback every {} cs\n",
        limit(st.dirty_bytes, st.dirty_ratio),
        limit(st.dirty_background_bytes, st.dirty_background_ratio),
        st.dirty_expire_centisecs
            .map(|v| v.to_string())
            .unwrap_or_else(|| "?".into()),
        st.dirty_writeback_centisecs
            .map(|v| v.to_string())
            .unwrap_or_else(|| "?".into()),
    ));
    if let Some(held) = sum.seed000_rule_held {
        t.push_str(&format!(
            "seed 000's rule          {}\n",
            if held { "held (peak <= (dirty_ratio + dirty_background_ratio)/200 of MemAvailable)" } else { "broken: the page cache passed (dirty_ratio + dirty_background_ratio)/200 of MemAvailable" }
        ));
    }
    if !hogs.is_empty() {
        let list: Vec<String> = hogs
            .iter()
            .take(3)
            .map(|h| {
                format!(
                    "{} {:.1} s (peak {:.0}%)",
                    h.name, h.cpu_seconds, h.peak_cpu_pct
                )
            })
            .collect();
        t.push_str(&format!("top CPU                  {}\n", list.join(", ")));
    }
    if let Some(r) = &sum.recommendation {
        t.push_str(&format!("recommendation           {}\n", r.text));
        for c in &r.commands {
            t.push_str(&format!("  {c}\n"));
        }
    }
    t
}

pub fn run(args: WatchArgs) -> Result<ExitCode> {
    for (flag, p) in [
        ("--output", &args.output),
        ("--csv", &args.csv),
        ("--prometheus", &args.prometheus),
    ] {
        if let Some(p) = p {
            crate::check_output_path(flag, p)?;
        }
    }
    let interval = duration_arg("interval", &args.interval)?;
    if interval < Duration::from_millis(10) {
        return Err(anyhow!(
            "--interval: {} is below the 10ms minimum",
            args.interval
        ));
    }
    let duration = args
        .duration
        .as_deref()
        .map(|d| duration_arg("duration", d))
        .transpose()?;
    for pid in &args.pids {
        if !alive(*pid) {
            return Err(anyhow!("--pid {pid}: no such running process"));
        }
    }
    for d in &args.devices {
        if !Path::new("/sys/class/block").join(d).exists() {
            return Err(anyhow!("--device {d}: no such block device (names as in /proc/diskstats, e.g. sda, mmcblk0)"));
        }
    }
    let stop = crate::interrupt_flag()?;
    let config = SamplerConfig {
        interval,
        devices: args.devices.clone(),
        hogs: true,
    };
    let mut settings = read_vm_settings();
    let mut settings_checked = Instant::now();
    let mut settings_changes: Vec<serde_json::Value> = Vec::new();
    let mut core = SamplerCore::new(&config);
    for n in &core.notes {
        eprintln!("sinkrate: note: {n}");
    }
    let devices = core.devices().to_vec();
    let device_label = if devices.len() == 1 {
        devices[0].clone()
    } else {
        "disks".into()
    };
    let mut child: Option<Child> = match args.command.split_first() {
        Some((program, rest)) => Some(
            std::process::Command::new(program)
                .args(rest)
                .spawn()
                .map_err(|e| anyhow!("{program}: cannot run it: {e}"))?,
        ),
        None => None,
    };
    let mut csv = match &args.csv {
        Some(p) => {
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(p)
                    .with_context(|| format!("{}: cannot create", p.display()))?,
            );
            writeln!(f, "{}", csv_header())?;
            Some(f)
        }
        None => None,
    };
    let live = match args.live.as_str() {
        "always" => true,
        "never" => false,
        _ => std::io::stderr().is_terminal(),
    };
    let mut tui = if args.tui {
        if !std::io::stderr().is_terminal() {
            return Err(anyhow!(
                "--tui needs a terminal on standard error (use --live=always to log lines instead)"
            ));
        }
        Some(super::watch_tui::Tui::start().context("starting the full-screen view")?)
    } else {
        None
    };
    let live = live && tui.is_none();
    if live {
        eprintln!("{LIVE_HEADER}");
    }
    let command_label = args.command.join(" ");
    let mut last_draw: Option<Instant> = None;
    // q in the full-screen view: a normal end, unlike Ctrl-C.
    let mut quit = false;
    let capacity = duration
        .map(|d| (d.as_nanos() / interval.as_nanos()) as usize + 16)
        .unwrap_or(4096);
    let mut timeline: Vec<Sample> = Vec::with_capacity(capacity.min(1 << 22));
    let started = Instant::now();
    let started_unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut last_live = Instant::now();
    let mut throttled_s = 0.0;
    let mut exit_status: Option<std::process::ExitStatus> = None;
    let mut k: u32 = 0;
    loop {
        let s = core.sample();
        if s.throttled {
            if let Some(prev) = timeline.last() {
                throttled_s += s.t_ns.saturating_sub(prev.t_ns) as f64 / 1e9;
            }
        }
        if let Some(f) = csv.as_mut() {
            writeln!(f, "{}", csv_line(&s))?;
        }
        if let Some(p) = &args.prometheus {
            write_prometheus(p, &s, throttled_s, &devices.join(","))?;
        }
        if live && last_live.elapsed() >= Duration::from_secs(1) {
            eprintln!(
                "{}",
                live_line(&s, started.elapsed(), &device_label, core.top_hog.as_ref())
            );
            last_live = Instant::now();
        }
        // The sysctls rarely change; a read a second notices when someone tunes them.
        if settings_checked.elapsed() >= Duration::from_secs(1) {
            let now = read_vm_settings();
            if now != settings {
                settings_changes.push(json!({ "t_ns": s.t_ns, "from": settings, "to": now }));
                if live {
                    eprintln!("sinkrate: note: vm dirty settings changed: {now:?}");
                }
                settings = now;
            }
            settings_checked = Instant::now();
        }
        timeline.push(s);
        if let Some(t) = tui.as_mut() {
            if last_draw.is_none_or(|d| d.elapsed() >= Duration::from_millis(250)) {
                let hogs = core.top_hogs(8);
                let frame = super::watch_tui::Frame {
                    elapsed: started.elapsed(),
                    devices: &device_label,
                    throttled_seconds: throttled_s,
                    hogs: &hogs,
                    command: &command_label,
                };
                t.draw(&timeline, &frame)?;
                last_draw = Some(Instant::now());
            }
            if t.quit_requested() {
                quit = true;
            }
        }
        if let Some(c) = child.as_mut() {
            if let Ok(Some(status)) = c.try_wait() {
                exit_status = Some(status);
                break;
            }
        }
        if quit || stop.load(Ordering::Relaxed) {
            break;
        }
        if duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        if !args.pids.is_empty() && !args.pids.iter().any(|p| alive(*p)) {
            break;
        }
        k += 1;
        let next = started + interval * k;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
    }
    if let (Some(c), None) = (child.as_mut(), exit_status) {
        // Interrupted: pass the interrupt on, then wait for the command to finish.
        // SAFETY: signalling the child this process started.
        unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
        exit_status = c.wait().ok();
    }
    drop(tui);
    if let Some(mut f) = csv.take() {
        f.flush()?;
    }
    let summary = analyse(&timeline, settings);
    let hogs = core.top_hogs(10);
    let exit_code = exit_status.map(|s| {
        use std::os::unix::process::ExitStatusExt;
        s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
    });
    let body = if args.output_format == "json" {
        let doc = json!({
            "schema": sinkrate_model::SCHEMA,
            "kind": "watch",
            "tool": { "name": "sinkrate", "version": sinkrate_model::TOOL_VERSION },
            "started_at": sinkrate_report::fio_json::rfc3339(started_unix_ms),
            "timestamp_ms": started_unix_ms,
            "host": sinkrate_engine::host::host_facts(),
            "config": {
                "interval_ns": interval.as_nanos() as u64,
                "duration_ns": duration.map(|d| d.as_nanos() as u64),
                "devices": devices,
                "pids": args.pids,
                "command": args.command,
            },
            "interrupted": stop.load(Ordering::Relaxed),
            "command_exit_code": exit_code,
            "notes": core.notes,
            "vm_settings_changes": settings_changes,
            "summary": summary,
            "hogs": hogs,
            "timeline": timeline,
        });
        let mut v = serde_json::to_vec_pretty(&doc)?;
        v.push(b'\n');
        v
    } else {
        summary_text(&summary, interval, &devices, &hogs, exit_code).into_bytes()
    };
    match &args.output {
        Some(p) => std::fs::write(p, &body)
            .with_context(|| format!("{}: cannot write the results", p.display()))?,
        None => crate::write_stdout(&body)?,
    }
    Ok(match exit_code {
        Some(c) => ExitCode::from(c.clamp(0, 255) as u8),
        None if stop.load(Ordering::Relaxed) => ExitCode::from(130),
        None => ExitCode::SUCCESS,
    })
}
