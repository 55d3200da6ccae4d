//! The one place where `sinkrate emulate up`'s arguments become an emulated device's
//! specification: presets, rates, sizes, latencies and the device model's behaviours, each
//! range-checked with the flag it came from.

use std::time::Duration;

use anyhow::{anyhow, Result};
use sinkrate_emulate::{models, Spec};
use sinkrate_units::product as units;

use super::values::value_name;
use super::EmulateUpArgs;

/// The token bucket's depth when --burstiness is not given: low, so the first seconds are
/// as slow as the rest.
const DEFAULT_BURSTINESS_S: f64 = 0.1;

pub fn spec_from(args: &EmulateUpArgs) -> Result<(Spec, Vec<String>)> {
    let mut notes = Vec::new();
    let model = args
        .model
        .as_deref()
        .map(models::find)
        .transpose()
        .map_err(|e| anyhow!(e))?;
    let profile = args
        .profile
        .as_deref()
        .map(sinkrate_emulate::profile::load)
        .transpose()
        .map_err(|e| anyhow!(e))?;
    let size = units::parse_size(&args.size).map_err(|e| anyhow!("--size: {e}"))?;
    let write_rate = match (&args.write_rate, model, &profile) {
        (Some(r), _, _) => units::parse_rate(r).map_err(|e| anyhow!("--write-rate: {e}"))?,
        (None, Some(m), _) => m.write_bytes_per_s,
        (None, None, Some(p)) => p.write_bytes_per_s,
        (None, None, None) => {
            return Err(anyhow!(
                "give --write-rate (e.g. --write-rate 20M), --model (sd-class10, sd-uhs1-u3, usb2-stick, usb3-ssd, emmc) or --profile"
            ))
        }
    };
    if let Some(p) = &profile {
        notes.push(if p.about.is_empty() {
            format!("profile {}", p.name)
        } else {
            format!("profile {}: {}", p.name, p.about)
        });
        if let Some(c) = p.capacity_bytes {
            if c != size {
                notes.push(format!(
                    "the profile stands for a card of {}; emulated at --size {}",
                    units::bytes_si(c),
                    args.size
                ));
            }
        }
        if p.read_bytes_per_s.is_some_and(|r| r > write_rate) {
            notes.push(format!(
                "reads share the device's {} budget with writes (one bus), so they run at up to that rate, not the profile's read rate",
                units::mb_per_s(write_rate as f64)
            ));
        }
    }
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
                units::mb_per_s(write_rate as f64)
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
    let mut device = device_model(args, size)?;
    if let Some(p) = &profile {
        apply_profile(&mut device, p);
    }
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

/// A profile's behaviours in the device model (its flags conflict with the profile's, so
/// nothing set here was set by a flag).
fn apply_profile(
    d: &mut sinkrate_emulate::stack::DeviceModel,
    p: &sinkrate_emulate::profile::Resolved,
) {
    d.profile = Some(p.name.clone());
    d.service_time_us = p.service_time_us;
    d.busy = p.busy.clone();
    d.random_iops = p.random_iops.clone();
    d.metadata = p.metadata;
    if let Some((pause_us, every, random)) = p.pauses {
        d.gc_pause_us = pause_us;
        d.gc_every_bytes = every;
        d.gc_random = random;
    }
    if let Some((bytes, rate)) = p.slc {
        d.slc_bytes = bytes;
        d.slc_write_bytes_per_s = rate;
    }
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
    if let Some(w) = &args.wear_out {
        let (bytes, mode) = w.split_once(':').unwrap_or((w, "read-only"));
        let after = units::parse_size(bytes).map_err(|e| anyhow!("--wear-out {w}: {e}"))?;
        if after == 0 {
            return Err(anyhow!(
                "--wear-out {w}: the bytes before the card wears out must be above zero (e.g. 2G:read-only)"
            ));
        }
        if sinkrate_devicemodel::WearMode::parse(mode).is_none() {
            return Err(anyhow!(
                "--wear-out {w}: '{mode}' is not a way to wear out (accepted: {})",
                sinkrate_devicemodel::WearMode::NAMES
            ));
        }
        d.wear_out = Some((after, mode.to_string()));
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
