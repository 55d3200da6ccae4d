//! `sinkrate emulate up|down|list`: slow storage on demand.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Result};
use sinkrate_emulate::{models, Spec};
use sinkrate_units::product as units;

use crate::cli::values::value_name;
use crate::cli::{EmulateAction, EmulateUpArgs};

pub fn run(action: EmulateAction) -> Result<ExitCode> {
    match action {
        EmulateAction::Up(args) => up(*args),
        EmulateAction::Down { mountpoint } => {
            sinkrate_emulate::down(&mountpoint)?;
            println!("removed the emulated device at {}", mountpoint.display());
            Ok(ExitCode::SUCCESS)
        }
        EmulateAction::List { output_format } => list(output_format),
    }
}

/// The token bucket's depth when --burstiness is not given: low, so the first seconds are
/// as slow as the rest.
const DEFAULT_BURSTINESS_S: f64 = 0.1;

fn spec_from(args: &EmulateUpArgs) -> Result<(Spec, Vec<String>)> {
    let mut notes = Vec::new();
    let model = args
        .model
        .as_deref()
        .map(models::find)
        .transpose()
        .map_err(|e| anyhow!(e))?;
    let size = units::parse_size(&args.size).map_err(|e| anyhow!("--size: {e}"))?;
    let write_rate = match (&args.write_rate, model) {
        (Some(r), _) => units::parse_rate(r).map_err(|e| anyhow!("--write-rate: {e}"))?,
        (None, Some(m)) => m.write_bytes_per_s,
        (None, None) => {
            return Err(anyhow!(
                "give --write-rate (e.g. --write-rate 20M) or --model (sd-class10, sd-uhs1-u3, usb2-stick, usb3-ssd, emmc)"
            ))
        }
    };
    if let Some(r) = &args.read_rate {
        let read = units::parse_rate(r).map_err(|e| anyhow!("--read-rate: {e}"))?;
        if read < write_rate {
            return Err(anyhow!(
                "--read-rate {r} is below the write rate: reads and writes share one budget here (nbdkit's rate filter counts both), so reads cannot be slower than writes"
            ));
        }
        if read > write_rate {
            notes.push(format!(
                "reads share the device's {} budget with writes (one bus), so they run at up to that rate, not {r}",
                human_rate(write_rate)
            ));
        }
    }
    let write_latency = match (&args.write_latency, model) {
        (Some(l), _) => units::parse_latency(l).map_err(|e| anyhow!("--write-latency: {e}"))?,
        (None, Some(m)) => m.write_latency,
        (None, None) => Duration::ZERO,
    };
    let read_latency = match &args.read_latency {
        Some(l) => units::parse_latency(l).map_err(|e| anyhow!("--read-latency: {e}"))?,
        None => Duration::ZERO,
    };
    let error_rate = match &args.error_rate {
        Some(r) => Some(r.trim().parse::<f64>().map_err(|_| {
            anyhow!("--error-rate: '{r}' is not a number (expected 0 to 1, e.g. 0.01)")
        })?),
        None => None,
    };
    let burstiness = args.burstiness.unwrap_or(DEFAULT_BURSTINESS_S);
    if !(0.001..=60.0).contains(&burstiness) {
        return Err(anyhow!(
            "--burstiness: {burstiness} is out of range (0.001 to 60 seconds)"
        ));
    }
    if let Some(m) = model {
        notes.push(format!("model {}: {}", m.name, m.source));
    }
    let device = device_model(args, size)?;
    if device.any() && args.burstiness.is_some() {
        return Err(anyhow!(
            "--burstiness sets nbdkit's token bucket, which the device models replace (the card serves one request at a time at its rate)"
        ));
    }
    let fs = value_name(args.fs);
    if let Ok(sinkrate_emulate::tools::Driver::Fuse { program, .. }) =
        sinkrate_emulate::tools::driver(&fs)
    {
        notes.push(format!(
            "this kernel has no {fs}: mounted through its FUSE driver {program}, which a board's kernel driver does not behave like"
        ));
    }
    Ok((
        Spec {
            mountpoint: args.mountpoint.clone(),
            size_bytes: size,
            rate_bytes_per_s: write_rate,
            write_latency_us: write_latency.as_micros() as u64,
            read_latency_us: read_latency.as_micros() as u64,
            fs: value_name(args.fs),
            mkfs_opts: args
                .mkfs_opts
                .as_deref()
                .map(|o| o.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            mount_opts: args.mount_opts.clone(),
            error_rate,
            error_kind: value_name(args.error),
            error_on: value_name(args.error_on),
            backing_file: args.backing_file.clone(),
            force: args.force,
            burstiness_s: burstiness,
            model: model.map(|m| m.name.to_string()),
            device,
            // A user's device: it stays until `emulate down`.
            owner_pid: None,
        },
        notes,
    ))
}

/// The plugin's card behaviours from `--service-time`, `--gc-pauses`, `--slc-cache`,
/// `--volatile-cache` and `--fake-capacity`.
fn device_model(args: &EmulateUpArgs, size: u64) -> Result<sinkrate_emulate::stack::DeviceModel> {
    let mut d = sinkrate_emulate::stack::DeviceModel {
        fake_mode: args.fake_mode.clone(),
        ..Default::default()
    };
    if let Some(t) = &args.service_time {
        d.service_time_us = units::parse_latency(t)
            .map_err(|e| anyhow!("--service-time: {e}"))?
            .as_micros() as u64;
        if d.service_time_us == 0 {
            return Err(anyhow!("--service-time {t}: must be above zero (e.g. 1ms)"));
        }
    }
    if let Some(g) = &args.gc_pauses {
        let bad = || {
            anyhow!("--gc-pauses {g}: expected PAUSE/BYTES or PAUSE/~BYTES (e.g. 250ms/32M, 400ms/~64M)")
        };
        let (pause, every) = g.split_once('/').ok_or_else(bad)?;
        let (random, every) = match every.strip_prefix('~') {
            Some(rest) => (true, rest),
            None => (false, every),
        };
        d.gc_pause_us = units::parse_latency(pause)
            .map_err(|e| anyhow!("--gc-pauses {g}: {e}"))?
            .as_micros() as u64;
        d.gc_every_bytes = units::parse_size(every).map_err(|e| anyhow!("--gc-pauses {g}: {e}"))?;
        d.gc_random = random;
        if d.gc_every_bytes == 0 || d.gc_pause_us == 0 {
            return Err(bad());
        }
    }
    if let Some(c) = &args.slc_cache {
        let bad = || anyhow!("--slc-cache {c}: expected SIZE@RATE (e.g. 512M@90M)");
        let (bytes, rate) = c.split_once('@').ok_or_else(bad)?;
        d.slc_bytes = units::parse_size(bytes).map_err(|e| anyhow!("--slc-cache {c}: {e}"))?;
        d.slc_write_bytes_per_s =
            units::parse_rate(rate).map_err(|e| anyhow!("--slc-cache {c}: {e}"))?;
        if d.slc_bytes == 0 {
            return Err(bad());
        }
    }
    if let Some(v) = &args.volatile_cache {
        d.volatile_cache_bytes =
            units::parse_size(v).map_err(|e| anyhow!("--volatile-cache: {e}"))?;
        if d.volatile_cache_bytes == 0 {
            return Err(anyhow!(
                "--volatile-cache {v}: must be above zero (e.g. 8M)"
            ));
        }
    }
    if let Some(b) = &args.bad_sectors {
        let bad = || anyhow!("--bad-sectors {b}: expected OFFSET+LENGTH (e.g. 8M+64K)");
        let (at, n) = b.split_once('+').ok_or_else(bad)?;
        let at = units::parse_size(at).map_err(|e| anyhow!("--bad-sectors {b}: {e}"))?;
        let n = units::parse_size(n).map_err(|e| anyhow!("--bad-sectors {b}: {e}"))?;
        if n == 0 {
            return Err(bad());
        }
        d.bad_sectors = Some((at, n));
    }
    if let Some(f) = &args.fake_capacity {
        let claimed = units::parse_size(f).map_err(|e| anyhow!("--fake-capacity: {e}"))?;
        if claimed <= size {
            return Err(anyhow!(
                "--fake-capacity {f}: must be above --size {} (the card reports --fake-capacity and holds --size)",
                args.size
            ));
        }
        d.claimed_bytes = Some(claimed);
    }
    Ok(d)
}

/// The device model in words, one behaviour a line.
fn model_lines(spec: &Spec) -> Vec<String> {
    let d = &spec.device;
    if !d.any() {
        return Vec::new();
    }
    let mut v = vec![format!(
        "one request at a time at {}{}",
        human_rate(spec.rate_bytes_per_s),
        if d.service_time_us > 0 {
            format!(
                ", {:.2} ms service time each",
                d.service_time_us as f64 / 1000.0
            )
        } else {
            String::new()
        }
    )];
    if d.gc_every_bytes > 0 {
        v.push(format!(
            "garbage collection: {:.0} ms pause {} {:.0} MiB written",
            d.gc_pause_us as f64 / 1000.0,
            if d.gc_random {
                "on average every"
            } else {
                "every"
            },
            d.gc_every_bytes as f64 / (1u64 << 20) as f64
        ));
    }
    if d.slc_bytes > 0 {
        v.push(format!(
            "SLC cache: {} at {}, then the card's rate; emptied while idle",
            human_size(d.slc_bytes),
            human_rate(d.slc_write_bytes_per_s)
        ));
    }
    if d.volatile_cache_bytes > 0 {
        v.push(format!(
            "volatile write cache: {:.1} MiB, written to flash on flush, FUA or when full",
            d.volatile_cache_bytes as f64 / (1u64 << 20) as f64
        ));
    }
    if let Some((at, n)) = d.bad_sectors {
        v.push(format!(
            "bad sectors: {} at byte {at} fail with EIO once the device is ready",
            sinkrate_units::fio::bytes_iec(n as f64)
        ));
    }
    if let Some(claimed) = d.claimed_bytes {
        v.push(format!(
            "counterfeit: reports {}, holds {}; writes past that {}",
            human_size(claimed),
            human_size(spec.size_bytes),
            if d.fake_mode == "drop" {
                "are lost"
            } else {
                "wrap to the start"
            }
        ));
    }
    v
}

fn human_rate(bytes_per_s: u64) -> String {
    format!("{:.1} MB/s", bytes_per_s as f64 / 1e6)
}

fn human_size(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

fn up(args: EmulateUpArgs) -> Result<ExitCode> {
    let (spec, notes) = spec_from(&args)?;
    for n in &notes {
        eprintln!("sinkrate: note: {n}");
    }
    let state = sinkrate_emulate::up(spec.clone())?;
    if args.output_format == crate::cli::values::OutputFormat::Json {
        crate::write_stdout(&serde_json::to_vec_pretty(&state)?)?;
        crate::write_stdout(b"\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mp = spec.mountpoint.display();
    let latency = if spec.write_latency_us > 0 {
        format!(", {} us per write", spec.write_latency_us)
    } else {
        String::new()
    };
    let mut text = format!(
        "emulated device up: {}{latency}, {} {}{}\n",
        human_rate(spec.rate_bytes_per_s),
        human_size(spec.size_bytes),
        spec.fs,
        spec.model
            .as_deref()
            .map(|m| format!(" (model {m})"))
            .unwrap_or_default()
    );
    if spec.raw() {
        text.push_str(&format!("  device link  {mp}\n"));
    } else {
        text.push_str(&format!("  mountpoint   {mp}\n"));
    }
    for line in model_lines(&spec) {
        text.push_str(&format!("  model        {line}\n"));
    }
    if let Some(cut) = &state.power_cut_file {
        text.push_str(&format!(
            "  power cut    touch {} (the volatile cache is lost; later requests fail)\n",
            cut.display()
        ));
    }
    if let Some(dev) = &state.loop_device {
        text.push_str(&format!("  loop device  {}\n", dev.display()));
    }
    if let Some(errors) = state.errors_file() {
        if let Some(rate) = spec.error_rate {
            text.push_str(&format!(
                "  errors       {rate} of {} requests fail with {} (disarm: rm {})\n",
                spec.error_on,
                spec.error_kind,
                errors.display()
            ));
        }
        if spec.device.bad_sectors.is_some() {
            text.push_str(&format!(
                "  bad sectors  armed (disarm: rm {})\n",
                errors.display()
            ));
        }
    }
    text.push_str(&format!(
        "  set up in    {:.2} s\n",
        state.setup_ms as f64 / 1000.0
    ));
    text.push_str(&format!("  tear down    sinkrate emulate down {mp}\n"));
    crate::write_stdout(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

fn list(format: crate::cli::values::OutputFormat) -> Result<ExitCode> {
    let devices = sinkrate_emulate::list();
    if format == crate::cli::values::OutputFormat::Json {
        crate::write_stdout(&serde_json::to_vec_pretty(&devices)?)?;
        crate::write_stdout(b"\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    if devices.is_empty() {
        crate::write_stdout(b"no emulated devices are up\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = format!(
        "{:<32} {:<12} {:>10} {:>12} {:<6} {}\n",
        "MOUNTPOINT", "DEVICE", "SIZE", "RATE", "FS", "STATUS"
    );
    for d in &devices {
        let Some(spec) = &d.state.spec else { continue };
        let status = match (d.mounted || spec.raw(), d.nbdkit_alive, d.nbdfuse_alive) {
            (true, true, true) => "up".to_string(),
            (m, k, f) => format!(
                "broken ({}{}{}; sinkrate emulate down {})",
                if m { "" } else { "not mounted " },
                if k { "" } else { "nbdkit gone " },
                if f { "" } else { "nbdfuse gone" },
                spec.mountpoint.display()
            ),
        };
        text.push_str(&format!(
            "{:<32} {:<12} {:>10} {:>12} {:<6} {}\n",
            spec.mountpoint.display(),
            d.state
                .loop_device
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "-".into()),
            human_size(spec.size_bytes),
            human_rate(spec.rate_bytes_per_s),
            spec.fs,
            status
        ));
    }
    crate::write_stdout(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
