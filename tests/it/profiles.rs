//! Card profiles (`emulate up --profile`): the shipped profiles calibrated from PX4's
//! published SD card table, checked by PX4's own method (sd_bench: 4096-byte sequential
//! writes one at a time, 5 runs of 2 s) rerun on the emulated card through `sinkrate bench`
//! against the published figures (bench/profiles prints them on a quiet machine). Bad
//! profiles are refused before anything is set up.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{sinkrate_path, with_root, SlowDev};

const EMULATE_TOOLS: &[&str] = &["nbdkit", "nbdfuse", "fusermount3", "mkfs.ext4"];

/// PX4's sd_bench as a job file: 4096-byte writes, one at a time, straight to the card (the
/// flight controller has no page cache: O_DIRECT here), five runs of 2 s, each ending with
/// an fsync.
const SD_BENCH: &str = "\
[global]
ioengine=psync
direct=1
rw=write
bs=4k
size=8m
filename=benchmark.tmp
runtime=2
time_based=1
end_fsync=1

[run1]
stonewall
[run2]
stonewall
[run3]
stonewall
[run4]
stonewall
[run5]
stonewall
";

/// sd_bench's figures from a bench result: the mean rate in KB/s (1024 bytes, as sd_bench
/// prints it), the worst write of each run averaged (its table's figure) and the worst of
/// all runs, in ms.
fn sd_bench_figures(v: &serde_json::Value) -> (f64, f64, f64) {
    let jobs = v["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 5, "five runs");
    let (mut kib, mut ms, mut sum_worst, mut worst) = (0.0, 0.0, 0.0, 0.0f64);
    for j in jobs {
        kib += j["write"]["io_kbytes"].as_f64().expect("io_kbytes");
        ms += j["write"]["runtime"].as_f64().expect("runtime");
        let run_worst = j["write"]["clat_ns"]["max"].as_f64().expect("clat max") / 1e6;
        sum_worst += run_worst;
        worst = worst.max(run_worst);
    }
    (kib / (ms / 1000.0), sum_worst / jobs.len() as f64, worst)
}

fn bench_on(dir: &Path, job: &Path) -> serde_json::Value {
    let out = Command::new(sinkrate_path())
        .args(["bench", "--eta=never", "--output-format", "json"])
        .arg(job)
        .current_dir(dir)
        .output()
        .expect("bench runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_file(dir.join("benchmark.tmp"));
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn px4s_method_on_the_profiles_is_never_faster_than_px4s_cards_and_orders_them() {
    with_root(
        "px4s_method_on_the_profiles_is_never_faster_than_px4s_cards_and_orders_them",
        EMULATE_TOOLS,
        || {
            let dir = tempfile::tempdir().expect("tempdir");
            let job = dir.path().join("sd_bench.fio");
            std::fs::write(&job, SD_BENCH).expect("job");
            // (profile, the table's mean KB/s, its average worst write in ms): PX4 User Guide,
            // Logging, "SD Cards". On a quiet machine the emulated cards give those figures
            // within 15% and 20% (bench/profiles prints them). Beside load every 4 KB write
            // also waits for the CPU on its way through the loop device, FUSE and nbdkit
            // (125 KB/s where 196 were published, once beside two busy loops and a writer),
            // and a run that writes less than a pause's period of bytes meets no pause (the
            // average of the runs' worst writes fell to 442 ms once). What holds on any
            // machine: the emulation is never faster than the card published, its worst
            // write is at least the card's pause, and it orders the cards by rate as PX4's
            // table does (not by worst write: a starved CPU adds to any write, and a Pixtor
            // run's worst was 568 ms beside load and a build once).
            let mut measured = Vec::new();
            for (profile, kb_s, worst_ms) in [
                ("px4-sandisk-ultra-plus-16g", 196.0, 500.0),
                ("px4-sandisk-pixtor-16g", 334.0, 250.0),
            ] {
                let card = SlowDev::new(&["--profile", profile, "--size", "256M"]);
                let (rate, mean_worst, worst) = sd_bench_figures(&bench_on(card.path(), &job));
                assert!(
                    rate <= kb_s * 1.05,
                    "{profile}: {rate:.0} KB/s, faster than PX4's {kb_s}"
                );
                assert!(
                    worst >= worst_ms * 0.95,
                    "{profile}: worst write {worst:.0} ms (runs' average {mean_worst:.0}), under PX4's {worst_ms}"
                );
                measured.push((profile, rate, worst));
            }
            let (slow, fast) = (&measured[0], &measured[1]);
            assert!(
                slow.1 < fast.1,
                "the Ultra PLUS writes slower than the Pixtor: {measured:?}"
            );
        },
    );
}

#[test]
fn a_bad_profile_gets_one_line_and_nothing_is_set_up() {
    with_root(
        "a_bad_profile_gets_one_line_and_nothing_is_set_up",
        EMULATE_TOOLS,
        || {
            let dir = tempfile::tempdir().expect("tempdir");
            let mountpoint = dir.path().join("card");
            let write = |name: &str, text: &str| {
                let p = dir.path().join(name);
                std::fs::write(&p, text).expect("profile");
                p
            };
            let newer = write(
                "newer.json",
                r#"{"format": "sinkrate.card-profile/2", "name": "n", "write_rate": "10MB", "wear": {}}"#,
            );
            let shares = write(
                "shares.json",
                r#"{"format": "sinkrate.card-profile/1", "name": "s", "write_rate": "10MB",
                "busy": [{"share": 0.7, "extra": "0ms"}, {"share": 0.2, "extra": "100ms"}]}"#,
            );
            let negative = write(
                "negative.json",
                r#"{"format": "sinkrate.card-profile/1", "name": "s", "write_rate": "-10MB"}"#,
            );
            let absurd = write(
                "absurd.json",
                r#"{"format": "sinkrate.card-profile/1", "name": "s", "write_rate": "10MB", "random_writes": [{"size": "4k", "iops": 1e12}]}"#,
            );
            let small = write(
                "small.json",
                r#"{"format": "sinkrate.card-profile/1", "name": "s", "write_rate": "10MB"}"#,
            );
            let cases: Vec<(Vec<String>, &str)> = vec![
                (
                    vec![newer.display().to_string()],
                    "written by a newer sinkrate",
                ),
                (vec![shares.display().to_string()], "the shares sum to 0.9"),
                (vec![negative.display().to_string()], "write_rate"),
                (vec![absurd.display().to_string()], "at most 10 million"),
                (
                    vec!["no-such-card".into()],
                    "no such profile (shipped: px4-sandisk-extreme-u3-32g",
                ),
                (
                    vec![small.display().to_string(), "--size".into(), "4M".into()],
                    "too small for ext4",
                ),
            ];
            for (args, says) in cases {
                let out = Command::new(sinkrate_path())
                    .args(["emulate", "up"])
                    .arg(&mountpoint)
                    .arg("--profile")
                    .args(&args)
                    .output()
                    .expect("runs");
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
                assert!(stderr.contains(says), "{args:?}: {stderr}");
                assert_eq!(
                    stderr.trim().lines().count(),
                    1,
                    "{args:?}: one line: {stderr}"
                );
                assert!(!mountpoint.exists(), "{args:?}: nothing made");
            }
            // A profile and a flag it sets are not given together.
            let out = Command::new(sinkrate_path())
                .args(["emulate", "up"])
                .arg(&mountpoint)
                .args(["--profile", "v10-just-meets", "--write-rate", "20MB"])
                .output()
                .expect("runs");
            assert_eq!(out.status.code(), Some(2));
            assert!(!mountpoint.exists(), "nothing made");
        },
    );
}

#[test]
fn a_profile_that_misses_c10_by_its_pauses_is_caught_by_verify_class() {
    with_root(
        "a_profile_that_misses_c10_by_its_pauses_is_caught_by_verify_class",
        EMULATE_TOOLS,
        || {
            // The profile that misses: a 300 ms pause after every 16 MiB is a write busy over
            // 250 ms, whatever the machine does beside it.
            let card = SlowDev::new(&["--profile", "c10-gc-misses", "--size", "256M"]);
            let out = Command::new(sinkrate_path())
                .args([
                    "verify",
                    "--class",
                    "--claim",
                    "C10",
                    "--output-format",
                    "json",
                    "--progress",
                    "never",
                ])
                .arg(card.path())
                .output()
                .expect("runs");
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            assert_eq!(out.status.code(), Some(1), "{v}");
            assert!(
                v["passes"][0]["worst_write_ns"].as_u64() >= Some(300_000_000),
                "{v}"
            );
        },
    );
}
