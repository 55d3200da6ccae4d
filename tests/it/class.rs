//! `sinkrate verify --class`: the SD specification's method on emulated cards built to meet
//! and to miss a class, each verdict in its direction with its named cause; the bytes it
//! says it wrote against the kernel's own count for the card's device (/proc/diskstats, read
//! here); bad input refused before anything is written; an interrupt leaves no file.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{sinkrate_path, with_root, SlowDev};

const EMULATE_TOOLS: &[&str] = &["nbdkit", "nbdfuse", "fusermount3", "mkfs.ext4"];

fn class(dir: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let dir = dir.to_str().expect("utf8");
    let head = [
        "--class",
        "--output-format",
        "json",
        "--progress",
        "never",
        dir,
    ];
    let (code, out, stderr) = common::sinkrate_sub("verify", &[&head[..], extra].concat());
    assert!(!stderr.contains("panicked"), "{stderr}");
    let v = serde_json::from_str(&out).unwrap_or(serde_json::Value::Null);
    (code, v, stderr)
}

/// Sectors written to `device` as the kernel counts them, in bytes.
fn diskstats_written(device: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/diskstats").expect("diskstats");
    text.lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&device)).then(|| f[9].parse::<u64>().expect("sectors") * 512)
        })
        .expect("the device is in diskstats")
}

/// The files in `dir` besides the filesystem's own (ext4's lost+found).
fn left_in(dir: &Path) -> Vec<String> {
    common::files_in(dir)
        .into_iter()
        .filter(|f| f != "lost+found")
        .collect()
}

fn verdict(v: &serde_json::Value, class: &str) -> serde_json::Value {
    v["classes"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["class"] == class).cloned())
        .unwrap_or_else(|| panic!("{class} judged: {v}"))
}

#[test]
fn a_card_that_keeps_its_rate_meets_the_class_and_its_bytes_are_the_kernels() {
    with_root(
        "a_card_that_keeps_its_rate_meets_the_class_and_its_bytes_are_the_kernels",
        EMULATE_TOOLS,
        || {
            // Four times V10's 10 MB/s, with no pause: meets V10 (a busy machine slows the
            // emulated card, but not to a quarter).
            let card = SlowDev::new(&["--size", "256M", "--write-rate", "40MB"]);
            let device = card.device_name();
            let before = diskstats_written(&device);
            let (code, v, stderr) = class(card.path(), &["--claim", "V10"]);
            let counted = diskstats_written(&device) - before;
            assert_eq!(code, Some(0), "{stderr}\n{v}");
            assert_eq!(v["kind"], "class");
            assert_eq!(v["claim"], "V10");
            assert_eq!(v["claim_source"], "given");
            assert_eq!(v["claim_met"], true, "{v}");
            assert_eq!(verdict(&v, "V10")["met"], true, "{v}");
            assert!(
                v["verdict_text"]
                    .as_str()
                    .is_some_and(|t| t.contains("asked for V10: met")),
                "{v}"
            );
            // One pass at 512 KiB: the card met Class 10, so the smaller RUs were not needed.
            let passes = v["passes"].as_array().expect("passes");
            assert_eq!(passes.len(), 1, "{v}");
            assert_eq!(passes[0]["ru_bytes"], 512 * 1024);
            assert_eq!(passes[0]["writes"], 64, "32 MiB of 512 KiB RUs");
            assert!(
                passes[0]["min_unit_bytes_per_s"].as_f64() >= Some(10e6),
                "{v}"
            );
            // Everything it says it wrote reached the device, and little else did (the
            // filesystem's journal and the files' metadata).
            let written = v["written_bytes"].as_u64().expect("written");
            assert!(written >= 32 << 20, "{v}");
            assert!(
                counted >= written,
                "the kernel counted {counted}, sinkrate {written}"
            );
            assert!(
                counted <= written + written / 5 + (4 << 20),
                "the kernel counted {counted}, sinkrate {written}"
            );
            assert_eq!(
                v["device_written_bytes"].as_u64().map(|b| b >= written),
                Some(true)
            );
            assert!(left_in(card.path()).is_empty(), "its files are removed");
        },
    );
}

#[test]
fn pauses_over_250_ms_and_a_slow_card_miss_the_class_each_by_its_cause() {
    with_root(
        "pauses_over_250_ms_and_a_slow_card_miss_the_class_each_by_its_cause",
        EMULATE_TOOLS,
        || {
            // Fast between pauses, but 400 ms of garbage collection after every 8 MiB: the
            // RU writes that meet a pause are busy over the 250 ms bound.
            let pausing = SlowDev::new(&[
                "--size",
                "256M",
                "--write-rate",
                "40MB",
                "--gc-pauses",
                "400ms/8M",
            ]);
            let (code, v, stderr) = class(pausing.path(), &["--claim", "V10"]);
            assert_eq!(code, Some(1), "{stderr}\n{v}");
            assert_eq!(v["claim_met"], false, "{v}");
            let pass = &v["passes"][0];
            // 32 MiB crosses at least three pauses; each write that meets one takes all of it.
            assert!(pass["writes_over_busy_limit"].as_u64() >= Some(3), "{v}");
            assert!(pass["worst_write_ns"].as_u64() >= Some(400_000_000), "{v}");
            let reasons = verdict(&v, "V10")["reasons"].to_string();
            assert!(
                reasons.contains("RU writes took over 250 ms (worst"),
                "{reasons}"
            );
            assert!(
                v["verdict_text"]
                    .as_str()
                    .is_some_and(|t| t.contains("asked for V10 but")),
                "{v}"
            );
            // Class 10 missed at 512 KiB: the smaller RUs of Class 6 and of 2 and 4 were tried.
            let rus: Vec<u64> = v["passes"]
                .as_array()
                .expect("passes")
                .iter()
                .filter_map(|p| p["ru_bytes"].as_u64())
                .collect();
            assert_eq!(rus, [512 << 10, 64 << 10, 32 << 10], "{v}");
            assert!(left_in(pausing.path()).is_empty(), "its files are removed");
            drop(pausing);

            // 6 MB/s and no pause: every write is short, but the rate is under Class 10's.
            let slow = SlowDev::new(&["--size", "256M", "--write-rate", "6MB"]);
            let (code, v, stderr) =
                class(slow.path(), &["--claim", "C10", "--random-seconds", "0.5"]);
            assert_eq!(code, Some(1), "{stderr}\n{v}");
            let reasons = verdict(&v, "C10")["reasons"].to_string();
            assert!(reasons.contains("under C10's 10.0 MB/s"), "{reasons}");
            assert!(!reasons.contains("over 250 ms"), "{reasons}");
            assert!(
                v["passes"][0]["min_unit_bytes_per_s"].as_f64() < Some(10e6),
                "{v}"
            );
            // The stream of 1 Mbit/s needs V6, which this card's rate carries or not; the
            // verdict names the class it needs either way.
            let (_, v, stderr) = class(
                slow.path(),
                &[
                    "--claim",
                    "C10",
                    "--bitrate",
                    "1M",
                    "--random-seconds",
                    "0.5",
                ],
            );
            assert_eq!(v["stream_needs"], "V6", "{stderr}\n{v}");
            assert!(left_in(slow.path()).is_empty(), "its files are removed");
        },
    );
}

#[test]
fn bad_input_gets_one_line_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    for (args, says) in [
        (
            &["--claim", "V45"][..],
            "--claim V45: not an SD class (accepted: C2",
        ),
        (&["--au", "1000"][..], "--au 1000: a multiple of 16 KiB"),
        (&["--size", "4M"][..], "at least two units of 4096 KiB"),
        (
            &["--random-seconds", "0"][..],
            "--random-seconds 0: from 0.2 to 60",
        ),
        (
            &["--size", "64T"][..],
            "MiB free, and the qualification writes",
        ),
    ] {
        let (code, _, stderr) = class(d, args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(
            stderr.trim().lines().count(),
            1,
            "{args:?}: one line: {stderr}"
        );
        assert!(left_in(d).is_empty(), "{args:?}: nothing written");
    }
    let (code, _, stderr) = class(&d.join("missing"), &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("not a directory"), "{stderr}");
    // --claim without --class is refused by the parser.
    let out = Command::new(sinkrate_path())
        .args(["verify", "--claim", "V30"])
        .arg(d)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn memory_is_not_a_card_and_an_interrupt_leaves_no_file() {
    with_root(
        "memory_is_not_a_card_and_an_interrupt_leaves_no_file",
        EMULATE_TOOLS,
        || {
            let parent = tempfile::tempdir().expect("tempdir");
            let memory = common::MemoryFs::new(&parent.path().join("mem"), "64M");
            let (code, _, stderr) = class(&memory.at, &[]);
            assert_eq!(code, Some(2), "{stderr}");
            assert!(stderr.contains("keeps files in memory"), "{stderr}");

            // A slow card, so the run is still writing when it is interrupted.
            let card = SlowDev::new(&["--size", "256M", "--write-rate", "2MB"]);
            let child = Command::new(sinkrate_path())
                .args(["verify", "--class", "--progress", "never"])
                .arg(card.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while left_in(card.path()).len() < 2 && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            assert!(!left_in(card.path()).is_empty(), "the run started writing");
            std::thread::sleep(std::time::Duration::from_millis(500));
            // SIGINT, as Ctrl-C sends it.
            let pid = i32::try_from(child.id()).expect("pid");
            assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
            let out = child.wait_with_output().expect("wait");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(130), "{stderr}");
            assert!(stderr.contains("its files are removed"), "{stderr}");
            assert!(left_in(card.path()).is_empty(), "no file is left");
        },
    );
}
