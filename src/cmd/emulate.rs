//! `sinkrate emulate up|down|list`: slow storage on demand.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, Result};
use sinkrate_emulate::{models, units, Spec};

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
    if !(0.001..=60.0).contains(&args.burstiness) {
        return Err(anyhow!(
            "--burstiness: {} is out of range (0.001 to 60 seconds)",
            args.burstiness
        ));
    }
    if let Some(m) = model {
        notes.push(format!("model {}: {}", m.name, m.source));
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
            burstiness_s: args.burstiness,
            model: model.map(|m| m.name.to_string()),
        },
        notes,
    ))
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
    text.push_str(&format!("  mountpoint   {mp}\n"));
    if let Some(dev) = &state.loop_device {
        text.push_str(&format!("  loop device  {}\n", dev.display()));
    }
    if let Some(errors) = state.errors_file() {
        text.push_str(&format!(
            "  errors       {} of {} requests fail with {} (disarm: rm {})\n",
            spec.error_rate.unwrap_or(0.0),
            spec.error_on,
            spec.error_kind,
            errors.display()
        ));
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
        let status = match (d.mounted, d.nbdkit_alive, d.nbdfuse_alive) {
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
