//! `sinkrate check`: on a fast loop device it answers with headroom (exit 0, or 1 when a
//! busy disk beneath stalled a write: bench/audit counts how often it keeps up), on the
//! emulated slow card it does not keep up (exit 1); it removes its test files, writes the
//! full report, and refuses paths it cannot test with one line (exit 2).

use crate::common;

use std::process::Command;

use common::{sinkrate_path, with_root, ScratchFs, SlowDev};

fn check(
    dir: &std::path::Path,
    report: &std::path::Path,
) -> (Option<i32>, String, serde_json::Value) {
    let out = Command::new(sinkrate_path())
        .arg("check")
        .arg(dir)
        .args([
            "--quick",
            "--color",
            "never",
            "--progress",
            "always",
            "--output",
        ])
        .arg(report)
        .output()
        .expect("runs");
    let v = std::fs::read(report)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(serde_json::Value::Null);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text, v)
}

fn leftovers(dir: &std::path::Path) -> Vec<String> {
    common::files_in(dir)
        .into_iter()
        .filter(|f| f != "lost+found")
        .collect()
}

#[test]
fn a_fast_loop_device_has_headroom_and_the_slow_card_does_not() {
    with_root(
        "a_fast_loop_device_has_headroom_and_the_slow_card_does_not",
        &["mkfs.ext4", "nbdkit", "nbdfuse", "fusermount3"],
        || {
            let reports = tempfile::tempdir().expect("tempdir");
            let fast = ScratchFs::new("1G", "ext4", "noatime");
            let report = reports.path().join("fast.json");
            let (code, text, v) = check(fast.path(), &report);
            // The loop device is hundreds of times faster than the stream; whether no frame
            // at all drops in 8 s depends on the machine's disk being quiet (a busy CI run
            // saw one 136 ms write drop one frame of 480): bench/audit prints how many rounds
            // keep up. What holds anywhere: an answer, headroom, and a verdict the device's
            // rate does not contradict.
            assert!(matches!(code, Some(0 | 1)), "{text}");
            assert!(
                text.contains("VERDICT  KEEPS UP") || text.contains("VERDICT  DROPS FRAMES"),
                "{text}"
            );
            // Off a terminal, --progress always gives one line per phase with the time left.
            assert!(text.contains("sinkrate check: sustained write"), "{text}");
            assert!(text.contains("sinkrate check: recording test"), "{text}");
            assert!(text.contains("s left"), "{text}");
            assert!(
                text.contains("sustained write, page cache excluded"),
                "{text}"
            );
            assert_eq!(
                v["verdict"],
                if code == Some(0) { "keeps_up" } else { "drops" }
            );
            assert_eq!(v["kind"], "check");
            assert!(v["raw_write"]["bytes_per_s"]
                .as_f64()
                .is_some_and(|r| r > 3e6));
            assert_eq!(v["record"]["verdict"], v["verdict"]);
            assert!(v["audit"]["findings"].is_array());
            assert!(v["headroom"].as_f64().is_some_and(|h| h > 1.0));
            assert!(
                leftovers(fast.path()).is_empty(),
                "{:?}",
                leftovers(fast.path())
            );
            // An 8 s buffered test cannot see the first writeback of expired data: it says so.
            let vm = |n: &str| {
                std::fs::read_to_string(format!("/proc/sys/vm/{n}"))
                    .ok()
                    .and_then(|t| t.trim().parse::<u64>().ok())
                    .unwrap_or(0)
            };
            let first_burst_s =
                (vm("dirty_expire_centisecs") + vm("dirty_writeback_centisecs")) / 100;
            let noted = v["notes"].as_array().is_some_and(|n| {
                n.iter()
                    .any(|n| n.as_str().is_some_and(|n| n.contains("first writeback")))
            });
            assert_eq!(noted, first_burst_s > 8, "{}", v["notes"]);

            // 2 MB/s against dual-1080p30's 3 MB/s.
            let card = SlowDev::new(&["--write-rate", "2MB", "--size", "512M"]);
            let report = reports.path().join("slow.json");
            let (code, text, v) = check(card.path(), &report);
            assert_eq!(code, Some(1), "{text}");
            assert!(!text.contains("KEEPS UP"), "{text}");
            assert_ne!(v["verdict"], "keeps_up");
            assert!(
                v["raw_write"]["bytes_per_s"]
                    .as_f64()
                    .is_some_and(|r| r < 3e6),
                "{}",
                v["raw_write"]
            );
            assert!(v["headroom"].as_f64().is_some_and(|h| h < 1.0));
            assert!(
                leftovers(card.path()).is_empty(),
                "{:?}",
                leftovers(card.path())
            );
        },
    );
}

#[test]
fn paths_that_cannot_be_tested_fail_with_the_reason_and_the_audit() {
    let reports = tempfile::tempdir().expect("tempdir");
    let report = reports.path().join("r.json");
    // A path that does not exist has nothing to audit: one line.
    let (code, text, _) = check(std::path::Path::new("/no/such/dir"), &report);
    assert_eq!(code, Some(2), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(!report.exists());
    // A kernel interface is audited and fails, with the reason, in text and in the report.
    let (code, text, v) = check(std::path::Path::new("/proc"), &report);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("VERDICT  FAILED"), "{text}");
    assert!(text.contains("kernel interface"), "{text}");
    assert!(text.contains("fs.pseudo"), "the audit still ran: {text}");
    assert_eq!(v["verdict"], "failed");
    assert!(v["record"].is_null() && v["raw_write"]["bytes_per_s"].is_null());
    // A file is audited and fails in check's words, not with record's --dir.
    let file = reports.path().join("a-file");
    std::fs::write(&file, b"x").expect("file");
    let (code, text, _) = check(&file, &report);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("is not a directory") && !text.contains("--dir"),
        "{text}"
    );
}

#[test]
fn a_read_only_mount_is_audited_but_not_written() {
    with_root(
        "a_read_only_mount_is_audited_but_not_written",
        &["mkfs.ext4"],
        || {
            let fs = ScratchFs::new("256M", "ext4", "ro");
            let reports = tempfile::tempdir().expect("tempdir");
            let report = reports.path().join("r.json");
            let check = |format: &str| {
                Command::new(sinkrate_path())
                    .arg("check")
                    .arg(fs.path())
                    .args(["--quick", "--color", "never", "--progress", "never"])
                    .args(["--output-format", format, "--output"])
                    .arg(&report)
                    .output()
                    .expect("runs")
            };
            let out = check("text");
            assert_eq!(out.status.code(), Some(2));
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("VERDICT  FAILED"), "{text}");
            assert!(text.contains("read-only mount"), "{text}");
            assert!(
                text.contains("mount.read_only"),
                "the audit applies: {text}"
            );
            assert!(!text.contains("KEEPS UP"), "{text}");
            // The JSON document is printed and written, saying why, with the audit in it.
            let out = check("json");
            assert_eq!(out.status.code(), Some(2));
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
            assert_eq!(v["verdict"], "failed");
            assert!(v["headroom"].is_null());
            assert!(
                v["error"]["what"]
                    .as_str()
                    .is_some_and(|w| w.contains("read-only")),
                "{}",
                v["error"]
            );
            assert!(v["top_findings"]
                .as_array()
                .is_some_and(|f| f.iter().any(|id| id == "mount.read_only")));
            let written: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&report).expect("report written"))
                    .expect("json");
            assert_eq!(written["verdict"], "failed");
        },
    );
}

#[test]
fn a_directory_this_user_cannot_write_fails_after_the_audit() {
    with_root(
        "a_directory_this_user_cannot_write_fails_after_the_audit",
        &["runuser"],
        || {
            let dir = tempfile::tempdir().expect("tempdir");
            // Readable by everyone, writable by root only.
            std::fs::set_permissions(
                dir.path(),
                std::os::unix::fs::PermissionsExt::from_mode(0o755),
            )
            .expect("chmod");
            let binary = common::BinaryForOtherUsers::new();
            let reports = tempfile::tempdir().expect("tempdir");
            std::fs::set_permissions(
                reports.path(),
                std::os::unix::fs::PermissionsExt::from_mode(0o777),
            )
            .expect("chmod");
            let out = Command::new("runuser")
                .current_dir(binary.dir())
                .args(["-u", "nobody", "--"])
                .arg(&binary.path)
                .args([
                    "check",
                    "--quick",
                    "--progress",
                    "never",
                    "--color",
                    "never",
                    "--output",
                ])
                .arg(reports.path().join("r.json"))
                .arg(dir.path())
                .output()
                .expect("runs");
            assert_eq!(out.status.code(), Some(2));
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("VERDICT  FAILED"), "{text}");
            assert!(text.contains("not writable by this user"), "{text}");
            let report: serde_json::Value = serde_json::from_slice(
                &std::fs::read(reports.path().join("r.json")).expect("report written"),
            )
            .expect("json");
            assert!(
                report["audit"]["target"]["fs_type"]
                    .as_str()
                    .is_some_and(|t| !t.is_empty()),
                "the audit ran: {report}"
            );
            assert!(common::files_in(dir.path()).is_empty());
        },
    );
}

#[test]
fn record_flags_after_the_double_dash_shape_the_recording_test() {
    with_root(
        "record_flags_after_the_double_dash_shape_the_recording_test",
        &["mkfs.ext4"],
        || {
            let fs = ScratchFs::new("512M", "ext4", "noatime");
            let reports = tempfile::tempdir().expect("tempdir");
            let report = reports.path().join("r.json");
            let out = Command::new(sinkrate_path())
                .arg("check")
                .arg(fs.path())
                .args(["--quick", "--progress", "never", "--output"])
                .arg(&report)
                .args([
                    "--",
                    "--streams",
                    "2",
                    "--fps",
                    "10",
                    "--frame-size",
                    "100000",
                ])
                .args(["--buffers", "6", "--write-mode", "direct"])
                .output()
                .expect("runs");
            let text = String::from_utf8_lossy(&out.stdout);
            // Whether a loop device keeps up with 2 MB/s of direct writes depends on how busy
            // the machine's disk is (a 2 s stall was seen with CI's lanes beside it), so the
            // test asserts an answer (0 or 1) and that the flags shaped it, not the verdict.
            assert!(
                matches!(out.status.code(), Some(0 | 1)),
                "{text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("json");
            assert!(v["error"].is_null(), "{}", v["error"]);
            // 2 x 10 x 100 kB = 2 MB/s: the verdict, headroom and audit follow these streams.
            assert_eq!(v["stream"]["bytes_per_s"], 2_000_000.0);
            assert_eq!(v["audit"]["stream"]["bytes_per_s"], 2_000_000.0);
            assert_eq!(v["record"]["config"]["buffers"], 6);
            assert_eq!(v["record"]["config"]["write_mode"], "direct");
            assert_eq!(v["record"]["totals"]["frames_offered"], 160);
            let out = Command::new(sinkrate_path())
                .arg("check")
                .arg(fs.path())
                .args(["--quick", "--", "--duration", "5s"])
                .output()
                .expect("runs");
            assert_eq!(out.status.code(), Some(2));
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(
                err.contains("--duration") && err.contains("sets it itself"),
                "{err}"
            );
        },
    );
}

/// The sustained rate is one the device achieved, whatever the filesystem does with O_DIRECT:
/// ext4 data=journal takes O_DIRECT through the page cache and writes every byte twice. fio,
/// on the same mount with the final fsync counted, is the independent figure.
#[test]
fn the_sustained_rate_on_data_journal_is_what_fio_measures_with_the_flush() {
    with_root(
        "the_sustained_rate_on_data_journal_is_what_fio_measures_with_the_flush",
        &["mkfs.ext4", "nbdkit", "nbdfuse", "fusermount3", "fio"],
        || {
            let card = SlowDev::new(&[
                "--write-rate",
                "10MB",
                "--size",
                "512M",
                "--mount-opts",
                "data=journal",
            ]);
            let fio = Command::new(common::fio_path())
                .args([
                    "--name=w",
                    "--rw=write",
                    "--bs=1m",
                    "--size=64m",
                    "--end_fsync=1",
                    "--output-format=json",
                ])
                .arg(format!("--directory={}", card.path().display()))
                .output()
                .expect("fio runs");
            assert!(
                fio.status.success(),
                "{}",
                String::from_utf8_lossy(&fio.stderr)
            );
            let f: serde_json::Value = serde_json::from_slice(&fio.stdout).expect("fio json");
            let fio_rate = f["jobs"][0]["write"]["bw_bytes"]
                .as_f64()
                .expect("bw_bytes");
            for entry in std::fs::read_dir(card.path()).expect("list") {
                let p = entry.expect("entry").path();
                if p.is_file() {
                    std::fs::remove_file(p).expect("remove fio's file");
                }
            }
            let reports = tempfile::tempdir().expect("tempdir");
            let report = reports.path().join("journal.json");
            let (code, text, v) = check(card.path(), &report);
            assert!(matches!(code, Some(0 | 1)), "{text}");
            let raw = &v["raw_write"];
            let rate = raw["bytes_per_s"].as_f64().expect("a sustained rate");
            assert!(
                rate <= 1.15 * fio_rate,
                "check {:.2} MB/s against fio {:.2} MB/s: {raw}",
                rate / 1e6,
                fio_rate / 1e6
            );
            assert!(rate >= 0.5 * fio_rate, "{raw}");
            assert_eq!(
                raw["direct"], false,
                "data=journal is not direct I/O: {raw}"
            );
            assert!(text.contains("buffered, every byte fsync'd"), "{text}");
            let written = raw["measured"]["bytes_written"].as_f64().expect("bytes");
            let counted = raw["measured"]["device_bytes_written"]
                .as_f64()
                .expect("the device's own count");
            assert!(
                counted >= 1.5 * written,
                "the journal writes every byte twice: {counted} for {written}"
            );
            assert!(
                leftovers(card.path()).is_empty(),
                "{:?}",
                leftovers(card.path())
            );
        },
    );
}
