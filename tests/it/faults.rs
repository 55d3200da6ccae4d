//! Faults in the middle of a run, on emulated cards, for every command that writes: the card
//! filling up (another program takes the free space while the run writes), EIO at random
//! (nbdkit's error filter) and at a fixed offset (bad sectors in sinkrate's device model,
//! side by side with fio), the device vanishing (its nbdkit killed), and for watch its
//! output's filesystem filling and its command killed. Each run ends with one line naming
//! the fault, valid JSON with `error` set (and the verdict `failed` where there is one), the
//! figures up to the fault, its own files removed where the device still answers (named
//! where it does not), and a non-zero exit.

use crate::common;
use crate::common::FioOutput;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{sinkrate_path, with_root, RecordArgs, SlowDev};

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial(test: &str, f: impl FnOnce()) {
    let _guard = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    with_root(
        test,
        &["nbdkit", "nbdfuse", "losetup", "mkfs.ext4", "fallocate"],
        f,
    );
}

/// A sinkrate run, in a directory of its own: check leaves its report where it runs, and
/// that must not be the clone the tests run from.
struct Running {
    child: Child,
    _cwd: tempfile::TempDir,
}

fn start(args: &[&str]) -> Running {
    let cwd = tempfile::tempdir().expect("tempdir");
    let child = Command::new(sinkrate_path())
        .current_dir(cwd.path())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sinkrate starts");
    Running { child, _cwd: cwd }
}

fn finish(run: Running) -> (Option<i32>, serde_json::Value, String) {
    let out = run.child.wait_with_output().expect("sinkrate ends");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("valid JSON on stdout ({e}); stderr: {stderr}"));
    (out.status.code(), json, stderr)
}

/// Takes all the free space but 64 KiB, as a second recorder filling the card would.
fn fill(dir: &Path) {
    let free = free_bytes(dir);
    let take = free.saturating_sub(64 << 10).max(4096);
    common::run(
        "fallocate",
        &[
            "-l",
            &take.to_string(),
            dir.join("other-program.bin").to_str().expect("utf8"),
        ],
    );
}

/// Fills the card once the run under test is writing to it: a file of its own whose name
/// starts with `prefix` holds data. A fixed wait would fill a card that a slow or busy
/// machine had not started writing to yet (the run would then refuse the full card rather
/// than meet it mid-run), and a preallocated file (check's sustained write) holds its space
/// however full the card gets.
fn fill_once_writing(dir: &Path, prefix: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !run_is_writing(dir, prefix) {
        assert!(
            std::time::Instant::now() < deadline,
            "no file {prefix}* written in {} in 120 s",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    fill(dir);
}

/// A file named `prefix`... (or one in a directory) with blocks allocated.
fn run_is_writing(dir: &Path, prefix: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| match e.metadata() {
        Ok(m) if m.is_dir() => run_is_writing(&e.path(), prefix),
        Ok(m) => e.file_name().to_string_lossy().starts_with(prefix) && m.blocks() > 0,
        Err(_) => false,
    })
}

fn free_bytes(dir: &Path) -> u64 {
    let out = common::run("stat", &["-f", "-c", "%a %S", dir.to_str().expect("utf8")]);
    let mut it = out
        .split_whitespace()
        .map(|v| v.parse::<u64>().unwrap_or(0));
    it.next().unwrap_or(0) * it.next().unwrap_or(0)
}

fn only_the_fillers_file_is_left(dir: &Path) {
    let mut left: Vec<String> = std::fs::read_dir(dir)
        .expect("readable")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "lost+found")
        .collect();
    left.sort();
    assert_eq!(left, ["other-program.bin"], "the run removed its own files");
}

fn one_fault_line(stderr: &str, fault: &str) {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("sinkrate: note:") && !l.starts_with("sinkrate: warning"))
        .filter(|l| l.contains("error"))
        .collect();
    assert_eq!(lines.len(), 1, "one error line: {stderr}");
    assert!(lines[0].contains(fault), "names the fault: {stderr}");
}

#[test]
fn record_the_card_fills_mid_run() {
    serial("record_the_card_fills_mid_run", || {
        let card = SlowDev::new(&["--write-rate", "200M", "--size", "96M"]);
        let dir = card.path().to_str().expect("utf8").to_string();
        let child = start(&RecordArgs::on(&dir).with("--duration", "6s").args());
        fill_once_writing(card.path(), "sinkrate-record-");
        let (code, v, stderr) = finish(child);
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(v["verdict"], "failed", "{v}");
        assert!(
            v["error"]["what"]
                .as_str()
                .is_some_and(|w| w.contains("No space left")),
            "{}",
            v["error"]
        );
        assert!(v["headroom"].is_null());
        let written = v["streams"][0]["frames_written"].as_u64().unwrap_or(0);
        assert!(written > 0, "figures up to the fault: {v}");
        one_fault_line(&stderr, "No space left");
        only_the_fillers_file_is_left(card.path());
    });
}

#[test]
fn bench_the_card_fills_mid_run() {
    serial("bench_the_card_fills_mid_run", || {
        let card = SlowDev::new(&["--write-rate", "200M", "--size", "96M"]);
        let dir = card.path().to_str().expect("utf8").to_string();
        // fallocate=none: the job's file grows as it is written (fio's default allocates it
        // in full first, and a full card would not stop it).
        let child = start(&[
            "bench",
            "--eta=never",
            "--output-format=json",
            "--name=fill",
            &format!("--directory={dir}"),
            "--rw=write",
            "--bs=64k",
            "--direct=1",
            "--size=48m",
            "--rate=8m",
            "--fallocate=none",
            // Removes its file, at the fault too (bench keeps files by default, as fio).
            "--unlink=1",
        ]);
        fill_once_writing(card.path(), "fill.");
        let (code, v, stderr) = finish(child);
        assert_ne!(code, Some(0), "{stderr}");
        let job = &v["jobs"][0];
        assert_eq!(job["error"], 28, "fio's error field: ENOSPC: {job}");
        let written = job["write"]["io_bytes"].as_u64().unwrap_or(0);
        assert!(
            written > 0 && written < 48 << 20,
            "figures up to the fault: {written}"
        );
        one_fault_line(&stderr, "No space left");
        only_the_fillers_file_is_left(card.path());
    });
}

fn nbdkit_of(card: &SlowDev) -> i32 {
    card.listed()["state"]["nbdkit_pid"]
        .as_i64()
        .expect("the card's nbdkit is listed") as i32
}

#[test]
fn verify_the_device_vanishes() {
    serial("verify_the_device_vanishes", || {
        let _vanishing = common::a_card_vanishes_here();
        let card = SlowDev::new(&["--write-rate", "20M", "--size", "256M"]);
        let dir = card.path().to_str().expect("utf8").to_string();
        let child = start(&["verify", &dir, "--size", "128M", "--output-format", "json"]);
        std::thread::sleep(Duration::from_secs(2));
        // SAFETY: killing the nbdkit this test's card started.
        unsafe { libc::kill(nbdkit_of(&card), libc::SIGKILL) };
        let (code, v, stderr) = finish(child);
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(v["verdict"], "failed", "{v}");
        assert!(
            v["error"]["what"].as_str().is_some_and(|w| !w.is_empty()),
            "{v}"
        );
        assert!(
            v["write"]["bytes"].as_u64().unwrap_or(0) > 0 || !v["write"].is_null(),
            "{v}"
        );
        drop(card);
    });
}

/// The card's raw device (`--fs none`), as bench and verify name it.
fn raw_device(card: &SlowDev) -> String {
    std::fs::read_link(card.path())
        .expect("the card's device link")
        .display()
        .to_string()
}

/// The I/O fault a run's JSON names: EIO, or the read-only filesystem ext4 turns itself into
/// when a metadata write fails.
fn io_fault(v: &serde_json::Value) -> &'static str {
    let what = v["error"]["what"].as_str().unwrap_or_default();
    ["Input/output error", "Read-only file system"]
        .into_iter()
        .find(|f| what.contains(f))
        .unwrap_or_else(|| panic!("the fault is named: {}", v["error"]))
}

/// `tune search` on `dir` for a 1 x 30 fps direct recording, in two minutes at most.
fn tune_search(dir: &str) -> Vec<&str> {
    vec![
        "tune",
        "search",
        dir,
        "--budget",
        "2m",
        "--runs",
        "1",
        "--progress",
        "never",
        "--output-format",
        "json",
        "--",
        "--streams",
        "1",
        "--fps",
        "30",
        "--frame-size",
        "128K",
        "--write-mode",
        "direct",
    ]
}

fn run(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    finish(start(args))
}

fn bench_job(v: &serde_json::Value) -> (i64, u64) {
    let j = &v["jobs"][0];
    (
        j["error"].as_i64().expect("error"),
        j["write"]["io_bytes"].as_u64().expect("bytes"),
    )
}

#[test]
fn bench_eio_at_a_fixed_offset_as_fio_reports_it() {
    serial("bench_eio_at_a_fixed_offset_as_fio_reports_it", || {
        let card = SlowDev::new(&[
            "--fs",
            "none",
            "--size",
            "64M",
            "--write-rate",
            "200M",
            "--bad-sectors",
            "8M+64K",
        ]);
        let dev = raw_device(&card);
        let job = [
            "--name=b".to_string(),
            format!("--filename={dev}"),
            "--rw=write".into(),
            "--bs=64k".into(),
            "--size=32m".into(),
            "--direct=1".into(),
            "--output-format=json".into(),
        ];
        let job: Vec<&str> = job.iter().map(String::as_str).collect();
        // Not in the checkout (cargo test's working directory): fio leaves files where it runs.
        let cwd = tempfile::tempdir().expect("tempdir");
        let fio = Command::new("fio")
            .current_dir(cwd.path())
            .args(&job)
            .fio_output();
        let text = String::from_utf8_lossy(&fio.stdout);
        let fio_v: serde_json::Value =
            serde_json::from_str(&text[text.find('{').expect("fio JSON")..]).expect("fio JSON");
        let (code, v, stderr) = run(&[&["bench", "--eta=never"][..], &job].concat());
        assert_eq!(code, fio.status.code(), "{stderr}");
        assert_eq!(
            bench_job(&v),
            bench_job(&fio_v),
            "sinkrate and fio: EIO after 8 MiB"
        );
        assert_eq!(bench_job(&v), (5, 8 << 20));
        one_fault_line(&stderr, "at offset 8388608");
    });
}

#[test]
fn bench_and_record_eio_at_random() {
    serial("bench_and_record_eio_at_random", || {
        let card = SlowDev::new(&[
            "--write-rate",
            "200M",
            "--size",
            "128M",
            "--error-rate",
            "0.05",
            "--error-on",
            "writes",
        ]);
        let dir = card.path().to_str().expect("utf8").to_string();
        let (code, v, stderr) = run(&[
            "bench",
            "--eta=never",
            "--output-format=json",
            "--name=e",
            &format!("--directory={dir}"),
            "--rw=write",
            "--bs=64k",
            "--direct=1",
            "--size=32m",
            "--unlink=1",
        ]);
        assert_eq!(code, Some(1), "{stderr}");
        let (err, bytes) = bench_job(&v);
        // EIO, or EROFS when a failed metadata write turned ext4 read-only first.
        assert!(err == 5 || err == 30, "{v}");
        assert!(bytes < 32 << 20, "figures up to the fault: {bytes}");
        one_fault_line(
            &stderr,
            if err == 5 {
                "Input/output error"
            } else {
                "Read-only"
            },
        );
        let (code, v, stderr) = run(&RecordArgs::on(&dir).args());
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(v["verdict"], "failed", "{v}");
        one_fault_line(&stderr, io_fault(&v));
        // Removed, or (on a filesystem the fault turned read-only) named.
        for name in common::files_in(card.path())
            .into_iter()
            .filter(|n| n != "lost+found")
        {
            assert!(
                stderr.contains(&format!("{name} could not be removed")),
                "{name} is left and not named: {stderr}"
            );
        }
    });
}

#[test]
fn record_eio_at_a_fixed_place_on_the_card() {
    serial("record_eio_at_a_fixed_place_on_the_card", || {
        // The middle half of the card is bad: the recording's data lands there.
        let card = SlowDev::new(&[
            "--write-rate",
            "200M",
            "--size",
            "128M",
            "--bad-sectors",
            "32M+64M",
        ]);
        let dir = card.path().to_str().expect("utf8").to_string();
        let (code, v, stderr) = run(&RecordArgs::on(&dir).with("--frame-size", "256K").args());
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(v["verdict"], "failed", "{v}");
        assert!(
            v["streams"][0]["frames_written"].as_u64().is_some(),
            "figures up to the fault"
        );
        // The I/O error is named: as the write's own errno, or, when the kernel's writeback
        // met the bad sectors first (beside other writers it flushes early) and the
        // filesystem went read-only under the write, in the kernel's own message.
        let names_eio = stderr.contains("Input/output error") || stderr.contains("I/O error");
        assert!(names_eio, "names the device's I/O error: {stderr}");
        one_fault_line(&stderr, "error");
    });
}

#[test]
fn verify_eio_at_a_fixed_offset_and_at_random() {
    serial("verify_eio_at_a_fixed_offset_and_at_random", || {
        let card = SlowDev::new(&[
            "--fs",
            "none",
            "--size",
            "64M",
            "--write-rate",
            "200M",
            "--bad-sectors",
            "8M+64K",
        ]);
        let (code, v, stderr) = run(&[
            "verify",
            &raw_device(&card),
            "--size",
            "32M",
            "--output-format",
            "json",
        ]);
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(v["verdict"], "failed", "{v}");
        assert!(
            v["error"]["what"]
                .as_str()
                .is_some_and(|w| w.contains("Input/output error")),
            "{v}"
        );
        one_fault_line(&stderr, "Input/output error");
        drop(card);
        let card = SlowDev::new(&[
            "--write-rate",
            "200M",
            "--size",
            "128M",
            "--error-rate",
            "0.2",
            "--error-on",
            "reads",
        ]);
        let dir = card.path().to_str().expect("utf8").to_string();
        let (code, v, stderr) = run(&["verify", &dir, "--size", "32M", "--output-format", "json"]);
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(v["verdict"], "failed", "{v}");
        one_fault_line(&stderr, "Input/output error");
        let left: Vec<String> = common::files_in(card.path())
            .into_iter()
            .filter(|n| n != "lost+found")
            .collect();
        assert!(left.is_empty(), "verify removed its file: {left:?}");
    });
}

#[test]
fn bench_and_record_the_device_vanishes() {
    serial("bench_and_record_the_device_vanishes", || {
        for command in ["bench", "record"] {
            let _vanishing = common::a_card_vanishes_here();
            let card = SlowDev::new(&["--write-rate", "20M", "--size", "256M"]);
            let dir = card.path().to_str().expect("utf8").to_string();
            let directory = format!("--directory={dir}");
            let record = RecordArgs::on(&dir)
                .with("--frame-size", "256k")
                .with("--duration", "10s");
            let args: Vec<&str> = if command == "bench" {
                vec![
                    "bench",
                    "--eta=never",
                    "--output-format=json",
                    "--name=v",
                    &directory,
                    "--rw=write",
                    "--bs=64k",
                    "--direct=1",
                    "--size=128m",
                ]
            } else {
                record.args()
            };
            let child = start(&args);
            std::thread::sleep(Duration::from_secs(2));
            // SAFETY: killing the nbdkit this test's card started.
            unsafe { libc::kill(nbdkit_of(&card), libc::SIGKILL) };
            let (code, v, stderr) = finish(child);
            assert!(
                code == Some(1) || code == Some(2),
                "{command}: {code:?} {stderr}"
            );
            if command == "bench" {
                assert_ne!(v["jobs"][0]["error"], 0, "{v}");
            } else {
                assert_eq!(v["verdict"], "failed", "{v}");
            }
            // The device is gone: its files cannot be removed, and are named.
            one_fault_line(&stderr, "error");
            drop(card);
        }
    });
}

#[test]
fn check_the_card_fails_or_fills() {
    serial("check_the_card_fails_or_fills", || {
        let card = SlowDev::new(&[
            "--write-rate",
            "50M",
            "--size",
            "256M",
            "--error-rate",
            "0.05",
            "--error-on",
            "writes",
        ]);
        let dir = card.path().to_str().expect("utf8").to_string();
        let (code, v, stderr) = run(&[
            "check",
            &dir,
            "--quick",
            "--write-mode",
            "direct",
            "--output-format",
            "json",
            "--progress",
            "never",
        ]);
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(v["verdict"], "failed", "{v}");
        one_fault_line(&stderr, io_fault(&v));
        drop(card);
        let card = SlowDev::new(&["--write-rate", "50M", "--size", "256M"]);
        let dir = card.path().to_str().expect("utf8").to_string();
        let child = start(&[
            "check",
            &dir,
            "--quick",
            "--output-format",
            "json",
            "--progress",
            "never",
        ]);
        fill_once_writing(card.path(), "sinkrate-record-");
        let (code, v, stderr) = finish(child);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            v["error"]["what"]
                .as_str()
                .is_some_and(|w| w.contains("No space left")),
            "{v}"
        );
        one_fault_line(&stderr, "No space left");
        only_the_fillers_file_is_left(card.path());
    });
}

#[test]
fn tune_search_on_a_failing_card_fails_in_one_line() {
    serial("tune_search_on_a_failing_card_fails_in_one_line", || {
        let card = SlowDev::new(&[
            "--write-rate",
            "50M",
            "--size",
            "512M",
            "--error-rate",
            "0.05",
            "--error-on",
            "writes",
        ]);
        let dir = card.path().to_str().expect("utf8").to_string();
        let (code, v, stderr) = run(&tune_search(&dir));
        assert_eq!(code, Some(2), "{stderr}");
        one_fault_line(&stderr, io_fault(&v));
        assert!(
            v["ranked"][0]["trials"][0]["error"].is_string(),
            "the failed trial is named"
        );
    });
}

#[test]
fn watch_its_output_fills_and_its_command_is_killed() {
    serial("watch_its_output_fills_and_its_command_is_killed", || {
        let d = tempfile::tempdir().expect("tempdir");
        let small = d.path().join("small");
        let _fs = common::MemoryFs::new(&small, "64k");
        // Most of it taken: the CSV (about 20 KB a second at 10 ms) fills it within a second.
        std::fs::write(small.join("taken"), vec![0u8; 48 << 10]).expect("filler");
        let csv = small.join("w.csv");
        // A watch without a command: its CSV filling is said when it happens, the watch runs
        // its whole duration (retrying), and the run fails at its end, naming the fault.
        let (code, v, stderr) = run(&[
            "watch",
            "--interval",
            "10ms",
            "--duration",
            "3s",
            "--csv",
            csv.to_str().expect("utf8"),
            "--live",
            "never",
            "--output-format",
            "json",
        ]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            v["error"]["what"]
                .as_str()
                .is_some_and(|w| w.contains("No space left")),
            "{v}"
        );
        assert!(
            v["timeline"].as_array().is_some_and(|t| !t.is_empty()),
            "figures up to the fault"
        );
        one_fault_line(&stderr, "No space left");
        let (code, v, stderr) = run(&[
            "watch",
            "--live",
            "never",
            "--output-format",
            "json",
            "--",
            "sh",
            "-c",
            "sleep 0.5; kill -9 $$",
        ]);
        assert_eq!(code, Some(137), "{stderr}");
        assert_eq!(v["command_signal"], 9, "{v}");
        one_fault_line(&stderr, "killed by signal 9");
    });
}

#[test]
fn check_and_tune_eio_at_a_fixed_place_on_the_card() {
    serial("check_and_tune_eio_at_a_fixed_place_on_the_card", || {
        for command in ["check", "tune"] {
            // The middle half of the card is bad: the runs' data lands there.
            let card = SlowDev::new(&[
                "--write-rate",
                "200M",
                "--size",
                "512M",
                "--bad-sectors",
                "64M+384M",
            ]);
            let dir = card.path().to_str().expect("utf8").to_string();
            let args: Vec<&str> = if command == "check" {
                vec![
                    "check",
                    &dir,
                    "--quick",
                    "--write-mode",
                    "direct",
                    "--output-format",
                    "json",
                    "--progress",
                    "never",
                ]
            } else {
                tune_search(&dir)
            };
            let (code, v, stderr) = run(&args);
            assert_eq!(code, Some(2), "{command}: {stderr}");
            one_fault_line(&stderr, io_fault(&v));
        }
    });
}

#[test]
fn verify_and_tune_the_card_fills_mid_run() {
    serial("verify_and_tune_the_card_fills_mid_run", || {
        for command in ["verify", "tune"] {
            let card = SlowDev::new(&["--write-rate", "20M", "--size", "512M"]);
            let dir = card.path().to_str().expect("utf8").to_string();
            let args: Vec<&str> = if command == "verify" {
                vec!["verify", &dir, "--size", "256M", "--output-format", "json"]
            } else {
                tune_search(&dir)
            };
            let child = start(&args);
            fill_once_writing(card.path(), "sinkrate-");
            let (code, v, stderr) = finish(child);
            assert_eq!(code, Some(2), "{command}: {stderr}");
            assert!(
                v["error"]["what"]
                    .as_str()
                    .is_some_and(|w| w.contains("No space left")),
                "{command}: {}",
                v["error"]
            );
            one_fault_line(&stderr, "No space left");
            only_the_fillers_file_is_left(card.path());
        }
    });
}
