//! `sinkrate emulate`'s text: the device that came up (its rate, size, filesystem, model
//! and how to arm, disarm and tear it down), and the devices that are up.

use anyhow::Result;
use sinkrate_emulate::stack::{Listed, State};
use sinkrate_emulate::Spec;

use sinkrate_units::product::{gib as human_size, mb_per_s};

use super::Exporter;

/// The device `emulate up` made.
pub struct UpText;

/// The devices `emulate list` found.
pub struct ListText;

impl Exporter<State> for UpText {
    fn export(&self, state: &State) -> Result<Vec<u8>> {
        let Some(spec) = &state.spec else {
            return Ok(Vec::new());
        };
        let mp = spec.mountpoint.display();
        let latency = if spec.write_latency_us > 0 {
            format!(", {} us per write", spec.write_latency_us)
        } else {
            String::new()
        };
        let mut text = format!(
            "emulated device up: {}{latency}, {} {}{}\n",
            mb_per_s(spec.rate_bytes_per_s as f64),
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
        for line in model_lines(spec) {
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
            if spec.device.wear_out.is_some() {
                text.push_str(&format!(
                    "  wear         counted from now (the device's account: {})\n",
                    state
                        .device_stats
                        .as_ref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|| "-".into())
                ));
            }
        }
        text.push_str(&format!(
            "  set up in    {:.2} s\n",
            state.setup_ms as f64 / 1000.0
        ));
        text.push_str(&format!("  tear down    sinkrate emulate down {mp}\n"));
        Ok(text.into_bytes())
    }
}

impl Exporter<Vec<Listed>> for ListText {
    fn export(&self, devices: &Vec<Listed>) -> Result<Vec<u8>> {
        if devices.is_empty() {
            return Ok(b"no emulated devices are up\n".to_vec());
        }
        let mut text = format!(
            "{:<32} {:<12} {:>10} {:>12} {:<6} {}\n",
            "MOUNTPOINT", "DEVICE", "SIZE", "RATE", "FS", "STATUS"
        );
        for d in devices {
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
                mb_per_s(spec.rate_bytes_per_s as f64),
                spec.fs,
                status
            ));
        }
        Ok(text.into_bytes())
    }
}

/// The device model in words, one behaviour a line.
fn model_lines(spec: &Spec) -> Vec<String> {
    let d = &spec.device;
    if !d.any() {
        return Vec::new();
    }
    let mut v = vec![format!(
        "one request at a time at {}{}",
        mb_per_s(spec.rate_bytes_per_s as f64),
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
            mb_per_s(d.slc_write_bytes_per_s as f64)
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
    if let Some((after, mode)) = &d.wear_out {
        v.push(format!(
            "wears out after {} written once ready: {}",
            sinkrate_units::fio::bytes_iec(*after as f64),
            match mode.as_str() {
                "errors" => "writes fail ever more often, all of them at twice that",
                "stale" => "writes are then lost, reads return earlier data",
                _ => "it turns read-only, every later write refused",
            }
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
