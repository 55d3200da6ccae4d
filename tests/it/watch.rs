//! `sinkrate watch`: exit codes passed through, the JSON keys scripts rely on, Ctrl-C, the
//! Prometheus textfile (parsed by a real parser), bad input, and real throttling on the
//! emulated slow card.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::sinkrate_path;

fn watch(args: &[&str]) -> std::process::Output {
    Command::new(sinkrate_path())
        .arg("watch")
        .args(args)
        .output()
        .expect("runs")
}

#[test]
fn the_commands_exit_code_is_passed_through() {
    assert_eq!(watch(&["--", "false"]).status.code(), Some(1));
    assert_eq!(watch(&["--", "true"]).status.code(), Some(0));
    assert_eq!(watch(&["--", "sh", "-c", "exit 7"]).status.code(), Some(7));
    let out = watch(&["--", "/nonexistent/recorder"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run it"));
}

#[test]
fn json_has_the_summary_and_the_timeline() {
    let out = watch(&[
        "--duration",
        "1s",
        "--interval",
        "50ms",
        "--output-format",
        "json",
    ]);
    common::succeeded(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["schema"], "sinkrate.run/1");
    assert_eq!(v["kind"], "watch");
    let s = &v["summary"];
    for key in [
        "min_mem_available_bytes",
        "peak_dirty_writeback_bytes",
        "throttled_samples",
        "throttled_seconds",
        "samples",
    ] {
        assert!(s[key].is_number(), "summary.{key}: {s}");
    }
    // One second of an idle host is no basis for limits: the watch says so instead.
    assert!(s["recommendation"].is_null(), "{s}");
    assert!(
        s["recommendation_withheld"]
            .as_str()
            .is_some_and(|w| w.starts_with("too little data")),
        "{s}"
    );
    let timeline = v["timeline"].as_array().expect("timeline");
    let samples = s["samples"].as_u64().expect("samples") as usize;
    assert_eq!(timeline.len(), samples);
    assert!(
        (18..=23).contains(&samples),
        "{samples} samples in 1 s at 50 ms"
    );
    for key in [
        "t_ns",
        "mem_available_bytes",
        "dirty_bytes",
        "writeback_bytes",
        "freerun_ceiling_bytes",
        "throttled",
    ] {
        assert!(!timeline[5][key].is_null(), "timeline[].{key}");
    }
    assert!(timeline[5]["cpu_idle_pct"].is_number());
}

#[test]
fn ctrl_c_prints_the_summary_and_writes_the_json() {
    let d = tempfile::tempdir().expect("tempdir");
    let file = d.path().join("w.json");
    let child = Command::new(sinkrate_path())
        .args(["watch", "--output-format", "json", "--output"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(800));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(130));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).expect("written")).expect("json");
    assert_eq!(v["interrupted"], true);
    assert!(v["summary"]["samples"].as_u64() >= Some(5));
}

#[test]
fn the_prometheus_file_parses() {
    let d = tempfile::tempdir().expect("tempdir");
    let prom = d.path().join("sinkrate.prom");
    let csv = d.path().join("w.csv");
    let out = watch(&[
        "--duration",
        "500ms",
        "--prometheus",
        &prom.to_string_lossy(),
        "--csv",
        &csv.to_string_lossy(),
        "--output-format",
        "json",
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let text = std::fs::read_to_string(&prom).expect("prom file");
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .expect("valid textfile");
    let names: Vec<&str> = scrape.samples.iter().map(|s| s.metric.as_str()).collect();
    // The file left at the end: the watch says it stopped, and keeps what stays true.
    for n in [
        "sinkrate_watch_running",
        "sinkrate_last_update_timestamp_seconds",
        "sinkrate_throttled_seconds_total",
        "sinkrate_build_info",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    for gone in ["sinkrate_dirty_bytes", "sinkrate_throttled"] {
        assert!(
            !names.contains(&gone),
            "{gone} is stale after the end: {text}"
        );
    }
    assert!(text.contains("sinkrate_watch_running 0\n"), "{text}");
    assert!(
        scrape.docs.contains_key("sinkrate_throttled_seconds_total"),
        "HELP text"
    );
    assert!(!d.path().join("sinkrate.prom.tmp").exists());
    let rows = std::fs::read_to_string(&csv).expect("csv");
    let lines: Vec<&str> = rows.lines().collect();
    assert!(lines[0].starts_with("t_s,mem_available_bytes"));
    // A row for every sample the run took (how many fit in 500 ms is the CPU's business:
    // a busy machine gave 3 where an idle one gives 5).
    let samples = v["summary"]["samples"].as_u64().expect("samples") as usize;
    eprintln!("{samples} samples in 500 ms");
    assert!(samples >= 1);
    assert_eq!(lines.len() - 1, samples, "{rows}");
    for row in &lines[1..] {
        assert_eq!(row.split(',').count(), lines[0].split(',').count(), "{row}");
    }
}

#[test]
fn bad_input_gets_one_line_and_exit_2() {
    for (args, expect) in [
        (vec!["--interval", "5ms"], "below the 10ms minimum"),
        (vec!["--interval", "soon"], "not a time"),
        (vec!["--duration", "ten"], "not a time"),
        (vec!["--pid", "999999999"], "no such running process"),
        (vec!["--device", "nodisk0"], "no such block device"),
        (vec!["--output", "/nonexistent/w.json"], "does not exist"),
        (vec!["--tui", "--duration", "1s"], "needs a terminal"),
        (
            vec!["--prometheus-every", "10s", "--duration", "1s"],
            "only with --prometheus",
        ),
        (
            vec![
                "--prometheus",
                "/nonexistent/x.prom",
                "--prometheus-every",
                "200ms",
            ],
            "below the 1s minimum",
        ),
    ] {
        let out = watch(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr
                .lines()
                .filter(|l| l.starts_with("sinkrate: error:"))
                .count(),
            1,
            "{stderr}"
        );
        assert!(stderr.contains(expect), "{args:?}: {stderr}");
    }
}

/// Another user's process: neither its counters nor its calls can be read without root, so
/// watching it is refused in one line before anything starts; a pid that ends while
/// watched ends the watch, which says how long it watched.
#[test]
fn another_user_s_pid_is_refused_and_one_that_ends_ends_the_watch() {
    common::with_root(
        "watch::another_user_s_pid_is_refused_and_one_that_ends_ends_the_watch",
        &["runuser"],
        || {
            let binary = common::BinaryForOtherUsers::new();
            let out = Command::new("runuser")
                .current_dir(binary.dir())
                .args(["-u", "nobody", "--"])
                .arg(&binary.path)
                .args(["watch", "--pid", "1", "--duration", "5s"])
                .output()
                .expect("runs");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{stderr}");
            assert!(
                common::one_error_line(&out, &"--pid 1")
                    .contains("belongs to another user (uid 0)"),
                "{stderr}"
            );
            assert!(
                out.stdout.is_empty(),
                "nothing watched: {}",
                String::from_utf8_lossy(&out.stdout)
            );
            let mut short = Command::new("sleep").arg("1").spawn().expect("sleep");
            let started = std::time::Instant::now();
            let out = watch(&[
                "--pid",
                &short.id().to_string(),
                "--duration",
                "30s",
                "--output-format",
                "json",
            ]);
            let _ = short.wait();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                started.elapsed().as_secs() < 20,
                "the watch ended with its process"
            );
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            let watched = v["summary"]["duration_s"].as_f64();
            assert!(watched.is_some_and(|s| s < 20.0), "{}", v["summary"]);
        },
    );
}

#[test]
fn throttling_on_a_slow_card_is_seen_and_a_setting_recommended() {
    common::with_root(
        "throttling_on_a_slow_card_is_seen_and_a_setting_recommended",
        &["nbdkit", "nbdfuse", "fusermount3", "mkfs.ext4", "dd"],
        || {
            let card = common::SlowDev::new(&["--write-rate", "10MB", "--size", "256M"]);
            // Set for the test and restored on drop (also if it fails), journaled like record's.
            use sinkrate_model::tunables::Assignment;
            let _limits = sinkrate_settings::Temporary::apply(
                &sinkrate_settings::Journal::live(),
                &[
                    Assignment::sysctl("vm.dirty_bytes", 16u64 << 20),
                    Assignment::sysctl("vm.dirty_background_bytes", 8u64 << 20),
                ],
            )
            .expect("set the dirty limits");
            let device = card.device_name();
            let target = card.path().join("rec.bin");
            let out = watch(&[
                "--device",
                &device,
                "--interval",
                "50ms",
                "--output-format",
                "json",
                "--",
                "dd",
                "if=/dev/zero",
                &format!("of={}", target.display()),
                "bs=1M",
                "count=40",
                "conv=fsync",
                "status=none",
            ]);
            common::succeeded(&out);
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            let s = &v["summary"];
            assert!(
                s["peak_dirty_writeback_bytes"].as_u64() >= Some(8 << 20),
                "dirty pages rose: {s}"
            );
            assert!(
                s["throttled_samples"].as_u64() >= Some(1),
                "throttling recorded: {s}"
            );
            assert!(
                s["throttled_seconds"].as_f64().is_some_and(|t| t > 0.1),
                "{s}"
            );
            let r = &s["recommendation"];
            assert!(
                r["dirty_bytes"].as_u64() > Some(16 << 20),
                "recommends more than the 16 MiB limit: {r}"
            );
            assert!(r["text"].as_str().is_some_and(|t| t.contains("throttled")));
            assert!(
                r["at_risk_seconds"].is_number(),
                "cost in seconds at the device's measured rate: {r}"
            );
            assert_eq!(
                s["settings"]["dirty_bytes"],
                16 << 20,
                "the settings in force are reported"
            );
        },
    );
}
