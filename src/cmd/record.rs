//! `sinkrate record`: emulate a recording pipeline and say whether the storage keeps up.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use serde_json::{json, Value};
use sinkrate_record::config::{
    parse_bitrate, profile, PreallocMode, RecordConfig, StreamSpec, WriteMode,
};
use sinkrate_record::frames::FrameSizes;
use sinkrate_record::run::StreamResult;
use sinkrate_record::verdict::{decide, Evidence, Verdict};
use sinkrate_sampler::{analyse, Sample, Sampler, SamplerConfig};
use sinkrate_stats::LatencyRecorder;

use crate::cli::RecordArgs;

use crate::cli::values::{duration as time_arg, size as size_arg};

/// Checks the stream and duration arguments without running anything (for --find-max,
/// which must refuse bad input before it measures the device).
pub(super) fn check_args(args: &RecordArgs) -> Result<()> {
    streams_from(args)?;
    let d = time_arg("duration", &args.duration)?;
    if d.is_zero() {
        return Err(anyhow!("--duration: must be above zero (e.g. 30s)"));
    }
    if !args.dir.is_dir() {
        return Err(anyhow!("--dir {}: not a directory", args.dir.display()));
    }
    Ok(())
}

fn streams_from(args: &RecordArgs) -> Result<(Vec<StreamSpec>, String, Option<Duration>)> {
    let custom = args.fps.is_some() || args.frame_size.is_some() || args.bitrate.is_some();
    if custom && args.profile.is_some() {
        return Err(anyhow!("--profile cannot be combined with --fps/--frame-size/--bitrate (give one or the other)"));
    }
    if !custom {
        if args.streams != 1 || args.gop.is_some() {
            return Err(anyhow!(
                "--streams and --gop shape custom streams: give them with --fps and --frame-size or --bitrate (a profile sets its own)"
            ));
        }
        let name = args.profile.as_deref().unwrap_or("dual-1080p30");
        let p = profile(name).map_err(|e| anyhow!(e))?;
        return Ok((
            (p.streams)(),
            format!("profile {}: {}", p.name, p.about),
            p.fdatasync_every,
        ));
    }
    let fps = args.fps.unwrap_or(30.0);
    if !(fps > 0.0 && fps <= 100_000.0) {
        return Err(anyhow!(
            "--fps: {fps} is out of range (above 0, at most 100000)"
        ));
    }
    if args.streams == 0 || args.streams > 64 {
        return Err(anyhow!(
            "--streams: {} is out of range (1 to 64)",
            args.streams
        ));
    }
    let sizes = match (&args.frame_size, &args.bitrate) {
        (Some(_), Some(_)) => return Err(anyhow!("give --frame-size or --bitrate, not both")),
        (Some(f), None) => FrameSizes::Fixed {
            bytes: size_arg("frame-size", f)?,
        },
        (None, Some(b)) => FrameSizes::Bitrate {
            bits_per_s: parse_bitrate(b).map_err(|e| anyhow!("--bitrate: {e}"))?,
            fps,
            gop: args.gop.unwrap_or(fps.round().max(1.0) as u32).max(1),
            i_to_p: 8.0,
            jitter: 0.2,
        },
        (None, None) => {
            return Err(anyhow!(
                "give --frame-size (e.g. 3M) or --bitrate (e.g. 12M) with --fps"
            ))
        }
    };
    let streams: Vec<StreamSpec> = (0..args.streams)
        .map(|i| StreamSpec {
            name: format!("cam{i}"),
            fps,
            sizes: sizes.clone(),
        })
        .collect();
    let label = format!("{} stream(s) x {fps} fps", args.streams);
    Ok((streams, label, None))
}

fn percentiles(r: &LatencyRecorder) -> Value {
    let s = r.summary(&[50.0, 90.0, 99.0, 99.9]);
    json!({
        "p50": s.percentile(50.0), "p90": s.percentile(90.0), "p99": s.percentile(99.0),
        "p999": s.percentile(99.9), "max": s.max_ns, "mean": s.mean_ns, "count": s.count,
    })
}

fn ms(ns: Option<u64>) -> String {
    ns.map(|v| format!("{:.1} ms", v as f64 / 1e6))
        .unwrap_or_else(|| "-".into())
}

/// What the sampler saw nearest to `t_s` into the run.
fn context_at(timeline: &[Sample], t_s: f64) -> Option<&Sample> {
    let t_ns = (t_s * 1e9) as u64;
    timeline.iter().min_by_key(|s| s.t_ns.abs_diff(t_ns))
}

/// A journal left by a run that was killed: its settings go back before anything else.
fn restore_left_over_settings() -> Result<()> {
    let journal = Path::new(sinkrate_sysctl::DEFAULT_JOURNAL);
    // SAFETY: geteuid has no preconditions.
    if !journal.exists() || unsafe { libc::geteuid() } != 0 {
        return Ok(());
    }
    let restored = match sinkrate_sysctl::restore_pending(Path::new("/proc/sys"), journal) {
        Ok(r) => r,
        // Another run is alive and holds them: not ours to touch.
        Err(sinkrate_sysctl::Error::Busy(_)) => return Ok(()),
        Err(e) => {
            return Err(anyhow!(e).context("restoring the settings of an earlier, interrupted run"))
        }
    };
    if !restored.is_empty() {
        let names: Vec<String> = restored
            .iter()
            .map(|e| format!("{}={}", e.name, e.original))
            .collect();
        eprintln!(
            "sinkrate: note: restored settings left by an interrupted run: {}",
            names.join(", ")
        );
    }
    Ok(())
}

pub fn run(args: RecordArgs) -> Result<ExitCode> {
    restore_left_over_settings()?;
    for (flag, p) in [
        ("--output", &args.output),
        ("--frames-log", &args.frames_log),
    ] {
        if let Some(p) = p {
            crate::check_output_path(flag, p)?;
        }
    }
    if let Some(what) = args.find_max.clone() {
        return super::find_max::run(&args, &what);
    }
    let (streams, label, profile_sync) = streams_from(&args)?;
    let duration = time_arg("duration", &args.duration)?;
    if duration.is_zero() {
        return Err(anyhow!("--duration: must be above zero (e.g. 30s)"));
    }
    let stall_threshold = time_arg("stall-threshold", &args.stall_threshold)?;
    if args.buffers == 0 || args.buffers > 4096 {
        return Err(anyhow!(
            "--buffers: {} is out of range (1 to 4096)",
            args.buffers
        ));
    }
    if !args.dir.is_dir() {
        return Err(anyhow!(
            "--dir {}: not a directory (create it, or point --dir at the recording medium)",
            args.dir.display()
        ));
    }
    let write_mode = match args.write_mode.as_str() {
        "direct" => WriteMode::Direct,
        "dsync" => WriteMode::Dsync,
        "null" => WriteMode::Null,
        "uring" => WriteMode::Uring,
        _ => WriteMode::Buffered,
    };
    if args.queue_depth == 0 || args.queue_depth > 1024 {
        return Err(anyhow!(
            "--queue-depth: {} is out of range (1 to 1024)",
            args.queue_depth
        ));
    }
    let cfg = RecordConfig {
        dir: args.dir.clone(),
        streams,
        buffers: args.buffers,
        write_mode,
        queue_depth: args.queue_depth,
        shared_writer: args.writers == "shared",
        write_size: args
            .write_size
            .as_deref()
            .map(|w| size_arg("write-size", w))
            .transpose()?,
        fdatasync_every_frames: args.fdatasync_frames.filter(|n| *n > 0),
        fdatasync_every: match &args.fdatasync_every {
            Some(t) => Some(time_arg("fdatasync-every", t)?),
            None => profile_sync,
        },
        prealloc_mode: match args.preallocate_mode.as_str() {
            "ftruncate" => PreallocMode::Ftruncate,
            "pregrow" => PreallocMode::Pregrow,
            _ => PreallocMode::Fallocate,
        },
        preallocate: args
            .preallocate
            .as_deref()
            .map(|p| size_arg("preallocate", p))
            .transpose()?,
        duration,
        stall_threshold,
        seed: args.seed,
        keep: args.keep,
        frame_records: args.frames_log.is_some(),
        segments: sinkrate_record::segments::SegmentPolicy {
            every: args
                .segment_time
                .as_deref()
                .map(|t| time_arg("segment-time", t))
                .transpose()?,
            bytes: args
                .segment_size
                .as_deref()
                .map(|s| size_arg("segment-size", s))
                .transpose()?,
            loop_fill_pct: args.loop_fill,
        },
    };
    if let Some(p) = cfg.segments.loop_fill_pct {
        if !cfg.segments.segmented() {
            return Err(anyhow!(
                "--loop-fill needs segments to delete (add --segment-time or --segment-size)"
            ));
        }
        if !(1.0..=99.0).contains(&p) {
            return Err(anyhow!(
                "--loop-fill: {p} is out of range (1 to 99 percent)"
            ));
        }
    }
    if cfg.segments.every.is_some_and(|t| t.is_zero()) || cfg.segments.bytes == Some(0) {
        return Err(anyhow!(
            "--segment-time and --segment-size must be above zero"
        ));
    }
    let requested = cfg.requested_bytes_per_s();
    let pool_bytes: u64 = cfg
        .streams
        .iter()
        .map(|s| {
            // io_uring mode adds its aligned staging slots to the capture buffers.
            let staging = if cfg.write_mode == WriteMode::Uring {
                cfg.queue_depth as u64
            } else {
                0
            };
            s.sizes.max_bytes() * (cfg.buffers as u64 + staging)
        })
        .sum();
    let mem_available = sinkrate_engine::host::read_meminfo()
        .mem_available_bytes
        .unwrap_or(u64::MAX);
    if pool_bytes > mem_available / 2 {
        return Err(anyhow!(
            "the capture pools need {:.1} GB ({} buffers of up to {} bytes per stream), more than half of the {:.1} GB available (lower --buffers or the frame size)",
            pool_bytes as f64 / 1e9,
            cfg.buffers,
            cfg.streams.iter().map(|s| s.sizes.max_bytes()).max().unwrap_or(0),
            mem_available as f64 / 1e9
        ));
    }
    let needed = (requested * duration.as_secs_f64() * 1.02) as u64
        + cfg.preallocate.unwrap_or(0) * cfg.streams.len() as u64;
    if let (Some(free), None) = (
        sinkrate_engine::files::free_bytes(&cfg.dir).ok(),
        cfg.segments.loop_fill_pct,
    ) {
        if needed > free {
            return Err(anyhow!(
                "--dir {}: the recording needs about {:.2} GB ({:.1} MB/s for {:.0} s) and the file system has {:.2} GB free (shorten --duration)",
                cfg.dir.display(),
                needed as f64 / 1e9,
                requested / 1e6,
                duration.as_secs_f64(),
                free as f64 / 1e9
            ));
        }
    }
    let limits = dirty_limits(&args)?;
    let target = sinkrate_engine::host::target_facts(&cfg.dir, false);
    if matches!(target.fs_type.as_deref(), Some("tmpfs") | Some("ramfs")) {
        eprintln!(
            "sinkrate: note: {} is on {}: this measures memory, not storage",
            cfg.dir.display(),
            target.fs_type.as_deref().unwrap_or("")
        );
    }
    let stop = crate::interrupt_flag()?;
    // Journaled before the change; restored when `_limits_guard` drops, whatever happens.
    let mut applied: Vec<Value> = Vec::new();
    let _limits_guard = match limits {
        Some((dirty, background)) => {
            let guard = sinkrate_sysctl::Guard::apply(
                Path::new("/proc/sys"),
                Path::new(sinkrate_sysctl::DEFAULT_JOURNAL),
                &[
                    ("vm/dirty_bytes", dirty.to_string()),
                    ("vm/dirty_background_bytes", background.to_string()),
                ],
            )
            .context("setting the run's dirty limits")?;
            for e in guard.entries() {
                applied.push(json!({ "name": e.name, "original": e.original }));
            }
            eprintln!(
                "sinkrate: note: vm.dirty_bytes={dirty} vm.dirty_background_bytes={background} for this run (journal {}; restored at the end)",
                sinkrate_sysctl::DEFAULT_JOURNAL
            );
            Some(guard)
        }
        None => None,
    };
    let devices = super::bench::device_names(std::slice::from_ref(&target));
    let sampler = Sampler::start(
        SamplerConfig {
            interval: Duration::from_millis(100),
            devices,
            hogs: true,
        },
        duration,
    );
    let started_unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let recording = sinkrate_record::run::start(&cfg, stop.clone());
    let live = match args.live.as_str() {
        "always" => true,
        "never" => false,
        _ => std::io::stderr().is_terminal(),
    };
    if live {
        let clock = recording.clock;
        let fps_total: f64 = cfg.streams.iter().map(|s| s.fps).sum();
        let mut last_written = 0u64;
        let mut last_bytes = 0u64;
        let mut next = Instant::now() + Duration::from_secs(1);
        while clock.elapsed() < duration && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
            next += Duration::from_secs(1);
            let sum = |f: &dyn Fn(&sinkrate_record::run::StreamProgress) -> u64| {
                recording.progress.iter().map(|p| f(p)).sum::<u64>()
            };
            let written = sum(&|p| p.frames_written.load(Ordering::Relaxed));
            let bytes = sum(&|p| p.bytes_written.load(Ordering::Relaxed));
            let dropped = sum(&|p| p.frames_dropped.load(Ordering::Relaxed));
            let in_use = recording
                .progress
                .iter()
                .map(|p| p.in_use.load(Ordering::Relaxed))
                .max()
                .unwrap_or(0);
            let worst = recording
                .progress
                .iter()
                .map(|p| p.worst_write_ns.swap(0, Ordering::Relaxed))
                .max()
                .unwrap_or(0);
            let mem = sinkrate_engine::host::read_meminfo();
            let t = clock.elapsed().as_secs();
            eprintln!(
                "{:02}:{:02}  fps {:.1}/{fps_total:.0}  drops {dropped}  pool {in_use}/{}  write {:.1} MB/s  worst {:.0} ms  dirty {:.0} MB  wb {:.0} MB",
                t / 60,
                t % 60,
                (written - last_written) as f64,
                cfg.buffers,
                (bytes - last_bytes) as f64 / 1e6,
                worst as f64 / 1e6,
                mem.dirty_bytes.unwrap_or(0) as f64 / 1e6,
                mem.writeback_bytes.unwrap_or(0) as f64 / 1e6,
            );
            last_written = written;
            last_bytes = bytes;
        }
    }
    let recording_clock = recording.clock;
    let results = recording.join();
    let recording_elapsed = recording_clock.elapsed();
    let sampled = sampler.stop();
    let interrupted = stop.load(Ordering::Relaxed);
    let summary = analyse(&sampled.timeline, sampled.settings);
    // The recording's own length: the configured duration, or up to Ctrl-C.
    let elapsed_s = if interrupted {
        recording_elapsed.as_secs_f64().min(duration.as_secs_f64())
    } else {
        duration.as_secs_f64()
    }
    .max(1e-3);
    let first_drop = results
        .iter()
        .filter_map(|r| r.drop_times_s.first().copied())
        .reduce(f64::min);
    let longest_stall = results
        .iter()
        .flat_map(|r| r.stalls.iter())
        .max_by(|a, b| a.duration_ms.total_cmp(&b.duration_ms))
        .map(|s| (s.at_s, s.duration_ms));
    // Judge the recording window itself: after it, the writers' final fsync drains the
    // backlog, which would hide a recorder that was falling behind.
    let window_end_ns = (elapsed_s * 1e9) as u64 + 50_000_000;
    let window: Vec<&Sample> = sampled
        .timeline
        .iter()
        .filter(|s| s.t_ns <= window_end_ns)
        .collect();
    let device_bytes_per_s = {
        let w: Vec<f64> = window
            .iter()
            .filter_map(|s| s.disk_write_bytes_per_s)
            .collect();
        (!w.is_empty()).then(|| w.iter().sum::<f64>() / w.len() as f64)
    };
    let final_flush_s = results.iter().map(|r| r.final_sync_ns).max().unwrap_or(0) as f64 / 1e9;
    let evidence = Evidence {
        duration_s: elapsed_s,
        requested_bytes_per_s: requested,
        frames_dropped: results.iter().map(|r| r.frames_dropped).sum(),
        first_drop_s: first_drop,
        writer_busy_fraction: results
            .iter()
            .map(|r| r.writer_busy_ns as f64 / 1e9 / elapsed_s)
            .fold(0.0, f64::max),
        buffered: cfg.write_mode == WriteMode::Buffered,
        unwritten_start_bytes: window.first().and_then(|s| s.dirty_writeback_bytes()),
        unwritten_end_bytes: window.last().and_then(|s| s.dirty_writeback_bytes()),
        freerun_ceiling_bytes: window.last().and_then(|s| s.freerun_ceiling_bytes),
        first_throttled_s: summary.first_throttled_at_s,
        device_bytes_per_s,
        device_busy_fraction: {
            let u: Vec<f64> = window.iter().filter_map(|s| s.disk_util_pct).collect();
            (!u.is_empty()).then(|| u.iter().sum::<f64>() / u.len() as f64 / 100.0)
        },
        longest_stall,
        board_1g_ceiling_bytes: {
            // Midway between the two limits a 1 GB board would compute from these settings.
            let gb = 1u64 << 30;
            let s = sampled.settings;
            let hard = s
                .dirty_bytes
                .filter(|b| *b > 0)
                .unwrap_or(gb * s.dirty_ratio.unwrap_or(20) / 100);
            let bg = s
                .dirty_background_bytes
                .filter(|b| *b > 0)
                .unwrap_or(gb * s.dirty_background_ratio.unwrap_or(10) / 100);
            Some((hard.min(gb) + bg.min(gb)) / 2)
        },
    };
    let outcome = decide(&evidence);
    let mut total_lat = LatencyRecorder::new();
    let mut total_late = LatencyRecorder::new();
    let mut total_jitter = LatencyRecorder::new();
    for r in &results {
        total_lat.merge(&r.write_latency);
        total_late.merge(&r.lateness);
        total_jitter.merge(&r.schedule_jitter);
    }
    let sum = |f: fn(&StreamResult) -> u64| results.iter().map(f).sum::<u64>();
    let errors: Vec<String> = results.iter().filter_map(|r| r.error.clone()).collect();
    let stalls: Vec<Value> = results
        .iter()
        .flat_map(|r| r.stalls.iter())
        .map(|s| {
            let c = context_at(&sampled.timeline, s.at_s);
            json!({
                "stream": s.stream, "at_s": s.at_s, "duration_ms": s.duration_ms,
                "dirty_bytes": c.and_then(|c| c.dirty_bytes), "writeback_bytes": c.and_then(|c| c.writeback_bytes),
                "throttled": c.map(|c| c.throttled), "disk_util_pct": c.and_then(|c| c.disk_util_pct),
                "cpu_iowait_pct": c.and_then(|c| c.cpu_iowait_pct),
            })
        })
        .collect();
    if let Some(path) = &args.frames_log {
        write_frames_log(path, &results)?;
    }
    let mut on_disk = Vec::new();
    for r in &results {
        let sizes: Vec<u64> = r
            .files
            .iter()
            .filter_map(|f| std::fs::metadata(f).map(|m| m.len()).ok())
            .collect();
        on_disk.push((!r.files.is_empty()).then(|| sizes.iter().sum::<u64>()));
        if !cfg.keep {
            for f in &r.files {
                let _ = std::fs::remove_file(f);
            }
        }
    }
    let streams_json: Vec<Value> = results
        .iter()
        .zip(&on_disk)
        .map(|(r, size)| {
            json!({
                "name": r.name, "fps_requested": r.fps_requested,
                "fps_achieved": r.frames_written as f64 / elapsed_s,
                "frames_offered": r.frames_offered, "frames_written": r.frames_written, "frames_dropped": r.frames_dropped,
                "first_drop_s": r.drop_times_s.first(), "drop_times_s": r.drop_times_s,
                "bytes_requested": r.bytes_requested, "bytes_written": r.bytes_written,
                "file": r.file, "files": r.files, "file_bytes_on_disk": size,
                "segments_created": r.segments_created, "segments_deleted": r.segments_deleted,
                "bytes_deleted": r.bytes_deleted,
                "pool_high_water": r.pool_high_water, "buffers": r.buffers,
                "write_latency_ns": percentiles(&r.write_latency), "lateness_ns": percentiles(&r.lateness),
                "schedule_jitter_ns": percentiles(&r.schedule_jitter),
                "writer_busy_ns": r.writer_busy_ns, "writer_cpu_ns": r.writer_cpu_ns, "final_sync_ns": r.final_sync_ns, "error": r.error,
            })
        })
        .collect();
    let verdict_key = match outcome.verdict {
        Verdict::KeepsUp => "keeps_up",
        Verdict::FallingBehind => "falling_behind",
        Verdict::Drops => "drops",
    };
    let body = if args.output_format == "json" {
        let doc = json!({
            "schema": sinkrate_model::SCHEMA, "kind": "record",
            "tool": { "name": "sinkrate", "version": sinkrate_model::TOOL_VERSION },
            "started_at": sinkrate_report::fio_json::rfc3339(started_unix_ms), "timestamp_ms": started_unix_ms,
            "host": sinkrate_engine::host::host_facts(), "target": target, "config": cfg, "label": label,
            "interrupted": interrupted, "errors": errors,
            "dirty_limits": limits.map(|(d, b)| json!({ "dirty_bytes": d, "dirty_background_bytes": b, "restored": applied })),
            "verdict": verdict_key, "verdict_text": outcome.text, "headroom": outcome.headroom,
            "backlog_growth_bytes_per_s": outcome.backlog_growth_bytes_per_s, "throttled_after_s": outcome.throttled_after_s,
            "totals": {
                "frames_offered": sum(|r| r.frames_offered), "frames_written": sum(|r| r.frames_written),
                "frames_dropped": sum(|r| r.frames_dropped), "bytes_requested": sum(|r| r.bytes_requested),
                "bytes_written": sum(|r| r.bytes_written), "requested_bytes_per_s": requested,
                "written_bytes_per_s": sum(|r| r.bytes_written) as f64 / elapsed_s,
                "device_bytes_per_s": device_bytes_per_s,
                "device_busy_fraction": evidence.device_busy_fraction,
                "writer_cpu_s": results.iter().map(|r| r.writer_cpu_ns).sum::<u64>() as f64 / 1e9,
                "flusher_cpu_s": sampled.hogs.iter().filter(|h| h.name.contains("flush")).map(|h| h.cpu_seconds).sum::<f64>(),
                "final_flush_s": final_flush_s,
                "write_latency_ns": percentiles(&total_lat), "lateness_ns": percentiles(&total_late),
                "schedule_jitter_ns": percentiles(&total_jitter),
            },
            "streams": streams_json, "stalls": stalls,
            "sampler": { "devices": sampled.devices, "summary": summary, "hogs": sampled.hogs, "timeline": sampled.timeline },
        });
        let mut v = serde_json::to_vec_pretty(&doc)?;
        v.push(b'\n');
        v
    } else {
        let mut t = format!(
            "sinkrate record  {}  ({} on {})\n{label}: {:.2} MB/s requested, {} writes, {} buffers per stream, {:.0} s\n\n",
            cfg.dir.display(),
            target.fs_type.as_deref().unwrap_or("?"),
            target.device.as_deref().unwrap_or("?"),
            requested / 1e6,
            match (cfg.write_mode, cfg.shared_writer) {
                (WriteMode::Uring, shared) => format!(
                    "io_uring (queue depth {}){}",
                    cfg.queue_depth,
                    if shared { ", one shared writer" } else { "" }
                ),
                (_, true) => format!("{}, one shared writer", args.write_mode),
                _ => args.write_mode.clone(),
            },
            cfg.buffers,
            elapsed_s
        );
        t.push_str(&format!(
            "VERDICT  {}{}\n  {}\n\n",
            outcome.verdict.label(),
            if interrupted { "  (interrupted)" } else { "" },
            outcome.text
        ));
        t.push_str("stream   offered  written  dropped     fps   write p50      p99      max  lateness p99  pool\n");
        for r in &results {
            let w = r.write_latency.summary(&[50.0, 99.0]);
            let l = r.lateness.summary(&[99.0]);
            t.push_str(&format!(
                "{:<8} {:>7}  {:>7}  {:>7}  {:>6.2}  {:>9} {:>8} {:>8}  {:>12}  {}/{}\n",
                r.name,
                r.frames_offered,
                r.frames_written,
                r.frames_dropped,
                r.frames_written as f64 / elapsed_s,
                ms(w.percentile(50.0)),
                ms(w.percentile(99.0)),
                ms(Some(w.max_ns)),
                ms(l.percentile(99.0)),
                r.pool_high_water,
                r.buffers
            ));
        }
        if !stalls.is_empty() {
            t.push_str(&format!(
                "\n{} write calls over {} ms; the longest at {:.1} s took {:.0} ms\n",
                stalls.len(),
                stall_threshold.as_millis(),
                longest_stall.map(|s| s.0).unwrap_or(0.0),
                longest_stall.map(|s| s.1).unwrap_or(0.0)
            ));
        }
        t.push_str(&format!(
            "\npage cache: peak dirty+writeback {:.0} MB, writers throttled {:.1} s; device wrote {:.1} MB/s on average while recording; the final fsync took {:.2} s\n",
            summary.peak_dirty_writeback_bytes.unwrap_or(0) as f64 / 1e6,
            summary.throttled_seconds,
            device_bytes_per_s.unwrap_or(0.0) / 1e6,
            final_flush_s
        ));
        for e in &errors {
            t.push_str(&format!("error: {e}\n"));
        }
        t.into_bytes()
    };
    match &args.output {
        Some(p) => std::fs::write(p, &body)
            .with_context(|| format!("{}: cannot write the results", p.display()))?,
        None => crate::write_stdout(&body)?,
    }
    if !errors.is_empty() {
        for e in &errors {
            eprintln!("sinkrate: error: {e}");
        }
        return Ok(ExitCode::from(2));
    }
    if interrupted {
        return Ok(ExitCode::from(130));
    }
    Ok(match outcome.verdict {
        Verdict::KeepsUp => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    })
}

/// One line per frame, in capture order per stream; times in seconds from the start.
fn write_frames_log(path: &Path, results: &[StreamResult]) -> Result<()> {
    use std::io::Write;
    let f = std::fs::File::create(path)
        .with_context(|| format!("{}: cannot create", path.display()))?;
    let mut out = std::io::BufWriter::new(f);
    writeln!(
        out,
        "stream,frame,size_bytes,capture_s,write_start_s,write_end_s,dropped"
    )?;
    let s = |ns: Option<u64>| {
        ns.map(|v| format!("{:.6}", v as f64 / 1e9))
            .unwrap_or_default()
    };
    for r in results {
        for fr in &r.frames {
            writeln!(
                out,
                "{},{},{},{},{},{},{}",
                r.name,
                fr.frame,
                fr.size,
                s(Some(fr.capture_ns)),
                s(fr.write_start_ns),
                s(fr.write_end_ns),
                u8::from(fr.write_end_ns.is_none())
            )?;
        }
    }
    out.flush()
        .with_context(|| format!("{}: cannot write", path.display()))?;
    Ok(())
}

/// The dirty limits --ram-limit or --dirty-limit ask for: (dirty_bytes, dirty_background_bytes).
fn dirty_limits(args: &RecordArgs) -> Result<Option<(u64, u64)>> {
    let wanted = match (&args.ram_limit, &args.dirty_limit) {
        (Some(_), Some(_)) => return Err(anyhow!("give --ram-limit or --dirty-limit, not both")),
        (None, None) => return Ok(None),
        (Some(ram), None) => {
            let ram = size_arg("ram-limit", ram)?;
            let s = sinkrate_sampler::live::read_vm_settings();
            // As the kernel would on that board: the ratios of its memory, or the same
            // absolute limits when this host sets them in bytes.
            let dirty = match s.dirty_bytes.filter(|b| *b > 0) {
                Some(b) => b.min(ram),
                None => ram * s.dirty_ratio.unwrap_or(20) / 100,
            };
            let background = match s.dirty_background_bytes.filter(|b| *b > 0) {
                Some(b) => b.min(dirty / 2),
                None => ram * s.dirty_background_ratio.unwrap_or(10) / 100,
            };
            (dirty, background)
        }
        (None, Some(d)) => {
            let d = size_arg("dirty-limit", d)?;
            (d, d / 2)
        }
    };
    if wanted.0 < 4096 * 64 {
        return Err(anyhow!(
            "the dirty limit would be {} bytes; the kernel needs at least 256 KiB",
            wanted.0
        ));
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(anyhow!(
            "--ram-limit/--dirty-limit set vm.dirty_bytes for the run, which needs root"
        ));
    }
    Ok(Some(wanted))
}
