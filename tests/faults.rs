//! Faults in the middle of a run, on emulated cards: the card filling up (another program
//! takes the free space while the run writes), and the device vanishing (its nbdkit
//! killed). Each run ends with one line naming the fault, valid JSON with `error` set and
//! the verdict `failed`, its own files removed where the device still answers, and a
//! non-zero exit.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{sinkrate_path, with_root, SlowDev};

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

fn start(args: &[&str]) -> Child {
    Command::new(sinkrate_path())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sinkrate starts")
}

fn finish(child: Child) -> (Option<i32>, serde_json::Value, String) {
    let out = child.wait_with_output().expect("sinkrate ends");
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
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(lines.len(), 1, "one error line: {stderr}");
    assert!(lines[0].contains(fault), "names the fault: {stderr}");
}

#[test]
fn record_the_card_fills_mid_run() {
    serial("record_the_card_fills_mid_run", || {
        let card = SlowDev::new(&["--write-rate", "200M", "--size", "96M"]);
        let dir = card.path().to_str().expect("utf8").to_string();
        let child = start(&[
            "record",
            "--dir",
            &dir,
            "--streams",
            "1",
            "--fps",
            "30",
            "--frame-size",
            "64k",
            "--duration",
            "6s",
            "--write-mode",
            "direct",
            "--live",
            "never",
            "--output-format",
            "json",
        ]);
        std::thread::sleep(Duration::from_secs(2));
        fill(card.path());
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
        ]);
        std::thread::sleep(Duration::from_secs(2));
        fill(card.path());
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
