//! On a board there is often no fio, mkfs, lsusb or util-linux: the commands a board runs need
//! none of them. Each runs here with a PATH that holds nothing at all, so that any program it
//! tried to start would fail.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

fn with_empty_path(dir: &Path, args: &[&str]) -> Output {
    let empty = tempfile::tempdir().expect("tempdir");
    Command::new(common::sinkrate_path())
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", empty.path())
        .output()
        .expect("sinkrate runs")
}

fn json_of(out: &Output, what: &str) -> serde_json::Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: not JSON ({e}): {}{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn every_board_command_runs_with_nothing_on_path() {
    let d = tempfile::tempdir().expect("tempdir");
    let dir = d.path().to_str().expect("utf8");

    let out = with_empty_path(d.path(), &["audit", dir, "--output-format", "json"]);
    let v = json_of(&out, "audit");
    assert!(!v["findings"].as_array().expect("findings").is_empty());

    let out = with_empty_path(
        d.path(),
        &[
            "bench",
            "--eta=never",
            "--name=w",
            "--rw=write",
            "--bs=1m",
            "--size=16m",
            "--end_fsync=1",
            "--unlink=1",
            "--output-format=json",
        ],
    );
    assert!(out.status.success(), "bench");
    let v = json_of(&out, "bench");
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 16 << 20);

    let out = with_empty_path(
        d.path(),
        &[
            "record",
            "--dir",
            dir,
            "--duration",
            "2s",
            "--output-format",
            "json",
        ],
    );
    let v = json_of(&out, "record");
    // The run itself, not whether this machine's /tmp kept up with it (a stalled disk drops
    // frames, rightly): it ended without an error, and every frame offered was written or
    // counted as dropped.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "record: {}",
        v["verdict_text"]
    );
    assert_ne!(v["verdict"], "failed", "{}", v["verdict_text"]);
    let streams = v["streams"].as_array().expect("streams");
    assert!(!streams.is_empty());
    for s in streams {
        assert!(s["error"].is_null(), "{s}");
        assert!(s["frames_offered"].as_u64() >= Some(30), "{s}");
        assert_eq!(
            s["frames_written"]
                .as_u64()
                .zip(s["frames_dropped"].as_u64())
                .map(|(w, d)| w + d),
            s["frames_offered"].as_u64(),
            "{s}"
        );
        assert!(s["frames_written"].as_u64() > Some(0), "{s}");
    }

    let out = with_empty_path(
        d.path(),
        &["watch", "--duration", "1s", "--output-format", "json"],
    );
    assert!(out.status.success(), "watch");
    let v = json_of(&out, "watch");
    assert!(v["timeline"].as_array().is_some_and(|t| t.len() >= 5));

    let out = with_empty_path(
        d.path(),
        &["verify", dir, "--size", "16M", "--output-format", "json"],
    );
    let v = json_of(&out, "verify");
    assert_eq!(v["verdict"], "verified", "{}", v["verdict_text"]);

    let out = with_empty_path(
        d.path(),
        &["check", dir, "--quick", "--output-format", "json"],
    );
    let v = json_of(&out, "check");
    assert!(v["error"].is_null(), "check: {}", v["error"]);
    assert_ne!(v["verdict"], "failed");
    // What check left behind is its report, and only that.
    let left: Vec<String> = common::files_in(d.path());
    assert!(
        left.iter().all(|f| f.starts_with("sinkrate-check-")),
        "{left:?}"
    );
}
