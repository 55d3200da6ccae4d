//! `sinkrate record --find-max streams|bitrate|fps`: the largest value that keeps up.
//!
//! Each probe is a complete `sinkrate record` run in a child process, so every probe starts
//! from the same state and is judged by the same verdict. The search doubles until a probe
//! fails, bisects to 5%, and confirms the result with a second run.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use serde_json::{json, Value};

use crate::cli::RecordArgs;

/// The command-line arguments of one probe: the user's, without --find-max and with the
/// searched value replaced.
fn probe_args(original: &[String], what: &str, value: f64) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip_next = false;
    let flag = format!("--{what}");
    for a in original {
        if skip_next {
            skip_next = false;
            continue;
        }
        let name = a.split('=').next().unwrap_or("");
        if name == "--find-max"
            || name == flag
            || name == "--output-format"
            || name == "--output"
            || name == "--live"
        {
            skip_next = !a.contains('=');
            continue;
        }
        out.push(a.clone());
    }
    let v = match what {
        "streams" => format!("{}", value.round() as u64),
        "bitrate" => format!("{}", value.round() as u64),
        _ => format!("{value:.3}"),
    };
    out.extend([
        flag,
        v,
        "--output-format".into(),
        "json".into(),
        "--live".into(),
        "never".into(),
    ]);
    out
}

/// Runs `sinkrate record ARGS` in a child process: its JSON result and exit code for a
/// run that ended with a verdict (0, 1) or was interrupted (130, partial result).
pub fn run_record_child(args: &[String]) -> Result<(Value, Option<i32>)> {
    let exe = std::env::current_exe().context("finding the sinkrate binary")?;
    let out = std::process::Command::new(exe)
        .arg("record")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .context("running a recording")?;
    match out.status.code() {
        Some(0) | Some(1) | Some(130) => Ok((
            serde_json::from_slice(&out.stdout).context("reading a recording's result")?,
            out.status.code(),
        )),
        _ => Err(anyhow!(
            "a recording failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .trim()
                .trim_start_matches("sinkrate: ")
        )),
    }
}

fn run_probe(args: &[String]) -> Result<Value> {
    match run_record_child(args)? {
        (v, Some(0 | 1)) => Ok(v),
        _ => Err(anyhow!("a probe was interrupted")),
    }
}

/// The device's sustained sequential write rate that the page cache cannot inflate: direct
/// I/O, or (where the filesystem has no O_DIRECT) buffered with the final flush counted.
/// Measured by the bench engine over a file of at most 256 MiB rewritten for `seconds`.
pub fn raw_write_rate(
    dir: &Path,
    seconds: u64,
    direct: bool,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<f64> {
    let free = sinkrate_engine::files::free_bytes(dir).unwrap_or(u64::MAX);
    let size_mib = ((free / 4) >> 20).clamp(8, 256);
    let options: Vec<String> = [
        "--name=raw".to_string(),
        "--rw=write".to_string(),
        "--bs=1m".to_string(),
        format!("--size={size_mib}m"),
        format!("--direct={}", u8::from(direct)),
        "--time_based".to_string(),
        format!("--runtime={seconds}"),
        "--end_fsync=1".to_string(),
        format!("--directory={}", dir.display()),
    ]
    .to_vec();
    let set = sinkrate_jobspec::build_job_set(
        &sinkrate_jobspec::JobSources {
            files: &[],
            texts: &[],
            cli_options: &options,
            ignore_unsupported: false,
        },
        &super::bench::LiveContext,
    )?;
    let run_options = sinkrate_engine::RunOptions {
        base_dir: dir.to_path_buf(),
        force_device_write: false,
        keep_files: false,
        stop,
        show_status: false,
    };
    let prepared = sinkrate_engine::prepare(&set, &run_options)?;
    let run = sinkrate_engine::execute(prepared, &run_options);
    let job = run
        .jobs
        .first()
        .ok_or_else(|| anyhow!("the raw write measurement did not run"))?;
    if job.error != 0 {
        return Err(anyhow!(
            "the raw write measurement failed: {}",
            job.error_text
                .clone()
                .unwrap_or_else(|| std::io::Error::from_raw_os_error(job.error).to_string())
        ));
    }
    // With the final fsync counted: the rate at which data reached the device.
    Ok(job
        .flush
        .as_ref()
        .map(|f| f.device_bytes_per_s)
        .filter(|r| *r > 0.0)
        .unwrap_or_else(|| job.write.bw_bytes_per_s()))
}

pub fn run(args: &RecordArgs, what: &str) -> Result<ExitCode> {
    let original: Vec<String> = std::env::args()
        .skip_while(|a| a != "record")
        .skip(1)
        .collect();
    let start = match what {
        "streams" => f64::from(args.streams.max(1)),
        "fps" => args.fps.unwrap_or(30.0),
        _ => match &args.bitrate {
            Some(b) => sinkrate_record::config::parse_bitrate(b).map_err(|e| anyhow!("--bitrate: {e}"))? as f64,
            None => return Err(anyhow!("--find-max bitrate needs a --bitrate stream to scale (e.g. --fps 30 --bitrate 12M)")),
        },
    };
    if what != "bitrate"
        && args.fps.is_none()
        && args.frame_size.is_none()
        && args.bitrate.is_none()
    {
        return Err(anyhow!(
            "--find-max {what} needs a custom stream: --fps with --frame-size or --bitrate"
        ));
    }
    super::record::check_args(args)?;
    let raw = raw_write_rate(
        &args.dir,
        5,
        true,
        std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false)),
    )
    .context("measuring the device's raw write rate")?;
    eprintln!(
        "sinkrate: raw direct sequential write rate: {:.1} MB/s",
        raw / 1e6
    );
    let integer = what == "streams";
    let mut probes: Vec<Value> = Vec::new();
    let probe = |value: f64, probes: &mut Vec<Value>| -> Result<bool> {
        let v = run_probe(&probe_args(&original, what, value))?;
        let keeps = v["verdict"] == "keeps_up";
        eprintln!(
            "sinkrate: probe {what}={value:.2}: {} ({:.1} MB/s requested)",
            v["verdict"].as_str().unwrap_or("?"),
            v["totals"]["requested_bytes_per_s"].as_f64().unwrap_or(0.0) / 1e6
        );
        probes.push(json!({ "value": value, "verdict": v["verdict"], "requested_bytes_per_s": v["totals"]["requested_bytes_per_s"] }));
        Ok(keeps)
    };
    // Bracket: halve until a value passes, double until one fails.
    let mut low = start;
    let mut tries = 0;
    while !probe(low, &mut probes)? {
        low /= 2.0;
        tries += 1;
        if (integer && low < 1.0) || tries > 12 {
            return Err(anyhow!(
                "even {what}={low:.3} does not keep up on {}",
                args.dir.display()
            ));
        }
    }
    let mut high = low * 2.0;
    while probe(high, &mut probes)? {
        low = high;
        high *= 2.0;
        if probes.len() > 40 {
            break;
        }
    }
    // Bisect to 5% (or adjacent integers).
    while (high - low) / low > 0.05 && !(integer && high - low <= 1.0) {
        let mid = if integer {
            ((low + high) / 2.0).floor()
        } else {
            (low + high) / 2.0
        };
        if mid <= low {
            break;
        }
        if probe(mid, &mut probes)? {
            low = mid;
        } else {
            high = mid;
        }
    }
    // Confirm; step down once if the machine was lucky the first time.
    let mut best = low;
    if !probe(best, &mut probes)? {
        best = if integer {
            (best - 1.0).max(1.0)
        } else {
            best * 0.95
        };
        probe(best, &mut probes)?;
    }
    let best_rate = probes
        .iter()
        .rev()
        .find(|p| p["value"].as_f64() == Some(best))
        .and_then(|p| p["requested_bytes_per_s"].as_f64())
        .unwrap_or(0.0);
    let text = format!(
        "largest {what} that keeps up for {}: {} ({:.1} MB/s of frames); raw direct sequential write: {:.1} MB/s ({:.0}%), {} probes\n",
        args.duration,
        if integer { format!("{}", best as u64) } else { format!("{best:.2}") },
        best_rate / 1e6,
        raw / 1e6,
        if raw > 0.0 { 100.0 * best_rate / raw } else { 0.0 },
        probes.len()
    );
    let body = if args.output_format == "json" {
        let mut v = serde_json::to_vec_pretty(&json!({
            "schema": sinkrate_model::SCHEMA, "kind": "record.find_max",
            "tool": { "name": "sinkrate", "version": sinkrate_model::TOOL_VERSION },
            "what": what, "max": best, "max_requested_bytes_per_s": best_rate,
            "raw_direct_write_bytes_per_s": raw, "probes": probes,
        }))?;
        v.push(b'\n');
        v
    } else {
        text.into_bytes()
    };
    match &args.output {
        Some(p) => {
            std::fs::write(p, &body).with_context(|| format!("{}: cannot write", p.display()))?
        }
        None => crate::write_stdout(&body)?,
    }
    Ok(ExitCode::SUCCESS)
}
